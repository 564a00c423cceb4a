//! Tokenization policies: validation, defaults, versions and the list.

use std::collections::BTreeMap;

use vault::VaultError;
use vault::policies::{self, Definition, RuleInput};

use crate::{Vault, acme, all_modes, codes, globex, item, request, rule};

#[tokio::test]
async fn a_created_policy_has_every_default_written_out() {
    let mut v = Vault::new().await;
    let alice = "alice".parse().unwrap();
    let created = policies::create(&mut v.conn, &acme(), &alice, &all_modes())
        .await
        .unwrap();
    assert_eq!(created.version, 1);
    assert_eq!(created.created_at, created.updated_at);
    let d = &created.definition;
    assert_eq!(d.name, "customer data");
    assert_eq!(d.failure_mode.as_deref(), Some("fail-closed"));
    assert_eq!(d.default_region.as_deref(), Some("US"));
    assert_eq!(d.token_ttl_seconds, None);
    assert!(d.require_reason);
    assert_eq!(
        d.type_rules["us_ssn"],
        RuleInput {
            mode: "deterministic".into(),
            min_confidence: Some(0.0),
            deterministic_scope: Some("global".into()),
        }
    );
    assert_eq!(
        d.type_rules["passport_ca"].deterministic_scope.as_deref(),
        Some("policy")
    );
    let stored = policies::get(&mut v.conn, &acme(), created.policy_id)
        .await
        .unwrap();
    assert_eq!(stored.version, 1);
    assert_eq!(stored.policy.allowed_roles, ["support"]);
    assert_eq!(stored.policy.allowed_purposes, ["fraud_review"]);
    // Another tenant does not find it.
    assert!(matches!(
        policies::get(&mut v.conn, &globex(), created.policy_id).await,
        Err(VaultError::PolicyNotFound)
    ));
}

#[tokio::test]
async fn an_invalid_definition_names_every_problem_and_stores_nothing() {
    let mut v = Vault::new().await;
    let bad = Definition {
        name: String::new(),
        type_rules: BTreeMap::from([
            ("us_zip".to_owned(), rule("deterministic")),
            (
                "email".to_owned(),
                RuleInput {
                    mode: "scrambled".into(),
                    min_confidence: Some(2.0),
                    deterministic_scope: Some("tenant".into()),
                },
            ),
        ]),
        allowed_roles: vec!["has space".into()],
        allowed_purposes: Vec::new(),
        require_reason: false,
        failure_mode: Some("fail_sometimes".into()),
        token_ttl_seconds: Some(0),
        default_region: Some("XX".into()),
    };
    let outcome = policies::create(&mut v.conn, &acme(), &"alice".parse().unwrap(), &bad).await;
    let Err(VaultError::Invalid(problems)) = outcome else {
        panic!("{outcome:?}")
    };
    let mut fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "allowed_roles[0]",
            "default_region",
            "failure_mode",
            "name",
            "token_ttl_seconds",
            "type_rules.email.deterministic_scope",
            "type_rules.email.min_confidence",
            "type_rules.email.mode",
            "type_rules.us_zip",
        ]
    );
    let empty = Definition {
        type_rules: BTreeMap::new(),
        ..all_modes()
    };
    let outcome = policies::create(&mut v.conn, &acme(), &"alice".parse().unwrap(), &empty).await;
    let Err(VaultError::Invalid(problems)) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].field, "type_rules");
    assert_eq!(
        v.count("SELECT count(*) AS n FROM tokenization_policies")
            .await,
        0
    );
}

#[tokio::test]
async fn an_update_replaces_the_definition_bumps_the_version_and_keeps_the_history() {
    let mut v = Vault::new().await;
    let alice = "alice".parse().unwrap();
    let created = policies::create(&mut v.conn, &acme(), &alice, &all_modes())
        .await
        .unwrap();
    let id = created.policy_id;
    let mut replacement = all_modes();
    replacement.name = "renamed".into();
    replacement.failure_mode = Some("fail_open".into());
    replacement.type_rules.remove("email");
    let updated = policies::update(&mut v.conn, &acme(), &alice, id, &replacement)
        .await
        .unwrap();
    assert_eq!(updated.version, 2);
    assert_eq!(updated.policy_id, id);
    assert_eq!(updated.definition.name, "renamed");
    assert_eq!(
        updated.definition.failure_mode.as_deref(),
        Some("fail-open"),
        "shown in the spec's spelling, whichever was sent"
    );
    assert!(!updated.definition.type_rules.contains_key("email"));
    assert_eq!(updated.created_at, created.created_at);
    assert!(updated.updated_at >= created.updated_at);
    assert_eq!(
        v.count("SELECT count(*) AS n FROM tokenization_policy_versions")
            .await,
        2
    );

    // Tokenization runs under the new version: email has no rule any more, and fail-open
    // protects it anyway.
    let result = v
        .done(&request(id, vec![item("ann@example.com", "email")]))
        .await;
    assert_eq!(result.batch_policy_version, 2);
    assert_eq!(codes(&result), ["TOKENIZED"]);

    // An unknown id, another tenant's policy and an invalid replacement change nothing.
    for (tenant, policy_id) in [(acme(), ids::TokenPolicyId::new()), (globex(), id)] {
        let outcome = policies::update(&mut v.conn, &tenant, &alice, policy_id, &all_modes()).await;
        assert!(
            matches!(outcome, Err(VaultError::PolicyNotFound)),
            "{outcome:?}"
        );
    }
    let invalid = Definition {
        name: " ".into(),
        ..all_modes()
    };
    assert!(matches!(
        policies::update(&mut v.conn, &acme(), &alice, id, &invalid).await,
        Err(VaultError::Invalid(_))
    ));
    let stored = policies::get(&mut v.conn, &acme(), id).await.unwrap();
    assert_eq!(stored.version, 2);
    assert_eq!(stored.policy.name, "renamed");
}

#[tokio::test]
async fn policies_are_listed_oldest_first_in_pages_of_their_tenant_only() {
    let mut v = Vault::new().await;
    let mut created = Vec::new();
    for n in 0..5 {
        let definition = Definition {
            name: format!("p{n}"),
            ..all_modes()
        };
        created.push(v.policy(&acme(), &definition).await);
    }
    v.policy(&globex(), &all_modes()).await;
    let limit = paging::Limit::parse(Some(2), 50).unwrap();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = policies::list(
            &mut v.conn,
            &acme(),
            paging::PageRequest {
                cursors: &v.cursors,
                limit,
                cursor: cursor.as_deref(),
            },
        )
        .await
        .unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        assert_eq!(page.pagination.limit, 2);
        seen.extend(page.items.iter().map(|p| p.policy_id));
        if !page.pagination.has_more {
            assert_eq!(page.pagination.next_cursor, None);
            break;
        }
        cursor = page.pagination.next_cursor;
        assert!(cursor.is_some());
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, created);

    let first = policies::list(
        &mut v.conn,
        &acme(),
        paging::PageRequest {
            cursors: &v.cursors,
            limit,
            cursor: None,
        },
    )
    .await
    .unwrap();
    let cursor = first.pagination.next_cursor.unwrap();
    let theirs = policies::list(
        &mut v.conn,
        &globex(),
        paging::PageRequest {
            cursors: &v.cursors,
            limit,
            cursor: Some(&cursor),
        },
    )
    .await;
    assert!(
        matches!(theirs, Err(VaultError::BadCursor)),
        "another tenant's cursor: {theirs:?}"
    );
    let theirs = policies::list(
        &mut v.conn,
        &globex(),
        paging::PageRequest {
            cursors: &v.cursors,
            limit,
            cursor: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(theirs.items.len(), 1);
    assert_eq!(theirs.items[0].definition.name, "customer data");
}

use paging::Limit;
use policies::document::{Mode, Syntax};
use policies::store::{self, Filter, PolicyError};

use crate::{Env, acme, admin, globex};

fn yaml(name: &str, mode: &str, extra: &str) -> String {
    format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata:
  name: {name}
  description: SSNs in exports
  tags: [pci, exports]
spec:
  mode: {mode}
  conditions:
    - category: us_ssn
      min_confidence: 0.8
    - category: financial
      min_confidence: 0.5
  actions:
    - type: mask
      config: {{ keep_last: 4 }}
{extra}"
    )
}

#[tokio::test]
async fn a_policy_is_created_read_replaced_and_deleted_with_its_audit_trail() {
    let mut env = Env::new().await;
    let connector = env.connector(&acme(), "exports").await;
    env.channel(&acme(), "security").await;
    let token_policy = crate::token_policy(&mut env, &acme()).await;
    let body = yaml(
        "ssn-in-exports",
        "dry-run",
        &format!(
            "    - type: alert\n      config: {{ channels: [security], severity: high }}\n  scope:\n    connectors: [{connector}]\n"
        ),
    );
    let created = store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        body.as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let s = &created.summary;
    assert_eq!(
        (s.name.as_str(), s.mode, s.version),
        ("ssn-in-exports", Mode::DryRun, 1)
    );
    assert_eq!((s.conditions_count, s.actions_count), (2, 2));
    assert_eq!(s.tags, ["pci", "exports"]);
    assert_eq!(s.findings_matched, 0);
    assert_eq!(created.yaml(), body, "the YAML comes back as it was sent");
    assert_eq!(created.document.spec.scope.connectors, [connector]);

    // PUT: the whole document again, as JSON this time, switching to enforced and tokenize.
    let mut json = created.document.to_value();
    json["spec"]["mode"] = "enforced".into();
    json["spec"]["actions"] = serde_json::json!([
        {"type": "tokenize", "config": {"tokenization_policy_id": token_policy.to_string()}}
    ]);
    let updated = store::update(
        &mut env.conn,
        &acme(),
        &admin(),
        s.id,
        json.to_string().as_bytes(),
        Syntax::Json,
    )
    .await
    .unwrap();
    assert_eq!(
        (updated.summary.version, updated.summary.mode),
        (2, Mode::Enforced)
    );
    assert_eq!(updated.summary.created_at, s.created_at);
    assert!(
        updated.yaml().contains("tokenization_policy_id"),
        "JSON documents are served as YAML too"
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_policy_versions")
            .await,
        2
    );

    store::delete(&mut env.conn, &acme(), &admin(), s.id)
        .await
        .unwrap();
    assert!(matches!(
        store::get(&mut env.conn, &acme(), s.id).await,
        Err(PolicyError::NotFound)
    ));
    assert!(matches!(
        store::delete(&mut env.conn, &acme(), &admin(), s.id).await,
        Err(PolicyError::NotFound)
    ));
    // The versions stay, so what the policy did can still be read back.
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_policy_versions")
            .await,
        2
    );
    assert_eq!(
        env.audit_kinds(&acme()).await,
        [
            "channel_created",
            "policy_created",
            "policy_updated",
            "policy_deleted"
        ]
    );
}

#[tokio::test]
async fn an_invalid_document_names_every_problem_and_stores_nothing() {
    let mut env = Env::new().await;
    let foreign = env.connector(&globex(), "theirs").await;
    let missing_policy = ids::TokenPolicyId::new();
    let body = format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: bad }}
spec:
  mode: enforced
  scope: {{ connectors: [{foreign}] }}
  conditions:
    - {{ category: custom:badge_id, min_confidence: 0.5 }}
  actions:
    - {{ type: alert, config: {{ channels: [nowhere], severity: low }} }}
    - {{ type: tokenize, config: {{ tokenization_policy_id: {missing_policy} }} }}
"
    );
    let Err(PolicyError::Invalid(problems)) = store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        body.as_bytes(),
        Syntax::Yaml,
    )
    .await
    else {
        panic!("expected a validation failure");
    };
    let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/spec/scope/connectors/0",
            "/spec/conditions/0/category",
            "/spec/actions/0/config/channels/0",
            "/spec/actions/1/config/tokenization_policy_id",
        ]
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_policies")
            .await,
        0
    );
    assert_eq!(env.count("SELECT count(*) AS n FROM audit_log").await, 0);

    // A valid policy, then an invalid PUT: nothing changes.
    let good = yaml("good", "enforced", "");
    let created = store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        good.as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let broken = good.replace("min_confidence: 0.8", "min_confidence: 8");
    let outcome = store::update(
        &mut env.conn,
        &acme(),
        &admin(),
        created.summary.id,
        broken.as_bytes(),
        Syntax::Yaml,
    )
    .await;
    assert!(
        matches!(outcome, Err(PolicyError::Invalid(_))),
        "{outcome:?}"
    );
    let after = store::get(&mut env.conn, &acme(), created.summary.id)
        .await
        .unwrap();
    assert_eq!(after, created);
}

#[tokio::test]
async fn names_are_unique_per_tenant_and_tenants_never_see_each_other() {
    let mut env = Env::new().await;
    let body = yaml("dup", "enforced", "");
    let first = store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        body.as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let again = store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        body.as_bytes(),
        Syntax::Yaml,
    )
    .await;
    assert!(
        matches!(again, Err(PolicyError::DuplicateName)),
        "{again:?}"
    );
    // Another tenant may use the name, and cannot see, change or delete acme's policy.
    store::create(
        &mut env.conn,
        &globex(),
        &admin(),
        body.as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let id = first.summary.id;
    assert!(matches!(
        store::get(&mut env.conn, &globex(), id).await,
        Err(PolicyError::NotFound)
    ));
    assert!(matches!(
        store::update(
            &mut env.conn,
            &globex(),
            &admin(),
            id,
            body.as_bytes(),
            Syntax::Yaml
        )
        .await,
        Err(PolicyError::NotFound)
    ));
    assert!(matches!(
        store::delete(&mut env.conn, &globex(), &admin(), id).await,
        Err(PolicyError::NotFound)
    ));
    // Renaming onto another policy's name is a conflict too.
    let other = store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        yaml("other", "enforced", "").as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let renamed = store::update(
        &mut env.conn,
        &acme(),
        &admin(),
        other.summary.id,
        body.as_bytes(),
        Syntax::Yaml,
    )
    .await;
    assert!(
        matches!(renamed, Err(PolicyError::DuplicateName)),
        "{renamed:?}"
    );
}

#[tokio::test]
async fn the_list_filters_by_mode_and_tag_and_pages() {
    let mut env = Env::new().await;
    for (name, mode, tags) in [
        ("a", "enforced", "[pci]"),
        ("b", "dry-run", "[pci, hr]"),
        ("c", "enforced", "[hr]"),
        ("d", "enforced", "[]"),
    ] {
        let body = yaml(name, mode, "").replace("[pci, exports]", tags);
        store::create(
            &mut env.conn,
            &acme(),
            &admin(),
            body.as_bytes(),
            Syntax::Yaml,
        )
        .await
        .unwrap();
    }
    store::create(
        &mut env.conn,
        &globex(),
        &admin(),
        yaml("z", "enforced", "").as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let names = |page: &paging::Page<store::PolicySummary>| {
        page.items
            .iter()
            .map(|p| p.name.clone())
            .collect::<Vec<_>>()
    };
    let limit = |n| Limit::parse(Some(n), 20).unwrap();
    let list = async |env: &mut Env, filter: Filter, n: i64, cursor: Option<&str>| {
        store::list(
            &mut env.conn,
            &acme(),
            &filter,
            paging::PageRequest {
                cursors: &env.cursors,
                limit: limit(n),
                cursor,
            },
        )
        .await
        .unwrap()
    };
    assert_eq!(
        names(&list(&mut env, Filter::default(), 20, None).await),
        ["a", "b", "c", "d"]
    );
    let enforced = Filter {
        mode: Some(Mode::Enforced),
        tag: None,
    };
    assert_eq!(
        names(&list(&mut env, enforced, 20, None).await),
        ["a", "c", "d"]
    );
    let hr = Filter {
        mode: None,
        tag: Some("hr".into()),
    };
    assert_eq!(names(&list(&mut env, hr, 20, None).await), ["b", "c"]);
    let first = list(&mut env, Filter::default(), 3, None).await;
    assert_eq!(names(&first), ["a", "b", "c"]);
    let cursor = first.pagination.next_cursor.clone().unwrap();
    let second = list(&mut env, Filter::default(), 3, Some(&cursor)).await;
    assert_eq!(names(&second), ["d"]);
    assert!(!second.pagination.has_more);
}

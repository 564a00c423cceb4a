//! Tokenization: modes, batch modes, dry runs, item codes, quotas, concurrency, and what the
//! database ends up holding.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use diesel_async::AsyncPgConnection;
use vault::VaultError;
use vault::tokenize::{BatchMode, Item, ItemOutcome, Outcome, Request, Run, Tokenized};

use crate::{Vault, acme, all_modes, body, codes, globex, item, request, rule, written};

#[tokio::test]
async fn the_same_deterministic_value_gets_one_token_and_one_entry_and_randomized_values_one_each()
{
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let batch = request(
        policy,
        vec![
            item("123-45-6789", "us_ssn"),
            // The same SSN written differently is the same value.
            item("123 45 6789", "us_ssn"),
            item("ann@example.com", "email"),
            item("ann@example.com", "email"),
            item("046 454 286", "ca_sin"),
        ],
    );
    let first = v.done(&batch).await;
    assert_eq!(codes(&first), ["TOKENIZED"; 5]);
    assert_eq!((first.success_count(), first.failure_count()), (5, 0));
    assert_eq!(first.batch_policy_version, 1);

    let (ssn, ssn_id, mode) = written(&first, 0);
    assert!(ssn.starts_with("dtk_"), "{ssn}");
    assert_eq!(mode, "deterministic");
    let (again, again_id, _) = written(&first, 1);
    assert_eq!((again, again_id), (ssn.clone(), ssn_id));

    let (mail_a, mail_a_id, mode) = written(&first, 2);
    let (mail_b, mail_b_id, _) = written(&first, 3);
    assert_eq!(mode, "randomized");
    assert!(mail_a.starts_with("rtk_") && mail_b.starts_with("rtk_"));
    assert_ne!(mail_a, mail_b);
    assert_ne!(mail_a_id, mail_b_id);

    let (sin, sin_id, mode) = written(&first, 4);
    assert_eq!(mode, "format_preserving");
    assert_eq!(sin.len(), "046 454 286".len());
    assert_eq!(&sin[3..4], " ");
    assert_ne!(sin, "046 454 286");
    // One entry for the SSN, one per randomized email, one for the SIN.
    assert_eq!(v.entries().await, 4);
    for r in &first.results {
        let ItemOutcome::Tokenized { fallback, .. } = r.outcome else {
            unreachable!()
        };
        assert_eq!(fallback, None);
    }

    // Again: the deterministic and format-preserving values find their entries, the randomized
    // ones get new ones.
    let second = v.done(&batch).await;
    assert_eq!(written(&second, 0), (ssn, ssn_id, "deterministic"));
    assert_eq!(written(&second, 4), (sin, sin_id, "format_preserving"));
    let (mail_c, _, _) = written(&second, 2);
    assert!(![mail_a, mail_b].contains(&mail_c));
    assert_eq!(v.entries().await, 6);
}

#[tokio::test]
async fn a_policy_scoped_deterministic_token_differs_between_policies_and_a_global_one_does_not() {
    let mut v = Vault::new().await;
    let one = v.policy(&acme(), &all_modes()).await;
    let two = v.policy(&acme(), &all_modes()).await;
    let items = || {
        vec![
            item("AB123456", "passport_ca"),
            item("123-45-6789", "us_ssn"),
        ]
    };
    let under_one = v.done(&request(one, items())).await;
    let under_two = v.done(&request(two, items())).await;
    assert_ne!(written(&under_one, 0).0, written(&under_two, 0).0);
    assert_eq!(written(&under_one, 1), written(&under_two, 1));
    assert_eq!(v.entries().await, 3);

    // Another tenant's keys give the same value another token.
    let theirs = v.policy(&globex(), &all_modes()).await;
    let Ok(Outcome::Done { result, .. }) = v.tokenize(&globex(), &request(theirs, items())).await
    else {
        panic!("globex could not tokenize")
    };
    assert_ne!(written(&result, 1).0, written(&under_one, 1).0);
}

#[tokio::test]
async fn a_mode_on_the_item_overrides_the_policys_rule() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let fpe = Item {
        mode: Some("format_preserving".into()),
        ..item("123-45-6789", "us_ssn")
    };
    let result = v
        .done(&request(policy, vec![item("123-45-6789", "us_ssn"), fpe]))
        .await;
    let (deterministic, det_id, mode) = written(&result, 0);
    assert_eq!(mode, "deterministic");
    let (shaped, shaped_id, mode) = written(&result, 1);
    assert_eq!(mode, "format_preserving");
    assert_eq!(shaped.len(), 11, "{shaped}");
    assert_ne!(shaped, deterministic);
    assert_ne!(shaped_id, det_id);
    assert_eq!(v.entries().await, 2);
}

#[tokio::test]
async fn a_dry_run_previews_the_tokens_it_can_know_and_writes_nothing() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let items = vec![
        item("123-45-6789", "us_ssn"),
        item("ann@example.com", "email"),
        item("046 454 286", "ca_sin"),
        item("bad", "us_ssn"),
    ];
    let dry = Request {
        run: Run::DryRun,
        ..request(policy, items.clone())
    };
    let preview = v.done(&dry).await;
    assert_eq!(
        codes(&preview),
        ["TOKENIZED", "TOKENIZED", "TOKENIZED", "INVALID_VALUE"]
    );
    let outcome = |i: usize| match &preview.results[i].outcome {
        ItemOutcome::Tokenized {
            token, token_id, ..
        } => (token.clone(), *token_id),
        other => panic!("{other:?}"),
    };
    let (ssn, ssn_id) = outcome(0);
    assert!(ssn.as_deref().unwrap().starts_with("dtk_"));
    assert_eq!(ssn_id, None, "no entry, no id");
    assert_eq!(
        outcome(1),
        (None, None),
        "a randomized token cannot be known in advance"
    );
    let (sin, _) = outcome(2);
    assert!(sin.is_some());
    assert_eq!(v.entries().await, 0);
    assert_eq!(v.count("SELECT count(*) AS n FROM usage_counters").await, 0);

    // The real call gives the tokens the preview announced.
    let real = v.done(&request(policy, items)).await;
    assert_eq!(Some(written(&real, 0).0), ssn);
    assert_eq!(Some(written(&real, 2).0), sin);
    assert_eq!(v.entries().await, 3);

    // A dry run over existing entries still writes and meters nothing.
    let again = v.done(&dry).await;
    assert!(matches!(
        &again.results[0].outcome,
        ItemOutcome::Tokenized { token, token_id: None, .. } if *token == ssn
    ));
    assert_eq!(v.entries().await, 3);
    let usage = limits::usage(&mut v.conn, &acme()).await.unwrap();
    assert_eq!((usage.tokenize_requests, usage.tokenize_items), (1, 3));
}

#[tokio::test]
async fn an_all_or_nothing_batch_with_one_bad_item_writes_nothing_and_names_the_first_failure() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let bad = Request {
        batch_mode: BatchMode::AllOrNothing,
        ..request(
            policy,
            vec![
                item("123-45-6789", "us_ssn"),
                item("046 454 287", "ca_sin"),
                item("", "email"),
            ],
        )
    };
    let calls = AtomicUsize::new(0);
    let respond = |r: &Tokenized| {
        calls.fetch_add(1, Ordering::SeqCst);
        body(r)
    };
    let outcome = vault::tokenize::tokenize(&mut v.conn, &v.keyring, &acme(), &bad, &respond)
        .await
        .unwrap();
    let Outcome::Rejected { first, result } = outcome else {
        panic!("expected a rejection, got {outcome:?}")
    };
    assert_eq!(first.code, "INVALID_VALUE");
    assert_eq!(codes(&result), ["SKIPPED", "INVALID_VALUE", "EMPTY_VALUE"]);
    assert_eq!((result.success_count(), result.failure_count()), (0, 3));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "a rejection is not a response body"
    );
    assert_eq!(v.entries().await, 0);
    assert_eq!(v.count("SELECT count(*) AS n FROM usage_counters").await, 0);

    // The same batch without the bad items is written whole.
    let good = Request {
        items: vec![item("123-45-6789", "us_ssn"), item("046 454 286", "ca_sin")],
        ..bad
    };
    let result = v.done(&good).await;
    assert_eq!(codes(&result), ["TOKENIZED", "TOKENIZED"]);
    assert_eq!(v.entries().await, 2);
}

#[tokio::test]
async fn best_effort_writes_the_good_items_and_reports_each_failure_by_its_code() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let result = v
        .done(&request(
            policy,
            vec![
                item("123-45-6789", "us_ssn"),
                item("   ", "us_ssn"),
                item("123-45-6789", "us_zip"),
                item("000-12-3456", "us_ssn"),
                item("1234.50", "monetary"),
                Item {
                    mode: Some("scrambled".into()),
                    ..item("234-56-7890", "us_ssn")
                },
            ],
        ))
        .await;
    assert_eq!(
        codes(&result),
        [
            "TOKENIZED",
            "EMPTY_VALUE",
            "UNSUPPORTED_PII_TYPE",
            "INVALID_VALUE",
            "NO_RULE_FOR_TYPE",
            "INVALID_MODE"
        ]
    );
    assert_eq!((result.success_count(), result.failure_count()), (1, 5));
    // No failure repeats its value.
    let text = format!("{result:?}");
    for value in ["000-12-3456", "234-56-7890", "1234.50"] {
        assert!(!text.contains(value), "{value} in {text}");
    }
    assert_eq!(v.entries().await, 1);
    let usage = limits::usage(&mut v.conn, &acme()).await.unwrap();
    assert_eq!((usage.tokenize_requests, usage.tokenize_items), (1, 1));
}

#[tokio::test]
async fn fail_open_protects_what_the_rules_cannot_handle_in_randomized_mode() {
    let mut v = Vault::new().await;
    let mut definition = all_modes();
    definition.failure_mode = Some("fail_open".into());
    let policy = v.policy(&acme(), &definition).await;
    let result = v
        .done(&request(
            policy,
            vec![
                item("000-12-3456", "us_ssn"),
                item("$12.50", "monetary"),
                item("", "us_ssn"),
            ],
        ))
        .await;
    assert_eq!(codes(&result), ["TOKENIZED", "TOKENIZED", "EMPTY_VALUE"]);
    for (i, reason) in [(0, "INVALID_VALUE"), (1, "NO_RULE_FOR_TYPE")] {
        let ItemOutcome::Tokenized {
            token: Some(token),
            mode,
            fallback: Some(fallback),
            ..
        } = &result.results[i].outcome
        else {
            panic!("item {i}: {:?}", result.results[i])
        };
        assert!(token.starts_with("rtk_"), "{token}");
        assert_eq!(mode.as_str(), "randomized");
        assert_eq!(fallback.mode.as_str(), "randomized");
        assert_eq!(fallback.reason_code, reason);
    }
    assert_eq!(v.entries().await, 2);
}

#[tokio::test]
async fn a_value_written_in_another_script_gets_no_format_preserving_token_that_would_copy_it() {
    let mut v = Vault::new().await;
    let arabic_indic = "\u{661}\u{662}\u{663}\u{664}\u{665}\u{666}\u{667}\u{668}\u{669}-1";
    let mut definition = all_modes();
    definition
        .type_rules
        .insert("case_number".into(), rule("format_preserving"));
    let closed = v.policy(&acme(), &definition).await;
    let result = v
        .done(&request(closed, vec![item(arabic_indic, "case_number")]))
        .await;
    assert_eq!(codes(&result), ["INVALID_VALUE"]);
    definition.failure_mode = Some("fail_open".into());
    let open = v.policy(&acme(), &definition).await;
    let result = v
        .done(&request(open, vec![item(arabic_indic, "case_number")]))
        .await;
    let ItemOutcome::Tokenized {
        token: Some(token),
        fallback: Some(fallback),
        ..
    } = &result.results[0].outcome
    else {
        panic!("{:?}", result.results[0])
    };
    assert!(token.starts_with("rtk_"), "{token}");
    assert_eq!(fallback.reason_code, "INVALID_VALUE");
    assert!(!body(&result).windows(2).any(|w| w == "\u{661}".as_bytes()));
}

#[tokio::test]
async fn requests_outside_the_limits_or_naming_no_policy_of_the_tenant_are_refused() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let one = || vec![item("123-45-6789", "us_ssn")];
    let refused = [
        request(policy, Vec::new()),
        request(
            policy,
            vec![item("123-45-6789", "us_ssn"); vault::tokenize::MAX_ITEMS + 1],
        ),
        Request {
            idempotency_key: Some(String::new()),
            ..request(policy, one())
        },
        Request {
            idempotency_key: Some("k".repeat(vault::tokenize::MAX_IDEMPOTENCY_KEY + 1)),
            ..request(policy, one())
        },
    ];
    for r in &refused {
        let outcome = v.tokenize(&acme(), r).await;
        assert!(
            matches!(outcome, Err(VaultError::InvalidRequest(_))),
            "{outcome:?}"
        );
    }
    for (tenant, policy_id) in [
        (acme(), ids::TokenPolicyId::new()),
        (acme(), ids::TokenPolicyId::from_uuid(uuid::Uuid::nil())),
        (globex(), policy),
    ] {
        let outcome = v.tokenize(&tenant, &request(policy_id, one())).await;
        assert!(
            matches!(outcome, Err(VaultError::PolicyNotFound)),
            "{outcome:?}"
        );
    }
    assert_eq!(v.entries().await, 0);
    assert!(matches!(
        "SOMETIMES".parse::<BatchMode>(),
        Err(VaultError::InvalidRequest(_))
    ));
    assert_eq!(
        "ALL_OR_NOTHING".parse::<BatchMode>().unwrap(),
        BatchMode::AllOrNothing
    );
    assert_eq!(
        "BEST_EFFORT".parse::<BatchMode>().unwrap(),
        BatchMode::BestEffort
    );
}

#[tokio::test]
async fn a_batch_that_would_go_over_the_monthly_quota_writes_nothing() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    limits::set_monthly_quota(&mut v.conn, &acme(), Some(2))
        .await
        .unwrap();
    let three = request(
        policy,
        vec![
            item("123-45-6789", "us_ssn"),
            item("234-56-7890", "us_ssn"),
            item("345-67-8901", "us_ssn"),
        ],
    );
    let outcome = v.tokenize(&acme(), &three).await;
    assert!(
        matches!(outcome, Err(VaultError::QuotaExceeded)),
        "{outcome:?}"
    );
    assert_eq!(v.entries().await, 0);

    // A dry run consumes nothing, so it is not refused.
    let dry = Request {
        run: Run::DryRun,
        ..three.clone()
    };
    assert_eq!(v.done(&dry).await.success_count(), 3);

    let two = request(
        policy,
        vec![item("123-45-6789", "us_ssn"), item("234-56-7890", "us_ssn")],
    );
    assert_eq!(v.done(&two).await.success_count(), 2);
    // Values already in the vault cost nothing more; a new one is over.
    assert_eq!(v.done(&two).await.success_count(), 2);
    let outcome = v
        .tokenize(
            &acme(),
            &request(policy, vec![item("345-67-8901", "us_ssn")]),
        )
        .await;
    assert!(
        matches!(outcome, Err(VaultError::QuotaExceeded)),
        "{outcome:?}"
    );
    assert_eq!(v.entries().await, 2);
    assert_eq!(
        limits::tokens_created_this_month(&mut v.conn, &acme())
            .await
            .unwrap(),
        2
    );
    // Another tenant's quota is its own.
    let theirs = v.policy(&globex(), &all_modes()).await;
    let outcome = v
        .tokenize(&globex(), &request(theirs, three.items.clone()))
        .await;
    assert!(matches!(outcome, Ok(Outcome::Done { .. })), "{outcome:?}");

    // Without the quota, the batch goes through.
    limits::set_monthly_quota(&mut v.conn, &acme(), None)
        .await
        .unwrap();
    assert_eq!(v.done(&three).await.success_count(), 3);
    assert_eq!(
        limits::tokens_created_this_month(&mut v.conn, &acme())
            .await
            .unwrap(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_batches_of_the_same_values_make_one_entry_each() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let batch = Arc::new(request(
        policy,
        vec![
            item("123-45-6789", "us_ssn"),
            item("046 454 286", "ca_sin"),
            item("March 4, 1980", "dob"),
        ],
    ));
    let mut conns: Vec<AsyncPgConnection> = Vec::new();
    for _ in 0..8 {
        conns.push(v.connect().await);
    }
    let start = Arc::new(tokio::sync::Barrier::new(conns.len()));
    let mut tasks = tokio::task::JoinSet::new();
    for mut conn in conns {
        let (keyring, batch, start) = (v.keyring.clone(), batch.clone(), start.clone());
        tasks.spawn(async move {
            start.wait().await;
            match vault::tokenize::tokenize(&mut conn, &keyring, &acme(), &batch, &body).await {
                Ok(Outcome::Done { result, .. }) => result,
                other => panic!("{other:?}"),
            }
        });
    }
    let mut seen = BTreeSet::new();
    while let Some(result) = tasks.join_next().await {
        let result = result.unwrap();
        assert_eq!(codes(&result), ["TOKENIZED"; 3]);
        for i in 0..3 {
            let (token, id, _) = written(&result, i);
            seen.insert((i, token, id));
        }
    }
    assert_eq!(seen.len(), 3, "every call got the same tokens: {seen:?}");
    assert_eq!(v.entries().await, 3);
}

/// Eight writers of different values at once, against a quota that admits five of their
/// batches: the lock orders them, so exactly five are written, and the counter the quota reads
/// holds exactly the entries written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_batches_never_pass_the_monthly_quota_together() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    limits::set_monthly_quota(&mut v.conn, &acme(), Some(10))
        .await
        .unwrap();
    let mut conns: Vec<AsyncPgConnection> = Vec::new();
    for _ in 0..8 {
        conns.push(v.connect().await);
    }
    let start = Arc::new(tokio::sync::Barrier::new(conns.len()));
    let mut tasks = tokio::task::JoinSet::new();
    for (n, mut conn) in conns.into_iter().enumerate() {
        let batch = request(
            policy,
            vec![
                item(&format!("{:03}-45-6789", 101 + n), "us_ssn"),
                item(&format!("{:03}-45-6789", 201 + n), "us_ssn"),
            ],
        );
        let (keyring, start) = (v.keyring.clone(), start.clone());
        tasks.spawn(async move {
            start.wait().await;
            vault::tokenize::tokenize(&mut conn, &keyring, &acme(), &batch, &body).await
        });
    }
    let (mut done, mut refused) = (0, 0);
    while let Some(outcome) = tasks.join_next().await {
        match outcome.unwrap() {
            Ok(Outcome::Done { .. }) => done += 1,
            Err(VaultError::QuotaExceeded) => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((done, refused), (5, 3));
    assert_eq!(v.entries().await, 10);
    assert_eq!(
        limits::tokens_created_this_month(&mut v.conn, &acme())
            .await
            .unwrap(),
        10
    );
}

#[tokio::test]
async fn surrogate_tokens_are_unique_within_the_tenant() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let items: Vec<Item> = (1..=28)
        .flat_map(|d| {
            [
                item(&format!("2001-02-{d:02}"), "dob"),
                item(&format!("1999-07-{d:02}"), "dob"),
            ]
        })
        .collect();
    let result = v.done(&request(policy, items)).await;
    let tokens: BTreeSet<String> = (0..56).map(|i| written(&result, i).0).collect();
    assert_eq!(tokens.len(), 56);
    assert_eq!(v.entries().await, 56);
}

#[tokio::test]
async fn no_tokenized_value_reaches_any_table() {
    let mut v = Vault::new().await;
    let mut definition = all_modes();
    definition
        .type_rules
        .insert("monetary".into(), rule("deterministic"));
    definition
        .type_rules
        .insert("case_number".into(), rule("randomized"));
    let policy = v.policy(&acme(), &definition).await;
    let values = [
        ("123-45-6789", "us_ssn", vec!["123-45-6789", "123456789"]),
        ("046 454 286", "ca_sin", vec!["046 454 286", "046454286"]),
        (
            "Zelda.Quartz+promo@Example.org",
            "email",
            vec!["zelda.quartz", "Zelda.Quartz"],
        ),
        ("+1 (202) 555-0187", "phone", vec!["2025550187", "555-0187"]),
        ("March 4, 1980", "dob", vec!["March 4, 1980", "1980-03-04"]),
        ("$98,765.43", "monetary", vec!["98765.43", "98,765.43"]),
        (
            "cv-2023 00471",
            "case_number",
            vec!["CV-2023 00471", "2023 00471"],
        ),
        ("qz 918273", "passport_ca", vec!["QZ918273", "918273"]),
    ];
    // Under an idempotency key, so that the stored response is in the dump too.
    let batch = Request {
        idempotency_key: Some("dump-1".into()),
        ..request(policy, values.iter().map(|(v, t, _)| item(v, t)).collect())
    };
    let result = v.done(&batch).await;
    assert_eq!(result.success_count(), values.len(), "{result:?}");
    let dump = testkit::pg_dump(&v.db);
    // The dump holds the entries (their tokens are there), so the absence below means something.
    let (ssn_token, _, _) = written(&result, 0);
    assert!(dump.contains(&ssn_token), "the dump holds the vault");
    // The idempotency key's row is there, its key as an HMAC, not in clear.
    assert!(dump.contains("h1:"), "the dump holds the idempotency key");
    assert!(
        !dump.contains("dump-1"),
        "the idempotency key is in the dump"
    );
    for (raw, _, forms) in &values {
        assert!(!dump.contains(raw), "{raw} is in the dump");
        for form in forms {
            assert!(!dump.contains(form), "{form} is in the dump");
        }
    }
}

/// A batch of 32 values or more is first inserted plainly in a savepoint, which a value already
/// in the vault undoes before the batch is written with `ON CONFLICT`; a smaller batch goes
/// straight to `ON CONFLICT`. Either way the stored token is reused and the rest is written.
#[tokio::test]
async fn a_stored_value_is_reused_in_small_and_large_batches() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let first = v
        .done(&request(policy, vec![item("123-45-6789", "us_ssn")]))
        .await;
    let (token, id, _) = written(&first, 0);
    for size in [3usize, 40] {
        let mut items: Vec<Item> = (1..size)
            .map(|i| item(&format!("ann{size}.{i}@example.com"), "email"))
            .collect();
        items.insert(size / 2, item("123-45-6789", "us_ssn"));
        let result = v.done(&request(policy, items)).await;
        assert_eq!(codes(&result), vec!["TOKENIZED"; size], "{size} values");
        assert_eq!(
            written(&result, size / 2),
            (token.clone(), id, "deterministic"),
            "{size} values: the stored token is reused"
        );
    }
    assert_eq!(v.entries().await, 1 + 2 + 39);
}

/// A value whose deterministic or format-preserving token has expired gets that token back,
/// active again for the policy's TTL: the token is a function of the value (or its surrogate),
/// so handing back the expired one as if it worked would give a token no one can detokenize.
#[tokio::test]
async fn tokenizing_a_value_whose_token_expired_makes_it_active_again() {
    let mut v = Vault::new().await;
    let policy = v
        .policy(
            &acme(),
            &vault::policies::Definition {
                token_ttl_seconds: Some(3600),
                ..all_modes()
            },
        )
        .await;
    let batch = request(
        policy,
        vec![item("123-45-6789", "us_ssn"), item("046 454 286", "ca_sin")],
    );
    let first = v.done(&batch).await;
    let (ssn, ssn_id, _) = written(&first, 0);
    let (sin, sin_id, _) = written(&first, 1);
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query("UPDATE vault_entries SET expires_at = now() - interval '1 second'"),
        &mut v.conn,
    )
    .await
    .unwrap();
    let expired = "SELECT count(*) AS n FROM vault_entries WHERE expires_at <= now()";
    assert_eq!(v.count(expired).await, 2);

    let again = v.done(&batch).await;
    assert_eq!(codes(&again), ["TOKENIZED"; 2]);
    let (ssn_again, ssn_id_again, _) = written(&again, 0);
    let (sin_again, sin_id_again, _) = written(&again, 1);
    assert_eq!((ssn_again, ssn_id_again), (ssn, ssn_id));
    assert_eq!((sin_again, sin_id_again), (sin, sin_id));
    assert_eq!(v.count(expired).await, 0);
    assert_eq!(
        v.count(
            "SELECT count(*) AS n FROM vault_entries
              WHERE expires_at > now() + interval '3500 seconds'"
        )
        .await,
        2
    );
    assert_eq!(v.entries().await, 2);
}

/// The value entry `id` holds.
async fn revealed(v: &mut Vault, id: ids::TokenId) -> String {
    let keys = v.keyring.tenant(&mut v.conn, &acme()).await.unwrap();
    let sealed = vault::entries::sealed(&mut v.conn, &acme(), &[id.as_uuid()])
        .await
        .unwrap();
    vault::entries::reveal(&keys, &acme(), &sealed[0])
        .unwrap()
        .value
        .expose()
        .to_owned()
}

/// A format-preserving phone token names one number only within its shape, and the shape
/// depends on how the number parsed: German `0301234567` keeps its trunk `0` and enciphers nine
/// digits, `3012345678` enciphers ten, and their tokens can coincide. A value whose token an
/// entry of another value already holds (made here by giving the entry of `0301234567` the
/// token of `3012345678`) takes a surrogate of its own shape: never the other value's entry,
/// whose detokenization would reveal someone else's number. Asked again, it finds that
/// surrogate; in one batch, the second of two such values does the same.
#[tokio::test]
async fn a_format_preserving_token_that_names_another_value_gives_this_one_a_surrogate() {
    let mut v = Vault::new().await;
    let mut definition = all_modes();
    definition.default_region = Some("DE".into());
    let policy = v.policy(&acme(), &definition).await;
    let trunk = v
        .done(&request(policy, vec![item("0301234567", "phone")]))
        .await;
    let (_, trunk_id, _) = written(&trunk, 0);
    let preview = v
        .done(&Request {
            run: Run::DryRun,
            ..request(policy, vec![item("3012345678", "phone")])
        })
        .await;
    let ItemOutcome::Tokenized {
        token: Some(bare_token),
        ..
    } = &preview.results[0].outcome
    else {
        panic!("{:?}", preview.results[0])
    };
    let lookup = tokenize_core::lookup("acme", "phone", bare_token);
    use diesel_async::RunQueryDsl as _;
    diesel::sql_query("UPDATE vault_entries SET token = $1, lookup = $2 WHERE token_id = $3")
        .bind::<diesel::sql_types::Text, _>(bare_token)
        .bind::<diesel::sql_types::Uuid, _>(lookup)
        .bind::<diesel::sql_types::Uuid, _>(trunk_id.as_uuid())
        .execute(&mut v.conn)
        .await
        .unwrap();

    // The dry run now knows no token: the value would take a surrogate.
    let preview = v
        .done(&Request {
            run: Run::DryRun,
            ..request(policy, vec![item("3012345678", "phone")])
        })
        .await;
    assert!(
        matches!(
            &preview.results[0].outcome,
            ItemOutcome::Tokenized {
                token: None,
                token_id: None,
                ..
            }
        ),
        "{:?}",
        preview.results[0]
    );
    let bare = v
        .done(&request(policy, vec![item("3012345678", "phone")]))
        .await;
    let (token, id, mode) = written(&bare, 0);
    assert_eq!(mode, "format_preserving");
    assert_ne!(id, trunk_id, "not the other number's entry");
    assert_ne!(&token, bare_token);
    assert!(
        token.len() == 10 && token.bytes().all(|b| b.is_ascii_digit()),
        "{token}"
    );
    assert_eq!(revealed(&mut v, id).await, "+493012345678");
    assert_eq!(revealed(&mut v, trunk_id).await, "+49301234567");
    // Asked again, alone or twice in a batch, it is the same surrogate's entry.
    let again = v
        .done(&request(
            policy,
            vec![item("3012345678", "phone"), item("3012345678", "phone")],
        ))
        .await;
    assert_eq!(written(&again, 0), (token.clone(), id, "format_preserving"));
    assert_eq!(written(&again, 1), (token, id, "format_preserving"));
    assert_eq!(v.entries().await, 2);
}

/// Tokenizes for `tenant`, expecting the batch to be processed.
async fn done_for(v: &mut Vault, tenant: &ids::TenantId, request: &Request) -> Tokenized {
    match v.tokenize(tenant, request).await.unwrap() {
        Outcome::Done { result, .. } => result,
        other => panic!("expected a processed batch, got {other:?}"),
    }
}

/// The same, with a collision that happens by itself rather than one made in the database:
/// under the root given here, German `3000012018` and `0300223261` (ten bare digits each, the
/// second with its trunk `0` kept) have the same format-preserving token, and so do
/// `3000014745` and `0301486220` (found by a search over two million Berlin numbers). Written
/// one call after the other, or in one batch in either order, each number gets an entry of its
/// own that reveals it, and asking again finds the same entries.
#[tokio::test]
async fn two_numbers_whose_tokens_coincide_each_get_an_entry_of_their_own() {
    let mut v = Vault::new().await;
    for tenant in [acme(), globex()] {
        keys::add_first_version_from_root(&mut v.conn, &v.master, &tenant, &[1u8; 32])
            .await
            .unwrap();
    }
    let mut definition = all_modes();
    definition.default_region = Some("DE".into());
    let ours = v.policy(&acme(), &definition).await;
    let items = |values: &[&str]| values.iter().map(|n| item(n, "phone")).collect::<Vec<_>>();

    // One call after the other: the first number gets the token, the second a surrogate.
    let first = v.done(&request(ours, items(&["0300223261"]))).await;
    let (token, trunk, _) = written(&first, 0);
    assert_eq!(token, "0125599802");
    let second = v.done(&request(ours, items(&["3000012018"]))).await;
    let (other, bare, mode) = written(&second, 0);
    assert_eq!(mode, "format_preserving");
    assert_ne!(bare, trunk);
    assert_ne!(other, token);
    assert_eq!(revealed(&mut v, trunk).await, "+49300223261");
    assert_eq!(revealed(&mut v, bare).await, "+493000012018");

    // In one batch, in either order (the other tenant shares the root, not the entries).
    for (tenant, order) in [
        (acme(), ["3000014745", "0301486220"]),
        (globex(), ["0301486220", "3000014745"]),
    ] {
        let policy = v.policy(&tenant, &definition).await;
        let batch = request(policy, items(&order));
        let once = done_for(&mut v, &tenant, &batch).await;
        let (a, b) = (written(&once, 0), written(&once, 1));
        assert_ne!(a.1, b.1, "{tenant}: one entry each");
        assert!(a.0 == "0569680311" || b.0 == "0569680311", "{a:?} {b:?}");
        for (entry, number) in [(&a, order[0]), (&b, order[1])] {
            let keys = v.keyring.tenant(&mut v.conn, &tenant).await.unwrap();
            let sealed = vault::entries::sealed(&mut v.conn, &tenant, &[entry.1.as_uuid()])
                .await
                .unwrap();
            let value = vault::entries::reveal(&keys, &tenant, &sealed[0]).unwrap();
            assert_eq!(
                value.value.expose(),
                format!("+49{}", number.trim_start_matches('0'))
            );
        }
        let again = done_for(&mut v, &tenant, &batch).await;
        assert_eq!((written(&again, 0), written(&again, 1)), (a, b), "{tenant}");
    }
}

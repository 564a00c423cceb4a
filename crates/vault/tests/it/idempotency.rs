//! Idempotency keys: a replay is the first response byte for byte; the same key with another
//! request is refused; a batch that was not written releases its key.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use diesel_async::AsyncPgConnection;
use vault::VaultError;
use vault::tokenize::{BatchMode, Outcome, Request, Run, Tokenized};

use crate::{Vault, acme, all_modes, body, codes, globex, item, request};

fn keyed(request: Request, key: &str) -> Request {
    Request {
        idempotency_key: Some(key.to_owned()),
        ..request
    }
}

#[tokio::test]
async fn an_idempotency_key_replays_the_stored_body_and_refuses_another_request() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let first_request = keyed(
        request(
            policy,
            vec![
                item("ann@example.com", "email"),
                item("123-45-6789", "us_ssn"),
            ],
        ),
        "order-7781",
    );
    let calls = AtomicUsize::new(0);
    let respond = |r: &Tokenized| {
        calls.fetch_add(1, Ordering::SeqCst);
        body(r)
    };
    let outcome =
        vault::tokenize::tokenize(&mut v.conn, &v.keyring, &acme(), &first_request, &respond)
            .await
            .unwrap();
    let Outcome::Done { result, body: sent } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(codes(&result), ["TOKENIZED", "TOKENIZED"]);
    assert_eq!(sent, body(&result));

    // The retry gets the stored bytes (with the first call's trace id); nothing runs again.
    let outcome =
        vault::tokenize::tokenize(&mut v.conn, &v.keyring, &acme(), &first_request, &respond)
            .await
            .unwrap();
    let Outcome::Replayed { body: replayed } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(replayed, sent);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(v.entries().await, 2, "the randomized item was written once");
    let usage = limits::usage(&mut v.conn, &acme()).await.unwrap();
    assert_eq!(usage.tokenize_requests, 1, "a replay is not metered again");

    // The same key with anything else changed is refused, and writes nothing.
    let mut other_value = first_request.clone();
    other_value.items[0] = item("bob@example.com", "email");
    let other_mode = Request {
        batch_mode: BatchMode::AllOrNothing,
        ..first_request.clone()
    };
    let other_policy = Request {
        policy_id: v.policy(&acme(), &all_modes()).await,
        ..first_request.clone()
    };
    let mut other_type = first_request.clone();
    other_type.items[1].mode = Some("format_preserving".into());
    for changed in [other_value, other_mode, other_policy, other_type] {
        let outcome = v.tokenize(&acme(), &changed).await;
        assert!(
            matches!(outcome, Err(VaultError::IdempotencyKeyReused)),
            "{outcome:?}"
        );
    }
    assert_eq!(v.entries().await, 2);

    // Keys belong to their tenant.
    let theirs = v.policy(&globex(), &all_modes()).await;
    let outcome = v
        .tokenize(
            &globex(),
            &Request {
                policy_id: theirs,
                ..first_request.clone()
            },
        )
        .await;
    assert!(matches!(outcome, Ok(Outcome::Done { .. })), "{outcome:?}");
    assert_eq!(v.entries().await, 4);
}

#[tokio::test]
async fn a_batch_that_was_not_written_releases_its_idempotency_key() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;

    // Rejected: the fixed batch may reuse the key.
    let bad = keyed(
        Request {
            batch_mode: BatchMode::AllOrNothing,
            ..request(
                policy,
                vec![item("123-45-6789", "us_ssn"), item("000-00-0000", "us_ssn")],
            )
        },
        "fix-and-retry",
    );
    let outcome = v.tokenize(&acme(), &bad).await.unwrap();
    assert!(matches!(outcome, Outcome::Rejected { .. }), "{outcome:?}");
    assert_eq!(
        v.count("SELECT count(*) AS n FROM idempotency_keys").await,
        0
    );
    let mut fixed = bad.clone();
    fixed.items[1] = item("234-56-7890", "us_ssn");
    assert_eq!(codes(&v.done(&fixed).await), ["TOKENIZED", "TOKENIZED"]);
    assert_eq!(v.entries().await, 2);

    // Refused for the quota: once the quota is lifted, the same request runs.
    limits::set_monthly_quota(&mut v.conn, &acme(), Some(2))
        .await
        .unwrap();
    let over = keyed(
        request(policy, vec![item("345-67-8901", "us_ssn")]),
        "after-quota",
    );
    let outcome = v.tokenize(&acme(), &over).await;
    assert!(
        matches!(outcome, Err(VaultError::QuotaExceeded)),
        "{outcome:?}"
    );
    limits::set_monthly_quota(&mut v.conn, &acme(), None)
        .await
        .unwrap();
    assert_eq!(codes(&v.done(&over).await), ["TOKENIZED"]);
    assert_eq!(v.entries().await, 3);
    assert_eq!(
        v.count("SELECT count(*) AS n FROM idempotency_keys").await,
        2
    );
}

#[tokio::test]
async fn a_dry_run_neither_claims_nor_replays_an_idempotency_key() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let written = keyed(
        request(policy, vec![item("ann@example.com", "email")]),
        "k-1",
    );
    let dry = Request {
        run: Run::DryRun,
        ..keyed(
            request(policy, vec![item("bob@example.com", "email")]),
            "k-1",
        )
    };
    v.done(&dry).await;
    assert_eq!(
        v.count("SELECT count(*) AS n FROM idempotency_keys").await,
        0
    );
    let first = v.done(&written).await;
    // A dry run with the key of a written request is previewed, not replayed nor refused.
    let again = Request {
        run: Run::DryRun,
        ..written.clone()
    };
    let outcome = v.tokenize(&acme(), &again).await.unwrap();
    let Outcome::Done { result, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_ne!(result.trace_id, first.trace_id);
    assert_eq!(v.entries().await, 1);
}

#[tokio::test]
async fn an_idempotency_key_is_forgotten_after_24_hours() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let first = keyed(
        request(policy, vec![item("ann@example.com", "email")]),
        "daily",
    );
    v.done(&first).await;
    let mut other = first.clone();
    other.items[0] = item("bob@example.com", "email");
    assert!(matches!(
        v.tokenize(&acme(), &other).await,
        Err(VaultError::IdempotencyKeyReused)
    ));
    use diesel_async::RunQueryDsl as _;
    diesel::sql_query(
        "UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute'",
    )
    .execute(&mut v.conn)
    .await
    .unwrap();
    assert_eq!(codes(&v.done(&other).await), ["TOKENIZED"]);
    // The key now holds the new request: the old one is the one refused.
    assert!(matches!(
        v.tokenize(&acme(), &first).await,
        Err(VaultError::IdempotencyKeyReused)
    ));
    assert_eq!(v.entries().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_with_one_idempotency_key_write_once_and_answer_one_body() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let batch = Arc::new(keyed(
        request(
            policy,
            vec![
                item("ann@example.com", "email"),
                item("bob@example.com", "email"),
                item("cy@example.com", "email"),
            ],
        ),
        "batch-42",
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
            vault::tokenize::tokenize(&mut conn, &keyring, &acme(), &batch, &body)
                .await
                .unwrap()
        });
    }
    let mut done = 0;
    let mut bodies = BTreeSet::new();
    while let Some(outcome) = tasks.join_next().await {
        match outcome.unwrap() {
            Outcome::Done { body, .. } => {
                done += 1;
                bodies.insert(body);
            }
            Outcome::Replayed { body } => {
                bodies.insert(body);
            }
            rejected @ Outcome::Rejected { .. } => panic!("{rejected:?}"),
        }
    }
    assert_eq!(done, 1, "one call ran, the others replayed it");
    assert_eq!(bodies.len(), 1, "every call answered the same bytes");
    assert_eq!(v.entries().await, 3);
}

#[tokio::test]
async fn a_metering_failure_fails_no_tokenization_with_or_without_a_key() {
    use diesel_async::SimpleAsyncConnection as _;
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    // Usage metering refuses every row from now on.
    v.conn
        .batch_execute("ALTER TABLE usage_counters ADD CONSTRAINT refuse CHECK (metric = 'nope')")
        .await
        .unwrap();
    for key in [None, Some("order-9")] {
        let request = Request {
            idempotency_key: key.map(str::to_owned),
            ..request(policy, vec![item("ann@example.com", "email")])
        };
        let outcome = vault::tokenize::tokenize(&mut v.conn, &v.keyring, &acme(), &request, &body)
            .await
            .unwrap_or_else(|e| panic!("key {key:?}: {e}"));
        assert!(
            matches!(outcome, Outcome::Done { .. }),
            "key {key:?}: {outcome:?}"
        );
    }
    assert_eq!(v.entries().await, 2, "both batches were written");
    // The key was kept: the same request replays.
    let request = Request {
        idempotency_key: Some("order-9".into()),
        ..request(policy, vec![item("ann@example.com", "email")])
    };
    let outcome = vault::tokenize::tokenize(&mut v.conn, &v.keyring, &acme(), &request, &body)
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Replayed { .. }), "{outcome:?}");
}

/// The digest releases before v2 stored: SHA-256 over the length-prefixed fields, without a key.
/// Anyone who can read the table can compute it for a guessed value.
fn unkeyed_digest(r: &Request) -> Vec<u8> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut field = |bytes: &[u8]| {
        ctx.update(&(bytes.len() as u64).to_be_bytes());
        ctx.update(bytes);
    };
    field(b"dps-tokenize-request-v1");
    field(r.policy_id.as_bytes());
    field(b"BEST_EFFORT");
    field(r.idempotency_key.as_deref().unwrap_or("").as_bytes());
    for item in &r.items {
        field(item.value.as_bytes());
        field(item.pii_type.as_bytes());
        field(item.mode.as_deref().map_or(b"\0" as &[u8], str::as_bytes));
    }
    ctx.finish().as_ref().to_vec()
}

#[tokio::test]
async fn the_stored_digest_cannot_be_searched_for_the_value_and_older_digests_still_replay() {
    use diesel::sql_types::Bytea;
    use diesel_async::RunQueryDsl as _;
    #[derive(diesel::QueryableByName)]
    struct Stored {
        #[diesel(sql_type = Bytea)]
        request_hash: Vec<u8>,
    }
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let one_ssn = keyed(request(policy, vec![item("123-45-6789", "us_ssn")]), "k-1");
    let sent = body(&v.done(&one_ssn).await);
    let stored: Stored = diesel::sql_query("SELECT request_hash FROM idempotency_keys")
        .get_result(&mut v.conn)
        .await
        .unwrap();
    // Everything else in a one-value request is known to whoever reads the row, so an unkeyed
    // digest would give the value away to a search of the SSN space.
    assert_eq!(stored.request_hash.len(), 32);
    assert_ne!(stored.request_hash, unkeyed_digest(&one_ssn));

    // Nor is the client's key kept in clear: clients build keys from the records they send.
    #[derive(diesel::QueryableByName)]
    struct Key {
        #[diesel(sql_type = diesel::sql_types::Text)]
        key: String,
    }
    let key: Key = diesel::sql_query("SELECT key FROM idempotency_keys")
        .get_result(&mut v.conn)
        .await
        .unwrap();
    assert!(
        key.key.starts_with("h1:") && !key.key.contains("k-1"),
        "{}",
        key.key
    );

    // A key an older release claimed (in clear, with the unkeyed digest) still replays its
    // body once upgraded, and still refuses another request.
    diesel::sql_query("UPDATE idempotency_keys SET key = 'k-1', request_hash = $1")
        .bind::<Bytea, _>(unkeyed_digest(&one_ssn))
        .execute(&mut v.conn)
        .await
        .unwrap();
    let Ok(Outcome::Replayed { body: replayed }) = v.tokenize(&acme(), &one_ssn).await else {
        panic!("an older release's key must replay");
    };
    assert_eq!(replayed, sent);
    let mut other = one_ssn.clone();
    other.items[0] = item("234-56-7890", "us_ssn");
    assert!(matches!(
        v.tokenize(&acme(), &other).await,
        Err(VaultError::IdempotencyKeyReused)
    ));
}

#[tokio::test]
async fn expired_keys_are_deleted_and_live_ones_kept() {
    use diesel_async::RunQueryDsl as _;
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let other = v.policy(&globex(), &all_modes()).await;
    for key in ["old-1", "old-2", "live"] {
        v.done(&keyed(
            request(policy, vec![item("ann@example.com", "email")]),
            key,
        ))
        .await;
    }
    let globex_old = keyed(
        request(other, vec![item("ann@example.com", "email")]),
        "old-1",
    );
    assert!(matches!(
        v.tokenize(&globex(), &globex_old).await,
        Ok(Outcome::Done { .. })
    ));
    // Keys are stored as HMACs: the expired ones are all but acme's newest.
    diesel::sql_query(
        "UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute' \
         WHERE tenant_id = 'globex' OR key <> (SELECT key FROM idempotency_keys \
               WHERE tenant_id = 'acme' ORDER BY created_at DESC LIMIT 1)",
    )
    .execute(&mut v.conn)
    .await
    .unwrap();

    assert_eq!(
        vault::tokenize::forget_expired_keys(&mut v.conn, &acme())
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        vault::tokenize::forget_expired_keys(&mut v.conn, &acme())
            .await
            .unwrap(),
        0
    );
    #[derive(diesel::QueryableByName)]
    struct Key {
        #[diesel(sql_type = diesel::sql_types::Text)]
        tenant_id: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        key: String,
    }
    let left: Vec<Key> =
        diesel::sql_query("SELECT tenant_id, key FROM idempotency_keys ORDER BY tenant_id, key")
            .load(&mut v.conn)
            .await
            .unwrap();
    let tenants: Vec<&str> = left.iter().map(|k| k.tenant_id.as_str()).collect();
    assert_eq!(tenants, ["acme", "globex"]);
    assert!(left.iter().all(|k| k.key.starts_with("h1:")));
    let live = keyed(
        request(policy, vec![item("ann@example.com", "email")]),
        "live",
    );
    assert!(matches!(
        v.tokenize(&acme(), &live).await,
        Ok(Outcome::Replayed { .. })
    ));
}

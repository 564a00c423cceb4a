//! A batch of 32 values or more is written with one binary `COPY` in a savepoint (the write
//! path of `db::raw`). A collision undoes the `COPY` and the batch goes through `INSERT ...
//! ON CONFLICT`; what is written is the same either way.

use std::collections::BTreeSet;
use std::sync::Arc;

use diesel_async::AsyncPgConnection;
use vault::tokenize::Outcome;

use crate::{Vault, acme, all_modes, body, codes, item, request, written};

/// Deterministic (SSN) and format-preserving (SIN) values, `n` of each.
fn values(n: usize) -> Vec<vault::tokenize::Item> {
    (0..n)
        .flat_map(|i| {
            [
                item(
                    &format!("{:03}-{:02}-{:04}", 101 + i, 10 + i % 80, 1000 + i),
                    "us_ssn",
                ),
                item(&sin(1_300_000 + i), "ca_sin"),
            ]
        })
        .collect()
}

/// A SIN of eight digits from `n` and the Luhn check digit that makes it valid.
fn sin(n: usize) -> String {
    let body = format!("{n:08}");
    let sum: u32 = body
        .bytes()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            match i % 2 {
                0 => d,
                _ if d * 2 > 9 => d * 2 - 9,
                _ => d * 2,
            }
        })
        .sum();
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// The expiry a `COPY` writes is the transaction's `now()` plus the policy's TTL, as the
/// `INSERT` computes it: the server's clock, not the service's.
#[tokio::test]
async fn a_copied_batch_under_a_ttl_expires_by_the_servers_clock() {
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
    let mut items: Vec<_> = (0..40)
        .map(|i| item(&format!("ann{i}@example.com"), "email"))
        .collect();
    items.extend(values(20));
    let n = items.len();
    let result = v.done(&request(policy, items)).await;
    assert_eq!(codes(&result), vec!["TOKENIZED"; n]);
    assert_eq!(
        v.count(
            "SELECT count(*) AS n FROM vault_entries
              WHERE expires_at = created_at + interval '3600 seconds'
                AND policy_version = 1 AND key_version = 1"
        )
        .await,
        i64::try_from(n).unwrap()
    );
    // Without a TTL, nothing expires.
    let open = v.policy(&acme(), &all_modes()).await;
    let more: Vec<_> = (0..40)
        .map(|i| item(&format!("bob{i}@example.com"), "email"))
        .collect();
    v.done(&request(open, more)).await;
    assert_eq!(
        v.count("SELECT count(*) AS n FROM vault_entries WHERE expires_at IS NULL")
            .await,
        40
    );
}

/// Four writers of the same 120 values at once: three of their `COPY`s collide with the
/// first's entries (or wait on them), fall back to `ON CONFLICT`, and find them. Every writer
/// gets the same tokens, and each value has one entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_copied_batches_of_the_same_values_make_one_entry_each() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let batch = Arc::new(request(policy, values(60)));
    let n = batch.items.len();
    let mut conns: Vec<AsyncPgConnection> = Vec::new();
    for _ in 0..4 {
        conns.push(v.connect().await);
    }
    let start = Arc::new(tokio::sync::Barrier::new(conns.len()));
    let mut tasks = tokio::task::JoinSet::new();
    for mut conn in conns {
        let (keyring, writer, batch, start) = (
            v.keyring.clone(),
            v.writer.clone(),
            batch.clone(),
            start.clone(),
        );
        tasks.spawn(async move {
            start.wait().await;
            match vault::tokenize::tokenize(&mut conn, &writer, &keyring, &acme(), &batch, &body)
                .await
            {
                Ok(Outcome::Done { result, .. }) => result,
                other => panic!("{other:?}"),
            }
        });
    }
    let mut seen = BTreeSet::new();
    while let Some(result) = tasks.join_next().await {
        let result = result.unwrap();
        assert_eq!(codes(&result), vec!["TOKENIZED"; n]);
        for i in 0..n {
            let (token, id, _) = written(&result, i);
            seen.insert((i, token, id));
        }
    }
    assert_eq!(seen.len(), n, "every call got the same tokens");
    assert_eq!(v.entries().await, i64::try_from(n).unwrap());
    assert_eq!(
        v.created_this_month(&acme()).await,
        i64::try_from(n).unwrap()
    );
}

//! Finding a batch's existing tokens probes the vault's indexes once per value, whether
//! Postgres plans the statement for its parameters or generically, and before it has statistics
//! for the table (docs/decisions.md, "Batches of keys are looked up one key at a time").
//! Written as `lookup = ANY($2) OR fingerprint = ANY($3)`, the generic plan read every entry
//! of the tenant for each batch.

use diesel::sql_types::{BigInt, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl as _};

use crate::{Vault, acme, all_modes, body, codes, item, request, written};

/// Entries of other values, written in bulk and never analyzed.
const OTHERS: i32 = 20_000;

#[tokio::test]
async fn a_batchs_existing_tokens_are_found_by_key_in_either_plan() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    // Deterministic (found by lookup key) and format-preserving (also by lookup key) values.
    let items = vec![
        item("123-45-6789", "us_ssn"),
        item("219-09-9999", "us_ssn"),
        item("046 454 286", "ca_sin"),
    ];
    let first = v.done(&request(policy, items.clone())).await;
    assert_eq!(codes(&first), ["TOKENIZED"; 3]);
    diesel::sql_query(
        "INSERT INTO vault_entries (tenant_id, token_id, token, pii_type, mode, policy_id,
                                    policy_version, key_version, ciphertext, lookup)
         SELECT 'acme', gen_random_uuid(), 'other-' || g, 'us_ssn', 'deterministic', $1, 1, 1,
                '\\x00', gen_random_uuid()
           FROM generate_series(1, $2) AS g",
    )
    .bind::<SqlUuid, _>(policy.as_uuid())
    .bind::<diesel::sql_types::Integer, _>(OTHERS)
    .execute(&mut v.conn)
    .await
    .unwrap();

    // The vault writes on a plain connection, in a transaction of its own: a pool of one, so
    // that the plan mode set on its session holds for the tokenize, whose reads are counted in
    // the server's statistics once the session flushes them.
    let writer = db::build_raw_pool(&db::PoolConfig {
        url: v.db.url.clone(),
        max_size: 1,
        statement_timeout: std::time::Duration::from_secs(30),
        application_name: "plans".into(),
        wait_timeout: std::time::Duration::from_secs(30),
    })
    .unwrap();
    for mode in testkit::PLAN_MODES {
        writer
            .get()
            .await
            .unwrap()
            .client
            .batch_execute(&format!(
                "SET plan_cache_mode = {mode}; SELECT pg_stat_force_next_flush()"
            ))
            .await
            .unwrap();
        let before = vault_reads(&mut v.conn).await;
        // A session flushes its statistics as it goes idle, at most once a second.
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let batch = request(policy, items.clone());
        let again =
            vault::tokenize::tokenize(&mut v.conn, &writer, &v.keyring, &acme(), &batch, &body)
                .await
                .unwrap();
        let mut read = vault_reads(&mut v.conn).await - before;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while read == 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            read = vault_reads(&mut v.conn).await - before;
        }
        let vault::tokenize::Outcome::Done { result: again, .. } = again else {
            panic!("expected a processed batch, got {again:?}");
        };
        for i in 0..3 {
            assert_eq!(
                written(&again, i).1,
                written(&first, i).1,
                "{mode}: item {i} gets its existing token"
            );
        }
        // The insert's conflict check meets each of the 3 entries, then the lookup reads them.
        assert_eq!(
            read,
            2 * 3,
            "{mode}: only the batch's entries are read, of {} entries",
            OTHERS + 3
        );
    }
}

/// Rows of the vault read so far, by every session whose statistics reached the server.
async fn vault_reads(conn: &mut AsyncPgConnection) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Read {
        #[diesel(sql_type = BigInt)]
        tuples: i64,
    }
    diesel::sql_query("SELECT pg_stat_clear_snapshot()")
        .execute(conn)
        .await
        .unwrap();
    diesel::sql_query(
        "SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::bigint AS tuples
           FROM pg_stat_user_tables WHERE relname = 'vault_entries'",
    )
    .get_result::<Read>(conn)
    .await
    .unwrap()
    .tuples
}

//! Finding a batch's existing tokens probes the vault's indexes once per value, whether
//! Postgres plans the statement for its parameters or generically, and before it has statistics
//! for the table (docs/decisions.md, "Batches of keys are looked up one key at a time").
//! Written as `lookup = ANY($2) OR fingerprint = ANY($3)`, the generic plan read every entry
//! of the tenant for each batch.

use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::{AsyncConnection as _, RunQueryDsl as _};

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

    for mode in testkit::PLAN_MODES {
        let keyring = v.keyring.clone();
        let batch = request(policy, items.clone());
        let (again, read) = v
            .conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                testkit::plan_cache_mode(conn, mode).await;
                let before = testkit::rows_read(conn, "vault_entries").await;
                let again = vault::tokenize::tokenize(conn, &keyring, &acme(), &batch, &body)
                    .await
                    .unwrap();
                Ok((
                    again,
                    testkit::rows_read(conn, "vault_entries").await - before,
                ))
            })
            .await
            .unwrap();
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

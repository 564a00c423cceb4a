//! Recording a batch's risk touches that batch's rows only, even before Postgres has
//! statistics for the risk tables (docs/decisions.md, "Batches of keys are looked up one key
//! at a time"). Joined to the key arrays instead, the reads and the delete of a batch could
//! walk every row of the connector, once per batch of a scan. Each is checked planned
//! generically, as a prepared statement may be after five runs, and planned for its parameters.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Integer, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::ConnectorId;
use policies::matching::Finding;
use uuid::Uuid;

use crate::Env;

const OBJECTS: i32 = 12_000;
const FINDINGS_PER_OBJECT: i32 = 1;

/// The key of seeded object `n`: as long as a real one. The risk rows are seeded as a scan
/// writes them: time-ordered finding ids (a compact connector index) for objects in no
/// particular order (a taller index by object). Before migration 000050 both indexes then
/// looked the same to a planner without statistics, and the connector's won.
fn key(n: i32) -> String {
    format!("events/2024/05/{n:07}.ndjson")
}

/// The risk rows of a connector's earlier scan, written in bulk and never analyzed.
async fn seed(conn: &mut AsyncPgConnection, connector: ConnectorId) {
    diesel::sql_query(
        "INSERT INTO governance_objects (tenant_id, connector_id, bucket, object_key, object_id,
                                         etag, findings_count, covered_count, sensitivity,
                                         volume, exposure, coverage, risk_score, computed_at)
         SELECT 'acme', $1, 'logs', 'events/2024/05/' || lpad(g::text, 7, '0') || '.ndjson',
                gen_random_uuid(), 'etag-' || g, $3, 0, 0.9,
                0.5, 0.5, 0, 50, now()
           FROM generate_series(1, $2) AS g",
    )
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Integer, _>(OBJECTS)
    .bind::<Integer, _>(FINDINGS_PER_OBJECT)
    .execute(conn)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO governance_finding_risk (tenant_id, finding_id, connector_id, bucket,
                                              object_key, category, sensitivity, exposure,
                                              covered, risk_score, computed_at)
         SELECT 'acme',
                (lpad(to_hex(g), 12, '0') || '70008000' || lpad(to_hex(g), 12, '0'))::uuid, $1,
                'logs',
                'events/2024/05/' || lpad(((g * 7919) % $2 + 1)::text, 7, '0') || '.ndjson',
                'government_id',
                0.9, 0.5, false, 50, now()
           FROM generate_series(1, $2 * $3) AS g",
    )
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Integer, _>(OBJECTS)
    .bind::<Integer, _>(FINDINGS_PER_OBJECT)
    .execute(conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_batchs_risk_is_recorded_by_key_without_statistics() {
    let mut env = Env::new().await;
    let acme: ids::TenantId = "acme".parse().unwrap();
    let connector = env.connector(&acme, "Logs").await;
    seed(&mut env.conn, connector).await;

    // A rescan of three objects, each with two findings now.
    let keys = [key(7), key(1500), key(1999)];
    let objects: Vec<(&str, &str)> = keys.iter().map(|k| ("logs", k.as_str())).collect();
    let findings: Vec<Finding> = keys
        .iter()
        .flat_map(|k| {
            (0..2).map(move |_| Finding {
                id: Uuid::now_v7(),
                bucket: "logs".into(),
                object_key: k.clone(),
                etag: format!("etag-{k}-new"),
                pii_type: "us_ssn".into(),
                category: "government_id".into(),
                confidence: 0.9,
                occurrences: 1,
                tokenized: false,
            })
        })
        .collect();
    // Planned generically first (rolled back), then for its parameters (kept).
    for mode in testkit::PLAN_MODES.into_iter().rev() {
        let keep = mode == "force_custom_plan";
        let outcome = env
            .conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                testkit::plan_cache_mode(conn, mode).await;
                let before = (
                    testkit::rows_read(conn, "governance_objects").await,
                    testkit::rows_read(conn, "governance_finding_risk").await,
                );
                let changes = posture::risk::state::record_batch(
                    conn,
                    &acme,
                    connector,
                    &objects,
                    &findings,
                    &[],
                )
                .await?;
                let objects_read = testkit::rows_read(conn, "governance_objects").await - before.0;
                let risk_read =
                    testkit::rows_read(conn, "governance_finding_risk").await - before.1;

                assert_eq!(
                    changes.len(),
                    keys.len(),
                    "{mode}: each object's risk moved"
                );
                let old_rows = i64::from(FINDINGS_PER_OBJECT) * keys.len() as i64;
                assert!(
                    risk_read <= 2 * old_rows,
                    "{mode}: {risk_read} finding risk rows read to replace {old_rows}, of {}",
                    OBJECTS * FINDINGS_PER_OBJECT
                );
                assert!(
                    objects_read <= 2 * keys.len() as i64,
                    "{mode}: {objects_read} object rows read for {} objects, of {OBJECTS}",
                    keys.len()
                );
                if keep {
                    Ok(())
                } else {
                    Err(diesel::result::Error::RollbackTransaction)
                }
            })
            .await;
        match outcome {
            Ok(()) => assert!(keep),
            Err(diesel::result::Error::RollbackTransaction) => assert!(!keep),
            Err(e) => panic!("{mode}: {e}"),
        }
    }

    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let left: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM governance_finding_risk
          WHERE tenant_id = 'acme' AND object_key = ANY($1)",
    )
    .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(keys.to_vec())
    .get_result(&mut env.conn)
    .await
    .unwrap();
    assert_eq!(left.n, 6, "the old risk rows were replaced by the new ones");
}

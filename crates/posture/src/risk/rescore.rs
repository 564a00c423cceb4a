//! What a remediation changes in what governance knows. In the transaction that records it: the
//! findings whose values it tokenized, masked or moved away (or an undo put back), and the
//! object queued for rescoring. A task then recomputes the queued objects' risk in batches,
//! from the findings left open, so the findings list follows a remediation at once and the risk
//! scores within a second, not at the next scan.
//!
//! The rescoring is not in the remediation's own transaction: it updates the connector's risk
//! and category rows, and holding those until the remediation commits made every executor task
//! of the connector wait for the others.

use std::collections::BTreeMap;
use std::time::Duration;

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use scans::findings::Remediated;
use time::OffsetDateTime;
use uuid::Uuid;

use policies::matching::Finding;

/// Objects rescored per step.
const PER_STEP: i64 = 200;

/// The object a remediation changed, and how.
#[derive(Debug, Clone)]
pub struct Changed<'a> {
    pub connector: ConnectorId,
    pub bucket: &'a str,
    pub object_key: &'a str,
    pub findings: &'a [Uuid],
    pub change: Remediated,
}

/// Records the change of the findings and queues the object. Call it in the remediation's
/// transaction.
pub async fn apply(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    changed: &Changed<'_>,
) -> Result<(), DieselError> {
    scans::findings::remediated(
        conn,
        tenant,
        (changed.connector, changed.bucket, changed.object_key),
        changed.findings,
        changed.change,
    )
    .await?;
    db::sql(
        "INSERT INTO governance_rescore_queue
                (tenant_id, connector_id, bucket, object_key, requested_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant_id, connector_id, bucket, object_key)
         DO UPDATE SET requested_at = EXCLUDED.requested_at",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(changed.connector.as_uuid())
    .bind::<Text, _>(changed.bucket)
    .bind::<Text, _>(changed.object_key)
    .bind::<Timestamptz, _>(OffsetDateTime::now_utc())
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(QueryableByName)]
struct Queued {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
}

/// Rescores up to one step of queued objects, each connector's in one batch; returns how many.
/// The objects leave the queue in the transaction that rescores them.
pub async fn run_once(conn: &mut AsyncPgConnection) -> Result<usize, DieselError> {
    conn.transaction(async |conn| {
        let taken: Vec<Queued> = db::sql(
            "DELETE FROM governance_rescore_queue q
              WHERE (q.tenant_id, q.connector_id, q.bucket, q.object_key) IN (
                    SELECT tenant_id, connector_id, bucket, object_key
                      FROM governance_rescore_queue
                     ORDER BY requested_at
                     LIMIT $1
                       FOR UPDATE SKIP LOCKED)
             RETURNING q.tenant_id, q.connector_id, q.bucket, q.object_key",
        )
        .bind::<diesel::sql_types::BigInt, _>(PER_STEP)
        .load(conn)
        .await?;
        let mut groups: BTreeMap<(String, Uuid), Vec<(String, String)>> = BTreeMap::new();
        for q in &taken {
            groups
                .entry((q.tenant_id.clone(), q.connector_id))
                .or_default()
                .push((q.bucket.clone(), q.object_key.clone()));
        }
        for ((tenant, connector), objects) in groups {
            let tenant = db::background::parse_column::<TenantId>(&tenant)?;
            let connector = ConnectorId::from_uuid(connector);
            let open: Vec<Finding> =
                scans::findings::open_in_objects(conn, &tenant, connector, &objects)
                    .await?
                    .into_iter()
                    .map(Finding::from)
                    .collect();
            policies::store::lock_for_reading(conn, &tenant).await?;
            let policies = policies::store::active(conn, &tenant).await?;
            let keys: Vec<(&str, &str)> = objects
                .iter()
                .map(|(b, k)| (b.as_str(), k.as_str()))
                .collect();
            crate::risk::state::record_batch(conn, &tenant, connector, &keys, &open, &policies)
                .await?;
        }
        Ok(taken.len())
    })
    .await
}

/// Rescores queued objects until the process ends: at once while any is queued, else every
/// half second.
pub fn spawn(pool: db::Pool) {
    db::background::repeat(
        "remediation rescoring",
        Duration::from_millis(500),
        move || {
            let pool = pool.clone();
            async move {
                let mut conn = pool.get().await.map_err(|e| e.to_string())?;
                run_once(&mut conn)
                    .await
                    .map(|n| n > 0)
                    .map_err(|e| e.to_string())
            }
        },
    );
}

//! Open findings counted per connector, bucket, type and category: `findings_open_counts`,
//! kept by statement triggers on the findings in the transaction of every change (migration
//! 054). A connector's open findings and a bucket's types are read from these counts instead of
//! by grouping the findings.
//!
//! Each backend writes rows of its own (`shard` is its pid), so scan workers never wait on one
//! another for these rows; [`fold`] moves the rows of backends that have ended into shard 0.

use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

use crate::error::ScanError;

/// Open findings of one type and category in a bucket.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct TypeCount {
    #[diesel(sql_type = Text)]
    pub pii_type: String,
    #[diesel(sql_type = Text)]
    pub category: String,
    /// Open findings.
    #[diesel(sql_type = BigInt)]
    pub findings: i64,
    /// The values they hold, as every findings count counts them.
    #[diesel(sql_type = BigInt)]
    pub value_count: i64,
}

#[derive(QueryableByName)]
struct ConnectorCount {
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    category: String,
    #[diesel(sql_type = BigInt)]
    values: i64,
}

/// The open findings' values of each of `connectors`, by category, categories with none left
/// out: `(connector, category, values)` in connector and category order.
pub(crate) async fn by_connector(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connectors: &[Uuid],
) -> Result<Vec<(Uuid, String, i64)>, ScanError> {
    let rows: Vec<ConnectorCount> = db::sql(
        "SELECT connector_id, category, sum(occurrences)::bigint AS values
           FROM findings_open_counts
          WHERE tenant_id = $1 AND connector_id = ANY($2)
          GROUP BY connector_id, category
         HAVING sum(occurrences) <> 0
          ORDER BY connector_id, category",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(connectors)
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.connector_id, r.category, r.values))
        .collect())
}

/// The types of the open findings in one bucket, most values first.
pub async fn in_bucket(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    bucket: &str,
) -> Result<Vec<TypeCount>, ScanError> {
    Ok(db::sql(
        "SELECT pii_type, category, sum(findings)::bigint AS findings,
                sum(occurrences)::bigint AS value_count
           FROM findings_open_counts
          WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3
          GROUP BY pii_type, category
         HAVING sum(findings) <> 0
          ORDER BY value_count DESC, pii_type, category",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Text, _>(bucket)
    .load(conn)
    .await?)
}

/// Folds the rows of backends that are no longer running into shard 0, and drops rows that
/// count nothing. Rows another transaction holds are skipped, so this never waits for a
/// writer (a pid reused since the check is such a writer); they are folded on a later round.
/// Returns how many counts of shard 0 it moved.
pub async fn fold(conn: &mut AsyncPgConnection) -> Result<u64, ScanError> {
    let folded = db::sql(
        "WITH ended AS (
              SELECT ctid FROM findings_open_counts c
               WHERE c.shard <> 0
                 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.shard)
                 FOR UPDATE SKIP LOCKED),
              gone AS (
              DELETE FROM findings_open_counts c USING ended e WHERE c.ctid = e.ctid
              RETURNING c.tenant_id, c.connector_id, c.bucket, c.pii_type, c.category,
                        c.findings, c.occurrences)
         INSERT INTO findings_open_counts AS c
                (tenant_id, connector_id, bucket, pii_type, category, shard, findings,
                 occurrences)
         SELECT tenant_id, connector_id, bucket, pii_type, category, 0, sum(findings),
                sum(occurrences)
           FROM gone GROUP BY 1, 2, 3, 4, 5
          ORDER BY 1, 2, 3, 4, 5
         ON CONFLICT (tenant_id, connector_id, bucket, pii_type, category, shard)
            DO UPDATE SET findings = c.findings + EXCLUDED.findings,
                          occurrences = c.occurrences + EXCLUDED.occurrences",
    )
    .execute(conn)
    .await?;
    db::sql(
        "DELETE FROM findings_open_counts
          WHERE shard = 0 AND findings = 0 AND occurrences = 0",
    )
    .execute(conn)
    .await?;
    Ok(folded as u64)
}

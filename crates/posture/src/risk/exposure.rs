//! A bucket's exposure changed: its files' and findings' scores move with it, and its
//! connector's exposure weight by the difference. Only the bucket's own rows are read.

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, Bool, Double, Float4, SmallInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

use super::model::{self, Factors};

#[derive(QueryableByName)]
struct ObjectRow {
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    findings_count: i32,
    #[diesel(sql_type = Float4)]
    sensitivity: f32,
    #[diesel(sql_type = Float4)]
    volume: f32,
    #[diesel(sql_type = Float4)]
    exposure: f32,
    #[diesel(sql_type = Float4)]
    coverage: f32,
}

#[derive(QueryableByName)]
struct FindingRow {
    #[diesel(sql_type = SqlUuid)]
    finding_id: Uuid,
    #[diesel(sql_type = Float4)]
    sensitivity: f32,
    #[diesel(sql_type = Bool)]
    covered: bool,
}

/// What a bucket holds, in risk terms: its findings, and its highest file score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BucketRisk {
    pub findings: i64,
    pub score: i16,
}

/// The bucket's findings and highest file score, as they stand.
pub async fn bucket_risk(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    bucket: &str,
) -> Result<BucketRisk, DieselError> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        findings: i64,
        #[diesel(sql_type = SmallInt)]
        score: i16,
    }
    let row: Row = db::sql(
        "SELECT coalesce(sum(findings_count), 0)::bigint AS findings,
                coalesce(max(risk_score), 0)::smallint AS score
           FROM governance_objects
          WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3 AND findings_count > 0",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Text, _>(bucket)
    .get_result(conn)
    .await?;
    Ok(BucketRisk {
        findings: row.findings,
        score: row.score,
    })
}

/// Rescores the bucket's files and findings under the exposure `public` implies. Call it in
/// the transaction that records the bucket's new posture.
pub async fn set_bucket_exposure(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    bucket: &str,
    public: Option<bool>,
) -> Result<(), DieselError> {
    let exposure = model::exposure(public);
    let objects: Vec<ObjectRow> = db::sql(
        "SELECT object_key, findings_count, sensitivity, volume, exposure, coverage
           FROM governance_objects
          WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3 AND findings_count > 0",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Text, _>(bucket)
    .load(conn)
    .await?;
    let mut keys = Vec::with_capacity(objects.len());
    let mut scores = Vec::with_capacity(objects.len());
    let mut weight = 0f64;
    for o in &objects {
        keys.push(o.object_key.as_str());
        scores.push(model::score(&Factors {
            sensitivity: f64::from(o.sensitivity),
            volume: f64::from(o.volume),
            exposure,
            policy_coverage: f64::from(o.coverage),
        }));
        weight += f64::from(o.findings_count) * (exposure - f64::from(o.exposure));
    }
    if !keys.is_empty() {
        db::sql(
            "UPDATE governance_objects o SET exposure = $4, risk_score = n.score
               FROM unnest($5::text[], $6::smallint[]) AS n(object_key, score)
              WHERE o.tenant_id = $1 AND o.connector_id = $2 AND o.bucket = $3
                AND o.object_key = n.object_key",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Text, _>(bucket)
        .bind::<Float4, _>(exposure as f32)
        .bind::<Array<Text>, _>(&keys)
        .bind::<Array<SmallInt>, _>(&scores)
        .execute(conn)
        .await?;
    }
    let findings: Vec<FindingRow> = db::sql(
        "SELECT finding_id, sensitivity, covered FROM governance_finding_risk
          WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Text, _>(bucket)
    .load(conn)
    .await?;
    for chunk in findings.chunks(10_000) {
        let ids: Vec<Uuid> = chunk.iter().map(|f| f.finding_id).collect();
        let scores: Vec<i16> = chunk
            .iter()
            .map(|f| model::finding_score(f64::from(f.sensitivity), exposure, f.covered))
            .collect();
        db::sql(
            "UPDATE governance_finding_risk r SET exposure = $2, risk_score = n.score
               FROM unnest($3::uuid[], $4::smallint[]) AS n(finding_id, score)
              WHERE r.tenant_id = $1 AND r.finding_id = n.finding_id",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Float4, _>(exposure as f32)
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<Array<SmallInt>, _>(&scores)
        .execute(conn)
        .await?;
    }
    if weight != 0.0 {
        db::sql(
            "UPDATE governance_connector_risk
                SET exposure_weight = exposure_weight + $3, computed_at = now()
              WHERE tenant_id = $1 AND connector_id = $2",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Double, _>(weight)
        .execute(conn)
        .await?;
    }
    Ok(())
}

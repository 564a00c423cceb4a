//! One bucket as the console's data map drills into it: its posture and score (as
//! [`crate::overview::buckets`] has them), the types its open findings hold, its riskiest
//! files with their file-level risk scores (the scores `GET /governance/risk-scores?level=file`
//! lists, read from the same table), and when it was last scanned and checked.
//!
//! Each read is bounded by the bucket, and none groups its findings: the types are the counts
//! kept per bucket and type (`scans::open_counts`), its files with findings the kept histogram
//! of its scores (`governance_bucket_scores`), its riskiest files read from the primary key's
//! bucket prefix, at most [`RISKIEST`] of them.

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{BigInt, Integer, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use time::OffsetDateTime;

use crate::overview::{Bucket, buckets};

/// How many of a bucket's riskiest files its page shows.
pub const RISKIEST: i64 = 20;

pub use scans::open_counts::TypeCount;

/// A file of the bucket with its file-level risk score.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct RiskyFile {
    #[diesel(sql_type = Text)]
    pub object_key: String,
    #[diesel(sql_type = Integer)]
    pub findings: i32,
    #[diesel(sql_type = SmallInt)]
    pub risk_score: i16,
    #[diesel(sql_type = Timestamptz)]
    pub computed_at: OffsetDateTime,
}

/// A bucket and what it holds.
#[derive(Debug, Clone)]
pub struct BucketDetail {
    pub bucket: Bucket,
    /// The types its open findings hold, most values first.
    pub types: Vec<TypeCount>,
    /// Its files with open findings.
    pub files_with_findings: i64,
    /// Its riskiest files, highest score first, at most [`RISKIEST`].
    pub riskiest: Vec<RiskyFile>,
    /// Its connector's latest scan.
    pub last_scan: Option<scans::connector::HistoryEntry>,
    /// When its posture (public, encryption) was last checked.
    pub checked_at: Option<OffsetDateTime>,
}

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Checked {
    #[diesel(sql_type = Timestamptz)]
    checked_at: OffsetDateTime,
}

/// The bucket `name` of the tenant's connector `connector`, or `None` when its posture was
/// never checked (the data map knows no such bucket).
pub async fn bucket(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    name: &str,
) -> Result<Option<BucketDetail>, crate::PlatformError> {
    let found = buckets(conn, tenant, Some(connector))
        .await
        .map_err(crate::PlatformError::Posture)?
        .into_iter()
        .find(|b| b.bucket == name);
    let Some(bucket) = found else {
        return Ok(None);
    };
    let reads = async {
        let files: Counted = db::sql(
            "SELECT coalesce(sum(objects), 0)::bigint AS n FROM governance_bucket_scores
              WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Text, _>(name)
        .get_result(conn)
        .await?;
        let riskiest: Vec<RiskyFile> = db::sql(
            "SELECT object_key, findings_count AS findings, risk_score, computed_at
               FROM governance_objects
              WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3 AND findings_count > 0
              ORDER BY risk_score DESC, object_id DESC
              LIMIT $4",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Text, _>(name)
        .bind::<BigInt, _>(RISKIEST)
        .load(conn)
        .await?;
        let checked: Option<Checked> = db::sql(
            "SELECT checked_at FROM governance_buckets
              WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Text, _>(name)
        .get_result(conn)
        .await
        .map(Some)
        .or_else(|e| match e {
            DieselError::NotFound => Ok(None),
            e => Err(e),
        })?;
        Ok::<_, DieselError>((files.n, riskiest, checked.map(|c| c.checked_at)))
    };
    let (files_with_findings, riskiest, checked_at) =
        reads.await.map_err(crate::PlatformError::Posture)?;
    let types = scans::open_counts::in_bucket(conn, tenant, connector, name).await?;
    let last_scan = scans::connector::history(conn, tenant, connector, 1)
        .await?
        .into_iter()
        .next();
    Ok(Some(BucketDetail {
        bucket,
        types,
        files_with_findings,
        riskiest,
        last_scan,
        checked_at,
    }))
}

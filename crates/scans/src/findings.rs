//! Reading findings for those who act on them (governance). Findings hold no value: a type,
//! a category, a confidence, a location, a masked preview.

use diesel::QueryableByName;
use diesel::sql_types::{Array, Float4, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use ids::{ConnectorId, FindingId, ScanId, TenantId};

use crate::error::ScanError;

/// An open finding, with the ETag its object had when it was scanned.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub struct OpenFinding {
    #[diesel(sql_type = SqlUuid)]
    pub finding_id: Uuid,
    #[diesel(sql_type = Text)]
    pub bucket: String,
    #[diesel(sql_type = Text)]
    pub object_key: String,
    /// Empty when the provider gave none.
    #[diesel(sql_type = Text)]
    pub etag: String,
    #[diesel(sql_type = Text)]
    pub pii_type: String,
    #[diesel(sql_type = Text)]
    pub category: String,
    #[diesel(sql_type = Float4)]
    pub confidence: f32,
}

impl OpenFinding {
    pub fn id(&self) -> FindingId {
        FindingId::from_uuid(self.finding_id)
    }
}

/// The open findings `scan` stored for the given objects of one connector (a recorded batch).
/// Findings a later scan has already replaced are not open and not returned.
pub async fn open_in_batch(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
    connector: ConnectorId,
    objects: &[(String, String)],
) -> Result<Vec<OpenFinding>, ScanError> {
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    let buckets: Vec<&str> = objects.iter().map(|(b, _)| b.as_str()).collect();
    let keys: Vec<&str> = objects.iter().map(|(_, k)| k.as_str()).collect();
    Ok(diesel::sql_query(
        "SELECT f.finding_id, f.bucket, f.object_key, coalesce(o.etag, '') AS etag,
                f.pii_type, f.category, f.confidence
           FROM unnest($4::text[], $5::text[]) AS b(bucket, object_key)
           JOIN findings f
             ON f.tenant_id = $1 AND f.connector_id = $2 AND f.bucket = b.bucket
            AND f.object_key = b.object_key AND f.status = 'open'
           LEFT JOIN scanned_objects o
             ON o.tenant_id = $1 AND o.connector_id = $2 AND o.bucket = f.bucket
            AND o.object_key = f.object_key
          WHERE f.scan_id = $3
          ORDER BY f.bucket, f.object_key, f.finding_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<SqlUuid, _>(scan.as_uuid())
    .bind::<Array<Text>, _>(&buckets)
    .bind::<Array<Text>, _>(&keys)
    .load(conn)
    .await?)
}

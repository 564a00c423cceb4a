//! What governance says about findings: the policies each matches now, and where its
//! remediation stands.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, Bool, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

use policies::matching::{Finding, matches};
use policies::store::active;

/// Where a finding's remediation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemediationStatus {
    /// No enforced action was planned for it, and no dry-run simulated one.
    None,
    /// A request waits for, or is with, the executor.
    Pending,
    Completed,
    Failed,
    /// Only dry-run policies acted on it: simulated.
    DryRun,
    /// Its remediation was undone; it is not applied again until the policy changes.
    Undone,
}

impl RemediationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RemediationStatus::None => "none",
            RemediationStatus::Pending => "pending",
            RemediationStatus::Completed => "completed",
            RemediationStatus::Failed => "failed",
            RemediationStatus::DryRun => "dry_run",
            RemediationStatus::Undone => "undone",
        }
    }

    fn of_request(status: &str) -> Self {
        match status {
            "receipted" => RemediationStatus::Completed,
            "failed" | "blocked" => RemediationStatus::Failed,
            "undone" => RemediationStatus::Undone,
            _ => RemediationStatus::Pending,
        }
    }
}

/// Governance's view of one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// Names of the policies whose scope and conditions the finding meets now.
    pub matched_policies: Vec<String>,
    pub remediation_status: RemediationStatus,
}

#[derive(QueryableByName)]
struct ObjectState {
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Text)]
    etag: String,
    #[diesel(sql_type = Nullable<Text>)]
    request: Option<String>,
    #[diesel(sql_type = Bool)]
    simulated: bool,
}

/// Annotates findings (each with its connector), in order. A finding's remediation status is
/// that of the latest request for its object version (its ETag when scanned): requests are
/// made per object, and a rescan of an unchanged object finds the same values again.
pub async fn annotate(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    findings: &[(ConnectorId, Finding)],
) -> Result<Vec<Annotation>, DieselError> {
    if findings.is_empty() {
        return Ok(Vec::new());
    }
    let policies = active(conn, tenant).await?;
    // The latest request for each finding's object version, and the versions a dry-run
    // simulated an action for.
    let connectors: Vec<Uuid> = findings.iter().map(|(c, _)| c.as_uuid()).collect();
    let buckets: Vec<&str> = findings.iter().map(|(_, f)| f.bucket.as_str()).collect();
    let keys: Vec<&str> = findings
        .iter()
        .map(|(_, f)| f.object_key.as_str())
        .collect();
    let etags: Vec<&str> = findings.iter().map(|(_, f)| f.etag.as_str()).collect();
    let rows: Vec<ObjectState> = db::sql(
        "SELECT b.connector_id, b.bucket, b.object_key, b.etag,
                (SELECT r.status FROM remediation_requests r
                  WHERE r.tenant_id = $1 AND r.connector_id = b.connector_id
                    AND r.bucket = b.bucket AND r.object_key = b.object_key AND r.etag = b.etag
                  ORDER BY r.created_at DESC LIMIT 1) AS request,
                EXISTS (SELECT 1 FROM governance_actions a
                  WHERE a.tenant_id = $1 AND a.connector_id = b.connector_id
                    AND a.bucket = b.bucket AND a.object_key = b.object_key AND a.etag = b.etag
                    AND a.simulated) AS simulated
           FROM (SELECT DISTINCT * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[]))
                AS b(connector_id, bucket, object_key, etag)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&connectors)
    .bind::<Array<Text>, _>(&buckets)
    .bind::<Array<Text>, _>(&keys)
    .bind::<Array<Text>, _>(&etags)
    .load(conn)
    .await?;
    let states: HashMap<(Uuid, &str, &str, &str), &ObjectState> = rows
        .iter()
        .map(|r| {
            (
                (
                    r.connector_id,
                    r.bucket.as_str(),
                    r.object_key.as_str(),
                    r.etag.as_str(),
                ),
                r,
            )
        })
        .collect();
    Ok(findings
        .iter()
        .map(|(connector, f)| Annotation {
            matched_policies: policies
                .iter()
                .filter(|p| p.covers(*connector) && matches(&p.document, f))
                .map(|p| p.document.metadata.name.clone())
                .collect(),
            // A token written by remediation is the remediation, done.
            remediation_status: if f.tokenized {
                RemediationStatus::Completed
            } else {
                match states.get(&(
                    connector.as_uuid(),
                    f.bucket.as_str(),
                    f.object_key.as_str(),
                    f.etag.as_str(),
                )) {
                    Some(ObjectState {
                        request: Some(status),
                        ..
                    }) => RemediationStatus::of_request(status),
                    Some(ObjectState {
                        simulated: true, ..
                    }) => RemediationStatus::DryRun,
                    _ => RemediationStatus::None,
                }
            },
        })
        .collect())
}

//! What a remediation changes in what governance knows, in the transaction that records it:
//! the findings whose values it tokenized, masked or moved away (or an undo put back), and the
//! object's risk, recomputed from the findings left open. So the findings list and the risk
//! scores follow a remediation at once, not at the next scan.

use diesel::result::Error as DieselError;
use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, TenantId};
use scans::findings::Remediated;
use uuid::Uuid;

use crate::evaluate::Finding;

/// The object a remediation changed, and how.
#[derive(Debug, Clone)]
pub(crate) struct Changed<'a> {
    pub connector: ConnectorId,
    pub bucket: &'a str,
    pub object_key: &'a str,
    pub findings: &'a [Uuid],
    pub change: Remediated,
}

pub(crate) async fn apply(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    changed: &Changed<'_>,
) -> Result<(), DieselError> {
    let scan_error = |e: scans::ScanError| match e {
        scans::ScanError::Database(e) => e,
        other => DieselError::QueryBuilderError(other.to_string().into()),
    };
    scans::findings::remediated(
        conn,
        tenant,
        (changed.connector, changed.bucket, changed.object_key),
        changed.findings,
        changed.change,
    )
    .await
    .map_err(scan_error)?;
    let open: Vec<Finding> = scans::findings::open_in_object(
        conn,
        tenant,
        changed.connector,
        changed.bucket,
        changed.object_key,
    )
    .await
    .map_err(scan_error)?
    .into_iter()
    .map(Finding::from)
    .collect();
    let policies = crate::policies::active(conn, tenant).await?;
    crate::risk::state::record_batch(
        conn,
        tenant,
        changed.connector,
        &[(changed.bucket, changed.object_key)],
        &open,
        &policies,
    )
    .await?;
    Ok(())
}

//! A connector's deletion, across every owner that knows it. It lives here, above remediation,
//! because its snapshots and in-flight requests must be asked for first; the `platform` crate
//! keeps the views only, and so reaches neither remediation nor the vault.

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

/// Why a connector was not deleted: the failing owner's own error.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    #[error(transparent)]
    Connector(#[from] connectors::ConnectorError),
    #[error(transparent)]
    Scan(#[from] scans::ScanError),
    /// The connector's remediations between their snapshot and their receipt, which its
    /// deletion would cut short: it waits for them.
    #[error("the connector has remediations under way; delete it once they end")]
    RemediationsUnderWay(Vec<Uuid>),
    /// A statement of remediation or posture, or the transaction itself (begin, commit).
    #[error("database error")]
    Database(#[from] diesel::result::Error),
}

impl DeleteError {
    /// The database error behind this one, if it is one.
    pub fn database(&self) -> Option<&diesel::result::Error> {
        match self {
            DeleteError::Connector(connectors::ConnectorError::Database(e))
            | DeleteError::Scan(scans::ScanError::Database(e))
            | DeleteError::Database(e) => Some(e),
            _ => None,
        }
    }
}

/// Deletes a connector: in one transaction, every owner forgets it, then the connector row
/// goes. A connector that does not exist is not found, and nothing changes. One with
/// remediations between their snapshot and their receipt is refused, naming them: cut short,
/// such a request could leave an object half moved with nothing left to finish it.
///
/// The transaction deletes rows that background work (a scan's last objects, rescoring,
/// evaluation) may be updating in another order; when Postgres ends it as a deadlock, nothing
/// was committed and it is run again, up to three times in all.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<(), DeleteError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match delete_once(conn, tenant, id).await {
            Err(e) if attempt < 3 && e.database().is_some_and(db::is_concurrency_conflict) => {}
            done => return done,
        }
    }
}

async fn delete_once(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<(), DeleteError> {
    conn.transaction::<_, DeleteError, _>(async |conn| {
        // Not found before anything else is touched. The row is held until the end, so that no
        // remediation of the connector can take its snapshot meanwhile (its `snapshotted`
        // step needs the row), and none that has taken one is cut short before its receipt.
        connectors::store::lock(conn, tenant, id).await?;
        let under_way = remediation::store::in_flight(conn, tenant, id).await?;
        if !under_way.is_empty() {
            return Err(DeleteError::RemediationsUnderWay(under_way));
        }
        scans::connector::forget_connector(conn, tenant, id).await?;
        posture::risk::forget_connector(conn, tenant, id).await?;
        posture::drift::forget_connector(conn, tenant, id).await?;
        // Snapshots of originals that remediation left in the customer's storage must still
        // be deleted after the connector is gone.
        remediation::retain::retain_storage(conn, tenant, id).await?;
        remediation::written::forget_connector(conn, tenant, id).await?;
        connectors::store::delete(conn, tenant, id).await?;
        // After the delete, which may have waited for a scan of the connector being created
        // meanwhile: that scan's only link went with the connector.
        scans::connector::forget_orphans(conn, tenant).await?;
        Ok(())
    })
    .await
}

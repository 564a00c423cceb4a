//! Connectors as the API shows them, and their deletion.

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use ids::{ConnectorId, TenantId};
use paging::{CursorKey, Limit, Page};
use time::OffsetDateTime;

use ::connectors::store::{self, Connector, Filter};
use scans::connector::{Activity, HistoryEntry};

use crate::PlatformError;

/// How many of a connector's latest scans its history shows.
pub const HISTORY: i64 = 20;

/// A connector with what its owners know of it.
#[derive(Debug, Clone)]
pub struct ConnectorView {
    pub connector: Connector,
    /// When its last scan ended.
    pub last_scan: Option<OffsetDateTime>,
    /// Its open findings.
    pub findings_count: i64,
    pub risk_score: i32,
    /// Its latest scans, newest first; on get only.
    pub history: Option<Vec<HistoryEntry>>,
}

fn view(connector: Connector, activity: Activity, risk_score: i32) -> ConnectorView {
    ConnectorView {
        connector,
        last_scan: activity.last_scan,
        findings_count: activity.open_findings_count(),
        risk_score,
        history: None,
    }
}

/// Governance's connector scores; a connector it has not scored yet is 0.
async fn scores(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    ids: &[ConnectorId],
) -> Result<std::collections::HashMap<ConnectorId, i32>, PlatformError> {
    Ok(posture::risk::connectors(conn, tenant, ids)
        .await
        .map_err(PlatformError::Governance)?
        .into_iter()
        .map(|(id, s)| (id, i32::from(s.risk_score)))
        .collect())
}

/// One page of the tenant's connectors, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    cursors: &CursorKey,
    tenant: &TenantId,
    filter: Filter,
    limit: Limit,
    cursor: Option<&str>,
) -> Result<Page<ConnectorView>, PlatformError> {
    let page = store::list(conn, cursors, tenant, filter, limit, cursor).await?;
    let ids: Vec<ConnectorId> = page.items.iter().map(|c| c.id).collect();
    let mut activity = scans::connector::activity(conn, tenant, &ids).await?;
    let scores = scores(conn, tenant, &ids).await?;
    Ok(page.map(|c| {
        let a = activity.remove(&c.id).unwrap_or_default();
        let score = scores.get(&c.id).copied().unwrap_or(0);
        view(c, a, score)
    }))
}

/// One connector, with its scan history.
pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<ConnectorView, PlatformError> {
    let connector = store::get(conn, tenant, id).await?;
    let activity = scans::connector::activity(conn, tenant, &[id])
        .await?
        .remove(&id)
        .unwrap_or_default();
    let history = scans::connector::history(conn, tenant, id, HISTORY).await?;
    let score = scores(conn, tenant, &[id]).await?.remove(&id).unwrap_or(0);
    Ok(ConnectorView {
        history: Some(history),
        ..view(connector, activity, score)
    })
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
) -> Result<(), PlatformError> {
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
) -> Result<(), PlatformError> {
    conn.transaction::<_, PlatformError, _>(async |conn| {
        // Not found before anything else is touched. The row is held until the end, so that no
        // remediation of the connector can take its snapshot meanwhile (its `snapshotted`
        // step needs the row), and none that has taken one is cut short before its receipt.
        store::lock(conn, tenant, id).await?;
        let under_way = remediation::store::in_flight(conn, tenant, id)
            .await
            .map_err(PlatformError::Governance)?;
        if !under_way.is_empty() {
            return Err(PlatformError::RemediationsUnderWay(under_way));
        }
        scans::connector::forget_connector(conn, tenant, id).await?;
        posture::risk::forget_connector(conn, tenant, id)
            .await
            .map_err(PlatformError::Governance)?;
        posture::drift::forget_connector(conn, tenant, id)
            .await
            .map_err(PlatformError::Governance)?;
        // Snapshots of originals that remediation left in the customer's storage must still
        // be deleted after the connector is gone.
        remediation::retain::retain_storage(conn, tenant, id)
            .await
            .map_err(PlatformError::Governance)?;
        remediation::written::forget_connector(conn, tenant, id)
            .await
            .map_err(PlatformError::Governance)?;
        store::delete(conn, tenant, id).await?;
        // After the delete, which may have waited for a scan of the connector being created
        // meanwhile: that scan's only link went with the connector.
        scans::connector::forget_orphans(conn, tenant).await?;
        Ok(())
    })
    .await
}

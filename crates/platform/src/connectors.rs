//! Connectors as the API shows them. Their deletion asks remediation first, so it lives in
//! governance (`governance::offboard`).

use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, TenantId};
use paging::{Page, PageRequest};
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
        .map_err(PlatformError::Posture)?
        .into_iter()
        .map(|(id, s)| (id, i32::from(s.risk_score)))
        .collect())
}

/// One page of the tenant's connectors, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: Filter,
    page: PageRequest<'_>,
) -> Result<Page<ConnectorView>, PlatformError> {
    let page = store::list(conn, tenant, filter, page).await?;
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

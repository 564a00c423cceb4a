//! `GET /governance/summary` (not in the spec): the tenant's governance at a glance, from
//! counts kept as scans record, never from a pass over findings.

use std::collections::{BTreeMap, HashMap};

use diesel::result::Error as DieselError;
use diesel_async::AsyncPgConnection;
use ids::TenantId;

use policies::document::{Mode, Severity};
use posture::risk::RiskScore;

#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Open drift events (acknowledged ones excluded), by severity.
    pub open_drift_events: HashMap<Severity, i64>,
    pub risk: RiskScore,
    /// Open findings by category.
    pub findings_by_category: BTreeMap<String, i64>,
    pub policies_by_mode: HashMap<Mode, i64>,
}

pub async fn summary(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<Summary, DieselError> {
    Ok(Summary {
        open_drift_events: posture::drift::open_by_severity(conn, tenant).await?,
        risk: posture::risk::workspace(conn, tenant).await?,
        findings_by_category: posture::risk::read::findings_by_category(conn, tenant).await?,
        policies_by_mode: policies::store::count_by_mode(conn, tenant).await?,
    })
}

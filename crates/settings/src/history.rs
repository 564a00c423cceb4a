//! What a tenant set, when its settings row cannot be read. Settings writes an audit entry for
//! every change, so the newest entry of a kind says what is in force, and no entry means the
//! default. Only this crate reads its entries' details back: they are its own words.
//!
//! The remediation executor uses these when the row is unreadable, because its gate fails open
//! and the run goes on; a receipt still needs the rollback window and the co-signing mode the
//! tenant chose, and a guess could sign a wrong `undo_until` or skip a required co-signature.

use audit::Entry;
use diesel_async::AsyncPgConnection;
use ids::TenantId;

use crate::{
    Cosigning, CosigningMode, LKG_RETENTION_DEFAULT_HOURS, LKG_RETENTION_OPTIONS,
    PlatformCertificate, SettingsError, TenantSettings, events,
};

/// Neither the settings row nor its history could be read: stop and try again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the tenant's settings can be read neither from their row nor from their history")]
pub struct Unreadable;

async fn newest(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    kind: audit::Kind,
) -> Result<Option<Entry>, Unreadable> {
    let mut latest = audit::latest(conn, tenant, kind, 1)
        .await
        .map_err(|_| Unreadable)?;
    Ok(latest.pop())
}

/// The tenant's rollback window in hours: from `read` when the row was read, else from the
/// newest `lkg_retention_changed` entry, else the default.
pub async fn retention_hours(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    read: &Result<TenantSettings, SettingsError>,
) -> Result<u32, Unreadable> {
    if let Ok(found) = read {
        return Ok(found.retention_hours());
    }
    match newest(conn, tenant, events::LKG_RETENTION_CHANGED).await? {
        None => Ok(LKG_RETENTION_DEFAULT_HOURS),
        Some(entry) => entry.details["to_hours"]
            .as_u64()
            .and_then(|h| u32::try_from(h).ok())
            .filter(|h| LKG_RETENTION_OPTIONS.contains(h))
            .ok_or(Unreadable),
    }
}

/// The tenant's co-signing decision: from `read` when the row was read, else from the newest
/// `cosigning_changed` entry (the mode the tenant set; no entry means it never left the
/// default, `disabled`). The entry names the endpoint's host only (entries written before named
/// the URL), so a tenant that co-signs waits, with no endpoint, until the row can be read.
pub async fn cosigning(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    read: &Result<TenantSettings, SettingsError>,
    certificate: PlatformCertificate,
) -> Result<Cosigning, Unreadable> {
    if let Ok(found) = read {
        return Ok(found.cosigning(tenant, certificate));
    }
    let (mode, endpoint_url) = match newest(conn, tenant, events::COSIGNING_CHANGED).await? {
        None => (CosigningMode::Disabled, None),
        Some(entry) => {
            let mode = entry.details["mode"]
                .as_str()
                .and_then(|m| m.parse().ok())
                .ok_or(Unreadable)?;
            let url = entry.details["endpoint_url"].as_str().map(str::to_owned);
            (mode, url)
        }
    };
    Ok(Cosigning {
        tenant_id: tenant.as_str().to_owned(),
        mode,
        endpoint_url,
        platform_provisioned: certificate == PlatformCertificate::Provisioned,
        updated_at: None,
        updated_by: None,
    })
}

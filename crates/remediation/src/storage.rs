//! What the executor holds (the cloud, the keys, the receipts and its caches) and how a step
//! opens a connector's storage: shared by the steps (`execute`), undo, the copies' rules and
//! the sweeper, below all of them.

use std::sync::Arc;

use connectors::cloud::{Cloud, Storage};
use diesel_async::AsyncPgConnection;
use ids::TenantId;
use keys::{KeyRing, TenantKeys};

use crate::cached::{Actions, Conditions, ScanClassifiers, Storages};
use crate::receipt::Receipts;
use crate::stop::{Reason, Stop};
use crate::store::Row;

/// The largest object remediation rewrites, read whole into memory.
pub const MAX_OBJECT_BYTES: u64 = 64 << 20;

/// What the executor needs besides a connection.
#[derive(Clone)]
pub struct Executor {
    pub cloud: Cloud,
    pub keyring: Arc<KeyRing>,
    pub receipts: Arc<Receipts>,
    /// Test builds only: abort the process at this point, to prove that a kill at any step
    /// leaves nothing half done (`DPS_REMEDIATION_CRASH_AT`).
    pub crash_at: Option<String>,
    /// Each connector's opened storage, kept briefly (see [`Storages`]).
    pub storages: Storages,
    /// Policy versions' actions, as read (see [`Actions`]).
    pub actions: Actions,
    /// Policy versions' conditions, as read (see [`Conditions`]).
    pub conditions: Conditions,
    /// The classifiers scans ran with, as read (see [`ScanClassifiers`]).
    pub scan_classifiers: ScanClassifiers,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("crash_at", &self.crash_at)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor with empty caches and no crash point.
    pub fn new(cloud: Cloud, keyring: Arc<KeyRing>, receipts: Arc<Receipts>) -> Self {
        Executor {
            cloud,
            keyring,
            receipts,
            crash_at: None,
            storages: Storages::default(),
            actions: Actions::default(),
            conditions: Conditions::default(),
            scan_classifiers: ScanClassifiers::default(),
        }
    }

    pub(crate) fn crash_point(&self, point: &str) {
        if self.crash_at.as_deref() == Some(point) {
            tracing::error!(point, "DPS_REMEDIATION_CRASH_AT: aborting on purpose");
            std::process::abort();
        }
    }
}

/// The connector's storage, opened with its current credentials.
pub(crate) async fn open_storage(
    conn: &mut AsyncPgConnection,
    exec: &Executor,
    tenant: &TenantId,
    row: &Row,
) -> Result<Storage, Stop> {
    let key = (tenant.clone(), row.connector());
    if let Some(storage) = exec.storages.get(&key) {
        return Ok(storage);
    }
    let keys = tenant_keys(conn, exec, tenant).await?;
    let config = match connectors::store::config(conn, &keys, tenant, row.connector()).await {
        Ok(config) => config,
        Err(connectors::ConnectorError::NotFound) => {
            return Err(Stop::fail(Reason::ConnectorDeleted));
        }
        Err(e) => return Err(Stop::retry_with(Reason::ConnectorUnreadable, e)),
    };
    let storage = exec
        .cloud
        .open(tenant, row.connector(), &config)
        .map_err(|e| Stop::retry_with(Reason::StorageUnopened, e.message))?;
    exec.storages.put(key, &storage);
    Ok(storage)
}

/// The tenant's keys, for opening a connector's sealed secrets.
pub(crate) async fn tenant_keys(
    conn: &mut AsyncPgConnection,
    exec: &Executor,
    tenant: &TenantId,
) -> Result<Arc<TenantKeys>, Stop> {
    exec.keyring
        .tenant(conn, tenant)
        .await
        .map_err(|_| Stop::retry(Reason::TenantKeysUnreadable))
}

pub(crate) fn sha256(bytes: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .to_vec()
}

//! What the executor keeps between requests, to spare each request the same reads: connectors'
//! opened storages (briefly), policy versions' actions and scans' classifiers (which never
//! change).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use connectors::cloud::Storage;
use detect::ClassifierSpec;
use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, PolicyId, ScanId, TenantId};

use super::stop::Stop;
use super::store::Row;
use crate::document::{Action, ActionType};

/// Connectors' storages as the executor opened them, kept for a minute: opening one reads and
/// unseals the connector's configuration, and its first call trades the platform's identity for
/// the customer's credentials (an STS AssumeRole, a token exchange), which would otherwise
/// happen for every request and step. A minute bounds how long a changed connector is seen as
/// it was.
#[derive(Clone, Default)]
pub struct Storages(Arc<Mutex<Opened>>);

/// Each opened storage and when it was opened.
type Opened = HashMap<(TenantId, ConnectorId), (Storage, Instant)>;

impl std::fmt::Debug for Storages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = self.0.lock().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("Storages").field("open", &open).finish()
    }
}

/// How long an opened storage is reused.
const STORAGE_TTL: std::time::Duration = std::time::Duration::from_secs(60);

impl Storages {
    pub(crate) fn get(&self, key: &(TenantId, ConnectorId)) -> Option<Storage> {
        let mut map = self.0.lock().ok()?;
        match map.get(key) {
            Some((storage, at)) if at.elapsed() < STORAGE_TTL => Some(storage.clone()),
            Some(_) => {
                map.remove(key);
                None
            }
            None => None,
        }
    }

    /// Drops a connector's opened storage, so that the next open reads the connector again.
    pub(crate) fn forget(&self, key: &(TenantId, ConnectorId)) {
        if let Ok(mut map) = self.0.lock() {
            map.remove(key);
        }
    }

    pub(crate) fn put(&self, key: (TenantId, ConnectorId), storage: &Storage) {
        if let Ok(mut map) = self.0.lock() {
            map.retain(|_, (_, at)| at.elapsed() < STORAGE_TTL);
            map.insert(key, (storage.clone(), Instant::now()));
        }
    }
}

/// Each policy version's actions as the executor read them. A policy version is never changed
/// (a change makes a new version) and stays when its policy is deleted, so an entry is never
/// stale; the map is emptied when it reaches [`ACTIONS_KEPT`] entries, which bounds it.
#[derive(Clone, Default)]
pub struct Actions(Arc<Mutex<HashMap<ActionKey, Action>>>);

/// A policy version's action of one type, of one tenant.
type ActionKey = (TenantId, PolicyId, i32, ActionType);

/// How many policy versions' actions are kept at most.
const ACTIONS_KEPT: usize = 1024;

impl std::fmt::Debug for Actions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("Actions").field("kept", &kept).finish()
    }
}

impl Actions {
    /// The action of `kind` in the request's policy version.
    pub(crate) async fn get(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        row: &Row,
        kind: ActionType,
    ) -> Result<Action, Stop> {
        let key = (tenant.clone(), row.policy(), row.policy_version, kind);
        if let Some(action) = self.0.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(action);
        }
        let action =
            crate::policies::action_at(conn, tenant, row.policy(), row.policy_version, kind)
                .await?
                .ok_or_else(|| Stop::Fail("policy_version_missing".into()))?;
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= ACTIONS_KEPT {
                map.clear();
            }
            map.insert(key, action.clone());
        }
        Ok(action)
    }
}

/// The tenant classifiers each scan ran with, as the executor read them, to find a request's
/// values again. A scan's classifiers are stored with the scan when it is created and never
/// changed, so an entry is never stale; the map is emptied when it reaches [`SCANS_KEPT`]
/// entries, which bounds it.
#[derive(Clone, Default)]
pub struct ScanClassifiers(Arc<Mutex<HashMap<(TenantId, ScanId), RanWith>>>);

/// The classifiers one scan ran with.
type RanWith = Arc<Vec<ClassifierSpec>>;

/// How many scans' classifiers are kept at most.
const SCANS_KEPT: usize = 1024;

impl std::fmt::Debug for ScanClassifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().map(|m| m.len()).unwrap_or(0);
        f.debug_struct("ScanClassifiers")
            .field("kept", &kept)
            .finish()
    }
}

impl ScanClassifiers {
    /// The classifiers `scan` ran with (none when it ran with the built-in ones only).
    pub(crate) async fn get(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        scan: ScanId,
    ) -> Result<RanWith, Stop> {
        let key = (tenant.clone(), scan);
        if let Some(specs) = self.0.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(specs);
        }
        let specs = Arc::new(
            scans::classifiers::for_scan(conn, tenant, scan)
                .await
                .map_err(|e| Stop::Retry(e.to_string()))?,
        );
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= SCANS_KEPT {
                map.clear();
            }
            map.insert(key, specs.clone());
        }
        Ok(specs)
    }
}

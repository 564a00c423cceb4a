//! What the executor keeps between requests, to spare each request the same reads: connectors'
//! opened storages (briefly), policy versions' actions and conditions and scans' classifiers
//! (which never change).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use connectors::cloud::Storage;
use detect::ClassifierSpec;
use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, PolicyId, ScanId, TenantId};

use crate::stop::{Reason, Stop};
use crate::store::Row;
use policies::document::{Action, ActionType, Condition};

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

/// Values that never change once written, as the executor read them: an entry is never stale.
/// The map is emptied when it reaches [`KEPT`] entries, which bounds it.
struct Unchanging<K, V>(Mutex<HashMap<K, V>>);

/// How many entries each [`Unchanging`] map keeps at most.
const KEPT: usize = 1024;

impl<K, V> Default for Unchanging<K, V> {
    fn default() -> Self {
        Unchanging(Mutex::new(HashMap::new()))
    }
}

impl<K: std::hash::Hash + Eq, V: Clone> Unchanging<K, V> {
    fn get(&self, key: &K) -> Option<V> {
        self.0.lock().ok().and_then(|m| m.get(key).cloned())
    }

    fn put(&self, key: K, value: &V) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= KEPT {
                map.clear();
            }
            map.insert(key, value.clone());
        }
    }

    fn len(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or(0)
    }
}

/// Each policy version's actions as the executor read them. A policy version is never changed
/// (a change makes a new version) and stays when its policy is deleted.
#[derive(Clone, Default)]
pub struct Actions(Arc<Unchanging<ActionKey, Action>>);

/// A policy version's action of one type, of one tenant.
type ActionKey = (TenantId, PolicyId, i32, ActionType);

impl std::fmt::Debug for Actions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Actions")
            .field("kept", &self.0.len())
            .finish()
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
        if let Some(action) = self.0.get(&key) {
            return Ok(action);
        }
        let action =
            policies::store::action_at(conn, tenant, row.policy(), row.policy_version, kind)
                .await?
                .ok_or_else(|| Stop::fail(Reason::PolicyVersionMissing))?;
        self.0.put(key, &action);
        Ok(action)
    }
}

/// Each policy version's conditions as the executor read them, for the confidence a value
/// needs to be rewritten. A policy version is never changed and stays when its policy is
/// deleted.
#[derive(Clone, Default)]
pub struct Conditions(Arc<Unchanging<VersionKey, Arc<Vec<Condition>>>>);

/// A policy version of one tenant.
type VersionKey = (TenantId, PolicyId, i32);

impl std::fmt::Debug for Conditions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conditions")
            .field("kept", &self.0.len())
            .finish()
    }
}

impl Conditions {
    /// The conditions of the request's policy version.
    pub(crate) async fn get(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        row: &Row,
    ) -> Result<Arc<Vec<Condition>>, Stop> {
        let key = (tenant.clone(), row.policy(), row.policy_version);
        if let Some(conditions) = self.0.get(&key) {
            return Ok(conditions);
        }
        let conditions = Arc::new(
            policies::store::conditions_at(conn, tenant, row.policy(), row.policy_version)
                .await?
                .ok_or_else(|| Stop::fail(Reason::PolicyVersionMissing))?,
        );
        self.0.put(key, &conditions);
        Ok(conditions)
    }
}

/// The tenant classifiers each scan ran with, as the executor read them, to find a request's
/// values again. A scan's classifiers are stored with the scan when it is created and never
/// changed.
#[derive(Clone, Default)]
pub struct ScanClassifiers(Arc<Unchanging<(TenantId, ScanId), RanWith>>);

/// The classifiers one scan ran with.
type RanWith = Arc<Vec<ClassifierSpec>>;

impl std::fmt::Debug for ScanClassifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanClassifiers")
            .field("kept", &self.0.len())
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
        if let Some(specs) = self.0.get(&key) {
            return Ok(specs);
        }
        let specs = Arc::new(
            scans::classifiers::for_scan(conn, tenant, scan)
                .await
                .map_err(|e| Stop::retry_with(Reason::ClassifiersUnreadable, e))?,
        );
        self.0.put(key, &specs);
        Ok(specs)
    }
}

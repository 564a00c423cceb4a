//! The connection test: really list and sample the connector's storage, then record whether
//! it worked. It starts no scan.

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, TenantId};
use keys::KeyRing;

use crate::cloud::{AccessError, Cloud, Failure, Probe};
use crate::config::Config;
use crate::store::{self, ConnectorError, Status};

/// What the test found.
#[derive(Debug, Clone)]
pub struct TestOutcome {
    pub connected: bool,
    pub buckets_accessible: Vec<String>,
    pub sample_objects: u64,
    pub latency: Duration,
    /// Why it failed, when it did (the provider's explanation, never a credential).
    pub error: Option<AccessError>,
}

/// Tests a connector's access and sets its status: `active`; `disconnected` when nothing
/// answered (a network failure or a timeout); `error` when the storage or the identity service
/// refused or answered something unusable. A failure's reason is kept in `status_message`.
///
/// The three steps are public too, so that a caller holding a pooled connection can give it
/// back while the storage is called ([`test_config`], [`probe`], [`record_test`]).
pub async fn test_connection(
    conn: &mut AsyncPgConnection,
    cloud: &Cloud,
    keyring: &KeyRing,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<TestOutcome, ConnectorError> {
    let config = test_config(conn, keyring, tenant, id).await?;
    let found = probe(cloud, tenant, id, &config).await;
    record_test(conn, tenant, id, found).await
}

/// The connector's configuration, with its secrets opened, for a test.
pub async fn test_config(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<Config, ConnectorError> {
    let keys = keyring.tenant(conn, tenant).await?;
    store::config(conn, &keys, tenant, id).await
}

/// Lists and samples the connector's storage, within [`PROBE_DEADLINE`] in all. Needs no
/// database.
pub async fn probe(cloud: &Cloud, tenant: &TenantId, id: ConnectorId, config: &Config) -> Probe {
    match cloud.open(tenant, id, config) {
        Ok(storage) => storage.probe(&config.prefixes(), PROBE_DEADLINE).await,
        Err(error) => Probe {
            buckets_accessible: Vec::new(),
            sample_objects: 0,
            error: Some(error),
            latency: Duration::ZERO,
        },
    }
}

/// How long a whole connection test may call the storage: it answers an HTTP request, and a
/// storage that does not answer is `disconnected` after this, not after 30 s per bucket.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(20);

/// Records what [`probe`] found as the connector's status, and returns it.
pub async fn record_test(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
    probe: Probe,
) -> Result<TestOutcome, ConnectorError> {
    let status = match &probe.error {
        None => Status::Active,
        // Nothing answered: the storage or its identity service is unreachable from here, which
        // may pass without any change to the connector.
        Some(e) if e.failure == Failure::Network => Status::Disconnected,
        // Something answered and refused: the configuration or the grant must change.
        Some(_) => Status::Error,
    };
    let message = probe
        .error
        .as_ref()
        .map(|e| format!("{}: {}", e.failure.as_str(), e.message));
    tracing::info!(
        connector = %id,
        status = status.as_str(),
        buckets = probe.buckets_accessible.len(),
        latency_ms = probe.latency.as_millis() as u64,
        "connection test"
    );
    store::set_status(conn, tenant, id, status, message.as_deref()).await?;
    Ok(TestOutcome {
        connected: probe.error.is_none(),
        buckets_accessible: probe.buckets_accessible,
        sample_objects: probe.sample_objects,
        latency: probe.latency,
        error: probe.error,
    })
}

//! The connection test: really list and sample the connector's storage, then record whether
//! it worked. It starts no scan.

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, TenantId};
use keys::KeyRing;

use crate::cloud::{AccessError, Cloud, Failure};
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
pub async fn test_connection(
    conn: &mut AsyncPgConnection,
    cloud: &Cloud,
    keyring: &KeyRing,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<TestOutcome, ConnectorError> {
    let keys = keyring.tenant(conn, tenant).await?;
    let config = store::config(conn, &keys, tenant, id).await?;
    let probe = match cloud.open(id, &config) {
        Ok(storage) => storage.probe(&config.prefixes()).await,
        Err(error) => crate::cloud::Probe {
            buckets_accessible: Vec::new(),
            sample_objects: 0,
            error: Some(error),
            latency: Duration::ZERO,
        },
    };
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

//! Area B connector wire types.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// A connector. Secret configuration fields are never part of it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Connector {
    pub id: String,
    pub name: String,
    /// aws, gcp or azure.
    pub provider: String,
    /// pending_test, active, disconnected or error.
    pub status: String,
    /// Why the last connection test failed, when status is error.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status_message: Option<String>,
    /// The non-secret configuration fields.
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_scan: Option<OffsetDateTime>,
    pub findings_count: i64,
    pub risk_score: i32,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// On get only.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none",
        default
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub updated_at: Option<OffsetDateTime>,
    /// On get only: the connector's scans, newest first.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scan_history: Option<Vec<ScanSummary>>,
}

/// One scan in a connector's history.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScanSummary {
    pub scan_id: String,
    pub status: String,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_at: Option<OffsetDateTime>,
    pub files_processed: i64,
    pub findings_count: i64,
}

/// POST /connectors.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConnector {
    pub name: String,
    /// aws, gcp or azure.
    pub provider: String,
    /// The provider's fields (see the spec); `buckets`, `prefixes` and `file_types` optional.
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
}

/// The answer to POST /connectors.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectorCreated {
    pub id: String,
    pub name: String,
    pub provider: String,
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// The answer to DELETE /connectors/:id.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectorDeleted {
    pub id: String,
    pub deleted: bool,
}

/// GET /connectors query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectorQuery {
    /// aws, gcp or azure.
    #[serde(default)]
    pub provider: Option<String>,
    /// active, disconnected, error (or pending_test).
    #[serde(default)]
    pub status: Option<String>,
    /// 1 to 100, default 20.
    #[serde(default)]
    pub limit: Option<i64>,
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The answer to POST /connectors/:id/test.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectionTest {
    pub connected: bool,
    /// Buckets (Azure containers) that could be listed and read.
    pub buckets_accessible: Vec<String>,
    /// Objects seen while sampling the listings.
    pub sample_objects: u64,
    /// How long the test took, credential exchanges included.
    pub latency_ms: u64,
    /// Why the connection failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<ConnectionError>,
}

/// A failed connection test, explained.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectionError {
    /// identity, permission, not_found, network or provider.
    pub reason: String,
    /// The provider's own explanation where it gave one.
    pub message: String,
}

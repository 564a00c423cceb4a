//! Area B scan wire types.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

/// POST /scans/parallel.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartParallel {
    /// Connector ids.
    #[schema(min_items = 1, max_items = 50)]
    pub connectors: Vec<String>,
    /// full or incremental.
    #[serde(rename = "type")]
    #[schema(value_type = Option<crate::values::ScanType>, inline)]
    pub kind: Option<String>,
    /// max_files, max_workers, file_types, prefixes, llm_assist, timeout_minutes,
    /// coverage_target, coverage_strategy, max_object_bytes.
    #[serde(default)]
    #[schema(value_type = Option<ScanOptions>)]
    pub options: Option<serde_json::Value>,
}

/// A scan's options; each absent one takes its default. Unknown options are refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanOptions {
    /// Objects to scan at most: 1 to the deployment tier's ceiling (100,000 by default), which
    /// is also the default.
    #[schema(minimum = 1, nullable = false)]
    pub max_files: Option<u32>,
    /// Workers at most: 1 to the tier's ceiling (4 by default), which is also the default.
    #[schema(minimum = 1, nullable = false)]
    pub max_workers: Option<u32>,
    /// File extensions to scan, with or without their leading dot; every file when absent.
    #[schema(value_type = Option<Vec<crate::values::FileType>>, inline, nullable = false)]
    pub file_types: Option<Vec<String>>,
    /// Key prefixes, each 1 to 1024 bytes; the connector's own when absent.
    #[schema(value_type = Option<Vec<crate::values::ScanPrefix>>, inline, max_items = 100, nullable = false)]
    pub prefixes: Option<Vec<String>>,
    /// No LLM is configured for this service, so only false is accepted.
    #[schema(value_type = Option<crate::values::NoLlm>, inline, nullable = false)]
    pub llm_assist: Option<bool>,
    /// 1 to 1440; default 120.
    #[schema(minimum = 1, maximum = 1440, nullable = false)]
    pub timeout_minutes: Option<u32>,
    /// 0 to 1; default 0.95.
    #[schema(minimum = 0, maximum = 1, nullable = false)]
    pub coverage_target: Option<f64>,
    /// best_effort (default) or strict.
    #[schema(value_type = Option<crate::values::CoverageStrategy>, inline, nullable = false)]
    pub coverage_strategy: Option<String>,
    /// Larger objects are skipped (`size_limit`): 1 to 5 GiB; default 100 MiB.
    #[schema(minimum = 1, maximum = 5_368_709_120_u64, nullable = false)]
    pub max_object_bytes: Option<u64>,
}

/// POST /connectors/:id/scan.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartConnectorScan {
    /// full or incremental (default full).
    #[serde(rename = "type", default)]
    #[schema(value_type = Option<crate::values::ScanType>, inline)]
    pub kind: Option<String>,
    /// The same options as POST /scans/parallel.
    #[serde(default)]
    #[schema(value_type = Option<ScanOptions>)]
    pub options: Option<serde_json::Value>,
}

/// The answer to POST /scans/parallel.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ParallelStarted {
    pub scan_id: String,
    pub status: String,
    pub connectors: Vec<String>,
    #[serde(rename = "type")]
    pub kind: String,
    pub workers_requested: u32,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// The answer to POST /connectors/:id/scan.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectorScanStarted {
    pub scan_id: String,
    pub connector_id: String,
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// A scan's progress.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Progress {
    pub files_total: i64,
    pub files_processed: i64,
    pub files_failed: i64,
    pub findings_count: i64,
    pub percent_complete: i64,
    pub elapsed_seconds: i64,
    /// Seconds left: while no rate is known (enumerating, nothing processed yet), the time
    /// before the scan's `timeout_minutes` ends it; then the extrapolation of the rate so far,
    /// never past that timeout; 0 once the scan has ended. Always an integer.
    pub estimated_remaining_seconds: i64,
}

/// A scan's coverage.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Coverage {
    pub coverage_target: f64,
    /// best_effort or strict.
    pub coverage_strategy: String,
    pub coverage_pct: f64,
    pub target_met: bool,
    pub completeness_score: f64,
    /// complete, in_progress, partial or failed.
    pub enumeration_status: String,
    pub total_enumerated: i64,
    pub total_scanned: i64,
    pub total_skipped: i64,
    pub total_failed: i64,
    /// total_skipped by reason: size_limit, unsupported_format, binary:<kind>.
    pub skipped_reasons: std::collections::BTreeMap<String, i64>,
    /// total_failed by reason: permission, not_found, network, identity, refused, provider,
    /// parse, worker_lost.
    pub failed_reasons: std::collections::BTreeMap<String, i64>,
    /// Everything not read, by reason: the skipped objects of `skipped_reasons`, and inside
    /// objects that were scanned, the members of archives left unread (`compression_ratio`,
    /// `archive_depth`, `encrypted_zip`, `corrupt_tar`, `binary:<kind>`, ...). A member is not
    /// an object, so it is in no total.
    pub skip_reasons: std::collections::BTreeMap<String, i64>,
}

/// A scan's worker counts.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkerCounts {
    pub total: i64,
    pub active: i64,
    pub completed: i64,
    pub failed: i64,
}

/// A scan.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Scan {
    pub scan_id: String,
    /// queued, running, completed, partial, failed or cancelled.
    pub status: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Parallel scans: the connectors scanned.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub connectors: Option<Vec<String>>,
    /// Scans started from one connector.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub connector_id: Option<String>,
    pub workers_requested: u32,
    pub progress: Progress,
    /// Present once the scan is running, and after it ended.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub coverage: Option<Coverage>,
    pub workers: WorkerCounts,
    /// Why the scan ended as it did, or why enumeration was partial.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status_reason: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub started_at: Option<OffsetDateTime>,
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none",
        default
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_at: Option<OffsetDateTime>,
}

/// What a cancelled scan had done.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PartialResults {
    pub files_processed: i64,
    pub findings_count: i64,
}

/// The answer to POST /scans/:id/cancel.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScanCancelled {
    pub scan_id: String,
    pub status: String,
    pub partial_results: PartialResults,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub cancelled_at: OffsetDateTime,
}

/// A worker's chunk of the enumerated resources.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Chunk {
    pub start_index: i64,
    pub end_index: i64,
    pub file_count: i64,
}

/// A worker's progress on its chunk.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkerProgress {
    pub files_processed: i64,
    pub findings_count: i64,
    pub percent_complete: i64,
}

/// One worker: a chunk and who ran it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Worker {
    pub worker_id: String,
    /// pending, running, completed or failed.
    pub status: String,
    pub chunk: Chunk,
    pub progress: WorkerProgress,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub started_at: Option<OffsetDateTime>,
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none",
        default
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_at: Option<OffsetDateTime>,
}

/// GET /scans query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ScanQuery {
    /// A connector id.
    #[serde(default)]
    pub connector: Option<String>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::ScanStatus>, inline)]
    pub status: Option<String>,
    /// ISO 8601: scans created at or after.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Iso8601>, inline)]
    pub since: Option<String>,
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// GET /scans/:id/deployment-config query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeploymentQuery {
    /// A `chunk_id` of the scan (`chunk-0`, ...): only that chunk is returned, so that a large
    /// scan's configuration can be fetched one chunk at a time. All chunks when left out.
    #[serde(default)]
    pub chunk: Option<String>,
}

/// The environment a scan worker in the customer's infrastructure runs with, beside the
/// platform's own (database, master key, cloud identity).
#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[allow(non_snake_case)]
pub struct DeploymentEnvironment {
    pub SCAN_ID: String,
    /// The platform-api that issued this configuration.
    pub COORDINATOR_URL: String,
    /// The scan's worker token: a worker presenting any other is refused.
    pub AUTH_TOKEN: String,
}

redacted_debug!(DeploymentEnvironment { SCAN_ID, COORDINATOR_URL; AUTH_TOKEN });

/// One chunk of the scan's objects.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeploymentChunk {
    pub chunk_id: String,
    /// `bucket/key` of each object, in scan order.
    pub files: Vec<String>,
    /// `connector_id`, `provider` and the connector's non-secret configuration.
    #[schema(value_type = Object)]
    pub connector_config: serde_json::Map<String, serde_json::Value>,
}

/// The answer to GET /scans/:id/deployment-config.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeploymentConfig {
    pub container_image: String,
    pub environment: DeploymentEnvironment,
    /// Empty until the scan is enumerated; final once enumeration_status is not in_progress.
    pub chunks: Vec<DeploymentChunk>,
    /// The scan's status and its enumeration's, so a deployer knows whether chunks are final.
    pub status: String,
    pub enumeration_status: String,
}

/// `POST /scans/:id/work/claim`: a scan worker outside the platform asks for a chunk. The
/// worker authenticates with the scan's worker token (`AUTH_TOKEN`) as a Bearer credential.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkClaimRequest {
    /// How the worker is shown in `GET /scans/:id/workers`: 1 to 200 printable characters.
    #[schema(min_length = 1, max_length = 200)]
    pub worker_id: String,
}

/// The answer to a claim: a chunk with what scanning it needs, or none (the scan's status
/// says whether to wait or to stop).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkClaimed {
    /// queued, running, completed, partial, failed or cancelled: a worker stops once the scan
    /// has ended.
    #[schema(value_type = crate::values::ScanStatus, inline)]
    pub scan_status: String,
    pub claim: Option<WorkClaim>,
}

/// A claimed chunk.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkClaim {
    pub tenant_id: String,
    pub chunk_no: i32,
    /// Sent back with every later call: a call with a fence the chunk moved past is `held:
    /// false`, and the worker stops.
    pub fence: i64,
    pub start_index: i32,
    pub end_index: i32,
    /// A heartbeat, a record or the end within this many seconds keeps the chunk.
    pub lease_seconds: i64,
    /// The chunk's objects not yet recorded.
    pub resources: Vec<WorkResource>,
    /// The scan's custom classifiers, as they were stored with it.
    #[schema(value_type = Vec<Object>)]
    pub classifiers: Vec<serde_json::Value>,
    /// Objects larger than this are skipped (`size_limit`).
    pub max_object_bytes: u64,
    /// Each connector of the resources: its public configuration (never a secret), or why it
    /// cannot be used.
    pub connectors: Vec<WorkConnector>,
}

/// An object to scan.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkResource {
    pub idx: i32,
    pub connector_id: String,
    pub bucket: String,
    pub object_key: String,
    pub size: i64,
    pub etag: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_modified: OffsetDateTime,
    /// The vault's lookup keys (32 hex digits each) of the tokens the platform wrote into the
    /// object: a value found there is the tenant's own token only if its key is among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written_tokens: Vec<String>,
}

/// A connector as a worker outside the platform reads with it: its own cloud identity and the
/// connector's public configuration.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkConnector {
    pub connector_id: String,
    /// aws, gcp or azure; absent with `error`.
    pub provider: Option<String>,
    #[schema(value_type = Object)]
    pub config: serde_json::Map<String, serde_json::Value>,
    /// Why the connector cannot be used (deleted, unreadable): its objects fail.
    pub error: Option<String>,
}

/// `POST /scans/:id/work/heartbeat` and `/work/complete`: the chunk and its fence.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkChunk {
    pub chunk_no: i32,
    pub fence: i64,
}

/// `POST /scans/:id/work/record`: outcomes of the chunk's objects.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkRecord {
    pub chunk_no: i32,
    pub fence: i64,
    pub outcomes: Vec<WorkOutcome>,
}

/// What became of one object.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkOutcome {
    /// The resource's `idx`, within the chunk.
    pub idx: i32,
    /// scanned, skipped or failed.
    pub outcome: String,
    /// Why an object was skipped or failed (`size_limit`, `permission`, ...).
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub findings: Vec<WorkFinding>,
    /// A scanned object's contents left unread, by reason: members of an archive (at most 32
    /// reasons, as `reason` is spelled).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unread: std::collections::BTreeMap<String, u32>,
}

/// A finding, as stored: one PII type in one field of the object, never a value.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkFinding {
    pub pii_type: String,
    pub category: String,
    /// `detect::Location::field` of its values.
    pub field: String,
    /// How many values, at least 1.
    pub occurrences: u32,
    /// The highest confidence of its values.
    pub confidence: f32,
    /// The first values' locations, 1 to 15.
    #[schema(value_type = Vec<Object>)]
    pub locations: Vec<serde_json::Value>,
    /// The first value masked (the platform masks it again).
    pub preview: String,
    /// The values are tokens the platform wrote into the object (`written_tokens`).
    #[serde(default)]
    pub tokenized: bool,
}

/// Whether the worker still holds the chunk.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkHeld {
    pub held: bool,
}

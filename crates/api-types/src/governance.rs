//! Governance: policies (YAML or JSON documents) and alert channels.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

/// A governance policy, as GET /governance/policies lists it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GovernancePolicy {
    pub id: String,
    pub name: String,
    /// Empty when the document has none.
    pub description: String,
    /// enforced or dry-run.
    pub mode: String,
    pub tags: Vec<String>,
    pub conditions_count: i64,
    pub actions_count: i64,
    /// When a finding last matched the policy; null until one does.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_triggered: Option<OffsetDateTime>,
    /// Findings that matched the policy, counted once per evaluation of a scan's batch.
    pub findings_matched: i64,
    /// 1 on creation; each PUT adds one.
    pub version: i64,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

/// GET /governance/policies/:id and the answer to PUT: the policy and its document.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GovernancePolicyDetail {
    #[serde(flatten)]
    pub policy: GovernancePolicy,
    /// The stored document as canonical JSON, every default written out.
    #[schema(value_type = Object)]
    pub document: serde_json::Value,
}

/// The answer to POST /governance/policies.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GovernancePolicyCreated {
    pub id: String,
    pub name: String,
    pub mode: String,
    pub version: i64,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// The answer to DELETE /governance/policies/:id.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GovernancePolicyDeleted {
    pub id: String,
    pub deleted: bool,
}

/// GET /governance/policies query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GovernancePolicyQuery {
    /// enforced or dry-run.
    #[serde(default)]
    #[param(value_type = Option<crate::values::PolicyMode>, inline)]
    pub mode: Option<String>,
    /// Policies carrying this tag.
    #[serde(default)]
    #[param(min_length = 1, max_length = 64)]
    pub tag: Option<String>,
    /// 1 to 100, default 20.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// The policy document, for the OpenAPI description of request bodies. See docs/governance.md.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyDocument {
    /// governance.dps/v1
    #[serde(rename = "apiVersion")]
    #[schema(value_type = crate::values::PolicyApiVersion, inline)]
    pub api_version: String,
    /// Policy
    #[schema(value_type = crate::values::PolicyKind, inline)]
    pub kind: String,
    #[schema(value_type = PolicyMetadata)]
    pub metadata: serde_json::Value,
    #[schema(value_type = Object)]
    pub spec: serde_json::Value,
}

/// A policy document's `metadata`. Unknown fields are refused.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyMetadata {
    /// 1 to 128 characters, without white space at either end; unique in the tenant.
    #[schema(min_length = 1, max_length = 128, pattern = r"^\S(.*\S)?$")]
    pub name: String,
    /// Up to 1000 characters.
    #[serde(default)]
    #[schema(max_length = 1000, nullable = false)]
    pub description: Option<String>,
    /// Up to 20 distinct tags of 1 to 64 characters.
    #[serde(default)]
    #[schema(max_items = 20, nullable = false)]
    pub tags: Option<Vec<String>>,
}

/// POST /governance/channels.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelRequest {
    /// 1 to 64 lower-case letters, digits, - or _, unique in the tenant.
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$")]
    pub name: String,
    /// webhook.
    #[serde(rename = "type")]
    #[schema(value_type = crate::values::ChannelType, inline)]
    pub kind: String,
    /// https; no loopback, private, link-local or metadata address.
    #[schema(pattern = r"^https://[^\s/?#@]+([/?#]\S*)?$")]
    pub url: String,
}

/// An alert channel, without its secret.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Channel {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// The answer to POST /governance/channels: the channel and its signing secret, shown once.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct ChannelCreated {
    #[serde(flatten)]
    pub channel: Channel,
    /// Signs every delivery: `X-DPS-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret,
    /// "<t>.<body>")>`. It is not shown again.
    pub secret: String,
}

redacted_debug!(ChannelCreated { channel; secret });

/// The answer to DELETE /governance/channels/:name.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChannelDeleted {
    pub name: String,
    pub deleted: bool,
}

/// One entry of the governance audit log.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuditEntry {
    /// 1, 2, ... within the tenant's log, without gaps.
    pub seq: i64,
    pub entry_id: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: OffsetDateTime,
    /// policy_created, policy_updated, policy_deleted, policy_evaluated, action_planned,
    /// action_executed, action_simulated, action_blocked, action_failed, drift_acknowledged,
    /// reconciliation_started, reconciliation_ended, channel_created, channel_deleted,
    /// lkg_retention_changed, remediation_policy_changed, cosigning_changed.
    #[serde(rename = "type")]
    pub kind: String,
    /// A user id, or `system`.
    pub actor: String,
    pub policy_id: Option<String>,
    pub policy_version: Option<i64>,
    /// alert, tokenize, mask or quarantine.
    pub action_type: Option<String>,
    pub connector_id: Option<String>,
    /// Where the affected object is (`bucket/key`); never what it holds.
    pub resource: Option<String>,
    pub simulated: bool,
    pub outcome: Option<String>,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
    /// Hex SHA-256 of the previous entry (64 zeros for the first).
    pub prev_hash: String,
    /// Hex SHA-256 over prev_hash and the entry's canonical JSON (docs/governance.md).
    pub hash: String,
}

/// GET /governance/audit-log query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// ISO 8601 date or date-time: entries at or after it.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Iso8601>, inline)]
    pub since: Option<String>,
    /// A policy id.
    #[serde(default)]
    pub policy: Option<String>,
    /// alert, tokenize, mask or quarantine.
    #[serde(default)]
    #[param(value_type = Option<crate::values::ActionType>, inline)]
    pub action_type: Option<String>,
    /// 1 to 100, default 50.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// A finding: one detected value in one object, stored without the value.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Finding {
    pub id: String,
    pub connector_id: String,
    pub scan_id: String,
    /// `bucket/key` of the object.
    pub resource: String,
    pub pii_type: String,
    pub category: String,
    /// Where in the object the values sit: a CSV column's header (`#3` without one), a JSON
    /// path with array indices as `[*]`, a Parquet column's path (`customer.ssn`), an Avro
    /// field's path (`contact.email`), a spreadsheet column's header (its letters without
    /// one), or null for plain text. A finding is one PII type in one
    /// field of one version of an object.
    pub field: Option<String>,
    /// How many values the finding stands for.
    pub occurrences: i64,
    /// The highest confidence of its values.
    pub confidence: f64,
    /// Where its first value is: `{line, column}`, CSV `{row, column, header}`, JSON
    /// `{line, path}`, Parquet `{column, row}`, Avro `{field, record}`, a spreadsheet's
    /// `{sheet, cell, header}`, a Word document's `{part, paragraph}`, a presentation's
    /// `{slide, paragraph}` or a PDF's `{page, line}`; in a member of an archive, with `archive`, the members' path from the object down.
    #[schema(value_type = Object)]
    pub location: serde_json::Value,
    /// Where its first values are, at most 15, the first value's first.
    #[schema(value_type = Vec<Object>)]
    pub locations: Vec<serde_json::Value>,
    /// Its first value masked, such as `***-**-6789`.
    pub preview: String,
    /// open, or resolved (a later scan no longer found it).
    pub status: String,
    /// Names of the policies whose scope and conditions it meets now.
    pub matched_policies: Vec<String>,
    /// none, pending, completed, failed or dry_run.
    pub remediation_status: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub resolved_at: Option<OffsetDateTime>,
}

/// GET /findings query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FindingQuery {
    /// A connector id.
    #[serde(default)]
    pub connector: Option<String>,
    /// A scan id.
    #[serde(default)]
    pub scan: Option<String>,
    /// A pii type code, or custom:<name>.
    #[serde(default)]
    #[param(value_type = Option<crate::values::PiiTypeOrCustom>, inline)]
    pub pii_type: Option<String>,
    /// government_id, contact, personal, financial or legal_medical.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Category>, inline)]
    pub category: Option<String>,
    /// open or resolved.
    #[serde(default)]
    #[param(value_type = Option<crate::values::FindingStatus>, inline)]
    pub status: Option<String>,
    /// 0 to 1.
    #[serde(default)]
    #[param(minimum = 0, maximum = 1)]
    pub min_confidence: Option<f64>,
    /// Findings in objects whose `bucket/key` starts with this.
    #[serde(default)]
    pub resource: Option<String>,
    /// Findings whose locations are of this kind: `text` (line and column), `csv` (row and
    /// header), `json` (path), `table` (a Parquet column and row), `record` (an Avro field and
    /// record), `sheet` (a spreadsheet's sheet and cell), `document` (a Word document's part
    /// or a slide, and a paragraph, or a PDF's page and line), or `archive` (in a member of an archive, whatever its
    /// format).
    #[serde(default)]
    #[param(value_type = Option<crate::values::LocationKind>, inline)]
    pub location_kind: Option<String>,
    /// 1 to 100, default 20.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// `previous_state` and `current_state` of a drift event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DriftState {
    pub findings_count: i64,
    pub risk_score: i64,
    /// Bucket events only: whether the connector could reach the bucket.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub accessible: Option<bool>,
    /// Bucket events only: readable by anyone (null: the provider does not say).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub public: Option<Option<bool>>,
    /// Bucket events only: default encryption (null: unknown).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub encryption: Option<Option<String>>,
    /// Bucket events only: versioning (null: unknown).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub versioning: Option<Option<String>>,
}

/// A drift event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DriftEvent {
    pub event_id: String,
    /// data_drift, config_drift or exposure_drift.
    #[serde(rename = "type")]
    pub kind: String,
    /// critical, high, medium or low.
    pub severity: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: OffsetDateTime,
    pub connector_id: String,
    /// `bucket/key` of an object, or the bucket.
    pub resource: String,
    pub description: String,
    pub previous_state: DriftState,
    pub current_state: DriftState,
    /// Names of the policies matching the resource's findings.
    pub policies_triggered: Vec<String>,
    /// none, pending, completed, failed or dry_run.
    pub remediation_status: String,
    /// open or acknowledged.
    pub status: String,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub acknowledged_at: Option<OffsetDateTime>,
    pub acknowledged_by: Option<String>,
    pub note: Option<String>,
}

/// GET /governance/drift-events query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DriftQuery {
    /// ISO 8601 date or date-time: events at or after it.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Iso8601>, inline)]
    pub since: Option<String>,
    /// critical, high, medium or low.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Severity>, inline)]
    pub severity: Option<String>,
    /// data_drift, config_drift or exposure_drift.
    #[serde(default, rename = "type")]
    #[param(value_type = Option<crate::values::DriftType>, inline)]
    pub kind: Option<String>,
    /// A connector id.
    #[serde(default)]
    pub connector: Option<String>,
    /// open or acknowledged.
    #[serde(default)]
    pub status: Option<String>,
    /// 1 to 100, default 20.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// POST /governance/drift-events/:id/acknowledge.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Acknowledge {
    /// At most 1000 characters.
    #[serde(default)]
    pub note: Option<String>,
}

/// The factors of a risk score, each between 0 and 1.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RiskFactors {
    pub sensitivity: f64,
    pub volume: f64,
    pub exposure: f64,
    pub policy_coverage: f64,
}

/// A risk score.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RiskScore {
    /// A finding id, `bucket/key` for a file, a connector id, or the tenant for the workspace.
    pub entity_id: String,
    /// finding, file, connector or workspace.
    pub entity_type: String,
    /// The connector of a finding, file or connector; absent for the workspace.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub connector_id: Option<String>,
    /// 0 to 100.
    pub risk_score: i64,
    /// critical (80+), high (60+), medium (30+) or low.
    pub severity: String,
    pub factors: RiskFactors,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub computed_at: OffsetDateTime,
}

/// GET /governance/risk-scores query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RiskQuery {
    /// finding, file, connector (default) or workspace.
    #[serde(default)]
    #[param(value_type = Option<crate::values::RiskLevel>, inline)]
    pub level: Option<String>,
    /// A connector id.
    #[serde(default)]
    pub connector: Option<String>,
    /// 0 to 100.
    #[serde(default)]
    #[param(minimum = 0, maximum = 100)]
    pub min_score: Option<i64>,
    /// 1 to 100, default 20.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// Open drift events by severity.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SeverityCounts {
    pub critical: i64,
    pub high: i64,
    pub medium: i64,
    pub low: i64,
}

/// Policies by mode.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ModeCounts {
    pub enforced: i64,
    #[serde(rename = "dry-run")]
    pub dry_run: i64,
}

/// GET /governance/summary.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Summary {
    /// Open drift events (acknowledged ones excluded), by severity.
    pub open_drift_events: SeverityCounts,
    /// The workspace risk score.
    pub risk: RiskScore,
    /// Open findings by category.
    #[schema(value_type = Object)]
    pub findings_by_category: std::collections::BTreeMap<String, i64>,
    pub policies_by_mode: ModeCounts,
}

/// The scope of a reconciliation: empty lists (or none) mean all of the tenant's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconcileScope {
    /// Connector ids; at most 100.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub connectors: Vec<String>,
    /// Governance policy ids; at most 100.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub policies: Vec<String>,
}

/// Limits of a reconciliation.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconcileLimits {
    /// Object-changing actions an enforced reconciliation may newly plan (0 to 1,000,000);
    /// more, and it executes nothing. Default: `DPS_RECONCILE_MAX_ACTIONS`, else 1000.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1_000_000)]
    pub max_actions: Option<i64>,
}

/// POST /governance/reconcile.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconcileRequest {
    #[serde(default)]
    pub scope: Option<ReconcileScope>,
    /// dry-run or enforced. Required: whether anything changes is never guessed.
    #[serde(default)]
    #[schema(value_type = crate::values::PolicyMode, inline, required = true)]
    pub mode: Option<String>,
    #[serde(default)]
    pub limits: Option<ReconcileLimits>,
}

/// The 202 answer to POST /governance/reconcile.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReconcileQueued {
    pub reconciliation_id: String,
    /// queued.
    pub status: String,
    pub mode: String,
    pub scope: ReconcileScope,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// One line of a reconciliation's plan: what one action of one policy does.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReconcilePlanItem {
    pub policy_id: String,
    pub policy_name: String,
    pub policy_version: i32,
    /// alert, tokenize, mask or quarantine.
    pub action_type: String,
    /// What an enforced run does: simulated (a dry-run policy), queued (an alert), planned,
    /// or blocked (the tenant's remediation policy denies the action's safety class).
    pub outcome: String,
    /// Objects the policy matches.
    pub objects: u64,
    /// Findings the policy matches.
    pub findings: u64,
    /// Objects for which this action was already taken at this policy version.
    pub repeated: u64,
}

/// GET /governance/reconciliations/:id.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Reconciliation {
    pub reconciliation_id: String,
    /// queued, running, completed, blocked_by_limit or failed.
    pub status: String,
    pub mode: String,
    pub scope: ReconcileScope,
    pub max_actions: u32,
    /// Open findings in scope.
    pub findings_evaluated: u64,
    /// Of those, findings some policy in scope matches.
    pub findings_matched: u64,
    /// Actions queued (alerts) or planned (remediation requests).
    pub actions_planned: u64,
    /// Alerts delivered and remediations done, so far.
    pub actions_executed: u64,
    pub actions_simulated: u64,
    pub actions_blocked: u64,
    pub actions_failed: u64,
    /// Matched, but already taken for this object version and policy version.
    pub actions_repeated: u64,
    /// Object-changing actions the plan newly takes: what max_actions is checked against.
    pub changes_planned: u64,
    /// Object-changing actions of the policies in scope that a scan's evaluation planned while
    /// an enforced run went (for findings recorded after the policy): not this
    /// reconciliation's, and not counted against max_actions.
    pub changes_planned_elsewhere: u64,
    pub plan: Vec<ReconcilePlanItem>,
    pub requested_by: String,
    /// Why it failed; never a value.
    pub error: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<OffsetDateTime>,
}

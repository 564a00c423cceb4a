//! Area A (the Tokenization API) bodies. Area A answers with its fields at the top level.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use crate::Pagination;

/// One value to tokenize.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenizeItem {
    /// The raw value. Never logged, never echoed in an error.
    pub value: String,
    /// One of us_ssn, ca_sin, email, phone, date, dob, monetary, case_number, passport_us,
    /// passport_ca.
    pub pii_type: String,
    /// deterministic, randomized or format_preserving; the policy's rule for the type when
    /// omitted.
    #[serde(default)]
    pub mode: Option<String>,
}

/// Body of `POST /tokenize`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenizeRequest {
    /// 1 to 1000 items.
    pub items: Vec<TokenizeItem>,
    pub policy_id: String,
    /// At most 256 characters. The same key with the same body replays the first response
    /// for 24 hours; with a different body it is 409 IDEMPOTENCY_KEY_REUSED.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// BEST_EFFORT (default) or ALL_OR_NOTHING.
    #[serde(default)]
    pub batch_mode: Option<String>,
}

/// Query of `POST /tokenize`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TokenizeQuery {
    /// Validate and preview without writing anything.
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// Why an item fell back to randomized mode under a fail-open policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Fallback {
    /// Always `randomized`.
    pub mode: String,
    /// The code the item would have failed with under fail-closed.
    pub reason_code: String,
    pub reason: String,
}

/// A tokenized item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TokenizedItem {
    /// The item's position in the request.
    pub index: usize,
    /// Null only on a dry run, where a randomized token (or a surrogate not yet drawn) cannot
    /// be known in advance.
    pub token: Option<String>,
    /// The vault entry's id; null on a dry run.
    pub token_id: Option<String>,
    /// Always `TOKENIZED`.
    pub status: String,
    /// The mode actually used.
    pub mode: String,
    /// Present when a fail-open policy protected the item in randomized mode instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
}

/// An item that was not tokenized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FailedItem {
    pub index: usize,
    /// Always `FAILED`.
    pub status: String,
    pub error: ItemError,
}

/// Why an item failed. The message never repeats the value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ItemError {
    /// EMPTY_VALUE, UNSUPPORTED_PII_TYPE, INVALID_VALUE, INVALID_MODE, NO_RULE_FOR_TYPE,
    /// SURROGATE_EXHAUSTED or TOKEN_REVOKED.
    pub code: String,
    pub message: String,
}

/// One item's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TokenizeResult {
    Tokenized(TokenizedItem),
    Failed(FailedItem),
}

/// Response of `POST /tokenize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TokenizeResponse {
    pub results: Vec<TokenizeResult>,
    pub success_count: usize,
    pub failure_count: usize,
    pub batch_policy_version: i32,
    /// A UUID that identifies this call: the service logs it on the request's line.
    pub trace_id: String,
}

/// The rule for one PII type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeRule {
    /// deterministic, randomized or format_preserving.
    pub mode: String,
    /// 0.0 to 1.0 (default 0.0): detections below it are not tokenized.
    #[serde(default)]
    pub min_confidence: Option<f64>,
    /// global (default: equal values give equal tokens across the tenant's policies) or
    /// policy (only within this policy).
    #[serde(default)]
    pub deterministic_scope: Option<String>,
}

/// A tokenization policy as accepted by `POST /policies` and `PUT /policies/:id` (a PUT
/// replaces the whole definition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyInput {
    pub name: String,
    /// Keyed by PII type code.
    pub type_rules: BTreeMap<String, TypeRule>,
    /// Roles that may detokenize.
    pub allowed_roles: Vec<String>,
    /// Purposes accepted when requesting a grant.
    pub allowed_purposes: Vec<String>,
    #[serde(default)]
    pub require_reason: bool,
    /// fail-closed (default) or fail-open, as the spec spells them; fail_closed and fail_open
    /// are accepted too.
    #[serde(default)]
    pub failure_mode: Option<String>,
    /// Tokens expire this many seconds after creation; null (default) means never.
    #[serde(default)]
    pub token_ttl_seconds: Option<u64>,
    /// ISO 3166 alpha-2 region for phone numbers written without a country code (default US).
    #[serde(default)]
    pub default_region: Option<String>,
}

/// A stored policy: the definition with every default filled in, plus its identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Policy {
    pub policy_id: String,
    /// 1 on creation; each update adds one.
    pub version: i32,
    pub name: String,
    pub type_rules: BTreeMap<String, TypeRule>,
    pub allowed_roles: Vec<String>,
    pub allowed_purposes: Vec<String>,
    pub require_reason: bool,
    pub failure_mode: String,
    pub token_ttl_seconds: Option<u64>,
    pub default_region: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

/// Response of `GET /policies`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PolicyList {
    pub items: Vec<Policy>,
    pub pagination: Pagination,
}

/// Query of the cursor-paginated lists of Area A.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1 to 100, default 50.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// Opaque, from a previous response.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// Query of `GET /vault`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct VaultQuery {
    /// 1 to 100, default 50.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// Opaque, from a previous response.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
    /// Only entries of this PII type.
    #[serde(default)]
    #[param(value_type = Option<crate::values::PiiType>, inline)]
    pub pii_type: Option<String>,
    /// active, revoked or expired.
    #[serde(default)]
    #[param(value_type = Option<crate::values::VaultStatus>, inline)]
    pub status: Option<String>,
}

/// A vault entry as listed: everything but the value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VaultEntry {
    pub token_id: String,
    pub token: String,
    pub pii_type: String,
    pub mode: String,
    /// active, revoked or expired.
    pub status: String,
    pub policy_id: String,
    pub policy_version: i32,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<OffsetDateTime>,
}

/// Response of `GET /vault`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VaultList {
    pub items: Vec<VaultEntry>,
    pub pagination: Pagination,
}

/// Body of `DELETE /vault/:token_id`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// Why the token is revoked: 1 to 1000 characters, kept with the entry.
    pub reason: String,
}

/// Response of `DELETE /vault/:token_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Revoked {
    pub token_id: String,
    /// Always `revoked`.
    pub status: String,
    /// The first revocation's time; revoking again keeps it.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub revoked_at: OffsetDateTime,
}

/// Body of `POST /grant`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantRequest {
    /// 1 to 100 token ids.
    pub token_ids: Vec<String>,
    /// Must be in the allowed_purposes of every referenced token's policy.
    pub purpose: String,
    /// Required when a referenced token's policy has require_reason.
    #[serde(default)]
    pub reason: Option<String>,
}

redacted_debug!(TokenizeItem { pii_type, mode; value });

/// Response of `POST /grant`.
#[derive(Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GrantResponse {
    /// Single use, bound to the caller, the tenant and the token ids; valid 300 seconds.
    pub grant_jwt: String,
    /// Always 300.
    pub expires_in_seconds: u64,
    pub trace_id: String,
}

redacted_debug!(GrantResponse { expires_in_seconds, trace_id; grant_jwt });

/// Body of `POST /detokenize`.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DetokenizeRequest {
    /// Token ids, all within the grant; 1 to 100.
    pub tokens: Vec<String>,
    pub grant_jwt: String,
}

redacted_debug!(DetokenizeRequest { tokens; grant_jwt });

/// One token's outcome.
#[derive(Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DetokenizeResult {
    pub token_id: String,
    /// GRANTED, NOT_FOUND, REVOKED, EXPIRED or DENIED.
    pub status: String,
    /// The value when GRANTED, otherwise null.
    pub value: Option<String>,
    /// Present when REVOKED.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<OffsetDateTime>,
    /// The ISO 4217 code a monetary value was tokenized with, when GRANTED and there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

redacted_debug!(DetokenizeResult { token_id, status, revoked_at, currency; value });

/// Response of `POST /detokenize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DetokenizeResponse {
    pub results: Vec<DetokenizeResult>,
    pub success_count: usize,
    pub failure_count: usize,
    pub trace_id: String,
}

/// Query of `GET /audit/detokenizations`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
    /// Only attempts by this user.
    #[serde(default)]
    pub user: Option<String>,
    /// Only attempts that named this token.
    #[serde(default)]
    pub token_id: Option<String>,
    /// Only attempts at or after this time: an ISO 8601 date or date-time (a date alone is
    /// its first instant, UTC).
    #[serde(default)]
    #[param(value_type = Option<crate::values::Iso8601>, inline)]
    pub since: Option<String>,
}

/// One token of an audited attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AuditedToken {
    pub token_id: String,
    pub status: String,
}

/// One detokenization attempt. Never holds a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DetokenizationRecord {
    pub audit_id: String,
    pub trace_id: String,
    pub user_id: String,
    /// The grant's id (jti), when the grant could be read.
    pub grant_id: Option<String>,
    pub purpose: Option<String>,
    pub reason: Option<String>,
    /// granted (the grant was accepted; see each token's status) or denied.
    pub outcome: String,
    /// Why the whole attempt was denied (GRANT_EXPIRED, GRANT_NONCE_REUSED, ...).
    pub denial_code: Option<String>,
    pub tokens: Vec<AuditedToken>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub occurred_at: OffsetDateTime,
}

/// Response of `GET /audit/detokenizations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DetokenizationAudit {
    pub items: Vec<DetokenizationRecord>,
    pub pagination: Pagination,
}

/// Response of `GET /usage`: the current calendar month (UTC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub period_start: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub period_end: OffsetDateTime,
    pub tokens: UsageCounts,
    pub tokenize_requests: i64,
    pub tokenize_items: i64,
    pub detokenize_requests: i64,
    /// Tokens named by detokenize requests whose grant was accepted.
    pub detokenize_items: i64,
    pub grants_issued: i64,
    pub revocations: i64,
    pub quota: Quota,
}

/// Vault entries: created this month, and the current state of all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageCounts {
    pub created: i64,
    pub active: i64,
    pub revoked: i64,
    pub expired: i64,
}

/// The monthly token quota. `limit` and `remaining` are null when the tenant is unlimited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Quota {
    pub limit: Option<i64>,
    pub used: i64,
    pub remaining: Option<i64>,
}

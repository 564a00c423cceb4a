//! Remediations: the tokenize, mask and quarantine actions executed on customers' objects,
//! their signed receipts and their undo.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

/// Where a remediation's last-known-good snapshot (a quarantined object's copy) is.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ObjectLocation {
    pub bucket: String,
    pub key: String,
}

/// A stored receipt: the signed document and where its co-signing stands.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RemediationReceipt {
    pub receipt_id: String,
    /// planned (co-signed before the action, where the tenant requires co-signing), executed,
    /// blocked or undone.
    pub kind: String,
    /// not_required, pending, cosigned or failed.
    pub cosign_status: String,
    /// `{receipt, signatures}`: the receipt as RFC 8785 canonical JSON is what each signature
    /// covers; `dpsctl receipt verify` checks it against GET /governance/receipt-keys.
    #[schema(value_type = Object)]
    pub document: Value,
}

/// One remediation request and how it went.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Remediation {
    pub remediation_id: String,
    /// planned, snapshotted, written, receipted, blocked, failed or undone.
    pub status: String,
    /// tokenize, mask or quarantine.
    pub action_type: String,
    /// reversible (tokenize, quarantine) or destructive (mask).
    pub safety_class: String,
    pub policy_id: String,
    pub policy_version: i32,
    pub connector_id: String,
    /// `bucket/key`.
    pub resource: String,
    pub bucket: String,
    pub object_key: String,
    pub finding_ids: Vec<String>,
    /// What the safety-class gate said when the action was planned: allowed; denied (the
    /// remediation ends `blocked`); or gate_unavailable when the tenant's remediation policy
    /// could not be read and the action proceeded (fail-open).
    pub gate: String,
    /// Why it failed or was blocked, or why its last attempt did not finish.
    pub reason: Option<String>,
    pub attempts: i32,
    pub etag_before: String,
    pub etag_after: Option<String>,
    /// Hex SHA-256 of the object's bytes before and after (after is null for quarantine).
    pub sha256_before: Option<String>,
    pub sha256_after: Option<String>,
    pub lkg_location: Option<ObjectLocation>,
    /// Whether the snapshot still exists (undo needs it).
    pub lkg_available: bool,
    /// Set when the copy at `lkg_location` may be the last copy of the original and is kept
    /// for good, never swept: `original_missing` (nothing is at the object's key any more) or
    /// `original_changed` (something else is).
    #[schema(pattern = "^(original_missing|original_changed)$")]
    pub lkg_kept_reason: Option<String>,
    /// What the object's bucket keeps of the content this remediation replaced or deleted, as
    /// its last posture check said: `kept` (versioning is on, so the original stays readable
    /// as a noncurrent version until the customer's own lifecycle removes it), `not_kept`, or
    /// `unknown` (S3 versioning suspended, GCS soft delete, Azure, or never checked). Null
    /// until written.
    pub prior_versions: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub executed_at: Option<OffsetDateTime>,
    /// Until when undo is possible: execution time plus the tenant's rollback window then.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub undo_until: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub undone_at: Option<OffsetDateTime>,
    pub undone_by: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
    /// Oldest first.
    pub receipts: Vec<RemediationReceipt>,
}

/// GET /governance/remediations query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RemediationQuery {
    /// A governance policy id.
    #[serde(default)]
    pub policy: Option<String>,
    /// A connector id.
    #[serde(default)]
    pub connector: Option<String>,
    /// planned, snapshotted, written, receipted, blocked, failed or undone.
    #[serde(default)]
    #[param(value_type = Option<crate::values::RemediationStatus>, inline)]
    pub status: Option<String>,
    /// tokenize, mask or quarantine.
    #[serde(default)]
    #[param(value_type = Option<crate::values::RemediationActionType>, inline)]
    pub action_type: Option<String>,
    /// 1 to 100, default 20.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// POST /governance/remediations/:id/undo.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoRequest {
    /// Restore even though the object changed since the remediation wrote it.
    #[serde(default)]
    pub force: bool,
}

/// One Ed25519 public key of the platform's receipt signing (RFC 8037).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReceiptKey {
    /// OKP.
    pub kty: String,
    /// Ed25519.
    pub crv: String,
    /// The public key, base64url without padding.
    pub x: String,
    pub kid: String,
    /// EdDSA.
    pub alg: String,
    #[serde(rename = "use")]
    pub use_: String,
}

/// GET /governance/receipt-keys: a JWKS (RFC 7517).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReceiptKeys {
    pub keys: Vec<ReceiptKey>,
}

//! Tenant settings (Area B, admin only): the rollback window, the remediation policy and
//! co-signing.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

pub use vocab::SafetyClass;

/// The rollback window: how long last-known-good snapshots are kept, which also bounds the
/// one-click undo of a remediation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LkgRetention {
    pub retention_hours: u32,
    /// The values `retention_hours` may take: 24, 72 and 168.
    pub allowed_options: Vec<u32>,
    /// The window of a tenant that never set one.
    pub default_hours: u32,
    /// When the window was last set; null while the tenant is on the default.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub updated_at: Option<OffsetDateTime>,
    /// Who last set it (the `sub` of their token); null while the tenant is on the default.
    pub updated_by: Option<String>,
    /// The most recent changes of value, newest first (at most 100).
    pub change_log: Vec<LkgRetentionChange>,
}

/// One change of the rollback window, as recorded by its `lkg_retention_changed` audit entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LkgRetentionChange {
    pub from_hours: u32,
    pub to_hours: u32,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub changed_at: OffsetDateTime,
    pub changed_by: String,
}

/// Body of `PUT /settings/lkg-retention`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LkgRetentionUpdate {
    /// Exactly 24, 72 or 168.
    #[schema(value_type = crate::values::RetentionHours, inline)]
    pub retention_hours: i64,
}

/// The remediation policy: which safety classes automated remediation may not use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RemediationPolicy {
    pub tenant_id: String,
    /// Denied classes. An empty list denies nothing.
    pub denied_safety_classes: Vec<SafetyClass>,
    /// Every class not denied.
    pub allowed_safety_classes: Vec<SafetyClass>,
    /// The classes whose denial is enforced today: destructive, read_only and reversible.
    /// Other classes are accepted in the deny-list but not gated yet.
    pub enforceable_safety_classes: Vec<SafetyClass>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<String>,
}

/// Body of `PUT /settings/remediation-policy`. Anything else (a non-list, an unknown class, an
/// unknown field) is refused with `invalid_safety_class`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemediationPolicyUpdate {
    pub denied_safety_classes: Vec<SafetyClass>,
}

/// Whether remediation receipts are co-signed by the tenant's own service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CosigningMode {
    Disabled,
    Optional,
    Required,
}

impl CosigningMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CosigningMode::Disabled => "disabled",
            CosigningMode::Optional => "optional",
            CosigningMode::Required => "required",
        }
    }
}

impl std::str::FromStr for CosigningMode {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "disabled" => Ok(CosigningMode::Disabled),
            "optional" => Ok(CosigningMode::Optional),
            "required" => Ok(CosigningMode::Required),
            _ => Err(()),
        }
    }
}

/// The co-signing decision. Certificate material is never part of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Cosigning {
    pub tenant_id: String,
    pub mode: CosigningMode,
    /// The tenant's co-signing service; null when none was set.
    pub endpoint_url: Option<String>,
    /// Whether the platform holds the client certificate it presents to co-signing services.
    /// `optional` and `required` are refused until it does.
    pub platform_provisioned: bool,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<String>,
}

/// Body of `PUT /settings/cosigning`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CosigningUpdate {
    pub mode: CosigningMode,
    /// An `https` URL; required unless `mode` is `disabled`.
    #[serde(default)]
    #[schema(pattern = r"^https://[^\s/?#@]+([/?#]\S*)?$")]
    pub endpoint_url: Option<String>,
}

//! What the settings are, as the domain knows them.

use time::OffsetDateTime;

/// The audit entries settings writes.
pub mod events {
    pub const LKG_RETENTION_CHANGED: audit::Kind = audit::Kind::LkgRetentionChanged;
    pub const REMEDIATION_POLICY_CHANGED: audit::Kind = audit::Kind::RemediationPolicyChanged;
    pub const COSIGNING_CHANGED: audit::Kind = audit::Kind::CosigningChanged;
}

pub use vocab::SafetyClass;

/// Whether remediation receipts are co-signed by the tenant's own service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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

/// The rollback window: how long last-known-good snapshots are kept, which also bounds the
/// one-click undo of a remediation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LkgRetention {
    pub retention_hours: u32,
    pub allowed_options: Vec<u32>,
    pub default_hours: u32,
    /// None while the tenant is on the default.
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<String>,
    /// The most recent changes of value, newest first (at most 100).
    pub change_log: Vec<LkgRetentionChange>,
}

/// One change of the rollback window, as its `lkg_retention_changed` audit entry recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LkgRetentionChange {
    pub from_hours: u32,
    pub to_hours: u32,
    pub changed_at: OffsetDateTime,
    pub changed_by: String,
}

/// Which safety classes automated remediation may not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemediationPolicy {
    pub tenant_id: String,
    /// An empty list denies nothing.
    pub denied_safety_classes: Vec<SafetyClass>,
    pub allowed_safety_classes: Vec<SafetyClass>,
    /// The classes whose denial is enforced today.
    pub enforceable_safety_classes: Vec<SafetyClass>,
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<String>,
}

/// Whether the platform holds the client certificate it presents to co-signing services: a
/// deployment fact the caller passes in, not a tenant setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatformCertificate {
    Provisioned,
    Missing,
}

/// A change of the co-signing decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosigningUpdate {
    pub mode: CosigningMode,
    /// An `https` URL; required unless `mode` is disabled.
    pub endpoint_url: Option<String>,
}

/// The co-signing decision. Certificate material is never part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosigning {
    pub tenant_id: String,
    pub mode: CosigningMode,
    pub endpoint_url: Option<String>,
    /// Whether the platform holds the client certificate it presents to co-signing services.
    pub platform_provisioned: bool,
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<String>,
}

//! Who is looking, and what they may do: the API's roles, as the API checks them.

use ids::Principal;

/// What the viewer may change, each the API's endpoint group of the same name, decided by the
/// same role requirements (`DPS_ROLE_REQUIREMENTS`). A page shows no control the viewer may
/// not use, and the server refuses it anyway.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct May {
    /// Create, test and delete connectors.
    pub connectors: bool,
    /// Start and cancel scans.
    pub scans: bool,
    /// Create, change and delete governance policies.
    pub governance_policies: bool,
    /// Run a reconciliation (a policy's dry run included).
    pub reconcile: bool,
    /// Read remediations and undo them.
    pub remediations: bool,
    /// Read and change the tenant's settings.
    pub settings: bool,
    /// List, create and delete alert channels.
    pub alert_channels: bool,
    /// Read the detokenization audit.
    pub detokenization_audit: bool,
    /// Create and change tokenization policies.
    pub tokenization_policies: bool,
    /// Read usage.
    pub usage: bool,
}

/// A signed-in viewer.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub principal: Principal,
    pub may: May,
    /// The session's CSRF token, which every form carries.
    pub csrf: String,
}

impl Viewer {
    /// Whether the viewer holds the admin role (what the header shows).
    pub fn is_admin(&self) -> bool {
        self.principal.has_role("admin")
    }
}

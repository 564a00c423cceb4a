//! Why a grant or a detokenization was refused.

use vault::VaultError;

/// Why a grant or a detokenization was refused. Messages never hold a value or a grant.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error("{0}")]
    Invalid(&'static str),
    #[error("a reason is required by the policy of a requested token")]
    ReasonRequired,
    #[error("the caller holds no role the policy of a requested token allows")]
    RoleNotAllowed,
    #[error("the purpose is not allowed by the policy of a requested token")]
    PurposeNotAllowed,
    #[error("the grant is not valid for this caller")]
    GrantInvalid,
    #[error("the grant has expired")]
    GrantExpired,
    #[error("the grant was already used")]
    GrantReused,
    #[error("a requested token is not covered by the grant")]
    NotInGrant,
    /// A grant is not issued for a revoked token: it could never be revealed.
    #[error("a requested token was revoked")]
    TokenRevoked,
    #[error("the grant signing key is unusable")]
    Key,
    /// The audit record could not be written, so nothing was revealed.
    #[error("the detokenization could not be audited")]
    AuditUnavailable,
    #[error(transparent)]
    Vault(#[from] VaultError),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl GrantError {
    /// The code an audit record of a refused attempt carries.
    pub(crate) fn audit_code(&self) -> &'static str {
        match self {
            GrantError::GrantInvalid => "GRANT_INVALID",
            GrantError::GrantExpired => "GRANT_EXPIRED",
            GrantError::GrantReused => "GRANT_NONCE_REUSED",
            GrantError::NotInGrant => "TOKEN_NOT_IN_GRANT",
            GrantError::Invalid(_) => "INVALID_INPUT",
            // Nothing was revealed because the service failed, not because the caller may not.
            GrantError::Key
            | GrantError::AuditUnavailable
            | GrantError::Vault(_)
            | GrantError::Database(_) => "SERVICE_UNAVAILABLE",
            _ => "DENIED",
        }
    }
}

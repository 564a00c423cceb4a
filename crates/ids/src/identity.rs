use std::fmt;

/// Why an identity value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("tenant id must be 1 to 64 characters of letters, digits, '.', '_' or '-'")]
    InvalidTenant,
    #[error("user id must be 1 to 256 characters with no control characters")]
    InvalidUser,
}

/// A tenant (workspace). Every tenant-owned row carries one and every query filters by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(String);

impl TenantId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for TenantId {
    type Err = IdentityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdentityError::InvalidTenant)
        }
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A user, as named by the `sub` claim of the identity provider's token.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserId(String);

impl UserId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for UserId {
    type Err = IdentityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok = (1..=256).contains(&s.len()) && !s.chars().any(char::is_control);
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdentityError::InvalidUser)
        }
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Roles the services give meaning to. Other role strings are kept and compared as given
/// (tokenization policies name their own `allowed_roles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Manages tenant settings, tokenization policies and governance policies.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
        }
    }
}

/// A verified caller: a user acting in one tenant with a set of roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: UserId,
    pub tenant_id: TenantId,
    pub roles: Vec<String>,
}

impl Principal {
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }

    pub fn is(&self, role: Role) -> bool {
        self.has_role(role.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_ids_are_restricted_to_a_safe_alphabet() {
        assert!("acme-corp_1.eu".parse::<TenantId>().is_ok());
        assert!("".parse::<TenantId>().is_err());
        assert!("a b".parse::<TenantId>().is_err());
        assert!("x".repeat(65).parse::<TenantId>().is_err());
        assert!("ten'ant".parse::<TenantId>().is_err());
    }

    #[test]
    fn user_ids_refuse_control_characters() {
        assert!("auth0|123".parse::<UserId>().is_ok());
        assert!("a\nb".parse::<UserId>().is_err());
        assert!("".parse::<UserId>().is_err());
    }
}

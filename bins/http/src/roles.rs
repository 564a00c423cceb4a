//! Who may call which endpoints: the spec's role model by default, stricter where a deployment
//! says so.
//!
//! The spec asks for an authenticated user of the tenant on every endpoint, and the admin role
//! only for tenant settings. Where it says nothing (the endpoints this project adds, and
//! governance policy writes, alert channels, reconciliation and remediation), the default is
//! admin. Two of the spec's endpoints are admin's too, because open to any user they would let
//! a user raise their own rights: tokenization policy writes (a policy says who may
//! detokenize) and a scan's deployment config (its worker token writes the findings that
//! drive remediation). `DPS_ROLE_REQUIREMENTS` changes a group's requirement at start-up:
//! `connectors=admin,scans=admin,usage=any`. A group takes a role name or `any` (any
//! authenticated user of the tenant); `settings` cannot be set below admin, which the spec
//! requires. An unknown group or a malformed entry stops the start-up.

use std::collections::BTreeMap;

use ids::Principal;

use crate::error::ApiError;

/// Declares [`Group`], its list, its names and a marker type per group (in [`groups`]), from one
/// table.
macro_rules! groups {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// A group of endpoints that share a role requirement.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum Group {
            $($(#[$doc])* $variant,)*
        }

        impl Group {
            pub const ALL: &'static [Group] = &[$(Group::$variant,)*];

            /// The group's name in `DPS_ROLE_REQUIREMENTS`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Group::$variant => $name,)*
                }
            }
        }

        /// The marker types of the groups, for [`crate::Permitted`].
        pub mod groups {
            use super::{Group, InGroup};
            $(
                #[doc = concat!("[`Group::", stringify!($variant), "`].")]
                #[derive(Debug)]
                pub struct $variant;
                impl InGroup for $variant {
                    const GROUP: Group = Group::$variant;
                }
            )*
        }
    };
}

groups! {
    /// tokens-api: POST /policies and PUT /policies/:id (reading them is any user's).
    TokenizationPolicies => "tokenization_policies",
    /// tokens-api: GET /usage.
    Usage => "usage",
    /// tokens-api: GET /audit/detokenizations (not in the spec).
    DetokenizationAudit => "detokenization_audit",
    /// platform-api: POST /connectors, DELETE /connectors/:id, POST /connectors/:id/test.
    Connectors => "connectors",
    /// platform-api: starting and cancelling scans.
    Scans => "scans",
    /// platform-api: GET /scans/:id/deployment-config, which hands out the scan's worker token.
    ScanDeployment => "scan_deployment",
    /// platform-api: custom classifier writes (not in the spec).
    Classifiers => "classifiers",
    /// platform-api: governance policy writes (create, replace, delete).
    GovernancePolicies => "governance_policies",
    /// platform-api: alert channels (not in the spec).
    AlertChannels => "alert_channels",
    /// platform-api: POST /governance/reconcile.
    Reconcile => "reconcile",
    /// platform-api: remediations: list, read and undo (not in the spec).
    Remediations => "remediations",
    /// platform-api: /settings/*.
    Settings => "settings",
}

/// What a group's caller must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// Any authenticated user of the tenant.
    AnyUser,
    /// This role.
    Role(String),
}

impl Requirement {
    fn admin() -> Self {
        Requirement::Role("admin".into())
    }
}

impl Group {
    /// The requirement without configuration: the spec's, or admin where it says nothing.
    pub fn default_requirement(self) -> Requirement {
        match self {
            Group::Usage | Group::Connectors | Group::Scans => Requirement::AnyUser,
            _ => Requirement::admin(),
        }
    }
}

/// Each group's requirement, read at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleRequirements(BTreeMap<Group, Requirement>);

impl Default for RoleRequirements {
    fn default() -> Self {
        Self(
            Group::ALL
                .iter()
                .map(|&g| (g, g.default_requirement()))
                .collect(),
        )
    }
}

impl RoleRequirements {
    /// The defaults, changed by `raw` (`DPS_ROLE_REQUIREMENTS`): comma-separated
    /// `group=role` or `group=any` entries.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, role) = entry
                .split_once('=')
                .map(|(n, r)| (n.trim(), r.trim()))
                .ok_or_else(|| format!("entry {entry:?} must be group=role or group=any"))?;
            let group = Group::ALL
                .iter()
                .copied()
                .find(|g| g.name() == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = Group::ALL.iter().map(|g| g.name()).collect();
                    format!(
                        "unknown group {name:?}; the groups are {}",
                        known.join(", ")
                    )
                })?;
            let valid_role = !role.is_empty()
                && role.len() <= 64
                && role
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
            if !valid_role {
                return Err(format!(
                    "the role of {name} must be a role name or any, not {role:?}"
                ));
            }
            let requirement = if role == "any" {
                Requirement::AnyUser
            } else {
                Requirement::Role(role.to_owned())
            };
            if group == Group::Settings && requirement != Requirement::admin() {
                return Err(
                    "settings requires admin, as the spec does; it cannot be changed".into(),
                );
            }
            out.0.insert(group, requirement);
        }
        Ok(out)
    }

    pub fn requirement(&self, group: Group) -> Requirement {
        self.0
            .get(&group)
            .cloned()
            .unwrap_or_else(|| group.default_requirement())
    }

    /// 403 unless `principal` meets the group's requirement.
    pub fn check(&self, group: Group, principal: &Principal) -> Result<(), ApiError> {
        match self.requirement(group) {
            Requirement::AnyUser => Ok(()),
            Requirement::Role(role) if principal.has_role(&role) => Ok(()),
            Requirement::Role(role) => Err(ApiError::forbidden(format!(
                "this operation requires the {role} role"
            ))),
        }
    }
}

/// A type that names one [`Group`], for [`crate::Permitted`].
pub trait InGroup {
    const GROUP: Group;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_follow_the_spec_and_admin_where_it_is_silent() {
        let rules = RoleRequirements::default();
        for g in [Group::Usage, Group::Connectors, Group::Scans] {
            assert_eq!(rules.requirement(g), Requirement::AnyUser, "{g:?}");
        }
        for g in [
            Group::TokenizationPolicies,
            Group::ScanDeployment,
            Group::Settings,
            Group::GovernancePolicies,
            Group::AlertChannels,
            Group::Remediations,
            Group::Reconcile,
        ] {
            assert_eq!(rules.requirement(g), Requirement::admin(), "{g:?}");
        }
    }

    #[test]
    fn a_deployment_sets_stricter_or_looser_roles_but_never_below_admin_for_settings() {
        let rules =
            RoleRequirements::parse(" connectors=admin, scans = operator ,alert_channels=any")
                .unwrap();
        assert_eq!(rules.requirement(Group::Connectors), Requirement::admin());
        assert_eq!(
            rules.requirement(Group::Scans),
            Requirement::Role("operator".into())
        );
        assert_eq!(
            rules.requirement(Group::AlertChannels),
            Requirement::AnyUser
        );
        assert_eq!(rules.requirement(Group::Usage), Requirement::AnyUser);
        assert_eq!(
            RoleRequirements::parse("").unwrap(),
            RoleRequirements::default()
        );
        for bad in [
            "settings=any",
            "settings=operator",
            "nope=admin",
            "connectors",
            "connectors=",
            "connectors=a b",
        ] {
            assert!(RoleRequirements::parse(bad).is_err(), "{bad}");
        }
        assert!(RoleRequirements::parse("settings=admin").is_ok());
    }
}

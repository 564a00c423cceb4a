//! A tokenization policy, as plain values: which mode each type takes, who may detokenize and
//! why, what happens to an item the rules cannot handle, and how long tokens live.

use std::collections::BTreeMap;

use crate::normalize::{NormalizeOptions, Region};
use crate::pii::{Mode, PiiType};

/// Where deterministic tokens are equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Across every policy of the tenant.
    Global,
    /// Within one policy only.
    Policy,
}

impl Scope {
    /// The name the API uses: `global` or `policy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Policy => "policy",
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "global" => Ok(Scope::Global),
            "policy" => Ok(Scope::Policy),
            _ => Err(()),
        }
    }
}

/// What happens to an item the policy's rule for its type cannot handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailureMode {
    /// The item fails.
    #[default]
    FailClosed,
    /// The raw value is still protected: tokenized in randomized mode, with the fallback
    /// stated in the item's result. A value is never returned untokenized.
    FailOpen,
}

impl FailureMode {
    /// The spec's spelling: `fail-closed` or `fail-open`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureMode::FailClosed => "fail-closed",
            FailureMode::FailOpen => "fail-open",
        }
    }
}

impl std::str::FromStr for FailureMode {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            // The spec's spelling, and the one this service used before it.
            "fail-closed" | "fail_closed" => Ok(FailureMode::FailClosed),
            "fail-open" | "fail_open" => Ok(FailureMode::FailOpen),
            _ => Err(()),
        }
    }
}

/// The rule for one PII type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TypeRule {
    /// How values of the type are tokenized.
    pub mode: Mode,
    /// Detections below this confidence are not tokenized (used by scans).
    pub min_confidence: f64,
    /// Where deterministic tokens of the type are equal.
    pub deterministic_scope: Scope,
}

/// A validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The policy's name.
    pub name: String,
    /// The rule for each PII type the policy handles.
    pub type_rules: BTreeMap<PiiType, TypeRule>,
    /// Roles that may detokenize.
    pub allowed_roles: Vec<String>,
    /// Purposes accepted when requesting a detokenization grant.
    pub allowed_purposes: Vec<String>,
    /// Whether a grant request must give a reason.
    pub require_reason: bool,
    /// What happens to an item its type's rule cannot handle.
    pub failure_mode: FailureMode,
    /// Tokens expire this long after they are created; `None` means never.
    pub token_ttl_seconds: Option<u64>,
    /// How to read a phone number written without a country code.
    pub default_region: Region,
}

impl Policy {
    /// The options to normalize values under this policy with.
    pub fn normalize_options(&self) -> NormalizeOptions {
        NormalizeOptions {
            default_region: self.default_region,
        }
    }

    /// The deterministic scope string of `rule` under policy `policy_id`: what deterministic
    /// tokens and fingerprints are computed with.
    pub fn scope_key(rule: &TypeRule, policy_id: &str) -> String {
        match rule.deterministic_scope {
            Scope::Global => "global".to_owned(),
            Scope::Policy => format!("policy:{policy_id}"),
        }
    }
}

/// Parses an ISO 3166 alpha-2 region the phone library knows (`US`, `CA`, `FR`).
pub fn parse_region(code: &str) -> Option<Region> {
    (code.len() == 2 && code.bytes().all(|b| b.is_ascii_uppercase()))
        .then(|| code.parse().ok())
        .flatten()
}

/// The longest token lifetime a policy may set: ten years.
pub const MAX_TOKEN_TTL_SECONDS: u64 = 10 * 366 * 24 * 3600;

#[cfg(test)]
mod tests {
    use super::FailureMode;

    #[test]
    fn failure_modes_read_in_the_spec_spelling_and_the_earlier_one_and_show_the_spec_one() {
        for (text, mode) in [
            ("fail-closed", FailureMode::FailClosed),
            ("fail_closed", FailureMode::FailClosed),
            ("fail-open", FailureMode::FailOpen),
            ("fail_open", FailureMode::FailOpen),
        ] {
            assert_eq!(text.parse::<FailureMode>(), Ok(mode), "{text}");
        }
        assert_eq!(FailureMode::FailClosed.as_str(), "fail-closed");
        assert_eq!(FailureMode::FailOpen.as_str(), "fail-open");
        for text in ["", "Fail-Closed", "fail closed", "failclosed", "open"] {
            assert!(text.parse::<FailureMode>().is_err(), "{text}");
        }
    }
}

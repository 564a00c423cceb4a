#![doc = include_str!("../README.md")]

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An action's safety class (`ActionSafetyClass`). Remediation actions declare one, and the
/// tenant's remediation policy can deny whole classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SafetyClass {
    ReadOnly,
    Reversible,
    Destructive,
    Infrastructure,
    Governance,
    InlineRuntime,
}

impl SafetyClass {
    /// Every class, in the order the API lists them.
    pub const ALL: [SafetyClass; 6] = [
        SafetyClass::ReadOnly,
        SafetyClass::Reversible,
        SafetyClass::Destructive,
        SafetyClass::Infrastructure,
        SafetyClass::Governance,
        SafetyClass::InlineRuntime,
    ];

    /// The wire spelling, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyClass::ReadOnly => "read_only",
            SafetyClass::Reversible => "reversible",
            SafetyClass::Destructive => "destructive",
            SafetyClass::Infrastructure => "infrastructure",
            SafetyClass::Governance => "governance",
            SafetyClass::InlineRuntime => "inline_runtime",
        }
    }

    /// The class of a wire spelling, if it is one.
    pub fn parse(raw: &str) -> Option<Self> {
        SafetyClass::ALL.into_iter().find(|c| c.as_str() == raw)
    }
}

// Stored as its wire spelling; an unknown one read back is an error, never dropped.
#[cfg(feature = "diesel")]
db::text_enum!(SafetyClass);

impl fmt::Display for SafetyClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no safety class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownSafetyClass;

impl FromStr for SafetyClass {
    type Err = UnknownSafetyClass;
    fn from_str(s: &str) -> Result<Self, UnknownSafetyClass> {
        SafetyClass::parse(s).ok_or(UnknownSafetyClass)
    }
}

#[cfg(test)]
mod tests {
    use super::SafetyClass;

    #[test]
    fn the_wire_spelling_is_serdes_and_reads_back() {
        for class in SafetyClass::ALL {
            let json = serde_json::to_string(&class).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            assert_eq!(class.as_str().parse::<SafetyClass>(), Ok(class));
            assert_eq!(class.to_string(), class.as_str());
        }
        assert!("ReadOnly".parse::<SafetyClass>().is_err());
        assert!("".parse::<SafetyClass>().is_err());
    }
}

/// The per-item error codes of tokenization. Each is a stable string clients can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemCode {
    /// The value is empty or only whitespace.
    EmptyValue,
    /// The `pii_type` is not one of the supported codes.
    UnsupportedPiiType,
    /// The value is not a valid instance of its type.
    InvalidValue,
    /// The policy has no rule for the item's type.
    NoRuleForType,
    /// The value is below the format-preserving floor and no surrogate could be made.
    SurrogateExhausted,
}

impl ItemCode {
    /// The code as clients see it, such as `INVALID_VALUE`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemCode::EmptyValue => "EMPTY_VALUE",
            ItemCode::UnsupportedPiiType => "UNSUPPORTED_PII_TYPE",
            ItemCode::InvalidValue => "INVALID_VALUE",
            ItemCode::NoRuleForType => "NO_RULE_FOR_TYPE",
            ItemCode::SurrogateExhausted => "SURROGATE_EXHAUSTED",
        }
    }
}

/// Why a value was refused. The reason is a fixed sentence: it never contains any part of the
/// value, so it can go into a response or a log line as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ValueError {
    /// The per-item error code.
    pub code: ItemCode,
    /// A fixed sentence saying what is wrong, without any part of the value.
    pub reason: &'static str,
}

impl ValueError {
    pub(crate) const fn invalid(reason: &'static str) -> Self {
        Self {
            code: ItemCode::InvalidValue,
            reason,
        }
    }

    pub(crate) const EMPTY: Self = Self {
        code: ItemCode::EmptyValue,
        reason: "the value is empty",
    };
}

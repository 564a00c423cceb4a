#![doc = include_str!("../README.md")]

pub mod detokenizations;
pub mod entries;
pub mod policies;

/// One invalid field of a request, for a 400 that names every problem at once.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldProblem {
    pub field: String,
    pub problem: &'static str,
}

/// Why a read or a policy change failed. None of the messages holds a value.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldProblem>),
    #[error("{0}")]
    InvalidRequest(&'static str),
    /// A request names a PII type the service does not know (a list's `pii_type` filter).
    #[error("pii_type is not a supported PII type")]
    UnsupportedPiiType,
    #[error("no such policy")]
    PolicyNotFound,
    #[error("the cursor is not one this service issued for this list")]
    BadCursor,
    /// A stored policy no longer validates (it was edited outside the service).
    #[error("a stored policy is unreadable")]
    CorruptPolicy,
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl From<paging::BadCursor> for RecordsError {
    fn from(_: paging::BadCursor) -> Self {
        RecordsError::BadCursor
    }
}

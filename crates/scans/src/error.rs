//! What can go wrong in a scan. Every other module of the crate builds on this one.

use connectors::FieldError;
use paging::BadCursor;

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("scan not found")]
    NotFound,
    #[error("finding not found")]
    FindingNotFound,
    /// A connector named in the request is not the tenant's.
    #[error("connector not found")]
    ConnectorNotFound(String),
    #[error("the scan request is invalid")]
    Invalid(Vec<FieldError>),
    /// The scan already ended (cancel of a finished scan).
    #[error("the scan is already {0}")]
    Finished(&'static str),
    #[error("the cursor is not valid for this list")]
    BadCursor,
    #[error("a stored scan is unreadable")]
    CorruptRow,
    #[error("database error")]
    Database(#[source] diesel::result::Error),
    #[error("no database connection available")]
    Pool,
    /// A worker's token is not the scan's.
    #[error("the worker token does not match the scan")]
    Unauthorized,
    /// The coordinator API could not be reached, or answered what a worker cannot use.
    #[error("the coordinator: {0}")]
    Coordinator(String),
}

impl From<diesel::result::Error> for ScanError {
    fn from(e: diesel::result::Error) -> Self {
        ScanError::Database(e)
    }
}

/// A database error stays one (a timeout is 503, not a corrupt row); a key that cannot be
/// unwrapped is a stored row the service cannot read.
impl From<keys::KeyError> for ScanError {
    fn from(e: keys::KeyError) -> Self {
        match e {
            keys::KeyError::Database(e) => ScanError::Database(e),
            keys::KeyError::Crypto => ScanError::CorruptRow,
        }
    }
}

impl From<BadCursor> for ScanError {
    fn from(_: BadCursor) -> Self {
        ScanError::BadCursor
    }
}

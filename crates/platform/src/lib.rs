#![doc = include_str!("../README.md")]

pub mod connectors;
pub mod findings;

/// Why a cross-owner operation failed: the failing owner's own error.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error(transparent)]
    Connector(#[from] ::connectors::ConnectorError),
    #[error(transparent)]
    Scan(#[from] scans::ScanError),
    /// Governance's part of a view could not be read.
    #[error("database error")]
    Governance(#[source] diesel::result::Error),
    /// The connector's remediations between their snapshot and their receipt, which its
    /// deletion would cut short: it waits for them.
    #[error("the connector has remediations under way; delete it once they end")]
    RemediationsUnderWay(Vec<uuid::Uuid>),
}

impl PlatformError {
    /// The database error behind this one, if it is one.
    pub fn database(&self) -> Option<&diesel::result::Error> {
        match self {
            PlatformError::Connector(::connectors::ConnectorError::Database(e))
            | PlatformError::Scan(scans::ScanError::Database(e))
            | PlatformError::Governance(e) => Some(e),
            _ => None,
        }
    }
}

/// A failure of the transaction itself (begin, commit) rather than of an owner's statement.
impl From<diesel::result::Error> for PlatformError {
    fn from(e: diesel::result::Error) -> Self {
        PlatformError::Scan(scans::ScanError::Database(e))
    }
}

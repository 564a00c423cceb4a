#![doc = include_str!("../README.md")]

pub mod connectors;
pub mod data_map;
pub mod findings;
pub mod overview;

/// Why a cross-owner operation failed: the failing owner's own error.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error(transparent)]
    Connector(#[from] ::connectors::ConnectorError),
    #[error(transparent)]
    Scan(#[from] scans::ScanError),
    /// Posture's part of a view (risk scores, matched policies, remediation status) could
    /// not be read.
    #[error("database error")]
    Posture(#[source] diesel::result::Error),
}

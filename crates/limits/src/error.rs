//! What can go wrong in limits. Every other module of the crate builds on this one.

#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

//! What can go wrong with a key. Every other module of the crate builds on this one.

/// Why a key operation failed. None of the messages holds a key or a value.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key could not be unwrapped, or something could not be sealed or opened: the bytes or
    /// their associated data changed, or the key version is unknown.
    #[error("a cryptographic operation failed")]
    Crypto,
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

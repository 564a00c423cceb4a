#![doc = include_str!("../README.md")]

mod aead;
mod master;
mod ring_cache;

pub use aead::{DataKey, NONCE_LEN, SealedSecret};
pub use master::{MasterKey, MasterKeyError};
pub use ring_cache::{KeyRing, TenantKeys, add_version, tenants};

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

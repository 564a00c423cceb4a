#![doc = include_str!("../README.md")]

mod aead;
mod error;
mod master;
mod ring_cache;

pub use aead::{DataKey, NONCE_LEN, SealedSecret};
pub use error::KeyError;
pub use master::{MasterKey, MasterKeyError};
#[cfg(feature = "test-keys")]
pub use ring_cache::add_first_version_from_root;
pub use ring_cache::{KeyRing, TenantKeys, add_version, tenants};

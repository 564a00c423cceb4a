#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod error;
mod ff1;
mod fpe;
mod lookup;
pub mod normalize;
mod numerals;
mod pii;
pub mod policy;
mod randomized;
mod secret;
mod shape;
#[cfg(test)]
mod tests;
mod token;

pub use error::{ItemCode, ValueError};
pub use fpe::{FPE_MIN_DOMAIN, FpeKey};
pub use lookup::lookup;
pub use normalize::{NormalizeOptions, Normalized, Region, normalize, warm_up};
pub use pii::{Category, Mode, PiiType};
pub use policy::{FailureMode, Policy, Scope, TypeRule};
pub use randomized::TokenIdCipher;
pub use secret::Secret;
pub use token::{
    DETERMINISTIC_PREFIX, FormatPreserving, MacKey, RANDOMIZED_PREFIX, RandomError, Surrogate,
    deterministic_token, fingerprint, fingerprint_as_read, fingerprint_as_written,
    format_preserving, looks_like_token, randomized_token, surrogate_for,
};

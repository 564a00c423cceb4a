#![doc = include_str!("../README.md")]

mod canonical;
mod document;
mod error;
mod json;
mod key;
mod number;
mod signer;
mod verify;

pub use canonical::canonical;
pub use document::{Alg, Signature, SignedReceipt, SignerRole};
pub use error::{CanonicalError, SignError, VerifyError};
pub use json::parse_json;
pub use key::{JwkError, PublicKey};
pub use signer::{SIGNING_LABEL, Signer};
pub use verify::{Verified, verify, verify_cosignature, verify_detached};

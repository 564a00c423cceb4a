#![doc = include_str!("../README.md")]

pub mod cursor;
pub mod entries;
pub mod keys;
pub mod policies;
pub mod tokenize;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

pub use cursor::CursorKey;
pub use keys::{KeyRing, SealedSecret, TenantKeys};

/// One invalid field of a request, for a 400 that names every problem at once.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldProblem {
    pub field: String,
    pub problem: &'static str,
}

/// Why a vault operation failed. None of the messages holds a value or a key.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldProblem>),
    #[error("{0}")]
    InvalidRequest(&'static str),
    #[error("no such policy")]
    PolicyNotFound,
    #[error("no such token")]
    TokenNotFound,
    #[error("the tenant's monthly token quota is used up")]
    QuotaExceeded,
    #[error("this idempotency_key was used with a different request body")]
    IdempotencyKeyReused,
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("the cursor is not one this service issued for this list")]
    BadCursor,
    /// A stored policy no longer validates (it was edited outside the service).
    #[error("a stored policy is unreadable")]
    CorruptPolicy,
    /// A key could not be unwrapped or a value could not be sealed or opened.
    #[error("a cryptographic operation failed")]
    Crypto,
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// The root of the key hierarchy: 32 bytes that wrap every tenant's data keys.
///
/// Security: it is read once at start-up and lives only in memory; `Debug` never prints it.
pub struct MasterKey([u8; 32]);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MasterKeyError {
    #[error("the master key must be base64 of exactly 32 bytes")]
    Malformed,
    #[error("the master key file cannot be read: {0}")]
    Unreadable(String),
}

impl MasterKey {
    /// Parses base64 of exactly 32 bytes (surrounding whitespace ignored).
    pub fn from_base64(text: &str) -> Result<Self, MasterKeyError> {
        let bytes = STANDARD
            .decode(text.trim())
            .map_err(|_| MasterKeyError::Malformed)?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| MasterKeyError::Malformed)?;
        Ok(Self(bytes))
    }

    /// Reads a file holding the base64 key.
    pub fn from_file(path: &std::path::Path) -> Result<Self, MasterKeyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| MasterKeyError::Unreadable(format!("{}: {e}", path.display())))?;
        Self::from_base64(&text)
    }

    /// The raw key, for wrapping and unwrapping tenant data keys.
    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A key for another purpose, derived from this one with HKDF-SHA256 under `label` (the
    /// cursor signing key, for example), so the master key itself is used for wrapping only.
    pub fn derive(&self, label: &[u8]) -> [u8; 32] {
        struct Len;
        impl ring::hkdf::KeyType for Len {
            fn len(&self) -> usize {
                32
            }
        }
        let prk = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, b"dps-master-derive-v1")
            .extract(&self.0);
        let info = [label];
        let mut out = [0u8; 32];
        // Expanding 32 bytes from SHA-256 is always within HKDF's limit of 255 blocks, so
        // neither step can fail.
        match prk.expand(&info, Len).map(|okm| okm.fill(&mut out)) {
            Ok(Ok(())) => out,
            _ => unreachable!("HKDF-SHA256 expands 32 bytes"),
        }
    }

    /// Generates a fresh random key and returns it with its base64 form (for `dpsctl up`).
    pub fn generate() -> Result<(Self, String), MasterKeyError> {
        use ring::rand::SecureRandom as _;
        let mut bytes = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| MasterKeyError::Unreadable("system random generator failed".into()))?;
        let text = STANDARD.encode(bytes);
        Ok((Self(bytes), text))
    }
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_exactly_32_bytes() {
        let (_, text) = MasterKey::generate().unwrap();
        assert!(MasterKey::from_base64(&format!(" {text}\n")).is_ok());
        assert_eq!(
            MasterKey::from_base64("AAAA").unwrap_err(),
            MasterKeyError::Malformed
        );
        assert_eq!(
            MasterKey::from_base64("not base64!").unwrap_err(),
            MasterKeyError::Malformed
        );
    }

    #[test]
    fn debug_is_redacted() {
        let (key, text) = MasterKey::generate().unwrap();
        assert!(!format!("{key:?}").contains(&text));
    }
}

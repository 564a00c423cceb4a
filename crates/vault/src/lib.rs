#![doc = include_str!("../README.md")]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

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
    #[expect(
        dead_code,
        reason = "data-key wrapping arrives with the tokenization API"
    )]
    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
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

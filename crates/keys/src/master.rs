//! The root of the key hierarchy and the one place it is loaded from.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use boot::{ConfigError, Env};

/// 32 bytes that wrap every tenant's key versions and from which every purpose key is derived.
///
/// Security: it is read once at start-up and lives only in memory; `Debug` never prints it.
pub struct MasterKey([u8; 32]);

impl Drop for MasterKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MasterKeyError {
    #[error("the master key must be base64 of exactly 32 bytes")]
    Malformed,
    #[error("the master key file cannot be read: {0}")]
    Unreadable(String),
}

impl MasterKey {
    /// The master key every binary runs with: `DPS_MASTER_KEY` (base64 of 32 bytes) or, when it
    /// is unset, the file `DPS_MASTER_KEY_FILE` names. The error names the variable at fault and
    /// never holds key material.
    pub fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        match (env.get("DPS_MASTER_KEY"), env.get("DPS_MASTER_KEY_FILE")) {
            (Some(text), _) => Self::from_base64(&text)
                .map_err(|e| ConfigError::new("DPS_MASTER_KEY", e.to_string())),
            (None, Some(path)) => Self::from_file(std::path::Path::new(&path))
                .map_err(|e| ConfigError::new("DPS_MASTER_KEY_FILE", e.to_string())),
            (None, None) => Err(ConfigError::new(
                "DPS_MASTER_KEY",
                "set DPS_MASTER_KEY (base64 of 32 bytes) or DPS_MASTER_KEY_FILE",
            )),
        }
    }

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

    /// Generates a fresh random key and returns it with its base64 form (for the dev stack and
    /// tests).
    pub fn generate() -> Result<(Self, String), MasterKeyError> {
        use ring::rand::SecureRandom as _;
        let mut bytes = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| MasterKeyError::Unreadable("system random generator failed".into()))?;
        let text = STANDARD.encode(bytes);
        Ok((Self(bytes), text))
    }

    /// The raw key, for wrapping and unwrapping tenant key versions.
    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A key for another purpose (list cursors, grant signing, worker tokens), derived with
    /// HKDF-SHA256 under `label`, so that the master key itself is used for wrapping only and no
    /// purpose key reveals another.
    pub fn derive(&self, label: &[u8]) -> [u8; 32] {
        crate::aead::hkdf32(b"dps-master-derive-v1", &self.0, label)
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

    #[test]
    fn the_loader_names_the_variable_and_never_the_key() {
        let (_, text) = MasterKey::generate().unwrap();
        let given = |k: &str| (k == "DPS_MASTER_KEY").then(|| text.clone());
        assert!(MasterKey::from_env(&Env::new(&given)).is_ok());
        let bad = |k: &str| (k == "DPS_MASTER_KEY").then(|| "c2VjcmV0".to_owned());
        let e = MasterKey::from_env(&Env::new(&bad)).unwrap_err();
        assert_eq!(e.variable, "DPS_MASTER_KEY");
        assert!(!e.to_string().contains("c2VjcmV0"));
        let file = |k: &str| (k == "DPS_MASTER_KEY_FILE").then(|| "/nonexistent/key".to_owned());
        assert_eq!(
            MasterKey::from_env(&Env::new(&file)).unwrap_err().variable,
            "DPS_MASTER_KEY_FILE"
        );
        let none = |_: &str| None;
        assert!(MasterKey::from_env(&Env::new(&none)).is_err());
    }

    #[test]
    fn purposes_get_distinct_keys() {
        let (key, _) = MasterKey::generate().unwrap();
        assert_ne!(key.derive(b"cursor"), key.derive(b"grant-signing-v1"));
        assert_eq!(key.derive(b"cursor"), key.derive(b"cursor"));
    }
}

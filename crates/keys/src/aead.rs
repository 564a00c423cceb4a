//! Sealing with AES-256-GCM, and the HKDF expansion every derived key comes from.

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;
use ring::rand::{SecureRandom as _, SystemRandom};

use crate::error::KeyError;

/// Bytes of an AES-GCM nonce, which every sealed value starts with.
pub const NONCE_LEN: usize = 12;

/// HKDF output length: 32 bytes.
struct Len32;

impl hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

/// HKDF-SHA256 of `root` under `salt`, expanded with `label` to 32 bytes. Expanding 32 bytes from
/// SHA-256 is always within HKDF's limit of 255 blocks, so neither step can fail.
pub(crate) fn hkdf32(salt: &[u8], root: &[u8; 32], label: &[u8]) -> [u8; 32] {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, salt).extract(root);
    let info = [label];
    let mut out = [0u8; 32];
    match prk.expand(&info, Len32).map(|okm| okm.fill(&mut out)) {
        Ok(Ok(())) => out,
        _ => unreachable!("HKDF-SHA256 expands 32 bytes"),
    }
}

/// An AES-256-GCM key. Sealed bytes are `nonce || ciphertext || tag`; the associated data is
/// the caller's, and binds what was sealed to where it belongs (a tenant and a record).
pub struct DataKey(LessSafeKey);

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(<redacted>)")
    }
}

impl DataKey {
    pub(crate) fn new(bytes: &[u8; 32]) -> Result<Self, KeyError> {
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| KeyError::Crypto)?;
        Ok(Self(LessSafeKey::new(key)))
    }

    /// Seals `plaintext` under a fresh random nonce.
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, KeyError> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| KeyError::Crypto)?;
        self.seal_with_nonce(nonce, aad, plaintext)
    }

    /// Seals with a nonce the caller drew from the system random generator (a batch draws all
    /// its nonces at once). A nonce must never repeat under a key: 96 random bits make that as
    /// unlikely as AES-GCM's bounds assume.
    pub fn seal_with_nonce(
        &self,
        nonce: [u8; NONCE_LEN],
        aad: &[u8],
        plaintext: &[u8],
    ) -> Result<Vec<u8>, KeyError> {
        // Sealed where it will stay: one buffer, sized once, that holds the plaintext only
        // until it is enciphered in place (and is wiped if that fails).
        let mut out = Vec::with_capacity(NONCE_LEN + plaintext.len() + AES_256_GCM.tag_len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plaintext);
        let sealed = self.0.seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut out[NONCE_LEN..],
        );
        match sealed {
            Ok(tag) => {
                out.extend_from_slice(tag.as_ref());
                Ok(out)
            }
            Err(_) => {
                zeroize::Zeroize::zeroize(&mut out);
                Err(KeyError::Crypto)
            }
        }
    }

    /// Opens what [`DataKey::seal`] produced; fails on any change to the bytes or the
    /// associated data.
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, KeyError> {
        if sealed.len() < NONCE_LEN + 16 {
            return Err(KeyError::Crypto);
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| KeyError::Crypto)?;
        let mut body = body.to_vec();
        // Opened in place: the plaintext is the start of `body`, returned without a copy that
        // would be left behind unwiped.
        let length = match self.0.open_in_place(nonce, Aad::from(aad), &mut body) {
            Ok(plain) => plain.len(),
            Err(_) => return Err(KeyError::Crypto),
        };
        zeroize::Zeroize::zeroize(&mut body[length..]);
        body.truncate(length);
        Ok(body)
    }
}

/// A secret sealed under a tenant's data key: the key version it needs and the sealed bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSecret {
    pub key_version: i32,
    pub sealed: Vec<u8>,
}

/// The associated data of a sealed secret: its purpose and the record it is bound to.
pub(crate) fn secret_aad(purpose: &str, binding: &[u8]) -> Vec<u8> {
    let mut aad = b"dps-secret\0".to_vec();
    aad.extend_from_slice(purpose.as_bytes());
    aad.push(0);
    aad.extend_from_slice(binding);
    aad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_bytes_open_only_with_their_associated_data() {
        let key = DataKey::new(&[7u8; 32]).unwrap();
        let sealed = key.seal(b"tenant-a", b"123-45-6789").unwrap();
        assert_eq!(key.open(b"tenant-a", &sealed).unwrap(), b"123-45-6789");
        assert!(key.open(b"tenant-b", &sealed).is_err());
        let mut changed = sealed.clone();
        changed[NONCE_LEN] ^= 1;
        assert!(key.open(b"tenant-a", &changed).is_err());
        assert!(key.open(b"tenant-a", &sealed[..NONCE_LEN]).is_err());
        assert_ne!(
            key.seal(b"tenant-a", b"x").unwrap(),
            key.seal(b"tenant-a", b"x").unwrap(),
            "every seal draws a fresh nonce"
        );
    }
}

//! The service's grant signing keys: Ed25519, derived from the master key per version, so that
//! every replica signs and verifies with the same key without another secret to distribute.
//! `DPS_GRANT_KEY_VERSION` names the version that signs; the one before it still verifies,
//! which covers grants issued just before a rotation (they live 300 seconds).

use josekit::jws::alg::eddsa::{EddsaJwsSigner, EddsaJwsVerifier};
use josekit::jws::{EdDSA, JwsVerifier};
use ring::signature::{Ed25519KeyPair, KeyPair as _};

use crate::error::GrantError;

/// RFC 8410 PKCS#8 v1 prefix of an Ed25519 private key (the 32-byte seed follows).
const PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// RFC 8410 SubjectPublicKeyInfo prefix of an Ed25519 public key (32 bytes follow).
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The signer of the current version and the verifiers of the current and previous ones.
pub struct GrantKeys {
    kid: String,
    signer: EddsaJwsSigner,
    verifiers: Vec<(String, EddsaJwsVerifier)>,
}

impl std::fmt::Debug for GrantKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantKeys")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

fn kid(version: u32) -> String {
    format!("grant-v{version}")
}

fn pair(
    master: &::keys::MasterKey,
    version: u32,
) -> Result<(EddsaJwsSigner, EddsaJwsVerifier), GrantError> {
    let seed = master.derive(format!("grant-signing-v{version}").as_bytes());
    let public = Ed25519KeyPair::from_seed_unchecked(&seed)
        .map_err(|_| GrantError::Key)?
        .public_key()
        .as_ref()
        .to_vec();
    let mut pkcs8 = PKCS8_PREFIX.to_vec();
    pkcs8.extend_from_slice(&seed);
    let mut spki = SPKI_PREFIX.to_vec();
    spki.extend_from_slice(&public);
    let mut signer = EdDSA.signer_from_der(&pkcs8).map_err(|_| GrantError::Key)?;
    signer.set_key_id(kid(version));
    pkcs8.fill(0);
    let verifier = EdDSA
        .verifier_from_der(&spki)
        .map_err(|_| GrantError::Key)?;
    Ok((signer, verifier))
}

impl GrantKeys {
    pub fn new(master: &::keys::MasterKey, version: u32) -> Result<Self, GrantError> {
        let version = version.max(1);
        let (signer, current) = pair(master, version)?;
        let mut verifiers = vec![(kid(version), current)];
        if version > 1 {
            verifiers.push((kid(version - 1), pair(master, version - 1)?.1));
        }
        Ok(Self {
            kid: kid(version),
            signer,
            verifiers,
        })
    }

    pub(crate) fn signer(&self) -> &EddsaJwsSigner {
        &self.signer
    }

    pub(crate) fn verifier(&self, kid: &str) -> Option<&dyn JwsVerifier> {
        self.verifiers
            .iter()
            .find(|(k, _)| k == kid)
            .map(|(_, v)| v as &dyn JwsVerifier)
    }
}

//! The platform's receipt signing key: Ed25519, derived from the master key, so that every
//! replica signs with the same key and there is no other secret to distribute or back up.
//!
//! Its key id is the public key's RFC 7638 thumbprint, so a customer can recompute it from the
//! JWKS, and a future key (a new derivation label) can never be confused with this one: the
//! JWKS can then serve both, and receipts signed before a rotation keep verifying.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use keys::MasterKey;
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};

use crate::canonical::canonical;
use crate::document::{Alg, Signature, SignedReceipt, SignerRole, receipt_id};
use crate::error::SignError;
use crate::key::PublicKey;

/// The label under which the signing seed is derived from the master key. Changing it changes
/// the key and its kid; receipts already issued then need the old key in the JWKS.
pub const SIGNING_LABEL: &[u8] = b"dps-receipt-signing-v1";

/// Signs receipts for the platform. `Debug` shows the kid only.
pub struct Signer {
    pair: Ed25519KeyPair,
    public: PublicKey,
    kid: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The platform's signer: the Ed25519 key whose seed is `master.derive(SIGNING_LABEL)`.
    /// The same master key always gives the same key and kid.
    pub fn from_master(master: &MasterKey) -> Self {
        let seed = master.derive(SIGNING_LABEL);
        // `from_seed_unchecked` only refuses a seed that is not 32 bytes long.
        #[expect(clippy::expect_used, reason = "any 32 bytes are an Ed25519 seed")]
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).expect("32-byte seed");
        let mut public = [0u8; 32];
        public.copy_from_slice(pair.public_key().as_ref());
        let public = PublicKey::from(public);
        Signer {
            pair,
            kid: public.thumbprint(),
            public,
        }
    }

    /// The key id that every signature of this signer carries: the RFC 7638 thumbprint of its
    /// public key.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The platform's signature entry for `receipt`: Ed25519 over `canonical(receipt)`.
    pub fn sign(&self, receipt: &Value) -> Result<Signature, SignError> {
        receipt_id(receipt).ok_or(SignError::NotAReceipt)?;
        let message = canonical(receipt)?;
        Ok(Signature {
            signer: SignerRole::Platform,
            alg: Alg::EdDsa,
            kid: self.kid.clone(),
            signature: URL_SAFE_NO_PAD.encode(self.pair.sign(&message)),
        })
    }

    /// `receipt` signed by the platform: the document with its one signature.
    pub fn sign_receipt(&self, receipt: Value) -> Result<SignedReceipt, SignError> {
        let signature = self.sign(&receipt)?;
        Ok(SignedReceipt {
            receipt,
            signatures: vec![signature],
        })
    }

    /// The JWKS that verifies this signer's receipts, as `GET /governance/receipt-keys` serves
    /// it: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":…,"kid":…,"alg":"EdDSA","use":"sig"}]}`.
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.public.to_jwk()] })
    }
}

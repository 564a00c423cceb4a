//! Checking a signed receipt offline: what `dpsctl receipt verify` and a customer do, with
//! nothing but the document and the platform's JWKS.
//!
//! The JWKS is the trust anchor: a kid only finds a key in it, and the key decides. Which JWKS
//! to trust (the one `GET /governance/receipt-keys` served, kept by the customer) is the
//! caller's choice; a document cannot bring its own key.

use serde_json::Value;

use crate::canonical::canonical;
use crate::document::{SignedReceipt, SignerRole};
use crate::error::VerifyError;
use crate::key::PublicKey;

/// A receipt whose platform signature verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub receipt_id: String,
    /// The kid of the platform key that verified it.
    pub kid: String,
    /// The co-signer's kid when the document carries a co-signature. [`verify`] does not check
    /// it (it needs the co-signer's key): [`verify_cosignature`] does.
    pub cosigner_kid: Option<String>,
}

/// Checks the platform signature of `document` against `jwks`: the document's shape, then
/// the Ed25519 signature over `canonical(receipt)` with the JWKS key of the signature's kid.
/// Member order and whitespace in the document do not matter; any change of a value does.
pub fn verify(document: &Value, jwks: &Value) -> Result<Verified, VerifyError> {
    let document = SignedReceipt::from_value(document)?;
    let platform = document
        .signature(SignerRole::Platform)
        .ok_or(VerifyError::NoPlatformSignature)?;
    let key = PublicKey::find_in_jwks(jwks, &platform.kid)?
        .ok_or_else(|| VerifyError::UnknownKid(platform.kid.clone()))?;
    let message =
        canonical(&document.receipt).map_err(|e| VerifyError::Malformed(e.to_string()))?;
    if !key.verifies(&message, &platform.signature) {
        return Err(VerifyError::BadSignature);
    }
    Ok(Verified {
        receipt_id: document.receipt_id().to_owned(),
        kid: platform.kid.clone(),
        cosigner_kid: document
            .signature(SignerRole::Cosigner)
            .map(|s| s.kid.clone()),
    })
}

/// Checks the co-signature of `document` with the co-signer's `key` (for instance
/// [`PublicKey::from_jwk`] of the key the tenant registered). Only the co-signature: call
/// [`verify`] for the platform's.
pub fn verify_cosignature(document: &Value, key: &PublicKey) -> Result<(), VerifyError> {
    let document = SignedReceipt::from_value(document)?;
    let cosignature = document
        .signature(SignerRole::Cosigner)
        .ok_or(VerifyError::NoCosignature)?;
    let message =
        canonical(&document.receipt).map_err(|e| VerifyError::Malformed(e.to_string()))?;
    if key.verifies(&message, &cosignature.signature) {
        Ok(())
    } else {
        Err(VerifyError::BadSignature)
    }
}

/// Whether `signature` (base64url without padding) is `key`'s Ed25519 signature of
/// `canonical_bytes`: for checking a co-signing service's answer before it is stored.
pub fn verify_detached(canonical_bytes: &[u8], signature: &str, key: &PublicKey) -> bool {
    key.verifies(canonical_bytes, signature)
}

//! The signed receipt document: what is stored, returned by the API and handed to a customer.
//!
//! ```json
//! {
//!   "receipt": { "receipt_id": "…", … },
//!   "signatures": [
//!     {"signer": "platform", "alg": "EdDSA", "kid": "…", "signature": "…"},
//!     {"signer": "cosigner", "alg": "EdDSA", "kid": "…", "signature": "…"}
//!   ]
//! }
//! ```
//!
//! Every signature covers the same bytes, `canonical(receipt)`, and nothing else: neither
//! signature covers the other, so a co-signature can be added after the platform signed without
//! touching the platform's, and removing it leaves a receipt that still verifies (whether one
//! was required is the tenant's setting, not something the document can prove).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::canonical;
use crate::error::{CanonicalError, VerifyError};
use crate::key::PublicKey;

/// A receipt and its signatures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedReceipt {
    /// A JSON object with a non-empty string `receipt_id`; its other fields are the producer's.
    pub receipt: Value,
    /// One platform signature, then at most one co-signature.
    pub signatures: Vec<Signature>,
}

/// One signature over `canonical(receipt)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    pub signer: SignerRole,
    pub alg: Alg,
    /// The platform's: its key's RFC 7638 thumbprint, found in the JWKS. A co-signer's: the
    /// key id the tenant registered for its co-signing service.
    pub kid: String,
    /// The 64-byte Ed25519 signature, base64url without padding.
    pub signature: String,
}

/// Who signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignerRole {
    /// The platform, with the key its JWKS serves.
    Platform,
    /// The tenant's own co-signing service.
    Cosigner,
}

impl SignerRole {
    pub fn as_str(self) -> &'static str {
        match self {
            SignerRole::Platform => "platform",
            SignerRole::Cosigner => "cosigner",
        }
    }
}

/// The signature algorithm; Ed25519 (RFC 8032, pure, no pre-hash) is the only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Alg {
    #[serde(rename = "EdDSA")]
    EdDsa,
}

/// The receipt id of `receipt`, if it is a receipt: an object with a non-empty string
/// `receipt_id`.
pub(crate) fn receipt_id(receipt: &Value) -> Option<&str> {
    receipt
        .get("receipt_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
}

impl SignedReceipt {
    /// Reads a document, checking its shape: the receipt is a receipt, and there is at most
    /// one signature per signer. Signatures are not checked here.
    pub fn from_value(document: &Value) -> Result<Self, VerifyError> {
        let parsed = SignedReceipt::deserialize(document)
            .map_err(|e| VerifyError::Malformed(e.to_string()))?;
        if receipt_id(&parsed.receipt).is_none() {
            return Err(VerifyError::Malformed(
                "receipt must be an object with a non-empty string receipt_id".into(),
            ));
        }
        for role in [SignerRole::Platform, SignerRole::Cosigner] {
            if parsed
                .signatures
                .iter()
                .filter(|s| s.signer == role)
                .count()
                > 1
            {
                return Err(VerifyError::Malformed(format!(
                    "more than one {} signature",
                    role.as_str()
                )));
            }
        }
        Ok(parsed)
    }

    pub fn to_value(&self) -> Value {
        serde_json::json!({ "receipt": self.receipt, "signatures": self.signatures })
    }

    /// The receipt's id. Empty only for a value built by hand that was never signed or read.
    pub fn receipt_id(&self) -> &str {
        receipt_id(&self.receipt).unwrap_or_default()
    }

    /// The bytes every signature covers: what is sent to a tenant's co-signing service.
    pub fn canonical_receipt(&self) -> Result<Vec<u8>, CanonicalError> {
        canonical(&self.receipt)
    }

    /// The signature of `role`, if the document has one.
    pub fn signature(&self, role: SignerRole) -> Option<&Signature> {
        self.signatures.iter().find(|s| s.signer == role)
    }

    /// Adds a co-signer's answer, once it is checked against the co-signer's `key`: an
    /// unverified co-signature is never stored.
    pub fn add_cosignature(
        &mut self,
        kid: &str,
        signature: &str,
        key: &PublicKey,
    ) -> Result<(), VerifyError> {
        if self.signature(SignerRole::Cosigner).is_some() {
            return Err(VerifyError::Malformed(
                "more than one cosigner signature".into(),
            ));
        }
        let message = self
            .canonical_receipt()
            .map_err(|e| VerifyError::Malformed(e.to_string()))?;
        // The platform's own signature, echoed back under the platform's kid and served from
        // the platform's public JWKS, would verify: a co-signature is never made with the
        // platform's key.
        if let Some(platform) = self.signature(SignerRole::Platform)
            && (platform.kid == kid || key.verifies(&message, &platform.signature))
        {
            return Err(VerifyError::Malformed(
                "the co-signer's key is the platform's own".into(),
            ));
        }
        if !key.verifies(&message, signature) {
            return Err(VerifyError::BadSignature);
        }
        self.signatures.push(Signature {
            signer: SignerRole::Cosigner,
            alg: Alg::EdDsa,
            kid: kid.to_owned(),
            signature: signature.to_owned(),
        });
        Ok(())
    }
}

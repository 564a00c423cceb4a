//! What can go wrong with a receipt. Every other module of the crate builds on this one.
//!
//! Messages never hold a key; where they name a kid or a member name taken from a document,
//! it is quoted with escapes, so no control character from a file reaches a terminal.

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// An integer that no IEEE 754 double holds exactly (beyond ±2^53, most do not). JCS reads
    /// every number as a double, so any other implementation would round it and the signature
    /// would cover a different number than the document shows; such a value is refused rather
    /// than rounded.
    #[error("the integer {0} is not exactly representable as an IEEE 754 double")]
    InexactInteger(String),
    /// NaN or an infinity, which JSON cannot express.
    #[error("a number is not finite")]
    NotFinite,
}

/// Why a receipt was not signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// Only receipts are signed with the receipt key, so its signature can mean nothing else.
    #[error("a receipt is a JSON object with a non-empty string receipt_id")]
    NotAReceipt,
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
}

/// Why a signed receipt does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// Not a signed receipt document: not `{"receipt": …, "signatures": […]}`, a receipt
    /// without a `receipt_id`, an unknown member or `alg`, two signatures of one signer, or a
    /// receipt without a canonical form.
    #[error("the document is malformed: {0}")]
    Malformed(String),
    /// The key set is not `{"keys": […]}`.
    #[error("the JWKS is malformed: {0}")]
    MalformedJwks(String),
    #[error("the document has no platform signature")]
    NoPlatformSignature,
    /// Asked to check a co-signature that the document does not have.
    #[error("the document has no co-signature")]
    NoCosignature,
    /// No Ed25519 key of the JWKS has the kid of the platform signature.
    #[error("no Ed25519 key in the JWKS has the kid {0:?}")]
    UnknownKid(String),
    /// The signature does not verify over the canonical receipt with the key: the receipt
    /// changed, or the signature is not the key's (or is not 64 bytes of base64url).
    #[error("the signature does not verify: the receipt was changed or not signed by this key")]
    BadSignature,
}

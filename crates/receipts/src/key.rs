//! Ed25519 public keys as JWKs (RFC 8037) and their RFC 7638 thumbprints, which are the
//! platform's key ids.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::digest::{SHA256, digest};
use ring::signature::{ED25519, UnparsedPublicKey};
use serde_json::{Value, json};

use crate::error::VerifyError;

/// An Ed25519 public key: the platform's, from a JWKS, or a tenant co-signer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicKey([u8; 32]);

/// Why a JWK is not an Ed25519 public key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an Ed25519 public JWK: {0}")]
pub struct JwkError(&'static str);

impl From<[u8; 32]> for PublicKey {
    fn from(bytes: [u8; 32]) -> Self {
        PublicKey(bytes)
    }
}

impl PublicKey {
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Reads a JWK with `"kty":"OKP"`, `"crv":"Ed25519"` and `x` the base64url (unpadded) of 32
    /// bytes. A JWK that names another `alg` than `EdDSA`, another `use` than `sig`, or holds a
    /// private part (`d`) is refused: none of those belongs in a set of verification keys.
    pub fn from_jwk(jwk: &Value) -> Result<Self, JwkError> {
        let member = |name: &str| jwk.get(name).and_then(Value::as_str);
        if !jwk.is_object() {
            return Err(JwkError("not a JSON object"));
        }
        if member("kty") != Some("OKP") || member("crv") != Some("Ed25519") {
            return Err(JwkError("kty must be OKP and crv Ed25519"));
        }
        if jwk.get("alg").is_some_and(|alg| alg != "EdDSA") {
            return Err(JwkError("alg must be EdDSA"));
        }
        if jwk.get("use").is_some_and(|u| u != "sig") {
            return Err(JwkError("use must be sig"));
        }
        if jwk.get("d").is_some() {
            return Err(JwkError("it holds a private key"));
        }
        let x = member("x").ok_or(JwkError("x is missing"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(x)
            .map_err(|_| JwkError("x is not unpadded base64url"))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| JwkError("x is not 32 bytes"))?;
        Ok(PublicKey(bytes))
    }

    /// Whether `signature` (base64url without padding, 64 bytes) is this key's Ed25519
    /// signature of `message`. Padded, non-canonical or wrongly sized encodings are simply
    /// signatures that do not verify.
    pub fn verifies(&self, message: &[u8], signature: &str) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(signature) else {
            return false;
        };
        bytes.len() == 64
            && UnparsedPublicKey::new(&ED25519, &self.0)
                .verify(message, &bytes)
                .is_ok()
    }

    /// The RFC 7638 thumbprint: base64url (unpadded) of SHA-256 over the key's required members
    /// in the RFC's canonical form, `{"crv":"Ed25519","kty":"OKP","x":"…"}` (RFC 8037 §2).
    /// Anyone holding the key can recompute it, and two keys never share one.
    pub fn thumbprint(&self) -> String {
        let members = format!(
            r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
            URL_SAFE_NO_PAD.encode(self.0)
        );
        URL_SAFE_NO_PAD.encode(digest(&SHA256, members.as_bytes()))
    }

    /// The Ed25519 key of `jwks` (`{"keys":[…]}`) whose `kid` is `kid`, if there is one. Keys
    /// of other types, and keys that are not well-formed Ed25519 verification JWKs, are passed
    /// over: a JWKS may serve other keys. `Err` only when `jwks` is not a JWKS at all.
    pub fn find_in_jwks(jwks: &Value, kid: &str) -> Result<Option<Self>, VerifyError> {
        let keys = jwks.get("keys").and_then(Value::as_array).ok_or_else(|| {
            VerifyError::MalformedJwks("it must be an object with a \"keys\" array".into())
        })?;
        Ok(keys
            .iter()
            .filter(|jwk| jwk.get("kid").and_then(Value::as_str) == Some(kid))
            .find_map(|jwk| PublicKey::from_jwk(jwk).ok()))
    }

    /// The key as a JWK for a JWKS, with `kid` set to its thumbprint.
    pub fn to_jwk(&self) -> Value {
        json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(self.0),
            "kid": self.thumbprint(),
            "alg": "EdDSA",
            "use": "sig",
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;

    /// RFC 8037 appendix A.3: the thumbprint of the key of appendix A.2.
    #[test]
    fn thumbprint_matches_rfc_8037() {
        let jwk = json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
        });
        let key = PublicKey::from_jwk(&jwk).unwrap();
        assert_eq!(
            key.thumbprint(),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
        assert_eq!(PublicKey::from_jwk(&key.to_jwk()).unwrap(), key);
    }

    #[test]
    fn refuses_what_is_not_an_ed25519_verification_key() {
        let x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
        let refused = [
            json!("OKP"),
            json!({"kty": "EC", "crv": "Ed25519", "x": x}),
            json!({"kty": "OKP", "crv": "X25519", "x": x}),
            json!({"kty": "OKP", "crv": "Ed25519", "x": x, "alg": "ES256"}),
            json!({"kty": "OKP", "crv": "Ed25519", "x": x, "use": "enc"}),
            json!({"kty": "OKP", "crv": "Ed25519", "x": x, "d": x}),
            json!({"kty": "OKP", "crv": "Ed25519"}),
            json!({"kty": "OKP", "crv": "Ed25519", "x": format!("{x}=")}),
            json!({"kty": "OKP", "crv": "Ed25519", "x": &x[..40]}),
        ];
        for jwk in refused {
            assert!(PublicKey::from_jwk(&jwk).is_err(), "{jwk}");
        }
    }
}

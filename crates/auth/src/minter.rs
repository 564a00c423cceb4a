use std::time::{Duration, SystemTime, UNIX_EPOCH};

use josekit::jwk::alg::ed::EdCurve;
use josekit::jws::alg::eddsa::EddsaJwsSigner;
use josekit::jws::{EdDSA, JwsHeader};
use josekit::jwt::JwtPayload;
use serde_json::{Map, Value, json};

#[derive(Debug, thiserror::Error)]
pub enum MintError {
    #[error("the signing key is unusable: {0}")]
    Key(String),
    #[error("the token could not be signed: {0}")]
    Sign(String),
}

/// Signs access tokens with an Ed25519 key: the development identity provider.
///
/// Security: the services trust only the JWKS their configuration names. The dev stack points a
/// local deployment at this key's JWKS; nothing else ever does.
pub struct TokenMinter {
    signer: EddsaJwsSigner,
    private_pem: Vec<u8>,
    public_jwk: josekit::jwk::Jwk,
    kid: String,
    issuer: String,
    audience: String,
}

impl std::fmt::Debug for TokenMinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenMinter")
            .field("kid", &self.kid)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl TokenMinter {
    /// Makes a new key pair.
    pub fn generate(kid: &str, issuer: &str, audience: &str) -> Result<Self, MintError> {
        let pair = EdDSA
            .generate_key_pair(EdCurve::Ed25519)
            .map_err(|e| MintError::Key(e.to_string()))?;
        Self::from_pem(&pair.to_pem_private_key(), kid, issuer, audience)
    }

    /// Loads a PKCS#8 PEM private key.
    pub fn from_pem(
        pem: &[u8],
        kid: &str,
        issuer: &str,
        audience: &str,
    ) -> Result<Self, MintError> {
        let pair = josekit::jwk::alg::ed::EdKeyPair::from_pem(pem)
            .map_err(|e| MintError::Key(e.to_string()))?;
        let mut signer = EdDSA
            .signer_from_pem(pem)
            .map_err(|e| MintError::Key(e.to_string()))?;
        signer.set_key_id(kid);
        let mut public_jwk = pair.to_jwk_public_key();
        public_jwk.set_key_id(kid);
        public_jwk.set_algorithm("EdDSA");
        public_jwk.set_key_use("sig");
        Ok(Self {
            signer,
            private_pem: pem.to_vec(),
            public_jwk,
            kid: kid.to_owned(),
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
        })
    }

    /// The private key as PKCS#8 PEM, to be stored with owner-only permissions.
    pub fn private_pem(&self) -> &[u8] {
        &self.private_pem
    }

    /// The public key set to point `DPS_AUTH_JWKS` at.
    pub fn jwks_json(&self) -> String {
        let key: Value = serde_json::from_str(&self.public_jwk.to_string()).unwrap_or(Value::Null);
        json!({ "keys": [key] }).to_string()
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Mints an access token for `user` in `tenant` with `roles`, valid for `ttl`.
    pub fn mint(
        &self,
        tenant: &str,
        user: &str,
        roles: &[&str],
        ttl: Duration,
    ) -> Result<String, MintError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let mut claims = Map::new();
        claims.insert("iss".into(), json!(self.issuer));
        claims.insert("aud".into(), json!(self.audience));
        claims.insert("sub".into(), json!(user));
        claims.insert("tenant_id".into(), json!(tenant));
        claims.insert("roles".into(), json!(roles));
        claims.insert("iat".into(), json!(now));
        claims.insert("nbf".into(), json!(now));
        claims.insert("exp".into(), json!(now + ttl.as_secs()));
        claims.insert("jti".into(), json!(uuid::Uuid::new_v4().to_string()));
        self.sign(claims)
    }

    /// Signs exactly the given claims: for tests that need a token with a claim missing or wrong.
    pub fn sign(&self, claims: Map<String, Value>) -> Result<String, MintError> {
        let mut header = JwsHeader::new();
        header.set_token_type("JWT");
        header.set_key_id(&self.kid);
        let payload = JwtPayload::from_map(claims).map_err(|e| MintError::Sign(e.to_string()))?;
        josekit::jwt::encode_with_signer(&payload, &header, &self.signer)
            .map_err(|e| MintError::Sign(e.to_string()))
    }
}

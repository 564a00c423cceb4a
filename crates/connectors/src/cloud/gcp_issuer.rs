//! The platform as an OpenID Connect issuer of its own, for Google workload identity
//! federation.
//!
//! Google federates a workload by exchanging a token from an issuer the customer's workload
//! identity provider trusts. Were that one token the platform's for every tenant, any tenant
//! could name another customer's provider and service account (neither is secret) and have the
//! platform act in that customer's project: the confused deputy that AWS's external id exists to
//! stop. So the platform mints a short-lived subject token per tenant, whose `sub` is derived
//! from the tenant under a key no tenant holds ([`SubjectIssuer::subject`]), and the customer's
//! provider admits only that subject (an attribute condition on `assertion.sub`). A connector can
//! then reach only providers that name its own tenant's subject.
//!
//! **Security invariant:** the subject is an HMAC of the tenant id under a key derived from the
//! master key, so a tenant can learn its own subject (`GET /connectors/gcp-subject`) and never
//! make the platform present another's. The signing key is derived from the master key too, so
//! every replica signs with the same key and the JWKS is stable; it changes with the master key.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ids::TenantId;
use josekit::jwk::Jwk;
use josekit::jwk::alg::ec::EcKeyPair;
use josekit::jws::alg::ecdsa::EcdsaJwsSigner;
use josekit::jws::{ES256, JwsHeader};
use josekit::jwt::JwtPayload;
use serde_json::{Value, json};

use super::access::{AccessError, EnvError, Failure};

/// How long a minted subject token is valid. One is minted for each exchange and used at once.
pub const TOKEN_LIFETIME_SECONDS: u64 = 300;

/// The order of P-256, big-endian: a private scalar must be below it (and not zero).
const P256_ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
];

/// Mints tenants' subject tokens and serves what a provider needs to trust them.
pub struct SubjectIssuer {
    issuer: String,
    signer: EcdsaJwsSigner,
    kid: String,
    /// The public key as a JWK, with `kid`, `alg` and `use`.
    public: Value,
    subject_key: ring::hmac::Key,
}

/// Neither key is shown.
impl fmt::Debug for SubjectIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubjectIssuer")
            .field("issuer", &self.issuer)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SubjectIssuer {
    /// The issuer `issuer` (an `https` URL with no query or fragment, where platform-api's
    /// `/gcp-oidc` documents are served), with keys derived from `master`.
    pub fn new(master: &keys::MasterKey, issuer: &str) -> Result<Self, EnvError> {
        const VAR: &str = "DPS_GCP_OIDC_ISSUER";
        let parsed = url::Url::parse(issuer)
            .map_err(|_| EnvError::new(VAR, "must be an absolute https URL"))?;
        if parsed.scheme() != "https"
            || parsed.host_str().is_none()
            || parsed.query().is_some()
            || parsed.fragment().is_some()
            || !parsed.username().is_empty()
        {
            return Err(EnvError::new(
                VAR,
                "must be an https URL with a host and no query, fragment or credentials \
                 (Google requires an https issuer)",
            ));
        }
        let issuer = issuer.trim_end_matches('/').to_owned();
        let d = scalar(master);
        let mut jwk = Jwk::new("EC");
        let key = |e: josekit::JoseError| EnvError::new(VAR, format!("signing key: {e}"));
        jwk.set_parameter("crv", Some(Value::String("P-256".into())))
            .map_err(key)?;
        jwk.set_parameter("d", Some(Value::String(URL_SAFE_NO_PAD.encode(d))))
            .map_err(key)?;
        // The public point is computed from the scalar.
        let pair = EcKeyPair::from_jwk(&jwk).map_err(key)?;
        let public = pair.to_jwk_public_key();
        let coordinate = |name: &str| {
            public
                .parameter(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| EnvError::new(VAR, "signing key: no public point"))
        };
        let (x, y) = (coordinate("x")?, coordinate("y")?);
        let kid = thumbprint(&x, &y);
        let signer = ES256.signer_from_jwk(&jwk).map_err(key)?;
        let public = json!({
            "kty": "EC", "crv": "P-256", "x": x, "y": y,
            "kid": kid, "alg": "ES256", "use": "sig",
        });
        Ok(SubjectIssuer {
            issuer,
            signer,
            kid,
            public,
            subject_key: ring::hmac::Key::new(
                ring::hmac::HMAC_SHA256,
                &master.derive(b"gcp-oidc-subject-v1"),
            ),
        })
    }

    /// The `iss` of every token, which the customer's provider names as its issuer URI.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Where the JWKS is: `<issuer>/jwks`.
    pub fn jwks_uri(&self) -> String {
        format!("{}/jwks", self.issuer)
    }

    /// The tenant's subject: `dps-` and 32 hex digits of an HMAC of the tenant id, stable for a
    /// tenant, unknowable for any other.
    pub fn subject(&self, tenant: &TenantId) -> String {
        let tag = ring::hmac::sign(&self.subject_key, tenant.as_str().as_bytes());
        let hex: String = tag.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("dps-{hex}")
    }

    /// A subject token for `tenant`, for the provider whose default audience is `audience`
    /// (`https://iam.googleapis.com/<provider resource name>`), valid
    /// [`TOKEN_LIFETIME_SECONDS`].
    pub fn token(&self, tenant: &TenantId, audience: &str) -> Result<String, AccessError> {
        // Whole seconds: NumericDate may have a fraction, but token services vary in taking one.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let mut payload = JwtPayload::new();
        payload.set_issuer(&self.issuer);
        payload.set_subject(self.subject(tenant));
        payload.set_audience(vec![audience]);
        let times = [("iat", now), ("exp", now + TOKEN_LIFETIME_SECONDS)];
        for (claim, at) in times {
            payload
                .set_claim(claim, Some(json!(at)))
                .map_err(|e| AccessError::new(Failure::Identity, e.to_string()))?;
        }
        let mut header = JwsHeader::new();
        header.set_token_type("JWT");
        header.set_key_id(&self.kid);
        josekit::jwt::encode_with_signer(&payload, &header, &self.signer).map_err(|e| {
            AccessError::new(
                Failure::Identity,
                format!("the platform could not sign a GCP subject token: {e}"),
            )
        })
    }

    /// The JWKS a provider verifies tokens with (or that a customer uploads to its provider).
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.public] })
    }

    /// The OpenID Connect discovery document, served at
    /// `<issuer>/.well-known/openid-configuration`.
    pub fn discovery(&self) -> Value {
        json!({
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri(),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "claims_supported": ["iss", "sub", "aud", "iat", "exp"],
        })
    }
}

/// The P-256 private scalar derived from the master key: the first HKDF output in 1 ..= n-1
/// (one derivation in about 2^32 falls outside and takes the next label).
fn scalar(master: &keys::MasterKey) -> [u8; 32] {
    let mut label = b"gcp-oidc-signing-v1".to_vec();
    loop {
        let d = master.derive(&label);
        if d != [0; 32] && d < P256_ORDER {
            return d;
        }
        label.push(b'+');
    }
}

/// The RFC 7638 thumbprint of a P-256 key: base64url of SHA-256 over its required members in
/// lexicographic order.
fn thumbprint(x: &str, y: &str) -> String {
    let members = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        members.as_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issuer_of(master: &keys::MasterKey) -> SubjectIssuer {
        SubjectIssuer::new(master, "https://dps.example.com/api/v1/gcp-oidc/").unwrap()
    }

    #[test]
    fn a_token_names_the_tenants_subject_the_provider_and_expires_soon() {
        let (master, _) = keys::MasterKey::generate().unwrap();
        let issuer = issuer_of(&master);
        let acme: TenantId = "acme".parse().unwrap();
        let audience = "https://iam.googleapis.com/projects/1/locations/global/\
                        workloadIdentityPools/p/providers/x";
        let token = issuer.token(&acme, audience).unwrap();
        let jwk = Jwk::from_map(issuer.jwks()["keys"][0].as_object().unwrap().clone()).unwrap();
        let verifier = ES256.verifier_from_jwk(&jwk).unwrap();
        let (payload, header) = josekit::jwt::decode_with_verifier(&token, &verifier).unwrap();
        assert_eq!(header.algorithm(), Some("ES256"));
        assert_eq!(header.key_id(), Some(issuer.kid.as_str()));
        assert_eq!(
            payload.issuer(),
            Some("https://dps.example.com/api/v1/gcp-oidc")
        );
        assert_eq!(payload.subject(), Some(issuer.subject(&acme).as_str()));
        assert_eq!(payload.audience(), Some(vec![audience]));
        let (iat, exp) = (payload.claim("iat").unwrap(), payload.claim("exp").unwrap());
        assert!(iat.is_u64() && exp.is_u64(), "whole seconds: {payload}");
        assert_eq!(
            exp.as_u64().unwrap() - iat.as_u64().unwrap(),
            TOKEN_LIFETIME_SECONDS
        );
        // Another issuer's key does not verify it.
        let (other, _) = keys::MasterKey::generate().unwrap();
        let jwks = issuer_of(&other).jwks();
        let jwk = Jwk::from_map(jwks["keys"][0].as_object().unwrap().clone()).unwrap();
        let verifier = ES256.verifier_from_jwk(&jwk).unwrap();
        assert!(josekit::jwt::decode_with_verifier(&token, &verifier).is_err());
    }

    #[test]
    fn each_tenant_has_its_own_stable_subject_and_the_key_is_the_master_keys() {
        let (master, _) = keys::MasterKey::generate().unwrap();
        let (one, two) = (issuer_of(&master), issuer_of(&master));
        let acme: TenantId = "acme".parse().unwrap();
        let globex: TenantId = "globex".parse().unwrap();
        assert_eq!(one.subject(&acme), two.subject(&acme));
        assert_ne!(one.subject(&acme), one.subject(&globex));
        assert!(one.subject(&acme).starts_with("dps-") && one.subject(&acme).len() == 36);
        assert_eq!(one.jwks(), two.jwks(), "every replica signs with one key");
        let (other, _) = keys::MasterKey::generate().unwrap();
        assert_ne!(issuer_of(&other).subject(&acme), one.subject(&acme));
        assert_ne!(issuer_of(&other).jwks(), one.jwks());
        assert_eq!(one.discovery()["jwks_uri"], one.jwks_uri());
        assert!(!format!("{one:?}").contains(&one.public["x"].to_string()));
    }

    #[test]
    fn the_issuer_must_be_https() {
        let (master, _) = keys::MasterKey::generate().unwrap();
        for bad in [
            "http://dps.example.com/oidc",
            "dps.example.com",
            "https://dps.example.com/oidc?x=1",
            "https://user:pw@dps.example.com/oidc",
        ] {
            assert!(SubjectIssuer::new(&master, bad).is_err(), "{bad}");
        }
    }
}

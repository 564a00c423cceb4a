//! The co-signing client: sends a signed receipt to a tenant's co-signing service over mutual
//! TLS and accepts its answer only once the co-signature verifies. See docs/governance.md,
//! "Co-signing".
//!
//! ```text
//! POST <endpoint_url>                     (the platform's client certificate, no redirects)
//! Content-Type: application/json
//! {"receipt": {…}, "signatures": [{"signer": "platform", …}]}
//!
//! 200 {"signature": "<base64url Ed25519 over canonical(receipt)>", "key_id": "<kid>"}
//! ```
//!
//! The co-signer's public key comes from `<origin of endpoint_url>/.well-known/jwks.json`,
//! fetched with the same client (so under the same certificate checks and address rules),
//! kept for five minutes and fetched again when an answer names a kid it does not hold.
//!
//! The whole exchange, JWKS included, has [`TIMEOUT`]. Every way it can go wrong is a
//! [`CosignError`], whose message names the failure and never the receipt, a certificate or
//! the URL (callers log the endpoint's host next to it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use egress::{Egress, EgressError};
use receipts::{PublicKey, SignedReceipt};
use serde_json::Value;
use url::Url;

/// How long one co-signing exchange may take, from the first byte sent to the verified answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// How long a co-signer's JWKS is trusted before it is fetched again.
const JWKS_TTL: Duration = Duration::from_secs(300);

/// The largest answer or JWKS read; a co-signer's answer is two short strings.
const MAX_BODY_BYTES: usize = 64 << 10;

/// The longest `key_id` accepted: it is stored in the receipt and shown.
const MAX_KID_LEN: usize = 256;

/// Why a receipt was not co-signed. Messages never hold the receipt, a key or the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignError {
    /// The deployment has no co-signing client certificate (it was removed after the tenant
    /// turned co-signing on): a failure, never a reason to skip co-signing.
    #[error("the platform holds no co-signing client certificate")]
    NoCertificate,
    /// The tenant's co-signing decision has no endpoint.
    #[error("the tenant has no co-signing endpoint")]
    NoEndpoint,
    #[error("the co-signing endpoint is refused: {0}")]
    Refused(EgressError),
    /// Mutual TLS needs TLS: `http` is refused even where private networks are allowed.
    #[error("the co-signing endpoint must use https")]
    NotHttps,
    #[error("the co-signer could not be reached: {0}")]
    Unreachable(String),
    #[error("the co-signer did not answer within {0} s")]
    Timeout(u64),
    #[error("the co-signer answered HTTP {0}")]
    Status(u16),
    #[error("the co-signer's answer is malformed: {0}")]
    Malformed(&'static str),
    #[error("the co-signer's JWKS is unusable: {0}")]
    Jwks(String),
    /// The answer's `key_id` names no Ed25519 key of the co-signer's JWKS, even fetched anew.
    #[error("the co-signer's JWKS has no Ed25519 key with the answer's key_id")]
    UnknownKid,
    #[error("the co-signature does not verify over the receipt")]
    BadSignature,
    /// Our own receipt has no canonical form (cannot happen for a receipt we signed).
    #[error("the receipt cannot be co-signed: {0}")]
    Receipt(String),
}

impl CosignError {
    /// Every [`CosignError::code`].
    pub const CODES: [&'static str; 12] = [
        "no_certificate",
        "no_endpoint",
        "endpoint_refused",
        "not_https",
        "unreachable",
        "timeout",
        "http_status",
        "malformed_answer",
        "jwks_unusable",
        "unknown_kid",
        "bad_signature",
        "receipt_unsignable",
    ];

    /// What a tenant is told of it: a code, without the co-signer's own words.
    pub fn code(&self) -> &'static str {
        match self {
            CosignError::NoCertificate => "no_certificate",
            CosignError::NoEndpoint => "no_endpoint",
            CosignError::Refused(_) => "endpoint_refused",
            CosignError::NotHttps => "not_https",
            CosignError::Unreachable(_) => "unreachable",
            CosignError::Timeout(_) => "timeout",
            CosignError::Status(_) => "http_status",
            CosignError::Malformed(_) => "malformed_answer",
            CosignError::Jwks(_) => "jwks_unusable",
            CosignError::UnknownKid => "unknown_kid",
            CosignError::BadSignature => "bad_signature",
            CosignError::Receipt(_) => "receipt_unsignable",
        }
    }
}

/// The JWKS of one co-signer origin and when it was fetched.
struct CachedJwks {
    fetched: Instant,
    jwks: Value,
}

/// Sends receipts to tenants' co-signing services. Holds an HTTP client that presents the
/// platform's client certificate; `Debug` shows only whether there is one.
pub struct Cosigner {
    /// None when the deployment has no client certificate: every exchange then fails.
    client: Option<reqwest::Client>,
    egress: Egress,
    timeout: Duration,
    jwks: Mutex<HashMap<String, CachedJwks>>,
}

impl std::fmt::Debug for Cosigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cosigner")
            .field("certificate", &self.client.is_some())
            .field("egress", &self.egress)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why the co-signing client could not be built: which input was unusable, never its content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignerBuildError {
    #[error("the client certificate and key do not make a TLS identity")]
    Identity,
    #[error("the CA bundle holds no usable PEM certificate")]
    Roots,
}

impl Cosigner {
    /// A client presenting `identity` (the PEM certificate chain followed by its PEM private
    /// key), trusting the system's roots and `extra_roots` (a PEM bundle), under `egress`'s
    /// address rules. Without an identity, co-signing is provisioned nowhere and every
    /// exchange fails with [`CosignError::NoCertificate`].
    pub fn new(
        identity: Option<&[u8]>,
        extra_roots: Option<&[u8]>,
        egress: Egress,
    ) -> Result<Self, CosignerBuildError> {
        let client = match identity {
            None => None,
            Some(pem) => {
                boot::install_tls_provider();
                let identity =
                    reqwest::Identity::from_pem(pem).map_err(|_| CosignerBuildError::Identity)?;
                let mut builder = egress
                    .client_builder(TIMEOUT)
                    .identity(identity)
                    .https_only(true);
                if let Some(bundle) = extra_roots {
                    let roots = reqwest::Certificate::from_pem_bundle(bundle)
                        .map_err(|_| CosignerBuildError::Roots)?;
                    if roots.is_empty() {
                        return Err(CosignerBuildError::Roots);
                    }
                    builder = builder.tls_certs_merge(roots);
                }
                // rustls checks here that the certificate's public key is the key's.
                Some(builder.build().map_err(|_| CosignerBuildError::Identity)?)
            }
        };
        Ok(Cosigner {
            client,
            egress,
            timeout: TIMEOUT,
            jwks: Mutex::new(HashMap::new()),
        })
    }

    /// The same client with a shorter limit on each exchange (tests, which cannot wait ten
    /// seconds for a co-signer that never answers).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.min(TIMEOUT);
        self
    }

    /// Whether the deployment holds its client certificate, as the settings see it.
    pub fn certificate(&self) -> settings::PlatformCertificate {
        if self.client.is_some() {
            settings::PlatformCertificate::Provisioned
        } else {
            settings::PlatformCertificate::Missing
        }
    }

    /// Sends `document` to `endpoint` and returns it with the co-signature added, once that
    /// verifies with the co-signer's key over the same canonical bytes as the platform's.
    pub async fn cosign(
        &self,
        endpoint: &str,
        document: &SignedReceipt,
    ) -> Result<SignedReceipt, CosignError> {
        let client = self.client.as_ref().ok_or(CosignError::NoCertificate)?;
        let url = self
            .egress
            .check_url(endpoint)
            .map_err(CosignError::Refused)?;
        if url.scheme() != "https" {
            return Err(CosignError::NotHttps);
        }
        let message = document
            .canonical_receipt()
            .map_err(|e| CosignError::Receipt(e.to_string()))?;
        let exchange = self.exchange(client, &url, document, &message);
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(CosignError::Timeout(self.timeout.as_secs().max(1))),
        }
    }

    async fn exchange(
        &self,
        client: &reqwest::Client,
        url: &Url,
        document: &SignedReceipt,
        message: &[u8],
    ) -> Result<SignedReceipt, CosignError> {
        let body = serde_json::to_vec(&document.to_value())
            .map_err(|e| CosignError::Receipt(e.to_string()))?;
        let answer = client
            .post(url.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("user-agent", USER_AGENT)
            .body(body)
            .send()
            .await
            .map_err(failed_to_reach)?;
        if answer.status() != reqwest::StatusCode::OK {
            return Err(CosignError::Status(answer.status().as_u16()));
        }
        let answer = read_json(answer)
            .await?
            .ok_or(CosignError::Malformed("not a JSON object"))?;
        let (signature, kid) = parse_answer(&answer)?;
        let mut key = self.key(client, url, kid).await?;
        if !receipts::verify_detached(message, signature, &key) {
            // A key rotated under the same kid leaves the cached set stale: it is fetched
            // once more before the answer is called bad.
            self.forget(url);
            key = self.key(client, url, kid).await?;
            if !receipts::verify_detached(message, signature, &key) {
                return Err(CosignError::BadSignature);
            }
        }
        let mut cosigned = document.clone();
        cosigned
            .add_cosignature(kid, signature, &key)
            .map_err(|_| CosignError::BadSignature)?;
        Ok(cosigned)
    }

    /// The co-signer's key `kid`: from the cached JWKS of `url`'s origin when it has it, else
    /// from a fresh one.
    async fn key(
        &self,
        client: &reqwest::Client,
        url: &Url,
        kid: &str,
    ) -> Result<PublicKey, CosignError> {
        let origin = url.origin().ascii_serialization();
        if let Some(key) = self.cached(&origin, kid) {
            return Ok(key);
        }
        let jwks_url = url
            .join("/.well-known/jwks.json")
            .map_err(|_| CosignError::Jwks("no JWKS URL for the endpoint".into()))?;
        let answer = client
            .get(jwks_url)
            .header("accept", "application/json")
            .header("user-agent", USER_AGENT)
            .send()
            .await
            .map_err(|e| CosignError::Jwks(describe(e)))?;
        if answer.status() != reqwest::StatusCode::OK {
            return Err(CosignError::Jwks(format!(
                "GET /.well-known/jwks.json answered HTTP {}",
                answer.status().as_u16()
            )));
        }
        let jwks = read_json(answer)
            .await
            .map_err(|e| CosignError::Jwks(e.to_string()))?
            .ok_or_else(|| CosignError::Jwks("not a JSON object".into()))?;
        let key =
            PublicKey::find_in_jwks(&jwks, kid).map_err(|e| CosignError::Jwks(e.to_string()))?;
        if let Ok(mut cache) = self.jwks.lock() {
            cache.retain(|_, c| c.fetched.elapsed() < JWKS_TTL);
            cache.insert(
                origin,
                CachedJwks {
                    fetched: Instant::now(),
                    jwks,
                },
            );
        }
        key.ok_or(CosignError::UnknownKid)
    }

    /// Drops the cached JWKS of `url`'s origin.
    fn forget(&self, url: &Url) {
        if let Ok(mut cache) = self.jwks.lock() {
            cache.remove(&url.origin().ascii_serialization());
        }
    }

    fn cached(&self, origin: &str, kid: &str) -> Option<PublicKey> {
        let cache = self.jwks.lock().ok()?;
        let cached = cache.get(origin)?;
        if cached.fetched.elapsed() >= JWKS_TTL {
            return None;
        }
        PublicKey::find_in_jwks(&cached.jwks, kid).ok().flatten()
    }
}

const USER_AGENT: &str = concat!("dps-governance/", env!("CARGO_PKG_VERSION"));

/// The answer's signature and key id: two non-empty strings; the key id printable and short,
/// since it is stored in the receipt and shown.
fn parse_answer(answer: &Value) -> Result<(&str, &str), CosignError> {
    let signature = answer
        .get("signature")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(CosignError::Malformed(
            "signature must be a non-empty string",
        ))?;
    let kid = answer
        .get("key_id")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty() && k.len() <= MAX_KID_LEN)
        .ok_or(CosignError::Malformed(
            "key_id must be a non-empty string of at most 256 bytes",
        ))?;
    if kid.chars().any(char::is_control) {
        return Err(CosignError::Malformed("key_id holds a control character"));
    }
    Ok((signature, kid))
}

/// Reads a JSON object of at most [`MAX_BODY_BYTES`], refusing duplicate member names. `None`
/// for JSON that is not an object.
async fn read_json(answer: reqwest::Response) -> Result<Option<Value>, CosignError> {
    let body = egress::read_capped(answer, MAX_BODY_BYTES)
        .await
        .map_err(|e| match e {
            egress::BodyError::TooLarge(_) => {
                CosignError::Malformed("the body is larger than 64 KiB")
            }
            egress::BodyError::Read(e) => failed_to_reach(e),
        })?;
    let value = receipts::parse_json(&body).map_err(|_| CosignError::Malformed("not JSON"))?;
    Ok(value.is_object().then_some(value))
}

fn failed_to_reach(e: reqwest::Error) -> CosignError {
    CosignError::Unreachable(describe(e))
}

/// What a failed call tells the tenant (the reason is shown by the remediation API): the kind
/// of failure only. The full chain goes to the service's log; told to the tenant, it would let
/// an endpoint URL probe which internal names exist.
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    tracing::warn!(error = %egress::failure_detail(&e), "a call to a co-signing service failed");
    egress::failure_kind(&e).to_owned()
}

/// The host of `endpoint`, for logs: never the path or query, which may carry a token.
pub(crate) fn host(endpoint: &str) -> String {
    Url::parse(endpoint)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_is_a_signature_and_a_printable_key_id() {
        let ok = json!({"signature": "c2ln", "key_id": "k1", "extra": true});
        assert_eq!(parse_answer(&ok), Ok(("c2ln", "k1")));
        for bad in [
            json!({"signature": "c2ln"}),
            json!({"key_id": "k1"}),
            json!({"signature": "", "key_id": "k1"}),
            json!({"signature": "c2ln", "key_id": ""}),
            json!({"signature": 1, "key_id": "k1"}),
            json!({"signature": "c2ln", "key_id": "k\u{1b}[2J"}),
            json!({"signature": "c2ln", "key_id": "k".repeat(257)}),
        ] {
            assert!(
                matches!(parse_answer(&bad), Err(CosignError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn logs_name_the_host_only() {
        assert_eq!(
            host("https://cosign.acme.example:8443/v1/sign?token=s3cret"),
            "cosign.acme.example"
        );
        assert_eq!(host("not a url"), "unknown");
    }

    #[tokio::test]
    async fn without_a_certificate_nothing_is_sent_and_it_is_a_failure() {
        let cosigner = Cosigner::new(None, None, Egress::default());
        let Ok(cosigner) = cosigner else {
            panic!("a client without a certificate is always built");
        };
        assert_eq!(
            cosigner.certificate(),
            settings::PlatformCertificate::Missing
        );
        let document = SignedReceipt {
            receipt: json!({"receipt_id": "r1"}),
            signatures: vec![],
        };
        assert_eq!(
            cosigner
                .cosign("https://cosign.acme.example/", &document)
                .await,
            Err(CosignError::NoCertificate)
        );
    }
}

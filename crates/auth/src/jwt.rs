use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use josekit::jwk::{Jwk, JwkSet};
use josekit::jws::{ES256, EdDSA, JwsVerifier, RS256};
use serde_json::Value;
use tokio::sync::{Mutex, RwLock};

use ids::{Principal, TenantId, UserId};

/// Clock skew tolerated on `exp` and `nbf`.
///
/// Security: the leeway is how long an expired token is still accepted, so it is also the
/// extra replay window of a stolen token. It stays at one minute and is not configurable.
pub const JWT_LEEWAY: Duration = Duration::from_secs(60);

/// The least time between two JWKS fetches, so that tokens with made-up `kid`s cannot make the
/// service hammer the identity provider.
const MIN_REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// How long a loaded key set is trusted before it is fetched again: a key the identity
/// provider withdrew (a leaked one) stops being accepted within this time, whether or not a
/// token with an unknown kid comes along.
const MAX_KEY_SET_AGE: Duration = Duration::from_secs(600);

/// Longer tokens are refused before any parsing.
const MAX_TOKEN_LEN: usize = 16 * 1024;

/// The largest JWKS document accepted.
const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// The signature algorithms accepted. `none` and the HMAC family are never accepted: with an
/// HMAC algorithm a public key could be abused as the shared secret.
const ACCEPTED_ALGS: [&str; 3] = ["RS256", "ES256", "EdDSA"];

/// Where the trusted signing keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    File(PathBuf),
    Url(String),
}

impl JwksSource {
    /// `http://` and `https://` values are URLs; anything else is a file path.
    pub fn parse(value: &str) -> Self {
        if value.starts_with("https://") || value.starts_with("http://") {
            Self::Url(value.to_owned())
        } else {
            Self::File(PathBuf::from(value))
        }
    }
}

/// What access tokens must look like to be trusted.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub jwks: JwksSource,
    pub issuer: String,
    pub audience: String,
    /// The rules a JWKS URL is fetched under: no private, loopback, link-local or metadata
    /// address (unless `DPS_ALLOW_PRIVATE_NETWORKS`), https only, no redirect, no proxy.
    pub egress: egress::Egress,
}

/// Why an access token was refused. Every variant is a 401; the message names the problem and
/// never repeats the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("the access token is malformed")]
    Malformed,
    #[error("the access token's algorithm is not accepted (RS256, ES256 or EdDSA only)")]
    AlgorithmNotAccepted,
    #[error("the access token names no key id (kid)")]
    MissingKeyId,
    #[error("the access token was signed by an unknown key")]
    UnknownKey,
    #[error("the access token's signature is invalid")]
    BadSignature,
    #[error("the access token has expired")]
    Expired,
    #[error("the access token is not valid yet")]
    NotYetValid,
    #[error("the access token was issued by an untrusted issuer")]
    WrongIssuer,
    #[error("the access token is not meant for this service (audience)")]
    WrongAudience,
    #[error("the access token lacks a valid `{0}` claim")]
    MissingClaim(&'static str),
    #[error("the signing keys could not be loaded")]
    KeysUnavailable,
}

#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, Jwk>,
    loaded: bool,
    /// When the set was last loaded.
    loaded_at: Option<Instant>,
}

/// Verifies access tokens. Cheap to share: wrap it in an `Arc`.
pub struct JwtVerifier {
    config: AuthConfig,
    http: Option<reqwest::Client>,
    cache: RwLock<KeyCache>,
    /// When the last fetch was attempted; also serializes fetches.
    last_fetch: Mutex<Option<Instant>>,
    /// [`MAX_KEY_SET_AGE`] and [`MIN_REFETCH_INTERVAL`] unless set otherwise.
    max_key_set_age: Duration,
    min_refetch: Duration,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    pub fn new(config: AuthConfig) -> Self {
        boot::install_tls_provider();
        // Building fails only when no TLS backend can start; fetching then fails with it, and
        // the service reports itself unready.
        let http = config.egress.client(Duration::from_secs(5)).ok();
        Self {
            config,
            http,
            cache: RwLock::new(KeyCache::default()),
            last_fetch: Mutex::new(None),
            max_key_set_age: MAX_KEY_SET_AGE,
            min_refetch: MIN_REFETCH_INTERVAL,
        }
    }

    /// Sets how long a loaded key set is trusted before it is loaded again, and the least time
    /// between two loads (10 minutes and 1 minute by default).
    pub fn with_reload(mut self, max_key_set_age: Duration, min_refetch: Duration) -> Self {
        self.max_key_set_age = max_key_set_age;
        self.min_refetch = min_refetch;
        self
    }

    /// Loads the keys now, regardless of when they were last fetched. Call once at start-up.
    pub async fn refresh(&self) -> Result<usize, JwtError> {
        let mut last = self.last_fetch.lock().await;
        *last = Some(Instant::now());
        self.fetch_into_cache().await
    }

    /// Loads the keys when none are loaded and the last attempt is at least a minute old, so
    /// that frequent health probes cannot hammer an identity provider that is down.
    pub async fn ensure_keys(&self) -> bool {
        if self.has_keys().await {
            return true;
        }
        let mut last = self.last_fetch.lock().await;
        if last.is_some_and(|at| at.elapsed() < self.min_refetch) {
            return false;
        }
        *last = Some(Instant::now());
        drop(last);
        self.fetch_into_cache().await.is_ok() && self.has_keys().await
    }

    /// Whether at least one trusted key is loaded: the key-material part of readiness.
    pub async fn has_keys(&self) -> bool {
        let cache = self.cache.read().await;
        cache.loaded && !cache.keys.is_empty()
    }

    async fn fetch_into_cache(&self) -> Result<usize, JwtError> {
        let bytes = match &self.config.jwks {
            JwksSource::File(path) => tokio::fs::read(path).await.map_err(|e| {
                tracing::error!(path = %path.display(), error = %e, "cannot read the JWKS file");
                JwtError::KeysUnavailable
            })?,
            JwksSource::Url(url) => self.fetch_url(url).await?,
        };
        if bytes.len() > MAX_JWKS_BYTES {
            tracing::error!(bytes = bytes.len(), "the JWKS document is too large");
            return Err(JwtError::KeysUnavailable);
        }
        let set = JwkSet::from_bytes(&bytes).map_err(|e| {
            tracing::error!(error = %e, "the JWKS document is not a valid key set");
            JwtError::KeysUnavailable
        })?;
        let mut keys = HashMap::new();
        for jwk in set.keys() {
            // Keys without a kid cannot be selected; keys for encryption are not ours to use.
            if jwk.key_use().is_some_and(|u| u != "sig") {
                continue;
            }
            if let Some(kid) = jwk.key_id() {
                keys.insert(kid.to_owned(), jwk.clone());
            }
        }
        let count = keys.len();
        let mut cache = self.cache.write().await;
        cache.keys = keys;
        cache.loaded = true;
        cache.loaded_at = Some(Instant::now());
        tracing::info!(keys = count, "loaded the trusted signing keys");
        Ok(count)
    }

    async fn fetch_url(&self, url: &str) -> Result<Vec<u8>, JwtError> {
        // An address literal is not resolved, so the client's resolver cannot check it: the
        // URL is checked first.
        if let Err(e) = self.config.egress.check_url(url) {
            tracing::error!(error = %e, "the JWKS URL is refused");
            return Err(JwtError::KeysUnavailable);
        }
        let Some(http) = &self.http else {
            tracing::error!("no HTTP client for the JWKS: TLS could not start");
            return Err(JwtError::KeysUnavailable);
        };
        let response = http.get(url).send().await.map_err(|e| {
            // Without the URL: a JWKS URL may carry a key in its query.
            tracing::error!(error = %e.without_url(), "cannot fetch the JWKS");
            JwtError::KeysUnavailable
        })?;
        if !response.status().is_success() {
            tracing::error!(status = %response.status(), "the JWKS endpoint refused");
            return Err(JwtError::KeysUnavailable);
        }
        egress::read_capped(response, MAX_JWKS_BYTES)
            .await
            .map_err(|e| {
                match e {
                    egress::BodyError::TooLarge(_) => {
                        tracing::error!("the JWKS document is too large");
                    }
                    egress::BodyError::Read(e) => {
                        tracing::error!(error = %e.without_url(), "cannot read the JWKS response");
                    }
                }
                JwtError::KeysUnavailable
            })
    }

    /// Finds the key for `kid`, refetching the set when the kid is unknown and the last fetch
    /// was at least [`MIN_REFETCH_INTERVAL`] ago.
    async fn key(&self, kid: &str) -> Result<Jwk, JwtError> {
        let stale = {
            let cache = self.cache.read().await;
            let stale = cache
                .loaded_at
                .is_some_and(|at| at.elapsed() >= self.max_key_set_age);
            if !stale && let Some(jwk) = cache.keys.get(kid) {
                return Ok(jwk.clone());
            }
            stale
        };
        if stale {
            self.reload_stale().await;
        }
        {
            let cache = self.cache.read().await;
            if let Some(jwk) = cache.keys.get(kid) {
                return Ok(jwk.clone());
            }
        }
        let mut last = self.last_fetch.lock().await;
        // Another request may have refreshed while this one waited for the lock.
        if let Some(jwk) = self.cache.read().await.keys.get(kid) {
            return Ok(jwk.clone());
        }
        let due = last.is_none_or(|at| at.elapsed() >= self.min_refetch);
        if !due {
            // Not due: with no key set ever loaded, the fault is still ours, not the caller's.
            return Err(if self.cache.read().await.loaded {
                JwtError::UnknownKey
            } else {
                JwtError::KeysUnavailable
            });
        }
        *last = Some(Instant::now());
        drop(last);
        // A failed refetch leaves the old keys in place. With no keys at all, the fault is
        // ours (or the identity provider's), not the caller's: say so instead of "unknown key".
        let fetched = self.fetch_into_cache().await;
        let cache = self.cache.read().await;
        match cache.keys.get(kid) {
            Some(jwk) => Ok(jwk.clone()),
            None if fetched.is_err() && !cache.loaded => Err(JwtError::KeysUnavailable),
            None => Err(JwtError::UnknownKey),
        }
    }

    /// Loads the key set again when it is older than [`MAX_KEY_SET_AGE`], one caller at a time
    /// and at most once a [`MIN_REFETCH_INTERVAL`]. A failed load keeps the keys there are (the
    /// identity provider being down must not lock every caller out) and is logged.
    async fn reload_stale(&self) {
        let mut last = self.last_fetch.lock().await;
        let still_stale = self
            .cache
            .read()
            .await
            .loaded_at
            .is_some_and(|at| at.elapsed() >= self.max_key_set_age);
        if !still_stale || last.is_some_and(|at| at.elapsed() < self.min_refetch) {
            return;
        }
        *last = Some(Instant::now());
        drop(last);
        if self.fetch_into_cache().await.is_err() {
            tracing::warn!("the trusted signing keys could not be reloaded; the loaded ones stay");
        }
    }

    /// Verifies an access token and returns the caller it names.
    pub async fn verify(&self, token: &str) -> Result<Principal, JwtError> {
        self.verify_at(token, SystemTime::now()).await
    }

    async fn verify_at(&self, token: &str, now: SystemTime) -> Result<Principal, JwtError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(JwtError::Malformed);
        }
        let header = parse_header(token)?;
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or(JwtError::Malformed)?;
        if !ACCEPTED_ALGS.contains(&alg) {
            return Err(JwtError::AlgorithmNotAccepted);
        }
        // Extensions we do not understand must not be ignored (RFC 7515 section 4.1.11).
        if header.contains_key("crit") {
            return Err(JwtError::Malformed);
        }
        let kid = header
            .get("kid")
            .and_then(Value::as_str)
            .ok_or(JwtError::MissingKeyId)?;
        let jwk = self.key(kid).await?;
        if jwk.algorithm().is_some_and(|key_alg| key_alg != alg) {
            return Err(JwtError::AlgorithmNotAccepted);
        }
        let verifier: Box<dyn JwsVerifier> = match alg {
            "RS256" => Box::new(
                RS256
                    .verifier_from_jwk(&jwk)
                    .map_err(|_| JwtError::UnknownKey)?,
            ),
            "ES256" => Box::new(
                ES256
                    .verifier_from_jwk(&jwk)
                    .map_err(|_| JwtError::UnknownKey)?,
            ),
            "EdDSA" => Box::new(
                EdDSA
                    .verifier_from_jwk(&jwk)
                    .map_err(|_| JwtError::UnknownKey)?,
            ),
            _ => return Err(JwtError::AlgorithmNotAccepted),
        };
        let (payload, _) = josekit::jwt::decode_with_verifier(token, verifier.as_ref())
            .map_err(|_| JwtError::BadSignature)?;
        let claims = payload.claims_set();
        self.check_claims(claims, now)
    }

    fn check_claims(
        &self,
        claims: &serde_json::Map<String, Value>,
        now: SystemTime,
    ) -> Result<Principal, JwtError> {
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_err(|_| JwtError::Expired)?
            .as_secs();
        let leeway = JWT_LEEWAY.as_secs();

        let exp = claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or(JwtError::MissingClaim("exp"))?;
        if now > exp.saturating_add(leeway) {
            return Err(JwtError::Expired);
        }
        if let Some(nbf) = claims.get("nbf") {
            let nbf = nbf.as_u64().ok_or(JwtError::MissingClaim("nbf"))?;
            if now.saturating_add(leeway) < nbf {
                return Err(JwtError::NotYetValid);
            }
        }
        match claims.get("iss").and_then(Value::as_str) {
            Some(iss) if iss == self.config.issuer => {}
            Some(_) => return Err(JwtError::WrongIssuer),
            None => return Err(JwtError::MissingClaim("iss")),
        }
        let audience_ok = match claims.get("aud") {
            Some(Value::String(aud)) => *aud == self.config.audience,
            Some(Value::Array(auds)) => auds
                .iter()
                .any(|a| a.as_str() == Some(&self.config.audience)),
            Some(_) => false,
            None => return Err(JwtError::MissingClaim("aud")),
        };
        if !audience_ok {
            return Err(JwtError::WrongAudience);
        }

        let user_id: UserId = claims
            .get("sub")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .ok_or(JwtError::MissingClaim("sub"))?;
        let tenant_id: TenantId = claims
            .get("tenant_id")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .ok_or(JwtError::MissingClaim("tenant_id"))?;
        let roles = match claims.get("roles") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|r| r.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or(JwtError::MissingClaim("roles"))?,
            Some(_) => return Err(JwtError::MissingClaim("roles")),
        };
        Ok(Principal {
            user_id,
            tenant_id,
            roles,
        })
    }
}

fn parse_header(token: &str) -> Result<serde_json::Map<String, Value>, JwtError> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| JwtError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed)
}

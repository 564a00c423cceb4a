//! Signing in with OpenID Connect: the authorization code flow with PKCE (S256) against the
//! deployment's identity provider, found from its issuer's discovery document. The `state`
//! and the PKCE verifier live in the sealed sign-in cookie; the access token the provider
//! returns is then verified exactly as the API verifies a Bearer token, so the console's
//! callers are the API's. No token, code or verifier is ever logged or shown.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

/// How long a discovery document is used before it is fetched again.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);

/// The longest an answer of the provider may be.
const MAX_ANSWER: usize = 64 << 10;

/// Calls to the provider give up after this long.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a sign-in with the provider failed. The messages name the provider's error code at
/// most, never a token or a code.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider could not be reached, or answered what is not OpenID Connect.
    #[error("the identity provider could not be used: {0}")]
    Unavailable(String),
    /// The provider refused the exchange (an expired or replayed code, a wrong verifier).
    #[error("the identity provider refused the sign-in ({0})")]
    Refused(String),
}

/// What the console needs of the provider's discovery document.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
}

/// The console as a client of the identity provider.
pub struct Oidc {
    /// `DPS_AUTH_ISSUER`: the provider's issuer, whose discovery document is read.
    pub issuer: String,
    /// `DPS_CONSOLE_CLIENT_ID`.
    pub client_id: String,
    /// `DPS_CONSOLE_CLIENT_SECRET`: a confidential client's secret, sent in the token request
    /// body (`client_secret_post`); a public client has none and relies on PKCE alone.
    pub client_secret: Option<String>,
    /// `DPS_CONSOLE_URL` + `/auth/callback`: registered at the provider.
    pub redirect_uri: String,
    /// `DPS_CONSOLE_SCOPES`.
    pub scopes: String,
    /// `DPS_CONSOLE_RESOURCE`: the `resource` indicator (RFC 8707) naming the API, for
    /// providers that issue access tokens per resource.
    pub resource: Option<String>,
    /// The rules for the provider's URLs (`DPS_ALLOW_PRIVATE_NETWORKS`).
    pub egress: egress::Egress,
    discovered: Mutex<Option<(Discovery, Instant)>>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// The PKCE challenge of `verifier`: its SHA-256 in URL-safe base64 (RFC 7636, S256).
pub fn challenge(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    error: Option<String>,
}

impl Oidc {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        issuer: String,
        client_id: String,
        client_secret: Option<String>,
        console_url: &str,
        scopes: String,
        resource: Option<String>,
        egress: egress::Egress,
    ) -> Self {
        Self {
            issuer,
            client_id,
            client_secret,
            redirect_uri: format!("{}/auth/callback", console_url.trim_end_matches('/')),
            scopes,
            resource,
            egress,
            discovered: Mutex::new(None),
        }
    }

    fn client(&self) -> Result<reqwest::Client, OidcError> {
        self.egress
            .client(TIMEOUT)
            .map_err(|e| OidcError::Unavailable(egress::failure_kind(&e).to_owned()))
    }

    /// The provider's endpoints, from its discovery document (cached for an hour). The
    /// document's issuer must be the configured one, as OpenID Connect Discovery requires.
    pub async fn discovery(&self) -> Result<Discovery, OidcError> {
        if let Some((found, at)) = self
            .discovered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            && at.elapsed() < DISCOVERY_TTL
        {
            return Ok(found.clone());
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.issuer.trim_end_matches('/')
        );
        let url = self
            .egress
            .check_url(&url)
            .map_err(|e| OidcError::Unavailable(e.to_string()))?;
        let answer = self
            .client()?
            .get(url)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(egress::failure_kind(&e).to_owned()))?;
        if !answer.status().is_success() {
            return Err(OidcError::Unavailable(format!(
                "its discovery document answered {}",
                answer.status().as_u16()
            )));
        }
        let body = egress::read_capped(answer, MAX_ANSWER)
            .await
            .map_err(|_| OidcError::Unavailable("its discovery document is too long".into()))?;
        let found: Discovery = serde_json::from_slice(&body).map_err(|_| {
            OidcError::Unavailable("its discovery document is not OpenID Connect's".into())
        })?;
        if found.issuer.trim_end_matches('/') != self.issuer.trim_end_matches('/') {
            return Err(OidcError::Unavailable(
                "its discovery document names another issuer".into(),
            ));
        }
        for endpoint in [&found.authorization_endpoint, &found.token_endpoint] {
            self.egress
                .check_url(endpoint)
                .map_err(|e| OidcError::Unavailable(e.to_string()))?;
        }
        *self
            .discovered
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((found.clone(), Instant::now()));
        Ok(found)
    }

    /// Where to send the browser to sign in: the authorization endpoint with this sign-in's
    /// `state` and the challenge of its PKCE `verifier`.
    pub async fn authorization_url(
        &self,
        state: &str,
        verifier: &str,
    ) -> Result<String, OidcError> {
        let found = self.discovery().await?;
        let mut url = url::Url::parse(&found.authorization_endpoint)
            .map_err(|_| OidcError::Unavailable("its authorization endpoint is no URL".into()))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.client_id)
                .append_pair("redirect_uri", &self.redirect_uri)
                .append_pair("scope", &self.scopes)
                .append_pair("state", state)
                .append_pair("code_challenge", &challenge(verifier))
                .append_pair("code_challenge_method", "S256");
            if let Some(resource) = &self.resource {
                query.append_pair("resource", resource);
            }
        }
        Ok(url.into())
    }

    /// Exchanges the authorization `code` for an access token, proving this sign-in with its
    /// PKCE `verifier`. The token is not checked here: the caller verifies it as the API does.
    pub async fn exchange(&self, code: &str, verifier: &str) -> Result<String, OidcError> {
        let found = self.discovery().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("client_id", self.client_id.as_str()),
            ("code_verifier", verifier),
        ];
        if let Some(secret) = &self.client_secret {
            form.push(("client_secret", secret));
        }
        if let Some(resource) = &self.resource {
            form.push(("resource", resource));
        }
        let answer = self
            .client()?
            .post(&found.token_endpoint)
            .form(&form)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(egress::failure_kind(&e).to_owned()))?;
        let status = answer.status();
        let body = egress::read_capped(answer, MAX_ANSWER)
            .await
            .map_err(|_| OidcError::Unavailable("its token answer is too long".into()))?;
        let parsed: Option<TokenAnswer> = serde_json::from_slice(&body).ok();
        match parsed {
            Some(TokenAnswer {
                access_token: Some(token),
                ..
            }) if status.is_success() => Ok(token),
            Some(TokenAnswer {
                error: Some(code), ..
            }) => Err(OidcError::Refused(error_code(&code))),
            _ => Err(OidcError::Unavailable(format!(
                "its token endpoint answered {}",
                status.as_u16()
            ))),
        }
    }
}

/// The provider's error code, kept only when it is one of OAuth's plain codes.
fn error_code(code: &str) -> String {
    if !code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    {
        code.to_owned()
    } else {
        "an error".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn only_plain_error_codes_are_repeated() {
        assert_eq!(error_code("invalid_grant"), "invalid_grant");
        assert_eq!(error_code("<b>x</b>"), "an error");
        assert_eq!(error_code(""), "an error");
    }
}

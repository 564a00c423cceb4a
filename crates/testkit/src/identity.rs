//! Stand-ins for identity services that have no emulator here: Microsoft Entra ID's token
//! endpoint, Google's STS plus IAM Credentials, and AWS STS's AssumeRole for an S3 server
//! without one (s3s-fs). Each speaks the documented protocol (the
//! request shapes and answers the real services use) on a loopback port, checks what a real
//! service would check, and records every request so tests can count them.
//!
//! The server is a tiny HTTP/1.1 responder on a thread: one request per connection.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// A request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

type Handler = dyn Fn(&Seen) -> (u16, Value) + Send + Sync;

/// A running fake identity service. It stops accepting when dropped.
#[derive(Debug)]
pub struct FakeIdentity {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl FakeIdentity {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn serve(handler: Box<Handler>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (log, stopping) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                if let Some(request) = read_request(&stream) {
                    let (status, body) = handler(&request);
                    if let Ok(mut log) = log.lock() {
                        log.push(request);
                    }
                    respond(stream, status, &body);
                }
            }
        });
        FakeIdentity { port, seen, stop }
    }
}

impl Drop for FakeIdentity {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A loopback HTTP/1.1 server answering every request with `handler` and recording it: a
/// webhook receiver, or a peer whose answers a test scripts.
pub fn http_server(
    handler: impl Fn(&Seen) -> (u16, Value) + Send + Sync + 'static,
) -> FakeIdentity {
    FakeIdentity::serve(Box::new(handler))
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Answers with `body` as JSON, or, for a string that starts with `<`, as that XML text.
fn respond(mut stream: TcpStream, status: u16, body: &Value) {
    let (kind, body) = match body {
        Value::String(xml) if xml.starts_with('<') => ("text/xml", xml.clone()),
        other => ("application/json", other.to_string()),
    };
    let reason = if status < 400 { "OK" } else { "Error" };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
}

/// AWS STS's AssumeRole, answering every `Action=AssumeRole` with the one key pair an S3
/// server without STS of its own accepts (s3s-fs), valid for an hour.
pub fn sts(key_id: &str, secret: &str) -> FakeIdentity {
    let (key_id, secret) = (key_id.to_owned(), secret.to_owned());
    FakeIdentity::serve(Box::new(move |request| {
        if form(&request.body).get("Action").map(String::as_str) != Some("AssumeRole") {
            return (
                400,
                Value::String(
                    "<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>"
                        .into(),
                ),
            );
        }
        let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
        let expires = expires
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        (
            200,
            Value::String(format!(
                "<AssumeRoleResponse><AssumeRoleResult><Credentials>\
                 <AccessKeyId>{key_id}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey>\
                 <SessionToken>stand-in</SessionToken><Expiration>{expires}</Expiration>\
                 </Credentials></AssumeRoleResult></AssumeRoleResponse>"
            )),
        )
    }))
}

fn form(body: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Microsoft Entra ID's v2.0 token endpoint for one tenant, one client and its secret. A good
/// client-credentials request for the storage scope gets a token Azurite accepts (Azurite
/// checks the issuer, audience and times, not the signature, so the token is unsigned). A
/// wrong secret gets Entra's AADSTS7000215 answer.
pub fn entra(tenant: &str, client_id: &str, secret: &str) -> FakeIdentity {
    let (tenant, client_id, secret) = (tenant.to_owned(), client_id.to_owned(), secret.to_owned());
    FakeIdentity::serve(Box::new(move |request| {
        if request.method != "POST" || request.path != format!("/{tenant}/oauth2/v2.0/token") {
            return (
                400,
                json!({"error": "invalid_request", "error_description": "AADSTS90002: Tenant not found."}),
            );
        }
        let form = form(&request.body);
        let field = |k: &str| form.get(k).map(String::as_str);
        if field("grant_type") != Some("client_credentials")
            || field("scope") != Some("https://storage.azure.com/.default")
        {
            return (
                400,
                json!({"error": "invalid_request", "error_description": "AADSTS900144: bad grant or scope"}),
            );
        }
        if field("client_id") != Some(client_id.as_str())
            || field("client_secret") != Some(secret.as_str())
        {
            return (
                401,
                json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID."}),
            );
        }
        let issued = now();
        let claims = json!({
            "aud": "https://storage.azure.com",
            "iss": format!("https://sts.windows.net/{tenant}/"),
            "iat": issued, "nbf": issued, "exp": issued + 3600,
            "appid": client_id, "tid": tenant, "oid": "00000000-0000-0000-0000-000000000001",
        });
        let token = format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","typ":"JWT"}"#),
            URL_SAFE_NO_PAD.encode(claims.to_string()),
            URL_SAFE_NO_PAD.encode("unsigned"),
        );
        (
            200,
            json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}),
        )
    }))
}

/// Google STS (`POST /v1/token`) and IAM Credentials (`POST /v1/projects/-/serviceAccounts/
/// {email}:generateAccessToken`) on one port. The exchange succeeds only for `subject_token`
/// and the audience of `wif_provider`; impersonation only with the federated token it issued.
pub fn google(subject_token: &str, wif_provider: &str) -> FakeIdentity {
    let subject = subject_token.to_owned();
    let audience = format!("//iam.googleapis.com/{wif_provider}");
    FakeIdentity::serve(Box::new(move |request| {
        if request.method == "POST" && request.path == "/v1/token" {
            let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
            let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
            if text("grantType") != "urn:ietf:params:oauth:grant-type:token-exchange"
                || text("audience") != audience
            {
                return (
                    400,
                    json!({"error": "invalid_target", "error_description": "The target service indicated by the \"audience\" parameters is invalid."}),
                );
            }
            if text("subjectToken") != subject {
                return (
                    400,
                    json!({"error": "invalid_grant", "error_description": "The subject token is invalid."}),
                );
            }
            return federated();
        }
        impersonation(request)
    }))
}

/// What a stand-in Google STS trusts: one issuer with its JWKS, and for each workload identity
/// provider (its resource name) the one subject its attribute condition admits.
#[derive(Debug, Clone, Default)]
pub struct GoogleTrust {
    pub issuer: String,
    pub jwks: Value,
    pub providers: HashMap<String, String>,
}

/// Google STS and IAM Credentials for providers that trust an OpenID Connect issuer, as a
/// customer sets one up for the platform: the exchange succeeds only for a subject token signed
/// by a key of the issuer's JWKS (ES256), with the issuer's `iss`, the provider's default
/// audience (`https://iam.googleapis.com/<provider>`), a current `iat`/`exp` of at most an hour,
/// and the `sub` the provider's attribute condition names. Set what it trusts through the
/// returned handle (the platform's JWKS is known once the service runs).
pub fn google_federation() -> (FakeIdentity, Arc<Mutex<GoogleTrust>>) {
    let trust = Arc::new(Mutex::new(GoogleTrust::default()));
    let held = trust.clone();
    let server = FakeIdentity::serve(Box::new(move |request| {
        let trust = held.lock().map(|t| t.clone()).unwrap_or_default();
        if request.method == "POST" && request.path == "/v1/token" {
            let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
            let text = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default();
            let provider = text("audience").strip_prefix("//iam.googleapis.com/");
            let admitted = provider.and_then(|p| trust.providers.get(p).map(|s| (p, s)));
            let Some((provider, subject)) = admitted
                .filter(|_| text("grantType") == "urn:ietf:params:oauth:grant-type:token-exchange")
            else {
                return (
                    400,
                    json!({"error": "invalid_target", "error_description": "The target service indicated by the \"audience\" parameters is invalid."}),
                );
            };
            let claims = match verified_claims(text("subjectToken"), &trust.jwks) {
                Some(claims) => claims,
                None => {
                    return (
                        400,
                        json!({"error": "invalid_grant", "error_description": "Invalid JWT signature."}),
                    );
                }
            };
            let now = now() as i64;
            let claim = |k: &str| claims.get(k).cloned().unwrap_or(Value::Null);
            let (iat, exp) = (
                claim("iat").as_i64().unwrap_or(0),
                claim("exp").as_i64().unwrap_or(0),
            );
            let audience = format!("https://iam.googleapis.com/{provider}");
            let audience_ok = match claim("aud") {
                Value::String(a) => a == audience,
                Value::Array(all) => all.iter().any(|a| a.as_str() == Some(&audience)),
                _ => false,
            };
            if claim("iss").as_str() != Some(trust.issuer.as_str())
                || !audience_ok
                || exp <= now
                || iat > now + 60
                || exp - iat > 3600
            {
                return (
                    400,
                    json!({"error": "invalid_grant", "error_description": "The ID Token is invalid or expired, or its issuer or audience is not the provider's."}),
                );
            }
            if claim("sub").as_str() != Some(subject.as_str()) {
                return (
                    400,
                    json!({"error": "unauthorized_client", "error_description": "The given credential is rejected by the attribute condition."}),
                );
            }
            return federated();
        }
        impersonation(request)
    }));
    (server, trust)
}

/// The federated token a stand-in STS issues, which [`impersonation`] takes.
const FEDERATED: &str = "federated-access-token";

/// A successful exchange at the stand-in STS.
fn federated() -> (u16, Value) {
    (
        200,
        json!({"access_token": FEDERATED, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 3600}),
    )
}

/// IAM Credentials' `generateAccessToken`, for a bearer of the federated token only; anything
/// else is 404.
fn impersonation(request: &Seen) -> (u16, Value) {
    if request.method != "POST" || !request.path.ends_with(":generateAccessToken") {
        return (404, json!({"error": {"code": 404, "message": "not found"}}));
    }
    if request.headers.get("authorization").map(String::as_str)
        != Some(&format!("Bearer {FEDERATED}"))
    {
        return (
            401,
            json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}),
        );
    }
    (
        200,
        json!({"accessToken": "ya29.impersonated", "expireTime": time_rfc3339(now() + 3600)}),
    )
}

/// The claims of `token` if it is an ES256 JWT signed by a key of `jwks` named by its `kid`.
pub fn verified_claims(token: &str, jwks: &Value) -> Option<serde_json::Map<String, Value>> {
    let header = token.split('.').next()?;
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    if header.get("alg")?.as_str()? != "ES256" {
        return None;
    }
    let kid = header.get("kid")?.as_str()?;
    let key = jwks
        .get("keys")?
        .as_array()?
        .iter()
        .find(|k| k.get("kid").and_then(Value::as_str) == Some(kid))?;
    let jwk = josekit::jwk::Jwk::from_map(key.as_object()?.clone()).ok()?;
    let verifier = josekit::jws::ES256.verifier_from_jwk(&jwk).ok()?;
    let (payload, _) = josekit::jwt::decode_with_verifier(token, &verifier).ok()?;
    Some(payload.claims_set().clone())
}

/// RFC 3339 for a Unix time, UTC.
fn time_rfc3339(secs: u64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp(secs as i64)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A self-signed certificate for 127.0.0.1 and localhost (end entity, CA:FALSE, as rustls
/// requires), written as `cert.pem` and `key.pem` under `dir`, made with the system openssl.
pub fn self_signed_certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-addext", "extendedKeyUsage=serverAuth"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("openssl: {e}"));
    assert!(status.success(), "openssl could not make a certificate");
    (cert, key)
}

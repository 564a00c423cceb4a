//! Access-token verification with real keys of every accepted algorithm, and the attacks a
//! verifier must refuse.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use auth::{AuthConfig, JwksSource, JwtError, JwtVerifier, TokenMinter};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use josekit::jwk::Jwk;
use josekit::jws::{ES256, HS256, JwsHeader, RS256};
use josekit::jwt::JwtPayload;
use serde_json::{Map, Value, json};

const ISSUER: &str = "https://idp.example";
const AUDIENCE: &str = "dps";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims() -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("iss".into(), json!(ISSUER));
    c.insert("aud".into(), json!(AUDIENCE));
    c.insert("sub".into(), json!("user-1"));
    c.insert("tenant_id".into(), json!("acme"));
    c.insert("roles".into(), json!(["admin", "analyst"]));
    c.insert("exp".into(), json!(now() + 300));
    c
}

fn temp_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "dps-auth-{name}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ))
}

struct Keys {
    ed: TokenMinter,
    rsa: (josekit::jws::alg::rsassa::RsassaJwsSigner, Jwk),
    ec: (josekit::jws::alg::ecdsa::EcdsaJwsSigner, Jwk),
    jwks: PathBuf,
}

fn keys() -> Keys {
    let ed = TokenMinter::generate("ed-1", ISSUER, AUDIENCE).unwrap();
    let rsa_pair = RS256.generate_key_pair(2048).unwrap();
    let mut rsa_signer = RS256
        .signer_from_der(rsa_pair.to_der_private_key())
        .unwrap();
    rsa_signer.set_key_id("rsa-1");
    let mut rsa_jwk = rsa_pair.to_jwk_public_key();
    rsa_jwk.set_key_id("rsa-1");
    let ec_pair = ES256.generate_key_pair().unwrap();
    let mut ec_signer = ES256.signer_from_der(ec_pair.to_der_private_key()).unwrap();
    ec_signer.set_key_id("ec-1");
    let mut ec_jwk = ec_pair.to_jwk_public_key();
    ec_jwk.set_key_id("ec-1");
    let ed_set: Value = serde_json::from_str(&ed.jwks_json()).unwrap();
    let mut all = ed_set["keys"].as_array().unwrap().clone();
    all.push(serde_json::from_str(&rsa_jwk.to_string()).unwrap());
    all.push(serde_json::from_str(&ec_jwk.to_string()).unwrap());
    let jwks = temp_file("jwks");
    std::fs::write(&jwks, json!({ "keys": all }).to_string()).unwrap();
    Keys {
        ed,
        rsa: (rsa_signer, rsa_jwk),
        ec: (ec_signer, ec_jwk),
        jwks,
    }
}

fn verifier(jwks: &std::path::Path) -> JwtVerifier {
    JwtVerifier::new(AuthConfig {
        jwks: JwksSource::File(jwks.to_path_buf()),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        egress: egress::Egress::default(),
    })
}

fn sign_with(
    signer: &dyn josekit::jws::JwsSigner,
    kid: &str,
    claims: Map<String, Value>,
) -> String {
    let mut header = JwsHeader::new();
    header.set_token_type("JWT");
    header.set_key_id(kid);
    josekit::jwt::encode_with_signer(&JwtPayload::from_map(claims).unwrap(), &header, signer)
        .unwrap()
}

#[tokio::test]
async fn tokens_signed_with_each_accepted_algorithm_verify() {
    let keys = keys();
    let v = verifier(&keys.jwks);
    v.refresh().await.unwrap();

    let principal = v.verify(&keys.ed.sign(claims()).unwrap()).await.unwrap();
    assert_eq!(principal.user_id.as_str(), "user-1");
    assert_eq!(principal.tenant_id.as_str(), "acme");
    assert!(principal.has_role("admin"));

    let rs = sign_with(&keys.rsa.0, "rsa-1", claims());
    assert_eq!(v.verify(&rs).await.unwrap().tenant_id.as_str(), "acme");
    let es = sign_with(&keys.ec.0, "ec-1", claims());
    assert_eq!(v.verify(&es).await.unwrap().tenant_id.as_str(), "acme");
}

#[tokio::test]
async fn expiry_and_not_before_allow_exactly_the_leeway() {
    let keys = keys();
    let v = verifier(&keys.jwks);
    let with = |name: &str, value: u64| {
        let mut c = claims();
        c.insert(name.into(), json!(value));
        keys.ed.sign(c).unwrap()
    };
    assert_eq!(
        v.verify(&with("exp", now() - 120)).await.unwrap_err(),
        JwtError::Expired
    );
    assert!(
        v.verify(&with("exp", now() - 30)).await.is_ok(),
        "inside the 60 s leeway"
    );
    assert_eq!(
        v.verify(&with("nbf", now() + 120)).await.unwrap_err(),
        JwtError::NotYetValid
    );
    assert!(
        v.verify(&with("nbf", now() + 30)).await.is_ok(),
        "inside the 60 s leeway"
    );
}

#[tokio::test]
async fn wrong_issuer_or_audience_is_refused() {
    let keys = keys();
    let v = verifier(&keys.jwks);
    let mut c = claims();
    c.insert("iss".into(), json!("https://evil.example"));
    assert_eq!(
        v.verify(&keys.ed.sign(c).unwrap()).await.unwrap_err(),
        JwtError::WrongIssuer
    );
    let mut c = claims();
    c.insert("aud".into(), json!(["other-service"]));
    assert_eq!(
        v.verify(&keys.ed.sign(c).unwrap()).await.unwrap_err(),
        JwtError::WrongAudience
    );
    let mut c = claims();
    c.insert("aud".into(), json!(["other-service", AUDIENCE]));
    assert!(
        v.verify(&keys.ed.sign(c).unwrap()).await.is_ok(),
        "aud arrays may name several services"
    );
}

#[tokio::test]
async fn missing_or_malformed_claims_are_refused() {
    let keys = keys();
    let v = verifier(&keys.jwks);
    for (claim, name) in [
        ("sub", "sub"),
        ("tenant_id", "tenant_id"),
        ("exp", "exp"),
        ("iss", "iss"),
        ("aud", "aud"),
    ] {
        let mut c = claims();
        c.remove(claim);
        assert_eq!(
            v.verify(&keys.ed.sign(c).unwrap()).await.unwrap_err(),
            JwtError::MissingClaim(name),
            "{claim}"
        );
    }
    let mut c = claims();
    c.insert("roles".into(), json!("admin"));
    assert_eq!(
        v.verify(&keys.ed.sign(c).unwrap()).await.unwrap_err(),
        JwtError::MissingClaim("roles")
    );
    let mut c = claims();
    c.insert("tenant_id".into(), json!("not a tenant!"));
    assert_eq!(
        v.verify(&keys.ed.sign(c).unwrap()).await.unwrap_err(),
        JwtError::MissingClaim("tenant_id")
    );
    let mut c = claims();
    c.remove("roles");
    assert!(
        v.verify(&keys.ed.sign(c).unwrap())
            .await
            .unwrap()
            .roles
            .is_empty()
    );
}

#[tokio::test]
async fn unknown_keys_and_forged_signatures_are_refused() {
    let keys = keys();
    let v = verifier(&keys.jwks);
    v.refresh().await.unwrap();
    let stranger = TokenMinter::generate("stranger", ISSUER, AUDIENCE).unwrap();
    assert_eq!(
        v.verify(&stranger.sign(claims()).unwrap())
            .await
            .unwrap_err(),
        JwtError::UnknownKey
    );
    // A different key that claims a trusted kid.
    let impostor = TokenMinter::generate("ed-1", ISSUER, AUDIENCE).unwrap();
    assert_eq!(
        v.verify(&impostor.sign(claims()).unwrap())
            .await
            .unwrap_err(),
        JwtError::BadSignature
    );
    // A trusted signature over altered claims.
    let token = keys.ed.sign(claims()).unwrap();
    let parts: Vec<&str> = token.split('.').collect();
    let mut c = claims();
    c.insert("tenant_id".into(), json!("globex"));
    let altered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(Value::Object(c).to_string()),
        parts[2]
    );
    assert_eq!(
        v.verify(&altered).await.unwrap_err(),
        JwtError::BadSignature
    );
    assert_eq!(
        v.verify("not.a.jwt").await.unwrap_err(),
        JwtError::Malformed
    );
    assert_eq!(v.verify("").await.unwrap_err(), JwtError::Malformed);
}

#[tokio::test]
async fn alg_none_and_hmac_with_the_public_key_are_refused() {
    let keys = keys();
    let v = verifier(&keys.jwks);
    let body = URL_SAFE_NO_PAD.encode(Value::Object(claims()).to_string());
    let none_header = URL_SAFE_NO_PAD.encode(json!({"alg": "none", "kid": "ed-1"}).to_string());
    assert_eq!(
        v.verify(&format!("{none_header}.{body}."))
            .await
            .unwrap_err(),
        JwtError::AlgorithmNotAccepted
    );

    // The classic confusion attack: HS256 keyed with the verifier's public key bytes.
    let public_pem = keys.rsa.1.to_string();
    let hmac = HS256.signer_from_bytes(public_pem.as_bytes()).unwrap();
    let forged = sign_with(&hmac, "rsa-1", claims());
    assert_eq!(
        v.verify(&forged).await.unwrap_err(),
        JwtError::AlgorithmNotAccepted
    );

    // An RS256 key used under ES256's name does not verify either.
    let es_header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": "rsa-1"}).to_string());
    let rs = sign_with(&keys.rsa.0, "rsa-1", claims());
    let swapped = format!("{es_header}.{}", rs.split_once('.').unwrap().1);
    assert!(v.verify(&swapped).await.is_err());
}

#[tokio::test]
async fn an_unknown_kid_refetches_at_most_once_a_minute() {
    let keys = keys();
    let jwks = temp_file("rotating");
    std::fs::write(&jwks, keys.ed.jwks_json()).unwrap();
    let v = verifier(&jwks);

    // Nothing loaded yet: the first unknown kid fetches.
    let first = TokenMinter::generate("ed-1", ISSUER, AUDIENCE).unwrap();
    std::fs::write(&jwks, first.jwks_json()).unwrap();
    assert!(v.verify(&first.sign(claims()).unwrap()).await.is_ok());

    // The identity provider rotates in a new key; within the minute it is not fetched again.
    let rotated = TokenMinter::generate("ed-2", ISSUER, AUDIENCE).unwrap();
    std::fs::write(&jwks, rotated.jwks_json()).unwrap();
    assert_eq!(
        v.verify(&rotated.sign(claims()).unwrap())
            .await
            .unwrap_err(),
        JwtError::UnknownKey
    );
    // An explicit refresh (as at start-up) does pick it up.
    v.refresh().await.unwrap();
    assert!(v.verify(&rotated.sign(claims()).unwrap()).await.is_ok());
}

#[tokio::test]
async fn a_key_the_identity_provider_withdrew_stops_verifying_once_the_set_is_reloaded() {
    let jwks = temp_file("withdrawn");
    let leaked = TokenMinter::generate("ed-1", ISSUER, AUDIENCE).unwrap();
    std::fs::write(&jwks, leaked.jwks_json()).unwrap();
    let v = verifier(&jwks).with_reload(
        std::time::Duration::from_millis(200),
        std::time::Duration::from_millis(100),
    );
    v.refresh().await.unwrap();
    let token = leaked.sign(claims()).unwrap();
    assert!(v.verify(&token).await.is_ok());

    // The provider withdraws the leaked key and keeps signing with another.
    let kept = TokenMinter::generate("ed-2", ISSUER, AUDIENCE).unwrap();
    std::fs::write(&jwks, kept.jwks_json()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    assert_eq!(v.verify(&token).await.unwrap_err(), JwtError::UnknownKey);
    assert!(v.verify(&kept.sign(claims()).unwrap()).await.is_ok());

    // A set that cannot be loaded keeps the keys there are.
    std::fs::write(&jwks, "not a key set").unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    assert!(v.verify(&kept.sign(claims()).unwrap()).await.is_ok());
    std::fs::remove_file(&jwks).unwrap();
}

#[tokio::test]
async fn a_missing_jwks_is_reported_as_unavailable_keys() {
    let v = verifier(&PathBuf::from("/nonexistent/jwks.json"));
    assert_eq!(v.refresh().await.unwrap_err(), JwtError::KeysUnavailable);
    assert!(!v.has_keys().await);
}

#[tokio::test]
async fn tokens_checked_while_no_keys_can_be_loaded_report_unavailable_keys_not_a_bad_token() {
    let keys = keys();
    let v = verifier(&PathBuf::from("/nonexistent/jwks.json"));
    assert_eq!(
        v.verify(&keys.ed.sign(claims()).unwrap())
            .await
            .unwrap_err(),
        JwtError::KeysUnavailable
    );
    // The next tokens come before a refetch is due (a failed start-up load or a health probe
    // used it up): they are still the service's fault, not the caller's.
    assert!(!v.ensure_keys().await);
    for _ in 0..2 {
        assert_eq!(
            v.verify(&keys.ed.sign(claims()).unwrap())
                .await
                .unwrap_err(),
            JwtError::KeysUnavailable
        );
    }
}

/// An HTTP/1.1 server on loopback that answers every request with `response`; its origin and
/// how many requests it took.
async fn serve(response: String) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    (origin, hits)
}

fn from_url(url: String, allow_private: bool) -> JwtVerifier {
    JwtVerifier::new(AuthConfig {
        jwks: JwksSource::parse(&url),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        egress: egress::Egress { allow_private },
    })
}

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn a_jwks_url_is_fetched_only_where_the_egress_rules_allow() {
    let minter = TokenMinter::generate("ed-url", ISSUER, AUDIENCE).unwrap();
    let (origin, hits) = serve(ok(&minter.jwks_json())).await;
    let url = format!("{origin}/jwks.json");
    let loopback_name = url
        .replace("127.0.0.1", "localhost")
        .replace("http:", "https:");

    // Strict rules: a loopback address is refused before anything is sent, whether it is
    // written as an address or as a name that resolves to it (checked at connection time, on
    // the addresses actually connected to, so a name cannot change its answer in between).
    assert_eq!(
        from_url(url.clone(), false).refresh().await,
        Err(JwtError::KeysUnavailable)
    );
    assert_eq!(
        from_url(loopback_name, false).refresh().await,
        Err(JwtError::KeysUnavailable)
    );
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing reached the server"
    );

    // With DPS_ALLOW_PRIVATE_NETWORKS, the same URL serves the keys.
    let open = from_url(url, true);
    assert_eq!(open.refresh().await, Ok(1));
    let token = minter
        .mint(
            "acme",
            "ann",
            &["admin"],
            std::time::Duration::from_secs(60),
        )
        .unwrap();
    assert!(open.verify(&token).await.is_ok());
}

#[tokio::test]
async fn a_jwks_redirect_is_not_followed() {
    let minter = TokenMinter::generate("ed-redirect", ISSUER, AUDIENCE).unwrap();
    let (target, target_hits) = serve(ok(&minter.jwks_json())).await;
    let redirect = format!(
        "HTTP/1.1 302 Found\r\nLocation: {target}/jwks.json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let (origin, hits) = serve(redirect).await;
    let verifier = from_url(format!("{origin}/jwks.json"), true);
    assert_eq!(verifier.refresh().await, Err(JwtError::KeysUnavailable));
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(
        target_hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the redirect's target is never asked"
    );
}

/// A JWKS endpoint that sends an endless body (a hijacked identity provider) is read no
/// further than the 1 MiB a key set may take, whether or not it declares a length: the service
/// never holds what the endpoint sends in its five seconds. The server counts what it could
/// write before the verifier hung up; the old whole-body read took all of it.
#[tokio::test]
async fn an_endless_jwks_body_is_refused_after_a_mebibyte() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    for head in [
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\nConnection: close\r\n\r\n",
    ] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let written = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = written.clone();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            socket.write_all(head.as_bytes()).await.unwrap();
            let chunk = vec![b' '; 64 * 1024];
            while socket.write_all(&chunk).await.is_ok() {
                if counted.fetch_add(chunk.len(), Ordering::SeqCst) > 512 << 20 {
                    break;
                }
            }
        });
        let verifier = from_url(format!("{origin}/jwks.json"), true);
        assert_eq!(verifier.refresh().await, Err(JwtError::KeysUnavailable));
        server.await.unwrap();
        let sent = written.load(Ordering::SeqCst);
        assert!(sent < 64 << 20, "{head:?}: the server wrote {sent} bytes");
    }
}

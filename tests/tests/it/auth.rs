//! Credentials over real HTTP: every way an access token can be wrong answers 401 in the area's
//! shape, a valid token without the role answers 403, and neither touches the handler.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use auth::TokenMinter;
use integration_tests::{Service, TestApp};
use josekit::jws::{HS256, JwsHeader};
use josekit::jwt::JwtPayload;
use serde_json::{Map, Value, json};

use crate::area_b_error;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims() -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("iss".into(), json!(testkit::TEST_ISSUER));
    c.insert("aud".into(), json!(testkit::TEST_AUDIENCE));
    c.insert("sub".into(), json!("alice"));
    c.insert("tenant_id".into(), json!("acme"));
    c.insert("roles".into(), json!(["admin"]));
    c.insert("exp".into(), json!(now() + 600));
    c
}

fn with(change: impl FnOnce(&mut Map<String, Value>)) -> String {
    let mut c = claims();
    change(&mut c);
    testkit::minter().sign(c).unwrap()
}

/// A token whose header says `alg: none`, with an empty signature.
fn unsigned() -> String {
    let mut header = JwsHeader::new();
    header.set_key_id(testkit::TEST_KID);
    let payload = JwtPayload::from_map(claims()).unwrap();
    josekit::jwt::encode_unsecured(&payload, &header).unwrap()
}

/// The classic key-confusion attack: HS256 keyed with the verifier's public key.
fn hs256_with_public_key() -> String {
    let jwks: Value = serde_json::from_str(&testkit::minter().jwks_json()).unwrap();
    let public = jwks["keys"][0]["x"].as_str().unwrap().to_owned();
    let mut header = JwsHeader::new();
    header.set_key_id(testkit::TEST_KID);
    let signer = HS256.signer_from_bytes(public.as_bytes()).unwrap();
    let payload = JwtPayload::from_map(claims()).unwrap();
    josekit::jwt::encode_with_signer(&payload, &header, &signer).unwrap()
}

#[tokio::test]
async fn every_invalid_credential_is_401_and_a_missing_role_is_403() {
    let app = TestApp::spawn(Service::Platform).await;
    let url = app.url("/settings/lkg-retention");

    let stranger =
        TokenMinter::generate("stranger-key", testkit::TEST_ISSUER, testkit::TEST_AUDIENCE)
            .unwrap()
            .mint("acme", "alice", &["admin"], Duration::from_secs(600))
            .unwrap();
    let impostor = TokenMinter::generate(
        testkit::TEST_KID,
        testkit::TEST_ISSUER,
        testkit::TEST_AUDIENCE,
    )
    .unwrap()
    .mint("acme", "alice", &["admin"], Duration::from_secs(600))
    .unwrap();
    let valid = app.token("acme", "alice", &["admin"]);
    let mut tampered = valid.clone();
    tampered.insert_str(valid.find('.').unwrap() + 1, "eyJ4Ijox");

    let cases: Vec<(&str, Option<String>)> = vec![
        ("no Authorization header", None),
        ("a Basic credential", Some("Basic YWxpY2U6cHc=".into())),
        ("an empty bearer", Some("Bearer ".into())),
        ("not a JWT", Some("Bearer not-a-jwt".into())),
        (
            "expired beyond the leeway",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.insert("exp".into(), json!(now() - 120));
                })
            )),
        ),
        (
            "not yet valid beyond the leeway",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.insert("nbf".into(), json!(now() + 600));
                })
            )),
        ),
        (
            "the wrong issuer",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.insert("iss".into(), json!("https://evil.example"));
                })
            )),
        ),
        (
            "the wrong audience",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.insert("aud".into(), json!("someone-else"));
                })
            )),
        ),
        (
            "no tenant_id",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.remove("tenant_id");
                })
            )),
        ),
        (
            "no sub",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.remove("sub");
                })
            )),
        ),
        (
            "no exp",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.remove("exp");
                })
            )),
        ),
        (
            "roles not an array",
            Some(format!(
                "Bearer {}",
                with(|c| {
                    c.insert("roles".into(), json!("admin"));
                })
            )),
        ),
        ("an unknown key", Some(format!("Bearer {stranger}"))),
        (
            "a different key under the trusted kid",
            Some(format!("Bearer {impostor}")),
        ),
        ("alg none", Some(format!("Bearer {}", unsigned()))),
        (
            "HS256 keyed with the public key",
            Some(format!("Bearer {}", hs256_with_public_key())),
        ),
        ("altered claims", Some(format!("Bearer {tampered}"))),
    ];
    for (case, header) in cases {
        let mut request = app.http.get(&url);
        if let Some(header) = &header {
            request = request.header("Authorization", header);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{case}");
        let body: Value = response.json().await.unwrap();
        let error = area_b_error(&body, "UNAUTHORIZED");
        // The message explains the failure without repeating the credential.
        if let Some(header) = header {
            let token = header
                .trim_start_matches("Bearer ")
                .trim_start_matches("Basic ");
            if token.len() > 8 {
                assert!(!body.to_string().contains(token), "{case}: {error}");
            }
        }
    }

    // Within the 60-second leeway, a just-expired token is still accepted.
    let just_expired = with(|c| {
        c.insert("exp".into(), json!(now() - 30));
    });
    let response = app
        .http
        .get(&url)
        .bearer_auth(just_expired)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let response = app.http.get(&url).bearer_auth(&valid).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let analyst = app.token("acme", "bob", &["analyst"]);
    let response = app
        .http
        .get(&url)
        .bearer_auth(analyst)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    area_b_error(&response.json::<Value>().await.unwrap(), "FORBIDDEN");

    // A refused caller never reaches the handler: nothing was written.
    let response = app
        .http
        .put(&url)
        .bearer_auth(app.token("acme", "bob", &["analyst"]))
        .json(&json!({ "retention_hours": 24 }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let body: Value = app
        .http
        .get(&url)
        .bearer_auth(&valid)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["data"]["retention_hours"], 72);
}

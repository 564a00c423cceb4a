//! The real `tokens-api` binary through a whole tokenize, grant and detokenize round, with
//! debug logging on: no value, token, token id, API key, access token or grant reaches a log
//! line, and SIGTERM exits cleanly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::time::Duration;

use base64::Engine as _;
use diesel_async::AsyncConnection as _;
use serde_json::{Value, json};

#[tokio::test]
async fn a_full_round_trip_leaves_no_secret_in_the_logs() {
    let db = testkit::database().await;
    let master_key = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
    let mut conn = db::AsyncPgConnection::establish(&db.url).await.unwrap();
    let (_, key) = auth::api_keys::create(&mut conn, &"acme".parse().unwrap(), None, "logs")
        .await
        .unwrap();
    let api_key = key.expose().to_owned();
    let mut env = testkit::service_env(&db, &master_key);
    env.insert("RUST_LOG".into(), "debug".into());
    let service = testkit::ServiceProcess::start(env!("CARGO_BIN_EXE_tokens-api"), &env);
    let base = format!("{}/api/v1/tokens", service.origin);
    boot::install_tls_provider();
    let http = reqwest::Client::new();
    let admin = testkit::minter()
        .mint(
            "acme",
            "alice",
            &["admin", "support"],
            Duration::from_secs(600),
        )
        .unwrap();

    let policy: Value = http
        .post(format!("{base}/policies"))
        .bearer_auth(&admin)
        .json(&json!({
            "name": "logs",
            "type_rules": { "us_ssn": { "mode": "deterministic" }, "email": { "mode": "format_preserving" } },
            "allowed_roles": ["support"],
            "allowed_purposes": ["audit"]
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ssn = "523-45-6781";
    let email = "zelda.quartz@example.org";
    let tokenized: Value = http
        .post(format!("{base}/tokenize"))
        .header("X-API-Key", &api_key)
        .json(&json!({
            "policy_id": policy["policy_id"],
            "items": [
                { "value": ssn, "pii_type": "us_ssn" },
                { "value": email, "pii_type": "email" },
                { "value": "999-99-9999", "pii_type": "us_ssn" }
            ]
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tokenized["success_count"], 2, "{tokenized}");
    let written = &tokenized["results"].as_array().unwrap()[..2];
    let ids: Vec<String> = written
        .iter()
        .map(|r| r["token_id"].as_str().unwrap().to_owned())
        .collect();
    let tokens: Vec<String> = written
        .iter()
        .map(|r| r["token"].as_str().unwrap().to_owned())
        .collect();
    let grant: Value = http
        .post(format!("{base}/grant"))
        .bearer_auth(&admin)
        .json(&json!({ "token_ids": ids, "purpose": "audit" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let grant_jwt = grant["grant_jwt"].as_str().unwrap().to_owned();
    let revealed: Value = http
        .post(format!("{base}/detokenize"))
        .bearer_auth(&admin)
        .json(&json!({ "tokens": ids, "grant_jwt": grant_jwt }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(revealed["results"][1]["value"], email);
    // A second use, refused, is logged as a refusal without the grant.
    let response = http
        .post(format!("{base}/detokenize"))
        .bearer_auth(&admin)
        .json(&json!({ "tokens": ids, "grant_jwt": grant_jwt }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);

    let (status, lines) = service.stop();
    assert!(status.success(), "exit status {status}");
    let requests = lines
        .iter()
        .filter(|l| l.contains("\"message\":\"request\""))
        .count();
    assert_eq!(requests, 5, "one line per request: {lines:#?}");
    // Each trace id an answer gives can be found in the log, on its request's line.
    for answer in [&tokenized, &grant, &revealed] {
        let trace = answer["trace_id"].as_str().unwrap();
        assert!(
            lines
                .iter()
                .any(|l| l.contains("\"message\":\"request\"") && l.contains(trace)),
            "trace id {trace} not logged: {lines:#?}"
        );
    }
    let grant_signature = grant_jwt.rsplit('.').next().unwrap().to_owned();
    let mut secrets: Vec<&str> = vec![
        ssn,
        "523456781",
        email,
        "999-99-9999",
        &api_key,
        &admin,
        &grant_jwt,
        &grant_signature,
        &master_key,
    ];
    secrets.extend(ids.iter().map(String::as_str));
    secrets.extend(tokens.iter().map(String::as_str));
    let leaks = testkit::leaks(&lines, &secrets);
    assert!(leaks.is_empty(), "log lines leak secrets: {leaks:#?}");
}

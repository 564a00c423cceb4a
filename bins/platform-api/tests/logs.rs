//! The real `platform-api` binary, run as operators run it: JSON logs on stderr, one line per
//! request with its id, no credential or submitted value in any line, and a clean exit on
//! SIGTERM.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

#[tokio::test]
async fn json_logs_carry_request_ids_and_never_a_credential_or_a_value() {
    let db = testkit::database().await;
    let master_key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_platform-api"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &db.url)
        .env("DPS_AUTH_JWKS", testkit::jwks_file())
        .env("DPS_AUTH_ISSUER", testkit::TEST_ISSUER)
        .env("DPS_AUTH_AUDIENCE", testkit::TEST_AUDIENCE)
        .env("DPS_MASTER_KEY", &master_key)
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("HTTP_WORKERS", "1")
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", "debug")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let (addr_tx, addr_rx) = mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    let collected = lines.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap();
            if let Ok(event) = serde_json::from_str::<Value>(&line)
                && event["message"] == "listening"
            {
                let _ = addr_tx.send(event["addr"].as_str().unwrap_or_default().to_owned());
            }
            collected.lock().unwrap().push(line);
        }
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("no `listening` line; logs: {:?}", lines.lock().unwrap()));
    let base = format!("http://{addr}/api/v1");
    let http = reqwest::Client::new();

    let admin = testkit::minter()
        .mint("acme", "alice", &["admin"], Duration::from_secs(600))
        .unwrap();
    let forged = format!("{}x", &admin[..admin.len() - 1]);
    let api_key = "dpsk_SECRETSECRETSECRETSECRETSECRETSECRETSECRET";
    let ssn = "123-45-6789";
    let card = "4111111111111111";

    let response = http
        .get(format!("{base}/health"))
        .header("X-Request-Id", "trace-me-123")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = http
        .put(format!("{base}/settings/lkg-retention"))
        .bearer_auth(&admin)
        .json(&json!({ "retention_hours": 168 }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = http
        .put(format!("{base}/settings/remediation-policy"))
        .bearer_auth(&admin)
        .json(&json!({ "denied_safety_classes": [ssn] }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let response = http
        .put(format!("{base}/settings/lkg-retention"))
        .bearer_auth(&admin)
        .header("Content-Type", "application/json")
        .body(format!("{{\"retention_hours\": \"{card}\""))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let response = http
        .get(format!("{base}/settings/cosigning"))
        .bearer_auth(&forged)
        .header("X-API-Key", api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // SIGTERM: the server drains and exits successfully.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "exit status {status}");
    reader.join().unwrap();

    let lines = lines.lock().unwrap().clone();
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let requests: Vec<&Value> = events
        .iter()
        .filter(|e| e["message"] == "request")
        .collect();
    assert_eq!(requests.len(), 5, "one line per request: {lines:#?}");
    assert!(
        requests
            .iter()
            .all(|e| e["request_id"].is_string() && e["route"].is_string())
    );
    assert!(requests.iter().any(|e| e["request_id"] == "trace-me-123"));
    assert!(events.iter().any(|e| e["message"] == "stopped"));

    let mut secrets = vec![
        admin.as_str(),
        forged.as_str(),
        api_key,
        ssn,
        card,
        master_key.as_str(),
    ];
    // Each token's signature alone, too: a log line must not carry any part that authenticates.
    let signatures: Vec<&str> = [&admin, &forged]
        .iter()
        .map(|t| t.rsplit('.').next().unwrap())
        .collect();
    secrets.extend(signatures);
    let password = db
        .url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password.to_owned());
    if let Some(password) = password.as_deref().filter(|p| p.len() >= 8) {
        secrets.push(password);
    }
    for line in &lines {
        for secret in &secrets {
            assert!(!line.contains(secret), "a log line leaks a secret: {line}");
        }
    }
}

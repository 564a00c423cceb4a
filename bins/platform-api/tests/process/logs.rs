//! JSON logs on stderr, one line per request with its id, no credential or submitted value in
//! any line, and a clean exit on SIGTERM.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

#[tokio::test]
async fn json_logs_carry_request_ids_and_never_a_credential_or_a_value() {
    let db = testkit::database().await;
    let master_key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let mut env = testkit::service_env(&db, &master_key);
    env.insert("RUST_LOG".into(), "debug".into());
    env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "true".into());
    // The platform's co-signing client certificate: its private key must never be logged.
    let pki = std::env::temp_dir().join(format!("dps-logs-{}", uuid::Uuid::new_v4()));
    let (cert, key) = testkit::identity::self_signed_certificate(&pki);
    let key_pem = std::fs::read_to_string(&key).unwrap();
    let key_line = key_pem
        .lines()
        .find(|l| l.len() >= 40 && !l.starts_with("-----"))
        .unwrap()
        .to_owned();
    env.insert(
        "DPS_COSIGNING_CLIENT_CERT_FILE".into(),
        cert.to_string_lossy().into_owned(),
    );
    env.insert(
        "DPS_COSIGNING_CLIENT_KEY_FILE".into(),
        key.to_string_lossy().into_owned(),
    );
    let service = testkit::ServiceProcess::start(env!("CARGO_BIN_EXE_platform-api"), &env);
    let base = format!("{}/api/v1", service.origin);
    boot::install_tls_provider();
    let http = reqwest::Client::new();

    let admin = testkit::minter()
        .mint("acme", "alice", &["admin"], Duration::from_secs(600))
        .unwrap();
    let forged = format!("{}x", &admin[..admin.len() - 1]);
    let api_key = "dpsk_SECRETSECRETSECRETSECRETSECRETSECRETSECRET";
    let ssn = "123-45-6789";
    let card = "4111111111111111";

    // As an orchestrator would, wait until the service reports ready: under a loaded test
    // machine its first database check can take longer than the check allows.
    let mut polls = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        polls += 1;
        let response = http
            .get(format!("{base}/health"))
            .header("X-Request-Id", "trace-me-123")
            .send()
            .await
            .unwrap();
        if response.status() == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never ready: {}",
            response.status()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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

    // A connector's client secret, accepted and refused.
    let client_secret = "azure-secret-do-not-log-9c1e";
    let azure = |secret: &str, account: &str| {
        json!({"name": account, "provider": "azure", "config": {
            "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "client_id": "0b3f2c1e-1111-2222-3333-444455556666",
            "client_secret": secret, "storage_account": account}})
    };
    let response = http
        .post(format!("{base}/connectors"))
        .bearer_auth(&admin)
        .json(&azure(client_secret, "acmedata"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let response = http
        .post(format!("{base}/connectors"))
        .bearer_auth(&admin)
        .json(&azure(client_secret, "Not Valid"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    // An alert channel whose URL carries a token, and the signing secret it is given; a
    // co-signing endpoint with a token in its path.
    let hook_token = "hooktoken-do-not-log-5b7d";
    let response = http
        .post(format!("{base}/governance/channels"))
        .bearer_auth(&admin)
        .json(&json!({"name": "hooks", "type": "webhook",
                      "url": format!("http://127.0.0.1:9/hook?token={hook_token}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let channel: Value = response.json().await.unwrap();
    let hook_secret = channel["data"]["secret"].as_str().unwrap().to_owned();
    let response = http
        .post(format!("{base}/governance/channels"))
        .bearer_auth(&admin)
        .json(&json!({"name": "bad", "type": "webhook",
                      "url": format!("ftp://127.0.0.1/hook?token={hook_token}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let path_token = "pathtoken-do-not-log-31c0";
    let response = http
        .put(format!("{base}/settings/cosigning"))
        .bearer_auth(&admin)
        .json(&json!({"mode": "optional",
                      "endpoint_url": format!("https://127.0.0.1:9/sign/{path_token}")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    // SIGTERM: the server drains and exits successfully.
    let (status, lines) = service.stop();
    assert!(status.success(), "exit status {status}");
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let requests: Vec<&Value> = events
        .iter()
        // A 503 (an unready poll) is logged as "request failed".
        .filter(|e| e["message"] == "request" || e["message"] == "request failed")
        .collect();
    assert_eq!(
        requests.len(),
        9 + polls,
        "one line per request: {lines:#?}"
    );
    assert!(
        requests
            .iter()
            .all(|e| e["request_id"].is_string() && e["route"].is_string())
    );
    assert!(requests.iter().any(|e| e["request_id"] == "trace-me-123"));
    assert!(events.iter().any(|e| e["message"] == "stopped"));

    // Each token's signature alone, too: a log line must not carry any part that authenticates.
    let signatures: Vec<&str> = [&admin, &forged]
        .iter()
        .map(|t| t.rsplit('.').next().unwrap())
        .collect();
    let password = db
        .url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password.to_owned())
        .unwrap_or_default();
    let mut secrets = vec![
        admin.as_str(),
        forged.as_str(),
        api_key,
        ssn,
        card,
        master_key.as_str(),
        password.as_str(),
        client_secret,
        hook_token,
        hook_secret.as_str(),
        path_token,
        key_line.as_str(),
    ];
    secrets.extend(signatures);
    let leaks = testkit::leaks(&lines, &secrets);
    assert!(leaks.is_empty(), "log lines leak secrets: {leaks:#?}");
}

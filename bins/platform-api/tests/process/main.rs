//! The real `platform-api` binary, run as operators run it, in a process of its own: its logs,
//! and remediation surviving the process being killed at each step.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod crash;
mod hostile;
mod logs;
mod replicas;
mod scan_restart;
mod worker_kill;

/// A tokenization policy for SSNs in `mode`, made directly in the vault of tenant `acme`
/// (tokens-api would make the same rows); its id.
async fn ssn_token_policy(conn: &mut diesel_async::AsyncPgConnection, mode: &str) -> uuid::Uuid {
    let definition = vault::policies::Definition {
        name: format!("ssn-{mode}"),
        type_rules: [(
            "us_ssn".to_owned(),
            vault::policies::RuleInput {
                mode: mode.into(),
                min_confidence: None,
                deterministic_scope: None,
            },
        )]
        .into(),
        allowed_roles: vec!["support".into()],
        allowed_purposes: vec!["fraud_review".into()],
        require_reason: false,
        failure_mode: None,
        token_ttl_seconds: None,
        default_region: None,
    };
    vault::policies::create(
        conn,
        &"acme".parse().unwrap(),
        &"alice".parse().unwrap(),
        &definition,
    )
    .await
    .unwrap()
    .policy_id
    .as_uuid()
}

/// The environment of a platform-api (or scan-worker) on `db` whose cloud is `moto`.
fn moto_env(
    db: &testkit::TestDatabase,
    master_key: &str,
    moto: &testkit::emulators::Emulator,
) -> std::collections::HashMap<String, String> {
    let mut env = testkit::service_env(db, master_key);
    for (name, value) in testkit::seed::moto_platform_env(&moto.url()) {
        env.insert(name.into(), value);
    }
    env
}

/// `bucket` in moto, holding `objects`.
async fn seeded_bucket<B: AsRef<[u8]>>(
    moto: &testkit::emulators::Emulator,
    bucket: &str,
    objects: &[(String, B)],
) -> std::sync::Arc<dyn object_store::ObjectStore> {
    let store = testkit::seed::s3_bucket(&moto.url(), bucket).await;
    let seeded: Vec<(&str, &[u8])> = objects
        .iter()
        .map(|(key, body)| (key.as_str(), body.as_ref()))
        .collect();
    testkit::seed::put_all(store.as_ref(), &seeded).await;
    store
}

/// An AWS connector of tenant `acme` to `bucket`, made over HTTP; its id.
async fn aws_connector(http: &reqwest::Client, base: &str, admin: &str, bucket: &str) -> String {
    let created: serde_json::Value = http
        .post(format!("{base}/connectors"))
        .bearer_auth(admin)
        .json(
            &serde_json::json!({"name": bucket, "provider": "aws", "config": {
                "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                "external_id": "tenant-acme-7731",
                "region": "us-east-1",
                "buckets": [bucket],
            }}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["data"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned()
}

/// A full scan of `connector` with `options`, started over HTTP; its id.
async fn full_scan(
    http: &reqwest::Client,
    base: &str,
    admin: &str,
    connector: &str,
    options: serde_json::Value,
) -> String {
    let started: serde_json::Value = http
        .post(format!("{base}/connectors/{connector}/scan"))
        .bearer_auth(admin)
        .json(&serde_json::json!({"type": "full", "options": options}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    started["data"]["scan_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned()
}

/// Asserts that tenant `acme` has `n` SSN findings, each object and value once.
async fn assert_ssn_findings_once(conn: &mut diesel_async::AsyncPgConnection, n: usize) {
    let findings = replicas::count(
        conn,
        "SELECT count(*) AS n FROM findings WHERE tenant_id = $1 AND pii_type = 'us_ssn'",
    )
    .await;
    let distinct = replicas::count(
        conn,
        "SELECT count(DISTINCT (object_key, fingerprint)) AS n FROM findings \
         WHERE tenant_id = $1 AND pii_type = 'us_ssn'",
    )
    .await;
    assert_eq!(
        (findings, distinct),
        (n as i64, n as i64),
        "every SSN found, none twice"
    );
}

/// Polls `GET /scans/:id` until the scan is neither queued nor running, asking each of
/// `origins` in turn (replicas answer alike) and riding out failed requests (a database that
/// is coming back); the last body.
async fn scan_ended(
    http: &reqwest::Client,
    origins: &[&str],
    admin: &str,
    scan: &str,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    for n in 0.. {
        let origin = origins[n % origins.len()];
        let response = http
            .get(format!("{origin}/api/v1/scans/{scan}"))
            .bearer_auth(admin)
            .send()
            .await;
        if let Ok(response) = response
            && response.status() == 200
        {
            let body: serde_json::Value = response.json().await.unwrap();
            let status = body["data"]["status"].as_str().unwrap_or_default();
            if !matches!(status, "queued" | "running") {
                return body;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "scan {scan} never ended"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    unreachable!("the loop returns or fails")
}

//! The real `platform-api` binary, run as operators run it, in a process of its own: its logs,
//! and remediation surviving the process being killed at each step.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod crash;
mod governance_restart;
mod hostile;
mod logs;
mod replicas;
mod scan_restart;
mod three_workers;
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
    put(store, objects).await
}

/// `bucket` in moto with versioning on, holding `objects`: every later write of an object is a
/// version of its own, so a test can count them.
async fn versioned_bucket<B: AsRef<[u8]>>(
    moto: &testkit::emulators::Emulator,
    bucket: &str,
    objects: &[(String, B)],
) -> std::sync::Arc<dyn object_store::ObjectStore> {
    let store = testkit::seed::s3_bucket(&moto.url(), bucket).await;
    testkit::seed::s3_versioning(&moto.url(), bucket).await;
    put(store, objects).await
}

async fn put<B: AsRef<[u8]>>(
    store: std::sync::Arc<dyn object_store::ObjectStore>,
    objects: &[(String, B)],
) -> std::sync::Arc<dyn object_store::ObjectStore> {
    let seeded: Vec<(&str, &[u8])> = objects
        .iter()
        .map(|(key, body)| (key.as_str(), body.as_ref()))
        .collect();
    testkit::seed::put_all(store.as_ref(), &seeded).await;
    store
}

/// An AWS connector of tenant `acme` to `bucket`, made over HTTP; its id.
async fn aws_connector(http: &reqwest::Client, base: &str, admin: &str, bucket: &str) -> String {
    // The tenant's own external id, which an AWS connector must carry.
    let answer: serde_json::Value = http
        .get(format!("{base}/connectors/external-id"))
        .bearer_auth(admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let created: serde_json::Value = http
        .post(format!("{base}/connectors"))
        .bearer_auth(admin)
        .json(
            &serde_json::json!({"name": bucket, "provider": "aws", "config": {
                "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                "external_id": answer["data"]["external_id"],
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

/// A `platform-api` on `db` with `settings` over its moto environment, a connector of tenant
/// `acme` over `bucket` in `moto`, and a full scan of it with `options` started: the service,
/// and the scan's id.
async fn scan_of_bucket(
    db: &testkit::TestDatabase,
    master_key: &str,
    moto: &testkit::emulators::Emulator,
    bucket: &str,
    settings: &[(&str, &str)],
    options: serde_json::Value,
) -> (Started, String) {
    let mut env = moto_env(db, master_key, moto);
    for (name, value) in settings {
        env.insert((*name).into(), (*value).into());
    }
    let started = start_ready(&env).await;
    let connector = aws_connector(&started.http, &started.base, &started.admin, bucket).await;
    let scan = full_scan(
        &started.http,
        &started.base,
        &started.admin,
        &connector,
        options,
    )
    .await;
    (started, scan)
}

/// The body of `GET <base><path>`, as the admin.
async fn get(started: &Started, path: &str) -> serde_json::Value {
    started
        .http
        .get(format!("{}{path}", started.base))
        .bearer_auth(&started.admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `GET /scans/:id/deployment-config` once the scan's enumeration is complete: what remote
/// workers are given.
async fn deployment_config(started: &Started, scan: &str) -> serde_json::Value {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let config = get(started, &format!("/scans/{scan}/deployment-config")).await;
        if config["data"]["enumeration_status"] == "complete" {
            return config;
        }
        assert!(Instant::now() < deadline, "{config}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Asserts that tenant `acme` has `n` SSN values in its findings, each object's column found
/// once: a finding recorded twice would double both.
async fn assert_ssn_findings_once(conn: &mut diesel_async::AsyncPgConnection, n: usize) {
    let values = replicas::count(
        conn,
        "SELECT coalesce(sum(occurrences), 0)::bigint AS n FROM findings
          WHERE tenant_id = $1 AND pii_type = 'us_ssn'",
    )
    .await;
    let findings = replicas::count(
        conn,
        "SELECT count(*) AS n FROM findings WHERE tenant_id = $1 AND pii_type = 'us_ssn'",
    )
    .await;
    let distinct = replicas::count(
        conn,
        "SELECT count(DISTINCT (object_key, field, tokenized)) AS n FROM findings \
         WHERE tenant_id = $1 AND pii_type = 'us_ssn'",
    )
    .await;
    assert_eq!(values, n as i64, "every SSN found, none twice");
    assert_eq!(findings, distinct, "each object's column recorded once");
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

/// A `platform-api` process, a client, and an admin token of tenant `acme`.
struct Started {
    service: testkit::ServiceProcess,
    http: reqwest::Client,
    admin: String,
    /// `<origin>/api/v1`.
    base: String,
}

/// Starts `platform-api` on `env` and waits until `/health` answers 200: the first
/// connections to a fresh cluster can take a while on a busy machine.
async fn start_ready(env: &std::collections::HashMap<String, String>) -> Started {
    use std::time::{Duration, Instant};
    let service = testkit::ServiceProcess::start(env!("CARGO_BIN_EXE_platform-api"), env);
    boot::install_tls_provider();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let admin = testkit::minter()
        .mint("acme", "ann", &["admin"], Duration::from_secs(3600))
        .unwrap();
    let base = format!("{}/api/v1", service.origin);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let health = http
            .get(format!("{base}/health"))
            .bearer_auth(&admin)
            .send()
            .await;
        if health.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Started {
        service,
        http,
        admin,
        base,
    }
}

/// Asserts that tenant `acme` has one remediation request per key of `keys`, each receipted
/// with one `action_executed` entry of `action`, and each object written once in the
/// versioned `bucket`: the original and the remediated version.
async fn assert_remediated_once(
    conn: &mut diesel_async::AsyncPgConnection,
    moto: &testkit::emulators::Emulator,
    bucket: &str,
    keys: &[&str],
    action: &str,
) {
    let n = keys.len() as i64;
    let requests = replicas::count(
        conn,
        "SELECT count(*) AS n FROM remediation_requests WHERE tenant_id = $1",
    )
    .await;
    let receipted = replicas::count(
        conn,
        "SELECT count(*) AS n FROM remediation_requests WHERE tenant_id = $1 AND status = 'receipted'",
    )
    .await;
    assert_eq!((requests, receipted), (n, n));
    let executed = replicas::count(
        conn,
        &format!(
            "SELECT count(*) AS n FROM audit_log WHERE tenant_id = $1 \
              AND kind = 'action_executed' AND action_type = '{action}'"
        ),
    )
    .await;
    assert_eq!(executed, n, "one action_executed entry per object");
    for key in keys {
        assert_eq!(
            testkit::seed::s3_versions(&moto.url(), bucket, key).await,
            (2, 0),
            "{key} is written once"
        );
    }
}

//! Postgres crashed (`pg_ctl stop -m immediate`) in the middle of a scan run by platform-api's
//! own workers, and started again a second later. The service reconnects, the chunks whose
//! workers lost their connection are taken again when their leases run out, and the scan
//! completes with every object covered once and no finding twice.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use serde_json::{Value, json};
use testkit::{ServiceProcess, emulators, seed};

use crate::replicas::count;
use crate::worker_kill::object;

const TENANT: &str = "acme";
const BUCKET: &str = "big-exports";
const OBJECTS: usize = 160;

async fn get(http: &reqwest::Client, url: &str, admin: &str) -> Option<Value> {
    let response = http.get(url).bearer_auth(admin).send().await.ok()?;
    if response.status() != 200 {
        return None;
    }
    response.json().await.ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_crash_mid_scan_is_survived_with_exact_coverage() {
    let (mut cluster, db) = testkit::private_cluster().await;
    let master_key = base64::engine::general_purpose::STANDARD.encode([3u8; 32]);
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), BUCKET).await;
    let objects: Vec<(String, Vec<u8>)> = (0..OBJECTS).map(object).collect();
    let seeded: Vec<(&str, &[u8])> = objects
        .iter()
        .map(|(key, body)| (key.as_str(), body.as_slice()))
        .collect();
    seed::put_all(bucket.as_ref(), &seeded).await;

    let mut env: HashMap<String, String> = testkit::service_env(&db, &master_key);
    for (name, value) in seed::moto_platform_env(&moto.url()) {
        env.insert(name.into(), value);
    }
    env.insert("DPS_SCAN_WORKERS".into(), "2".into());
    env.insert("DPS_SCAN_LEASE_SECONDS".into(), "3".into());
    env.insert("DATABASE_WAIT_TIMEOUT_MS".into(), "1000".into());
    let service = ServiceProcess::start(env!("CARGO_BIN_EXE_platform-api"), &env);
    boot::install_tls_provider();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let admin = testkit::minter()
        .mint(TENANT, "ann", &["admin"], Duration::from_secs(3600))
        .unwrap();
    let base = format!("{}/api/v1", service.origin);
    let created: Value = http
        .post(format!("{base}/connectors"))
        .bearer_auth(&admin)
        .json(&json!({"name": "Exports", "provider": "aws", "config": {
            "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
            "external_id": "tenant-acme-7731",
            "region": "us-east-1",
            "buckets": [BUCKET],
        }}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let connector = created["data"]["id"].as_str().unwrap().to_owned();
    let started: Value = http
        .post(format!("{base}/connectors/{connector}/scan"))
        .bearer_auth(&admin)
        .json(&json!({"type": "full", "options": {"max_workers": 2}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let scan = started["data"]["scan_id"].as_str().unwrap().to_owned();

    // The crash comes once the first outcomes are recorded, and before the last.
    let recorded =
        "SELECT count(*) AS n FROM scan_resources WHERE tenant_id = $1 AND state <> 'pending'";
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_crash = {
        let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
        loop {
            let n = count(&mut conn, recorded).await;
            if n >= 1 {
                break n;
            }
            assert!(Instant::now() < deadline, "nothing was recorded");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::task::block_in_place(|| cluster.crash()).unwrap();
    assert!(
        at_crash < OBJECTS as i64,
        "the crash was to come mid-scan, but {at_crash} of {OBJECTS} were recorded"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::block_in_place(|| cluster.start()).unwrap();

    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        if let Some(body) = get(&http, &format!("{base}/scans/{scan}"), &admin).await {
            let status = body["data"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if !matches!(status.as_str(), "queued" | "running") {
                break body;
            }
        }
        assert!(Instant::now() < deadline, "the scan never ended");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(done["data"]["status"], "completed", "{done}");
    assert_eq!(
        done["data"]["progress"]["files_processed"], OBJECTS,
        "{done}"
    );
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let findings = count(
        &mut conn,
        "SELECT count(*) AS n FROM findings WHERE tenant_id = $1 AND pii_type = 'us_ssn'",
    )
    .await;
    let distinct = count(
        &mut conn,
        "SELECT count(DISTINCT (object_key, fingerprint)) AS n FROM findings \
         WHERE tenant_id = $1 AND pii_type = 'us_ssn'",
    )
    .await;
    assert_eq!((findings, distinct), (OBJECTS as i64, OBJECTS as i64));
    let (status, _) = service.stop();
    assert!(status.success());
}

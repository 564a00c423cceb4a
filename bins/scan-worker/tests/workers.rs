//! The real `scan-worker` binary against real Postgres and moto: two processes share one scan,
//! and a worker that dies or stalls mid-chunk has its chunk re-run without a single resource
//! counted twice.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::{ExpressionMethods as _, QueryDsl as _};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use testkit::{emulators, seed};

const SSN_BODY: &str = "employee ssn 219-09-9999\n";

struct Setup {
    db: testkit::TestDatabase,
    _moto: emulators::Emulator,
    moto_url: String,
    master_b64: String,
    tenant: ids::TenantId,
    scan: ids::ScanId,
    token: String,
}

/// A scan of `objects` objects (one SSN each), enumerated and ready for workers.
async fn setup(objects: usize, max_workers: u32) -> Setup {
    let db = testkit::database().await;
    let moto = emulators::moto(&[]);
    let moto_url = moto.url();
    let bucket = seed::s3_bucket(&moto_url, "payroll").await;
    let keys: Vec<String> = (0..objects).map(|i| format!("p/{i:05}.txt")).collect();
    let items: Vec<(&str, &[u8])> = keys
        .iter()
        .map(|k| (k.as_str(), SSN_BODY.as_bytes()))
        .collect();
    seed::put_all(bucket.as_ref(), &items).await;

    let (master, master_b64) = keys::MasterKey::generate().unwrap();
    let master = Arc::new(master);
    let keyring = keys::KeyRing::new(master.clone());
    let tenant: ids::TenantId = "acme".parse().unwrap();
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let config = json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": "tenant-acme-7731",
        "region": "us-east-1",
        "buckets": ["payroll"],
    });
    let connector = connectors::store::create(
        &mut conn,
        &keyring,
        &tenant,
        &connectors::NewConnector {
            name: "Payroll",
            provider: "aws",
            config: &config,
            aws_external_id: config["external_id"].as_str().unwrap_or_default(),
        },
    )
    .await
    .unwrap();
    let token_key = [7u8; 32];
    let options = json!({ "max_workers": max_workers });
    let created = scans::store::create(
        &mut conn,
        &tenant,
        &token_key,
        &scans::store::NewScan {
            connectors: &[connector.id.to_string()],
            kind: Some("full"),
            options: Some(&options),
            tier: scans::Tier::standard(),
            origin: scans::store::Origin::Connector,
        },
    )
    .await
    .unwrap();
    // The coordinator's part, done here: start and enumerate.
    let started = scans::lifecycle::start_next(&mut conn).await.unwrap();
    assert_eq!(started, Some((tenant.clone(), created.id)));
    let cloud = seed::moto_cloud(&moto_url);
    scans::enumerate::enumerate(&mut conn, &cloud, &keyring, &tenant, created.id)
        .await
        .unwrap();
    Setup {
        token: scans::store::worker_token(&token_key, &tenant, created.id),
        db,
        _moto: moto,
        moto_url,
        master_b64,
        tenant,
        scan: created.id,
    }
}

fn worker(setup: &Setup, token: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_scan-worker"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SCAN_ID", setup.scan.to_string())
        .env("AUTH_TOKEN", token)
        .env("COORDINATOR_URL", "http://127.0.0.1:9/")
        .env("DATABASE_URL", &setup.db.url)
        .env("DPS_MASTER_KEY", &setup.master_b64)
        .env("DPS_SCAN_LEASE_SECONDS", "2")
        .env("DATABASE_STATEMENT_TIMEOUT_MS", "3000")
        .envs(seed::moto_platform_env(&setup.moto_url))
        .env("RUST_LOG", "warn")
        .spawn()
        .unwrap()
}

fn wait(child: &mut Child, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("scan-worker did not finish in {within:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

async fn findings_rows(conn: &mut AsyncPgConnection, scan: ids::ScanId) -> i64 {
    use db::schema::findings;
    findings::table
        .filter(findings::scan_id.eq(scan.as_uuid()))
        .count()
        .get_result(conn)
        .await
        .unwrap()
}

async fn processed_in_chunk0(conn: &mut AsyncPgConnection, scan: ids::ScanId) -> i32 {
    use db::schema::scan_chunks;
    scan_chunks::table
        .filter(scan_chunks::scan_id.eq(scan.as_uuid()))
        .filter(scan_chunks::chunk_no.eq(0))
        .select(scan_chunks::files_processed)
        .first(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn two_worker_processes_share_one_scan() {
    let setup = setup(200, 4).await;
    let mut a = worker(&setup, &setup.token);
    let mut b = worker(&setup, &setup.token);
    assert_eq!(wait(&mut a, Duration::from_secs(120)), 0);
    assert_eq!(wait(&mut b, Duration::from_secs(120)), 0);

    let mut conn = AsyncPgConnection::establish(&setup.db.url).await.unwrap();
    let scan = scans::store::get(&mut conn, &setup.tenant, setup.scan)
        .await
        .unwrap();
    assert_eq!(scan.status, scans::Status::Completed);
    assert_eq!(scan.counts.enumerated, 200);
    assert_eq!(scan.counts.scanned, 200);
    assert_eq!(scan.counts.findings, 200);
    assert_eq!(findings_rows(&mut conn, setup.scan).await, 200);
    let workers = scans::store::workers(&mut conn, &setup.tenant, setup.scan)
        .await
        .unwrap();
    assert_eq!(workers.len(), 4);
    let mut ids: Vec<String> = workers.iter().filter_map(|w| w.worker_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 2, "both processes ran chunks: {ids:?}");
    assert!(ids.iter().all(|id| id.starts_with("scan-worker@")));
}

#[tokio::test]
async fn a_worker_with_another_token_is_refused() {
    let setup = setup(3, 1).await;
    let mut intruder = worker(&setup, "dpsw_not-the-token");
    assert_eq!(wait(&mut intruder, Duration::from_secs(30)), 2);
    let mut conn = AsyncPgConnection::establish(&setup.db.url).await.unwrap();
    let scan = scans::store::get(&mut conn, &setup.tenant, setup.scan)
        .await
        .unwrap();
    assert_eq!(
        scan.counts.processed(),
        0,
        "the refused worker wrote nothing"
    );
}

/// Worker A stops mid-chunk (killed, or stalled past its lease); worker B takes the chunk over
/// when the lease expires and runs only what A did not record. A stalled A that wakes up
/// afterwards writes nothing.
async fn takeover(stop_signal: &str) {
    let setup = setup(150, 1).await;
    let mut conn = AsyncPgConnection::establish(&setup.db.url).await.unwrap();
    let mut a = worker(&setup, &setup.token);
    let deadline = Instant::now() + Duration::from_secs(60);
    while processed_in_chunk0(&mut conn, setup.scan).await < 10 {
        assert!(Instant::now() < deadline, "worker A made no progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(&a, stop_signal);
    let at_stop = processed_in_chunk0(&mut conn, setup.scan).await;
    assert!(at_stop < 150, "A finished before it was stopped");

    let mut b = worker(&setup, &setup.token);
    assert_eq!(wait(&mut b, Duration::from_secs(120)), 0);
    if stop_signal == "STOP" {
        signal(&a, "CONT");
        // A's next write finds the fence moved on, so it stops without writing (or, if it
        // stalled inside a transaction, the server already ended that session: exit 1).
        let code = wait(&mut a, Duration::from_secs(60));
        assert!(code == 0 || code == 1, "exit {code}");
    } else {
        let _ = a.wait();
    }

    let scan = scans::store::get(&mut conn, &setup.tenant, setup.scan)
        .await
        .unwrap();
    assert_eq!(
        scan.status,
        scans::Status::Completed,
        "{:?}",
        scan.status_reason
    );
    assert_eq!(scan.counts.scanned, 150);
    assert_eq!(scan.counts.findings, 150);
    assert_eq!(
        findings_rows(&mut conn, setup.scan).await,
        150,
        "no object's findings were stored twice"
    );
    let workers = scans::store::workers(&mut conn, &setup.tenant, setup.scan)
        .await
        .unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0].status, "completed");
    assert_eq!(
        workers[0].files_processed, 150,
        "each resource counted once"
    );
    let holder = workers[0].worker_id.clone().unwrap_or_default();
    assert!(
        holder.ends_with(&format!(":{}", b.id())),
        "B finished the chunk: {holder}"
    );
}

#[tokio::test]
async fn a_killed_workers_chunk_is_rerun_without_double_counting() {
    takeover("KILL").await;
}

#[tokio::test]
async fn a_stalled_worker_past_its_lease_can_no_longer_write() {
    takeover("STOP").await;
}

/// A worker's whole log, at debug level, names none of what it was given or read: its token,
/// the master key, the database password, the cloud secret, the connector's external id, or a
/// value it found.
#[tokio::test]
async fn a_workers_log_holds_no_secret_and_no_value() {
    let setup = setup(3, 1).await;
    let output = Command::new(env!("CARGO_BIN_EXE_scan-worker"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SCAN_ID", setup.scan.to_string())
        .env("AUTH_TOKEN", &setup.token)
        .env("COORDINATOR_URL", "http://127.0.0.1:9/")
        .env("DATABASE_URL", &setup.db.url)
        .env("DPS_MASTER_KEY", &setup.master_b64)
        .envs(seed::moto_platform_env(&setup.moto_url))
        .env("RUST_LOG", "debug")
        .env("LOG_FORMAT", "json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let lines: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .chain(String::from_utf8_lossy(&output.stdout).lines())
        .map(str::to_owned)
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("scan-worker done")),
        "the log was captured: {lines:?}"
    );
    let password = setup
        .db
        .url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(credentials, _)| credentials.split_once(':'))
        .map(|(_, password)| password.to_owned())
        .filter(|p| !p.is_empty());
    let mut secrets = vec![
        setup.token.as_str(),
        setup.master_b64.as_str(),
        seed::MOTO_SECRET,
        "tenant-acme-7731",
        "219-09-9999",
        "219099999",
    ];
    if let Some(password) = password.as_deref() {
        secrets.push(password);
    }
    let leaks = testkit::leaks(&lines, &secrets);
    assert!(leaks.is_empty(), "{leaks:?}");
}

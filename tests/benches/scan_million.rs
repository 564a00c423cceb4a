//! A full scan of a million small objects, then an incremental rescan of the same unchanged
//! bucket, with the peak memory of every process (issue 41, item 5).
//!
//! ```text
//! cargo build --release -p platform-api -p scan-worker
//! cargo bench -p integration-tests --bench scan_million
//! ```
//!
//! `BENCH_OBJECTS` (default 1,000,000), `BENCH_OBJECT_BYTES` (default 1024) and
//! `BENCH_WORKERS` (`scan-worker` processes, default 4) change the run; `-- --quick` scans
//! 20,000 objects. `BENCH_FILE=PATH` makes every object that file's bytes instead (one object
//! unless `BENCH_OBJECTS` says otherwise, read up to 5 GiB): a large Parquet file or ZIP, to
//! measure a worker's memory on one large object.
//!
//! It starts a Postgres cluster with production durability, an S3 server in this process that
//! generates its objects instead of storing them (`support/synthetic_s3.rs`: no emulator lists
//! a million keys in reasonable time), a stand-in STS, and `platform-api` and `scan-worker` as
//! the release binaries operators run, each its own process. The workers are configured only
//! from the scan's deployment config, as an orchestrator runs them, and work through the
//! coordinator API. Every object is NDJSON application events, with a user's email on one
//! event in ten.
//!
//! It reports the full scan's time and rate, how long after it governance had scored every
//! object with findings, the incremental rescan's time and how many GETs it made (the target is
//! none), and the peak resident memory (`VmHWM`, read every half second) of platform-api (the
//! coordinator) and of each worker (the target is under 512 MiB each).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::seed;

#[path = "support/synthetic_s3.rs"]
mod synthetic_s3;
use synthetic_s3::SyntheticS3;

const BUCKET: &str = "estate-events";

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The object size every generated object is padded to; read once.
fn object_bytes() -> usize {
    setting("BENCH_OBJECT_BYTES", 1024)
}

/// About `BENCH_OBJECT_BYTES` of application events as NDJSON: a user's email on one event in
/// ten.
fn body(n: usize) -> Vec<u8> {
    let size = object_bytes();
    let mut text = String::with_capacity(size + 256);
    let mut i = 0usize;
    while text.len() < size {
        i += 1;
        let k = n * 100 + i;
        let contact = if k.is_multiple_of(10) {
            format!(",\"contact\":\"user{k}@example.com\"")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "{{\"ts\":\"2024-05-{:02}T10:{:02}:{:02}Z\",\"event\":\"{}\",\"user_id\":{},\"duration_ms\":{}{contact}}}\n",
            k % 28 + 1,
            k % 60,
            (k * 7) % 60,
            ["login", "view", "search", "checkout"][k % 4],
            k % 50_000,
            k % 900 + 12,
        ));
    }
    text.into_bytes()
}

/// A release binary of this workspace, built beside this benchmark.
fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo build --release -p platform-api -p scan-worker` first",
        path.display()
    );
    path
}

/// The peak resident memory of process `pid` so far, in MiB (`VmHWM`); None once it is gone.
fn peak_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

struct Api {
    http: reqwest::Client,
    base: String,
    admin: String,
}

impl Api {
    async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.admin)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.admin)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Starts a scan of `connector` of `kind` with `options`; its id.
    async fn scan(&self, connector: &str, kind: &str, options: &Value) -> String {
        let started = self
            .post(
                &format!("/connectors/{connector}/scan"),
                json!({"type": kind, "options": options}),
            )
            .await;
        started["data"]["scan_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{started}"))
            .to_owned()
    }

    /// Polls the scan until `done` says so, sampling the peak memory of `pids` meanwhile; the
    /// last body.
    async fn wait(
        &self,
        scan: &str,
        pids: &[u32],
        peaks: &mut [f64],
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        loop {
            for (pid, peak) in pids.iter().zip(peaks.iter_mut()) {
                if let Some(now) = peak_mib(*pid) {
                    *peak = peak.max(now);
                }
            }
            let body = self.get(&format!("/scans/{scan}")).await;
            if done(&body) {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

fn ended(body: &Value) -> bool {
    !matches!(
        body["data"]["status"].as_str().unwrap_or("queued"),
        "queued" | "running"
    )
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let file = std::env::var_os("BENCH_FILE")
        .map(|path| std::sync::Arc::new(std::fs::read(path).unwrap()));
    let objects = setting(
        "BENCH_OBJECTS",
        match (&file, quick) {
            (Some(_), _) => 1,
            (None, true) => 20_000,
            (None, false) => 1_000_000,
        },
    );
    let workers = setting("BENCH_WORKERS", 4);
    let (platform_bin, worker_bin) = (binary("platform-api"), binary("scan-worker"));

    testkit::use_durable_cluster();
    let db = testkit::database().await;
    let storage = match file.clone() {
        Some(bytes) => {
            let size = bytes.len();
            SyntheticS3::start(
                BUCKET,
                objects,
                seed::MOTO_KEY_ID,
                seed::MOTO_SECRET,
                move |_| bytes.to_vec(),
            )
            .await
            .sized(move |_| size)
        }
        None => {
            SyntheticS3::start(BUCKET, objects, seed::MOTO_KEY_ID, seed::MOTO_SECRET, body).await
        }
    };
    // A large object is read whole: up to the largest `max_object_bytes` a scan allows.
    let options = match file {
        Some(_) => json!({"max_workers": workers, "max_object_bytes": 5u64 << 30}),
        None => json!({"max_workers": workers}),
    };
    let sts = testkit::identity::sts(seed::MOTO_KEY_ID, seed::MOTO_SECRET);
    let mut cloud_env: Vec<(String, String)> = seed::moto_platform_env(&storage.url())
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    cloud_env.push(("AWS_ENDPOINT_URL_STS".into(), sts.url()));

    let master_key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let mut env = testkit::service_env(&db, master_key);
    env.extend(cloud_env.iter().cloned());
    // Only the scan-worker processes scan.
    env.insert("DPS_SCAN_WORKERS".into(), "0".into());
    env.insert("DATABASE_POOL_SIZE".into(), "12".into());
    // A million objects is the enterprise tier's `max_files`.
    env.insert("DPS_SCAN_TIER".into(), "enterprise".into());
    let platform = testkit::ServiceProcess::start(&platform_bin.to_string_lossy(), &env);
    boot::install_tls_provider();
    let api = Api {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        base: format!("{}/api/v1", platform.origin),
        admin: testkit::minter()
            .mint("acme", "ann", &["admin"], Duration::from_secs(24 * 3600))
            .unwrap(),
    };
    let external = api.get("/connectors/external-id").await;
    let created = api
        .post(
            "/connectors",
            json!({"name": "estate", "provider": "aws", "config": {
                "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                "external_id": external["data"]["external_id"],
                "region": "us-east-1",
                "buckets": [BUCKET],
            }}),
        )
        .await;
    let connector = created["data"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let each = file.as_ref().map_or(object_bytes(), |bytes| bytes.len());
    println!("{objects} objects of {each} bytes, {workers} scan-worker processes");

    // The full scan: listed by platform-api, then scanned by the workers.
    let clock = Instant::now();
    let scan = api.scan(&connector, "full", &options).await;
    let mut peaks = vec![0.0f64; 1 + workers];
    let listed = api
        .wait(&scan, &[platform.pid()], &mut peaks[..1], |b| {
            b["data"]["coverage"]["enumeration_status"]
                .as_str()
                .is_some_and(|s| s != "in_progress")
                || ended(b)
        })
        .await;
    let enumerated = clock.elapsed();
    println!(
        "enumerated in {:.1} s: {}",
        enumerated.as_secs_f64(),
        listed["data"]["coverage"]["enumeration_status"]
    );
    let config = api.get(&format!("/scans/{scan}/deployment-config")).await;
    let mut worker_env: HashMap<String, String> = config["data"]["environment"]
        .as_object()
        .unwrap_or_else(|| panic!("{config}"))
        .iter()
        .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_owned()))
        .collect();
    worker_env.extend(cloud_env.iter().cloned());
    worker_env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "true".into());
    worker_env.insert("RUST_LOG".into(), "warn".into());
    let mut children: Vec<Child> = (0..workers)
        .map(|_| {
            Command::new(&worker_bin)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .envs(&worker_env)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let pids: Vec<u32> = std::iter::once(platform.pid())
        .chain(children.iter().map(Child::id))
        .collect();
    let done = api.wait(&scan, &pids, &mut peaks, ended).await;
    let full = clock.elapsed();
    for child in &mut children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a scan-worker: {status}");
    }
    let progress = &done["data"]["progress"];
    assert_eq!(done["data"]["status"], "completed", "{done}");
    assert_eq!(progress["files_processed"], objects, "{done}");
    let gets = storage.gets();
    println!(
        "full scan: {:.1} s, {:.0} objects/s ({:.0} objects/s after listing, {:.1} MB/s), {gets} GETs, {} values found",
        full.as_secs_f64(),
        objects as f64 / full.as_secs_f64(),
        objects as f64 / (full - enumerated).as_secs_f64(),
        (objects * each) as f64 / (full - enumerated).as_secs_f64() / 1e6,
        progress["findings_count"],
    );

    // Governance (risk, coverage, drift) follows the scan through the outbox: how long after
    // the scan it has every object with findings.
    let (pg, connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let count = async |sql: &str| -> i64 { pg.query_one(sql, &[]).await.unwrap().get(0) };
    let with_findings = count(
        "SELECT count(*) FROM (SELECT DISTINCT bucket, object_key FROM findings
          WHERE tenant_id = 'acme' AND status = 'open') o",
    )
    .await;
    let behind = loop {
        let scored = count(
            "SELECT count(*) FROM governance_objects
              WHERE tenant_id = 'acme' AND findings_count > 0",
        )
        .await;
        if scored >= with_findings {
            break clock.elapsed() - full;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    println!(
        "governance: risk of all {with_findings} objects with findings {:.1} s after the scan completed",
        behind.as_secs_f64()
    );

    // The incremental rescan of the unchanged bucket: listed, compared, nothing read.
    let lists = storage.lists();
    let clock = Instant::now();
    let rescan = api.scan(&connector, "incremental", &options).await;
    let again = api
        .wait(&rescan, &[platform.pid()], &mut peaks[..1], ended)
        .await;
    let incremental = clock.elapsed();
    assert_eq!(again["data"]["status"], "completed", "{again}");
    println!(
        "incremental rescan: {:.1} s, {} objects to read, {} GETs, {} list requests",
        incremental.as_secs_f64(),
        again["data"]["progress"]["files_total"],
        storage.gets() - gets,
        storage.lists() - lists,
    );
    println!("peak resident memory (target: under 512 MiB each):");
    println!("  platform-api (coordinator): {:.0} MiB", peaks[0]);
    for (n, peak) in peaks[1..].iter().enumerate() {
        println!("  scan-worker {n}: {peak:.0} MiB");
    }
    let (status, _) = platform.stop();
    assert!(status.success());
}

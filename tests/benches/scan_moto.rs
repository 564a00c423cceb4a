//! Scan throughput against moto, beside the raw list-and-get rate of the same objects with the
//! same client, measured in the same run.
//!
//! `cargo bench -p integration-tests --bench scan_moto` (`-- --quick` for 1,000 objects).
//! `BENCH_OBJECTS` (default 10,000), `BENCH_OBJECT_KB` (default 100) and `BENCH_WORKERS`
//! (default 4) change the run; `BENCH_RAW_READERS` (default: the workers) the raw readers;
//! `BENCH_POLICIES` (0 to 3, default 0) turns on that many governance policies first;
//! `BENCH_CORPUS=dense` fills the objects with a customer table instead of logs (an SSN and an
//! email on every row, as `tests/benches/dense_csv.py` writes), `BENCH_CORPUS=ndjson` with
//! application events as NDJSON. `BENCH_STORAGE=s3s` serves the bucket from s3s-fs (an S3
//! server in Rust over a directory, with a stand-in STS) instead of moto, whose one Python
//! core bounds any scan at a few hundred objects a second. `BENCH_STORAGE=memory` serves it
//! from the bench's own process instead (`support/synthetic_s3.rs`: the S3 protocol and SigV4
//! of the `s3s` crate, the bodies held in memory, no disk and no hashing per GET), which stands
//! for storage on other machines: its CPU is counted with the service's. The detection engine alone is
//! timed on the same bytes at the end, one thread as `dpsctl detect` runs, for the ratio of the
//! full scan to the engine. It starts moto, a Postgres cluster with production durability and platform-api
//! in-process, fills a bucket, then:
//! 1. **raw:** lists the bucket and reads every object to the end through
//!    `connectors::Cloud` (the connector's AssumeRole, object_store over reqwest), with as
//!    many concurrent readers as the scan has workers;
//! 2. **scan:** `POST /connectors/:id/scan` with `max_workers` workers, timed from the request
//!    to the moment the scan is `completed`: enumeration, reads, detection, findings and every
//!    write of the chunk protocol;
//! 3. **raw** again, so that a warm-up in either direction cannot flatter the ratio; the
//!    faster raw run is the one reported.
//!
//! It also reports the CPU time per object that the service, Postgres and moto used during the
//! scan and the second raw run (from /proc), which says where the cores went.
//!
//! Moto runs under a real-time scheduling policy (`SCHED_FIFO`, or nice -10 where that is
//! refused) for all three runs (`BENCH_PRIORITY=0` turns that off): the reference and the scan
//! give the storage the same share of the machine, and the storage is not slowed by the host's
//! own work, as real storage is not. The output says how many cores moto used in each.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use integration_tests::{Service, TestApp};
use serde_json::json;
use testkit::{emulators, seed};

#[path = "support/cpu.rs"]
mod cpu;
use cpu::Cpu;
#[path = "support/synthetic_s3.rs"]
mod synthetic_s3;
use synthetic_s3::SyntheticS3;

const BUCKET: &str = "bench-exports";

/// The policies `BENCH_POLICIES` turns on, in order: an enforced alert and mask of SSNs (one
/// alert and one remediation request per object), a dry-run quarantine of contact data (one
/// simulated action per object), an enforced alert on phone numbers.
const POLICIES: [&str; 3] = [
    "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.5 }]
  actions:
    - { type: alert, config: { channels: [security], severity: high } }
    - { type: mask, config: { keep_last: 4 } }
",
    "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: contact }
spec:
  mode: dry-run
  conditions: [{ category: contact, min_confidence: 0.5 }]
  actions: [{ type: quarantine, config: { destination: { bucket: quarantine } } }]
",
    "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: phones }
spec:
  mode: enforced
  conditions: [{ category: phone, min_confidence: 0.8 }]
  actions: [{ type: alert, config: { channels: [security], severity: low } }]
",
];

/// About `kb` KiB of a customer table: an id, a name, a valid SSN, an email, a city and a plan
/// on every row.
fn dense_object(n: usize, kb: usize) -> Vec<u8> {
    const FIRST: [&str; 8] = [
        "james", "mary", "robert", "linda", "david", "susan", "thomas", "karen",
    ];
    const LAST: [&str; 8] = [
        "smith", "jones", "garcia", "miller", "davis", "lopez", "wilson", "moore",
    ];
    const CITIES: [&str; 5] = ["Springfield", "Riverton", "Fairview", "Madison", "Salem"];
    let mut text = String::with_capacity(kb * 1024 + 256);
    text.push_str("customer_id,name,ssn,email,city,plan\n");
    let mut row = 0usize;
    while text.len() < kb * 1024 {
        row += 1;
        let k = n * 1_000_003 + row;
        let (first, last) = (FIRST[k % 8], LAST[(k / 8) % 8]);
        // Areas 1 to 665 and groups and serials that are never zero: valid SSNs.
        let ssn = format!("{:03}-{:02}-{:04}", k % 665 + 1, k % 97 + 1, k % 9998 + 1);
        text.push_str(&format!(
            "{},{}{} {}{},{ssn},{first}.{last}{}@example.com,{},{}\n",
            100_000 + k,
            first[..1].to_ascii_uppercase(),
            &first[1..],
            last[..1].to_ascii_uppercase(),
            &last[1..],
            k % 1000,
            CITIES[k % 5],
            ["basic", "plus", "pro"][k % 3],
        ));
    }
    text.into_bytes()
}

/// Seconds the detection engine alone takes over `bodies`, on one thread, findings dropped as
/// they come: what `dpsctl detect` does with the same bytes.
fn engine_seconds(bodies: &[(String, Vec<u8>)]) -> f64 {
    let detector = detect::Detector::new();
    let started = Instant::now();
    let mut found = Vec::new();
    for (name, body) in bodies {
        let hint = detect::Hint {
            content_type: None,
            file_name: Some(name),
        };
        let mut stream = detector.stream(hint, detect::Options::default());
        for piece in body.chunks(64 << 10) {
            stream.push(piece, &mut found).unwrap();
            found.clear();
        }
        stream.finish(&mut found).unwrap();
        found.clear();
    }
    started.elapsed().as_secs_f64()
}

/// About `kb` KiB of application log text with a handful of personal data values, as a bucket
/// of exports holds: mostly prose and numbers, an email and a phone number now and then, and
/// one SSN per object.
fn object(n: usize, kb: usize) -> Vec<u8> {
    let mut text = String::with_capacity(kb * 1024 + 256);
    text.push_str(&format!(
        "export {n}: employee ssn 219-09-{:04}\n",
        n % 9000 + 1000
    ));
    let mut line = 0usize;
    while text.len() < kb * 1024 {
        line += 1;
        if line.is_multiple_of(40) {
            text.push_str(&format!(
                "2024-05-{:02}T10:{:02}:00Z contact user{n}.{line}@example.com about order {}\n",
                line % 28 + 1,
                line % 60,
                n * 1000 + line
            ));
        } else if line.is_multiple_of(97) {
            text.push_str(&format!(
                "2024-05-{:02}T11:00:00Z callback requested at +1 415 555 {:04}\n",
                line % 28 + 1,
                line % 9000 + 100
            ));
        } else {
            text.push_str(&format!(
                "2024-05-{:02}T12:{:02}:{:02}Z INFO worker-{} processed batch {} in {} ms, \
                 queue depth {}, status ok\n",
                line % 28 + 1,
                line % 60,
                (line * 7) % 60,
                line % 8,
                n * 10_000 + line,
                line % 250 + 3,
                line % 17
            ));
        }
    }
    text.into_bytes()
}

/// What serves the bench's bucket, for the whole run.
enum Storage {
    /// moto or s3s-fs, in a process of its own.
    Emulator(emulators::Emulator),
    /// The synthetic server, in this process, holding the corpus in memory.
    Memory(SyntheticS3),
}

impl Storage {
    fn url(&self) -> String {
        match self {
            Storage::Emulator(e) => e.url(),
            Storage::Memory(m) => m.url(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Storage::Emulator(e) => e.name,
            Storage::Memory(_) => "in memory, in the bench's process (its CPU is the service's)",
        }
    }
}

fn connector_config() -> serde_json::Value {
    json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": "tenant-acme-7731",
        "region": "us-east-1",
        "buckets": [BUCKET],
    })
}

/// About `kb` KiB of application events as NDJSON: a user's email on one event in ten.
fn ndjson_object(n: usize, kb: usize) -> Vec<u8> {
    let mut text = String::with_capacity(kb * 1024 + 256);
    let mut i = 0usize;
    while text.len() < kb * 1024 {
        i += 1;
        let k = n * 10_000 + i;
        let contact = if i.is_multiple_of(10) {
            format!(",\"contact\":\"user{k}@example.com\"")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "{{\"ts\":\"2024-05-{:02}T10:{:02}:{:02}Z\",\"event\":\"{}\",\"user_id\":{},\"session\":\"s{:08x}\",\"duration_ms\":{}{contact}}}\n",
            k % 28 + 1,
            k % 60,
            (k * 7) % 60,
            ["login", "view", "search", "checkout"][k % 4],
            k % 50_000,
            k.wrapping_mul(2_654_435_761) % 0xffff_ffff,
            k % 900 + 12,
        ));
    }
    text.into_bytes()
}

/// The environment of a cloud client that reads the bench's bucket: the storage, and STS
/// where it is not the storage's own.
fn storage_env(storage: &str, sts: Option<&str>) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&'static str, String)> = seed::moto_platform_env(storage).into();
    if let Some(sts) = sts {
        env.push(("AWS_ENDPOINT_URL_STS", sts.to_owned()));
    }
    env
}

/// Lists the bucket and reads every object to the end with `readers` concurrent readers;
/// returns (objects, bytes, elapsed).
async fn raw(env: &[(&'static str, String)], readers: usize) -> (usize, u64, Duration) {
    let cloud = connectors::Cloud::new(
        connectors::CloudEnv::from_vars(|name| {
            env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())
        })
        .unwrap(),
    )
    .unwrap();
    let config = connectors::validate(connectors::Provider::Aws, &connector_config()).unwrap();
    let started = Instant::now();
    let storage = cloud
        .open(&"bench".parse().unwrap(), ids::ConnectorId::new(), &config)
        .unwrap();
    let bucket = storage.bucket(BUCKET).unwrap();
    let mut objects = Vec::new();
    let mut token = None;
    loop {
        let page = bucket.list_page(None, token.take(), 1000).await.unwrap();
        objects.extend(page.objects.into_iter().map(|o| (o.key, o.etag)));
        token = page.next;
        if token.is_none() {
            break;
        }
    }
    let count = objects.len();
    let queue = Arc::new(std::sync::Mutex::new(objects));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..readers {
        let queue = queue.clone();
        let bucket = bucket.clone();
        tasks.spawn(async move {
            let mut bytes = 0u64;
            loop {
                let next = queue.lock().unwrap().pop();
                let Some((key, etag)) = next else {
                    return bytes;
                };
                let mut body = bucket.read(&key, etag.as_deref()).await.unwrap();
                while let Some(piece) = body.next().await {
                    bytes += piece.unwrap().len() as u64;
                }
            }
        });
    }
    let mut total = 0;
    while let Some(bytes) = tasks.join_next().await {
        total += bytes.unwrap();
    }
    (count, total, started.elapsed())
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let objects = setting("BENCH_OBJECTS", if quick { 1000 } else { 10_000 });
    let kb = setting("BENCH_OBJECT_KB", 100);
    let workers = setting("BENCH_WORKERS", 4);
    let policies = setting("BENCH_POLICIES", 0).min(POLICIES.len());
    let readers = setting("BENCH_RAW_READERS", workers);
    let corpus = std::env::var("BENCH_CORPUS").unwrap_or_default();
    let storage_kind = std::env::var("BENCH_STORAGE").unwrap_or_default();
    let s3s = storage_kind == "s3s";
    let memory = storage_kind == "memory";

    // Writes land on a Postgres with production durability (fsync, synchronous commit).
    testkit::use_durable_cluster();
    let extension = match corpus.as_str() {
        "dense" => "csv",
        "ndjson" => "ndjson",
        _ => "log",
    };
    let bodies: Vec<(String, Vec<u8>)> = (0..objects)
        .map(|n| {
            let key = if memory {
                SyntheticS3::key_with(n, extension)
            } else {
                let top = if extension == "ndjson" {
                    "events"
                } else {
                    "exports"
                };
                format!("{top}/{:02}/{n:06}.{extension}", n % 50)
            };
            let body = match corpus.as_str() {
                "dense" => dense_object(n, kb),
                "ndjson" => ndjson_object(n, kb),
                _ => object(n, kb),
            };
            (key, body)
        })
        .collect();
    let engine_bodies = bodies.clone();
    let total_bytes: usize = bodies.iter().map(|(_, b)| b.len()).sum();
    let root = std::env::temp_dir().join(format!("dps-bench-s3s-{}", std::process::id()));
    let (storage, sts) = if memory {
        let held: Arc<Vec<Vec<u8>>> = Arc::new(bodies.into_iter().map(|(_, b)| b).collect());
        let sizes = held.clone();
        let served = SyntheticS3::start_with(
            BUCKET,
            objects,
            seed::MOTO_KEY_ID,
            seed::MOTO_SECRET,
            extension,
            move |n| held[n].clone(),
        )
        .await
        .sized(move |n| sizes[n].len());
        let sts = testkit::identity::sts(seed::MOTO_KEY_ID, seed::MOTO_SECRET);
        (Storage::Memory(served), Some(sts))
    } else {
        let (storage, sts) = if s3s {
            std::fs::create_dir_all(&root).unwrap();
            let storage = emulators::s3s_fs(&root, seed::MOTO_KEY_ID, seed::MOTO_SECRET);
            let sts = testkit::identity::sts(seed::MOTO_KEY_ID, seed::MOTO_SECRET);
            (storage, Some(sts))
        } else {
            (emulators::moto(&[]), None)
        };
        let store = seed::s3_bucket(&storage.url(), BUCKET).await;
        let seeding = Instant::now();
        seed::put_concurrently(&store, bodies, 8).await;
        println!(
            "seeded {objects} objects, {:.1} MB, in {:.1} s",
            total_bytes as f64 / 1e6,
            seeding.elapsed().as_secs_f64()
        );
        (Storage::Emulator(storage), sts)
    };
    let env = storage_env(&storage.url(), sts.as_ref().map(|s| s.url()).as_deref());
    println!("storage: {}", storage.name());

    // Moto gets priority for the reference and the scan alike (see `cpu::prioritize_storage`).
    let priority = cpu::prioritize_storage();
    let first = raw(&env, readers).await;
    assert_eq!(first.0, objects);
    assert_eq!(first.1, total_bytes as u64);

    let app_env = env.clone();
    let app = TestApp::spawn_with(Service::Platform, |env| {
        for (name, value) in app_env {
            env.insert(name.into(), value);
        }
        env.insert("DPS_SCAN_WORKERS".into(), workers.to_string());
        // Scan workers, plus governance's tasks (evaluation, deliveries, posture checks).
        env.insert("DATABASE_POOL_SIZE".into(), (workers + 8).to_string());
        env.insert("HTTP_WORKERS".into(), "1".into());
        env.insert("RUST_LOG".into(), "warn".into());
        // The scan alone is measured: no executor changes objects under it.
        env.insert("DPS_REMEDIATION_EXECUTOR".into(), "false".into());
    })
    .await;
    println!("storage priority: {priority}");
    let token = app.token("acme", "ann", &["admin"]);
    let send = |method: reqwest::Method, path: &str, body: Option<serde_json::Value>| {
        let mut request = app.http.request(method, app.url(path)).bearer_auth(&token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: serde_json::Value = response.json().await.unwrap();
            (status, body)
        }
    };
    // The tenant's own external id, which an AWS connector must carry.
    let (_, answer) = send(reqwest::Method::GET, "/connectors/external-id", None).await;
    let mut config = connector_config();
    config["external_id"] = answer["data"]["external_id"].clone();
    let (status, body) = send(
        reqwest::Method::POST,
        "/connectors",
        Some(json!({"name": "Bench", "provider": "aws", "config": config})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let connector = body["data"]["id"].as_str().unwrap().to_owned();
    let receiver = testkit::identity::http_server(|_| (200, serde_json::Value::Null));
    if policies > 0 {
        let (status, body) = send(
            reqwest::Method::POST,
            "/governance/channels",
            Some(json!({"name": "security", "type": "webhook", "url": format!("{}/hook", receiver.url())})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        for document in POLICIES.iter().take(policies) {
            let response = app
                .http
                .post(app.url("/governance/policies"))
                .bearer_auth(&token)
                .header("content-type", "application/yaml")
                .body(*document)
                .send()
                .await
                .unwrap();
            assert_eq!(
                response.status().as_u16(),
                201,
                "{}",
                response.text().await.unwrap()
            );
        }
        println!("{policies} governance policies active");
    }

    let cpu_before = Cpu::now();
    let started = Instant::now();
    let (status, body) = send(
        reqwest::Method::POST,
        &format!("/connectors/{connector}/scan"),
        Some(json!({"type": "full", "options": {"max_workers": workers, "max_files": objects}})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let done = loop {
        let (code, body) = send(reqwest::Method::GET, &format!("/scans/{scan}"), None).await;
        if code != 200 {
            println!("GET /scans/:id answered {code}: {body}");
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let status = body["data"]["status"].as_str().unwrap_or("").to_owned();
        if status != "queued" && status != "running" {
            break body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let scan_time = started.elapsed();
    let cpu = Cpu::now().minus(&cpu_before);
    // Governance follows the scan through its outbox: when has it recorded every finding?
    let caught_up = loop {
        let (_, body) = send(reqwest::Method::GET, "/governance/summary", None).await;
        let recorded: i64 = body["data"]["findings_by_category"]
            .as_object()
            .map(|m| m.values().filter_map(serde_json::Value::as_i64).sum())
            .unwrap_or(0);
        if recorded >= done["progress"]["findings_count"].as_i64().unwrap_or(0) {
            break started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!(
        "governance caught up {:.2} s after the scan began ({:.2} s after it completed); {} alerts delivered so far",
        caught_up.as_secs_f64(),
        (caught_up - scan_time).as_secs_f64(),
        receiver.requests().len()
    );
    assert_eq!(done["status"], "completed", "{done}");
    println!(
        "timeline: created {} started {} elapsed {}",
        done["created_at"], done["started_at"], done["progress"]["elapsed_seconds"]
    );
    assert_eq!(done["coverage"]["total_scanned"], objects, "{done}");
    let findings = done["progress"]["findings_count"].as_i64().unwrap();

    let cpu_before_raw = Cpu::now();
    let second = raw(&env, readers).await;
    let raw_cpu = Cpu::now().minus(&cpu_before_raw);
    let raw_time = first.2.min(second.2);

    let mb = total_bytes as f64 / 1e6;
    let rate = |d: Duration| (objects as f64 / d.as_secs_f64(), mb / d.as_secs_f64());
    let (raw_objects, raw_mb) = rate(raw_time);
    let (scan_objects, scan_mb) = rate(scan_time);
    println!();
    println!("| Run | Objects | MB | Time (s) | Objects/s | MB/s |");
    println!("|---|---|---|---|---|---|");
    for (name, d) in [
        ("raw list + get, first", first.2),
        ("raw list + get, second", second.2),
    ] {
        let (o, m) = rate(d);
        println!(
            "| {name} | {objects} | {mb:.1} | {:.2} | {o:.0} | {m:.1} |",
            d.as_secs_f64()
        );
    }
    println!(
        "| scan, {workers} workers ({findings} findings) | {objects} | {mb:.1} | {:.2} | {scan_objects:.0} | {scan_mb:.1} |",
        scan_time.as_secs_f64()
    );
    println!();
    println!(
        "ratio scan / raw (faster raw run): {:.3} (raw {raw_objects:.0} objects/s, {raw_mb:.1} MB/s)",
        scan_objects / raw_objects
    );
    println!(
        "CPU per object during the scan (ms): service {:.2}, postgres {:.2}, moto {:.2}",
        cpu.service * 1e3 / objects as f64,
        cpu.postgres * 1e3 / objects as f64,
        cpu.moto * 1e3 / objects as f64,
    );
    println!(
        "CPU per object during the second raw run (ms): client {:.2}, moto {:.2}",
        raw_cpu.service * 1e3 / objects as f64,
        raw_cpu.moto * 1e3 / objects as f64,
    );
    // The same share of the machine for the storage in both, or the ratio measures the
    // scheduler (see `cpu::prioritize_storage`).
    println!(
        "moto's cores: scan {:.2}, second raw run {:.2}",
        cpu.moto / scan_time.as_secs_f64(),
        raw_cpu.moto / second.2.as_secs_f64()
    );
    app.stop().await;
    if s3s {
        let _ = std::fs::remove_dir_all(&root);
    }
    // The engine alone on the same bytes, after the service stopped: nothing shares its core.
    let engine = engine_seconds(&engine_bodies);
    println!(
        "engine alone, one thread: {:.2} s, {:.1} MB/s; full scan / engine: {:.3}",
        engine,
        mb / engine,
        scan_mb / (mb / engine)
    );
}

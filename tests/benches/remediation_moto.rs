//! Remediation throughput against moto, beside the raw get+put rate of the same objects with
//! the same client and concurrency, measured in the same run.
//!
//! `cargo bench -p integration-tests --bench remediation_moto`. `BENCH_OBJECTS` (default
//! 1,000), `BENCH_OBJECT_KB` (default 100), `BENCH_SSNS` (SSNs per object, default 5) and
//! `BENCH_TASKS` (executor tasks and raw clients, default 8 as platform-api's) and `BENCH_POOL` (the tasks' shared
//! connection pool, default 16 as platform-api's) change the run. It starts moto, a
//! Postgres cluster with production durability and platform-api in-process with its executor
//! off, fills a bucket, scans it with an enforced tokenize policy (so every object has a
//! planned request), then:
//! 1. **raw:** reads every object whole and writes the same bytes back (a GET and a PUT per
//!    object through `connectors::Cloud`), with `BENCH_TASKS` concurrent clients;
//! 2. **remediate:** `BENCH_TASKS` executor tasks (`remediation::execute::run_once_pooled`,
//!    what platform-api runs) take every request to `receipted`: the gate, a read, detection,
//!    tokens from the vault, the server-side snapshot copy, the conditional write, the receipt
//!    and every state transition on the durable cluster;
//! 3. **raw** again; the faster raw run is the one reported;
//! 4. **raw get+copy+put:** the raw run with the snapshot's server-side copy added, the three
//!    calls a remediation makes: moto's own bound on the remediation's rate, whatever the
//!    service does.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl as _;
use integration_tests::{Service, TestApp};
use serde_json::json;
use testkit::{emulators, seed};

#[path = "support/cpu.rs"]
mod cpu;
use cpu::Cpu;

const BUCKET: &str = "bench-hr";

/// About `kb` KiB of CSV rows, `ssns` of them with an SSN, the rest with order data.
fn object(n: usize, kb: usize, ssns: usize) -> Vec<u8> {
    let mut text = String::from("id,name,ssn,order,amount_cents,status\n");
    let mut row = 0usize;
    let every = (kb * 1024 / 60 / ssns.max(1)).max(1);
    let mut placed = 0;
    while text.len() < kb * 1024 {
        row += 1;
        let ssn = if placed < ssns && row.is_multiple_of(every) {
            placed += 1;
            format!(
                "{:03}-{:02}-{:04}",
                100 + (n * 7 + row) % 600,
                10 + row % 89,
                1000 + (n + row) % 8999
            )
        } else {
            String::new()
        };
        text.push_str(&format!(
            "{row},employee {n}-{row},{ssn},{},{},ok\n",
            n * 100_000 + row,
            (row * 37) % 100_000
        ));
    }
    text.into_bytes()
}

fn connector_config() -> serde_json::Value {
    json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": "tenant-acme-7731",
        "region": "us-east-1",
        "buckets": [BUCKET],
    })
}

/// Reads every object whole and writes the same bytes back with `clients` concurrent
/// clients; with `copy`, also copies it server-side in between, as a remediation's snapshot
/// does. Returns the elapsed time.
async fn raw(moto_url: &str, keys: &[String], clients: usize, copy: bool) -> Duration {
    let cloud = seed::moto_cloud(moto_url);
    let config = connectors::validate(connectors::Provider::Aws, &connector_config()).unwrap();
    let storage = cloud
        .open(&"bench".parse().unwrap(), ids::ConnectorId::new(), &config)
        .unwrap();
    let bucket = storage.bucket(BUCKET).unwrap();
    let queue = Arc::new(std::sync::Mutex::new(keys.to_vec()));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (queue, storage, bucket) = (queue.clone(), storage.clone(), bucket.clone());
        tasks.spawn(async move {
            loop {
                let next = queue.lock().unwrap().pop();
                let Some(key) = next else { return };
                let whole = bucket.read_whole(&key, None, 64 << 20).await.unwrap();
                if copy {
                    let to = format!(".dps-lkg/raw/{key}");
                    storage
                        .copy_if_match(
                            BUCKET,
                            &key,
                            &whole.etag,
                            BUCKET,
                            &to,
                            Some(&whole.properties.encryption),
                        )
                        .await
                        .unwrap();
                }
                bucket
                    .put(&key, whole.bytes, &whole.properties)
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    started.elapsed()
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(conn: &mut db::AsyncPgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql)
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
}

#[tokio::main]
async fn main() {
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let objects = setting("BENCH_OBJECTS", 1000);
    let kb = setting("BENCH_OBJECT_KB", 100);
    let ssns = setting("BENCH_SSNS", 5);
    let tasks = setting("BENCH_TASKS", 8);

    testkit::use_durable_cluster();
    let moto = emulators::moto(&[]);
    let moto_url = moto.url();
    let store = seed::s3_bucket(&moto_url, BUCKET).await;
    let keys: Vec<String> = (0..objects).map(|n| format!("hr/{n:05}.csv")).collect();
    let bodies: Vec<(String, Vec<u8>)> = keys
        .iter()
        .enumerate()
        .map(|(n, k)| (k.clone(), object(n, kb, ssns)))
        .collect();
    let total_bytes: usize = bodies.iter().map(|(_, b)| b.len()).sum();
    seed::put_concurrently(&store, bodies, 8).await;
    println!(
        "seeded {objects} objects of {kb} KiB with {ssns} SSNs each, {:.1} MB",
        total_bytes as f64 / 1e6
    );

    let master = [9u8; 32];
    let master_text = base64::engine::general_purpose::STANDARD.encode(master);
    let moto_for_app = moto_url.clone();
    let app = TestApp::spawn_with(Service::Platform, |env| {
        for (name, value) in seed::moto_platform_env(&moto_for_app) {
            env.insert(name.into(), value);
        }
        env.insert("DPS_MASTER_KEY".into(), master_text.clone());
        env.insert("DPS_SCAN_WORKERS".into(), "4".into());
        env.insert("DATABASE_POOL_SIZE".into(), "12".into());
        env.insert("RUST_LOG".into(), "warn".into());
        // The bench runs the executor itself, timed.
        env.insert("DPS_REMEDIATION_EXECUTOR".into(), "false".into());
    })
    .await;
    let mut conn = app.conn().await;
    let tenant: ids::TenantId = "acme".parse().unwrap();
    let token_policy = vault::policies::create(
        &mut conn,
        &tenant,
        &"ann".parse().unwrap(),
        &vault::policies::Definition {
            name: "ssn".into(),
            type_rules: BTreeMap::from([(
                "us_ssn".to_owned(),
                vault::policies::RuleInput {
                    mode: "format_preserving".into(),
                    min_confidence: None,
                    deterministic_scope: None,
                },
            )]),
            allowed_roles: vec!["support".into()],
            allowed_purposes: vec!["support".into()],
            require_reason: false,
            failure_mode: None,
            token_ttl_seconds: None,
            default_region: None,
        },
    )
    .await
    .unwrap()
    .policy_id;
    let token = app.token("acme", "ann", &["admin"]);
    let http = &app.http;
    // The tenant's own external id, which an AWS connector must carry.
    let mut config = connector_config();
    let answer: serde_json::Value = http
        .get(app.url("/connectors/external-id"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    config["external_id"] = answer["data"]["external_id"].clone();
    let response = http
        .post(app.url("/connectors"))
        .bearer_auth(&token)
        .json(&json!({"name": "Bench", "provider": "aws", "config": config}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let body: serde_json::Value = response.json().await.unwrap();
    let connector = body["data"]["id"].as_str().unwrap().to_owned();
    let response = http
        .post(app.url("/governance/policies"))
        .bearer_auth(&token)
        .header("content-type", "application/yaml")
        .body(format!(
            "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: ssn-tokenize }}
spec:
  mode: enforced
  conditions: [{{ category: us_ssn, min_confidence: 0.5 }}]
  actions: [{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}]
"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    let response = http
        .post(app.url(&format!("/connectors/{connector}/scan")))
        .bearer_auth(&token)
        .json(&json!({"type": "full", "options": {"max_workers": 4, "max_files": objects}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let planned = count(
            &mut conn,
            "SELECT count(*) AS n FROM remediation_requests WHERE status = 'planned'",
        )
        .await;
        if planned as usize == objects {
            break;
        }
        assert!(Instant::now() < deadline, "{planned} requests planned");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("{objects} requests planned");

    // Moto gets priority for the references and the remediation alike (see
    // `cpu::prioritize_storage`).
    println!("storage priority: {}", cpu::prioritize_storage());
    let cpu_raw = Cpu::now();
    let first = raw(&moto_url, &keys, tasks, false).await;
    let raw_cpu = Cpu::now().minus(&cpu_raw);
    println!("raw get+put: {:.2} s", first.as_secs_f64());

    let master_key = Arc::new(keys::MasterKey::from_base64(&master_text).unwrap());
    let exec = remediation::Executor::new(
        seed::moto_cloud(&moto_url),
        Arc::new(keys::KeyRing::new(master_key.clone())),
        Arc::new(remediation::Receipts {
            signer: receipts::Signer::from_master(&master_key),
            cosigner: remediation::Cosigner::new(
                None,
                None,
                egress::Egress {
                    allow_private: true,
                },
            )
            .unwrap(),
        }),
    );
    // The executor's tasks share a pool as platform-api's do: each holds a connection only
    // while it talks to Postgres. The pool is platform-api's default size.
    let pool_size = setting("BENCH_POOL", 16);
    let pool = db::build_pool(&db::PoolConfig {
        url: app.db.url.clone(),
        max_size: pool_size,
        statement_timeout: Duration::from_secs(60),
        application_name: "remediation-bench".into(),
        wait_timeout: Duration::from_secs(60),
    })
    .unwrap();
    let cpu_before = Cpu::now();
    let started = Instant::now();
    let mut runners = tokio::task::JoinSet::new();
    for _ in 0..tasks {
        let (exec, pool) = (exec.clone(), pool.clone());
        runners.spawn(async move {
            while remediation::execute::run_once_pooled(&pool, &exec)
                .await
                .unwrap()
            {}
        });
    }
    // How many of the pool's connections the tasks hold at a time, sampled every 5 ms.
    let (mut samples, mut in_use, mut peak) = (0usize, 0usize, 0usize);
    while !runners.is_empty() {
        tokio::select! {
            done = runners.join_next() => {
                if let Some(done) = done {
                    done.unwrap();
                }
            }
            () = tokio::time::sleep(Duration::from_millis(5)) => {
                let status = pool.status();
                let held = status.size - status.available;
                samples += 1;
                in_use += held;
                peak = peak.max(held);
            }
        }
    }
    let remediate = started.elapsed();
    // The pool's backends exit before the closing reading, so their CPU is counted.
    pool.close();
    drop(pool);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cpu = Cpu::now().minus(&cpu_before);
    let receipted = count(
        &mut conn,
        "SELECT count(*) AS n FROM remediation_requests WHERE status = 'receipted'",
    )
    .await;
    assert_eq!(receipted as usize, objects, "every request receipted");
    let tokens = count(&mut conn, "SELECT count(*) AS n FROM vault_entries").await;

    let second = raw(&moto_url, &keys, tasks, false).await;
    println!("raw get+put again: {:.2} s", second.as_secs_f64());
    let cpu_three = Cpu::now();
    let three = raw(&moto_url, &keys, tasks, true).await;
    let three_cpu = Cpu::now().minus(&cpu_three);
    println!("raw get+copy+put: {:.2} s", three.as_secs_f64());
    let raw_time = first.min(second);
    let rate = |d: Duration| objects as f64 / d.as_secs_f64();
    println!();
    println!(
        "raw get+put : {:>8.1} objects/s ({:.1} MB/s), {tasks} clients",
        rate(raw_time),
        total_bytes as f64 / 1e6 / raw_time.as_secs_f64()
    );
    println!(
        "raw get+copy+put: {:>4.1} objects/s, {:.2} of raw get+put: moto's own bound on remediation",
        rate(three),
        rate(three) / rate(raw_time)
    );
    println!(
        "remediation : {:>8.1} objects/s ({:.2} s), {tasks} tasks, {tokens} tokens issued",
        rate(remediate),
        remediate.as_secs_f64()
    );
    println!(
        "ratio       : {:.3} (target 0.5)",
        rate(remediate) / rate(raw_time)
    );
    println!(
        "connections : {:.2} held on average, {peak} at most, of a pool of {pool_size} ({tasks} tasks)",
        in_use as f64 / samples.max(1) as f64
    );
    let per = |seconds: f64| seconds * 1000.0 / objects as f64;
    println!(
        "CPU ms per object, remediation: service {:.1}, postgres {:.1}, moto {:.1}; first raw run: service {:.1}, moto {:.1}; get+copy+put: service {:.1}, moto {:.1}",
        per(cpu.service),
        per(cpu.postgres),
        per(cpu.moto),
        per(raw_cpu.service),
        per(raw_cpu.moto),
        per(three_cpu.service),
        per(three_cpu.moto)
    );
    // The same share of the machine for the storage in every run, or the ratio measures the
    // scheduler (see `cpu::prioritize_storage`).
    println!(
        "moto's cores: first raw run {:.2}, remediation {:.2}, get+copy+put {:.2}",
        raw_cpu.moto / first.as_secs_f64(),
        cpu.moto / remediate.as_secs_f64(),
        three_cpu.moto / three.as_secs_f64()
    );
}

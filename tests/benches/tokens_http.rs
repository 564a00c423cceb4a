//! Tokenize throughput over real HTTP into a real vault, beside the raw Postgres insert rate of
//! the same rows on the same server, and detokenize latency for 100 tokens.
//!
//! `cargo bench -p integration-tests --bench tokens_http` (add `-- --quick` for a short run;
//! `BENCH_CLIENTS` and `BENCH_HTTP_WORKERS` change the defaults of 4 clients and 2 workers).
//! It starts a throwaway Postgres cluster (or uses DATABASE_URL) and tokens-api in-process,
//! and prints a table that docs/BENCHMARKS.md records.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::time::{Duration, Instant};

use diesel::sql_types::{Array, Bytea, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, RunQueryDsl as _, SimpleAsyncConnection as _};
use integration_tests::{Service, TestApp};
use serde_json::{Value, json};

const BATCH: usize = 1000;

fn ssn(n: usize) -> String {
    // Issuable SSNs from a counter: area 1-665, group 1-99, serial 1-9999.
    let serial = n % 9999 + 1;
    let group = (n / 9999) % 99 + 1;
    let area = (n / (9999 * 99)) % 665 + 1;
    format!("{area:03}-{group:02}-{serial:04}")
}

fn batch(policy: &str, mode: &str, start: usize) -> Value {
    let items: Vec<Value> = (start..start + BATCH)
        .map(|n| match mode {
            "randomized" => json!({ "value": format!("user{n}@example.com"), "pii_type": "email" }),
            mode => json!({ "value": ssn(n), "pii_type": "us_ssn", "mode": mode }),
        })
        .collect();
    json!({ "policy_id": policy, "items": items })
}

async fn tokenize_rate(
    app: &TestApp,
    key: &str,
    policy: &str,
    mode: &str,
    batches: usize,
    clients: usize,
    offset: usize,
) -> f64 {
    // Bodies are serialized before the clock starts, so the client's JSON work does not count
    // against the service (they share the machine's two cores).
    let bodies: Vec<Vec<u8>> = (0..batches)
        .map(|b| serde_json::to_vec(&batch(policy, mode, offset + b * BATCH)).unwrap())
        .collect();
    let bodies = std::sync::Arc::new(bodies);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let http = app.http.clone();
        let url = app.url("/tokenize");
        let key = key.to_owned();
        let bodies = bodies.clone();
        tasks.spawn(async move {
            for b in (client..bodies.len()).step_by(clients) {
                let response = http
                    .post(&url)
                    .header("X-API-Key", &key)
                    .header("Content-Type", "application/json")
                    .body(bodies[b].clone())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                let bytes = response.bytes().await.unwrap();
                let tail = &bytes[bytes.len().saturating_sub(200)..];
                assert!(
                    String::from_utf8_lossy(tail).contains("\"failure_count\":0"),
                    "a batch had failures"
                );
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    (batches * BATCH) as f64 / started.elapsed().as_secs_f64()
}

/// Inserts the same number of rows, of the width vault rows have, into a plain table with the
/// same indexes, through the same kind of UNNEST statement, with the same concurrency.
async fn raw_insert_rate(url: &str, batches: usize, clients: usize) -> f64 {
    let mut conn = db::AsyncPgConnection::establish(url).await.unwrap();
    conn.batch_execute(
        "DROP TABLE IF EXISTS raw_bench; \
         CREATE TABLE raw_bench (LIKE vault_entries INCLUDING DEFAULTS INCLUDING CONSTRAINTS); \
         ALTER TABLE raw_bench ADD PRIMARY KEY (tenant_id, token_id); \
         CREATE UNIQUE INDEX ON raw_bench (tenant_id, fingerprint) WHERE fingerprint IS NOT NULL; \
         CREATE UNIQUE INDEX ON raw_bench (tenant_id, pii_type, token);",
    )
    .await
    .unwrap();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let url = url.to_owned();
        tasks.spawn(async move {
            let mut conn = db::AsyncPgConnection::establish(&url).await.unwrap();
            for b in (client..batches).step_by(clients) {
                let ids: Vec<uuid::Uuid> = (0..BATCH).map(|_| uuid::Uuid::now_v7()).collect();
                let tokens: Vec<String> = (0..BATCH).map(|i| format!("dtk_{:032}", b * BATCH + i)).collect();
                let fingerprints: Vec<Vec<u8>> = (0..BATCH).map(|i| {
                    let mut f = [0u8; 32];
                    f[..8].copy_from_slice(&((b * BATCH + i) as u64).to_be_bytes());
                    f.to_vec()
                }).collect();
                let ciphertexts: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![7u8; 12 + 13 + 16]).collect();
                diesel::sql_query(
                    "INSERT INTO raw_bench (tenant_id, token_id, token, pii_type, mode, policy_id, \
                     policy_version, fingerprint, key_version, ciphertext) \
                     SELECT 'bench', u.id, u.token, 'us_ssn', 'deterministic', $1, 1, u.fp, 1, u.ct \
                     FROM unnest($2::uuid[], $3::text[], $4::bytea[], $5::bytea[]) AS u(id, token, fp, ct)",
                )
                .bind::<SqlUuid, _>(uuid::Uuid::nil())
                .bind::<Array<SqlUuid>, _>(ids)
                .bind::<Array<Text>, _>(tokens)
                .bind::<Array<Bytea>, _>(fingerprints)
                .bind::<Array<Bytea>, _>(ciphertexts)
                .execute(&mut conn)
                .await
                .unwrap();
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    (batches * BATCH) as f64 / started.elapsed().as_secs_f64()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (batches, rounds) = if quick { (20, 50) } else { (100, 300) };
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let clients = setting("BENCH_CLIENTS", 4);
    let workers = setting("BENCH_HTTP_WORKERS", 2);
    let app = TestApp::spawn_with(Service::Tokens, |env| {
        env.insert("HTTP_WORKERS".into(), workers.to_string());
        env.insert("DATABASE_POOL_SIZE".into(), "8".into());
        env.insert(
            "DPS_RATE_LIMITS".into(),
            "tokenize=1000000/1000000,grant=1000000/1000000,detokenize=1000000/1000000".into(),
        );
    })
    .await;
    let mut conn = app.conn().await;
    let (_, secret) = auth::api_keys::create(&mut conn, &"bench".parse().unwrap(), None, "bench")
        .await
        .unwrap();
    let key = secret.expose().to_owned();
    let admin = app.token("bench", "admin", &["admin"]);
    let policy: Value = app
        .http
        .post(app.url("/policies"))
        .bearer_auth(&admin)
        .json(&json!({
            "name": "bench",
            "type_rules": { "us_ssn": { "mode": "deterministic" }, "email": { "mode": "randomized" } },
            "allowed_roles": ["reader"],
            "allowed_purposes": ["bench"]
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let policy = policy["policy_id"].as_str().unwrap().to_owned();

    // Warm up (keys, pool, caches).
    tokenize_rate(&app, &key, &policy, "deterministic", 2, 2, 50_000_000).await;

    println!(
        "items per batch: {BATCH}, batches per mode: {batches}, concurrent clients: {clients}"
    );
    let raw = raw_insert_rate(&app.db.url, batches, clients).await;
    println!("raw Postgres insert (same rows, same indexes, UNNEST): {raw:>9.0} rows/s");
    let mut offset = 0;
    for mode in ["deterministic", "randomized", "format_preserving"] {
        let rate = tokenize_rate(&app, &key, &policy, mode, batches, clients, offset).await;
        offset += batches * BATCH;
        println!(
            "tokenize {mode:<18} over HTTP: {rate:>9.0} items/s  (ratio to raw insert {:.2})",
            rate / raw
        );
    }

    // Detokenize 100 tokens: grant, then time the detokenize call alone.
    let body = batch(&policy, "deterministic", 90_000_000);
    let tokenized: Value = app
        .http
        .post(app.url("/tokenize"))
        .header("X-API-Key", &key)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<Value> = tokenized["results"]
        .as_array()
        .unwrap()
        .iter()
        .take(100)
        .map(|r| r["token_id"].clone())
        .collect();
    let reader = app.token("bench", "reader", &["reader"]);
    let mut latencies = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let grant: Value = app
            .http
            .post(app.url("/grant"))
            .bearer_auth(&reader)
            .json(&json!({ "token_ids": ids, "purpose": "bench" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let started = Instant::now();
        let response = app
            .http
            .post(app.url("/detokenize"))
            .bearer_auth(&reader)
            .json(&json!({ "tokens": ids, "grant_jwt": grant["grant_jwt"] }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let _ = response.bytes().await.unwrap();
        latencies.push(started.elapsed());
    }
    latencies.sort();
    println!(
        "detokenize 100 tokens ({rounds} calls): p50 {:.1} ms, p99 {:.1} ms",
        percentile(&latencies, 0.50).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0
    );
}

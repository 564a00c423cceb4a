//! Sustained load: mixed tokenize, grant, detokenize and vault-list traffic at a fixed rate
//! against tokens-api, on a Postgres with production durability, for 5 minutes. It reports,
//! per operation, the requests sent, the 5xx answers, p50 and p99 latency, and the process's
//! resident memory over the run (the service runs in this process), to show that it is flat.
//!
//! `cargo bench -p integration-tests --bench sustained` (`-- --quick` runs 20 seconds;
//! `BENCH_SECONDS` sets the length). The rate is open-loop: each request is sent on its tick
//! whether or not earlier ones have been answered, so a slow service cannot slow the load down
//! and hide its own latency.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use integration_tests::{Service, TestApp};
use serde_json::{Value, json};

/// Requests per second of each operation: 50 requests/s (a detokenize is a grant and a
/// detokenize) and 200 tokenized items/s in all.
const TOKENIZE_PER_SECOND: u64 = 20;
const ITEMS_PER_TOKENIZE: usize = 10;
const DETOKENIZE_PER_SECOND: u64 = 10;
const LIST_PER_SECOND: u64 = 10;

#[derive(Default)]
struct Samples {
    /// Latency in milliseconds and status, per operation.
    by_op: BTreeMap<&'static str, Vec<(f64, u16)>>,
}

fn resident_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|k| k.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn ssn(n: u64) -> String {
    let serial = n % 9999 + 1;
    let group = (n / 9999) % 99 + 1;
    let area = (n / (9999 * 99)) % 665 + 1;
    format!("{area:03}-{group:02}-{serial:04}")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

struct Load {
    app: TestApp,
    api_key: String,
    policy: String,
    support: String,
    admin: String,
    tokens: Mutex<Vec<String>>,
    samples: Mutex<Samples>,
}

impl Load {
    fn record(&self, op: &'static str, started: Instant, status: u16) {
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        self.samples
            .lock()
            .unwrap()
            .by_op
            .entry(op)
            .or_default()
            .push((ms, status));
    }

    async fn tokenize(&self, n: u64) {
        let items: Vec<Value> = (0..ITEMS_PER_TOKENIZE as u64)
            .map(|i| json!({ "value": ssn(n * ITEMS_PER_TOKENIZE as u64 + i), "pii_type": "us_ssn" }))
            .collect();
        let started = Instant::now();
        let response = self
            .app
            .http
            .post(self.app.url("/tokenize"))
            .header("X-API-Key", &self.api_key)
            .json(&json!({ "policy_id": self.policy, "items": items }))
            .send()
            .await;
        let status = response.as_ref().map_or(0, |r| r.status().as_u16());
        self.record("tokenize (10 items)", started, status);
        if let Ok(response) = response
            && status == 200
        {
            let body: Value = response.json().await.unwrap_or_default();
            let ids: Vec<String> = body["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["token_id"].as_str().map(str::to_owned))
                .collect();
            let mut tokens = self.tokens.lock().unwrap();
            tokens.extend(ids);
            let excess = tokens.len().saturating_sub(10_000);
            tokens.drain(..excess);
        }
    }

    async fn grant_and_detokenize(&self, n: u64) {
        let ids: Vec<String> = {
            let tokens = self.tokens.lock().unwrap();
            if tokens.is_empty() {
                return;
            }
            (0..10)
                .map(|i| tokens[(n as usize * 7 + i * 13) % tokens.len()].clone())
                .collect()
        };
        let started = Instant::now();
        let response = self
            .app
            .http
            .post(self.app.url("/grant"))
            .bearer_auth(&self.support)
            .json(&json!({ "token_ids": ids, "purpose": "audit" }))
            .send()
            .await;
        let status = response.as_ref().map_or(0, |r| r.status().as_u16());
        self.record("grant (10 tokens)", started, status);
        let Ok(response) = response else { return };
        if status != 200 {
            return;
        }
        let grant: Value = response.json().await.unwrap_or_default();
        let started = Instant::now();
        let response = self
            .app
            .http
            .post(self.app.url("/detokenize"))
            .bearer_auth(&self.support)
            .json(&json!({ "tokens": ids, "grant_jwt": grant["grant_jwt"] }))
            .send()
            .await;
        let status = response.as_ref().map_or(0, |r| r.status().as_u16());
        self.record("detokenize (10 tokens)", started, status);
    }

    async fn list(&self) {
        let started = Instant::now();
        let response = self
            .app
            .http
            .get(self.app.url("/vault?limit=50"))
            .bearer_auth(&self.admin)
            .send()
            .await;
        let status = response.as_ref().map_or(0, |r| r.status().as_u16());
        if let Ok(response) = response {
            let _ = response.bytes().await;
        }
        self.record("vault list (50)", started, status);
    }
}

/// Runs `op` `per_second` times a second until `until`, each on its own task.
fn drive<F, Fut>(
    load: &Arc<Load>,
    per_second: u64,
    until: Instant,
    op: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(Arc<Load>, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let load = load.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(Duration::from_micros(1_000_000 / per_second));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut n = 0;
        let mut inflight = tokio::task::JoinSet::new();
        while Instant::now() < until {
            ticks.tick().await;
            // Finished requests are reaped as the run goes: a JoinSet keeps every finished
            // task until it is joined, which would grow this process's memory with the load.
            while inflight.try_join_next().is_some() {}
            inflight.spawn(op(load.clone(), n));
            n += 1;
        }
        while inflight.join_next().await.is_some() {}
    })
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 20 } else { 300 });
    testkit::use_durable_cluster();
    let app = TestApp::spawn_with(Service::Tokens, |env| {
        env.insert(
            "DPS_RATE_LIMITS".into(),
            "tokenize=1000000/1000000,grant=1000000/1000000,detokenize=1000000/1000000,vault_list=1000000/1000000".into(),
        );
        env.insert("HTTP_WORKERS".into(), "2".into());
        env.insert("DATABASE_POOL_SIZE".into(), "16".into());
    })
    .await;
    let admin = app.token("acme", "alice", &["admin"]);
    let support = app.token("acme", "sam", &["support"]);
    let api_key = {
        let mut conn = app.conn().await;
        let (_, key) = auth::api_keys::create(&mut conn, &"acme".parse().unwrap(), None, "bench")
            .await
            .unwrap();
        key.expose().to_owned()
    };
    let policy: Value = app
        .http
        .post(app.url("/policies"))
        .bearer_auth(&admin)
        .json(&json!({
            "name": "sustained",
            "type_rules": { "us_ssn": { "mode": "format_preserving" } },
            "allowed_roles": ["support"],
            "allowed_purposes": ["audit"]
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let load = Arc::new(Load {
        app,
        api_key,
        policy: policy["policy_id"].as_str().unwrap().to_owned(),
        support,
        admin,
        tokens: Mutex::new(Vec::new()),
        samples: Mutex::new(Samples::default()),
    });
    // Tokens to detokenize from the first second on.
    load.tokenize(u64::MAX / 1_000_000).await;

    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let mut memory = vec![(0u64, resident_mib())];
    let drivers = [
        drive(&load, TOKENIZE_PER_SECOND, until, |l, n| async move {
            l.tokenize(n).await
        }),
        drive(&load, DETOKENIZE_PER_SECOND, until, |l, n| async move {
            l.grant_and_detokenize(n).await;
        }),
        drive(&load, LIST_PER_SECOND, until, |l, _| async move {
            l.list().await
        }),
    ];
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(10).min(until - Instant::now())).await;
        memory.push((started.elapsed().as_secs(), resident_mib()));
    }
    for driver in drivers {
        driver.await.unwrap();
    }

    println!(
        "sustained load: {seconds} s at {} requests/s ({TOKENIZE_PER_SECOND} tokenize of \
         {ITEMS_PER_TOKENIZE} items, {DETOKENIZE_PER_SECOND} grant+detokenize of 10 tokens, \
         {LIST_PER_SECOND} vault lists), durable Postgres\n",
        TOKENIZE_PER_SECOND + 2 * DETOKENIZE_PER_SECOND + LIST_PER_SECOND
    );
    println!("| Operation | Requests | 5xx | Other non-2xx | p50 (ms) | p99 (ms) | max (ms) |");
    println!("|---|---|---|---|---|---|---|");
    let samples = load.samples.lock().unwrap();
    for (op, all) in &samples.by_op {
        let mut ms: Vec<f64> = all.iter().map(|(ms, _)| *ms).collect();
        ms.sort_by(f64::total_cmp);
        let server_errors = all.iter().filter(|(_, s)| *s >= 500 || *s == 0).count();
        let other = all
            .iter()
            .filter(|(_, s)| !(200..300).contains(s) && *s < 500 && *s != 0)
            .count();
        println!(
            "| {op} | {} | {server_errors} | {other} | {:.1} | {:.1} | {:.1} |",
            all.len(),
            percentile(&ms, 0.5),
            percentile(&ms, 0.99),
            ms.last().copied().unwrap_or(0.0),
        );
    }
    println!("\nresident memory of the process (service and load generator), MiB:");
    let line: Vec<String> = memory
        .iter()
        .map(|(at, mib)| format!("{at}s {mib:.0}"))
        .collect();
    println!("{}", line.join(", "));
}

//! Tokenize throughput over real HTTP into a real vault, beside the raw Postgres rate of the
//! same rows on the same server, and detokenize latency for 100 tokens.
//!
//! `cargo bench -p integration-tests --bench tokens_http` (add `-- --quick` for a short run;
//! `BENCH_CLIENTS` and `BENCH_HTTP_WORKERS` change the defaults of 4 clients and 2 workers;
//! `BENCH_MODE=<mode> BENCH_BATCHES=<n>` tokenizes in one mode alone, for a profiler, and
//! `BENCH_DRY_RUN=1` with it makes those calls dry runs, which write nothing).
//! It starts a Postgres cluster with production durability (fsync, synchronous commit and
//! full-page writes on) and tokens-api in-process, and prints a table that docs/BENCHMARKS.md
//! records.
//!
//! The references, measured in the same run right before each mode, are
//! `COPY ... FROM STDIN (FORMAT binary)` of as many rows of that mode's width, from as many
//! clients, one transaction per 1000 rows as tokenize commits: into a fresh table without
//! indexes (`COPY`), into a fresh table with the vault's indexes (`COPY idx`), and into the
//! vault's own table as the run has filled it, right before and right after the tokenize
//! (`COPY vault`, the mean of the two: the reference). `INSERT` is tokenize's own
//! insert statement with the same rows, sent without the service. Then, per row, the CPU time
//! of Postgres and of this process (the client; tokens-api and its HTTP clients) while the
//! first COPY into the vault, the statement and the tokenize were timed (their bodies are
//! built before), read from /proc.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::time::{Duration, Instant};

use integration_tests::{Service, TestApp};
use serde_json::{Value, json};

#[path = "support/cpu.rs"]
#[allow(
    dead_code,
    reason = "shared with the storage benchmarks; this one has no emulator"
)]
mod cpu;
use cpu::Cpu;

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

/// Runs `batches` of 1000 rows from `clients` tasks at once, client `c` taking batches `c`,
/// `c + clients`, `c + 2 clients` and so on (`each(batches, its share)`), and returns the rows
/// per second and the CPU spent meanwhile. Whatever `each` prepares before its first batch
/// (a connection) is inside the clock; what the caller built into `batches` is not.
async fn timed<T, F, Fut>(batches: Vec<T>, clients: usize, each: F) -> (f64, Cpu)
where
    T: Send + Sync + 'static,
    F: Fn(std::sync::Arc<Vec<T>>, Vec<usize>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let rows = (batches.len() * BATCH) as f64;
    let batches = std::sync::Arc::new(batches);
    let started = Instant::now();
    let cpu = Cpu::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..clients {
        let share = (client..batches.len()).step_by(clients).collect();
        tasks.spawn(each(batches.clone(), share));
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    (
        rows / started.elapsed().as_secs_f64(),
        Cpu::now().minus(&cpu),
    )
}

async fn tokenize_rate(
    app: &TestApp,
    key: &str,
    policy: &str,
    mode: &str,
    batches: usize,
    clients: usize,
    offset: usize,
) -> (f64, Cpu) {
    // Bodies are serialized before the clock starts, so the client's JSON work does not count
    // against the service (they share the machine's two cores).
    let bodies: Vec<Vec<u8>> = (0..batches)
        .map(|b| serde_json::to_vec(&batch(policy, mode, offset + b * BATCH)).unwrap())
        .collect();
    // A dry run (`BENCH_DRY_RUN`) seals and writes nothing: what is left is the work before
    // the write (HTTP, JSON, admission, normalization, MAC or FF1, the response).
    let dry_run = std::env::var_os("BENCH_DRY_RUN").is_some();
    let url = app.url(if dry_run {
        "/tokenize?dry_run=true"
    } else {
        "/tokenize"
    });
    timed(bodies, clients, |bodies, share| {
        let (http, url, key) = (app.http.clone(), url.clone(), key.to_owned());
        async move {
            for b in share {
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
        }
    })
    .await
}

/// The columns a tokenize of `mode` writes for row `n` of a run, as wide as the service
/// writes them (the fingerprint is left out: surrogates only).
struct Reference {
    token_id: uuid::Uuid,
    token: String,
    pii_type: &'static str,
    mode: &'static str,
    /// The nonce, the sealed payload (a format byte, a currency length, the value), the tag.
    ciphertext: Vec<u8>,
    /// None for a randomized row, which is found by its token id.
    lookup: Option<uuid::Uuid>,
}

fn reference(mode: &str, n: usize) -> Reference {
    let (token, pii_type, mode, value_len) = match mode {
        "deterministic" => (format!("dtk_{n:032}"), "us_ssn", "deterministic", 9),
        "randomized" => (
            format!("rtk_{}", uuid::Uuid::new_v4().simple()),
            "email",
            "randomized",
            22,
        ),
        _ => (ssn(n), "us_ssn", "format_preserving", 9),
    };
    Reference {
        token_id: uuid::Uuid::now_v7(),
        token,
        pii_type,
        mode,
        ciphertext: vec![7u8; 12 + 2 + value_len + 16],
        lookup: (mode != "randomized").then(uuid::Uuid::new_v4),
    }
}

/// One reference row of `mode`, `n` of its run, in COPY's binary format.
fn reference_row(mode: &str, n: usize, out: &mut Vec<u8>) {
    let text = |out: &mut Vec<u8>, v: &[u8]| {
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        out.extend_from_slice(v);
    };
    let null = |out: &mut Vec<u8>| out.extend_from_slice(&(-1i32).to_be_bytes());
    let row = reference(mode, n);
    out.extend_from_slice(&11i16.to_be_bytes());
    text(out, b"bench");
    text(out, row.token_id.as_bytes());
    text(out, row.token.as_bytes());
    text(out, row.pii_type.as_bytes());
    text(out, row.mode.as_bytes());
    text(out, uuid::Uuid::nil().as_bytes());
    text(out, &1i32.to_be_bytes());
    null(out); // fingerprint
    text(out, &1i32.to_be_bytes());
    text(out, &row.ciphertext);
    match row.lookup {
        Some(lookup) => text(out, lookup.as_bytes()),
        None => null(out),
    }
}

/// Where a reference COPY writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A fresh, empty copy of the vault table without its indexes.
    Unindexed,
    /// A fresh, empty copy of the vault table with all its indexes.
    FreshIndexed,
    /// The vault's own table, as large as the run has made it: the indexes tokenize writes
    /// into, at the size tokenize finds them. The rows (the benchmark tenant's, with token ids
    /// and lookup keys of their own) stay, as more entries would.
    Vault,
}

/// Rows per second of `COPY ... FROM STDIN (FORMAT binary)` of `batches` batches of `mode`'s
/// rows into `target`, from `clients` connections, one transaction per batch.
async fn copy_rate(
    url: &str,
    mode: &str,
    target: Target,
    batches: usize,
    clients: usize,
) -> (f64, Cpu) {
    use futures::SinkExt as _;
    let (setup, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let table = match target {
        Target::Vault => "vault_entries",
        Target::Unindexed | Target::FreshIndexed => "copy_reference",
    };
    let like = match target {
        Target::Unindexed => {
            "DROP TABLE IF EXISTS copy_reference; \
             CREATE TABLE copy_reference (LIKE vault_entries INCLUDING DEFAULTS);"
        }
        Target::FreshIndexed => {
            "DROP TABLE IF EXISTS copy_reference; \
             CREATE TABLE copy_reference (LIKE vault_entries INCLUDING ALL);"
        }
        Target::Vault => "",
    };
    setup
        .batch_execute(&format!("{like} CHECKPOINT;"))
        .await
        .unwrap();
    let bodies: Vec<bytes::Bytes> = (0..batches)
        .map(|b| {
            let mut out = b"PGCOPY\n\xff\r\n\0".to_vec();
            out.extend_from_slice(&[0u8; 8]);
            for i in 0..BATCH {
                reference_row(mode, b * BATCH + i, &mut out);
            }
            out.extend_from_slice(&(-1i16).to_be_bytes());
            bytes::Bytes::from(out)
        })
        .collect();
    let copy = format!(
        "COPY {table} (tenant_id, token_id, token, pii_type, mode, policy_id, policy_version, \
         fingerprint, key_version, ciphertext, lookup) FROM STDIN (FORMAT binary)"
    );
    let (rate, cpu) = timed(bodies, clients, |bodies, share| {
        let (url, copy) = (url.to_owned(), copy.clone());
        async move {
            let (conn, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            for b in share {
                let sink = conn.copy_in(&copy).await.unwrap();
                let mut sink = std::pin::pin!(sink);
                sink.send(bodies[b].clone()).await.unwrap();
                assert_eq!(sink.as_mut().finish().await.unwrap(), BATCH as u64);
            }
        }
    })
    .await;
    if target != Target::Vault {
        setup
            .batch_execute("DROP TABLE copy_reference")
            .await
            .unwrap();
    }
    (rate, cpu)
}

/// Rows per second of tokenize's own insert statement ([`vault::tokenize::INSERT_ROWS`], as a
/// batch's first round sends it, in its savepoint), through diesel with the same binary array
/// parameters, from `clients` connections, one
/// transaction per batch, with the rows the references write: what the service's SQL costs
/// Postgres without the service. The batch's other statements (quota, usage) are left out.
async fn statement_rate(url: &str, mode: &str, batches: usize, clients: usize) -> (f64, Cpu) {
    use diesel::sql_types::{Array, Bytea, Int4, Int8, Nullable, Text, Uuid as SqlUuid};
    use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
    struct Batch {
        token_ids: Vec<uuid::Uuid>,
        tokens: Vec<String>,
        pii_types: Vec<&'static str>,
        modes: Vec<&'static str>,
        fingerprints: Vec<Option<Vec<u8>>>,
        ciphertexts: Vec<Vec<u8>>,
        lookups: Vec<Option<uuid::Uuid>>,
    }
    let batches: Vec<Batch> = (0..batches)
        .map(|b| {
            let rows: Vec<Reference> = (b * BATCH..(b + 1) * BATCH)
                .map(|n| reference(mode, n))
                .collect();
            Batch {
                token_ids: rows.iter().map(|r| r.token_id).collect(),
                pii_types: rows.iter().map(|r| r.pii_type).collect(),
                modes: rows.iter().map(|r| r.mode).collect(),
                fingerprints: vec![None; BATCH],
                lookups: rows.iter().map(|r| r.lookup).collect(),
                tokens: rows.iter().map(|r| r.token.clone()).collect(),
                ciphertexts: rows.into_iter().map(|r| r.ciphertext).collect(),
            }
        })
        .collect();
    timed(batches, clients, |batches, share| {
        let url = url.to_owned();
        async move {
            let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
            for b in share {
                let rows = &batches[b];
                conn.transaction(async |conn| {
                    conn.transaction(async |conn| {
                        db::sql(vault::tokenize::INSERT_ROWS)
                            .bind::<Text, _>("bench")
                            .bind::<SqlUuid, _>(uuid::Uuid::nil())
                            .bind::<Int4, _>(1)
                            .bind::<Int4, _>(1)
                            .bind::<Nullable<Int8>, _>(None::<i64>)
                            .bind::<Array<SqlUuid>, _>(&rows.token_ids)
                            .bind::<Array<Text>, _>(&rows.tokens)
                            .bind::<Array<Text>, _>(&rows.pii_types)
                            .bind::<Array<Text>, _>(&rows.modes)
                            .bind::<Array<Nullable<Bytea>>, _>(&rows.fingerprints)
                            .bind::<Array<Bytea>, _>(&rows.ciphertexts)
                            .bind::<Array<Nullable<SqlUuid>>, _>(&rows.lookups)
                            .execute(conn)
                            .await
                    })
                    .await
                })
                .await
                .unwrap();
            }
        }
    })
    .await
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
    // For profiling: more batches, and one mode alone (`BENCH_MODE`), without the references.
    let batches = setting("BENCH_BATCHES", batches);
    let only = std::env::var("BENCH_MODE").ok();
    let workers = setting("BENCH_HTTP_WORKERS", 2);
    // Production durability: every tokenize answer is on disk when it is returned.
    testkit::use_durable_cluster();
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
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8} {:>8}",
        "rows/s", "COPY", "COPY idx", "COPY vault", "INSERT", "tokenize", "ratio", "idx", "vault"
    );
    let mut offset = 0;
    let mut spent = Vec::new();
    for mode in ["deterministic", "randomized", "format_preserving"] {
        if let Some(only) = &only {
            if only != mode {
                continue;
            }
            let (rate, cpu) =
                tokenize_rate(&app, &key, &policy, mode, batches, clients, offset).await;
            let us = |s: f64| s * 1e6 / (batches * BATCH) as f64;
            println!(
                "{mode:<18} {rate:>12.0} items/s; CPU µs per item: postgres {:.2}, service and client {:.2}",
                us(cpu.postgres),
                us(cpu.service)
            );
            return;
        }
        let (raw, _) = copy_rate(&app.db.url, mode, Target::Unindexed, batches, clients).await;
        let (indexed, _) =
            copy_rate(&app.db.url, mode, Target::FreshIndexed, batches, clients).await;
        let (statement, statement_cpu) = statement_rate(&app.db.url, mode, batches, clients).await;
        // The COPY into the vault before and after the tokenize, and their mean: the vault
        // grows by every phase, and a phase measured on the smaller table is the faster
        // (measured: a deterministic COPY 15 to 21% slower after one more phase).
        let (vault_before, copy_cpu) =
            copy_rate(&app.db.url, mode, Target::Vault, batches, clients).await;
        let (rate, tokenize_cpu) =
            tokenize_rate(&app, &key, &policy, mode, batches, clients, offset).await;
        let (vault_after, _) = copy_rate(&app.db.url, mode, Target::Vault, batches, clients).await;
        let vault = (vault_before + vault_after) / 2.0;
        offset += batches * BATCH;
        println!(
            "{mode:<18} {raw:>10.0} {indexed:>10.0} {vault:>10.0} {statement:>10.0} {rate:>10.0} {:>8.2} {:>8.2} {:>8.2}",
            rate / raw,
            rate / indexed,
            rate / vault
        );
        spent.push((mode, copy_cpu, statement_cpu, tokenize_cpu));
    }
    // Where the cores went, per row: Postgres, and this process (the COPY's client, the
    // statement's client, or tokens-api and its HTTP clients).
    let rows = (batches * BATCH) as f64;
    println!(
        "{:<18} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "CPU µs per row",
        "COPY: pg",
        "client",
        "INSERT: pg",
        "client",
        "tokenize: pg",
        "svc+client"
    );
    for (mode, copy, statement, tokenize) in spent {
        let us = |s: f64| s * 1e6 / rows;
        println!(
            "{mode:<18} {:>11.1} {:>11.1} {:>11.1} {:>11.1} {:>11.1} {:>11.1}",
            us(copy.postgres),
            us(copy.service),
            us(statement.postgres),
            us(statement.service),
            us(tokenize.postgres),
            us(tokenize.service),
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

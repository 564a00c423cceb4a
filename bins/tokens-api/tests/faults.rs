//! The real `tokens-api` binary while its database crashes (`pg_ctl stop -m immediate`, the
//! server killed without a checkpoint) under a tokenize load with idempotency keys. Clients
//! see only 200 or 503 SERVICE_UNAVAILABLE (retryable), and succeed by retrying with the same
//! key. `/health` says 503 while the database is down and 200 once it is back, and the service
//! reconnects by itself. Afterwards the vault holds exactly the batches that were answered:
//! no partial batch, no token issued twice. And under detokenize traffic: no grant reveals
//! twice or is consumed twice, and no value is revealed without its audit record.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::AsyncConnection as _;
use serde_json::{Value, json};

mod support;

const CLIENTS: usize = 4;
const ITEMS: usize = 10;

/// Batch `b` of client `c`: ten SSNs no other batch holds.
fn batch(policy: &str, c: usize, b: usize) -> Value {
    let items: Vec<Value> = (0..ITEMS)
        .map(|i| {
            let ssn = format!(
                "{:03}-{:02}-{:04}",
                101 + c,
                10 + b % 89,
                1000 + b / 89 * 10 + i
            );
            json!({ "value": ssn, "pii_type": "us_ssn" })
        })
        .collect();
    json!({ "policy_id": policy, "items": items, "idempotency_key": format!("c{c}-b{b}") })
}

async fn health(http: &reqwest::Client, base: &str) -> Option<u16> {
    let response = http.get(format!("{base}/health")).send().await.ok()?;
    Some(response.status().as_u16())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_crash_under_tokenize_load_loses_no_batch_and_issues_no_token_twice() {
    let (mut cluster, db) = testkit::private_cluster().await;
    let support::Running {
        service,
        base,
        http,
        api_key,
        ..
    } = support::start(&db, 6, |env| {
        env.insert("DPS_RATE_LIMITS".into(), "tokenize=1000000/1000000".into());
        // Clients retry through the outage, whose credentials cannot be checked meanwhile:
        // they must hear 503 however long it lasts, never the unknown callers' limit.
        env.insert("DPS_ANONYMOUS_RATE_LIMIT".into(), "5".into());
        env.insert("DATABASE_WAIT_TIMEOUT_MS".into(), "1000".into());
    })
    .await;
    let policy = support::ssn_policy(&http, &base, "randomized").await;

    // Clients tokenize batch after batch, each retried with its key until it is answered 200.
    let done = Arc::new(AtomicBool::new(false));
    let unavailable = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let (http, base, api_key, policy) =
            (http.clone(), base.clone(), api_key.clone(), policy.clone());
        let (done, unavailable, failures) = (done.clone(), unavailable.clone(), failures.clone());
        clients.spawn(async move {
            let mut answered: Vec<Value> = Vec::new();
            for b in 0.. {
                if done.load(Ordering::SeqCst) {
                    break;
                }
                let body = batch(&policy, c, b);
                let deadline = Instant::now() + Duration::from_secs(60);
                let answer = loop {
                    let response = http
                        .post(format!("{base}/tokenize"))
                        .header("X-API-Key", &api_key)
                        .json(&body)
                        .send()
                        .await
                        .unwrap();
                    let status = response.status().as_u16();
                    let answer: Value = response.json().await.unwrap();
                    match status {
                        200 => break answer,
                        503 => {
                            assert_eq!(answer["error"]["code"], "SERVICE_UNAVAILABLE", "{answer}");
                            assert_eq!(answer["error"]["retryable"], true, "{answer}");
                            unavailable.fetch_add(1, Ordering::SeqCst);
                        }
                        other => {
                            failures
                                .lock()
                                .unwrap()
                                .push(format!("client {c} batch {b}: {other} {answer}"));
                        }
                    }
                    assert!(
                        Instant::now() < deadline,
                        "client {c} batch {b} never succeeded"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                };
                assert_eq!(answer["success_count"], ITEMS, "{answer}");
                answered.push(answer);
            }
            answered
        });
    }

    tokio::time::sleep(Duration::from_millis(700)).await;
    tokio::task::block_in_place(|| cluster.crash()).unwrap();
    // While it is down, /health says so.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if health(&http, &base).await == Some(503) {
            break;
        }
        assert!(Instant::now() < deadline, "/health never showed the outage");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    tokio::task::block_in_place(|| cluster.start()).unwrap();
    // The service reconnects by itself.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if health(&http, &base).await == Some(200) {
            break;
        }
        assert!(Instant::now() < deadline, "the service never came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    done.store(true, Ordering::SeqCst);

    let mut answered = Vec::new();
    while let Some(result) = clients.join_next().await {
        answered.extend(result.unwrap());
    }
    let (status, lines) = service.stop();
    assert!(status.success(), "exit status {status}");
    let failures = failures.lock().unwrap().clone();
    if !failures.is_empty() {
        let _ = std::fs::write(
            std::env::temp_dir().join("dps-faults-lines.log"),
            lines.join("\n"),
        );
    }
    let errors: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("request failed"))
        .collect();
    assert!(
        failures.is_empty(),
        "answers other than 200 and 503: {failures:#?}\nthe service's failed requests: {errors:#?}"
    );
    assert!(
        unavailable.load(Ordering::SeqCst) > 0,
        "the crash was never seen by a client"
    );
    let tokens: Vec<String> = answered
        .iter()
        .flat_map(|a| a["results"].as_array().unwrap().iter())
        .map(|r| r["token_id"].as_str().unwrap().to_owned())
        .collect();
    let distinct: std::collections::BTreeSet<&String> = tokens.iter().collect();
    assert_eq!(
        distinct.len(),
        tokens.len(),
        "a token id was answered twice"
    );

    let stored = vault_entries(&db.url).await;
    assert_eq!(
        stored,
        tokens.len() as i64,
        "the vault holds exactly the answered batches ({} of them)",
        answered.len()
    );
}

/// The tenant's vault entries, counted in the database.
async fn vault_entries(url: &str) -> i64 {
    use diesel_async::RunQueryDsl as _;
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let mut conn = db::AsyncPgConnection::establish(url).await.unwrap();
    let stored: Count =
        diesel::sql_query("SELECT count(*) AS n FROM vault_entries WHERE tenant_id = 'acme'")
            .get_result(&mut conn)
            .await
            .unwrap();
    stored.n
}

/// The `jti` of a grant, read from its payload.
fn jti(grant_jwt: &str) -> String {
    let payload = grant_jwt.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let claims: Value = serde_json::from_slice(&bytes).unwrap();
    claims["jti"].as_str().unwrap().to_owned()
}

/// Granted audit records of grant `jti`.
async fn granted_records(url: &str, jti: &str) -> i64 {
    use diesel_async::RunQueryDsl as _;
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let mut conn = db::AsyncPgConnection::establish(url).await.unwrap();
    let found: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM detokenization_audit \
          WHERE grant_jti = $1::uuid AND outcome = 'granted'",
    )
    .bind::<diesel::sql_types::Text, _>(jti)
    .get_result(&mut conn)
    .await
    .unwrap();
    found.n
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_crash_during_detokenize_never_reveals_without_an_audit_record() {
    let (mut cluster, db) = testkit::private_cluster().await;
    let support::Running {
        service,
        base,
        http,
        api_key,
        ..
    } = support::start(&db, 8, |env| {
        env.insert(
            "DPS_RATE_LIMITS".into(),
            "detokenize=1000000/1000000,grant=1000000/1000000".into(),
        );
        env.insert("DATABASE_WAIT_TIMEOUT_MS".into(), "1000".into());
    })
    .await;
    let sam = support::token("sam", &["admin", "support"]);
    let policy = support::ssn_policy(&http, &base, "randomized").await;
    let id = support::tokenized_ssn(&http, &base, &api_key, &policy, "523-45-6781").await;

    // Clients take a grant and use it, again and again; a 503 is retried with the same grant.
    let done = Arc::new(AtomicBool::new(false));
    let unavailable = Arc::new(AtomicUsize::new(0));
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..CLIENTS {
        let (http, base, sam, id, done) = (
            http.clone(),
            base.clone(),
            sam.clone(),
            id.clone(),
            done.clone(),
        );
        let unavailable = unavailable.clone();
        clients.spawn(async move {
            // (jti, revealed by an answer, answers other than 200, 403 or 503)
            let mut uses: Vec<(String, usize, Vec<String>)> = Vec::new();
            while !done.load(Ordering::SeqCst) {
                let grant = loop {
                    let response = http
                        .post(format!("{base}/grant"))
                        .bearer_auth(&sam)
                        .json(&json!({ "token_ids": [id], "purpose": "audit" }))
                        .send()
                        .await
                        .unwrap();
                    if response.status() == 200 {
                        let grant: Value = response.json().await.unwrap();
                        break grant["grant_jwt"].as_str().unwrap().to_owned();
                    }
                    assert_eq!(response.status(), 503, "{}", response.text().await.unwrap());
                    unavailable.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                };
                let (mut revealed, mut odd) = (0, Vec::new());
                for _ in 0..50 {
                    let response = http
                        .post(format!("{base}/detokenize"))
                        .bearer_auth(&sam)
                        .json(&json!({ "tokens": [id], "grant_jwt": grant }))
                        .send()
                        .await
                        .unwrap();
                    let status = response.status().as_u16();
                    let body: Value = response.json().await.unwrap();
                    match status {
                        200 => {
                            assert_eq!(body["results"][0]["value"], "523456781", "{body}");
                            revealed += 1;
                        }
                        // Used already (perhaps by the attempt whose answer was a 503).
                        403 => {
                            assert_eq!(body["error"]["code"], "GRANT_NONCE_REUSED", "{body}");
                            break;
                        }
                        503 => {
                            unavailable.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                        other => odd.push(format!("{other} {body}")),
                    }
                    // After a 200, the same grant again: it must be refused.
                }
                uses.push((jti(&grant), revealed, odd));
            }
            uses
        });
    }

    tokio::time::sleep(Duration::from_millis(600)).await;
    tokio::task::block_in_place(|| cluster.crash()).unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    tokio::task::block_in_place(|| cluster.start()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while health(&http, &base).await != Some(200) {
        assert!(Instant::now() < deadline, "the service never came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    done.store(true, Ordering::SeqCst);

    let mut uses = Vec::new();
    while let Some(result) = clients.join_next().await {
        uses.extend(result.unwrap());
    }
    assert!(uses.len() >= CLIENTS, "{} grants used", uses.len());
    assert!(
        unavailable.load(Ordering::SeqCst) > 0,
        "the crash was never seen by a client"
    );
    for (jti, revealed, odd) in &uses {
        assert!(
            odd.is_empty(),
            "answers other than 200, 403 and 503: {odd:?}"
        );
        assert!(*revealed <= 1, "grant {jti} revealed {revealed} times");
        let records = granted_records(&db.url, jti).await;
        assert!(records <= 1, "grant {jti} was consumed {records} times");
        assert!(
            *revealed as i64 <= records,
            "grant {jti} revealed a value without its audit record"
        );
    }
    let (status, _) = service.stop();
    assert!(status.success(), "exit status {status}");
}

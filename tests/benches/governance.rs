//! Governance at size, on a Postgres with production durability (fsync and synchronous commit
//! on): read latency of risk scores, drift events and the audit log at a million findings and a
//! million audit entries, the audit verifier's rate, and a dry-run reconciliation's rate.
//!
//! `cargo bench -p integration-tests --bench governance` (`-- --quick`: 100,000 findings and
//! 100,000 audit entries; `-- --console`: the console's pages only, without the API's reads,
//! the verifier and the reconciliation). `BENCH_FINDINGS` and `BENCH_AUDIT` change the sizes.
//!
//! How the data gets there:
//! - 10 connectors through the API; their findings (10 per object, five types, confidences
//!   0.60 to 0.99) and scanned objects written by SQL, as the scan's own batch insert writes
//!   them, since scanning a million findings out of moto is the scan benchmark's job;
//! - risk and drift through the governance crate's own batch recorder
//!   (`risk::state::record_batch`, `drift::data_drift`), 500 objects per transaction, as the
//!   evaluation consumer records a scan's batches: every object is new, so each is one data
//!   drift event;
//! - the audit log through `audit::append`, 2,000 entries per transaction, hash-chained, with
//!   platform-api's checkpointer signing as it goes;
//! - for the console's pages, by SQL: each finding's scan as a completed scan and 990 earlier
//!   ones, each connector's bucket with its posture (three public and unencrypted), and
//!   100,000 alert deliveries.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::time::{Duration, Instant};

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
use integration_tests::{Service, TestApp};
use serde_json::{Value, json};

const TENANT: &str = "acme";
const CONNECTORS: usize = 10;
const FINDINGS_PER_OBJECT: usize = 10;
/// A scan's options with every default filled in, as the service writes them.
const SCAN_OPTIONS: &str = r#"{"max_files": 100000, "max_workers": 4, "file_types": [], "prefixes": [],
    "timeout_minutes": 120, "coverage_target": 0.95, "coverage_strategy": "best_effort",
    "max_object_bytes": 104857600}"#;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Client<'a> {
    app: &'a TestApp,
    token: String,
}

impl Client<'_> {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .app
            .http
            .request(method, self.app.url(path))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    async fn yaml(&self, path: &str, text: &str) -> Value {
        let response = self
            .app
            .http
            .post(self.app.url(path))
            .bearer_auth(&self.token)
            .header("content-type", "application/yaml")
            .body(text.to_owned())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }
}

/// Times `rounds` sequential GETs of each path (after 10 unmeasured), returning p50 and p99.
async fn latency(client: &Client<'_>, path: &str, rounds: usize) -> (Duration, Duration) {
    for _ in 0..10 {
        client.send(reqwest::Method::GET, path, None).await;
    }
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        client.send(reqwest::Method::GET, path, None).await;
        times.push(started.elapsed());
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

/// A console session of the dev sign-in's `admin`, signed in through the sign-in form: the
/// `Cookie` header value that carries it.
async fn console_session(app: &TestApp) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let cookie_of = |response: &reqwest::Response, name: &str| {
        response
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix(&format!("{name}=")))
            .map(|c| c.split(';').next().unwrap().to_owned())
            .unwrap()
    };
    let page = http
        .get(format!("{}/console/sign-in", app.origin))
        .send()
        .await
        .unwrap();
    let pending = cookie_of(&page, "dps-console-sign-in");
    let body = page.text().await.unwrap();
    let marker = "name=\"csrf\" value=\"";
    let at = body.find(marker).unwrap() + marker.len();
    let csrf = body[at..at + body[at..].find('"').unwrap()].to_owned();
    let signed_in = http
        .post(format!("{}/console/dev-sign-in", app.origin))
        .header(
            reqwest::header::COOKIE,
            format!("dps-console-sign-in={pending}"),
        )
        .form(&[("csrf", csrf.as_str()), ("user", "admin")])
        .send()
        .await
        .unwrap();
    format!("dps-console={}", cookie_of(&signed_in, "dps-console"))
}

/// p50 and p99 of `rounds` GETs of the console page `path` after 10 unmeasured; `None` when
/// the page is not served (200) at all.
async fn page_latency(
    app: &TestApp,
    cookie: &str,
    path: &str,
    rounds: usize,
) -> Option<(Duration, Duration)> {
    let get = || async {
        let response = app
            .http
            .get(format!("{}{path}", app.origin))
            .header(reqwest::header::COOKIE, cookie)
            .send()
            .await
            .unwrap();
        let ok = response.status().is_success();
        response.bytes().await.unwrap();
        ok
    };
    for _ in 0..10 {
        if !get().await {
            return None;
        }
    }
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        assert!(get().await, "{path} stopped answering");
        times.push(started.elapsed());
    }
    times.sort();
    Some((percentile(&times, 0.5), percentile(&times, 0.99)))
}

/// The cursor of the page `depth` pages into a list.
async fn cursor_at(client: &Client<'_>, path: &str, depth: usize) -> String {
    let mut cursor = String::new();
    for _ in 0..depth {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = if cursor.is_empty() {
            path.to_owned()
        } else {
            format!("{path}{sep}cursor={cursor}")
        };
        let body = client.send(reqwest::Method::GET, &url, None).await;
        cursor = body["pagination"]["next_cursor"]
            .as_str()
            .unwrap_or_else(|| panic!("no next page of {path}: {}", body["pagination"]))
            .to_owned();
    }
    cursor
}

async fn seed_findings(
    conn: &mut db::AsyncPgConnection,
    connectors: &[String],
    per_connector: usize,
) {
    let objects = per_connector / FINDINGS_PER_OBJECT;
    for connector in connectors {
        let connector = uuid::Uuid::parse_str(connector).unwrap();
        let scan = uuid::Uuid::now_v7();
        diesel::sql_query(
            "INSERT INTO scanned_objects
                 (tenant_id, connector_id, bucket, object_key, size, etag, last_modified, scan_id)
             SELECT $1, $2, 'exports', 'part-' || lpad(g::text, 7, '0') || '.csv', 4096,
                    md5(g::text), now(), $3
               FROM generate_series(0, $4 - 1) g",
        )
        .bind::<Text, _>(TENANT)
        .bind::<SqlUuid, _>(connector)
        .bind::<SqlUuid, _>(scan)
        .bind::<BigInt, _>(objects as i64)
        .execute(conn)
        .await
        .unwrap();
        diesel::sql_query(
            "INSERT INTO findings
                 (tenant_id, finding_id, scan_id, connector_id, bucket, object_key, pii_type,
                  category, confidence, locations, preview, field, status, created_at)
             SELECT $1, gen_random_uuid(), $3, $2, 'exports',
                    'part-' || lpad((g / 10)::text, 7, '0') || '.csv',
                    (ARRAY['us_ssn','email','phone','dob','monetary'])[g % 5 + 1],
                    (ARRAY['government_id','contact','contact','personal','financial'])[g % 5 + 1],
                    0.60 + (g % 40) / 100.0,
                    jsonb_build_array(jsonb_build_object('row', g % 100 + 1, 'column', g % 10 + 1,
                                                         'header', 'c' || (g % 10))),
                    '***-**-' || lpad((g % 10000)::text, 4, '0'),
                    'c' || (g % 10), 'open', now()
               FROM generate_series(0, $4 - 1) g",
        )
        .bind::<Text, _>(TENANT)
        .bind::<SqlUuid, _>(connector)
        .bind::<SqlUuid, _>(scan)
        .bind::<BigInt, _>((objects * FINDINGS_PER_OBJECT) as i64)
        .execute(conn)
        .await
        .unwrap();
    }
    seed_scans_and_buckets(conn, connectors).await;
    seed_deliveries(conn).await;
    diesel::sql_query("ANALYZE findings")
        .execute(conn)
        .await
        .unwrap();
    diesel::sql_query("ANALYZE scanned_objects")
        .execute(conn)
        .await
        .unwrap();
}

/// What a scanned estate also holds beside its findings: each finding's scan as a completed
/// scan with 99 earlier ones per connector (1,000 scans to list), and each connector's bucket
/// with its posture checked, public and unencrypted for the first three connectors, so the
/// data map and the overview's exposed list have tiles to draw.
async fn seed_scans_and_buckets(conn: &mut db::AsyncPgConnection, connectors: &[String]) {
    diesel::sql_query(
        "INSERT INTO scans (tenant_id, scan_id, status, kind, origin, options, enumeration_status,
                            sources_total, sources_listed, worker_token_hash, max_workers, created_at,
                            started_at, completed_at)
         SELECT DISTINCT $1, scan_id, 'completed', 'full', 'connector', $2::jsonb, 'complete',
                1, 1, '\\x00'::bytea, 4, now() - interval '1 hour', now() - interval '1 hour', now()
           FROM findings WHERE tenant_id = $1",
    )
    .bind::<Text, _>(TENANT)
    .bind::<Text, _>(SCAN_OPTIONS)
    .execute(conn)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO scans (tenant_id, scan_id, status, kind, origin, options, enumeration_status,
                            sources_total, sources_listed, worker_token_hash, max_workers, created_at,
                            started_at, completed_at)
         SELECT $1, gen_random_uuid(), 'completed', 'incremental', 'connector', $3::jsonb,
                'complete', 1, 1, '\\x00'::bytea, 4, now() - g * interval '1 day',
                now() - g * interval '1 day', now() - g * interval '1 day' + interval '5 minutes'
           FROM generate_series(1, $2) g",
    )
    .bind::<Text, _>(TENANT)
    .bind::<BigInt, _>((connectors.len() * 99) as i64)
    .bind::<Text, _>(SCAN_OPTIONS)
    .execute(conn)
    .await
    .unwrap();
    for (i, connector) in connectors.iter().enumerate() {
        diesel::sql_query(
            "INSERT INTO governance_buckets
                 (tenant_id, connector_id, bucket, accessible, public, encryption, versioning,
                  checked_at)
             VALUES ($1, $2, 'exports', true, $3, $4, 'Enabled', now())",
        )
        .bind::<Text, _>(TENANT)
        .bind::<SqlUuid, _>(uuid::Uuid::parse_str(connector).unwrap())
        .bind::<diesel::sql_types::Bool, _>(i < 3)
        .bind::<Text, _>(if i < 3 { "none" } else { "aws:kms" })
        .execute(conn)
        .await
        .unwrap();
    }
}

/// 100,000 alerts to one channel over the last 100,000 minutes, as evaluation queues them
/// (ids ordered by time, as `Uuid::now_v7` makes them), nine in ten delivered.
async fn seed_deliveries(conn: &mut db::AsyncPgConnection) {
    diesel::sql_query(
        "INSERT INTO governance_deliveries (tenant_id, delivery_id, channel, action_id, payload,
                attempts, next_attempt_at, status, last_error, created_at, delivered_at)
         SELECT $1,
                (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7'
                 || substr(md5(g::text), 1, 19))::uuid,
                'security', gen_random_uuid(),
                jsonb_build_object('type', 'governance.alert',
                                   'policy', jsonb_build_object('name', 'ssn', 'version', 1),
                                   'severity', 'high',
                                   'resource', 'exports/part-' || lpad(g::text, 7, '0') || '.csv'),
                1, t, CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'delivered' END,
                CASE WHEN g % 10 = 0 THEN 'HTTP 500' END, t,
                CASE WHEN g % 10 = 0 THEN NULL ELSE t END
           FROM generate_series(1, 100000) g,
                LATERAL (SELECT now() - g * interval '1 minute' AS t) t",
    )
    .bind::<Text, _>(TENANT)
    .execute(conn)
    .await
    .unwrap();
}

/// Records risk and drift for every object, as the evaluation consumer does batch by batch.
async fn seed_risk(conn: &mut db::AsyncPgConnection, connectors: &[String]) -> usize {
    let tenant: ids::TenantId = TENANT.parse().unwrap();
    let mut events = 0;
    for connector in connectors {
        let connector = ids::ConnectorId::from_uuid(uuid::Uuid::parse_str(connector).unwrap());
        let mut after: Option<(String, String)> = None;
        loop {
            let findings: Vec<governance::evaluate::Finding> = scans::findings::open_after(
                conn,
                &tenant,
                connector,
                after.as_ref().map(|(b, k)| (b.as_str(), k.as_str())),
                500,
            )
            .await
            .unwrap()
            .into_iter()
            .map(governance::evaluate::Finding::from)
            .collect();
            let Some(last) = findings.last() else {
                break;
            };
            after = Some((last.bucket.clone(), last.object_key.clone()));
            let mut objects: Vec<(&str, &str)> = findings
                .iter()
                .map(|f| (f.bucket.as_str(), f.object_key.as_str()))
                .collect();
            objects.dedup();
            let written = conn
                .transaction(async |conn| {
                    let changes = posture::risk::state::record_batch(
                        conn,
                        &tenant,
                        connector,
                        &objects,
                        &findings,
                        &[],
                    )
                    .await?;
                    let drift = posture::drift::data_drift(
                        connector,
                        &changes,
                        &posture::drift::Decisions::new(),
                    );
                    posture::drift::record(conn, &tenant, &drift).await?;
                    Ok::<_, diesel::result::Error>(drift.len())
                })
                .await
                .unwrap();
            events += written;
        }
    }
    events
}

/// Appends `total` entries of the kinds evaluation writes, 2,000 per transaction.
async fn seed_audit(
    conn: &mut db::AsyncPgConnection,
    connectors: &[String],
    total: usize,
) -> Duration {
    let tenant: ids::TenantId = TENANT.parse().unwrap();
    let policy = ids::PolicyId::new();
    let started = Instant::now();
    let mut n = 0usize;
    while n < total {
        let size = 2_000.min(total - n);
        let entries: Vec<audit::NewEntry> = (n..n + size)
            .map(|i| {
                let connector = ids::ConnectorId::from_uuid(
                    uuid::Uuid::parse_str(&connectors[i % connectors.len()]).unwrap(),
                );
                let (kind, action) = match i % 4 {
                    0 => (audit::Kind::PolicyEvaluated, None),
                    1 => (audit::Kind::ActionSimulated, Some("quarantine")),
                    2 => (audit::Kind::ActionPlanned, Some("mask")),
                    _ => (audit::Kind::ActionPlanned, Some("alert")),
                };
                let mut entry = audit::NewEntry::new(kind, audit::Actor::System)
                    .policy(policy, 1 + (i / 250_000) as i32)
                    .connector(connector)
                    .simulated(i % 4 == 1)
                    .outcome(if i % 4 == 1 { "simulated" } else { "success" })
                    .details(json!({
                        "scan_id": uuid::Uuid::nil().to_string(),
                        "findings": i % 10 + 1,
                        "pii_types": ["us_ssn"],
                    }));
                if let Some(action) = action {
                    entry = entry
                        .action(action)
                        .resource(format!("exports/part-{:07}.csv", i / 10));
                }
                entry
            })
            .collect();
        conn.transaction(async |conn| audit::append(conn, &tenant, &entries).await.map(drop))
            .await
            .unwrap();
        n += size;
    }
    started.elapsed()
}

/// The API's reads of risk, drift and the audit log, each `rounds` times.
async fn api_reads(reader: &Client<'_>, c0: &str, rounds: usize) {
    let mut paths: Vec<(String, String)> = vec![
        (
            "risk: findings, first page".into(),
            "/governance/risk-scores?level=finding".into(),
        ),
        (
            "risk: files, first page".into(),
            "/governance/risk-scores?level=file".into(),
        ),
        ("risk: connectors".into(), "/governance/risk-scores".into()),
        (
            "risk: workspace".into(),
            "/governance/risk-scores?level=workspace".into(),
        ),
        (
            "risk: one connector's findings, min_score 40".into(),
            format!("/governance/risk-scores?level=finding&connector={c0}&min_score=40&limit=100"),
        ),
        (
            "drift: first page".into(),
            "/governance/drift-events".into(),
        ),
        (
            "drift: severity medium, one connector".into(),
            format!("/governance/drift-events?severity=medium&connector={c0}&limit=100"),
        ),
        (
            "drift: type config_drift (none)".into(),
            "/governance/drift-events?type=config_drift".into(),
        ),
        ("audit: first page".into(), "/governance/audit-log".into()),
        (
            "audit: action_type mask, 100".into(),
            "/governance/audit-log?action_type=mask&limit=100".into(),
        ),
        ("summary".into(), "/governance/summary".into()),
    ];
    let deep = cursor_at(
        reader,
        "/governance/risk-scores?level=finding&limit=100",
        50,
    )
    .await;
    paths.push((
        "risk: findings, page 51 of 100".into(),
        format!("/governance/risk-scores?level=finding&limit=100&cursor={deep}"),
    ));
    let deep = cursor_at(reader, "/governance/drift-events?limit=100", 50).await;
    paths.push((
        "drift: page 51 of 100".into(),
        format!("/governance/drift-events?limit=100&cursor={deep}"),
    ));
    let deep = cursor_at(reader, "/governance/audit-log?limit=100", 50).await;
    paths.push((
        "audit: page 51 of 100".into(),
        format!("/governance/audit-log?limit=100&cursor={deep}"),
    ));
    println!("\n| Request | p50 ms | p99 ms |\n|---|---|---|");
    for (name, path) in &paths {
        let (p50, p99) = latency(reader, path, rounds).await;
        println!("| {name} | {:.1} | {:.1} |", ms(p50), ms(p99));
    }
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let console_only = std::env::args().any(|a| a == "--console");
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let findings = setting("BENCH_FINDINGS", if quick { 100_000 } else { 1_000_000 });
    let audit_entries = setting("BENCH_AUDIT", if quick { 100_000 } else { 1_000_000 });
    let rounds = if quick { 100 } else { 500 };

    testkit::use_durable_cluster();
    let master = base64_key();
    let app = TestApp::spawn_changed(
        Service::Platform,
        testkit::database().await,
        |env| {
            env.insert("DPS_SCAN_WORKERS".into(), "0".into());
            env.insert("DATABASE_POOL_SIZE".into(), "8".into());
            env.insert("HTTP_WORKERS".into(), "2".into());
            env.insert("DPS_MASTER_KEY".into(), master.clone());
        },
        integration_tests::dev_console(TENANT),
    )
    .await;
    let admin = Client {
        app: &app,
        token: app.token(TENANT, "ann", &["admin"]),
    };
    let mut connectors = Vec::new();
    let external_id = admin
        .send(reqwest::Method::GET, "/connectors/external-id", None)
        .await["data"]["external_id"]
        .clone();
    for i in 0..CONNECTORS {
        let body = admin
            .send(
                reqwest::Method::POST,
                "/connectors",
                Some(
                    json!({"name": format!("store-{i}"), "provider": "aws", "config": {
                        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                        "external_id": external_id,
                        "region": "us-east-1",
                        "buckets": ["exports"],
                    }}),
                ),
            )
            .await;
        connectors.push(body["data"]["id"].as_str().unwrap().to_owned());
    }
    let mut conn = app.conn().await;

    println!(
        "seeding {findings} findings in {} objects over {CONNECTORS} connectors, {audit_entries} audit entries (durable Postgres)",
        findings / FINDINGS_PER_OBJECT
    );
    let started = Instant::now();
    seed_findings(&mut conn, &connectors, findings / CONNECTORS).await;
    println!(
        "findings written by SQL: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let drift_events = seed_risk(&mut conn, &connectors).await;
    let elapsed = started.elapsed();
    println!(
        "risk and drift recorded through governance: {:.1} s ({:.0} findings/s), {drift_events} drift events",
        elapsed.as_secs_f64(),
        findings as f64 / elapsed.as_secs_f64()
    );
    let elapsed = seed_audit(&mut conn, &connectors, audit_entries).await;
    println!(
        "audit entries appended: {:.1} s ({:.0} entries/s)",
        elapsed.as_secs_f64(),
        audit_entries as f64 / elapsed.as_secs_f64()
    );
    for table in [
        "governance_objects",
        "governance_finding_risk",
        "governance_drift_events",
        "audit_log",
    ] {
        diesel::sql_query(format!("ANALYZE {table}"))
            .execute(&mut conn)
            .await
            .unwrap();
    }

    // Reads.
    let reader = Client {
        app: &app,
        token: app.token(TENANT, "al", &["analyst"]),
    };
    let c0 = &connectors[0];
    if !console_only {
        api_reads(&reader, c0, rounds).await;
    }

    // The console's pages, as a signed-in admin's browser asks for them: the whole round trip
    // of each page's HTML, which bounds its server time from above.
    let cookie = console_session(&app).await;
    #[derive(diesel::QueryableByName)]
    struct ScanOf {
        #[diesel(sql_type = SqlUuid)]
        scan_id: uuid::Uuid,
    }
    let scan: ScanOf = diesel::sql_query(
        "SELECT scan_id FROM findings WHERE tenant_id = $1 AND connector_id = $2 LIMIT 1",
    )
    .bind::<Text, _>(TENANT)
    .bind::<SqlUuid, _>(uuid::Uuid::parse_str(c0).unwrap())
    .get_result(&mut conn)
    .await
    .unwrap();
    println!("\n| Console page | p50 ms | p99 ms |\n|---|---|---|");
    for (name, path) in [
        ("overview", "/console".to_owned()),
        ("findings, first page", "/console/findings".to_owned()),
        (
            "findings, open government_id of one connector",
            format!("/console/findings?status=open&category=government_id&connector={c0}"),
        ),
        ("data map", "/console/data-map".to_owned()),
        (
            "data map, one bucket",
            format!("/console/data-map/{c0}/exports"),
        ),
        ("connectors", "/console/connectors".to_owned()),
        ("one connector", format!("/console/connectors/{c0}")),
        ("scans", "/console/scans".to_owned()),
        ("one scan", format!("/console/scans/{}", scan.scan_id)),
        ("policies", "/console/policies".to_owned()),
        ("drift", "/console/drift".to_owned()),
        (
            "drift, one connector's open",
            format!("/console/drift?status=open&connector={c0}"),
        ),
        ("remediations", "/console/remediations".to_owned()),
        ("audit log", "/console/audit".to_owned()),
        (
            "audit log, mask actions",
            "/console/audit?action_type=mask".to_owned(),
        ),
        ("alerts", "/console/alerts".to_owned()),
        ("settings", "/console/settings".to_owned()),
        ("tokenization", "/console/tokenization".to_owned()),
    ] {
        match page_latency(&app, &cookie, &path, rounds).await {
            Some((p50, p99)) => println!("| {name} | {:.1} | {:.1} |", ms(p50), ms(p99)),
            None => println!("| {name} | not served | |"),
        }
    }

    if console_only {
        return;
    }

    // The verifier, as `dpsctl audit verify` runs it.
    let key = audit::CheckpointKey::from_master(&keys::MasterKey::from_base64(&master).unwrap());
    let tenant: ids::TenantId = TENANT.parse().unwrap();
    let started = Instant::now();
    let verified = audit::verify(&mut conn, &tenant, key.public())
        .await
        .unwrap()
        .unwrap_or_else(|b| panic!("the log does not verify: {b}"));
    let elapsed = started.elapsed();
    println!(
        "\naudit verify: {} entries, {} checkpoints in {:.2} s: {:.0} entries/s",
        verified.entries,
        verified.checkpoints,
        elapsed.as_secs_f64(),
        verified.entries as f64 / elapsed.as_secs_f64()
    );

    // A dry-run reconciliation under three policies.
    for (name, mode, condition) in [
        (
            "ssn",
            "enforced",
            "{ category: us_ssn, min_confidence: 0.8 }",
        ),
        (
            "contact",
            "dry-run",
            "{ category: contact, min_confidence: 0.7 }",
        ),
        (
            "money",
            "enforced",
            "{ category: financial, min_confidence: 0.9 }",
        ),
    ] {
        admin
            .yaml(
                "/governance/policies",
                &format!(
                    "apiVersion: governance.dps/v1\nkind: Policy\nmetadata: {{ name: {name} }}\nspec:\n  mode: {mode}\n  conditions: [{condition}]\n  actions: [{{ type: mask, config: {{ keep_last: 4 }} }}]\n"
                ),
            )
            .await;
    }
    let started = Instant::now();
    let body = admin
        .send(
            reqwest::Method::POST,
            "/governance/reconcile",
            Some(json!({"mode": "dry-run"})),
        )
        .await;
    let id = body["data"]["reconciliation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = loop {
        let body = admin
            .send(
                reqwest::Method::GET,
                &format!("/governance/reconciliations/{id}"),
                None,
            )
            .await;
        if body["data"]["status"] == "completed" {
            break body["data"].clone();
        }
        assert_ne!(body["data"]["status"], "failed", "{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let wall = started.elapsed();
    let run = time::OffsetDateTime::parse(
        done["ended_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap()
        - time::OffsetDateTime::parse(
            done["started_at"].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
    let evaluated = done["findings_evaluated"].as_u64().unwrap();
    println!(
        "reconcile dry-run: {evaluated} findings evaluated, {} matched, {} actions simulated; run {:.2} s ({:.0} findings/s), request to answer {:.2} s",
        done["findings_matched"],
        done["actions_simulated"],
        run.as_seconds_f64(),
        evaluated as f64 / run.as_seconds_f64(),
        wall.as_secs_f64()
    );
}

fn base64_key() -> String {
    let (_, text) = keys::MasterKey::generate().unwrap();
    text
}

//! Two `platform-api` processes and a `scan-worker` process on one database and one moto, as
//! deployed: both replicas run scan workers, drain the outbox and execute remediation. One
//! scan, served by all three, covers every object exactly once with no finding twice; the
//! evaluation at its end plans one remediation per object, and each is executed once: one
//! receipt, one `action_executed` entry, and the object written once in a versioned bucket.

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use serde_json::{Value, json};
use testkit::{ServiceProcess, emulators};

const TENANT: &str = "acme";
const BUCKET: &str = "people-data";
const OBJECTS: usize = 40;

/// Object `n`: a CSV of two people, each with an SSN no other object holds.
pub(crate) fn object(n: usize) -> (String, String) {
    let ssn = |k: usize| format!("{:03}-{:02}-{:04}", 101 + n, 11 + k, 1001 + n);
    (
        format!("people/{n:03}.csv"),
        format!("name,ssn\nAnn Lee {n},{}\nBo Chan {n},{}\n", ssn(0), ssn(1)),
    )
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

pub(crate) async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql)
        .bind::<Text, _>(TENANT)
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
}

struct Client {
    http: reqwest::Client,
    admin: String,
}

impl Client {
    async fn send(
        &self,
        origin: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<(&str, String)>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{origin}/api/v1{path}"))
            .bearer_auth(&self.admin);
        if let Some((content_type, body)) = body {
            request = request.header("Content-Type", content_type).body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

/// The `scan-worker` binary, built beside this package's `platform-api` by the workspace's
/// test command.
pub(crate) fn scan_worker_binary() -> String {
    let path = Path::new(env!("CARGO_BIN_EXE_platform-api")).with_file_name("scan-worker");
    assert!(
        path.exists(),
        "{} is missing: run the workspace's tests (`cargo test --workspace`), which build it",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_and_a_scan_worker_scan_once_and_remediate_once() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let master_key = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
    let moto = emulators::moto(&[]);
    let objects: Vec<(String, String)> = (0..OBJECTS).map(object).collect();
    crate::versioned_bucket(&moto, BUCKET, &objects).await;

    let mut env = crate::moto_env(&db, &master_key, &moto);
    env.insert("DPS_SCAN_WORKERS".into(), "2".into());
    env.insert("DPS_REMEDIATION_TASKS".into(), "2".into());
    env.insert("DATABASE_POOL_SIZE".into(), "8".into());
    env.insert("METRICS_BIND_ADDR".into(), "127.0.0.1:0".into());
    let replicas = [
        ServiceProcess::start(env!("CARGO_BIN_EXE_platform-api"), &env),
        ServiceProcess::start(env!("CARGO_BIN_EXE_platform-api"), &env),
    ];
    let [a, b] = replicas.each_ref().map(|r| r.origin.clone());
    boot::install_tls_provider();
    let client = Client {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
        admin: testkit::minter()
            .mint(TENANT, "ann", &["admin"], Duration::from_secs(3600))
            .unwrap(),
    };

    let token_policy = crate::ssn_token_policy(&mut conn, "format_preserving").await;
    let connector =
        crate::aws_connector(&client.http, &format!("{a}/api/v1"), &client.admin, BUCKET).await;
    let policy = format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: ssn-tokenize }}
spec:
  mode: enforced
  conditions: [{{ category: us_ssn, min_confidence: 0.5 }}]
  actions: [{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}]
"
    );
    let (status, body) = client
        .send(
            &b,
            reqwest::Method::POST,
            "/governance/policies",
            Some(("application/yaml", policy)),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    // The scan starts on one replica; the scan-worker joins with the deployment config that the
    // other one gives.
    let started = json!({"type": "full", "options": {"max_workers": 4}});
    let (status, body) = client
        .send(
            &b,
            reqwest::Method::POST,
            &format!("/connectors/{connector}/scan"),
            Some(("application/json", started.to_string())),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let (status, config) = client
        .send(
            &a,
            reqwest::Method::GET,
            &format!("/scans/{scan}/deployment-config"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{config}");
    let mut worker_env = crate::moto_env(&db, &master_key, &moto);
    for (name, value) in config["data"]["environment"].as_object().unwrap() {
        worker_env.insert(name.clone(), value.as_str().unwrap().to_owned());
    }
    let worker = std::process::Command::new(scan_worker_binary())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(&worker_env)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();

    // The scan ends, with every object covered once.
    let finished = crate::scan_ended(&client.http, &[&a, &b], &client.admin, &scan).await;
    assert_eq!(finished["data"]["status"], "completed", "{finished}");
    assert_eq!(
        finished["data"]["progress"]["files_processed"], OBJECTS,
        "{finished}"
    );
    let status = tokio::task::spawn_blocking(move || {
        let mut worker = worker;
        worker.wait().unwrap()
    })
    .await
    .unwrap();
    assert!(status.success(), "scan-worker exit status {status}");
    crate::assert_ssn_findings_once(&mut conn, 2 * OBJECTS).await;
    let covered = count(
        &mut conn,
        "SELECT count(*) AS n FROM scan_resources WHERE tenant_id = $1 AND state = 'scanned'",
    )
    .await;
    assert_eq!(covered, OBJECTS as i64);

    // One remediation per object, each executed once though both replicas drain the outbox
    // and run executors.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let done = count(
            &mut conn,
            "SELECT count(*) AS n FROM remediation_requests WHERE tenant_id = $1 \
             AND status IN ('receipted', 'failed', 'blocked')",
        )
        .await;
        if done >= OBJECTS as i64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {OBJECTS} remediations ended"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let keys: Vec<&str> = objects.iter().map(|(key, _)| key.as_str()).collect();
    crate::assert_remediated_once(&mut conn, &moto, BUCKET, &keys, "tokenize").await;

    // Either replica's metrics show the remediations by state, sampled from the database, and
    // the outboxes drained.
    let metrics = replicas[1].metrics_origin().unwrap();
    let text = client
        .http
        .get(format!("{metrics}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series = |name: &str| {
        text.lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    assert_eq!(
        series(r#"dps_remediation_requests{status="receipted"}"#),
        Some(OBJECTS as f64),
        "{text}"
    );
    assert_eq!(
        series(r#"dps_remediation_requests{status="planned"}"#),
        Some(0.0)
    );
    assert_eq!(
        series(r#"dps_outbox_depth{outbox="alert_deliveries"}"#),
        Some(0.0)
    );
    assert!(
        series(r#"dps_outbox_depth{outbox="scan_events"}"#).is_some(),
        "{text}"
    );
    assert!(series(r#"dps_outbox_oldest_age_seconds{outbox="scan_events"}"#).is_some());

    for replica in replicas {
        let (status, _) = replica.stop();
        assert!(status.success(), "exit status {status}");
    }
}

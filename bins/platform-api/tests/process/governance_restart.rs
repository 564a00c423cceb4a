//! Postgres crashed (`pg_ctl stop -m immediate`) while platform-api delivers alerts and executes
//! remediations, and started again a second later. Every alert reaches the receiver at least
//! once, every copy of it under its one delivery id with the same body, and the service
//! records each delivered once. Every remediation ends receipted, each object is written once,
//! and no action is executed twice.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use serde_json::{Value, json};
use testkit::emulators;

use crate::replicas::{count, object};

const BUCKET: &str = "hr-exports";
const OBJECTS: usize = 40;

/// A connection to the cluster once it answers again.
async fn reconnect(url: &str) -> AsyncPgConnection {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match AsyncPgConnection::establish(url).await {
            Ok(conn) => return conn,
            Err(e) => assert!(Instant::now() < deadline, "no connection: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_crash_during_delivery_and_remediation_loses_no_alert_and_repeats_no_action() {
    let (mut cluster, db) = testkit::private_cluster().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let master_key = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
    let moto = emulators::moto(&[]);
    let objects: Vec<(String, String)> = (0..OBJECTS).map(object).collect();
    crate::versioned_bucket(&moto, BUCKET, &objects).await;
    // A receiver that takes its time, so that the crash finds deliveries in flight.
    let receiver = testkit::identity::http_server(|_| {
        std::thread::sleep(Duration::from_millis(50));
        (200, Value::Null)
    });

    let mut env = crate::moto_env(&db, &master_key, &moto);
    env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "true".into());
    env.insert("DPS_REMEDIATION_TASKS".into(), "2".into());
    let crate::Started {
        service,
        http,
        admin,
        base,
    } = crate::start_ready(&env).await;

    let token_policy = crate::ssn_token_policy(&mut conn, "format_preserving").await;
    let connector = crate::aws_connector(&http, &base, &admin, BUCKET).await;
    let channel = http
        .post(format!("{base}/governance/channels"))
        .bearer_auth(&admin)
        .json(&json!({"name": "security", "type": "webhook", "url": format!("{}/hook", receiver.url())}))
        .send()
        .await
        .unwrap();
    assert_eq!(channel.status(), 201, "{}", channel.text().await.unwrap());
    let policy = format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: ssn-alert-tokenize }}
spec:
  mode: enforced
  conditions: [{{ category: us_ssn, min_confidence: 0.5 }}]
  actions:
    - {{ type: alert, config: {{ channels: [security], severity: critical }} }}
    - {{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}
"
    );
    let created = http
        .post(format!("{base}/governance/policies"))
        .bearer_auth(&admin)
        .header("Content-Type", "application/yaml")
        .body(policy)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201, "{}", created.text().await.unwrap());
    let scan = crate::full_scan(&http, &base, &admin, &connector, json!({})).await;

    // The crash comes once an alert has been received and a remediation receipted, while
    // others are still to come.
    let receipted = "SELECT count(*) AS n FROM remediation_requests \
                     WHERE tenant_id = $1 AND status = 'receipted'";
    let deadline = Instant::now() + Duration::from_secs(120);
    let (alerts_at_crash, receipted_at_crash) = loop {
        let alerts = receiver.requests().len();
        let done = count(&mut conn, receipted).await;
        if alerts >= 1 && done >= 1 {
            break (alerts, done);
        }
        assert!(
            Instant::now() < deadline,
            "{alerts} alerts and {done} receipts before the crash"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    drop(conn);
    tokio::task::block_in_place(|| cluster.crash()).unwrap();
    assert!(
        alerts_at_crash < OBJECTS || receipted_at_crash < OBJECTS as i64,
        "the crash was to come mid-way, but {alerts_at_crash} alerts and \
         {receipted_at_crash} receipts were done"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::block_in_place(|| cluster.start()).unwrap();

    // What a lost connection leaves leased (a remediation for five minutes, a delivery for
    // two) would be taken again when the lease runs out; the test ends the leases at once
    // instead of waiting. A worker that still holds one is then raced by another, which the
    // state guards and ETags must settle.
    let mut conn = reconnect(&db.url).await;
    diesel::sql_query(
        "UPDATE remediation_requests SET next_attempt_at = now() \
          WHERE status IN ('planned', 'snapshotted', 'written')",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    diesel::sql_query(
        "UPDATE governance_deliveries SET next_attempt_at = now() WHERE status = 'pending'",
    )
    .execute(&mut conn)
    .await
    .unwrap();

    let done = crate::scan_ended(&http, &[&service.origin], &admin, &scan).await;
    assert_eq!(done["data"]["status"], "completed", "{done}");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let ended = count(
            &mut conn,
            "SELECT count(*) AS n FROM remediation_requests WHERE tenant_id = $1 \
             AND status IN ('receipted', 'failed', 'blocked')",
        )
        .await;
        let delivered = count(
            &mut conn,
            "SELECT count(*) AS n FROM governance_deliveries \
              WHERE tenant_id = $1 AND status = 'delivered'",
        )
        .await;
        if ended >= OBJECTS as i64 && delivered >= OBJECTS as i64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{ended} remediations ended and {delivered} alerts delivered of {OBJECTS}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // One delivery per object and channel, each delivered.
    let deliveries = count(
        &mut conn,
        "SELECT count(*) AS n FROM governance_deliveries WHERE tenant_id = $1",
    )
    .await;
    assert_eq!(deliveries, OBJECTS as i64, "one alert per object");
    // Every one reached the receiver, each copy under its delivery id with the same body.
    let mut received: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for seen in receiver.requests() {
        let id = seen.headers.get("x-dps-delivery-id").cloned().unwrap();
        received.entry(id).or_default().insert(seen.body);
    }
    assert_eq!(
        received.len(),
        OBJECTS,
        "every alert received: {received:?}"
    );
    let resources: BTreeSet<String> = received
        .values()
        .map(|bodies| {
            assert_eq!(bodies.len(), 1, "a retry carries the same body: {bodies:?}");
            let body: Value = serde_json::from_str(bodies.first().unwrap()).unwrap();
            body["resource"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(resources.len(), OBJECTS, "one alert per object");
    let alerts_recorded = count(
        &mut conn,
        "SELECT count(*) AS n FROM audit_log WHERE tenant_id = $1 \
          AND kind = 'action_executed' AND action_type = 'alert'",
    )
    .await;
    assert_eq!(
        alerts_recorded, OBJECTS as i64,
        "each delivery recorded once"
    );

    // Every remediation receipted, its action executed once, each object written once.
    let keys: Vec<&str> = objects.iter().map(|(key, _)| key.as_str()).collect();
    crate::assert_remediated_once(&mut conn, &moto, BUCKET, &keys, "tokenize").await;
    let (status, _) = service.stop();
    assert!(status.success());
}

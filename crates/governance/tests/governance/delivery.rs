use alerts::channels::NewChannel;
use alerts::{channels, delivery};
use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
use governance::evaluate::{self, Batch, Finding, Gates, Origin};
use ids::{ConnectorId, ScanId};
use policies::document::Syntax;
use policies::store;
use serde_json::Value;
use uuid::Uuid;

use crate::{Env, acme, admin};

/// An enforced alert policy to channel `hooks` at `url`, and one evaluated batch that matched
/// one object: one delivery queued. Returns the channel's secret.
async fn queued(env: &mut Env, url: &str) -> String {
    let secret = channels::create(
        &mut env.conn,
        &env.keyring,
        &env.egress,
        &acme(),
        &admin(),
        NewChannel {
            name: "hooks",
            kind: "webhook",
            url,
        },
    )
    .await
    .unwrap()
    .secret;
    let text = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-alert }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.5 }]
  actions: [{ type: alert, config: { channels: [hooks], severity: high } }]
";
    store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        text.as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let findings = vec![Finding {
        id: Uuid::now_v7(),
        bucket: "exports".into(),
        object_key: "people.csv".into(),
        etag: "e1".into(),
        pii_type: "us_ssn".into(),
        category: "government_id".into(),
        confidence: 0.9,
        occurrences: 1,
        tokenized: false,
    }];
    let tenant = acme();
    let active = store::active(&mut env.conn, &tenant).await.unwrap();
    let batch = Batch {
        tenant: &tenant,
        connector: ConnectorId::new(),
        origin: Origin::Scan(ScanId::new()),
        objects: 1,
        findings: &findings,
        enforce: true,
    };
    let gates = Gates::default();
    env.conn
        .transaction(async |conn| evaluate::apply(conn, &batch, &active, &gates).await)
        .await
        .unwrap();
    secret
}

/// The address rules of the tests: loopback allowed.
const OPEN: egress::Egress = egress::Egress {
    allow_private: true,
};

fn client() -> reqwest::Client {
    boot::install_tls_provider();
    OPEN.client(std::time::Duration::from_secs(5)).unwrap()
}

#[tokio::test]
async fn an_alert_is_posted_signed_with_a_stable_delivery_id_and_no_values() {
    let mut env = Env::new().await;
    let server = testkit::identity::http_server(|_| (204, Value::Null));
    let secret = queued(&mut env, &format!("{}/hook?token=t0k", server.url())).await;
    let sent = delivery::run_once(&mut env.conn, &env.keyring, &client(), OPEN)
        .await
        .unwrap();
    assert_eq!(sent, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hook?token=t0k");
    let signature = &request.headers["x-dps-signature"];
    let t: i64 = signature
        .strip_prefix("t=")
        .and_then(|s| s.split(',').next())
        .and_then(|t| t.parse().ok())
        .unwrap();
    assert_eq!(
        signature,
        &delivery::signature(&secret, t, request.body.as_bytes()),
        "the signature is HMAC-SHA256(secret, \"<t>.<body>\")"
    );
    let payload: Value = serde_json::from_str(&request.body).unwrap();
    assert_eq!(request.headers["x-dps-delivery-id"], payload["delivery_id"]);
    assert_eq!(payload["policy"]["name"], "ssn-alert");
    assert_eq!(payload["severity"], "high");
    assert_eq!(payload["resource"], "exports/people.csv");
    assert_eq!(payload["pii_types"], serde_json::json!(["us_ssn"]));
    assert_eq!(payload["counts"]["findings"], 1);
    assert!(payload.get("preview").is_none() && !request.body.contains("value"));
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE status = 'delivered'")
            .await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_executed' AND action_type = 'alert'").await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_actions WHERE outcome = 'executed'")
            .await,
        1
    );
    // Nothing more to send.
    assert_eq!(
        delivery::run_once(&mut env.conn, &env.keyring, &client(), OPEN)
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn a_refused_delivery_is_retried_with_the_same_id_and_given_up_after_a_day() {
    let mut env = Env::new().await;
    let server = testkit::identity::http_server(|_| (503, Value::Null));
    queued(&mut env, &format!("{}/hook", server.url())).await;
    let client = client();
    delivery::run_once(&mut env.conn, &env.keyring, &client, OPEN)
        .await
        .unwrap();
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE status = 'pending' AND attempts = 1 AND next_attempt_at > now() + interval '25 seconds' AND last_error LIKE '%503%'").await,
        1,
        "the next attempt waits 30 s"
    );
    // Not due yet: nothing is sent.
    assert_eq!(
        delivery::run_once(&mut env.conn, &env.keyring, &client, OPEN)
            .await
            .unwrap(),
        0
    );
    diesel::sql_query("UPDATE governance_deliveries SET next_attempt_at = now()")
        .execute(&mut env.conn)
        .await
        .unwrap();
    delivery::run_once(&mut env.conn, &env.keyring, &client, OPEN)
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].headers["x-dps-delivery-id"], requests[1].headers["x-dps-delivery-id"],
        "a retry carries the same delivery id"
    );
    // Queued more than a day ago: the next refusal is the last.
    diesel::sql_query(
        "UPDATE governance_deliveries SET next_attempt_at = now(), created_at = now() - interval '25 hours'",
    )
    .execute(&mut env.conn)
    .await
    .unwrap();
    delivery::run_once(&mut env.conn, &env.keyring, &client, OPEN)
        .await
        .unwrap();
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE status = 'failed' AND attempts = 3").await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_failed'")
            .await,
        1
    );
}

#[tokio::test]
async fn a_channel_made_under_looser_address_rules_is_not_posted_to_under_stricter_ones() {
    let mut env = Env::new().await;
    let server = testkit::identity::http_server(|_| (204, Value::Null));
    // Made while private addresses were allowed: a URL naming a loopback address.
    queued(&mut env, &format!("{}/hook", server.url())).await;
    let strict = egress::Egress {
        allow_private: false,
    };
    delivery::run_once(&mut env.conn, &env.keyring, &client(), strict)
        .await
        .unwrap();
    assert!(server.requests().is_empty(), "nothing is sent");
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE status = 'failed' AND last_error LIKE '%not allowed%'").await,
        1,
        "and it is not retried"
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_failed'")
            .await,
        1
    );
}

#[tokio::test]
async fn a_queued_alert_is_not_sent_once_the_tenant_denies_read_only_actions() {
    let mut env = Env::new().await;
    let server = testkit::identity::http_server(|_| (204, Value::Null));
    queued(&mut env, &format!("{}/hook", server.url())).await;
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &serde_json::json!({ "denied_safety_classes": ["read_only"] }),
    )
    .await
    .unwrap();
    let attempted = delivery::run_once(&mut env.conn, &env.keyring, &client(), OPEN)
        .await
        .unwrap();
    assert_eq!(attempted, 1);
    assert!(server.requests().is_empty(), "nothing reaches the receiver");
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE status = 'blocked'")
            .await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_blocked' AND action_type = 'alert' AND details->>'gate' = 'denied' AND details->>'safety_class' = 'read_only'").await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_actions WHERE outcome = 'blocked'")
            .await,
        1
    );
    // Allowing the class again does not revive it: the ledger says blocked.
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &serde_json::json!({ "denied_safety_classes": [] }),
    )
    .await
    .unwrap();
    assert_eq!(
        delivery::run_once(&mut env.conn, &env.keyring, &client(), OPEN)
            .await
            .unwrap(),
        0
    );
    assert!(server.requests().is_empty());
}

/// A run whose lease passed to another replica while it was sending records nothing: the
/// other run's record stands (here it claimed the delivery again, for later), and no second
/// `action_executed` is written. Without the guard, the slow run overwrote the other's claim
/// with `delivered` and audited the action as if no one else held it.
#[tokio::test]
async fn a_run_that_outlasted_its_lease_records_nothing() {
    use std::sync::{Mutex, mpsc};
    let mut env = Env::new().await;
    let (arrived, on_arrival) = mpsc::channel::<()>();
    let (go, on_go) = mpsc::channel::<()>();
    let on_go = Mutex::new(on_go);
    let server = testkit::identity::http_server(move |_| {
        let _ = arrived.send(());
        let _ = on_go.lock().unwrap().recv();
        (200, Value::Null)
    });
    queued(&mut env, &format!("{}/hook", server.url())).await;
    let url = env._db.url.clone();
    let keyring = env.keyring.clone();
    let slow = tokio::spawn(async move {
        let mut conn = diesel_async::AsyncPgConnection::establish(&url)
            .await
            .unwrap();
        delivery::run_once(&mut conn, &keyring, &client(), OPEN).await
    });
    tokio::task::spawn_blocking(move || on_arrival.recv().unwrap())
        .await
        .unwrap();
    // Another replica's claim, once the lease had run out.
    diesel::sql_query(
        "UPDATE governance_deliveries SET next_attempt_at = now() + interval '1 hour'",
    )
    .execute(&mut env.conn)
    .await
    .unwrap();
    go.send(()).unwrap();
    assert_eq!(slow.await.unwrap().unwrap(), 1, "it sent the delivery");
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE status = 'pending' AND attempts = 0 AND next_attempt_at > now() + interval '50 minutes'").await,
        1,
        "the other claim stands"
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_executed'")
            .await,
        0
    );
}

use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
use governance::evaluate::{self, Batch, Finding, Gates, Origin};
use ids::{ConnectorId, ScanId, TenantId};
use policies::document::Syntax;
use policies::store;
use uuid::Uuid;

use crate::{Env, acme, admin};

fn finding(key: &str, pii_type: &str, category: &str, confidence: f32) -> Finding {
    Finding {
        id: Uuid::now_v7(),
        bucket: "exports".into(),
        object_key: key.into(),
        etag: format!("etag-{key}"),
        pii_type: pii_type.into(),
        category: category.into(),
        confidence,
        occurrences: 1,
        tokenized: false,
    }
}

fn findings() -> Vec<Finding> {
    vec![
        finding("a.csv", "us_ssn", "government_id", 0.95),
        finding("a.csv", "us_ssn", "government_id", 0.95),
        finding("b.csv", "us_ssn", "government_id", 0.9),
        finding("c.csv", "us_ssn", "government_id", 0.3),
        finding("d.csv", "email", "contact", 0.99),
    ]
}

fn policy(name: &str, mode: &str, actions: &str) -> String {
    format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: {name} }}
spec:
  mode: {mode}
  conditions: [{{ category: us_ssn, min_confidence: 0.8 }}]
  actions: {actions}
"
    )
}

async fn create(env: &mut Env, tenant: &TenantId, text: &str) -> store::Policy {
    store::create(
        &mut env.conn,
        tenant,
        &admin(),
        text.as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap()
}

async fn run(env: &mut Env, connector: ConnectorId, findings: &[Finding]) -> evaluate::Tally {
    run_as(env, connector, findings, Origin::Scan(ScanId::new())).await
}

async fn run_as(
    env: &mut Env,
    connector: ConnectorId,
    findings: &[Finding],
    origin: Origin,
) -> evaluate::Tally {
    let tenant = acme();
    let active = store::active(&mut env.conn, &tenant).await.unwrap();
    let mut gates_conn = env.connect().await;
    let gates = Gates::read(&mut gates_conn, &tenant, &active).await;
    let batch = Batch {
        tenant: &tenant,
        connector,
        origin,
        objects: 4,
        findings,
        enforce: true,
    };
    env.conn
        .transaction(async |conn| evaluate::apply(conn, &batch, &active, &gates).await)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_dry_run_policy_records_what_it_would_do_once_and_changes_nothing() {
    let mut env = Env::new().await;
    let connector = ConnectorId::new();
    env.channel(&acme(), "security").await;
    let created = create(
        &mut env,
        &acme(),
        &policy(
            "dry",
            "dry-run",
            "[{ type: alert, config: { channels: [security], severity: high } }, { type: mask }]",
        ),
    )
    .await;
    let found = findings();
    let tally = run(&mut env, connector, &found).await;
    assert_eq!(
        tally.findings_matched, 3,
        "a.csv twice and b.csv; c.csv is below 0.8"
    );
    assert_eq!((tally.simulated, tally.planned, tally.blocked), (4, 0, 0));
    let kinds = env.audit_kinds(&acme()).await;
    assert_eq!(
        kinds[2..],
        [
            "policy_evaluated",
            "action_simulated",
            "action_simulated",
            "action_simulated",
            "action_simulated"
        ]
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries")
            .await,
        0
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests")
            .await,
        0
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM audit_log WHERE kind = 'action_simulated' AND simulated"
        )
        .await,
        4
    );

    // The same batch again: evaluated again, but nothing is done twice.
    let again = run(&mut env, connector, &found).await;
    assert_eq!((again.simulated, again.repeated), (0, 4));
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_simulated'")
            .await,
        4
    );
    let policy = store::get(&mut env.conn, &acme(), created.summary.id)
        .await
        .unwrap();
    assert_eq!(policy.summary.findings_matched, 6);
    assert!(policy.summary.last_triggered.is_some());
}

#[tokio::test]
async fn an_enforced_policy_queues_alerts_and_plans_remediation() {
    let mut env = Env::new().await;
    let connector = ConnectorId::new();
    env.channel(&acme(), "security").await;
    env.channel(&acme(), "ops").await;
    create(
        &mut env,
        &acme(),
        &policy(
            "enforced",
            "enforced",
            "[{ type: alert, config: { channels: [security, ops], severity: critical } }, { type: mask, config: { keep_last: 4 } }]",
        ),
    )
    .await;
    let found = findings();
    let tally = run(&mut env, connector, &found).await;
    assert_eq!((tally.planned, tally.simulated), (4, 0));
    // One delivery per object and channel; one request per object.
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries")
            .await,
        4
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests WHERE status = 'planned' AND gate = 'allowed' AND action_type = 'mask'").await,
        2
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM remediation_requests WHERE cardinality(finding_ids) = 2"
        )
        .await,
        1,
        "a.csv's request names both of its findings"
    );
    // The alert payload names types and counts, never a value or a preview.
    let payload = env
        .count("SELECT count(*) AS n FROM governance_deliveries WHERE payload->'counts'->>'findings' = '2' AND payload->>'resource' = 'exports/a.csv' AND payload->>'severity' = 'critical'")
        .await;
    assert_eq!(payload, 2);
    // A scope that leaves the connector out is not evaluated.
    let other = run(&mut env, ConnectorId::new(), &found).await;
    assert_eq!(other.repeated, 0);
}

#[tokio::test]
async fn every_alert_of_a_policy_is_delivered_each_channel_once_at_its_highest_severity() {
    let mut env = Env::new().await;
    let connector = ConnectorId::new();
    for channel in ["pager", "slack", "email"] {
        env.channel(&acme(), channel).await;
    }
    create(
        &mut env,
        &acme(),
        &policy(
            "two alerts",
            "enforced",
            "[{ type: alert, config: { channels: [pager], severity: critical } }, \
              { type: alert, config: { channels: [slack, pager], severity: low } }, \
              { type: alert, config: { channels: [email], severity: medium } }]",
        ),
    )
    .await;
    let found = findings();
    let tally = run(&mut env, connector, &found).await;
    // One alert action per object (two objects), none counted as a repeat.
    assert_eq!((tally.planned, tally.repeated), (2, 0));
    let by = async |env: &mut Env, channel: &str, severity: &str| {
        env.count(&format!(
            "SELECT count(*) AS n FROM governance_deliveries \
              WHERE channel = '{channel}' AND payload->>'severity' = '{severity}'"
        ))
        .await
    };
    assert_eq!(by(&mut env, "pager", "critical").await, 2);
    assert_eq!(by(&mut env, "slack", "low").await, 2);
    assert_eq!(by(&mut env, "email", "medium").await, 2);
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries")
            .await,
        6,
        "each channel once per object"
    );
}

#[tokio::test]
async fn a_denied_read_only_class_blocks_alerts_until_an_enforced_reconciliation() {
    let mut env = Env::new().await;
    let connector = ConnectorId::new();
    env.channel(&acme(), "security").await;
    create(
        &mut env,
        &acme(),
        &policy(
            "alerting",
            "enforced",
            "[{ type: alert, config: { channels: [security], severity: high } }]",
        ),
    )
    .await;
    let deny = |classes: serde_json::Value| serde_json::json!({ "denied_safety_classes": classes });
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &deny(serde_json::json!(["read_only"])),
    )
    .await
    .unwrap();
    let found = findings();
    let tally = run(&mut env, connector, &found).await;
    assert_eq!((tally.blocked, tally.planned), (2, 0), "a.csv and b.csv");
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries")
            .await,
        0,
        "nothing is queued for a denied class"
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_blocked' AND action_type = 'alert' AND outcome = 'blocked' AND details->>'gate' = 'denied' AND details->>'safety_class' = 'read_only'")
            .await,
        2
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_actions WHERE outcome = 'blocked'")
            .await,
        2
    );

    // Allowed again: a scan does not act on what the ledger holds, an enforced
    // reconciliation sends what was blocked, once.
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &deny(serde_json::json!([])),
    )
    .await
    .unwrap();
    assert_eq!(run(&mut env, connector, &found).await.repeated, 2);
    let reconciliation = Origin::Reconciliation(Uuid::now_v7());
    let again = run_as(&mut env, connector, &found, reconciliation).await;
    assert_eq!((again.planned, again.blocked, again.repeated), (2, 0, 0));
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE status = 'pending'")
            .await,
        2
    );
    let twice = run_as(&mut env, connector, &found, reconciliation).await;
    assert_eq!(
        (twice.planned, twice.repeated),
        (0, 2),
        "a queued alert is not sent twice"
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries")
            .await,
        2
    );
}

/// An alert whose delivery reached one channel and was blocked on another (the tenant denied
/// `read_only` in between) is queued again by a reconciliation for the blocked channel only:
/// the receiver that got it does not get it twice under a new delivery id.
#[tokio::test]
async fn a_requeued_alert_goes_only_to_the_channels_it_did_not_reach() {
    let mut env = Env::new().await;
    let connector = ConnectorId::new();
    env.channel(&acme(), "pager").await;
    env.channel(&acme(), "slack").await;
    create(
        &mut env,
        &acme(),
        &policy(
            "alerting",
            "enforced",
            "[{ type: alert, config: { channels: [pager, slack], severity: high } }]",
        ),
    )
    .await;
    let found = findings();
    assert_eq!(run(&mut env, connector, &found).await.planned, 2);
    // As the delivery task leaves them: pager delivered, slack blocked, and the action's
    // outcome the last one written.
    for sql in [
        "UPDATE governance_deliveries SET status = 'delivered' WHERE channel = 'pager'",
        "UPDATE governance_deliveries SET status = 'blocked' WHERE channel = 'slack'",
        "UPDATE governance_actions SET outcome = 'blocked'",
    ] {
        diesel::sql_query(sql).execute(&mut env.conn).await.unwrap();
    }
    let reconciliation = Origin::Reconciliation(Uuid::now_v7());
    let again = run_as(&mut env, connector, &found, reconciliation).await;
    assert_eq!(again.planned, 2);
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_deliveries WHERE channel = 'pager'")
            .await,
        2,
        "pager's two deliveries (one per object), delivered once each"
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM governance_deliveries WHERE channel = 'slack' AND status = 'pending'"
        )
        .await,
        2,
        "slack's are queued again"
    );
}

#[tokio::test]
async fn a_denied_safety_class_blocks_and_an_unreadable_gate_fails_open() {
    let mut env = Env::new().await;
    let connector = ConnectorId::new();
    create(
        &mut env,
        &acme(),
        &policy("mask", "enforced", "[{ type: mask }]"),
    )
    .await;
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &serde_json::json!({ "denied_safety_classes": ["destructive"] }),
    )
    .await
    .unwrap();
    let found = findings();
    let tally = run(&mut env, connector, &found).await;
    assert_eq!((tally.blocked, tally.planned), (2, 0));
    // Each denied action is a request the executor ends `blocked`, with its receipt and its
    // one `action_blocked` entry, even if the tenant allows the class by then.
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests WHERE gate = 'denied' AND status = 'planned'")
            .await,
        2
    );
    let blocked_entries = "SELECT count(*) AS n FROM audit_log
                            WHERE kind = 'action_blocked' AND details->>'gate' = 'denied'";
    assert_eq!(env.count(blocked_entries).await, 0);
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &serde_json::json!({ "denied_safety_classes": [] }),
    )
    .await
    .unwrap();
    // An executor on a storage it never reaches: the requests end at the gate.
    let (master, _) = keys::MasterKey::generate().unwrap();
    let receipts = remediation::Receipts {
        signer: receipts::Signer::from_master(&master),
        cosigner: remediation::Cosigner::new(None, None, env.egress).unwrap(),
    };
    let cloud = connectors::Cloud::new(connectors::CloudEnv::default()).unwrap();
    let exec = remediation::Executor::new(cloud, env.keyring.clone(), receipts.into());
    while remediation::execute::run_once(&mut env.conn, &exec)
        .await
        .unwrap()
    {}
    assert_eq!(env.count(blocked_entries).await, 2);
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests r JOIN remediation_receipts c USING (tenant_id, request_id) WHERE r.status = 'blocked' AND c.kind = 'blocked'")
            .await,
        2
    );

    // Scans do not act on what the ledger holds; an enforced reconciliation plans the blocked
    // actions again, under their own action ids, and only once while they are in flight.
    assert_eq!(run(&mut env, connector, &found).await.repeated, 2);
    let reconciliation = Origin::Reconciliation(Uuid::now_v7());
    let again = run_as(&mut env, connector, &found, reconciliation).await;
    assert_eq!((again.planned, again.blocked, again.repeated), (2, 0, 0));
    assert_eq!(
        env.count("SELECT count(DISTINCT action_id) AS n FROM remediation_requests")
            .await,
        2
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests WHERE gate = 'allowed' AND status = 'planned'")
            .await,
        2
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_actions WHERE outcome = 'planned' AND reconciliation_id IS NOT NULL")
            .await,
        2
    );
    let twice = run_as(&mut env, connector, &found, reconciliation).await;
    assert_eq!((twice.planned, twice.repeated), (0, 2));

    // Denied again for what follows.
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &serde_json::json!({ "denied_safety_classes": ["destructive"] }),
    )
    .await
    .unwrap();

    // The policy cannot be read: the gate fails open, and the request says so. (New object
    // versions, so that the ledger does not hold them yet.)
    diesel::sql_query("ALTER TABLE tenant_settings RENAME TO tenant_settings_away")
        .execute(&mut env.conn)
        .await
        .unwrap();
    let changed: Vec<Finding> = found
        .iter()
        .map(|f| Finding {
            etag: format!("{}-v2", f.etag),
            ..f.clone()
        })
        .collect();
    let active = store::active(&mut env.conn, &acme()).await.unwrap();
    let mut gates_conn = env.connect().await;
    let gates = Gates::read(&mut gates_conn, &acme(), &active).await;
    diesel::sql_query("ALTER TABLE tenant_settings_away RENAME TO tenant_settings")
        .execute(&mut env.conn)
        .await
        .unwrap();
    let tenant = acme();
    let batch = Batch {
        tenant: &tenant,
        connector,
        origin: Origin::Scan(ScanId::new()),
        objects: 4,
        findings: &changed,
        enforce: true,
    };
    let tally = env
        .conn
        .transaction(async |conn| evaluate::apply(conn, &batch, &active, &gates).await)
        .await
        .unwrap();
    assert_eq!(tally.planned, 2);
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests WHERE gate = 'gate_unavailable'")
            .await,
        2
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'action_planned' AND details->>'gate' = 'gate_unavailable'").await,
        2
    );
}

//! The blast-radius limit of an enforced reconciliation against a scan's evaluation, in every
//! order the two can run in. A policy acts through a scan's evaluation only on batches recorded
//! after it; what was recorded before is the reconciliation's, under its limit. And whatever a
//! scan's evaluation plans while a reconciliation runs, the reconciliation's counts say so.

use diesel::sql_types::{Jsonb, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _};
use governance::evaluate::{self, Batch, Finding, Gates, Origin};
use governance::reconcile::{self, Mode, Request, Scope};
use ids::{ConnectorId, ScanId, TenantId};
use serde_json::json;
use uuid::Uuid;

use crate::risk::MASK_SSNS;
use crate::{Env, acme};

/// Three SSNs in `logs/people.csv`, found by `scan`, with no etag: the batch's findings
/// carry none, as the rows `record_batch` writes do not.
fn findings() -> Vec<Finding> {
    (0..3)
        .map(|_| Finding {
            id: Uuid::now_v7(),
            bucket: "logs".into(),
            object_key: "people.csv".into(),
            etag: String::new(),
            pii_type: "us_ssn".into(),
            category: "government_id".into(),
            confidence: 0.9,
            occurrences: 1,
            tokenized: false,
        })
        .collect()
}

/// Records `found` as a scan's batch does, in one transaction on `conn`: the findings and the
/// `objects_recorded` event the evaluation reads.
async fn record_batch(
    conn: &mut AsyncPgConnection,
    connector: ConnectorId,
    scan: ScanId,
    found: &[Finding],
) {
    conn.batch_execute("BEGIN").await.unwrap();
    for f in found {
        diesel::sql_query(
            "INSERT INTO findings (tenant_id, finding_id, scan_id, connector_id, bucket,
                                   object_key, pii_type, category, confidence, locations, preview,
                                   status, created_at, tokenized)
             VALUES ('acme', $1, $2, $3, $4, $5, $6, $7, 0.9, '[{}]', '***-**-6789',
                     'open', now(), false)",
        )
        .bind::<SqlUuid, _>(f.id)
        .bind::<SqlUuid, _>(scan.as_uuid())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Text, _>(&f.bucket)
        .bind::<Text, _>(&f.object_key)
        .bind::<Text, _>(&f.pii_type)
        .bind::<Text, _>(&f.category)
        .execute(conn)
        .await
        .unwrap();
    }
    diesel::sql_query(
        "INSERT INTO scan_events (tenant_id, scan_id, kind, payload)
         VALUES ('acme', $1, 'objects_recorded', $2)",
    )
    .bind::<SqlUuid, _>(scan.as_uuid())
    .bind::<Jsonb, _>(json!({
        "kind": "objects_recorded",
        "connector_id": connector.as_uuid(),
        "objects": [{"bucket": "logs", "object_key": "people.csv", "state": "scanned",
                     "findings": found.len()}],
    }))
    .execute(conn)
    .await
    .unwrap();
    conn.batch_execute("COMMIT").await.unwrap();
}

async fn create_policy(env: &mut Env, tenant: &TenantId) {
    policies::store::create(
        &mut env.conn,
        tenant,
        &crate::admin(),
        MASK_SSNS.as_bytes(),
        policies::document::Syntax::Yaml,
    )
    .await
    .unwrap();
}

async fn request(env: &mut Env, tenant: &TenantId, max_actions: u32) {
    reconcile::request(
        &mut env.conn,
        tenant,
        &crate::admin(),
        &Request {
            mode: Mode::Enforced,
            scope: Scope::default(),
            max_actions,
        },
    )
    .await
    .unwrap();
}

/// Runs the evaluation consumer until it has nothing more to read.
async fn evaluate_all(env: &mut Env) {
    let mut gates = env.connect().await;
    while evaluate::run_once(&mut env.conn, &mut gates).await.unwrap() > 0 {}
}

async fn reconcile_once(env: &mut Env) {
    let mut gates = env.connect().await;
    assert!(
        reconcile::run::run_once(&mut env.conn, &mut gates)
            .await
            .unwrap()
    );
}

/// The reconciliation's status and its counts' `field`.
async fn ended(env: &mut Env, field: &str) -> (String, i64) {
    #[derive(diesel::QueryableByName)]
    struct Ended {
        #[diesel(sql_type = Text)]
        status: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let row: Ended = diesel::sql_query(format!(
        "SELECT status, coalesce((counts->>'{field}')::bigint, -1) AS n
           FROM governance_reconciliations"
    ))
    .get_result(&mut env.conn)
    .await
    .unwrap();
    (row.status, row.n)
}

#[derive(Debug, Clone, Copy)]
enum Order {
    /// The scan's evaluation reads the batch before the reconciliation runs.
    ConsumerFirst,
    /// The reconciliation runs first, then the evaluation.
    ReconcileFirst,
    /// The evaluation is held (another replica holds the consumer) while the reconciliation
    /// runs, and reads the batch after.
    ConsumerHeld,
}

/// A scan's last batch recorded, then at once an enforced mask policy and an enforced
/// reconciliation with `max_actions: 0`: in every order, the reconciliation ends
/// `blocked_by_limit` with its one change counted, nothing is planned, and the evaluation of
/// the batch, recorded before the policy, plans nothing either.
#[tokio::test]
async fn a_policy_made_after_a_scan_acts_on_it_only_through_the_reconciliations_limit() {
    for order in [
        Order::ConsumerFirst,
        Order::ReconcileFirst,
        Order::ConsumerHeld,
    ] {
        let mut env = Env::new().await;
        let tenant = acme();
        let connector = env.connector(&tenant, "Logs").await;
        let mut scan_conn = env.connect().await;
        record_batch(&mut scan_conn, connector, ScanId::new(), &findings()).await;
        create_policy(&mut env, &tenant).await;
        request(&mut env, &tenant, 0).await;
        match order {
            Order::ConsumerFirst => {
                evaluate_all(&mut env).await;
                reconcile_once(&mut env).await;
            }
            Order::ReconcileFirst => {
                reconcile_once(&mut env).await;
                evaluate_all(&mut env).await;
            }
            Order::ConsumerHeld => {
                let mut holder = env.connect().await;
                holder
                    .batch_execute(
                        "INSERT INTO governance_consumers (consumer)
                         VALUES ('governance-evaluation') ON CONFLICT DO NOTHING",
                    )
                    .await
                    .unwrap();
                holder
                    .batch_execute(
                        "BEGIN;
                         SELECT 1 FROM governance_consumers
                          WHERE consumer = 'governance-evaluation' FOR UPDATE",
                    )
                    .await
                    .unwrap();
                evaluate_all(&mut env).await; // reads nothing: another holds the consumer
                reconcile_once(&mut env).await;
                holder.batch_execute("COMMIT").await.unwrap();
                evaluate_all(&mut env).await;
            }
        }
        assert_eq!(
            ended(&mut env, "changes_planned").await,
            ("blocked_by_limit".to_owned(), 1),
            "{order:?}"
        );
        assert_eq!(
            env.count("SELECT count(*) AS n FROM remediation_requests")
                .await,
            0,
            "{order:?}: nothing changes an object"
        );
        assert_eq!(
            env.count(
                "SELECT count(*) AS n FROM audit_log
                  WHERE kind = 'reconciliation_ended' AND outcome = 'blocked_by_limit'"
            )
            .await,
            1,
            "{order:?}"
        );
    }
}

/// A batch recorded after the policy is the policy's to act on through the scan's evaluation,
/// even while a reconciliation runs. Here the evaluation claims the object after the
/// reconciliation's plan and before its step: the reconciliation plans nothing, and its counts
/// and its audit entry say the change was planned elsewhere.
#[tokio::test]
async fn a_change_a_scan_planned_while_a_reconciliation_ran_is_reported_as_planned_elsewhere() {
    let mut env = Env::new().await;
    let tenant = acme();
    create_policy(&mut env, &tenant).await;
    let connector = env.connector(&tenant, "Logs").await;
    let found = findings();
    let scan = ScanId::new();
    let mut scan_conn = env.connect().await;
    record_batch(&mut scan_conn, connector, scan, &found).await;
    request(&mut env, &tenant, 5).await;

    // The scan's evaluation of the batch, in a transaction left open: the reconciliation plans
    // without seeing it, and its step waits on the ledger row it claimed.
    let mut evaluation = env.connect().await;
    evaluation.batch_execute("BEGIN").await.unwrap();
    let active = policies::store::active(&mut evaluation, &tenant)
        .await
        .unwrap();
    let mut gates_conn = env.connect().await;
    let gates = Gates::read(&mut gates_conn, &tenant, &active).await;
    let batch = Batch {
        tenant: &tenant,
        connector,
        origin: Origin::Scan(scan),
        objects: 1,
        findings: &found,
        enforce: true,
    };
    let tally = evaluate::apply(&mut evaluation, &batch, &active, &gates)
        .await
        .unwrap();
    assert_eq!(tally.planned, 1);
    let url = env._db.url.clone();
    let runner = tokio::spawn(async move {
        use diesel_async::AsyncConnection as _;
        let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
        let mut gates = AsyncPgConnection::establish(&url).await.unwrap();
        reconcile::run::run_once(&mut conn, &mut gates).await
    });
    testkit::wait_for_lock_wait(&mut env.conn).await;
    evaluation.batch_execute("COMMIT").await.unwrap();
    assert!(runner.await.unwrap().unwrap());

    assert_eq!(
        ended(&mut env, "changes_planned").await,
        ("completed".to_owned(), 1)
    );
    assert_eq!(ended(&mut env, "actions_planned").await.1, 0);
    assert_eq!(ended(&mut env, "changes_planned_elsewhere").await.1, 1);
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests")
            .await,
        1,
        "the scan's one request"
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM audit_log
              WHERE kind = 'reconciliation_ended' AND details ? 'elsewhere'"
        )
        .await,
        1
    );
}

/// A reconciliation whose stored scope cannot be read fails at once, with its reason, and
/// plans nothing: run with no scope it would cover every connector and policy of the tenant.
#[tokio::test]
async fn a_reconciliation_whose_scope_cannot_be_read_fails_and_plans_nothing() {
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    let mut scan_conn = env.connect().await;
    record_batch(&mut scan_conn, connector, ScanId::new(), &findings()).await;
    create_policy(&mut env, &tenant).await;
    request(&mut env, &tenant, 100).await;
    env.conn
        .batch_execute("UPDATE governance_reconciliations SET scope = '\"everything\"'")
        .await
        .unwrap();
    reconcile_once(&mut env).await;
    assert_eq!(ended(&mut env, "changes_planned").await.0, "failed");
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM governance_reconciliations
              WHERE error LIKE '%stored scope cannot be read%'"
        )
        .await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests")
            .await,
        0,
        "nothing changes an object"
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM audit_log
              WHERE kind = 'reconciliation_ended' AND outcome = 'failed'"
        )
        .await,
        1
    );
}

//! Coverage recomputed after a policy change (`risk::coverage::refresh`) against a real
//! Postgres.

use diesel::sql_types::{Bool, Float4, Text, Uuid as SqlUuid};
use diesel_async::{
    AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _,
};
use ids::{ConnectorId, TenantId};
use policies::matching::Finding;
use posture::risk::state::record_batch;
use uuid::Uuid;

use crate::{Env, acme};

/// A token written into an object by a remediation is covered whatever the policies say: when
/// the tokenize policy that wrote it is deleted, the plain values it matched lose their
/// coverage, the tokens keep theirs.
#[tokio::test]
async fn tokens_stay_covered_when_the_policies_change() {
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    let (plain, token) = (Uuid::now_v7(), Uuid::now_v7());
    for (finding, tokenized) in [(plain, false), (token, true)] {
        diesel::sql_query(
            "INSERT INTO findings (tenant_id, finding_id, scan_id, connector_id, bucket,
                                   object_key, pii_type, category, confidence, locations, preview,
                                   status, created_at, tokenized)
             VALUES ('acme', $1, gen_random_uuid(), $2, 'logs', 'people.csv', 'us_ssn',
                     'government_id', 0.95, '[{}]', '***-**-6789', 'open', now(), $3)",
        )
        .bind::<SqlUuid, _>(finding)
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Bool, _>(tokenized)
        .execute(&mut env.conn)
        .await
        .unwrap();
        // Covered when the tokenize policy was still there.
        diesel::sql_query(
            "INSERT INTO governance_finding_risk (tenant_id, finding_id, connector_id, bucket,
                                                  object_key, category, sensitivity, exposure,
                                                  covered, risk_score, computed_at)
             VALUES ('acme', $1, $2, 'logs', 'people.csv', 'government_id', 0.9, 0.5, true, 5,
                     now())",
        )
        .bind::<SqlUuid, _>(finding)
        .bind::<SqlUuid, _>(connector.as_uuid())
        .execute(&mut env.conn)
        .await
        .unwrap();
    }

    // No policy is left.
    let changed = env
        .conn
        .transaction(async |conn| posture::risk::coverage::refresh(conn, &tenant).await)
        .await
        .unwrap();
    assert_eq!(changed, 1);
    let covered = |finding: Uuid| {
        format!(
            "SELECT count(*) AS n FROM governance_finding_risk
              WHERE finding_id = '{finding}' AND covered"
        )
    };
    assert_eq!(env.count(&covered(plain)).await, 0);
    assert_eq!(env.count(&covered(token)).await, 1);
}

/// Three SSN findings in `logs/people.csv`.
fn three_ssns() -> Vec<Finding> {
    (0..3)
        .map(|_| Finding {
            id: Uuid::now_v7(),
            bucket: "logs".into(),
            object_key: "people.csv".into(),
            etag: "etag-1".into(),
            pii_type: "us_ssn".into(),
            category: "government_id".into(),
            confidence: 0.9,
            occurrences: 1,
            tokenized: false,
        })
        .collect()
}

/// The object [`three_ssns`] are in.
const PEOPLE: (&str, &str) = ("logs", "people.csv");

/// A connector of acme's and a batch of [`three_ssns`] recorded in a transaction left open on a
/// connection of its own (returned, with the findings).
async fn batch_left_open(
    env: &mut Env,
) -> (TenantId, ConnectorId, Vec<Finding>, AsyncPgConnection) {
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    let findings = three_ssns();
    let mut open = env.connect().await;
    open.batch_execute("BEGIN").await.unwrap();
    let changes = record_batch(&mut open, &tenant, connector, &[PEOPLE], &findings, &[])
        .await
        .unwrap();
    assert_eq!(changes.len(), 1);
    (tenant, connector, findings, open)
}

/// Two recordings of the same object at once (the scan's evaluation and the remediation
/// rescore read the same open findings) both succeed, and count each finding once: the second
/// waits for the first to commit, reads its rows as what was there before, and replaces them.
/// Without that wait, the second read nothing before and added the findings to the
/// connector's sums a second time.
#[tokio::test]
async fn two_recordings_of_one_object_at_once_keep_one_row_per_finding() {
    let mut env = Env::new().await;
    let (tenant, connector, findings, mut first) = batch_left_open(&mut env).await;
    let objects = [PEOPLE];

    // The second starts while the first is still open, and must wait for it.
    let url = env._db.url.clone();
    let (second_tenant, second_findings) = (tenant.clone(), findings.clone());
    let second = tokio::spawn(async move {
        let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
        conn.transaction(async |conn| {
            record_batch(
                conn,
                &second_tenant,
                connector,
                &objects,
                &second_findings,
                &[],
            )
            .await
        })
        .await
    });
    testkit::wait_for_lock_wait(&mut env.conn).await;
    first.batch_execute("COMMIT").await.unwrap();
    let changes = second
        .await
        .unwrap()
        .expect("the second recording succeeds");
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].previous, Some((3, changes[0].current.1)));

    let rows = env
        .count(
            "SELECT count(*) AS n FROM governance_finding_risk
              WHERE tenant_id = 'acme' AND object_key = 'people.csv'",
        )
        .await;
    assert_eq!(rows, 3);
    let counted = env
        .count(
            "SELECT findings AS n FROM governance_category_counts
              WHERE tenant_id = 'acme' AND category = 'government_id'",
        )
        .await;
    assert_eq!(counted, 3, "the second recording moved no count");
    let summed = env
        .count("SELECT findings_count AS n FROM governance_connector_risk WHERE tenant_id = 'acme'")
        .await;
    assert_eq!(summed, 3, "the connector's sums hold each finding once");
}

/// A bucket found public while a batch of it is being recorded under the unknown exposure: the
/// posture check waits for the batch, then rescores its rows. Without that wait, the check saw
/// no findings in the bucket, rescored nothing, and the batch's rows kept the unknown exposure
/// until the bucket's exposure next changed.
#[tokio::test]
async fn a_bucket_found_public_during_a_batch_rescores_that_batch() {
    let mut env = Env::new().await;
    let (tenant, connector, _, mut batch) = batch_left_open(&mut env).await;

    let url = env._db.url.clone();
    let check_tenant = tenant.clone();
    let check = tokio::spawn(async move {
        let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
        let observations = logs_seen(true);
        conn.transaction(async |conn| {
            posture::buckets::record(conn, &check_tenant, connector, &observations).await
        })
        .await
    });
    testkit::wait_for_lock_wait(&mut env.conn).await;
    batch.batch_execute("COMMIT").await.unwrap();
    check.await.unwrap().expect("the posture check succeeds");

    let public = posture::risk::model::exposure(Some(true));
    let stale = env
        .count(&format!(
            "SELECT count(*) AS n FROM governance_finding_risk
              WHERE tenant_id = 'acme' AND exposure <> {public}"
        ))
        .await;
    assert_eq!(
        stale, 0,
        "every finding of the public bucket is scored public"
    );
    let stale_objects = env
        .count(&format!(
            "SELECT count(*) AS n FROM governance_objects
              WHERE tenant_id = 'acme' AND exposure <> {public}"
        ))
        .await;
    assert_eq!(stale_objects, 0, "the object is scored public");
}

/// A posture check's sight of the bucket `logs`, reachable, public or not.
fn logs_seen(public: bool) -> [posture::buckets::Observation; 1] {
    [posture::buckets::Observation {
        bucket: "logs".into(),
        accessible: true,
        posture: connectors::Posture {
            public: Some(public),
            ..Default::default()
        },
    }]
}

/// Queues acme's first-sight check of `buckets`.
async fn queue(env: &mut Env, connector: ConnectorId, buckets: &[&str]) {
    posture::buckets::queue_first_sight(&mut env.conn, &acme(), connector, buckets)
        .await
        .unwrap();
}

/// A bucket where a batch found data is checked at first sight, once: a check is queued while
/// it was never checked, and not again once its posture is stored.
#[tokio::test]
async fn a_bucket_with_findings_is_checked_at_first_sight_only() {
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    let queued = "SELECT count(*) AS n FROM governance_posture_checks WHERE tenant_id = 'acme'";

    queue(&mut env, connector, &[]).await;
    assert_eq!(env.count(queued).await, 0, "no bucket, no check");
    queue(&mut env, connector, &["logs"]).await;
    queue(&mut env, connector, &["logs"]).await;
    assert_eq!(
        env.count(queued).await,
        1,
        "one check for a bucket never seen"
    );

    // The check ran: the bucket's posture is stored and the queue is empty.
    let observations = logs_seen(false);
    posture::buckets::record(&mut env.conn, &tenant, connector, &observations)
        .await
        .unwrap();
    diesel::sql_query("DELETE FROM governance_posture_checks")
        .execute(&mut env.conn)
        .await
        .unwrap();
    queue(&mut env, connector, &["logs"]).await;
    assert_eq!(
        env.count(queued).await,
        0,
        "a bucket checked before waits for the scan's end"
    );
    queue(&mut env, connector, &["logs", "new"]).await;
    assert_eq!(
        env.count(queued).await,
        1,
        "a new bucket beside it is checked"
    );
}

/// An enforced policy that covers [`three_ssns`].
pub(crate) const MASK_SSNS: &str = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.5 }]
  actions: [{ type: mask, config: { keep_last: 4 } }]
";

/// Writes `findings` as a scan would have, open, so that a coverage refresh can read them.
async fn stored(env: &mut Env, connector: ConnectorId, findings: &[Finding]) {
    for f in findings {
        diesel::sql_query(
            "INSERT INTO findings (tenant_id, finding_id, scan_id, connector_id, bucket,
                                   object_key, pii_type, category, confidence, locations, preview,
                                   status, created_at, tokenized)
             VALUES ('acme', $1, gen_random_uuid(), $2, $3, $4, $5, $6, $7, '[{}]', '***-**-6789',
                     'open', now(), false)",
        )
        .bind::<SqlUuid, _>(f.id)
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Text, _>(&f.bucket)
        .bind::<Text, _>(&f.object_key)
        .bind::<Text, _>(&f.pii_type)
        .bind::<Text, _>(&f.category)
        .bind::<Float4, _>(f.confidence)
        .execute(&mut env.conn)
        .await
        .unwrap();
    }
}

/// Covered finding risk rows, and the connector's covered count.
async fn covered(env: &mut Env) -> (i64, i64) {
    let rows = env
        .count(
            "SELECT count(*) AS n FROM governance_finding_risk
              WHERE tenant_id = 'acme' AND covered",
        )
        .await;
    let summed = env
        .count("SELECT covered_count AS n FROM governance_connector_risk WHERE tenant_id = 'acme'")
        .await;
    (rows, summed)
}

async fn create_mask_policy(conn: &mut AsyncPgConnection, tenant: &TenantId) {
    policies::store::create(
        conn,
        tenant,
        &crate::admin(),
        MASK_SSNS.as_bytes(),
        policies::document::Syntax::Yaml,
    )
    .await
    .expect("the policy is created");
}

/// A policy change waits for a run that is recording under the policies it read before, so
/// the change's coverage refresh finds that run's rows and covers them. Without the wait, the
/// run could commit its rows after the refresh had passed, under the old coverage.
#[tokio::test]
async fn a_policy_change_waits_for_a_run_recording_under_the_old_policies() {
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    let findings = three_ssns();
    stored(&mut env, connector, &findings).await;
    let mut run = env.connect().await;
    run.batch_execute("BEGIN").await.unwrap();
    policies::store::lock_for_reading(&mut run, &tenant)
        .await
        .unwrap();
    let policies = policies::store::active(&mut run, &tenant).await.unwrap();
    assert!(policies.is_empty());
    record_batch(
        &mut run,
        &tenant,
        connector,
        &[PEOPLE],
        &findings,
        &policies,
    )
    .await
    .unwrap();

    let url = env._db.url.clone();
    let change_tenant = tenant.clone();
    let change = tokio::spawn(async move {
        let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
        create_mask_policy(&mut conn, &change_tenant).await;
    });
    testkit::wait_for_lock_wait(&mut env.conn).await;
    run.batch_execute("COMMIT").await.unwrap();
    change.await.unwrap();

    let changed = env
        .conn
        .transaction(async |conn| posture::risk::coverage::refresh(conn, &tenant).await)
        .await
        .unwrap();
    assert_eq!(changed, 3);
    assert_eq!(covered(&mut env).await, (3, 3));
}

/// A coverage refresh waits for a batch being recorded in one of the tenant's connectors, then
/// covers its rows too, and moves the connector's sums once for each.
#[tokio::test]
async fn a_coverage_refresh_waits_for_a_batch_being_recorded() {
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    // An earlier batch, committed: the connector has risk recorded.
    let earlier: Vec<Finding> = three_ssns()
        .into_iter()
        .map(|f| Finding {
            object_key: "older.csv".into(),
            ..f
        })
        .collect();
    stored(&mut env, connector, &earlier).await;
    let older = [("logs", "older.csv")];
    record_batch(&mut env.conn, &tenant, connector, &older, &earlier, &[])
        .await
        .unwrap();
    create_mask_policy(&mut env.conn, &tenant).await;
    // A batch recorded under no policy, still open.
    let findings = three_ssns();
    stored(&mut env, connector, &findings).await;
    let mut batch = env.connect().await;
    batch.batch_execute("BEGIN").await.unwrap();
    record_batch(&mut batch, &tenant, connector, &[PEOPLE], &findings, &[])
        .await
        .unwrap();

    let url = env._db.url.clone();
    let refresh_tenant = tenant.clone();
    let refresh = tokio::spawn(async move {
        let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
        conn.transaction(async |conn| posture::risk::coverage::refresh(conn, &refresh_tenant).await)
            .await
    });
    testkit::wait_for_lock_wait(&mut env.conn).await;
    batch.batch_execute("COMMIT").await.unwrap();
    assert_eq!(refresh.await.unwrap().unwrap(), 6, "both batches' findings");
    assert_eq!(covered(&mut env).await, (6, 6));
}

/// Holds acme's policies on a connection of its own (in an open transaction, as an admin's
/// change does) and starts a reconciliation run, which plans and then waits on them; returns
/// the holding connection (`COMMIT` lets the run go on) and the run.
async fn run_behind_the_policies(
    env: &mut Env,
) -> (
    AsyncPgConnection,
    tokio::task::JoinHandle<Result<bool, governance::reconcile::run::RunError>>,
) {
    let mut change = env.connect().await;
    change
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(hashtext('dps-policies:acme'))")
        .await
        .unwrap();
    let url = env._db.url.clone();
    let runner = tokio::spawn(async move {
        let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
        let mut gates = AsyncPgConnection::establish(&url).await.unwrap();
        governance::reconcile::run::run_once(&mut conn, &mut gates).await
    });
    testkit::wait_for_lock_wait(&mut env.conn).await;
    (change, runner)
}

/// An enforced reconciliation stops when a policy changes under it: the step waits for the
/// change to commit (as scan evaluation does), sees another version than the one it planned
/// under, and plans nothing more. Without the check it planned the old version's masks, which
/// the executor would have run after the policy went to dry-run or was deleted.
#[tokio::test]
async fn an_enforced_reconciliation_stops_when_a_policy_changes_under_it() {
    use governance::reconcile::{self, Mode, Request, Scope};
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    stored(&mut env, connector, &three_ssns()).await;
    create_mask_policy(&mut env.conn, &tenant).await;
    let admin: ids::UserId = "ann".parse().unwrap();
    reconcile::request(
        &mut env.conn,
        &tenant,
        &admin,
        &Request {
            mode: Mode::Enforced,
            scope: Scope::default(),
            max_actions: 100,
        },
    )
    .await
    .unwrap();

    // An admin's change holds the policies, as `policies::update` does, while the run plans.
    let (mut change, runner) = run_behind_the_policies(&mut env).await;
    change
        .batch_execute("UPDATE governance_policies SET version = version + 1; COMMIT")
        .await
        .unwrap();
    assert!(runner.await.unwrap().unwrap(), "it ran the reconciliation");

    let stopped = format!(
        "SELECT count(*) AS n FROM governance_reconciliations
          WHERE status = 'failed' AND error = '{}'",
        reconcile::run::POLICIES_CHANGED
    );
    assert_eq!(env.count(&stopped).await, 1);
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests")
            .await,
        0,
        "nothing planned under the old version"
    );
}

/// An enforced reconciliation keeps to `max_actions` while it runs, not only in its plan. A
/// request that fails after the plan was made (the plan saw it running, and did not count it)
/// is planned again by the run. Here the plan counts one change, b.csv's mask, within a limit
/// of one; a.csv's mask fails before the run reaches it; the run would plan two, so it stops
/// at the limit, `blocked_by_limit`, and plans nothing of that step.
#[tokio::test]
async fn an_enforced_reconciliation_keeps_to_its_limit_when_requests_fail_after_its_plan() {
    use governance::reconcile::{self, Mode, Request, Scope};
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    let in_object = |key: &str| -> Vec<Finding> {
        three_ssns()
            .into_iter()
            .map(|f| Finding {
                object_key: key.into(),
                ..f
            })
            .collect()
    };
    stored(&mut env, connector, &in_object("a.csv")).await;
    create_mask_policy(&mut env.conn, &tenant).await;
    let admin: ids::UserId = "ann".parse().unwrap();
    let enforced = |max_actions| Request {
        mode: Mode::Enforced,
        scope: Scope::default(),
        max_actions,
    };
    let requests = "SELECT count(*) AS n FROM remediation_requests";
    // A first run plans a.csv's mask.
    reconcile::request(&mut env.conn, &tenant, &admin, &enforced(100))
        .await
        .unwrap();
    let mut gates = env.connect().await;
    assert!(
        reconcile::run::run_once(&mut env.conn, &mut gates)
            .await
            .unwrap()
    );
    assert_eq!(env.count(requests).await, 1);

    stored(&mut env, connector, &in_object("b.csv")).await;
    reconcile::request(&mut env.conn, &tenant, &admin, &enforced(1))
        .await
        .unwrap();
    // The run's first step waits on the policies, as it would behind an admin's change, after
    // its plan.
    let (mut change, runner) = run_behind_the_policies(&mut env).await;
    // Meanwhile a.csv's mask fails, as the executor ends a request.
    env.conn
        .batch_execute(
            "UPDATE remediation_requests SET status = 'failed';
             UPDATE governance_actions SET outcome = 'failed'",
        )
        .await
        .unwrap();
    change.batch_execute("COMMIT").await.unwrap();
    assert!(runner.await.unwrap().unwrap(), "it ran the reconciliation");

    let planned = "SELECT (counts->>'changes_planned')::bigint AS n FROM governance_reconciliations
                    WHERE max_actions = 1";
    assert_eq!(env.count(planned).await, 1, "the plan was within the limit");
    let stopped = format!(
        "SELECT count(*) AS n FROM governance_reconciliations
          WHERE status = 'blocked_by_limit' AND error = '{}'",
        reconcile::run::OVER_LIMIT_WHILE_RUNNING
    );
    assert_eq!(env.count(&stopped).await, 1);
    assert_eq!(
        env.count(requests).await,
        1,
        "nothing planned past the limit"
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_actions WHERE outcome = 'planned'")
            .await,
        0
    );
}

//! The remediation executor's gate, without storage: a class the tenant denies after a request
//! was planned ends it `blocked`, with a signed receipt, the ledger's outcome and one audit
//! entry; and nothing reaches the storage. (Execution on real objects is tested over HTTP
//! against moto, in tests/tests/it/remediation.rs.)

use diesel::QueryableByName;
use diesel::sql_types::{Jsonb, Text};
use diesel_async::RunQueryDsl as _;
use policies::document::Syntax;
use policies::store;

use crate::{Env, acme, admin, executor, plan_one_mask};

#[derive(QueryableByName)]
struct Receipt {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Jsonb)]
    document: serde_json::Value,
}

#[tokio::test]
async fn a_class_denied_after_planning_blocks_the_request_with_a_receipt() {
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    let tenant = acme();

    // The tenant denies destructive actions before the executor gets to the request.
    settings::set_remediation_policy(
        &mut env.conn,
        &tenant,
        &admin(),
        &serde_json::json!({"denied_safety_classes": ["destructive"]}),
    )
    .await
    .unwrap();
    let exec = executor(&env);
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert!(
        !remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );

    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests WHERE status = 'blocked'")
            .await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_actions WHERE outcome = 'blocked' AND action_type = 'mask'")
            .await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_runs WHERE reason = 'safety_class_denied' AND lkg_key IS NULL")
            .await,
        1
    );
    let kinds = env.audit_kinds(&tenant).await;
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("action_blocked"),
        "{kinds:?}"
    );
    let receipts: Vec<Receipt> =
        diesel::sql_query("SELECT kind, document FROM remediation_receipts")
            .load(&mut env.conn)
            .await
            .unwrap();
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].kind, "blocked");
    let verified = receipts::verify(&receipts[0].document, &exec.receipts.jwks()).unwrap();
    assert_eq!(verified.kid, exec.receipts.signer.kid());
    let receipt = &receipts[0].document["receipt"];
    assert_eq!(receipt["action"], "mask");
    assert_eq!(receipt["safety_class"], "destructive");
    assert_eq!(receipt["reason"], "safety_class_denied");
    assert_eq!(receipt["resource"]["key"], "people.csv");
    assert_eq!(receipt["etag_before"], "\"e1\"");

    // The list shows it, with its receipt; a page of one that holds everything has no next.
    let page = remediation::read::list(
        &mut env.conn,
        &tenant,
        &remediation::Filter {
            status: Some(remediation::State::Blocked),
            ..Default::default()
        },
        paging::PageRequest::first(&env.cursors, paging::Limit::parse(Some(1), 20).unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].receipts.len(), 1);
    assert!(!page.pagination.has_more);
    let none = remediation::read::list(
        &mut env.conn,
        &crate::globex(),
        &remediation::Filter::default(),
        paging::PageRequest {
            cursors: &env.cursors,
            limit: paging::Limit::parse(None, 20).unwrap(),
            cursor: None,
        },
    )
    .await
    .unwrap();
    assert!(none.items.is_empty(), "another tenant sees nothing");
}

/// Deleting a connector withdraws access at once, even from an executor that opened its
/// storage a moment before: the next run of its request ends `failed`, `connector_deleted`,
/// instead of calling the storage again through the cached handle (here unreachable, which
/// would only retry the request).
#[tokio::test]
async fn a_deleted_connector_ends_its_requests_even_with_its_storage_cached() {
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    let tenant = acme();
    let exec = executor(&env);
    // The first run opens the connector's storage (and keeps it) and fails to reach it.
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM remediation_requests WHERE status = 'planned'")
            .await,
        1
    );
    diesel::sql_query("DELETE FROM connectors WHERE tenant_id = $1")
        .bind::<Text, _>(tenant.as_str())
        .execute(&mut env.conn)
        .await
        .unwrap();
    diesel::sql_query("UPDATE remediation_requests SET next_attempt_at = now()")
        .execute(&mut env.conn)
        .await
        .unwrap();
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM remediation_requests r JOIN remediation_runs u
                 USING (tenant_id, request_id)
              WHERE r.status = 'failed' AND u.reason = 'connector_deleted'"
        )
        .await,
        1
    );
}

/// A step the storage refuses is retried with a bare reason code, and the column refuses any
/// other text: a provider's words (role ARNs, principals, other systems' keys) never reach
/// what the tenant reads.
#[tokio::test]
async fn a_retried_step_records_a_code_and_the_column_refuses_free_text() {
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    let exec = executor(&env);
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM remediation_runs
              WHERE reason ~ '^[a-z_]+$' AND reason IN ('identity', 'network')"
        )
        .await,
        1,
        "the unreachable storage is a code"
    );
    let refused = diesel::sql_query(
        "UPDATE remediation_runs
            SET reason = 'permission: 403 AccessDenied: User: arn:aws:sts::1:assumed-role/x'",
    )
    .execute(&mut env.conn)
    .await;
    let Err(diesel::result::Error::DatabaseError(_, info)) = refused else {
        panic!("free text was stored: {refused:?}");
    };
    assert!(
        info.constraint_name() == Some("remediation_runs_reason_is_a_code"),
        "{}",
        info.message()
    );
}

/// Deleting a policy stops what it planned and has not started: the request ends `failed`
/// with reason `policy_deleted` and an `action_failed` entry, before any storage call (the
/// executor's storage here is unreachable, so a call would fail it otherwise).
#[tokio::test]
async fn a_deleted_policy_stops_the_requests_it_planned_that_have_not_started() {
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    let tenant = acme();
    let policy = store::active(&mut env.conn, &tenant).await.unwrap()[0].id;
    store::delete(&mut env.conn, &tenant, &admin(), policy)
        .await
        .unwrap();
    let exec = executor(&env);
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert!(
        !remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM remediation_requests r JOIN remediation_runs u
                 USING (tenant_id, request_id)
              WHERE r.status = 'failed' AND u.reason = 'policy_deleted' AND u.lkg_key IS NULL"
        )
        .await,
        1
    );
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_actions WHERE outcome = 'failed'")
            .await,
        1
    );
    let kinds = env.audit_kinds(&tenant).await;
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("action_failed"),
        "{kinds:?}"
    );
}

/// Switching a policy to dry-run, or taking its action out, stops what it planned and has not
/// started, as deleting it does: the admin's brake on a policy enforced by mistake.
#[tokio::test]
async fn a_policy_switched_to_dry_run_or_without_its_action_stops_its_planned_requests() {
    let updates: [&[u8]; 2] = [
        b"apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: dry-run
  conditions: [{ category: us_ssn, min_confidence: 0.8 }]
  actions: [{ type: mask, config: { keep_last: 4 } }]
",
        b"apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.8 }]
  actions: [{ type: alert, config: { channels: [security], severity: high } }]
",
    ];
    for update in updates {
        let mut env = Env::new().await;
        env.channel(&acme(), "security").await;
        plan_one_mask(&mut env).await;
        let tenant = acme();
        let policy = store::active(&mut env.conn, &tenant).await.unwrap()[0].id;
        store::update(
            &mut env.conn,
            &tenant,
            &admin(),
            policy,
            update,
            Syntax::Yaml,
        )
        .await
        .unwrap();
        let exec = executor(&env);
        assert!(
            remediation::execute::run_once(&mut env.conn, &exec)
                .await
                .unwrap()
        );
        assert_eq!(
            env.count(
                "SELECT count(*) AS n FROM remediation_requests r JOIN remediation_runs u
                     USING (tenant_id, request_id)
                  WHERE r.status = 'failed' AND u.lkg_key IS NULL
                    AND u.reason = 'policy_no_longer_enforces_the_action'"
            )
            .await,
            1
        );
    }
}

//! Remediation against a real Postgres, without storage: the executor's gate, a deleted or
//! changed policy stopping what it planned, and the co-signing of receipts. A request is
//! planned as evaluation plans one (a ledger row, then the request) so that these tests need
//! nothing above this crate. Execution on real objects is tested over HTTP against moto, in
//! tests/tests/it/remediation.rs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod cosign;
mod gate;

use std::sync::Arc;

use policies::document::{ActionType, Syntax};
use policies::matching::{Finding, ObjectMatch};
use remediation::{Executor, Receipts};
pub use testkit::domain::{Env, acme, admin, globex};
use time::OffsetDateTime;
use uuid::Uuid;

pub fn executor(env: &Env) -> Executor {
    let cosigner = remediation::Cosigner::new(None, None, env.egress).unwrap();
    executor_with(env, cosigner)
}

/// An executor whose receipts are co-signed by `cosigner`, on a storage it never reaches.
pub fn executor_with(env: &Env, cosigner: remediation::Cosigner) -> Executor {
    let (master, _) = keys::MasterKey::generate().unwrap();
    Executor::new(
        connectors::Cloud::new(connectors::CloudEnv::default()).unwrap(),
        env.keyring.clone(),
        Arc::new(Receipts {
            signer: receipts::Signer::from_master(&master),
            cosigner,
        }),
    )
}

/// An enforced mask policy and one SSN finding in `exports/people.csv`, planned as evaluation
/// plans it: one ledger row and one remediation request, `planned`, for acme.
pub async fn plan_one_mask(env: &mut Env) {
    let tenant = acme();
    let connector = env.connector(&tenant, "exports").await;
    policies::store::create(
        &mut env.conn,
        &tenant,
        &admin(),
        b"apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.8 }]
  actions: [{ type: mask, config: { keep_last: 4 } }]
",
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let policy = policies::store::active(&mut env.conn, &tenant)
        .await
        .unwrap()
        .remove(0);
    let finding = Finding {
        id: Uuid::now_v7(),
        bucket: "exports".into(),
        object_key: "people.csv".into(),
        etag: "\"e1\"".into(),
        pii_type: "us_ssn".into(),
        category: "government_id".into(),
        confidence: 0.95,
        tokenized: false,
    };
    let object = ObjectMatch {
        bucket: &finding.bucket,
        object_key: &finding.object_key,
        etag: &finding.etag,
        findings: vec![&finding],
    };
    let now = OffsetDateTime::now_utc();
    let claim = policies::ledger::Claim {
        id: Uuid::now_v7(),
        policy: &policy,
        kind: ActionType::Mask,
        simulated: false,
        object: &object,
        outcome: "planned",
    };
    let claimed = policies::ledger::claim(&mut env.conn, &tenant, connector, &[claim], now, None)
        .await
        .unwrap();
    let action_id = *claimed.values().next().expect("the claim is new");
    let planned = remediation::store::plan(
        &mut env.conn,
        &tenant,
        &[remediation::store::NewRequest {
            request_id: Uuid::now_v7(),
            action_id,
            gate: settings::Gate::Allowed,
        }],
        now,
    )
    .await
    .unwrap();
    assert_eq!(planned, 1, "the request is its ledger row's");
}

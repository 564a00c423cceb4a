//! Remediation against a real Postgres: the executor's gate, a deleted or changed policy
//! stopping what it planned, and the co-signing of receipts, without storage; which values a
//! request rewrites, on moto. A request is planned as evaluation plans one (a ledger row, then
//! the request) so that these tests need nothing above this crate. Execution on real objects
//! is tested over HTTP against moto too, in tests/tests/it/remediation.rs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod cosign;
mod gate;
mod values;

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
    executor_on(
        env,
        connectors::Cloud::new(connectors::CloudEnv::default()).unwrap(),
        cosigner,
    )
}

/// An executor whose receipts are co-signed by `cosigner`, on the storage `cloud` reaches.
pub fn executor_on(
    env: &Env,
    cloud: connectors::Cloud,
    cosigner: remediation::Cosigner,
) -> Executor {
    let (master, _) = keys::MasterKey::generate().unwrap();
    Executor::new(
        cloud,
        env.keyring.clone(),
        Arc::new(Receipts {
            signer: receipts::Signer::from_master(&master),
            cosigner,
        }),
    )
}

/// The enforced policy [`plan_one_mask`] plans by: mask every SSN at 0.8 or above.
pub const SSN_MASK: &[u8] = b"apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.8 }]
  actions: [{ type: mask, config: { keep_last: 4 } }]
";

/// An enforced mask policy and one SSN finding in `exports/people.csv`, planned as evaluation
/// plans it: one ledger row and one remediation request, `planned`, for acme.
pub async fn plan_one_mask(env: &mut Env) {
    let connector = env.connector(&acme(), "exports").await;
    let finding = ssn_finding("people.csv", "\"e1\"");
    plan(env, connector, SSN_MASK, ActionType::Mask, &[&finding]).await;
}

/// An SSN finding in `exports/<key>` at `etag`, as evaluation reads one.
pub fn ssn_finding(key: &str, etag: &str) -> Finding {
    Finding {
        id: Uuid::now_v7(),
        bucket: "exports".into(),
        object_key: key.into(),
        etag: etag.into(),
        pii_type: "us_ssn".into(),
        category: "government_id".into(),
        confidence: 0.95,
        occurrences: 1,
        tokenized: false,
    }
}

/// Creates `policy` for acme and plans its action of `kind` on `findings` (all of one object
/// version) as evaluation plans it: one ledger row and one remediation request, `planned`.
/// Returns the request's id.
pub async fn plan(
    env: &mut Env,
    connector: ids::ConnectorId,
    policy: &[u8],
    kind: ActionType,
    findings: &[&Finding],
) -> Uuid {
    let tenant = acme();
    policies::store::create(&mut env.conn, &tenant, &admin(), policy, Syntax::Yaml)
        .await
        .unwrap();
    let policy = policies::store::active(&mut env.conn, &tenant)
        .await
        .unwrap()
        .remove(0);
    let object = ObjectMatch {
        bucket: &findings[0].bucket,
        object_key: &findings[0].object_key,
        etag: &findings[0].etag,
        findings: findings.to_vec(),
    };
    let now = OffsetDateTime::now_utc();
    let claim = policies::ledger::Claim {
        id: Uuid::now_v7(),
        policy: &policy,
        kind,
        simulated: false,
        object: &object,
        outcome: "planned",
    };
    let claimed = policies::ledger::claim(&mut env.conn, &tenant, connector, &[claim], now, None)
        .await
        .unwrap();
    let action_id = *claimed.values().next().expect("the claim is new");
    let request_id = Uuid::now_v7();
    let planned = remediation::store::plan(
        &mut env.conn,
        &tenant,
        &[remediation::store::NewRequest {
            request_id,
            action_id,
            gate: settings::Gate::Allowed,
        }],
        now,
    )
    .await
    .unwrap();
    assert_eq!(planned, 1, "the request is its ledger row's");
    request_id
}

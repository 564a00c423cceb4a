//! Governance against a real Postgres: policy documents stored, replaced and deleted with their
//! audit entries; evaluation, reconciliation and its limit; alert delivery, risk, remediation
//! and the co-signing of its receipts after an evaluation. (Alert channels are tested in
//! crates/alerts, drift events in crates/posture; the fixture is `testkit::domain`.)
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod breaker;
mod delivery;
mod evaluate;
mod plans;
mod policies;
mod risk;

use std::collections::BTreeMap;

use ids::{TenantId, TokenPolicyId};
pub use testkit::domain::{Env, acme, admin, globex};

/// A format-preserving SSN tokenization policy of `tenant`.
pub async fn token_policy(env: &mut Env, tenant: &TenantId) -> TokenPolicyId {
    let definition = vault::policies::Definition {
        name: "ssn".into(),
        type_rules: BTreeMap::from([(
            "us_ssn".to_owned(),
            vault::policies::RuleInput {
                mode: "format_preserving".into(),
                min_confidence: None,
                deterministic_scope: None,
            },
        )]),
        allowed_roles: vec!["admin".into()],
        allowed_purposes: vec!["support".into()],
        require_reason: false,
        failure_mode: None,
        token_ttl_seconds: None,
        default_region: None,
    };
    vault::policies::create(&mut env.conn, tenant, &admin(), &definition)
        .await
        .unwrap()
        .policy_id
}

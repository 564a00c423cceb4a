//! The real `platform-api` binary, run as operators run it, in a process of its own: its logs,
//! and remediation surviving the process being killed at each step.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod crash;
mod hostile;
mod logs;
mod replicas;
mod scan_restart;
mod worker_kill;

/// A tokenization policy for SSNs in `mode`, made directly in the vault of tenant `acme`
/// (tokens-api would make the same rows); its id.
async fn ssn_token_policy(conn: &mut diesel_async::AsyncPgConnection, mode: &str) -> uuid::Uuid {
    let definition = vault::policies::Definition {
        name: format!("ssn-{mode}"),
        type_rules: [(
            "us_ssn".to_owned(),
            vault::policies::RuleInput {
                mode: mode.into(),
                min_confidence: None,
                deterministic_scope: None,
            },
        )]
        .into(),
        allowed_roles: vec!["support".into()],
        allowed_purposes: vec!["fraud_review".into()],
        require_reason: false,
        failure_mode: None,
        token_ttl_seconds: None,
        default_region: None,
    };
    vault::policies::create(
        conn,
        &"acme".parse().unwrap(),
        &"alice".parse().unwrap(),
        &definition,
    )
    .await
    .unwrap()
    .policy_id
    .as_uuid()
}

//! What the process tests of `tokens-api` share: the binary started on a database, with an API
//! key of tenant `acme`, and the calls that set up an SSN policy and tokenize with it. Each test
//! file uses part of it.
#![allow(
    dead_code,
    reason = "each test binary uses only part of the shared set-up"
)]

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use diesel_async::AsyncConnection as _;
use serde_json::{Value, json};
use testkit::{ServiceProcess, TestDatabase};

/// A running `tokens-api` and what a client needs to call it.
pub struct Running {
    pub service: ServiceProcess,
    /// `http://127.0.0.1:PORT/api/v1/tokens`
    pub base: String,
    pub http: reqwest::Client,
    /// An API key of tenant `acme`.
    pub api_key: String,
    pub master_key: String,
}

/// The environment of a `tokens-api` on `db` with master key `[key_byte; 32]`.
pub fn env(db: &TestDatabase, key_byte: u8) -> (HashMap<String, String>, String) {
    let master_key = base64::engine::general_purpose::STANDARD.encode([key_byte; 32]);
    (testkit::service_env(db, &master_key), master_key)
}

/// An API key of tenant `acme`, stored in `db`.
pub async fn api_key(db: &TestDatabase) -> String {
    let mut conn = db::AsyncPgConnection::establish(&db.url).await.unwrap();
    let (_, key) = auth::api_keys::create(&mut conn, &"acme".parse().unwrap(), None, "process")
        .await
        .unwrap();
    key.expose().to_owned()
}

/// A client that gives up on an answer after 20 seconds.
pub fn client() -> reqwest::Client {
    boot::install_tls_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// Starts the binary on `db` with the environment `tweak` changes.
pub async fn start(
    db: &TestDatabase,
    key_byte: u8,
    tweak: impl FnOnce(&mut HashMap<String, String>),
) -> Running {
    let api_key = api_key(db).await;
    let (mut env, master_key) = env(db, key_byte);
    tweak(&mut env);
    let service = ServiceProcess::start(env!("CARGO_BIN_EXE_tokens-api"), &env);
    let base = format!("{}/api/v1/tokens", service.origin);
    Running {
        service,
        base,
        http: client(),
        api_key,
        master_key,
    }
}

/// An access token of `user` in tenant `acme` with `roles`, for ten minutes.
pub fn token(user: &str, roles: &[&str]) -> String {
    testkit::minter()
        .mint("acme", user, roles, Duration::from_secs(600))
        .unwrap()
}

/// A policy for SSNs in `mode`, open to role `support` for purpose `audit`; its id.
pub async fn ssn_policy(http: &reqwest::Client, base: &str, mode: &str) -> String {
    let policy: Value = http
        .post(format!("{base}/policies"))
        .bearer_auth(token("alice", &["admin"]))
        .json(&json!({
            "name": format!("ssn-{mode}"),
            "type_rules": { "us_ssn": { "mode": mode } },
            "allowed_roles": ["support"],
            "allowed_purposes": ["audit"]
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    policy["policy_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{policy}"))
        .to_owned()
}

/// Tokenizes `items` under `policy` with `api_key`; the response body.
pub async fn tokenize(
    http: &reqwest::Client,
    base: &str,
    api_key: &str,
    policy: &str,
    items: Value,
) -> Value {
    http.post(format!("{base}/tokenize"))
        .header("X-API-Key", api_key)
        .json(&json!({ "policy_id": policy, "items": items }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Tokenizes one SSN; its token id.
pub async fn tokenized_ssn(
    http: &reqwest::Client,
    base: &str,
    api_key: &str,
    policy: &str,
    ssn: &str,
) -> String {
    let body = tokenize(
        http,
        base,
        api_key,
        policy,
        json!([{ "value": ssn, "pii_type": "us_ssn" }]),
    )
    .await;
    body["results"][0]["token_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{body}"))
        .to_owned()
}

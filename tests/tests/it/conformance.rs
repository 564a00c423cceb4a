//! schemathesis against both running services. Every operation of each OpenAPI document is
//! called with generated input, valid and invalid, then in the stateful phase along the
//! documents' links (create, then read, change and delete), for a bounded time. Every check
//! runs except `ignored_auth` and `positive_data_acceptance`: each answer's status, content
//! type, headers and body must be the documented ones, invalid input must be refused, and no
//! answer may be a server error. tokens-api is called with an admin's access token and an API
//! key at once, so that the operations that take either are reached.

use std::path::Path;
use std::process::Command;

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use integration_tests::{Service, TestApp};

/// Time budgets: 2 minutes in all, the two running side by side.
const TOKENS_SECONDS: u32 = 45;
const PLATFORM_SECONDS: u32 = 75;

/// Runs schemathesis against `app`'s document with `headers`, and fails with its report.
/// Database settings for a service under schemathesis. With the tests' small pool, the scans it
/// starts (in-process workers over connectors that reach nothing) can keep every connection
/// busy for the 2 s the tests' requests wait, and the answer is a 503: correct, documented,
/// but a server error to schemathesis. This test is about the contract, not capacity.
fn roomy_pool(env: &mut std::collections::HashMap<String, String>) {
    env.insert("DATABASE_POOL_SIZE".into(), "12".into());
    env.insert("DATABASE_WAIT_TIMEOUT_MS".into(), "15000".into());
}

async fn conforms(app: &TestApp, headers: &[String], seconds: u32) {
    let st = tokio::task::spawn_blocking(testkit::emulators::schemathesis)
        .await
        .unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemathesis.toml");
    let mut command = Command::new(st);
    command
        .arg("--config-file")
        .arg(config)
        .arg("--no-color")
        .arg("run")
        .arg(app.url("/openapi.json"))
        .args(["--checks", "all"])
        .args(["--exclude-checks", "ignored_auth,positive_data_acceptance"])
        .args(["--max-time", &seconds.to_string()])
        // One worker: hypothesis, under CPython 3.11, can fail with "AST constructor
        // recursion depth mismatch" when two threads describe strategies at once.
        .args(["--workers", "1"])
        .args(["--seed", "1"])
        .args(["--request-timeout", "20"]);
    for header in headers {
        command.args(["-H", header]);
    }
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found failures against {}:\n{report}\n{}",
        app.base(),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.contains("passed"), "no test case ran:\n{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_api_answers_as_its_openapi_document_says() {
    let app = TestApp::spawn_with(Service::Tokens, |env| {
        roomy_pool(env);
        // The limits hold in their own tests; here they would answer most requests with 429.
        env.insert(
            "DPS_RATE_LIMITS".into(),
            [
                "tokenize",
                "detokenize",
                "grant",
                "vault_list",
                "revoke",
                "policies",
                "usage",
                "audit",
            ]
            .map(|endpoint| format!("{endpoint}=1000000/1000000"))
            .join(","),
        );
    })
    .await;
    let tenant = "conformance".parse().unwrap();
    let mut conn = AsyncPgConnection::establish(&app.db.url).await.unwrap();
    let (_, key) = auth::api_keys::create(&mut conn, &tenant, Some("st-admin"), "schemathesis")
        .await
        .unwrap();
    let token = app.token("conformance", "st-admin", &["admin", "analyst"]);
    let headers = [
        format!("Authorization: Bearer {token}"),
        format!("X-API-Key: {}", key.expose()),
    ];
    conforms(&app, &headers, TOKENS_SECONDS).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn platform_api_answers_as_its_openapi_document_says() {
    let app = TestApp::spawn_with(Service::Platform, roomy_pool).await;
    let token = app.token("conformance", "st-admin", &["admin", "analyst"]);
    conforms(
        &app,
        &[format!("Authorization: Bearer {token}")],
        PLATFORM_SECONDS,
    )
    .await;
}

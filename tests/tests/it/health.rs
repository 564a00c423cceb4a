use integration_tests::{Service, TestApp};
use serde_json::Value;

use crate::area_b_error;

#[tokio::test]
async fn tokens_health_reports_each_component_without_auth() {
    let app = TestApp::spawn(Service::Tokens).await;
    let response = app.http.get(app.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["service"], "tokens-api");
    assert_eq!(body["checks"]["database"]["status"], "ok");
    assert!(body["checks"]["database"]["latency_ms"].is_u64());
    assert_eq!(body["checks"]["key_material"]["status"], "ok");
}

#[tokio::test]
async fn platform_health_is_enveloped() {
    let app = TestApp::spawn(Service::Platform).await;
    let response = app.http.get(app.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "success");
    assert_eq!(body["data"]["status"], "ok");
    assert_eq!(body["data"]["service"], "platform-api");
    assert!(body["metadata"]["request_id"].is_string());
}

/// Port 1 on loopback has no Postgres: the pool cannot connect, as when the database is down.
fn database_down(env: &mut std::collections::HashMap<String, String>) {
    env.insert(
        "DATABASE_URL".into(),
        "postgres://nobody:nothing@127.0.0.1:1/none".into(),
    );
}

#[tokio::test]
async fn health_is_503_when_the_database_is_down() {
    let tokens = TestApp::spawn_with(Service::Tokens, database_down).await;
    let response = tokens.http.get(tokens.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "unavailable");
    assert_eq!(body["checks"]["database"]["status"], "failing");
    assert_eq!(body["checks"]["key_material"]["status"], "ok");
    // The failure is described without the connection string or its password.
    assert!(!body.to_string().contains("nothing"), "{body}");

    let platform = TestApp::spawn_with(Service::Platform, database_down).await;
    let response = platform
        .http
        .get(platform.url("/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let error = area_b_error(
        &response.json::<Value>().await.unwrap(),
        "SERVICE_UNAVAILABLE",
    );
    assert_eq!(error["details"]["checks"]["database"]["status"], "failing");
}

#[tokio::test]
async fn health_is_503_when_the_signing_keys_cannot_be_loaded() {
    let app = TestApp::spawn_with(Service::Tokens, |env| {
        env.insert("DPS_AUTH_JWKS".into(), "/nonexistent/jwks.json".into());
    })
    .await;
    let response = app.http.get(app.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["checks"]["database"]["status"], "ok");
    assert_eq!(body["checks"]["key_material"]["status"], "failing");
}

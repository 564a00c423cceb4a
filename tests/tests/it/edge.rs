//! The behaviour every route shares: error shapes, request ids, the SDK version header.

use integration_tests::{Service, TestApp};
use serde_json::Value;

use crate::{area_a_error, area_b_error};

#[tokio::test]
async fn unknown_routes_answer_404_in_each_areas_shape() {
    let tokens = TestApp::spawn(Service::Tokens).await;
    let response = tokens
        .http
        .get(tokens.url("/no-such-thing"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(response.headers()["content-type"], "application/json");
    area_a_error(&response.json::<Value>().await.unwrap(), "NOT_FOUND");

    let platform = TestApp::spawn(Service::Platform).await;
    let response = platform
        .http
        .get(format!("{}/elsewhere", platform.origin))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    area_b_error(&response.json::<Value>().await.unwrap(), "NOT_FOUND");
}

#[tokio::test]
async fn wrong_methods_answer_405_with_allow_in_each_areas_shape() {
    let tokens = TestApp::spawn(Service::Tokens).await;
    let response = tokens
        .http
        .delete(tokens.url("/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "GET");
    let error = area_a_error(
        &response.json::<Value>().await.unwrap(),
        "METHOD_NOT_ALLOWED",
    );
    assert_eq!(error["retryable"], false);

    let platform = TestApp::spawn(Service::Platform).await;
    let response = platform
        .http
        .post(platform.url("/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    area_b_error(
        &response.json::<Value>().await.unwrap(),
        "METHOD_NOT_ALLOWED",
    );
}

#[tokio::test]
async fn request_ids_are_echoed_when_sane_and_generated_otherwise() {
    let app = TestApp::spawn(Service::Platform).await;

    let response = app
        .http
        .get(app.url("/health"))
        .header("X-Request-Id", "trace-42.a:b_c")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-42.a:b_c");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["metadata"]["request_id"], "trace-42.a:b_c");

    // Errors carry it too.
    let response = app
        .http
        .get(app.url("/nope"))
        .header("X-Request-Id", "err-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "err-1");
    assert_eq!(
        response.json::<Value>().await.unwrap()["metadata"]["request_id"],
        "err-1"
    );

    // A value that could forge log lines is replaced, not echoed.
    let response = app
        .http
        .get(app.url("/health"))
        .header("X-Request-Id", "bad id; rm -rf")
        .send()
        .await
        .unwrap();
    let generated = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(uuid::Uuid::parse_str(&generated).is_ok(), "{generated}");

    let first = app.http.get(app.url("/health")).send().await.unwrap();
    let second = app.http.get(app.url("/health")).send().await.unwrap();
    assert_ne!(
        first.headers()["x-request-id"],
        second.headers()["x-request-id"]
    );
}

#[tokio::test]
async fn the_sdk_version_header_is_optional_checked_and_gated_by_major() {
    let tokens = TestApp::spawn(Service::Tokens).await;
    let get = |version: Option<&str>| {
        let mut request = tokens.http.get(tokens.url("/health"));
        if let Some(v) = version {
            request = request.header("X-Service-SDK-Version", v);
        }
        request.send()
    };
    assert_eq!(get(None).await.unwrap().status(), 200);
    assert_eq!(get(Some("1.0.0")).await.unwrap().status(), 200);
    assert_eq!(get(Some("1.7.3-beta.2+sha.5")).await.unwrap().status(), 200);

    for malformed in ["1", "1.2", "one.two.three", "v1.2.3", "01.2.3"] {
        let response = get(Some(malformed)).await.unwrap();
        assert_eq!(response.status(), 400, "{malformed}");
        let error = area_a_error(&response.json::<Value>().await.unwrap(), "INVALID_INPUT");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("X-Service-SDK-Version")
        );
    }

    let response = get(Some("2.0.0")).await.unwrap();
    assert_eq!(response.status(), 426);
    let error = area_a_error(
        &response.json::<Value>().await.unwrap(),
        "UNSUPPORTED_SDK_VERSION",
    );
    assert_eq!(error["supported_major_versions"], serde_json::json!([1]));
    assert_eq!(error["retryable"], false);

    let platform = TestApp::spawn(Service::Platform).await;
    let response = platform
        .http
        .get(platform.url("/health"))
        .header("X-Service-SDK-Version", "0.9.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 426);
    let error = area_b_error(
        &response.json::<Value>().await.unwrap(),
        "UNSUPPORTED_SDK_VERSION",
    );
    assert_eq!(
        error["details"]["supported_major_versions"],
        serde_json::json!([1])
    );
    let response = platform
        .http
        .get(platform.url("/health"))
        .header("X-Service-SDK-Version", "1.x.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    area_b_error(
        &response.json::<Value>().await.unwrap(),
        "VALIDATION_FAILED",
    );
}

#[tokio::test]
async fn supported_sdk_majors_are_configurable() {
    let app = TestApp::spawn_with(Service::Tokens, |env| {
        env.insert("DPS_SUPPORTED_SDK_MAJORS".into(), "1, 2".into());
    })
    .await;
    let response = app
        .http
        .get(app.url("/health"))
        .header("X-Service-SDK-Version", "2.1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = app
        .http
        .get(app.url("/health"))
        .header("X-Service-SDK-Version", "3.0.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 426);
    let error = area_a_error(
        &response.json::<Value>().await.unwrap(),
        "UNSUPPORTED_SDK_VERSION",
    );
    assert_eq!(error["supported_major_versions"], serde_json::json!([1, 2]));
}

//! End-to-end tests. One binary, so the throwaway Postgres cluster starts once for all of them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod api_keys;
mod archives;
mod auth;
mod classifiers;
mod cloud;
mod conformance;
mod connectors;
mod console;
mod console_alerts;
mod console_browser;
mod console_gov;
mod console_gov_browser;
mod console_map;
mod console_records;
mod console_records_browser;
mod detokenize;
mod edge;
mod emulators;
mod estate;
mod formats;
mod governance;
mod health;
mod hostile;
mod isolation;
mod kept_counts;
mod kubernetes;
mod limits;
mod markup;
mod migrations;
mod nul;
mod openapi;
mod pool;
mod reconcile;
mod remediation;
mod remediation_azure;
mod remediation_cosigning;
mod remediation_office;
mod remediation_tables;
mod scan_faults;
mod scans;
mod settings;
mod static_sql;
mod tables;
mod tokenize;
mod tokenize_properties;
mod vault;

use serde_json::Value;

/// Asserts an Area A error body and returns its `error` object.
pub fn area_a_error(body: &Value, code: &str) -> Value {
    let error = body
        .get("error")
        .unwrap_or_else(|| panic!("no error object in {body}"));
    assert_eq!(error["code"], code, "{body}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(error["detail"].is_string(), "{body}");
    assert!(error["retryable"].is_boolean(), "{body}");
    error.clone()
}

/// Asserts an Area B error envelope and returns its `error` object.
pub fn area_b_error(body: &Value, code: &str) -> Value {
    assert_eq!(body["status"], "error", "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(error["details"].is_object(), "{body}");
    assert!(
        body["metadata"]["request_id"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{body}"
    );
    let timestamp = body["metadata"]["timestamp"].as_str().unwrap_or_default();
    assert!(
        time::OffsetDateTime::parse(timestamp, &time::format_description::well_known::Rfc3339)
            .is_ok(),
        "{body}"
    );
    error.clone()
}

/// A caller of platform-api with one access token.
#[derive(Debug)]
pub struct Client<'a> {
    pub app: &'a integration_tests::TestApp,
    pub token: String,
}

impl Client<'_> {
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .app
            .http
            .request(method, self.app.url(path))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    /// The tenant's AWS external id, which an AWS connector's `external_id` must be.
    pub async fn external_id(&self) -> String {
        let (status, body) = self
            .send(reqwest::Method::GET, "/connectors/external-id", None)
            .await;
        assert_eq!(status, 200, "{body}");
        body["data"]["external_id"].as_str().unwrap().to_owned()
    }

    /// Sends `body` as it is, with `content_type`.
    pub async fn send_raw(
        &self,
        method: reqwest::Method,
        path: &str,
        content_type: &str,
        body: &str,
    ) -> (u16, Value) {
        let response = self
            .app
            .http
            .request(method, self.app.url(path))
            .bearer_auth(&self.token)
            .header("content-type", content_type)
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

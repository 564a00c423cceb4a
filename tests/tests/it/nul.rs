//! The NUL character (U+0000) in any text a request carries: Postgres text and jsonb cannot hold
//! it, so every body field, query parameter and path that holds one is a 400 naming it, before
//! anything is written.

use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl as _;
use integration_tests::{Service, TestApp};
use serde_json::{Value, json};

use crate::tokenize::{Tokens, all_modes_policy, item};
use crate::{Client, area_a_error, area_b_error};

async fn count(app: &TestApp, sql: &str) -> i64 {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let mut conn = app.conn().await;
    diesel::sql_query(sql)
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .n
}

/// Posts `body` (JSON text, so that it can carry `\u0000`) with a bearer token.
async fn post_raw(app: &TestApp, token: &str, path: &str, body: &str) -> (u16, Value) {
    let response = app
        .http
        .post(app.url(path))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

fn names(error: &Value, field: &str) {
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(field) && message.contains("NUL"),
        "{error}"
    );
}

#[tokio::test]
async fn tokens_api_refuses_a_nul_in_any_field_and_writes_nothing() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let (status, body) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .await;
    assert_eq!(status, 200, "{body}");
    let token_id = body["results"][0]["token_id"].as_str().unwrap().to_owned();
    let support = t.app.token("acme", "sam", &["support"]);

    // The grant's purpose and reason: the server error schemathesis found.
    for (field, body) in [
        (
            "purpose",
            format!(r#"{{"token_ids":["{token_id}"],"purpose":"fraud\u0000review","reason":"x"}}"#),
        ),
        (
            "reason",
            format!(
                r#"{{"token_ids":["{token_id}"],"purpose":"fraud_review","reason":"case\u000042"}}"#
            ),
        ),
    ] {
        let (status, answer) = post_raw(&t.app, &support, "/grant", &body).await;
        assert_eq!(status, 400, "{answer}");
        names(&area_a_error(&answer, "INVALID_INPUT"), field);
    }
    assert_eq!(count(&t.app, "SELECT count(*) AS n FROM grants").await, 0);

    // A value to tokenize, deep in a batch.
    let entries = t.entries().await;
    let response = t
        .app
        .http
        .post(t.app.url("/tokenize"))
        .header("X-API-Key", &t.api_key)
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"policy_id":"{policy}","items":[{{"value":"123-45-6780","pii_type":"us_ssn"}},{{"value":"a\u0000@example.com","pii_type":"email"}}]}}"#
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    names(&area_a_error(&answer, "INVALID_INPUT"), "items[1].value");
    assert_eq!(
        t.entries().await,
        entries,
        "no item of the batch is written"
    );

    // A policy's name, and a key of its type rules.
    let (status, answer) = post_raw(
        &t.app,
        &t.admin,
        "/policies",
        r#"{"name":"p\u0000","type_rules":{"us_ssn":{"mode":"format_preserving"}},"allowed_roles":["support"],"allowed_purposes":["x"]}"#,
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    names(&area_a_error(&answer, "INVALID_INPUT"), "name");
    let (status, answer) = post_raw(
        &t.app,
        &t.admin,
        "/policies",
        r#"{"name":"p","type_rules":{"us\u0000ssn":{"mode":"format_preserving"}},"allowed_roles":["support"],"allowed_purposes":["x"]}"#,
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    names(
        &area_a_error(&answer, "INVALID_INPUT"),
        "type_rules (a key)",
    );
    assert_eq!(
        count(&t.app, "SELECT count(*) AS n FROM tokenization_policies").await,
        1
    );

    // A query parameter, and the path.
    let (status, answer) = t.get(&t.admin, "/vault?pii_type=us%00ssn").await;
    assert_eq!(status, 400, "{answer}");
    names(
        &area_a_error(&answer, "INVALID_INPUT"),
        "query parameter pii_type",
    );
    let (status, answer) = t.get(&t.admin, "/vault/abc%00def").await;
    assert_eq!(status, 400, "{answer}");
    names(&area_a_error(&answer, "INVALID_INPUT"), "the path");
}

#[tokio::test]
async fn platform_api_refuses_a_nul_in_any_field_and_writes_nothing() {
    let app = TestApp::spawn(Service::Platform).await;
    let client = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };

    let (status, answer) = client
        .send_raw(
            reqwest::Method::POST,
            "/connectors",
            "application/json",
            r#"{"name":"HR\u0000","provider":"aws","config":{"role_arn":"arn:aws:iam::123456789012:role/r","external_id":"e","region":"us-east-1","buckets":["b"]}}"#,
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    let error = area_b_error(&answer, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "name", "{answer}");
    let (status, answer) = client
        .send_raw(
            reqwest::Method::POST,
            "/connectors",
            "application/json",
            r#"{"name":"HR","provider":"aws","config":{"role_arn":"arn:aws:iam::123456789012:role/r","external_id":"e","region":"us-east-1","buckets":["ok","b\u0000"]}}"#,
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    let error = area_b_error(&answer, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "config.buckets[1]", "{answer}");
    assert_eq!(count(&app, "SELECT count(*) AS n FROM connectors").await, 0);

    // A governance policy, in YAML (a double-quoted `\0` is a NUL) and in JSON.
    let yaml = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: \"ssn\\0alert\" }
spec:
  mode: monitor
  conditions: [{ category: us_ssn }]
  actions: [{ type: alert }]
";
    let (status, answer) = client
        .send_raw(
            reqwest::Method::POST,
            "/governance/policies",
            "application/yaml",
            yaml,
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    let error = area_b_error(&answer, "VALIDATION_FAILED");
    assert!(answer.to_string().contains("/metadata/name"), "{answer}");
    assert!(error["message"].is_string());
    let (status, answer) = client
        .send_raw(
            reqwest::Method::POST,
            "/governance/policies",
            "application/json",
            r#"{"apiVersion":"governance.dps/v1","kind":"Policy","metadata":{"name":"a","description":"x\u0000"},"spec":{"mode":"monitor","conditions":[{"category":"us_ssn"}],"actions":[{"type":"alert"}]}}"#,
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    area_b_error(&answer, "VALIDATION_FAILED");
    assert!(
        answer.to_string().contains("/metadata/description"),
        "{answer}"
    );
    assert_eq!(
        count(&app, "SELECT count(*) AS n FROM governance_policies").await,
        0
    );

    // Tenant settings.
    let (status, answer) = client
        .send_raw(
            reqwest::Method::PUT,
            "/settings/cosigning",
            "application/json",
            r#"{"mode":"disabled","endpoint_url":"https://cosign.example.com/\u0000"}"#,
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    let error = area_b_error(&answer, "VALIDATION_FAILED");
    assert_eq!(error["details"]["field"], "endpoint_url", "{answer}");

    // Query parameters of lists.
    for path in [
        "/connectors?status=act%00ive",
        "/governance/audit-log?kind=a%00",
        "/governance/remediations?status=%00",
    ] {
        let (status, answer) = client.send(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 400, "{path}: {answer}");
        let error = area_b_error(&answer, "VALIDATION_FAILED");
        assert!(
            error["details"]["field"]
                .as_str()
                .is_some_and(|f| f.starts_with("query parameter ")),
            "{path}: {answer}"
        );
    }
}

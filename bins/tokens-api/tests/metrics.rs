//! Prometheus metrics of the real `tokens-api` binary, on `METRICS_BIND_ADDR`: an address of
//! its own, with the request, pool, rate-limit, tokenize and detokenize series moving as the
//! traffic says, and no value, token or key in any of them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use serde_json::{Value, json};

mod support;

/// The value of the series whose line starts with `series` (name and labels as rendered).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(series))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn metrics_are_served_off_the_public_port_and_follow_the_traffic() {
    let db = testkit::database().await;
    let support::Running {
        service,
        base,
        http,
        api_key,
        master_key,
    } = support::start(&db, 4, |env| {
        env.insert("METRICS_BIND_ADDR".into(), "127.0.0.1:0".into());
        env.insert("DPS_RATE_LIMITS".into(), "usage=2/100".into());
    })
    .await;
    let metrics = service.metrics_origin().expect("a metrics listening line");
    assert_ne!(
        metrics, service.origin,
        "metrics have an address of their own"
    );
    let admin = support::token("alice", &["admin", "support"]);

    // The public port does not serve them.
    let public = http
        .get(format!("{}/metrics", service.origin))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 404);

    let policy = support::ssn_policy(&http, &base, "randomized").await;
    let ssn = "523-45-6781";
    let tokenized = support::tokenize(
        &http,
        &base,
        &api_key,
        &policy,
        json!([
            { "value": ssn, "pii_type": "us_ssn" },
            { "value": "not an ssn", "pii_type": "us_ssn" }
        ]),
    )
    .await;
    let id = tokenized["results"][0]["token_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = tokenized["results"][0]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let grant: Value = http
        .post(format!("{base}/grant"))
        .bearer_auth(&admin)
        .json(&json!({ "token_ids": [id], "purpose": "audit" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let grant_jwt = grant["grant_jwt"].as_str().unwrap().to_owned();
    for expected in [200, 403] {
        let response = http
            .post(format!("{base}/detokenize"))
            .bearer_auth(&admin)
            .json(&json!({ "tokens": [id], "grant_jwt": grant_jwt }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), expected);
    }
    for expected in [200, 200, 429] {
        let response = http
            .get(format!("{base}/usage"))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), expected);
    }

    // A method the client made up is counted, but not as a label of its own.
    let made_up = reqwest::Method::from_bytes(b"ZZZMADEUP").unwrap();
    let response = http
        .request(made_up, format!("{base}/usage"))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error());

    let text = http
        .get(format!("{metrics}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series = |s: &str| value(&text, s);
    assert_eq!(
        series(r#"dps_tokenize_items_total{outcome="tokenized",run="write"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        series(r#"dps_tokenize_items_total{outcome="failed",run="write"}"#),
        Some(1.0)
    );
    assert_eq!(
        series(r#"dps_detokenize_requests_total{outcome="granted",code=""}"#),
        Some(1.0)
    );
    assert_eq!(
        series(r#"dps_detokenize_requests_total{outcome="denied",code="GRANT_NONCE_REUSED"}"#),
        Some(1.0)
    );
    assert_eq!(
        series(
            r#"dps_rate_limit_rejections_total{service="tokens-api",route="/api/v1/tokens/usage"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        series(
            r#"dps_http_requests_total{service="tokens-api",route="/api/v1/tokens/usage",method="GET",status="429"}"#
        ),
        Some(1.0)
    );
    assert!(
        series(
            r#"dps_http_request_duration_seconds_bucket{service="tokens-api",route="/api/v1/tokens/tokenize",method="POST",le="+Inf"}"#
        ) == Some(1.0),
        "a latency histogram with buckets: {text}"
    );
    assert!(!text.contains("ZZZMADEUP"), "{text}");
    assert!(text.contains(r#"method="OTHER""#), "{text}");
    assert!(series("dps_db_pool_max_connections").is_some_and(|n| n >= 1.0));
    assert!(series("dps_db_pool_wait_seconds_count").is_some_and(|n| n >= 1.0));
    assert!(series(r#"dps_db_pool_connections{state="idle"}"#).is_some());

    // No value, token, key or grant is a label or a value.
    for secret in [
        ssn,
        "523456781",
        &api_key,
        &admin,
        &grant_jwt,
        &id,
        &token,
        &master_key,
    ] {
        assert!(!text.contains(secret), "the metrics show a secret");
    }
    let (status, _) = service.stop();
    assert!(status.success());
}

//! Rate limits, quotas, the kill switch, usage, and key rotation, over real HTTP against real
//! Postgres.

use std::time::Duration;

use diesel_async::RunQueryDsl as _;
use serde_json::{Value, json};

use crate::area_a_error;
use crate::tokenize::{Tokens, all_modes_policy, api_key, item};

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

#[tokio::test]
async fn rate_limits_hold_per_user_and_say_so_in_headers() {
    let t = Tokens::spawn_with(|env| {
        env.insert(
            "DPS_RATE_LIMITS".into(),
            "policies=3/100,vault_list=100/4".into(),
        );
    })
    .await;
    let list = |token: String| {
        let request = t.app.http.get(t.app.url("/policies")).bearer_auth(token);
        async move { request.send().await.unwrap() }
    };
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let response = list(t.admin.clone()).await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "x-ratelimit-limit").as_deref(), Some("3"));
        let reset: i64 = header(&response, "x-ratelimit-reset")
            .unwrap()
            .parse()
            .unwrap();
        assert!(reset > time::OffsetDateTime::now_utc().unix_timestamp() - 1);
        remaining.push(header(&response, "x-ratelimit-remaining").unwrap());
    }
    assert_eq!(remaining, ["2", "1", "0"]);
    let response = list(t.admin.clone()).await;
    assert_eq!(response.status(), 429);
    let retry_after: u64 = header(&response, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after));
    assert!(header(&response, "x-ratelimit-limit").is_some());
    let body: Value = response.json().await.unwrap();
    let error = area_a_error(&body, "RATE_LIMIT_EXCEEDED");
    assert_eq!(error["retryable"], true);
    assert_eq!(error["retry_after_seconds"], retry_after);

    // Another admin of the same tenant has a budget of their own.
    let response = list(t.app.token("acme", "bob", &["admin"])).await;
    assert_eq!(response.status(), 200);

    // The tenant's limit binds every user together.
    for i in 0..4 {
        let response = t
            .app
            .http
            .get(t.app.url("/vault"))
            .bearer_auth(t.app.token("acme", &format!("u{i}"), &[]))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let response = t
        .app
        .http
        .get(t.app.url("/vault"))
        .bearer_auth(t.app.token("acme", "u9", &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    // Another tenant is not affected.
    let response = t
        .app
        .http
        .get(t.app.url("/vault"))
        .bearer_auth(t.app.token("globex", "u9", &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn the_monthly_quota_stops_tokenization_without_writing_part_of_a_batch() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let mut conn = t.app.conn().await;
    limits::set_monthly_quota(&mut conn, &"acme".parse().unwrap(), Some(2))
        .await
        .unwrap();
    let three = json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn"), item("234-56-7890", "us_ssn"), item("345-67-8901", "us_ssn")] });
    let (status, body) = t.tokenize(three.clone()).await;
    assert_eq!(status, 429, "{body}");
    let error = area_a_error(&body, "QUOTA_EXCEEDED");
    assert_eq!(error["retryable"], false);
    assert_eq!(t.entries().await, 0);

    // A dry run consumes nothing.
    let response = t
        .app
        .http
        .post(t.app.url("/tokenize?dry_run=true"))
        .header("X-API-Key", &t.api_key)
        .json(&three)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let (status, _) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn"), item("234-56-7890", "us_ssn")] }))
        .await;
    assert_eq!(status, 200);
    // Values already in the vault cost nothing more; a new one is over.
    let (status, _) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .await;
    assert_eq!(status, 200);
    let (status, _) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("345-67-8901", "us_ssn")] }))
        .await;
    assert_eq!(status, 429);

    let (_, usage) = t.get(&t.admin, "/usage").await;
    assert_eq!(
        usage["quota"],
        json!({ "limit": 2, "used": 2, "remaining": 0 })
    );
    assert_eq!(usage["tokens"]["created"], 2);
    assert_eq!(usage["tokens"]["active"], 2);
    assert_eq!(usage["tokenize_requests"], 2);
    assert_eq!(usage["tokenize_items"], 3);
}

#[tokio::test]
async fn usage_counts_the_month_of_the_tenant_only() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let (_, body) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn"), item("ann@example.com", "email")] }))
        .await;
    let ids: Vec<String> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["token_id"].as_str().unwrap().to_owned())
        .collect();
    let sam = t.app.token("acme", "sam", &["support"]);
    let grant: Value = t
        .app
        .http
        .post(t.app.url("/grant"))
        .bearer_auth(&sam)
        .json(&json!({ "token_ids": ids, "purpose": "fraud_review", "reason": "x" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let response = t
        .app
        .http
        .post(t.app.url("/detokenize"))
        .bearer_auth(&sam)
        .json(&json!({ "tokens": ids, "grant_jwt": grant["grant_jwt"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = t
        .app
        .http
        .delete(t.app.url(&format!("/vault/{}", ids[1])))
        .bearer_auth(&t.admin)
        .json(&json!({ "reason": "erasure" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let response = t
        .app
        .http
        .get(t.app.url("/usage"))
        .bearer_auth(&t.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let usage: Value = response.json().await.unwrap();
    assert_eq!(
        usage["tokens"],
        json!({ "created": 2, "active": 1, "revoked": 1, "expired": 0 })
    );
    assert_eq!(usage["tokenize_requests"], 1);
    assert_eq!(usage["tokenize_items"], 2);
    assert_eq!(usage["detokenize_requests"], 1);
    assert_eq!(usage["detokenize_items"], 2);
    assert_eq!(usage["grants_issued"], 1);
    assert_eq!(usage["revocations"], 1);
    assert_eq!(
        usage["quota"],
        json!({ "limit": null, "used": 2, "remaining": null })
    );
    assert!(
        usage["period_start"]
            .as_str()
            .unwrap()
            .ends_with("-01T00:00:00Z")
    );

    let (_, other) = t
        .get(&t.app.token("globex", "gina", &["admin"]), "/usage")
        .await;
    assert_eq!(other["tokens"]["created"], 0);
    // Any user of the tenant reads its usage (the spec's role model).
    let response = t
        .app
        .http
        .get(t.app.url("/usage"))
        .bearer_auth(&sam)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn the_kill_switch_stops_tokenize_grant_and_detokenize_within_a_second() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let body = json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] });
    let (status, tokenized) = t.tokenize(body.clone()).await;
    assert_eq!(status, 200);
    let ids = json!([tokenized["results"][0]["token_id"]]);
    let mut conn = t.app.conn().await;
    let acme: ids::TenantId = "acme".parse().unwrap();

    limits::set_kill_switch(&mut conn, Some(&acme), limits::Switch::On, "test")
        .await
        .unwrap();
    tokio::time::sleep(limits::kill::CACHE_TTL + Duration::from_millis(100)).await;
    let (status, error) = t.tokenize(body.clone()).await;
    assert_eq!(status, 503);
    let error = area_a_error(&error, "KILL_SWITCH_ACTIVE");
    assert_eq!(error["retryable"], false);
    let sam = t.app.token("acme", "sam", &["support"]);
    let response = t
        .app
        .http
        .post(t.app.url("/grant"))
        .bearer_auth(&sam)
        .json(&json!({ "token_ids": ids, "purpose": "fraud_review", "reason": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let response = t
        .app
        .http
        .post(t.app.url("/detokenize"))
        .bearer_auth(&sam)
        .json(&json!({ "tokens": ids, "grant_jwt": "x.y.z" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    // Reading the vault is not stopped, and other tenants are not stopped.
    let response = t
        .app
        .http
        .get(t.app.url("/vault"))
        .bearer_auth(&t.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let health: Value = t
        .app
        .http
        .get(t.app.url("/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        health["kill_switch"],
        json!({ "global": false, "tenants_stopped": 1 })
    );

    // The global switch stops everyone; turning both off restores service.
    limits::set_kill_switch(&mut conn, None, limits::Switch::On, "test")
        .await
        .unwrap();
    tokio::time::sleep(limits::kill::CACHE_TTL + Duration::from_millis(100)).await;
    let globex_key = api_key(&t.app, "globex").await;
    let response = t
        .app
        .http
        .post(t.app.url("/tokenize"))
        .header("X-API-Key", globex_key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let health: Value = t
        .app
        .http
        .get(t.app.url("/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["kill_switch"]["global"], true);

    limits::set_kill_switch(&mut conn, None, limits::Switch::Off, "test")
        .await
        .unwrap();
    limits::set_kill_switch(&mut conn, Some(&acme), limits::Switch::Off, "test")
        .await
        .unwrap();
    tokio::time::sleep(limits::kill::CACHE_TTL + Duration::from_millis(100)).await;
    let (status, _) = t.tokenize(body).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn rotated_keys_encrypt_new_entries_and_rewrap_moves_old_ones() {
    let master_text = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode([9u8; 32])
    };
    let env_key = master_text.clone();
    let t = Tokens::spawn_with(move |env| {
        env.insert("DPS_MASTER_KEY".into(), env_key);
    })
    .await;
    let policy = t.policy(all_modes_policy()).await;
    let (_, first) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn"), item("ann@example.com", "email")] }))
        .await;
    let mut conn = t.app.conn().await;
    let acme: ids::TenantId = "acme".parse().unwrap();
    let master = std::sync::Arc::new(keys::MasterKey::from_base64(&master_text).unwrap());
    assert_eq!(
        keys::add_version(&mut conn, &master, &acme).await.unwrap(),
        2
    );
    let keyring = keys::KeyRing::new(master);

    // New writes use version 2 (here through a key ring that loads the keys afresh, as every
    // replica does within 30 seconds); the version-1 entries are left as they were.
    let request = vault::tokenize::Request {
        policy_id: policy.parse().unwrap(),
        items: vec![vault::tokenize::Item {
            value: "bob@example.com".into(),
            pii_type: "email".into(),
            mode: None,
        }],
        batch_mode: vault::tokenize::BatchMode::BestEffort,
        idempotency_key: None,
        run: vault::tokenize::Run::Write,
    };
    vault::tokenize::tokenize(&mut conn, &keyring, &acme, &request, &|_| Vec::new())
        .await
        .unwrap();
    #[derive(diesel::QueryableByName)]
    struct Version {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        key_version: i32,
    }
    let versions: Vec<Version> =
        diesel::sql_query("SELECT key_version FROM vault_entries ORDER BY token_id")
            .load(&mut conn)
            .await
            .unwrap();
    let versions: Vec<i32> = versions.iter().map(|v| v.key_version).collect();
    assert_eq!(versions, [1, 1, 2]);

    // Only the two version-1 entries need rewrapping.
    assert_eq!(
        vault::rewrap::rewrap(&mut conn, &keyring, &acme)
            .await
            .unwrap(),
        2
    );
    let versions: Vec<Version> = diesel::sql_query("SELECT key_version FROM vault_entries")
        .load(&mut conn)
        .await
        .unwrap();
    assert!(versions.iter().all(|v| v.key_version == 2));

    // Deterministic tokens survive the rotation, and the rewrapped values still open.
    let (_, again) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .await;
    assert_eq!(again["results"][0]["token"], first["results"][0]["token"]);
    let ids: Vec<&Value> = first["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["token_id"])
        .collect();
    let sam = t.app.token("acme", "sam", &["support"]);
    let grant: Value = t
        .app
        .http
        .post(t.app.url("/grant"))
        .bearer_auth(&sam)
        .json(&json!({ "token_ids": ids, "purpose": "fraud_review", "reason": "x" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let revealed: Value = t
        .app
        .http
        .post(t.app.url("/detokenize"))
        .bearer_auth(&sam)
        .json(&json!({ "tokens": ids, "grant_jwt": grant["grant_jwt"] }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(revealed["results"][0]["value"], "123456789", "{revealed}");
    assert_eq!(revealed["results"][1]["value"], "ann@example.com");
}

/// The three rate-limit headers, parsed, of a response.
fn rate_headers(response: &reqwest::Response) -> Option<(u32, u32, i64)> {
    Some((
        header(response, "x-ratelimit-limit")?.parse().ok()?,
        header(response, "x-ratelimit-remaining")?.parse().ok()?,
        header(response, "x-ratelimit-reset")?.parse().ok()?,
    ))
}

#[tokio::test]
async fn every_area_a_response_carries_rate_limit_headers_errors_included() {
    let t = Tokens::spawn_with(|env| {
        env.insert("DPS_ANONYMOUS_RATE_LIMIT".into(), "50".into());
    })
    .await;
    let policy = t.policy(all_modes_policy()).await;
    let http = &t.app.http;
    let url = |path: &str| t.app.url(path);
    let analyst = t.app.token("acme", "ana", &["analyst"]);
    let mut seen = Vec::new();
    let mut expect = |what: &str, response: reqwest::Response, status: u16| {
        assert_eq!(response.status(), status, "{what}");
        let (limit, remaining, reset) =
            rate_headers(&response).unwrap_or_else(|| panic!("{what}: no rate-limit headers"));
        assert!(remaining <= limit, "{what}");
        assert!(
            reset > time::OffsetDateTime::now_utc().unix_timestamp() - 1,
            "{what}"
        );
        seen.push((what.to_owned(), limit));
    };

    expect(
        "health",
        http.get(url("/health")).send().await.unwrap(),
        200,
    );
    expect(
        "200 with a caller",
        http.get(url("/vault"))
            .bearer_auth(&analyst)
            .send()
            .await
            .unwrap(),
        200,
    );
    expect(
        "400 from a body",
        http.post(url("/tokenize"))
            .header("X-API-Key", &t.api_key)
            .header("Content-Type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap(),
        400,
    );
    expect(
        "400 from a query",
        http.get(url("/vault?limit=0"))
            .bearer_auth(&analyst)
            .send()
            .await
            .unwrap(),
        400,
    );
    expect(
        "401 without a token",
        http.get(url("/vault")).send().await.unwrap(),
        401,
    );
    expect(
        "401 with a bad API key",
        http.post(url("/tokenize"))
            .header("X-API-Key", "dpsk_not-a-key")
            .json(&json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
            .send()
            .await
            .unwrap(),
        401,
    );
    expect(
        "403 for a non-admin",
        http.get(url("/audit/detokenizations"))
            .bearer_auth(&analyst)
            .send()
            .await
            .unwrap(),
        403,
    );
    expect("404", http.get(url("/nowhere")).send().await.unwrap(), 404);
    expect(
        "405",
        http.delete(url("/tokenize")).send().await.unwrap(),
        405,
    );
    expect(
        "426",
        http.get(url("/vault"))
            .bearer_auth(&analyst)
            .header("X-Service-SDK-Version", "9.0.0")
            .send()
            .await
            .unwrap(),
        426,
    );

    let mut conn = t.app.conn().await;
    let acme: ids::TenantId = "acme".parse().unwrap();
    limits::set_kill_switch(&mut conn, Some(&acme), limits::Switch::On, "test")
        .await
        .unwrap();
    tokio::time::sleep(limits::kill::CACHE_TTL + Duration::from_millis(100)).await;
    let response = http
        .post(url("/tokenize"))
        .header("X-API-Key", &t.api_key)
        .json(&json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let limit = rate_headers(&response).map(|h| h.0);
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 503);
    area_a_error(&body, "KILL_SWITCH_ACTIVE");
    // A caller was known: the tokenize limit of the spec, not the anonymous budget.
    assert_eq!(limit, Some(1000));

    // Known callers show their operation's limit; unknown ones the anonymous budget's.
    let limit_of = |what: &str| seen.iter().find(|(w, _)| w == what).unwrap().1;
    assert_eq!(limit_of("200 with a caller"), 60);
    assert_eq!(limit_of("400 from a body"), 1000);
    assert_eq!(limit_of("403 for a non-admin"), 60);
    for anonymous in ["health", "401 without a token", "404", "405", "426"] {
        assert_eq!(limit_of(anonymous), 50, "{anonymous}");
    }
}

#[tokio::test]
async fn every_429_carries_retry_after() {
    let t = Tokens::spawn_with(|env| {
        env.insert("DPS_ANONYMOUS_RATE_LIMIT".into(), "3".into());
    })
    .await;
    let policy = t.policy(all_modes_policy()).await;
    let http = &t.app.http;

    // Past the anonymous budget, a request without a known caller is refused...
    for _ in 0..3 {
        let response = http.get(t.app.url("/vault")).send().await.unwrap();
        assert_eq!(response.status(), 401);
    }
    let response = http.get(t.app.url("/vault")).send().await.unwrap();
    assert_eq!(response.status(), 429);
    let retry_after: u64 = header(&response, "retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after));
    assert_eq!(rate_headers(&response).map(|h| (h.0, h.1)), Some((3, 0)));
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        area_a_error(&body, "RATE_LIMIT_EXCEEDED")["retryable"],
        true
    );
    // ...a caller with a credential is counted on their own budget, and the health check,
    // which reads the budget without spending it, is never refused.
    let response = http
        .get(t.app.url("/vault"))
        .bearer_auth(&t.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let response = http.get(t.app.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(rate_headers(&response).map(|h| h.1), Some(0));

    // The quota's 429 says when the quota is whole again: the start of next month (UTC).
    let mut conn = t.app.conn().await;
    limits::set_monthly_quota(&mut conn, &"acme".parse().unwrap(), Some(0))
        .await
        .unwrap();
    let response = http
        .post(t.app.url("/tokenize"))
        .header("X-API-Key", &t.api_key)
        .json(&json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry_after: u64 = header(&response, "retry-after").unwrap().parse().unwrap();
    let expected = limits::quota_resets_in(time::OffsetDateTime::now_utc());
    assert!(
        retry_after.abs_diff(expected) <= 5,
        "{retry_after} vs {expected}"
    );
    assert!(rate_headers(&response).is_some());
    let body: Value = response.json().await.unwrap();
    let error = area_a_error(&body, "QUOTA_EXCEEDED");
    assert_eq!(error["retryable"], false);
    assert_eq!(error["retry_after_seconds"], retry_after);
}

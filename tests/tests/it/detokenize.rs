//! Grants, detokenization and its audit, over real HTTP against real Postgres.

use diesel_async::RunQueryDsl as _;
use serde_json::{Value, json};

use crate::area_a_error;
use crate::tokenize::{Tokens, all_modes_policy, api_key, item};

async fn post(t: &Tokens, token: &str, path: &str, body: Value) -> (u16, Value) {
    let response = t
        .app
        .http
        .post(t.app.url(path))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// A policy that lets `support` detokenize for `fraud_review` with a reason, and some values
/// tokenized under it. Returns the policy id and the token ids.
async fn tokenized(t: &Tokens) -> (String, Vec<String>) {
    let mut definition = all_modes_policy();
    definition["type_rules"]["monetary"] = json!({ "mode": "randomized" });
    let policy = t.policy(definition).await;
    let (status, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "items": [item("123-45-6789", "us_ssn"), item("Ann.Lee+x@Example.com", "email"), item("1.234,50 €", "monetary")]
        }))
        .await;
    assert_eq!(status, 200, "{body}");
    let ids = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["token_id"].as_str().unwrap().to_owned())
        .collect();
    (policy, ids)
}

async fn grant(t: &Tokens, user: &str, ids: &[String]) -> String {
    let token = t.app.token("acme", user, &["support"]);
    let (status, body) = post(
        t,
        &token,
        "/grant",
        json!({ "token_ids": ids, "purpose": "fraud_review", "reason": "case 42" }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["expires_in_seconds"], 300);
    body["grant_jwt"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_grant_reveals_its_tokens_once_to_its_user_only() {
    let t = Tokens::spawn().await;
    let (_, ids) = tokenized(&t).await;
    let sam = t.app.token("acme", "sam", &["support"]);
    let grant_jwt = grant(&t, "sam", &ids).await;

    // Another user of the same tenant cannot use it; nothing is consumed by trying.
    let sue = t.app.token("acme", "sue", &["support"]);
    let (status, body) = post(
        &t,
        &sue,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 401);
    area_a_error(&body, "UNAUTHORIZED");
    // Nor can a token outside the grant ride along.
    let mut more = ids.clone();
    more.push(uuid::Uuid::new_v4().to_string());
    let (status, body) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": more, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 403);
    area_a_error(&body, "TOKEN_NOT_IN_GRANT");

    let (status, body) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success_count"], 3);
    let r = body["results"].as_array().unwrap();
    assert_eq!(r[0]["status"], "GRANTED");
    assert_eq!(r[0]["value"], "123456789");
    assert_eq!(r[0]["token_id"], ids[0].as_str());
    assert_eq!(r[1]["value"], "ann.lee@example.com");
    assert_eq!(r[2]["value"], "1234.50");
    assert_eq!(r[2]["currency"], "EUR");
    assert!(uuid::Uuid::parse_str(body["trace_id"].as_str().unwrap()).is_ok());

    let (status, body) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 403);
    area_a_error(&body, "GRANT_NONCE_REUSED");

    // The same user name in another tenant cannot use it either.
    let other_tenant_sam = t.app.token("globex", "sam", &["support"]);
    let fresh = grant(&t, "sam", &ids).await;
    let (status, body) = post(
        &t,
        &other_tenant_sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": fresh }),
    )
    .await;
    assert_eq!(status, 401);
    area_a_error(&body, "UNAUTHORIZED");

    // Altered and forged grants, and an access token passed as a grant.
    let mut parts: Vec<String> = grant_jwt.split('.').map(str::to_owned).collect();
    parts[1] = format!("{}A", &parts[1][..parts[1].len() - 1]);
    for forged in [parts.join("."), sam.clone(), "not.a.jwt".into()] {
        let (status, body) = post(
            &t,
            &sam,
            "/detokenize",
            json!({ "tokens": ids, "grant_jwt": forged }),
        )
        .await;
        assert_eq!(status, 401, "{body}");
        area_a_error(&body, "UNAUTHORIZED");
    }
}

#[tokio::test]
async fn each_token_reports_its_own_status() {
    let t = Tokens::spawn().await;
    let (policy, ids) = tokenized(&t).await;
    // Expire one; add an unknown id and another tenant's token; revoke one after the grant.
    let mut conn = t.app.conn().await;
    diesel::sql_query(
        "UPDATE vault_entries SET expires_at = now() - interval '1 second' WHERE token_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(uuid::Uuid::parse_str(&ids[1]).unwrap())
    .execute(&mut conn)
    .await
    .unwrap();
    let globex_key = api_key(&t.app, "globex").await;
    let globex_admin = t.app.token("globex", "gina", &["admin"]);
    let (_, globex_policy) = post(&t, &globex_admin, "/policies", all_modes_policy()).await;
    let foreign: Value = t
        .app
        .http
        .post(t.app.url("/tokenize"))
        .header("X-API-Key", globex_key)
        .json(&json!({ "policy_id": globex_policy["policy_id"], "items": [item("321-54-9876", "us_ssn")] }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let foreign_id = foreign["results"][0]["token_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let unknown = uuid::Uuid::new_v4().to_string();
    let mut wanted = ids.clone();
    wanted.push(unknown.clone());
    wanted.push(foreign_id.clone());
    let grant_jwt = grant(&t, "sam", &wanted).await;
    let response = t
        .app
        .http
        .delete(t.app.url(&format!("/vault/{}", ids[0])))
        .bearer_auth(&t.admin)
        .json(&json!({ "reason": "erasure" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // A revoked token gets no new grant.
    let sam = t.app.token("acme", "sam", &["support"]);
    let (status, body) = post(
        &t,
        &sam,
        "/grant",
        json!({ "token_ids": [&ids[0]], "purpose": "fraud_review", "reason": "x" }),
    )
    .await;
    assert_eq!(status, 403);
    area_a_error(&body, "TOKEN_REVOKED");

    // After the grant, the policy stops trusting `support` for new reveals: DENIED.
    let mut changed = all_modes_policy();
    changed["type_rules"]["monetary"] = json!({ "mode": "randomized" });
    changed["allowed_roles"] = json!(["auditor"]);
    let response = t
        .app
        .http
        .put(t.app.url(&format!("/policies/{policy}")))
        .bearer_auth(&t.admin)
        .json(&changed)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let (status, body) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": wanted, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let statuses: Vec<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["REVOKED", "EXPIRED", "DENIED", "NOT_FOUND", "NOT_FOUND"]
    );
    assert!(body["results"][0]["revoked_at"].is_string());
    assert!(
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["value"].is_null())
    );
    assert_eq!(body["success_count"], 0);
    assert_eq!(body["failure_count"], 5);
}

#[tokio::test]
async fn grants_are_checked_against_every_tokens_policy() {
    let t = Tokens::spawn().await;
    let (_, ids) = tokenized(&t).await;
    let support = t.app.token("acme", "sam", &["support"]);
    let analyst = t.app.token("acme", "rita", &["analyst"]);
    let hundred_one: Vec<String> = (0..101).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    for (token, body, status, code) in [
        (
            &analyst,
            json!({ "token_ids": ids, "purpose": "fraud_review", "reason": "x" }),
            403,
            "ROLE_NOT_ALLOWED",
        ),
        (
            &support,
            json!({ "token_ids": ids, "purpose": "curiosity", "reason": "x" }),
            403,
            "PURPOSE_NOT_ALLOWED",
        ),
        (
            &support,
            json!({ "token_ids": ids, "purpose": "fraud_review" }),
            400,
            "REASON_REQUIRED",
        ),
        (
            &support,
            json!({ "token_ids": ids, "purpose": "fraud_review", "reason": "   " }),
            400,
            "REASON_REQUIRED",
        ),
        (
            &support,
            json!({ "token_ids": [], "purpose": "fraud_review", "reason": "x" }),
            400,
            "INVALID_INPUT",
        ),
        (
            &support,
            json!({ "token_ids": hundred_one, "purpose": "fraud_review", "reason": "x" }),
            400,
            "INVALID_INPUT",
        ),
        (
            &support,
            json!({ "token_ids": ids, "purpose": "", "reason": "x" }),
            400,
            "INVALID_INPUT",
        ),
    ] {
        let (got, response) = post(&t, token, "/grant", body).await;
        assert_eq!(got, status, "{response}");
        area_a_error(&response, code);
    }
    let response = t
        .app
        .http
        .post(t.app.url("/grant"))
        .json(&json!({ "token_ids": ids, "purpose": "fraud_review", "reason": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    area_a_error(&response.json().await.unwrap(), "UNAUTHORIZED");
}

#[tokio::test]
async fn an_expired_grant_is_refused() {
    let t = Tokens::spawn().await;
    let (_, ids) = tokenized(&t).await;
    let grant_jwt = grant(&t, "sam", &ids).await;
    let mut conn = t.app.conn().await;
    diesel::sql_query("UPDATE grants SET expires_at = now() - interval '1 second'")
        .execute(&mut conn)
        .await
        .unwrap();
    let sam = t.app.token("acme", "sam", &["support"]);
    let (status, body) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 403);
    area_a_error(&body, "GRANT_EXPIRED");
}

#[tokio::test]
async fn fifty_concurrent_uses_of_one_grant_give_exactly_one_success() {
    // Rate limits would stop most of the fifty before they reach the grant.
    let t = Tokens::spawn_with(|env| {
        env.insert("DPS_RATE_LIMITS".into(), "detokenize=1000/1000".into());
    })
    .await;
    let (_, ids) = tokenized(&t).await;
    let grant_jwt = grant(&t, "sam", &ids).await;
    let sam = t.app.token("acme", "sam", &["support"]);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let request = t
            .app
            .http
            .post(t.app.url("/detokenize"))
            .bearer_auth(&sam)
            .json(&json!({ "tokens": ids, "grant_jwt": grant_jwt }));
        tasks.spawn(async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        });
    }
    let mut granted = 0;
    while let Some(result) = tasks.join_next().await {
        let (status, body) = result.unwrap();
        match status {
            200 => granted += 1,
            403 => assert_eq!(body["error"]["code"], "GRANT_NONCE_REUSED", "{body}"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(granted, 1);
}

#[tokio::test]
async fn without_an_audit_record_nothing_is_revealed() {
    let t = Tokens::spawn().await;
    let (_, ids) = tokenized(&t).await;
    let grant_jwt = grant(&t, "sam", &ids).await;
    let mut conn = t.app.conn().await;
    // Make every granted audit record fail to insert.
    diesel::sql_query(
        "ALTER TABLE detokenization_audit ADD CONSTRAINT test_refuse CHECK (outcome <> 'granted')",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let sam = t.app.token("acme", "sam", &["support"]);
    let (status, body) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    area_a_error(&body, "SERVICE_UNAVAILABLE");
    assert!(!body.to_string().contains("123456789"));

    // The grant was not consumed: once the audit works again, it still reveals.
    diesel::sql_query("ALTER TABLE detokenization_audit DROP CONSTRAINT test_refuse")
        .execute(&mut conn)
        .await
        .unwrap();
    let (status, body) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn every_attempt_is_audited_without_values_and_listed_for_admins() {
    let t = Tokens::spawn().await;
    let (_, ids) = tokenized(&t).await;
    let sam = t.app.token("acme", "sam", &["support"]);
    let grant_jwt = grant(&t, "sam", &ids).await;
    let (status, _) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 403);
    let sue = t.app.token("acme", "sue", &["support"]);
    let other_grant = grant(&t, "sue", &ids[..1]).await;
    let (status, _) = post(
        &t,
        &sue,
        "/detokenize",
        json!({ "tokens": &ids[..1], "grant_jwt": other_grant }),
    )
    .await;
    assert_eq!(status, 200);

    let list = |query: &str| {
        let request = t
            .app
            .http
            .get(t.app.url(&format!("/audit/detokenizations{query}")))
            .bearer_auth(&t.admin);
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, page) = list("").await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["user_id"], "sam");
    assert_eq!(items[0]["outcome"], "granted");
    assert_eq!(items[0]["purpose"], "fraud_review");
    assert_eq!(items[0]["reason"], "case 42");
    assert_eq!(items[0]["tokens"].as_array().unwrap().len(), 3);
    assert_eq!(items[0]["tokens"][0]["status"], "GRANTED");
    assert!(items[0]["grant_id"].is_string() && items[0]["trace_id"].is_string());
    assert_eq!(items[1]["outcome"], "denied");
    assert_eq!(items[1]["denial_code"], "GRANT_NONCE_REUSED");
    let text = page.to_string();
    assert!(!text.contains("123456789") && !text.contains("ann.lee"));

    let (_, by_user) = list("?user=sue").await;
    assert_eq!(by_user["items"].as_array().unwrap().len(), 1);
    let url = format!("/audit/detokenizations?token_id={}", ids[2]);
    let (_, by_token) = t.get(&t.admin, &url).await;
    assert_eq!(by_token["items"].as_array().unwrap().len(), 2);
    let (_, future) = list("?since=2999-01-01T00:00:00Z").await;
    assert_eq!(future["items"], json!([]));
    // Any ISO 8601 date or date-time, as platform-api's lists take.
    for since in ["2999-01-01", "2999-01-01T00:00:00", "29990101T000000Z"] {
        let (status, future) = list(&format!("?since={since}")).await;
        assert_eq!((status, &future["items"]), (200, &json!([])), "{since}");
    }
    let (_, past) = list("?since=2000-01-01").await;
    assert_eq!(past["items"].as_array().unwrap().len(), 3);
    let (status, _) = list("?since=yesterday").await;
    assert_eq!(status, 400);
    let (_, page) = list("?limit=2").await;
    let cursor = page["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = format!("/audit/detokenizations?limit=2&cursor={cursor}");
    let (_, rest) = t.get(&t.admin, &url).await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);

    // Another tenant's admin sees none of these attempts.
    let (_, theirs) = t
        .get(
            &t.app.token("globex", "gina", &["admin"]),
            "/audit/detokenizations",
        )
        .await;
    assert_eq!(theirs["items"], json!([]));

    let response = t
        .app
        .http
        .get(t.app.url("/audit/detokenizations"))
        .bearer_auth(&sam)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);

    // No revealed value reached any table, nor a credential: the grants (whole, or their
    // signatures), the access token, the API key.
    let dump = testkit::pg_dump(&t.app.db);
    for value in ["123456789", "ann.lee@example.com", "1234.50"] {
        assert!(!dump.contains(value), "{value} is in the dump");
    }
    for credential in [&grant_jwt, &other_grant, &sam, &t.api_key] {
        let signature = credential.rsplit('.').next().unwrap();
        assert!(
            !dump.contains(credential.as_str()) && !dump.contains(signature),
            "a credential is in the dump"
        );
    }
}

/// A detokenize request whose body cannot be read (an unknown field, a wrong type, not JSON)
/// is an attempt too: refused 400, and audited denied `INVALID_INPUT` without token ids (none
/// can be trusted) and without anything the body carried.
#[tokio::test]
async fn an_unreadable_detokenize_body_is_refused_and_audited() {
    let t = Tokens::spawn().await;
    let (_, ids) = tokenized(&t).await;
    let sam = t.app.token("acme", "sam", &["support"]);
    let grant_jwt = grant(&t, "sam", &ids).await;
    let bodies = [
        json!({ "tokens": ids, "grant_jwt": grant_jwt, "note": "219-09-9999" }),
        json!({ "tokens": "219-09-9999", "grant_jwt": grant_jwt }),
    ];
    for body in bodies {
        let (status, answer) = post(&t, &sam, "/detokenize", body).await;
        assert_eq!(status, 400, "{answer}");
        area_a_error(&answer, "INVALID_INPUT");
    }
    let response = t
        .app
        .http
        .post(t.app.url("/detokenize"))
        .bearer_auth(&sam)
        .header("content-type", "text/plain")
        .body("tokens=219-09-9999")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    let (status, page) = t.get(&t.admin, "/audit/detokenizations").await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 3, "{page}");
    for item in items {
        assert_eq!(item["user_id"], "sam");
        assert_eq!(item["outcome"], "denied");
        assert_eq!(item["denial_code"], "INVALID_INPUT");
        assert_eq!(item["tokens"], json!([]));
    }
    assert!(!page.to_string().contains("219-09-9999"));
    // The grant was not consumed by any of them.
    let (status, revealed) = post(
        &t,
        &sam,
        "/detokenize",
        json!({ "tokens": ids, "grant_jwt": grant_jwt }),
    )
    .await;
    assert_eq!(status, 200, "{revealed}");
}

//! Listing and revoking vault entries.

use diesel_async::RunQueryDsl as _;
use serde_json::{Value, json};

use crate::area_a_error;
use crate::tokenize::{Tokens, all_modes_policy, item};

async fn get(t: &Tokens, token: &str, query: &str) -> (u16, Value) {
    let response = t
        .app
        .http
        .get(t.app.url(&format!("/vault{query}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn revoke(t: &Tokens, token: &str, token_id: &str, body: Value) -> (u16, Value) {
    let response = t
        .app
        .http
        .delete(t.app.url(&format!("/vault/{token_id}")))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn the_vault_lists_entries_without_values_and_filters_by_type_and_status() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let (_, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "items": [item("123-45-6789", "us_ssn"), item("ann@example.com", "email"), item("bob@example.com", "email"), item("046 454 286", "ca_sin")]
        }))
        .await;
    let ids: Vec<String> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["token_id"].as_str().unwrap().to_owned())
        .collect();
    let reader = t.app.token("acme", "rita", &["analyst"]);

    let (status, page) = get(&t, &reader, "").await;
    assert_eq!(status, 200, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    assert_eq!(page["pagination"]["limit"], 50);
    let first = &items[0];
    for field in [
        "token_id",
        "token",
        "pii_type",
        "mode",
        "status",
        "policy_id",
        "policy_version",
        "created_at",
        "expires_at",
        "revoked_at",
    ] {
        assert!(first.get(field).is_some(), "{field} missing: {first}");
    }
    assert_eq!(first["status"], "active");
    assert!(!page.to_string().contains("ann@example.com"));

    let (_, emails) = get(&t, &reader, "?pii_type=email").await;
    assert_eq!(emails["items"].as_array().unwrap().len(), 2);

    // Revoke one, expire another (by moving its expiry into the past).
    let (status, revoked) =
        revoke(&t, &t.admin, &ids[1], json!({ "reason": "customer asked" })).await;
    assert_eq!(status, 200, "{revoked}");
    let mut conn = t.app.conn().await;
    diesel::sql_query(
        "UPDATE vault_entries SET expires_at = now() - interval '1 second' WHERE token_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(uuid::Uuid::parse_str(&ids[2]).unwrap())
    .execute(&mut conn)
    .await
    .unwrap();
    for (status_filter, expected) in [
        ("active", vec![&ids[0], &ids[3]]),
        ("revoked", vec![&ids[1]]),
        ("expired", vec![&ids[2]]),
    ] {
        let (_, page) = get(&t, &reader, &format!("?status={status_filter}")).await;
        let got: Vec<&str> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["token_id"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = expected.iter().map(|s| s.as_str()).collect();
        assert_eq!(got, expected, "{status_filter}");
        assert!(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["status"] == status_filter)
        );
    }

    // Pages of one, then a tampered cursor and bad filters.
    let (_, page) = get(&t, &reader, "?limit=1").await;
    assert_eq!(page["pagination"]["has_more"], true);
    let cursor = page["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, next) = get(&t, &reader, &format!("?limit=1&cursor={cursor}")).await;
    assert_ne!(next["items"][0]["token_id"], page["items"][0]["token_id"]);
    let mut tampered = cursor.clone().into_bytes();
    tampered[5] = if tampered[5] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for query in [
        format!("?cursor={tampered}"),
        "?status=gone".into(),
        "?limit=101".into(),
        "?limit=0".into(),
    ] {
        let (status, body) = get(&t, &reader, &query).await;
        assert_eq!(status, 400, "{query}");
        area_a_error(&body, "INVALID_INPUT");
    }
    let (status, body) = get(&t, &reader, "?pii_type=us_zip").await;
    assert_eq!(status, 400, "{body}");
    area_a_error(&body, "UNSUPPORTED_PII_TYPE");

    // Another tenant sees nothing, and cannot use this tenant's cursor.
    let stranger = t.app.token("globex", "gina", &["admin"]);
    let (_, other) = get(&t, &stranger, "").await;
    assert_eq!(other["items"], json!([]));
    let (status, _) = get(&t, &stranger, &format!("?cursor={cursor}")).await;
    assert_eq!(status, 400);
    let response = t.app.http.get(t.app.url("/vault")).send().await.unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn revocation_needs_a_reason_and_a_role_and_is_idempotent() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let (_, body) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .await;
    let id = body["results"][0]["token_id"].as_str().unwrap().to_owned();

    let (status, error) = revoke(&t, &t.admin, &id, json!({ "reason": "  " })).await;
    assert_eq!(status, 400);
    area_a_error(&error, "INVALID_INPUT");
    let (status, _) = revoke(&t, &t.admin, &id, json!({})).await;
    assert_eq!(status, 400);
    let analyst = t.app.token("acme", "rita", &["analyst"]);
    let (status, error) = revoke(&t, &analyst, &id, json!({ "reason": "x" })).await;
    assert_eq!(status, 403);
    area_a_error(&error, "FORBIDDEN");

    // A role the policy allows to detokenize may revoke.
    let support = t.app.token("acme", "sam", &["support"]);
    let (status, first) = revoke(
        &t,
        &support,
        &id,
        json!({ "reason": "subject erasure request" }),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["token_id"], id.as_str());
    assert_eq!(first["status"], "revoked");
    let (status, again) = revoke(&t, &t.admin, &id, json!({ "reason": "again" })).await;
    assert_eq!(status, 200);
    assert_eq!(again["revoked_at"], first["revoked_at"]);

    // Tokenizing the value again does not bring the token back.
    let (_, body) = t
        .tokenize(json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .await;
    assert_eq!(
        body["results"][0]["error"]["code"], "TOKEN_REVOKED",
        "{body}"
    );
    // In an ALL_OR_NOTHING batch it rejects the batch with the status the spec gives the code.
    let entries = t.entries().await;
    let (status, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "batch_mode": "ALL_OR_NOTHING",
            "items": [item("123-45-6789", "us_ssn"), item("234-56-7890", "us_ssn")]
        }))
        .await;
    assert_eq!(status, 403, "{body}");
    let error = area_a_error(&body, "TOKEN_REVOKED");
    assert_eq!(error["results"][1]["status"], "SKIPPED", "{error}");
    assert_eq!(t.entries().await, entries);

    for (token_id, who) in [
        (uuid::Uuid::new_v4().to_string(), &t.admin),
        ("not-a-uuid".to_owned(), &t.admin),
        (id.clone(), &t.app.token("globex", "gina", &["admin"])),
    ] {
        let (status, error) = revoke(&t, who, &token_id, json!({ "reason": "x" })).await;
        assert_eq!(status, 404, "{token_id}");
        area_a_error(&error, "TOKEN_NOT_FOUND");
    }
}

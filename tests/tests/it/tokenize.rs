//! Tokenization policies and `POST /tokenize` over real HTTP, against real Postgres.

use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl as _;
use integration_tests::{Service, TestApp};
use serde_json::{Value, json};

use crate::area_a_error;

/// A tokens-api with an admin token and an API key for `tenant`.
pub struct Tokens {
    pub app: TestApp,
    pub admin: String,
    pub api_key: String,
}

impl Tokens {
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| {}).await
    }

    /// Like [`Tokens::spawn`], with the service's environment changed by `tweak`.
    pub async fn spawn_with(
        tweak: impl FnOnce(&mut std::collections::HashMap<String, String>),
    ) -> Self {
        let app = TestApp::spawn_with(Service::Tokens, tweak).await;
        let admin = app.token("acme", "alice", &["admin"]);
        let api_key = api_key(&app, "acme").await;
        Self {
            app,
            admin,
            api_key,
        }
    }

    /// GET `path` with `token`: the status and the JSON body.
    pub async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let response = self
            .app
            .http
            .get(self.app.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    pub async fn create_policy(&self, body: Value) -> (u16, Value) {
        let response = self
            .app
            .http
            .post(self.app.url("/policies"))
            .bearer_auth(&self.admin)
            .json(&body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    pub async fn policy(&self, body: Value) -> String {
        let (status, created) = self.create_policy(body).await;
        assert_eq!(status, 201, "{created}");
        created["policy_id"].as_str().unwrap().to_owned()
    }

    pub async fn tokenize(&self, body: Value) -> (u16, Value) {
        self.tokenize_at("/tokenize", body).await
    }

    async fn tokenize_at(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .app
            .http
            .post(self.app.url(path))
            .header("X-API-Key", &self.api_key)
            .json(&body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    pub async fn entries(&self) -> i64 {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        let mut conn = self.app.conn().await;
        diesel::sql_query("SELECT count(*) AS n FROM vault_entries")
            .get_result::<Count>(&mut conn)
            .await
            .unwrap()
            .n
    }
}

pub async fn api_key(app: &TestApp, tenant: &str) -> String {
    let mut conn = app.conn().await;
    let (_, secret) = auth::api_keys::create(&mut conn, &tenant.parse().unwrap(), None, "test")
        .await
        .unwrap();
    secret.expose().to_owned()
}

pub fn all_modes_policy() -> Value {
    json!({
        "name": "customer data",
        "type_rules": {
            "us_ssn": { "mode": "deterministic" },
            "ca_sin": { "mode": "format_preserving" },
            "email": { "mode": "randomized" },
            "phone": { "mode": "format_preserving" },
            "dob": { "mode": "format_preserving" },
            "passport_ca": { "mode": "deterministic", "deterministic_scope": "policy" }
        },
        "allowed_roles": ["support"],
        "allowed_purposes": ["fraud_review"],
        "require_reason": true
    })
}

pub fn item(value: &str, pii_type: &str) -> Value {
    json!({ "value": value, "pii_type": pii_type })
}

#[tokio::test]
async fn policies_are_created_validated_replaced_and_listed() {
    let t = Tokens::spawn().await;
    let (status, created) = t.create_policy(all_modes_policy()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["version"], 1);
    assert_eq!(created["failure_mode"], "fail-closed");
    assert_eq!(created["default_region"], "US");
    assert_eq!(created["token_ttl_seconds"], Value::Null);
    assert_eq!(
        created["type_rules"]["us_ssn"]["deterministic_scope"],
        "global"
    );
    assert_eq!(created["type_rules"]["us_ssn"]["min_confidence"], 0.0);
    assert!(created["created_at"].is_string() && created["updated_at"].is_string());
    let id = created["policy_id"].as_str().unwrap().to_owned();

    // Every invalid field is named at once.
    let (status, body) = t
        .create_policy(json!({
            "name": "",
            "type_rules": {
                "us_zip": { "mode": "deterministic" },
                "email": { "mode": "scrambled", "min_confidence": 2.0, "deterministic_scope": "tenant" }
            },
            "allowed_roles": ["has space"],
            "allowed_purposes": [],
            "failure_mode": "fail_sometimes",
            "token_ttl_seconds": 0,
            "default_region": "XX"
        }))
        .await;
    assert_eq!(status, 400);
    let error = area_a_error(&body, "INVALID_INPUT");
    let fields: Vec<&str> = error["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    for field in [
        "name",
        "type_rules.us_zip",
        "type_rules.email.mode",
        "type_rules.email.min_confidence",
        "type_rules.email.deterministic_scope",
        "allowed_roles[0]",
        "failure_mode",
        "token_ttl_seconds",
        "default_region",
    ] {
        assert!(fields.contains(&field), "{field} missing from {fields:?}");
    }
    let (status, body) = t
        .create_policy(json!({ "name": "x", "type_rules": {}, "allowed_roles": [], "allowed_purposes": [], "surprise": 1 }))
        .await;
    assert_eq!(status, 400, "{body}");
    area_a_error(&body, "INVALID_INPUT");

    // PUT replaces the whole definition and bumps the version.
    let mut replacement = all_modes_policy();
    replacement["name"] = json!("renamed");
    replacement["failure_mode"] = json!("fail-open");
    let response = t
        .app
        .http
        .put(t.app.url(&format!("/policies/{id}")))
        .bearer_auth(&t.admin)
        .json(&replacement)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let updated: Value = response.json().await.unwrap();
    assert_eq!(updated["version"], 2);
    assert_eq!(updated["name"], "renamed");
    assert_eq!(updated["failure_mode"], "fail-open");
    assert_eq!(updated["created_at"], created["created_at"]);

    // Unknown ids, malformed ids and another tenant's policy are all simply not found.
    let other_admin = t.app.token("globex", "gina", &["admin"]);
    for (path, token) in [
        (format!("/policies/{}", uuid::Uuid::new_v4()), &t.admin),
        ("/policies/not-a-uuid".to_owned(), &t.admin),
        (format!("/policies/{id}"), &other_admin),
    ] {
        let response = t
            .app
            .http
            .put(t.app.url(&path))
            .bearer_auth(token)
            .json(&all_modes_policy())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        area_a_error(&response.json().await.unwrap(), "POLICY_NOT_FOUND");
    }

    // Cursor pagination over five policies, two at a time.
    for n in 0..4 {
        let mut p = all_modes_policy();
        p["name"] = json!(format!("p{n}"));
        t.policy(p).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = t.app.url("/policies?limit=2");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page: Value = t
            .app
            .http
            .get(url)
            .bearer_auth(&t.admin)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(page["items"].as_array().unwrap().len() <= 2);
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["policy_id"].as_str().unwrap().to_owned()),
        );
        assert_eq!(page["pagination"]["limit"], 2);
        if page["pagination"]["has_more"] == false {
            assert!(page["pagination"].get("next_cursor").is_none());
            break;
        }
        cursor = Some(
            page["pagination"]["next_cursor"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[0], id);
    let other: Value = t
        .app
        .http
        .get(t.app.url("/policies"))
        .bearer_auth(&other_admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(other["items"], json!([]));

    for query in ["limit=0", "limit=101", "limit=x", "cursor=AAAA", "other=1"] {
        let response = t
            .app
            .http
            .get(t.app.url(&format!("/policies?{query}")))
            .bearer_auth(&t.admin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{query}");
        area_a_error(&response.json().await.unwrap(), "INVALID_INPUT");
    }
    // Any user of the tenant reads policies (the spec's role model)...
    let analyst = t.app.token("acme", "bob", &["analyst"]);
    let response = t
        .app
        .http
        .get(t.app.url("/policies"))
        .bearer_auth(&analyst)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // ...but only an admin writes one: a policy says who may detokenize, and a user who could
    // write it could give their own role that right.
    let escalate = json!({
        "name": "mine", "type_rules": {"us_ssn": {"mode": "deterministic"}},
        "allowed_roles": ["analyst"], "allowed_purposes": ["x"], "require_reason": false
    });
    let writes = [
        t.app.http.post(t.app.url("/policies")),
        t.app.http.put(t.app.url(&format!("/policies/{id}"))),
    ];
    for request in writes {
        let response = request
            .bearer_auth(&analyst)
            .json(&escalate)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        let error = area_a_error(&response.json().await.unwrap(), "FORBIDDEN");
        assert_eq!(error["message"], "this operation requires the admin role");
    }
    let (status, all) = t.get(&t.admin, "/policies?limit=100").await;
    assert_eq!(status, 200, "{all}");
    for p in all["items"].as_array().unwrap() {
        assert_ne!(p["name"], "mine", "{p}");
        assert_ne!(p["allowed_roles"], json!(["analyst"]), "{p}");
    }
    // A deployment sets another role for them, or any user, as it does for usage.
    let strict = Tokens::spawn_with(|env| {
        env.insert(
            "DPS_ROLE_REQUIREMENTS".into(),
            "tokenization_policies=policy_admin, usage=auditor".into(),
        );
    })
    .await;
    let response = strict
        .app
        .http
        .get(strict.app.url("/usage"))
        .bearer_auth(strict.app.token("acme", "bob", &["support"]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let error = area_a_error(&response.json().await.unwrap(), "FORBIDDEN");
    assert_eq!(error["message"], "this operation requires the auditor role");
    let response = strict
        .app
        .http
        .post(strict.app.url("/policies"))
        .bearer_auth(strict.app.token("acme", "bob", &["policy_admin"]))
        .json(&escalate)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let response = t.app.http.get(t.app.url("/policies")).send().await.unwrap();
    assert_eq!(response.status(), 401);
    area_a_error(&response.json().await.unwrap(), "UNAUTHORIZED");
}

#[tokio::test]
async fn tokenize_gives_each_mode_its_token_and_writes_one_entry_per_value() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let body = json!({
        "policy_id": policy,
        "items": [
            item("123-45-6789", "us_ssn"),
            item("046 454 286", "ca_sin"),
            item("Ann.Lee+news@Example.com", "email"),
            item("+1 (202) 555-0123", "phone"),
            item("March 4, 1980", "dob"),
            item("ab123456", "passport_ca"),
            { "value": "123 45 6789", "pii_type": "us_ssn" },
            { "value": "123-45-6789", "pii_type": "us_ssn", "mode": "format_preserving" }
        ]
    });
    let (status, first) = t.tokenize(body.clone()).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["success_count"], 8);
    assert_eq!(first["failure_count"], 0);
    assert_eq!(first["batch_policy_version"], 1);
    assert!(uuid::Uuid::parse_str(first["trace_id"].as_str().unwrap()).is_ok());
    let r = first["results"].as_array().unwrap();
    for (i, result) in r.iter().enumerate() {
        assert_eq!(result["index"], i);
        assert_eq!(result["status"], "TOKENIZED");
        assert!(result["token_id"].is_string());
    }
    let token = |i: usize| r[i]["token"].as_str().unwrap().to_owned();
    assert!(token(0).starts_with("dtk_"));
    assert_eq!(r[0]["mode"], "deterministic");
    // The same SSN written differently is the same value: same token, same entry.
    assert_eq!(token(0), token(6));
    assert_eq!(r[0]["token_id"], r[6]["token_id"]);
    // Format-preserving tokens keep the shape.
    let sin = token(1);
    assert_eq!(sin.len(), 11);
    assert_eq!(&sin[3..4], " ");
    assert_ne!(sin, "046 454 286");
    assert!(token(2).starts_with("rtk_"));
    assert!(token(3).starts_with("+1 (") && token(3).len() == "+1 (202) 555-0123".len());
    let dob = token(4);
    assert!(dob.contains(", ") && dob != "March 4, 1980", "{dob}");
    let ssn_fpe = token(7);
    assert_eq!(ssn_fpe.len(), 11);
    assert_eq!(r[7]["mode"], "format_preserving");

    // Again: deterministic and format-preserving values find their entries; randomized ones
    // get new ones.
    let (_, second) = t.tokenize(body).await;
    let r2 = second["results"].as_array().unwrap();
    for i in [0, 1, 3, 4, 5, 7] {
        assert_eq!(r2[i]["token"], r[i]["token"], "item {i}");
        assert_eq!(r2[i]["token_id"], r[i]["token_id"], "item {i}");
    }
    assert_ne!(r2[2]["token"], r[2]["token"]);
    assert_eq!(t.entries().await, 8);

    // Deterministic scope `policy`: the same passport under another policy is another token;
    // scope `global` SSNs are the same across policies.
    let other = t.policy(all_modes_policy()).await;
    let (_, third) = t
        .tokenize(json!({ "policy_id": other, "items": [item("AB123456", "passport_ca"), item("123-45-6789", "us_ssn")] }))
        .await;
    assert_ne!(third["results"][0]["token"], r[5]["token"]);
    assert_eq!(third["results"][1]["token"], r[0]["token"]);
}

#[tokio::test]
async fn failed_items_carry_precise_codes_and_best_effort_writes_the_rest() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let (status, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "items": [
                item("123-45-6789", "us_ssn"),
                item("   ", "us_ssn"),
                item("123-45-6789", "us_zip"),
                item("000-12-3456", "us_ssn"),
                item("1234.50", "monetary"),
                { "value": "123-45-6789", "pii_type": "us_ssn", "mode": "scrambled" }
            ]
        }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success_count"], 1);
    assert_eq!(body["failure_count"], 5);
    let codes: Vec<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["error"]["code"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        codes,
        [
            "-",
            "EMPTY_VALUE",
            "UNSUPPORTED_PII_TYPE",
            "INVALID_VALUE",
            "NO_RULE_FOR_TYPE",
            "INVALID_MODE"
        ]
    );
    for r in body["results"].as_array().unwrap().iter().skip(1) {
        assert_eq!(r["status"], "FAILED");
        assert!(r.get("token").is_none());
    }
    assert!(!body.to_string().contains("000-12-3456"));
    assert_eq!(t.entries().await, 1);
}

#[tokio::test]
async fn an_all_or_nothing_batch_with_one_bad_item_writes_nothing() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let (status, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "batch_mode": "ALL_OR_NOTHING",
            "items": [item("123-45-6789", "us_ssn"), item("046 454 287", "ca_sin"), item("", "email")]
        }))
        .await;
    assert_eq!(status, 400, "{body}");
    let error = area_a_error(&body, "INVALID_VALUE");
    assert!(
        error["detail"].as_str().unwrap().contains("item 1"),
        "{error}"
    );
    assert!(
        error["detail"].as_str().unwrap().contains("item 2"),
        "{error}"
    );
    let results = error["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["status"], "SKIPPED");
    assert_eq!(results[1]["status"], "FAILED");
    assert_eq!(results[2]["error"]["code"], "EMPTY_VALUE");
    assert_eq!(t.entries().await, 0);

    // The same batch without the bad items is written whole.
    let (status, body) = t
        .tokenize(json!({ "policy_id": policy, "batch_mode": "ALL_OR_NOTHING", "items": [item("123-45-6789", "us_ssn")] }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(t.entries().await, 1);
}

#[tokio::test]
async fn a_dry_run_previews_determinable_tokens_and_writes_nothing() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let body = json!({
        "policy_id": policy,
        "items": [item("123-45-6789", "us_ssn"), item("ann@example.com", "email"), item("046 454 286", "ca_sin"), item("bad", "us_ssn")]
    });
    let (status, preview) = t.tokenize_at("/tokenize?dry_run=true", body.clone()).await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(t.entries().await, 0);
    let p = preview["results"].as_array().unwrap();
    assert_eq!(p[0]["token_id"], Value::Null);
    assert_eq!(
        p[1]["token"],
        Value::Null,
        "a randomized token cannot be known in advance"
    );
    assert_eq!(p[3]["error"]["code"], "INVALID_VALUE");

    let (_, real) = t.tokenize(body).await;
    assert_eq!(real["results"][0]["token"], p[0]["token"]);
    assert_eq!(real["results"][2]["token"], p[2]["token"]);
    assert_eq!(t.entries().await, 3);
}

#[tokio::test]
async fn fail_open_still_protects_what_the_rules_cannot_handle() {
    let t = Tokens::spawn().await;
    let mut definition = all_modes_policy();
    definition["failure_mode"] = json!("fail_open");
    let policy = t.policy(definition).await;
    let (status, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "items": [item("000-12-3456", "us_ssn"), item("$12.50", "monetary"), item("", "us_ssn")]
        }))
        .await;
    assert_eq!(status, 200, "{body}");
    let r = body["results"].as_array().unwrap();
    for (i, code) in [(0, "INVALID_VALUE"), (1, "NO_RULE_FOR_TYPE")] {
        assert_eq!(r[i]["status"], "TOKENIZED");
        assert_eq!(r[i]["mode"], "randomized");
        assert!(r[i]["token"].as_str().unwrap().starts_with("rtk_"));
        assert_eq!(r[i]["fallback"]["reason_code"], code);
    }
    // An empty value is never "handled": there is nothing to protect.
    assert_eq!(r[2]["error"]["code"], "EMPTY_VALUE");
    assert_eq!(t.entries().await, 2);
}

#[tokio::test]
async fn request_level_problems_answer_in_the_area_a_shape() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let many: Vec<Value> = (0..1001).map(|_| item("123-45-6789", "us_ssn")).collect();
    for (body, code, status) in [
        (
            json!({ "policy_id": policy, "items": [] }),
            "INVALID_INPUT",
            400,
        ),
        (
            json!({ "policy_id": policy, "items": many }),
            "INVALID_INPUT",
            400,
        ),
        (
            json!({ "policy_id": policy, "items": [item("1", "us_ssn")], "batch_mode": "SOMETIMES" }),
            "INVALID_INPUT",
            400,
        ),
        (
            json!({ "policy_id": policy, "items": [item("1", "us_ssn")], "idempotency_key": "k".repeat(257) }),
            "INVALID_INPUT",
            400,
        ),
        (
            json!({ "items": [item("1", "us_ssn")] }),
            "INVALID_INPUT",
            400,
        ),
        (
            json!({ "policy_id": uuid::Uuid::new_v4().to_string(), "items": [item("1", "us_ssn")] }),
            "POLICY_NOT_FOUND",
            404,
        ),
    ] {
        let (got, response) = t.tokenize(body).await;
        assert_eq!(got, status, "{response}");
        area_a_error(&response, code);
    }
    // Another tenant's policy is not found either.
    let globex_key = api_key(&t.app, "globex").await;
    let response = t
        .app
        .http
        .post(t.app.url("/tokenize"))
        .header("X-API-Key", globex_key)
        .json(&json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    area_a_error(&response.json().await.unwrap(), "POLICY_NOT_FOUND");

    // No key, an unknown key, and an access token instead of a key: 401.
    for key in [
        None,
        Some("dpsk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        let mut request = t
            .app
            .http
            .post(t.app.url("/tokenize"))
            .bearer_auth(&t.admin);
        if let Some(key) = key {
            request = request.header("X-API-Key", key);
        }
        let response = request
            .json(&json!({ "policy_id": policy, "items": [item("123-45-6789", "us_ssn")] }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
        area_a_error(&response.json().await.unwrap(), "UNAUTHORIZED");
    }
}

#[tokio::test]
async fn concurrent_tokenization_of_the_same_values_makes_one_entry_each() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let body = json!({
        "policy_id": policy,
        "items": [item("123-45-6789", "us_ssn"), item("046 454 286", "ca_sin"), item("March 4, 1980", "dob")]
    });
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let request = t
            .app
            .http
            .post(t.app.url("/tokenize"))
            .header("X-API-Key", &t.api_key)
            .json(&body);
        tasks.spawn(async move { request.send().await.unwrap().json::<Value>().await.unwrap() });
    }
    let mut tokens = std::collections::BTreeSet::new();
    while let Some(response) = tasks.join_next().await {
        let response = response.unwrap();
        assert_eq!(response["success_count"], 3, "{response}");
        for r in response["results"].as_array().unwrap() {
            tokens.insert((
                r["index"].to_string(),
                r["token"].to_string(),
                r["token_id"].to_string(),
            ));
        }
    }
    assert_eq!(tokens.len(), 3, "{tokens:?}");
    assert_eq!(t.entries().await, 3);
}

#[tokio::test]
async fn surrogates_are_unique_within_the_tenant() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let items: Vec<Value> = (1..=28)
        .flat_map(|d| {
            [
                item(&format!("2001-02-{d:02}"), "dob"),
                item(&format!("1999-07-{d:02}"), "dob"),
            ]
        })
        .collect();
    let (status, body) = t
        .tokenize(json!({ "policy_id": policy, "items": items }))
        .await;
    assert_eq!(status, 200, "{body}");
    let tokens: std::collections::BTreeSet<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["token"].as_str().unwrap())
        .collect();
    assert_eq!(tokens.len(), 56);
}

#[tokio::test]
async fn no_tokenized_value_appears_anywhere_in_a_database_dump() {
    let t = Tokens::spawn().await;
    let mut definition = all_modes_policy();
    definition["type_rules"]["monetary"] = json!({ "mode": "deterministic" });
    definition["type_rules"]["case_number"] = json!({ "mode": "randomized" });
    let policy = t.policy(definition).await;
    let values = [
        ("123-45-6789", "us_ssn", vec!["123-45-6789", "123456789"]),
        ("046 454 286", "ca_sin", vec!["046 454 286", "046454286"]),
        (
            "Zelda.Quartz+promo@Example.org",
            "email",
            vec!["zelda.quartz", "Zelda.Quartz"],
        ),
        ("+1 (202) 555-0187", "phone", vec!["2025550187", "555-0187"]),
        ("March 4, 1980", "dob", vec!["March 4, 1980", "1980-03-04"]),
        ("$98,765.43", "monetary", vec!["98765.43", "98,765.43"]),
        (
            "cv-2023 00471",
            "case_number",
            vec!["CV-2023 00471", "2023 00471"],
        ),
        ("qz 918273", "passport_ca", vec!["QZ918273", "918273"]),
    ];
    let items: Vec<Value> = values.iter().map(|(v, ty, _)| item(v, ty)).collect();
    let (status, body) = t
        .tokenize(json!({ "policy_id": policy, "items": items }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success_count"], 8, "{body}");
    let dump = testkit::pg_dump(&t.app.db);
    // The dump holds the entries (their tokens are there), so the absence below means something.
    let ssn_token = body["results"][0]["token"].as_str().unwrap();
    assert!(dump.contains(ssn_token), "the dump holds the vault");
    for (raw, _, forms) in &values {
        assert!(!dump.contains(raw), "{raw} is in the dump");
        for form in forms {
            assert!(!dump.contains(form), "{form} is in the dump");
        }
    }
}

impl Tokens {
    /// Sends a tokenize body and returns the status and the raw body bytes.
    async fn tokenize_raw(&self, key: &str, body: &Value) -> (u16, Vec<u8>) {
        let response = self
            .app
            .http
            .post(self.app.url("/tokenize"))
            .header("X-API-Key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        (
            response.status().as_u16(),
            response.bytes().await.unwrap().to_vec(),
        )
    }
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_response_byte_for_byte() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let body = json!({
        "policy_id": policy,
        "idempotency_key": "order-7781",
        "items": [item("ann@example.com", "email"), item("123-45-6789", "us_ssn")]
    });
    let (status, first) = t.tokenize_raw(&t.api_key, &body).await;
    assert_eq!(status, 200);
    let (status, again) = t.tokenize_raw(&t.api_key, &body).await;
    assert_eq!(status, 200);
    assert_eq!(first, again, "a retry replays the stored bytes");
    assert_eq!(t.entries().await, 2, "the randomized item was written once");

    // The same key with another body is refused.
    let mut other = body.clone();
    other["items"][0] = item("bob@example.com", "email");
    let (status, response) = t.tokenize(other).await;
    assert_eq!(status, 409);
    area_a_error(&response, "IDEMPOTENCY_KEY_REUSED");

    // Keys belong to their tenant.
    let globex_key = api_key(&t.app, "globex").await;
    let globex_admin = t.app.token("globex", "gina", &["admin"]);
    let created: Value = t
        .app
        .http
        .post(t.app.url("/policies"))
        .bearer_auth(globex_admin)
        .json(&all_modes_policy())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut theirs = body.clone();
    theirs["policy_id"] = created["policy_id"].clone();
    let (status, _) = t.tokenize_raw(&globex_key, &theirs).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn concurrent_retries_with_one_key_write_once() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let body = json!({
        "policy_id": policy,
        "idempotency_key": "batch-42",
        "items": [item("ann@example.com", "email"), item("bob@example.com", "email"), item("cy@example.com", "email")]
    });
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let request = t
            .app
            .http
            .post(t.app.url("/tokenize"))
            .header("X-API-Key", &t.api_key)
            .json(&body);
        tasks.spawn(async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.bytes().await.unwrap().to_vec(),
            )
        });
    }
    let mut bodies = std::collections::BTreeSet::new();
    while let Some(result) = tasks.join_next().await {
        let (status, bytes) = result.unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        bodies.insert(bytes);
    }
    assert_eq!(bodies.len(), 1, "every retry got the same bytes");
    assert_eq!(t.entries().await, 3);
}

#[tokio::test]
async fn a_rejected_batch_does_not_keep_its_idempotency_key() {
    let t = Tokens::spawn().await;
    let policy = t.policy(all_modes_policy()).await;
    let bad = json!({
        "policy_id": policy,
        "idempotency_key": "fix-and-retry",
        "batch_mode": "ALL_OR_NOTHING",
        "items": [item("123-45-6789", "us_ssn"), item("000-00-0000", "us_ssn")]
    });
    let (status, _) = t.tokenize(bad.clone()).await;
    assert_eq!(status, 400);
    let mut fixed = bad;
    fixed["items"][1] = item("234-56-7890", "us_ssn");
    let (status, body) = t.tokenize(fixed).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(t.entries().await, 2);
}

#[tokio::test]
async fn amounts_in_two_currencies_are_two_values() {
    let t = Tokens::spawn().await;
    let mut definition = all_modes_policy();
    definition["type_rules"]["monetary"] = json!({ "mode": "deterministic" });
    let policy = t.policy(definition).await;
    let (status, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "items": [
                item("€100.00", "monetary"),
                item("£100.00", "monetary"),
                item("EUR 100.00", "monetary"),
            ]
        }))
        .await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["token_id"].as_str().unwrap())
        .collect();
    assert_ne!(ids[0], ids[1], "pounds are not euros: {body}");
    assert_eq!(ids[0], ids[2], "one currency, one value: {body}");
    assert_eq!(t.entries().await, 2);
}

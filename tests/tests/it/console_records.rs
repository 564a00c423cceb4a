//! The console's audit log, settings and tokenization pages over HTTP, as a browser sends
//! them: every page for an admin, what an analyst sees and is refused, forged forms refused,
//! refusals beside their forms, and hostile text shown as text. (The journeys in a real
//! browser are in `console_records_browser`.)

use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
use integration_tests::{Service, TestApp, TestDatabase};
use reqwest::Method;
use serde_json::{Value, json};

use crate::Client;
use crate::console::Visitor;
use crate::tokenize::{Tokens, all_modes_policy, api_key, item};

pub(crate) const HOSTILE: &str = "<img src=x onerror=alert(1)>\"><script>alert(1)</script>";

/// Asserts `body` shows `HOSTILE` as text only.
pub(crate) fn shown_as_text(body: &str) {
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(!body.contains("<script>"), "{body}");
    assert!(
        body.contains("&#60;img src=x onerror=alert(1)&#62;"),
        "{body}"
    );
}

/// platform-api's `Extra` changed as `TestApp::spawn_console` changes it: the dev sign-in of
/// `admin` (admin, analyst) and `analyst` (analyst) of `acme`.
pub(crate) fn dev_sign_in(extra: &mut platform_api::Extra) {
    integration_tests::dev_console("acme")(extra);
}

/// platform-api with the console's dev sign-in and tokens-api over one database with the
/// same master key, as deployed.
pub(crate) async fn with_tokens() -> (TestApp, Tokens) {
    let master = {
        use base64::Engine as _;
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        base64::engine::general_purpose::STANDARD.encode(key)
    };
    let m = master.clone();
    let platform = TestApp::spawn_changed(
        Service::Platform,
        testkit::database().await,
        |env| {
            env.insert("DPS_MASTER_KEY".into(), m);
        },
        dev_sign_in,
    )
    .await;
    let db = TestDatabase {
        name: platform.db.name.clone(),
        url: platform.db.url.clone(),
    };
    let app = TestApp::spawn_on(Service::Tokens, db, |env| {
        env.insert("DPS_MASTER_KEY".into(), master);
    })
    .await;
    let admin = app.token("acme", "alice", &["admin"]);
    let api_key = api_key(&app, "acme").await;
    (
        platform,
        Tokens {
            app,
            admin,
            api_key,
        },
    )
}

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

/// A policy named `HOSTILE`, two values tokenized under it, and `sam` shown the first
/// through a grant. Returns the token ids.
pub(crate) async fn sam_saw_a_token(t: &Tokens) -> Vec<String> {
    let mut definition = all_modes_policy();
    definition["name"] = json!(HOSTILE);
    let policy = t.policy(definition).await;
    let (status, body) = t
        .tokenize(json!({
            "policy_id": policy,
            "items": [item("123-45-6789", "us_ssn"), item("ann.lee@example.com", "email")]
        }))
        .await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<String> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["token_id"].as_str().unwrap().to_owned())
        .collect();
    let sam = t.app.token("acme", "sam", &["support"]);
    let (status, body) = post(
        t,
        &sam,
        "/grant",
        json!({ "token_ids": [ids[0]], "purpose": "fraud_review", "reason": "case 42" }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let grant = body["grant_jwt"].as_str().unwrap().to_owned();
    let (status, body) = post(
        t,
        &sam,
        "/detokenize",
        json!({ "tokens": [ids[0]], "grant_jwt": grant }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    ids
}

/// Appends an entry whose resource and details are `HOSTILE`, as any writer of the log would.
pub(crate) async fn hostile_audit_entry(app: &TestApp) {
    let mut conn = app.conn().await;
    let entry = audit::NewEntry::new(audit::Kind::PolicyEvaluated, audit::Actor::System)
        .resource(HOSTILE)
        .details(json!({ "note": HOSTILE }));
    let tenant: ids::TenantId = "acme".parse().unwrap();
    conn.transaction(async |conn| audit::append(conn, &tenant, &[entry]).await)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_audit_log_shows_its_entries_as_text_and_whether_the_chain_holds() {
    let app = TestApp::spawn_console("acme").await;
    hostile_audit_entry(&app).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("analyst").await;
    let page = visitor.get("/console/audit").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Hash chain verified"), "{}", page.body);
    assert!(page.body.contains("policy_evaluated"), "{}", page.body);
    shown_as_text(&page.body);
    // The API's filters, and a refused one beside the form.
    let filtered = visitor.get("/console/audit?action_type=mask").await;
    assert!(
        filtered.body.contains("No entries match"),
        "{}",
        filtered.body
    );
    let refused = visitor.get("/console/audit?action_type=nonsense").await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
    assert!(refused.body.contains("action_type must be one of"));
    let refused = visitor.get("/console/audit?since=yesterday").await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);

    // Someone with the database owner's rights changes the entry: the page says where.
    let mut conn = app.conn().await;
    diesel::sql_query("ALTER TABLE audit_log DISABLE TRIGGER USER")
        .execute(&mut conn)
        .await
        .unwrap();
    diesel::sql_query("UPDATE audit_log SET details = '{\"note\": \"quiet\"}' WHERE seq = 1")
        .execute(&mut conn)
        .await
        .unwrap();
    let page = visitor.get("/console/audit").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("Hash chain broken at seq 1."),
        "{}",
        page.body
    );
    assert!(page.body.contains("it was changed"), "{}", page.body);
}

#[tokio::test]
async fn an_admin_changes_each_setting_and_a_bad_value_is_refused_beside_its_form() {
    let app = TestApp::spawn_console("acme").await;
    let api = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("admin").await;
    let page = visitor.get("/console/settings").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = page.field("csrf");

    let saved = visitor
        .post(
            "/console/settings/rollback-window",
            &[("csrf", &csrf), ("retention_hours", "168")],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(
        saved.location(),
        "/console/settings?saved=rollback-window#rollback-window"
    );
    let (_, body) = api.send(Method::GET, "/settings/lkg-retention", None).await;
    assert_eq!(body["data"]["retention_hours"], 168, "{body}");
    let page = visitor.get("/console/settings?saved=rollback-window").await;
    assert!(page.body.contains("Rollback window saved."));
    assert!(
        page.body.contains("<option value=\"168\" selected>"),
        "{}",
        page.body
    );

    let saved = visitor
        .post(
            "/console/settings/deny-list",
            &[
                ("csrf", &csrf),
                ("denied_safety_classes", "destructive"),
                ("denied_safety_classes", "infrastructure"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let (_, body) = api
        .send(Method::GET, "/settings/remediation-policy", None)
        .await;
    assert_eq!(
        body["data"]["denied_safety_classes"],
        json!(["destructive", "infrastructure"]),
        "{body}"
    );

    // Refusals, with the settings' own words, beside their forms; nothing changes.
    let refused = visitor
        .post(
            "/console/settings/rollback-window",
            &[("csrf", &csrf), ("retention_hours", "48")],
        )
        .await;
    assert_eq!(refused.status, 200);
    assert!(
        refused
            .body
            .contains("<p class=\"error\" role=\"alert\" id=\"window-error\">retention_hours must be exactly 24, 72 or 168</p>"),
        "{}",
        refused.body
    );
    let refused = visitor
        .post(
            "/console/settings/deny-list",
            &[
                ("csrf", &csrf),
                ("denied_safety_classes", "governance"),
                ("denied_safety_classes", HOSTILE),
            ],
        )
        .await;
    assert_eq!(refused.status, 200);
    assert!(
        refused
            .body
            .contains("id=\"deny-error\">denied_safety_classes[1] is not a safety class"),
        "{}",
        refused.body
    );
    assert!(!refused.body.contains("<img src=x"));
    // The form keeps what was ticked.
    assert!(
        refused.body.contains("value=\"governance\" checked"),
        "{}",
        refused.body
    );
    let refused = visitor
        .post(
            "/console/settings/co-signing",
            &[
                ("csrf", &csrf),
                ("mode", "disabled"),
                ("endpoint_url", "http://cosign.example.com/sign"),
            ],
        )
        .await;
    assert_eq!(refused.status, 200);
    assert!(
        refused
            .body
            .contains("id=\"cosign-error\">endpoint_url must use https"),
        "{}",
        refused.body
    );
    assert!(
        refused
            .body
            .contains("value=\"http://cosign.example.com/sign\"")
    );
    let (_, body) = api
        .send(Method::GET, "/settings/remediation-policy", None)
        .await;
    assert_eq!(
        body["data"]["denied_safety_classes"],
        json!(["destructive", "infrastructure"])
    );

    // A forged form is refused and changes nothing.
    let forged = visitor
        .post(
            "/console/settings/rollback-window",
            &[("csrf", "forged"), ("retention_hours", "24")],
        )
        .await;
    assert_eq!(forged.status, 403);
    let (_, body) = api.send(Method::GET, "/settings/lkg-retention", None).await;
    assert_eq!(body["data"]["retention_hours"], 168);
    // Each change was audited, and the audit page says so.
    let audit = visitor.get("/console/audit").await;
    assert!(
        audit.body.contains("lkg_retention_changed"),
        "{}",
        audit.body
    );
    assert!(audit.body.contains("remediation_policy_changed"));
}

#[tokio::test]
async fn an_analyst_has_no_settings_and_no_tokenization_controls() {
    let (app, t) = with_tokens().await;
    sam_saw_a_token(&t).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("analyst").await;
    let settings = visitor.get("/console/settings").await;
    assert_eq!(settings.status, 403, "{}", settings.body);
    let overview = visitor.get("/console").await;
    let csrf = overview.field("csrf");
    assert!(!overview.body.contains("href=\"/console/settings\""));
    let refused = visitor
        .post(
            "/console/settings/rollback-window",
            &[("csrf", &csrf), ("retention_hours", "24")],
        )
        .await;
    assert_eq!(refused.status, 403);

    let page = visitor.get("/console/tokenization").await;
    assert_eq!(page.status, 200, "{}", page.body);
    shown_as_text(&page.body);
    assert!(!page.body.contains("New policy"), "{}", page.body);
    assert!(!page.body.contains("/console/tokenization/policies/"));
    assert!(!page.body.contains("/console/tokenization/detokenizations"));
    for path in [
        "/console/tokenization/detokenizations",
        "/console/tokenization/policies/new",
    ] {
        assert_eq!(visitor.get(path).await.status, 403, "{path}");
    }
    let refused = visitor
        .post(
            "/console/tokenization/policies",
            &[
                ("csrf", &csrf),
                ("name", "mine"),
                ("mode.us_ssn", "randomized"),
            ],
        )
        .await;
    assert_eq!(refused.status, 403);
}

#[tokio::test]
async fn the_tokenization_page_shows_policies_tokens_and_usage_never_a_value() {
    let (app, t) = with_tokens().await;
    let ids = sam_saw_a_token(&t).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("admin").await;
    let page = visitor.get("/console/tokenization").await;
    assert_eq!(page.status, 200, "{}", page.body);
    shown_as_text(&page.body);
    for id in &ids {
        assert!(page.body.contains(id.as_str()), "{}", page.body);
    }
    assert!(!page.body.contains("123-45-6789") && !page.body.contains("123456789"));
    assert!(!page.body.contains("ann.lee@example.com"));
    assert!(page.body.contains("Usage this month"), "{}", page.body);
    assert!(page.body.contains("New policy"));
    // The vault's filters, as the API's; a refused one beside the form.
    let filtered = visitor.get("/console/tokenization?pii_type=email").await;
    assert!(filtered.body.contains(ids[1].as_str()));
    assert!(!filtered.body.contains(ids[0].as_str()));
    let refused = visitor.get("/console/tokenization?pii_type=nonsense").await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);

    // Who saw the first token: sam, and only through that grant.
    let who = visitor
        .get(&format!(
            "/console/tokenization/detokenizations?token_id={}",
            ids[0]
        ))
        .await;
    assert_eq!(who.status, 200, "{}", who.body);
    assert!(
        who.body.contains("<ul id=\"saw\"><li>sam</li></ul>"),
        "{}",
        who.body
    );
    let none = visitor
        .get(&format!(
            "/console/tokenization/detokenizations?token_id={}",
            ids[1]
        ))
        .await;
    assert!(none.body.contains("No one was shown"), "{}", none.body);
    let by_user = visitor
        .get("/console/tokenization/detokenizations?user=sam")
        .await;
    assert!(by_user.body.contains("fraud_review"), "{}", by_user.body);
    let nobody = visitor
        .get("/console/tokenization/detokenizations?user=sue")
        .await;
    assert!(
        nobody.body.contains("No attempt matches"),
        "{}",
        nobody.body
    );
    let refused = visitor
        .get("/console/tokenization/detokenizations?since=soon")
        .await;
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
}

#[tokio::test]
async fn an_admin_creates_and_edits_a_tokenization_policy_with_the_apis_validation() {
    let (app, t) = with_tokens().await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("admin").await;
    let form = visitor.get("/console/tokenization/policies/new").await;
    assert_eq!(form.status, 200, "{}", form.body);
    let csrf = form.field("csrf");

    // Every problem beside the form, which keeps what was typed.
    let refused = visitor
        .post(
            "/console/tokenization/policies",
            &[
                ("csrf", &csrf),
                ("name", HOSTILE),
                ("allowed_roles", "support"),
                ("default_region", "Atlantis"),
            ],
        )
        .await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
    assert!(
        refused
            .body
            .contains("type_rules: must hold a rule for at least one PII type")
    );
    assert!(refused.body.contains("default_region: must be an ISO 3166"));
    shown_as_text(&refused.body);
    let refused = visitor
        .post(
            "/console/tokenization/policies",
            &[
                ("csrf", &csrf),
                ("name", "n"),
                ("mode.email", "randomized"),
                ("min_confidence.email", "high"),
            ],
        )
        .await;
    assert!(
        refused
            .body
            .contains("type_rules.email.min_confidence: must be a number"),
        "{}",
        refused.body
    );

    let saved = visitor
        .post(
            "/console/tokenization/policies",
            &[
                ("csrf", &csrf),
                ("name", HOSTILE),
                ("mode.us_ssn", "deterministic"),
                ("min_confidence.us_ssn", "0.8"),
                ("scope.us_ssn", "policy"),
                ("allowed_roles", "support auditor"),
                ("allowed_purposes", "fraud_review"),
                ("require_reason", "on"),
                ("failure_mode", "fail-closed"),
                ("default_region", "CA"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let (status, listed) = t.get(&t.admin, "/policies").await;
    assert_eq!(status, 200);
    let policy = &listed["items"][0];
    assert_eq!(policy["name"], HOSTILE);
    assert_eq!(policy["allowed_roles"], json!(["support", "auditor"]));
    assert_eq!(
        policy["type_rules"]["us_ssn"]["deterministic_scope"],
        "policy"
    );
    assert_eq!(policy["default_region"], "CA");
    let id = policy["policy_id"].as_str().unwrap();

    let edit = visitor
        .get(&format!("/console/tokenization/policies/{id}"))
        .await;
    assert_eq!(edit.status, 200, "{}", edit.body);
    shown_as_text(&edit.body);
    assert!(edit.body.contains("version 1"));
    let saved = visitor
        .post(
            &format!("/console/tokenization/policies/{id}"),
            &[
                ("csrf", &csrf),
                ("name", "renamed"),
                ("mode.email", "randomized"),
                ("allowed_roles", "support"),
                ("failure_mode", "fail-open"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let (_, listed) = t.get(&t.admin, "/policies").await;
    assert_eq!(listed["items"][0]["version"], 2);
    assert_eq!(listed["items"][0]["name"], "renamed");
    assert_eq!(listed["items"][0]["failure_mode"], "fail-open");

    // A forged form changes nothing; an unknown policy is a 404 page.
    let forged = visitor
        .post(
            &format!("/console/tokenization/policies/{id}"),
            &[
                ("csrf", "forged"),
                ("name", "x"),
                ("mode.email", "randomized"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
    let missing = visitor
        .get(&format!(
            "/console/tokenization/policies/{}",
            uuid::Uuid::new_v4()
        ))
        .await;
    assert_eq!(missing.status, 404);
}

//! Tenant settings over HTTP (admin only, the caller's tenant). The remediation gate has no
//! HTTP surface: crates/settings/tests covers it through the Rust API.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl as _;
use integration_tests::{Service, TestApp};
use serde_json::{Value, json};

use crate::area_b_error;

struct Admin<'a> {
    app: &'a TestApp,
    token: String,
}

impl<'a> Admin<'a> {
    fn of(app: &'a TestApp, tenant: &str, user: &str) -> Self {
        Self {
            app,
            token: app.token(tenant, user, &["admin"]),
        }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .app
            .http
            .get(self.app.url(path))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    async fn put(&self, path: &str, body: Value) -> (u16, Value) {
        self.put_raw(path, "application/json", body.to_string())
            .await
    }

    async fn put_raw(&self, path: &str, content_type: &str, body: String) -> (u16, Value) {
        let response = self
            .app
            .http
            .put(self.app.url(path))
            .bearer_auth(&self.token)
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn audit_count(app: &TestApp, tenant: &str, event: &str) -> i64 {
    let mut conn = app.conn().await;
    diesel::sql_query("SELECT count(*) AS n FROM audit_log WHERE tenant_id = $1 AND kind = $2")
        .bind::<Text, _>(tenant)
        .bind::<Text, _>(event)
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .n
}

#[tokio::test]
async fn the_rollback_window_takes_only_24_72_or_168_and_audits_each_change_once() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Admin::of(&app, "acme", "alice");

    let (status, body) = admin.get("/settings/lkg-retention").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    let data = &body["data"];
    assert_eq!(data["retention_hours"], 72);
    assert_eq!(data["default_hours"], 72);
    assert_eq!(data["allowed_options"], json!([24, 72, 168]));
    assert_eq!(data["updated_at"], Value::Null);
    assert_eq!(data["updated_by"], Value::Null);
    assert_eq!(data["change_log"], json!([]));

    let (status, body) = admin
        .put("/settings/lkg-retention", json!({ "retention_hours": 168 }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["retention_hours"], 168);
    assert_eq!(body["data"]["updated_by"], "alice");
    assert!(body["data"]["updated_at"].is_string());
    let log = body["data"]["change_log"].as_array().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["from_hours"], 72);
    assert_eq!(log[0]["to_hours"], 168);
    assert_eq!(log[0]["changed_by"], "alice");

    // The same value again is accepted but is not a change.
    let (status, _) = admin
        .put("/settings/lkg-retention", json!({ "retention_hours": 168 }))
        .await;
    assert_eq!(status, 200);
    assert_eq!(audit_count(&app, "acme", "lkg_retention_changed").await, 1);

    let (_, body) = admin
        .put("/settings/lkg-retention", json!({ "retention_hours": 24 }))
        .await;
    let log = body["data"]["change_log"].as_array().unwrap();
    assert_eq!(log.len(), 2, "{body}");
    assert_eq!(
        (log[0]["from_hours"].as_u64(), log[0]["to_hours"].as_u64()),
        (Some(168), Some(24))
    );

    for bad in [
        json!({ "retention_hours": 48 }),
        json!({ "retention_hours": 0 }),
        json!({ "retention_hours": -24 }),
        json!({ "retention_hours": 72.5 }),
        json!({ "retention_hours": "72" }),
        json!({ "retention_hours": null }),
        json!({}),
        json!({ "retention_hours": 72, "extra": true }),
        json!([72]),
    ] {
        let (status, body) = admin.put("/settings/lkg-retention", bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        let error = area_b_error(&body, "VALIDATION_FAILED");
        assert!(
            !error["message"].as_str().unwrap().contains("48"),
            "{error}"
        );
    }
    let (_, body) = admin
        .put("/settings/lkg-retention", json!({ "retention_hours": 48 }))
        .await;
    assert_eq!(body["error"]["details"]["allowed"], json!([24, 72, 168]));
    assert_eq!(body["error"]["details"]["field"], "retention_hours");

    // Nothing that was refused changed anything.
    let (_, body) = admin.get("/settings/lkg-retention").await;
    assert_eq!(body["data"]["retention_hours"], 24);
    assert_eq!(audit_count(&app, "acme", "lkg_retention_changed").await, 2);
}

#[tokio::test]
async fn concurrent_changes_leave_an_unbroken_change_log() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Admin::of(&app, "acme", "alice");
    let values = [24, 72, 168, 24, 168, 72, 24, 168, 168, 72, 24, 24];
    let mut tasks = tokio::task::JoinSet::new();
    for hours in values {
        let request = app
            .http
            .put(app.url("/settings/lkg-retention"))
            .bearer_auth(&admin.token)
            .json(&json!({ "retention_hours": hours }));
        tasks.spawn(async move { request.send().await.unwrap().status().as_u16() });
    }
    while let Some(status) = tasks.join_next().await {
        assert_eq!(status.unwrap(), 200);
    }

    let (_, body) = admin.get("/settings/lkg-retention").await;
    let log = body["data"]["change_log"].as_array().unwrap();
    // Newest first: each entry starts where the next-older one ended, the oldest starts at the
    // default, and the newest ends at the current value.
    for pair in log.windows(2) {
        assert_eq!(pair[0]["from_hours"], pair[1]["to_hours"], "{body}");
    }
    assert_eq!(log.last().unwrap()["from_hours"], 72);
    assert_eq!(log[0]["to_hours"], body["data"]["retention_hours"]);
    assert!(log.iter().all(|e| e["from_hours"] != e["to_hours"]));
}

#[tokio::test]
async fn the_remediation_policy_is_a_deny_list_and_refuses_bad_bodies_as_invalid_safety_class() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Admin::of(&app, "acme", "alice");
    let all = json!([
        "read_only",
        "reversible",
        "destructive",
        "infrastructure",
        "governance",
        "inline_runtime"
    ]);

    let (status, body) = admin.get("/settings/remediation-policy").await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert_eq!(data["tenant_id"], "acme");
    assert_eq!(data["denied_safety_classes"], json!([]));
    assert_eq!(data["allowed_safety_classes"], all);
    assert_eq!(
        data["enforceable_safety_classes"],
        json!(["destructive", "read_only", "reversible"])
    );
    assert_eq!(data["updated_at"], Value::Null);
    assert_eq!(data["updated_by"], Value::Null);

    let (status, body) = admin
        .put(
            "/settings/remediation-policy",
            json!({ "denied_safety_classes": ["governance", "destructive", "destructive"] }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["denied_safety_classes"],
        json!(["destructive", "governance"])
    );
    assert_eq!(
        body["data"]["allowed_safety_classes"],
        json!([
            "read_only",
            "reversible",
            "infrastructure",
            "inline_runtime"
        ])
    );
    assert_eq!(body["data"]["updated_by"], "alice");
    assert_eq!(
        audit_count(&app, "acme", "remediation_policy_changed").await,
        1
    );

    for bad in [
        json!({ "denied_safety_classes": "destructive" }),
        json!({ "denied_safety_classes": ["destructive", "obliterate"] }),
        json!({ "denied_safety_classes": ["DESTRUCTIVE"] }),
        json!({ "denied_safety_classes": [7] }),
        json!({ "denied_safety_classes": null }),
        json!({ "denied_safety_classes": [], "note": "x" }),
        json!({}),
        // A NUL makes an unknown class or field, not a different kind of error.
        json!({ "denied_safety_classes": ["read_only\u{0}"] }),
        json!({ "denied_safety_classes": [], "x\u{0}": 1 }),
    ] {
        let (status, body) = admin.put("/settings/remediation-policy", bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        area_b_error(&body, "invalid_safety_class");
    }
    let (_, body) = admin
        .put(
            "/settings/remediation-policy",
            json!({ "denied_safety_classes": ["reversible", "123-45-6789"] }),
        )
        .await;
    assert_eq!(body["error"]["details"]["index"], 1);
    assert!(!body.to_string().contains("123-45-6789"), "{body}");

    // A body that is not a JSON object at all is malformed, not a safety-class question.
    for malformed in [
        "{\"denied_safety_classes\": [",
        "[\"destructive\"]",
        "\"destructive\"",
    ] {
        let (status, body) = admin
            .put_raw(
                "/settings/remediation-policy",
                "application/json",
                malformed.into(),
            )
            .await;
        assert_eq!(status, 400, "{malformed}");
        area_b_error(&body, "VALIDATION_FAILED");
    }

    // An empty list denies nothing, and it is still an audited setting.
    let (_, before) = admin.get("/settings/remediation-policy").await;
    assert_eq!(
        before["data"]["denied_safety_classes"],
        json!(["destructive", "governance"])
    );
    let (status, body) = admin
        .put(
            "/settings/remediation-policy",
            json!({ "denied_safety_classes": [] }),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["allowed_safety_classes"], all);
    assert_eq!(
        audit_count(&app, "acme", "remediation_policy_changed").await,
        2
    );
}

#[tokio::test]
async fn cosigning_cannot_be_enabled_before_the_platform_is_provisioned() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Admin::of(&app, "acme", "alice");

    let (status, body) = admin.get("/settings/cosigning").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({
            "tenant_id": "acme", "mode": "disabled", "endpoint_url": null,
            "platform_provisioned": false, "updated_at": null, "updated_by": null
        })
    );

    // Whatever the endpoint: missing, not https, or fine.
    for mode in ["optional", "required"] {
        for endpoint in [
            json!("https://cosign.acme.example/sign"),
            json!("http://cosign.acme.example/sign"),
            Value::Null,
        ] {
            let (status, body) = admin
                .put(
                    "/settings/cosigning",
                    json!({ "mode": mode, "endpoint_url": endpoint }),
                )
                .await;
            assert_eq!(status, 422, "{endpoint}: {body}");
            area_b_error(&body, "cosigning_provisioning_incomplete");
        }
    }
    let (status, body) = admin
        .put("/settings/cosigning", json!({ "mode": "disabled" }))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["updated_by"], "alice");

    for bad in [
        json!({ "mode": "disabled", "certificate": "x" }),
        json!({ "mode": "sometimes" }),
        json!({ "endpoint_url": "https://cosign.acme.example" }),
        json!({ "mode": "disabled", "endpoint_url": "http://cosign.acme.example" }),
    ] {
        let (status, body) = admin.put("/settings/cosigning", bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
        area_b_error(&body, "VALIDATION_FAILED");
    }
}

#[tokio::test]
async fn a_provisioned_platform_accepts_cosigning_and_never_returns_its_material() {
    let pki = testkit::cosigner::Pki::new();
    let cert_text = std::fs::read_to_string(&pki.client_cert).unwrap();
    let cert_body = cert_text.lines().nth(1).unwrap().to_owned();
    let dir = pki.dir.clone();
    let (cert_path, key_path) = (
        pki.client_cert.to_string_lossy().into_owned(),
        pki.client_key.to_string_lossy().into_owned(),
    );

    // A certificate with another certificate's key is no identity: the service does not start,
    // and says which variable, not what the files hold.
    let mut env = integration_tests::default_env(&testkit::database().await);
    env.insert("DPS_COSIGNING_CLIENT_CERT_FILE".into(), cert_path.clone());
    env.insert(
        "DPS_COSIGNING_CLIENT_KEY_FILE".into(),
        pki.server_key.to_string_lossy().into_owned(),
    );
    let config = platform_api::Config::from_lookup(&|k| env.get(k).cloned()).unwrap();
    let refused = platform_api::Extra::from_config(&config).unwrap_err();
    assert_eq!(refused.variable, "DPS_COSIGNING_CLIENT_CERT_FILE");
    assert!(!refused.to_string().contains(&cert_body), "{refused}");

    let app = TestApp::spawn_with(Service::Platform, move |env| {
        env.insert("DPS_COSIGNING_CLIENT_CERT_FILE".into(), cert_path);
        env.insert("DPS_COSIGNING_CLIENT_KEY_FILE".into(), key_path);
        // Production's address rules, to see them applied to the endpoint.
        env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "false".into());
    })
    .await;
    let admin = Admin::of(&app, "acme", "alice");

    let (status, body) = admin
        .put("/settings/cosigning", json!({ "mode": "required" }))
        .await;
    assert_eq!(status, 400, "an endpoint is required: {body}");
    // An endpoint the platform may not call is refused when set, not found out when every
    // remediation fails to be co-signed.
    for unreachable in [
        "https://169.254.169.254/latest/",
        "https://10.0.0.5/sign",
        "https://[::ffff:127.0.0.1]/sign",
    ] {
        let (status, body) = admin
            .put(
                "/settings/cosigning",
                json!({ "mode": "required", "endpoint_url": unreachable }),
            )
            .await;
        assert_eq!(status, 400, "{unreachable}: {body}");
        area_b_error(&body, "VALIDATION_FAILED");
    }
    assert_eq!(audit_count(&app, "acme", "cosigning_changed").await, 0);
    let (status, body) = admin
        .put(
            "/settings/cosigning",
            json!({ "mode": "required", "endpoint_url": "https://cosign.acme.example/sign" }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["mode"], "required");
    assert_eq!(body["data"]["platform_provisioned"], true);
    assert_eq!(
        body["data"]["endpoint_url"],
        "https://cosign.acme.example/sign"
    );
    assert_eq!(audit_count(&app, "acme", "cosigning_changed").await, 1);

    let (_, body) = admin.get("/settings/cosigning").await;
    let text = body.to_string();
    assert!(
        !text.contains("BEGIN") && !text.contains(&cert_body),
        "{text}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn settings_belong_to_the_callers_tenant_only() {
    let app = TestApp::spawn(Service::Platform).await;
    let acme = Admin::of(&app, "acme", "alice");
    let globex = Admin::of(&app, "globex", "gina");
    acme.put("/settings/lkg-retention", json!({ "retention_hours": 168 }))
        .await;
    acme.put(
        "/settings/remediation-policy",
        json!({ "denied_safety_classes": ["destructive"] }),
    )
    .await;

    let (_, body) = globex.get("/settings/lkg-retention").await;
    assert_eq!(body["data"]["retention_hours"], 72);
    assert_eq!(body["data"]["change_log"], json!([]));
    let (_, body) = globex.get("/settings/remediation-policy").await;
    assert_eq!(body["data"]["tenant_id"], "globex");
    assert_eq!(body["data"]["denied_safety_classes"], json!([]));
}

#[tokio::test]
async fn bodies_that_are_not_json_or_too_large_are_refused_in_the_envelope() {
    let app = TestApp::spawn_with(Service::Platform, |env| {
        env.insert("MAX_BODY_BYTES".into(), "1024".into());
    })
    .await;
    let admin = Admin::of(&app, "acme", "alice");

    let (status, body) = admin
        .put_raw(
            "/settings/lkg-retention",
            "text/plain",
            "retention_hours=24".into(),
        )
        .await;
    assert_eq!(status, 400);
    let error = area_b_error(&body, "VALIDATION_FAILED");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("application/json"),
        "{error}"
    );

    let (status, body) = admin
        .put_raw(
            "/settings/lkg-retention",
            "application/json",
            "{\"retention_hours\": 24".into(),
        )
        .await;
    assert_eq!(status, 400);
    let error = area_b_error(&body, "VALIDATION_FAILED");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{error}"
    );

    let padding = "x".repeat(4096);
    let (status, body) = admin
        .put_raw(
            "/settings/lkg-retention",
            "application/json",
            json!({ "retention_hours": 24, "pad": padding }).to_string(),
        )
        .await;
    assert_eq!(status, 400);
    let error = area_b_error(&body, "VALIDATION_FAILED");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("1024-byte limit"),
        "{error}"
    );

    let (_, body) = admin.get("/settings/lkg-retention").await;
    assert_eq!(body["data"]["retention_hours"], 72);
}

//! Governance over HTTP: policies in YAML and JSON (create, read as JSON or YAML, replace,
//! delete), every validation answer, roles, tenant isolation, and alert channels.

use integration_tests::{Service, TestApp};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{Client, area_b_error};

const YAML: &str = "application/yaml";

fn document(name: &str, mode: &str) -> String {
    format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata:
  name: {name}
  description: SSNs must not sit in exports
  tags: [pci, exports]
spec:
  mode: {mode}
  conditions:
    - category: us_ssn
      min_confidence: 0.8
  actions:
    - type: mask
      config: {{ keep_last: 4 }}
"
    )
}

fn fields(body: &Value) -> Vec<String> {
    body["error"]["details"]["fields"]
        .as_array()
        .unwrap_or_else(|| panic!("no fields in {body}"))
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn policies_are_created_read_replaced_and_deleted_over_http() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let yaml = document("ssn-in-exports", "dry-run");
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, &yaml)
        .await;
    assert_eq!(status, 201, "{body}");
    let created = &body["data"];
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["name"], "ssn-in-exports");
    assert_eq!(created["mode"], "dry-run");
    assert_eq!(created["version"], 1);
    assert!(created["created_at"].is_string());
    assert_eq!(
        created.as_object().unwrap().len(),
        5,
        "exactly id, name, mode, version, created_at: {body}"
    );

    // application/x-yaml and JSON are accepted too.
    let (status, body) = admin
        .send_raw(
            Method::POST,
            "/governance/policies",
            "application/x-yaml",
            &document("second", "enforced"),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let json_doc = json!({
        "apiVersion": "governance.dps/v1", "kind": "Policy",
        "metadata": {"name": "third"},
        "spec": {"mode": "enforced",
                 "conditions": [{"category": "contact", "min_confidence": 0.5}],
                 "actions": [{"type": "mask"}]}
    });
    let (status, body) = admin
        .send(Method::POST, "/governance/policies", Some(json_doc))
        .await;
    assert_eq!(status, 201, "{body}");

    // Any user of the tenant reads: the list and one policy with its document.
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let (status, body) = analyst
        .send(Method::GET, "/governance/policies?limit=2", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let first = &body["data"][0];
    assert_eq!(first["id"], id.as_str());
    assert_eq!(first["description"], "SSNs must not sit in exports");
    assert_eq!(first["tags"], json!(["pci", "exports"]));
    assert_eq!(first["conditions_count"], 1);
    assert_eq!(first["actions_count"], 1);
    assert_eq!(first["findings_matched"], 0);
    assert_eq!(first["last_triggered"], Value::Null);
    assert_eq!(body["pagination"]["has_more"], true);
    let (status, body) = analyst
        .send(Method::GET, "/governance/policies?mode=enforced", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"].as_array().unwrap().len(), 2);
    let (_, body) = analyst
        .send(Method::GET, "/governance/policies?tag=pci", None)
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 2);

    let (status, body) = analyst
        .send(Method::GET, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["version"], 1);
    assert_eq!(
        body["data"]["document"]["spec"]["actions"][0]["config"],
        json!({"keep_last": 4, "char": "*"}),
        "the stored document has its defaults written out"
    );
    let response = app
        .http
        .get(app.url(&format!("/governance/policies/{id}")))
        .bearer_auth(&analyst.token)
        .header("accept", "application/yaml")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/yaml")
    );
    assert_eq!(response.text().await.unwrap(), yaml);

    // PUT replaces the whole document and bumps the version.
    let (status, body) = admin
        .send_raw(
            Method::PUT,
            &format!("/governance/policies/{id}"),
            YAML,
            &document("ssn-in-exports", "enforced"),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["version"], 2);
    assert_eq!(body["data"]["mode"], "enforced");
    assert_eq!(body["data"]["id"], id.as_str());

    // Analysts cannot write.
    for (method, path) in [
        (Method::POST, "/governance/policies".to_owned()),
        (Method::PUT, format!("/governance/policies/{id}")),
        (Method::DELETE, format!("/governance/policies/{id}")),
    ] {
        let (status, body) = analyst.send_raw(method, &path, YAML, &yaml).await;
        assert_eq!(status, 403, "{path}: {body}");
    }

    let (status, body) = admin
        .send(Method::DELETE, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"id": id, "deleted": true}));
    let (status, body) = analyst
        .send(Method::GET, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(status, 404, "{body}");
    area_b_error(&body, "POLICY_NOT_FOUND");
}

#[tokio::test]
async fn a_bad_document_gets_every_problem_by_pointer_and_never_its_values() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let bad = "apiVersion: governance.dps/v9
kind: Policy
metadata:
  name: bad
  owner: 123-45-6789
spec:
  mode: sometimes
  conditions:
    - category: us_ssn
      min_confidence: 1.7
  actions:
    - type: alert
      config: { channels: [nowhere], severity: urgent-123-45-6789 }
    - type: mask
      config: { keep_last: 9, char: '**' }
";
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, bad)
        .await;
    assert_eq!(status, 400, "{body}");
    area_b_error(&body, "VALIDATION_FAILED");
    assert_eq!(
        fields(&body),
        [
            "/apiVersion",
            "/metadata/owner",
            "/spec/mode",
            "/spec/conditions/0/min_confidence",
            "/spec/actions/0/config/severity",
            "/spec/actions/1/config/keep_last",
            "/spec/actions/1/config/char",
        ]
    );
    assert!(
        !body.to_string().contains("6789"),
        "a value was echoed: {body}"
    );

    // Anchors and aliases, duplicate keys, too deep, too large, not a document.
    let cases: [(&str, String); 5] = [
        (
            "anchors",
            document("a", "enforced").replace("min_confidence: 0.8", "min_confidence: &c 0.8"),
        ),
        (
            "duplicates",
            document("d", "enforced").replace("kind: Policy\n", "kind: Policy\nkind: Policy\n"),
        ),
        (
            "deep",
            format!(
                "apiVersion: x\nkind: {}1{}\n",
                "[".repeat(40),
                "]".repeat(40)
            ),
        ),
        (
            "large",
            format!("{}#{}\n", document("l", "enforced"), "x".repeat(70_000)),
        ),
        (
            "two documents",
            format!(
                "{}---\n{}",
                document("a", "enforced"),
                document("b", "enforced")
            ),
        ),
    ];
    for (case, text) in cases {
        let (status, body) = admin
            .send_raw(Method::POST, "/governance/policies", YAML, &text)
            .await;
        assert_eq!(status, 400, "{case}: {body}");
        area_b_error(&body, "VALIDATION_FAILED");
    }
    // The semantic layer: a channel that does not exist.
    let (status, body) = admin
        .send_raw(
            Method::POST,
            "/governance/policies",
            YAML,
            &document("s", "enforced").replace(
                "    - type: mask\n      config: { keep_last: 4 }\n",
                "    - type: alert\n      config: { channels: [nowhere], severity: low }\n",
            ),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(fields(&body), ["/spec/actions/0/config/channels/0"]);
    // An unknown content type, and nothing was stored.
    let (status, _) = admin
        .send_raw(Method::POST, "/governance/policies", "text/plain", "x")
        .await;
    assert_eq!(status, 400);
    let (_, body) = admin.send(Method::GET, "/governance/policies", None).await;
    assert_eq!(body["data"], json!([]));

    // A duplicate name is a conflict.
    let text = document("dup", "enforced");
    let (status, _) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, &text)
        .await;
    assert_eq!(status, 201);
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, &text)
        .await;
    assert_eq!(status, 409, "{body}");
    area_b_error(&body, "CONFLICT");

    // Unknown query values and parameters.
    for query in ["mode=sometimes", "colour=red", "limit=0", "cursor=forged"] {
        let (status, body) = admin
            .send(Method::GET, &format!("/governance/policies?{query}"), None)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
    }
}

#[tokio::test]
async fn another_tenants_policies_and_channels_are_not_found() {
    let app = TestApp::spawn(Service::Platform).await;
    let acme = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let globex = Client {
        app: &app,
        token: app.token("globex", "gus", &["admin"]),
    };
    let (status, body) = acme
        .send_raw(
            Method::POST,
            "/governance/policies",
            YAML,
            &document("mine", "enforced"),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/governance/policies/{id}");
    let (status, _) = globex.send(Method::GET, &path, None).await;
    assert_eq!(status, 404);
    let (status, _) = globex
        .send_raw(Method::PUT, &path, YAML, &document("mine", "enforced"))
        .await;
    assert_eq!(status, 404);
    let (status, _) = globex.send(Method::DELETE, &path, None).await;
    assert_eq!(status, 404);
    let (status, _) = globex
        .send(Method::GET, "/governance/policies/not-a-uuid", None)
        .await;
    assert_eq!(status, 404);
    let (_, body) = globex.send(Method::GET, "/governance/policies", None).await;
    assert_eq!(body["data"], json!([]));

    let (status, body) = acme
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({"name": "security", "type": "webhook", "url": "https://hooks.example.com/t/abc"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (_, body) = globex.send(Method::GET, "/governance/channels", None).await;
    assert_eq!(body["data"], json!([]));
    let (status, _) = globex
        .send(Method::DELETE, "/governance/channels/security", None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn channels_show_their_secret_once_and_refuse_unsafe_urls() {
    let app = TestApp::spawn_with(Service::Platform, |env| {
        env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "false".into());
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({"name": "security", "type": "webhook", "url": "https://hooks.example.com/t/abc"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let secret = body["data"]["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    assert_eq!(body["data"]["type"], "webhook");
    let (status, body) = admin.send(Method::GET, "/governance/channels", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"][0]["url"], "https://hooks.example.com/t/abc");
    assert!(body["data"][0].get("secret").is_none());
    assert!(!body.to_string().contains(&secret));

    for (url, why) in [
        ("http://hooks.example.com/x", "https"),
        ("https://127.0.0.1/x", "loopback"),
        ("https://169.254.169.254/latest/meta-data", "metadata"),
        ("https://[fd00:ec2::254]/", "private"),
    ] {
        let (status, body) = admin
            .send(
                Method::POST,
                "/governance/channels",
                Some(json!({"name": "x", "type": "webhook", "url": url})),
            )
            .await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(fields(&body), ["/url"], "{url}");
        assert!(body.to_string().contains(why), "{url}: {body}");
    }
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({"name": "x", "type": "webhook", "url": "https://a.example/", "extra": 1})),
        )
        .await;
    assert_eq!(status, 400, "{body}");

    // Analysts manage no channels.
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let (status, _) = analyst
        .send(Method::GET, "/governance/channels", None)
        .await;
    assert_eq!(status, 403);

    // A channel in use cannot go; once unused, it can.
    let policy = document("alerts", "enforced").replace(
        "    - type: mask\n      config: { keep_last: 4 }\n",
        "    - type: alert\n      config: { channels: [security], severity: high }\n",
    );
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, &policy)
        .await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["id"].as_str().unwrap().to_owned();
    let (status, body) = admin
        .send(Method::DELETE, "/governance/channels/security", None)
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["details"]["policies"], json!(["alerts"]));
    admin
        .send(Method::DELETE, &format!("/governance/policies/{id}"), None)
        .await;
    let (status, body) = admin
        .send(Method::DELETE, "/governance/channels/security", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"name": "security", "deleted": true}));
}

#[tokio::test]
async fn the_audit_log_lists_policy_channel_and_settings_changes_in_a_chain() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (status, body) = admin
        .send_raw(
            Method::POST,
            "/governance/policies",
            YAML,
            &document("p", "enforced"),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["id"].as_str().unwrap().to_owned();
    admin
        .send(
            Method::PUT,
            "/settings/lkg-retention",
            Some(json!({"retention_hours": 168})),
        )
        .await;
    admin
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({"name": "ops", "type": "webhook", "url": "https://hooks.example.com/x"})),
        )
        .await;
    // Another tenant's entries never show.
    let other = Client {
        app: &app,
        token: app.token("globex", "gus", &["admin"]),
    };
    other
        .send_raw(
            Method::POST,
            "/governance/policies",
            YAML,
            &document("q", "enforced"),
        )
        .await;

    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let (status, body) = analyst
        .send(Method::GET, "/governance/audit-log", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let entries = body["data"].as_array().unwrap();
    let types: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["policy_created", "lkg_retention_changed", "channel_created"]
    );
    assert_eq!(entries[0]["seq"], 1);
    assert_eq!(entries[0]["actor"], "ann");
    assert_eq!(entries[0]["policy_id"], id.as_str());
    assert_eq!(entries[0]["policy_version"], 1);
    assert_eq!(entries[0]["prev_hash"], "0".repeat(64));
    assert_eq!(entries[1]["prev_hash"], entries[0]["hash"]);
    assert_eq!(entries[2]["details"]["host"], "hooks.example.com");
    assert!(
        !body.to_string().contains("hooks.example.com/x"),
        "a channel URL was recorded"
    );

    let (_, body) = analyst
        .send(
            Method::GET,
            &format!("/governance/audit-log?policy={id}&since=2020-01-01"),
            None,
        )
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "{body}");
    let (_, body) = analyst
        .send(
            Method::GET,
            "/governance/audit-log?since=2999-01-01T00:00:00",
            None,
        )
        .await;
    assert_eq!(body["data"], json!([]));
    let (_, body) = analyst
        .send(Method::GET, "/governance/audit-log?limit=2", None)
        .await;
    assert_eq!(body["pagination"]["has_more"], true);
    let cursor = body["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, body) = analyst
        .send(
            Method::GET,
            &format!("/governance/audit-log?cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(body["data"][0]["seq"], 3);
    for query in [
        "action_type=delete",
        "since=yesterday",
        "limit=101",
        "policy_id=x",
    ] {
        let (status, body) = analyst
            .send(Method::GET, &format!("/governance/audit-log?{query}"), None)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
    }
}

/// Polls until `check` holds for the audit log, or fails after 30 s.
async fn audit_until(
    client: &Client<'_>,
    query: &str,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, body) = client
            .send(
                Method::GET,
                &format!("/governance/audit-log?limit=100&{query}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let entries = body["data"].as_array().unwrap().clone();
        if check(&entries) {
            return entries;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "audit log never got there: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_scan_is_evaluated_against_policies_which_alert_simulate_and_plan() {
    use testkit::{emulators, seed};
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "hr-exports").await;
    seed::put_all(
        bucket.as_ref(),
        &[
            (
                "people.csv",
                b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n".as_slice(),
            ),
            ("contacts.txt", b"write to ann.lee@example.com".as_slice()),
            ("notes.txt", b"nothing to see here".as_slice()),
        ],
    )
    .await;
    let receiver = testkit::identity::http_server(|_| (200, Value::Null));
    // Planning is what is tested here: no executor changes the objects under the rescan.
    let app = crate::scans::app_with(&moto, "1", |env| {
        env.insert("DPS_REMEDIATION_EXECUTOR".into(), "false".into());
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let connector = crate::scans::connector(&admin, "HR", "hr-exports").await;
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({"name": "security", "type": "webhook", "url": format!("{}/hook", receiver.url())})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let enforced = format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: ssn-enforced }}
spec:
  mode: enforced
  scope: {{ connectors: [{connector}] }}
  conditions: [{{ category: us_ssn, min_confidence: 0.5 }}]
  actions:
    - {{ type: alert, config: {{ channels: [security], severity: critical }} }}
    - {{ type: mask, config: {{ keep_last: 4 }} }}
"
    );
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, &enforced)
        .await;
    assert_eq!(status, 201, "{body}");
    let enforced_id = body["data"]["id"].as_str().unwrap().to_owned();
    let dry = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: contact-dry }
spec:
  mode: dry-run
  conditions: [{ category: contact, min_confidence: 0.5 }]
  actions: [{ type: quarantine, config: { destination: { bucket: quarantine } } }]
";
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, dry)
        .await;
    assert_eq!(status, 201, "{body}");
    let dry_id = body["data"]["id"].as_str().unwrap().to_owned();

    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{connector}/scan"),
            Some(json!({"type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let done = crate::scans::finished(&admin, &scan).await;
    assert_eq!(done["status"], "completed", "{done}");

    // The enforced policy planned a mask of people.csv and queued an alert, delivered to the
    // receiver; the dry-run policy simulated a quarantine of contacts.txt.
    let entries = audit_until(&admin, "", |entries| {
        entries.iter().any(|e| e["type"] == "action_executed")
            && entries.iter().any(|e| e["type"] == "action_simulated")
    })
    .await;
    let of = |kind: &str, policy: &str| -> Vec<&Value> {
        entries
            .iter()
            .filter(|e| e["type"] == kind && e["policy_id"] == policy)
            .collect()
    };
    let evaluated = of("policy_evaluated", &enforced_id);
    assert!(!evaluated.is_empty());
    assert_eq!(evaluated[0]["details"]["scan_id"], scan.as_str());
    let planned = of("action_planned", &enforced_id);
    let kinds: Vec<&str> = planned
        .iter()
        .map(|e| e["action_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["alert", "mask"], "{planned:?}");
    assert_eq!(planned[1]["resource"], "hr-exports/people.csv");
    assert_eq!(planned[1]["details"]["gate"], "allowed");
    assert_eq!(planned[1]["simulated"], false);
    let simulated = of("action_simulated", &dry_id);
    assert_eq!(simulated.len(), 1, "{entries:?}");
    assert_eq!(simulated[0]["resource"], "hr-exports/contacts.txt");
    assert_eq!(simulated[0]["simulated"], true);
    // No value or preview anywhere in the log.
    let text = serde_json::to_string(&entries).unwrap();
    assert!(
        !text.contains("219-09") && !text.contains("ann.lee"),
        "{text}"
    );

    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "one matched object, one channel");
    let payload: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(payload["resource"], "hr-exports/people.csv");
    assert_eq!(payload["counts"]["findings"], 2);
    assert!(!requests[0].body.contains("219-09"));

    // The policies count what they matched.
    let (_, body) = admin
        .send(
            Method::GET,
            &format!("/governance/policies/{enforced_id}"),
            None,
        )
        .await;
    assert_eq!(body["data"]["findings_matched"], 2, "{body}");
    assert!(body["data"]["last_triggered"].is_string());
    let (_, body) = admin
        .send(Method::GET, &format!("/governance/policies/{dry_id}"), None)
        .await;
    assert_eq!(body["data"]["findings_matched"], 1, "{body}");

    // Findings carry the policies they match and where their remediation stands.
    let (status, body) = admin
        .send(
            Method::GET,
            &format!("/findings?connector={connector}&pii_type=us_ssn"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let ssns = body["data"].as_array().unwrap();
    // people.csv's two SSNs, one column: one finding of two values.
    assert_eq!(ssns.len(), 1, "{body}");
    assert_eq!(ssns[0]["occurrences"], 2, "{body}");
    assert_eq!(ssns[0]["field"], "ssn", "{body}");
    assert_eq!(ssns[0]["resource"], "hr-exports/people.csv");
    assert_eq!(ssns[0]["matched_policies"], json!(["ssn-enforced"]));
    assert_eq!(ssns[0]["remediation_status"], "pending");
    assert_eq!(ssns[0]["status"], "open");
    assert!(
        !ssns[0]["preview"].as_str().unwrap().contains("219-09"),
        "{body}"
    );
    let (_, body) = admin
        .send(
            Method::GET,
            "/findings?category=contact&resource=hr-exports/contacts",
            None,
        )
        .await;
    let contacts = body["data"].as_array().unwrap();
    assert_eq!(contacts.len(), 1, "{body}");
    assert_eq!(contacts[0]["matched_policies"], json!(["contact-dry"]));
    assert_eq!(contacts[0]["remediation_status"], "dry_run");
    let finding = contacts[0]["id"].as_str().unwrap().to_owned();
    let (status, body) = admin
        .send(Method::GET, &format!("/findings/{finding}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["pii_type"], "email");
    let (_, body) = admin
        .send(Method::GET, "/findings?resource=hr-exports/zzz", None)
        .await;
    assert_eq!(body["data"], json!([]));
    let other = Client {
        app: &app,
        token: app.token("globex", "gus", &["analyst"]),
    };
    let (status, _) = other
        .send(Method::GET, &format!("/findings/{finding}"), None)
        .await;
    assert_eq!(status, 404);
    let (_, body) = other.send(Method::GET, "/findings", None).await;
    assert_eq!(body["data"], json!([]));
    for query in [
        "min_confidence=2",
        "status=closed",
        "category=secret",
        "pii_type=ssn",
        "colour=red",
    ] {
        let (status, body) = admin
            .send(Method::GET, &format!("/findings?{query}"), None)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
    }

    // A second full scan of unchanged objects evaluates again but repeats no action.
    let (_, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{connector}/scan"),
            Some(json!({"type": "full"})),
        )
        .await;
    let second = body["data"]["scan_id"].as_str().unwrap().to_owned();
    crate::scans::finished(&admin, &second).await;
    let entries = audit_until(&admin, &format!("policy={enforced_id}"), |entries| {
        entries
            .iter()
            .any(|e| e["type"] == "policy_evaluated" && e["details"]["scan_id"] == second.as_str())
    })
    .await;
    let planned: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "action_planned")
        .collect();
    assert_eq!(planned.len(), 2, "nothing is planned twice: {entries:?}");
    // The rescan's findings are new rows of the same object version: still pending.
    let (_, body) = admin
        .send(Method::GET, "/findings?pii_type=us_ssn&status=open", None)
        .await;
    let open = body["data"].as_array().unwrap();
    assert_eq!(open.len(), 1, "{body}");
    assert_eq!(open[0]["occurrences"], 2, "{body}");
    assert_eq!(open[0]["scan_id"], second.as_str());
    assert_eq!(open[0]["remediation_status"], "pending", "{body}");
}

#[tokio::test]
async fn scans_keep_risk_scores_and_drift_events_current() {
    use object_store::ObjectStoreExt as _;
    use testkit::{emulators, seed};
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "finance").await;
    seed::put_all(
        bucket.as_ref(),
        &[
            (
                "people.csv",
                b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n".as_slice(),
            ),
            ("contacts.txt", b"write to ann.lee@example.com".as_slice()),
            ("notes.txt", b"nothing to see here".as_slice()),
        ],
    )
    .await;
    let app = crate::scans::app_on(&moto, "1").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let connector = crate::scans::connector(&admin, "Finance", "finance").await;
    let scan = async |admin: &Client<'_>| {
        let (status, body) = admin
            .send(
                Method::POST,
                &format!("/connectors/{connector}/scan"),
                Some(json!({"type": "full"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        let id = body["data"]["scan_id"].as_str().unwrap().to_owned();
        crate::scans::finished(admin, &id).await;
        id
    };
    scan(&admin).await;
    // Evaluation runs after the scan: wait for its drift events.
    let events = {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let (_, body) = admin
                .send(Method::GET, "/governance/drift-events", None)
                .await;
            let events = body["data"].as_array().unwrap().clone();
            if events.len() == 2 {
                break events;
            }
            assert!(std::time::Instant::now() < deadline, "{body}");
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    };
    let people = events
        .iter()
        .find(|e| e["resource"] == "finance/people.csv")
        .unwrap();
    assert_eq!(people["type"], "data_drift");
    assert_eq!(people["status"], "open");
    assert_eq!(people["connector_id"], connector.as_str());
    assert_eq!(
        people["previous_state"],
        json!({"findings_count": 0, "risk_score": 0})
    );
    assert_eq!(people["current_state"]["findings_count"], 2);
    let people_score = people["current_state"]["risk_score"].as_i64().unwrap();
    assert!(people_score > 0);
    assert_eq!(people["remediation_status"], "none");

    // Risk at each level, highest first. The batch that found data in the never-checked bucket
    // queued its posture check: once it has run, the findings are scored private (0.2), below
    // the unknown exposure (0.6) the drift event's score was computed with.
    let body = {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let (_, body) = admin
                .send(Method::GET, "/governance/risk-scores?level=finding", None)
                .await;
            if body["data"][0]["factors"]["exposure"] == 0.2 {
                break body;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "never checked: {body}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    };
    let findings = body["data"].as_array().unwrap();
    // One finding for the two SSNs of people.csv's `ssn` column, one for the email.
    assert_eq!(findings.len(), 2, "{body}");
    assert!(findings[0]["risk_score"].as_i64() >= findings[1]["risk_score"].as_i64());
    assert_eq!(findings[0]["entity_type"], "finding");
    assert!(
        findings.iter().all(|f| f["factors"]["exposure"] == 0.2),
        "{body}"
    );
    let (status, _) = admin
        .send(
            Method::GET,
            &format!("/findings/{}", findings[0]["entity_id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 200, "a finding-level entity_id is a finding id");
    let (_, body) = admin
        .send(Method::GET, "/governance/risk-scores?level=file", None)
        .await;
    let files = body["data"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{body}");
    assert_eq!(files[0]["entity_id"], "finance/people.csv");
    assert!(
        files[0]["risk_score"].as_i64().unwrap() <= people_score,
        "rescored private: {body}"
    );
    let (_, body) = admin
        .send(Method::GET, "/governance/risk-scores", None)
        .await;
    let connectors = body["data"].as_array().unwrap();
    assert_eq!(connectors.len(), 1, "{body}");
    assert_eq!(connectors[0]["entity_type"], "connector");
    let connector_score = connectors[0]["risk_score"].clone();
    let (_, body) = admin
        .send(Method::GET, &format!("/connectors/{connector}"), None)
        .await;
    assert_eq!(
        body["data"]["risk_score"], connector_score,
        "GET /connectors shows governance's score"
    );
    let (_, body) = admin
        .send(Method::GET, "/governance/risk-scores?level=workspace", None)
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    let (_, body) = admin
        .send(
            Method::GET,
            "/governance/risk-scores?level=file&min_score=100",
            None,
        )
        .await;
    assert_eq!(body["data"], json!([]));
    let (_, body) = admin
        .send(
            Method::GET,
            "/governance/risk-scores?level=finding&limit=1",
            None,
        )
        .await;
    let cursor = body["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, body) = admin
        .send(
            Method::GET,
            &format!("/governance/risk-scores?level=finding&limit=1&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "{body}");
    for query in [
        "level=bucket",
        "min_score=101",
        "min_score=-1",
        "cursor=x",
        "sort=asc",
    ] {
        let (status, body) = admin
            .send(
                Method::GET,
                &format!("/governance/risk-scores?{query}"),
                None,
            )
            .await;
        assert_eq!(status, 400, "{query}: {body}");
    }

    // One SSN goes, contacts.txt goes: the second scan drifts both.
    bucket
        .put(
            &object_store::path::Path::from("people.csv"),
            b"name,ssn\nAnn Lee,219-09-9999\n".to_vec().into(),
        )
        .await
        .unwrap();
    bucket
        .delete(&object_store::path::Path::from("contacts.txt"))
        .await
        .unwrap();
    scan(&admin).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let events = loop {
        let (_, body) = admin
            .send(Method::GET, "/governance/drift-events", None)
            .await;
        let events = body["data"].as_array().unwrap().clone();
        if events.len() == 4 {
            break events;
        }
        assert!(std::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let gone = events
        .iter()
        .find(|e| {
            e["resource"] == "finance/contacts.txt" && e["current_state"]["findings_count"] == 0
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(gone["severity"], "low");
    let fewer = events
        .iter()
        .find(|e| {
            e["resource"] == "finance/people.csv" && e["previous_state"]["findings_count"] == 2
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(fewer["current_state"]["findings_count"], 1);
    assert!(
        events[0]["timestamp"].as_str() >= events[3]["timestamp"].as_str(),
        "newest first"
    );
    let (_, body) = admin
        .send(Method::GET, "/governance/risk-scores?level=finding", None)
        .await;
    assert_eq!(
        body["data"].as_array().unwrap().len(),
        1,
        "only the open finding is scored: {body}"
    );

    // Acknowledging: 200 with who and when; again: unchanged; it stays in the timeline.
    let id = fewer["event_id"].as_str().unwrap();
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let path = format!("/governance/drift-events/{id}/acknowledge");
    let (status, body) = analyst
        .send(
            Method::POST,
            &path,
            Some(json!({"note": "expected: test data removed"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "acknowledged");
    assert_eq!(body["data"]["acknowledged_by"], "bo");
    assert_eq!(body["data"]["note"], "expected: test data removed");
    let first = body["data"].clone();
    let (status, body) = analyst
        .send(Method::POST, &path, Some(json!({"note": "again"})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"], first,
        "a second acknowledgement changes nothing"
    );
    let (_, body) = admin
        .send(Method::GET, "/governance/drift-events", None)
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 4);
    let (status, _) = analyst
        .send(Method::POST, &path, Some(json!({"note": "x".repeat(1001)})))
        .await;
    assert_eq!(status, 400);
    let (status, _) = analyst
        .send(
            Method::POST,
            "/governance/drift-events/not-an-id/acknowledge",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 404);
    let globex = Client {
        app: &app,
        token: app.token("globex", "gus", &["admin"]),
    };
    let (status, _) = globex.send(Method::POST, &path, Some(json!({}))).await;
    assert_eq!(status, 404);
    let (_, body) = globex
        .send(Method::GET, "/governance/drift-events", None)
        .await;
    assert_eq!(body["data"], json!([]));
    let entries = audit_until(&admin, "", |e| {
        e.iter().any(|e| e["type"] == "drift_acknowledged")
    })
    .await;
    assert_eq!(
        entries
            .iter()
            .filter(|e| e["type"] == "drift_acknowledged")
            .count(),
        1
    );

    // Filters.
    let (_, body) = admin
        .send(
            Method::GET,
            "/governance/drift-events?severity=low&type=data_drift",
            None,
        )
        .await;
    assert!(
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["severity"] == "low")
    );
    let (_, body) = admin
        .send(
            Method::GET,
            "/governance/drift-events?since=2999-01-01",
            None,
        )
        .await;
    assert_eq!(body["data"], json!([]));
    let (_, body) = admin
        .send(
            Method::GET,
            &format!("/governance/drift-events?connector={}", uuid::Uuid::nil()),
            None,
        )
        .await;
    assert_eq!(body["data"], json!([]));
    for query in ["severity=urgent", "type=drift", "since=soon", "limit=0"] {
        let (status, body) = admin
            .send(
                Method::GET,
                &format!("/governance/drift-events?{query}"),
                None,
            )
            .await;
        assert_eq!(status, 400, "{query}: {body}");
    }

    // The summary: open events by severity (the acknowledged one left out), the workspace
    // score, open findings by category.
    let (status, body) = admin.send(Method::GET, "/governance/summary", None).await;
    assert_eq!(status, 200, "{body}");
    let open = &body["data"]["open_drift_events"];
    let total: i64 = ["critical", "high", "medium", "low"]
        .iter()
        .map(|s| open[s].as_i64().unwrap())
        .sum();
    assert_eq!(total, 3, "{body}");
    assert_eq!(
        body["data"]["findings_by_category"],
        json!({"government_id": 1})
    );
    assert_eq!(body["data"]["risk"]["entity_type"], "workspace");
    assert_eq!(
        body["data"]["policies_by_mode"],
        json!({"enforced": 0, "dry-run": 0})
    );

    // The note is optional, and so is a body that would hold only it.
    let path = format!(
        "/governance/drift-events/{}/acknowledge",
        gone["event_id"].as_str().unwrap()
    );
    let (status, body) = analyst.send(Method::POST, &path, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "acknowledged", "{body}");
    assert_eq!(body["data"]["note"], Value::Null, "{body}");
}

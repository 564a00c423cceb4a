//! Reconciliation over HTTP: a dry-run preview that changes nothing, the blast-radius breaker,
//! an enforced run that acts on findings scanned before the policies existed and never acts
//! twice, one reconciliation per tenant, validation, roles and tenant isolation; and the bucket
//! posture checks after each scan, whose exposure drift moves risk; and policy coverage,
//! recomputed when policies change.

use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use object_store::ObjectStoreExt as _;
use reqwest::Method;
use serde_json::{Value, json};
use testkit::{emulators, seed};

use crate::{Client, area_b_error};

const YAML: &str = "application/yaml";

/// Polls a reconciliation until it ends; returns its last state.
pub(crate) async fn ended(client: &Client<'_>, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = client
            .send(
                Method::GET,
                &format!("/governance/reconciliations/{id}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let state = body["data"]["status"].as_str().unwrap().to_owned();
        if !["queued", "running"].contains(&state.as_str()) {
            return body["data"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "reconciliation still {state}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn reconcile(client: &Client<'_>, body: Value) -> String {
    let (status, answer) = client
        .send(Method::POST, "/governance/reconcile", Some(body.clone()))
        .await;
    assert_eq!(status, 202, "{body}: {answer}");
    assert_eq!(answer["data"]["status"], "queued", "{answer}");
    answer["data"]["reconciliation_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn item<'a>(plan: &'a Value, policy: &str, action: &str) -> &'a Value {
    plan.as_array()
        .unwrap()
        .iter()
        .find(|i| i["policy_name"] == policy && i["action_type"] == action)
        .unwrap_or_else(|| panic!("no {policy}/{action} in {plan}"))
}

#[tokio::test]
async fn reconciliation_previews_blocks_over_its_limit_and_acts_once_on_earlier_findings() {
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "archive").await;
    seed::put_all(
        bucket.as_ref(),
        &[
            (
                "people.csv",
                b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n".as_slice(),
            ),
            ("a.txt", b"ssn 219-09-9999".as_slice()),
            ("b.txt", b"ssn 078-05-1120".as_slice()),
            ("contacts.txt", b"write to ann.lee@example.com".as_slice()),
            ("notes.txt", b"nothing to see here".as_slice()),
        ],
    )
    .await;
    let receiver = testkit::identity::http_server(|_| (200, Value::Null));
    let app = crate::scans::app_on(&moto, "1").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let connector = crate::scans::connector(&admin, "Archive", "archive").await;

    // The findings are scanned before any policy exists: nothing acts on them then.
    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{connector}/scan"),
            Some(json!({"type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    assert_eq!(
        crate::scans::finished(&admin, &scan).await["status"],
        "completed"
    );
    let (_, body) = admin
        .send(Method::GET, "/findings?status=open&limit=100", None)
        .await;
    // Counts are of values: each finding stands for its occurrences.
    let values = |body: &Value| {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["occurrences"].as_u64().unwrap())
            .sum::<u64>()
    };
    let open = values(&body);
    let (_, body) = admin
        .send(Method::GET, "/findings?pii_type=us_ssn&limit=100", None)
        .await;
    let ssns = values(&body);
    assert_eq!(ssns, 4, "{body}");
    assert_eq!(
        body["data"].as_array().unwrap().len(),
        3,
        "people.csv's two SSNs are one finding: {body}"
    );
    // The evaluation, which follows the scan, has seen every object before any policy exists.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin
            .send(Method::GET, "/governance/risk-scores?level=file", None)
            .await;
        if body["data"].as_array().unwrap().len() == 4 {
            break;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({"name": "security", "type": "webhook", "url": format!("{}/hook", receiver.url())})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let enforced = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.5 }]
  actions:
    - { type: alert, config: { channels: [security], severity: high } }
    - { type: mask, config: { keep_last: 4 } }
";
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, enforced)
        .await;
    assert_eq!(status, 201, "{body}");
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

    // A dry run previews: the plan and its counts, and nothing else anywhere.
    let id = reconcile(&admin, json!({"mode": "dry-run"})).await;
    let done = ended(&admin, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["mode"], "dry-run");
    assert_eq!(done["findings_evaluated"], open, "{done}");
    assert_eq!(done["findings_matched"], ssns + 1, "{done}");
    assert_eq!(done["actions_simulated"], 3 + 3 + 1, "{done}");
    assert_eq!(done["changes_planned"], 3, "{done}");
    assert_eq!(done["actions_planned"], 0, "{done}");
    let mask = item(&done["plan"], "ssn-mask", "mask");
    assert_eq!(
        (
            &mask["outcome"],
            &mask["objects"],
            &mask["findings"],
            &mask["repeated"]
        ),
        (&json!("planned"), &json!(3), &json!(4), &json!(0)),
        "{done}"
    );
    assert_eq!(
        item(&done["plan"], "ssn-mask", "alert")["outcome"],
        "queued"
    );
    // An alert is `read_only`: a tenant that denies the class would have it blocked.
    let deny = |classes: Value| {
        let admin = &admin;
        async move {
            let body = json!({ "denied_safety_classes": classes });
            let (status, body) = admin
                .send(Method::PUT, "/settings/remediation-policy", Some(body))
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    deny(json!(["read_only"])).await;
    let id = reconcile(&admin, json!({"mode": "dry-run"})).await;
    let denied = ended(&admin, &id).await;
    assert_eq!(
        item(&denied["plan"], "ssn-mask", "alert")["outcome"],
        "blocked",
        "{denied}"
    );
    assert_eq!(
        item(&denied["plan"], "ssn-mask", "mask")["outcome"],
        "planned"
    );
    deny(json!([])).await;
    let quarantine = item(&done["plan"], "contact-dry", "quarantine");
    assert_eq!(quarantine["outcome"], "simulated");
    assert_eq!(quarantine["objects"], 1);
    let (_, body) = admin
        .send(Method::GET, "/findings?pii_type=us_ssn", None)
        .await;
    assert_eq!(body["data"][0]["remediation_status"], "none", "{body}");

    // Over its limit, an enforced run executes nothing and says why.
    let id = reconcile(
        &admin,
        json!({"mode": "enforced", "limits": {"max_actions": 2}}),
    )
    .await;
    let blocked = ended(&admin, &id).await;
    assert_eq!(blocked["status"], "blocked_by_limit", "{blocked}");
    assert_eq!(blocked["max_actions"], 2);
    assert_eq!(blocked["changes_planned"], 3);
    assert_eq!(blocked["actions_planned"], 0);
    let (_, body) = admin
        .send(Method::GET, "/governance/audit-log?limit=100", None)
        .await;
    let entries = body["data"].as_array().unwrap();
    let end = entries
        .iter()
        .find(|e| {
            e["type"] == "reconciliation_ended" && e["details"]["reconciliation_id"] == id.as_str()
        })
        .unwrap_or_else(|| panic!("no end entry in {body}"));
    assert_eq!(end["outcome"], "blocked_by_limit");
    assert!(
        !entries.iter().any(|e| e["type"] == "action_planned"),
        "{body}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(receiver.requests().is_empty());

    // Enforced within the limit: the earlier findings are acted on, each object once.
    let id = reconcile(&admin, json!({"mode": "enforced"})).await;
    let enforced_run = ended(&admin, &id).await;
    assert_eq!(enforced_run["status"], "completed", "{enforced_run}");
    assert_eq!(enforced_run["max_actions"], 1000);
    assert_eq!(enforced_run["actions_planned"], 3 + 3, "{enforced_run}");
    assert_eq!(enforced_run["actions_simulated"], 1, "{enforced_run}");
    assert_eq!(enforced_run["actions_repeated"], 0, "{enforced_run}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while receiver.requests().len() < 3 {
        assert!(Instant::now() < deadline, "alerts not delivered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let payload: Value = serde_json::from_str(&receiver.requests()[0].body).unwrap();
    assert_eq!(payload["reconciliation_id"], id.as_str(), "{payload}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin
            .send(
                Method::GET,
                &format!("/governance/reconciliations/{id}"),
                None,
            )
            .await;
        // The 3 alerts delivered and the 3 masks executed by the remediation executor.
        if body["data"]["actions_executed"] == 6 {
            break;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, body) = admin
        .send(Method::GET, "/findings?pii_type=us_ssn", None)
        .await;
    assert_eq!(body["data"][0]["remediation_status"], "completed", "{body}");

    // Again: nothing is done twice. The masks resolved the SSN findings they masked, so only
    // the contact finding is left, whose simulated quarantine is already in the ledger.
    let id = reconcile(&admin, json!({"mode": "enforced"})).await;
    let again = ended(&admin, &id).await;
    assert_eq!(again["status"], "completed", "{again}");
    assert_eq!(again["actions_planned"], 0, "{again}");
    assert_eq!(again["actions_simulated"], 0, "{again}");
    assert_eq!(again["findings_evaluated"], 1, "{again}");
    assert_eq!(again["actions_repeated"], 1, "{again}");
    assert_eq!(again["changes_planned"], 0, "{again}");
    assert_eq!(item(&again["plan"], "ssn-mask", "mask")["objects"], 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.requests().len(), 3, "no alert twice");

    // Start and end are audited, the start by its requester.
    let (_, body) = admin
        .send(Method::GET, "/governance/audit-log?limit=100", None)
        .await;
    let entries = body["data"].as_array().unwrap();
    let started: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "reconciliation_started")
        .collect();
    assert_eq!(started.len(), 5, "{body}");
    assert_eq!(started[0]["actor"], "ann");
    assert_eq!(
        entries
            .iter()
            .filter(|e| e["type"] == "reconciliation_ended")
            .count(),
        5
    );
    let text = body.to_string();
    assert!(!text.contains("219-09") && !text.contains("ann.lee"));
}

#[tokio::test]
async fn one_reconciliation_per_tenant_and_every_bad_request_named() {
    let moto = emulators::moto(&[]);
    let app = crate::scans::app_on(&moto, "0").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    seed::s3_bucket(&moto.url(), "one").await;
    let connector = crate::scans::connector(&admin, "One", "one").await;

    // While one is running (held on a lock of the findings it reads), another is refused.
    let mut holder = app.conn().await;
    diesel::sql_query("BEGIN")
        .execute(&mut holder)
        .await
        .unwrap();
    diesel::sql_query("LOCK TABLE findings IN ACCESS EXCLUSIVE MODE")
        .execute(&mut holder)
        .await
        .unwrap();
    let first = reconcile(
        &admin,
        // Named twice, walked once.
        json!({"mode": "dry-run", "scope": {"connectors": [connector, connector]}}),
    )
    .await;
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({"mode": "dry-run"})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    let error = area_b_error(&body, "CONFLICT");
    assert_eq!(error["details"]["reconciliation_id"], first.as_str());
    // Another tenant is not held up, and cannot see the first.
    let other = Client {
        app: &app,
        token: app.token("globex", "gus", &["admin"]),
    };
    let (status, body) = other
        .send(
            Method::GET,
            &format!("/governance/reconciliations/{first}"),
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
    area_b_error(&body, "RECONCILIATION_NOT_FOUND");
    diesel::sql_query("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();
    let done = ended(&admin, &first).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["scope"]["connectors"], json!([connector]));
    assert_eq!(done["findings_evaluated"], 0);
    // Once it ended, the next is accepted.
    let next = reconcile(&admin, json!({"mode": "dry-run"})).await;
    ended(&admin, &next).await;

    // Every problem at once, by pointer; nothing queued.
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({
                "mode": "sometimes",
                "scope": {"connectors": ["not-an-id"], "policies": []},
                "limits": {"max_actions": -1},
            })),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let error = area_b_error(&body, "VALIDATION_FAILED");
    let fields: Vec<&str> = error["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["/mode", "/scope/connectors/0", "/limits/max_actions"],
        "{body}"
    );
    let (status, body) = admin
        .send(Method::POST, "/governance/reconcile", Some(json!({})))
        .await;
    assert_eq!(status, 400, "{body}");
    // Hostile values are named, never echoed, never a 500.
    for hostile in [
        json!({"mode": "dry-run\u{0}"}),
        json!({"mode": "dry-run", "scope": {"connectors": ["\u{0}"]}}),
        json!({"mode": "dry-run", "scope": {"policies": ["x".repeat(10_000)]}}),
        json!({"mode": "dry-run", "scope": {"connectors": vec![uuid::Uuid::nil().to_string(); 101]}}),
        json!({"mode": "dry-run", "limits": {"max_actions": 1.5}}),
        json!({"mode": ["enforced"]}),
        json!([]),
    ] {
        let (status, body) = admin
            .send(Method::POST, "/governance/reconcile", Some(hostile.clone()))
            .await;
        assert_eq!(status, 400, "{hostile}: {body}");
        area_b_error(&body, "VALIDATION_FAILED");
        assert!(!body.to_string().contains("xxxxxxxxxx"), "{body}");
    }
    // Connectors and policies of another tenant are not found, by pointer.
    let foreign = uuid::Uuid::now_v7().to_string();
    let (status, body) = other
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({"mode": "enforced", "scope": {"connectors": [connector], "policies": [foreign]}})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let fields = &area_b_error(&body, "VALIDATION_FAILED")["details"]["fields"];
    assert_eq!(fields[0]["field"], "/scope/connectors/0", "{body}");
    assert_eq!(fields[1]["field"], "/scope/policies/0", "{body}");
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({"mode": "dry-run", "colour": "red"})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({"mode": "enforced", "limits": {"max_actions": 1_000_001}})),
        )
        .await;
    assert_eq!(status, 400, "{body}");

    // Analysts read reconciliations but do not start them.
    let analyst = Client {
        app: &app,
        token: app.token("acme", "al", &["analyst"]),
    };
    let (status, _) = analyst
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({"mode": "dry-run"})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, body) = analyst
        .send(
            Method::GET,
            &format!("/governance/reconciliations/{next}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = analyst
        .send(Method::GET, "/governance/reconciliations/nope", None)
        .await;
    assert_eq!(status, 404);
}

/// Changes one configuration of a moto bucket as its owner would (moto checks no signature).
pub(crate) async fn s3_put(
    endpoint: &str,
    bucket: &str,
    sub: &str,
    headers: &[(&str, &str)],
    body: &str,
) {
    let mut request = reqwest::Client::new()
        .put(format!("{endpoint}/{bucket}?{sub}"))
        .header("content-type", "application/xml")
        .header("content-length", body.len())
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "?{sub}: {}",
        response.status()
    );
}

async fn drift_until(client: &Client<'_>, query: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = client
            .send(
                Method::GET,
                &format!("/governance/drift-events?limit=100&{query}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let events = body["data"].as_array().unwrap().clone();
        if events.len() >= n {
            return events;
        }
        assert!(Instant::now() < deadline, "{query}: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The file's risk score, once the evaluation has recorded it.
async fn file_score(admin: &Client<'_>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin
            .send(Method::GET, "/governance/risk-scores?level=file", None)
            .await;
        if body["data"][0]["entity_id"] == "payroll/people.csv" {
            return body["data"][0].clone();
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// platform-api over a moto bucket `payroll` holding one file with one SSN.
async fn payroll_app(moto: &emulators::Emulator) -> integration_tests::TestApp {
    let bucket = seed::s3_bucket(&moto.url(), "payroll").await;
    seed::put_all(
        bucket.as_ref(),
        &[("people.csv", b"name,ssn\nAnn Lee,219-09-9999\n".as_slice())],
    )
    .await;
    crate::scans::app_on(moto, "1").await
}

/// A connector of the payroll bucket, scanned, and the file's score once the bucket's posture
/// (private) is known.
async fn scanned_and_checked(admin: &Client<'_>) -> (String, Value) {
    let connector = crate::scans::connector(admin, "Payroll", "payroll").await;
    crate::scans::full_scan(admin, &connector).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let score = file_score(admin).await;
        if score["factors"]["exposure"] == 0.2 {
            return (connector, score);
        }
        assert!(Instant::now() < deadline, "exposure never checked: {score}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_bucket_made_public_is_critical_exposure_drift_and_raises_its_risk() {
    let moto = emulators::moto(&[]);
    let app = payroll_app(&moto).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    // The first check is the baseline: a private bucket makes no event, and its exposure is
    // known (0.2) instead of unknown (0.6).
    let (connector, private) = scanned_and_checked(&admin).await;
    let (_, body) = admin
        .send(
            Method::GET,
            "/governance/drift-events?type=exposure_drift",
            None,
        )
        .await;
    assert_eq!(body["data"], json!([]), "{body}");

    // Made public by an ACL, with versioning turned on: the next scan's check sees both.
    s3_put(
        &moto.url(),
        "payroll",
        "acl",
        &[("x-amz-acl", "public-read")],
        "",
    )
    .await;
    s3_put(
        &moto.url(),
        "payroll",
        "versioning",
        &[],
        "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>Enabled</Status></VersioningConfiguration>",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let exposure = drift_until(&admin, "type=exposure_drift", 1).await;
    let event = &exposure[0];
    assert_eq!(event["severity"], "critical", "{event}");
    assert_eq!(event["resource"], "payroll");
    assert_eq!(event["connector_id"], connector.as_str());
    assert_eq!(event["previous_state"]["public"], false, "{event}");
    assert_eq!(event["current_state"]["public"], true, "{event}");
    assert_eq!(event["current_state"]["findings_count"], 1, "{event}");
    // The event's states are the bucket's risk before and after it was scored public.
    assert_eq!(
        event["previous_state"]["risk_score"], private["risk_score"],
        "{event} {private}"
    );
    assert!(
        event["current_state"]["risk_score"].as_i64().unwrap()
            > event["previous_state"]["risk_score"].as_i64().unwrap(),
        "{event}"
    );
    let config = drift_until(&admin, "type=config_drift", 1).await;
    assert_eq!(config[0]["severity"], "low", "{config:?}");
    assert_eq!(config[0]["current_state"]["versioning"], "enabled");
    let public = file_score(&admin).await;
    assert_eq!(public["factors"]["exposure"], 1.0, "{public}");
    assert!(
        public["risk_score"].as_i64().unwrap() > private["risk_score"].as_i64().unwrap(),
        "{private} then {public}"
    );
    let (_, body) = admin.send(Method::GET, "/governance/summary", None).await;
    assert_eq!(body["data"]["open_drift_events"]["critical"], 1, "{body}");
    // Another tenant sees none of it.
    let globex = Client {
        app: &app,
        token: app.token("globex", "gus", &["admin"]),
    };
    for path in [
        "/governance/risk-scores?level=file",
        "/governance/risk-scores?level=finding",
        "/governance/risk-scores",
        "/governance/drift-events",
    ] {
        let (status, body) = globex.send(Method::GET, path, None).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"], json!([]), "{path}: {body}");
    }
    let (_, body) = globex.send(Method::GET, "/governance/summary", None).await;
    assert_eq!(body["data"]["open_drift_events"]["critical"], 0, "{body}");
    assert_eq!(body["data"]["risk"]["risk_score"], 0, "{body}");

    // Private again: low exposure drift, and the score falls back.
    s3_put(
        &moto.url(),
        "payroll",
        "acl",
        &[("x-amz-acl", "private")],
        "",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let exposure = drift_until(&admin, "type=exposure_drift", 2).await;
    assert_eq!(exposure[0]["severity"], "low", "{exposure:?}");
    assert_eq!(exposure[0]["current_state"]["public"], false);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let score = file_score(&admin).await;
        if score["risk_score"] == private["risk_score"] {
            break;
        }
        assert!(Instant::now() < deadline, "{score}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_policy_change_moves_coverage_and_risk_without_a_rescan() {
    let moto = emulators::moto(&[]);
    let app = payroll_app(&moto).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    // Once the bucket's posture is known, the score moves only with coverage.
    let (_, before) = scanned_and_checked(&admin).await;
    assert_eq!(before["factors"]["policy_coverage"], 0.0, "{before}");

    let enforced = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: government_id, min_confidence: 0.5 }]
  actions: [{ type: mask, config: { keep_last: 4 } }]
";
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, enforced)
        .await;
    assert_eq!(status, 201, "{body}");
    let id = body["data"]["id"].as_str().unwrap().to_owned();
    let covered = |want: f64| {
        let admin = &admin;
        async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let score = file_score(admin).await;
                let (_, body) = admin
                    .send(Method::GET, "/governance/risk-scores?level=finding", None)
                    .await;
                if score["factors"]["policy_coverage"] == want
                    && body["data"][0]["factors"]["policy_coverage"] == want
                {
                    return score;
                }
                assert!(Instant::now() < deadline, "{score} {body}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let after = covered(1.0).await;
    assert!(
        after["risk_score"].as_i64().unwrap() < before["risk_score"].as_i64().unwrap(),
        "{before} then {after}"
    );
    // A dry-run policy covers nothing; deleting the enforced one uncovers.
    let (status, _) = admin
        .send(Method::DELETE, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(status, 200);
    let back = covered(0.0).await;
    assert_eq!(back["risk_score"], before["risk_score"], "{back}");
    let (status, body) = admin
        .send_raw(
            Method::POST,
            "/governance/policies",
            YAML,
            &enforced.replace("enforced", "dry-run"),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(covered(0.0).await["risk_score"], before["risk_score"]);
    let (_, body) = admin
        .send(Method::GET, "/governance/risk-scores", None)
        .await;
    assert_eq!(body["data"][0]["factors"]["policy_coverage"], 0.0, "{body}");
}

/// The sequence of the security review: a full scan completes, an enforced mask policy is
/// created at once, and an enforced reconciliation runs with `max_actions: 0`. Whatever the
/// scan's evaluation is doing meanwhile, the reconciliation ends `blocked_by_limit`, no
/// remediation is planned and the object is unchanged: five times with no pause, and once with
/// the evaluation held until the reconciliation has ended.
#[tokio::test]
async fn the_breaker_holds_against_a_policy_made_right_after_a_scan() {
    const PEOPLE: &[u8] = b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n";
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "archive").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", PEOPLE)]).await;
    let app = crate::scans::app_on(&moto, "1").await;
    let mut db = app.conn().await;
    for round in 0..6 {
        let tenant = format!("tenant-{round}");
        let admin = Client {
            app: &app,
            token: app.token(&tenant, "ann", &["admin"]),
        };
        let held = round == 5;
        if held {
            diesel::sql_query(
                "INSERT INTO governance_consumers (consumer) VALUES ('governance-evaluation')
                 ON CONFLICT DO NOTHING",
            )
            .execute(&mut db)
            .await
            .unwrap();
            diesel::sql_query("BEGIN").execute(&mut db).await.unwrap();
            diesel::sql_query(
                "SELECT 1 FROM governance_consumers
                  WHERE consumer = 'governance-evaluation' FOR UPDATE",
            )
            .execute(&mut db)
            .await
            .unwrap();
        }
        let connector = crate::scans::connector(&admin, "Archive", "archive").await;
        crate::scans::full_scan(&admin, &connector).await;
        let (status, body) = admin
            .send_raw(
                Method::POST,
                "/governance/policies",
                YAML,
                "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.5 }]
  actions: [{ type: mask, config: { keep_last: 4 } }]
",
            )
            .await;
        assert_eq!(status, 201, "{body}");
        let id = reconcile(
            &admin,
            json!({"mode": "enforced", "limits": {"max_actions": 0}}),
        )
        .await;
        let done = ended(&admin, &id).await;
        assert_eq!(done["status"], "blocked_by_limit", "round {round}: {done}");
        assert_eq!(done["changes_planned"], 1, "round {round}: {done}");
        assert_eq!(done["actions_planned"], 0, "round {round}: {done}");
        if held {
            diesel::sql_query("COMMIT").execute(&mut db).await.unwrap();
        }
        // The scan's evaluation has caught up (it records each object's risk), and planned
        // nothing for a policy made after the scan.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, body) = admin
                .send(Method::GET, "/governance/risk-scores?level=file", None)
                .await;
            if body["data"].as_array().unwrap().len() == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "round {round}: {body}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (_, body) = admin
            .send(Method::GET, "/governance/remediations", None)
            .await;
        assert_eq!(body["data"], json!([]), "round {round}: {body}");
    }
    let now = bucket
        .get(&object_store::path::Path::from("people.csv"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(now.as_ref(), PEOPLE, "no object changed");
}

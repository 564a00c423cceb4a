//! The console's policies, drift and remediations over HTTP, as a browser without script sends
//! them: the YAML editor's problems at their fields and lines with the text kept, the mode
//! form, a policy's dry-run preview, delete after a question; the drift timeline with the
//! API's filters and its acknowledge form; remediations with their receipts checked and undo
//! after a question. Roles, forged forms and hostile names throughout. (The journeys in a
//! real browser are in `console_gov_browser`.)

use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl as _;
use integration_tests::{Service, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use testkit::{emulators, seed};

use crate::Client;
use crate::console::{Answer, Visitor};

pub(crate) const HOSTILE_NAME: &str = "<img src=x onerror=alert(1)>";
const HOSTILE_TEXT: &str = "\"><script>alert(1)</script>";

/// A policy document with two problems: a mode that is no mode (line 7) and a confidence
/// over 1 (line 10). Line 5 is a comment, which a save must keep.
pub(crate) const BROKEN: &str = "apiVersion: governance.dps/v1
kind: Policy
metadata:
  name: ssn-watch
# keep an eye on SSNs
spec:
  mode: loud
  conditions:
    - category: us_ssn
      min_confidence: 2
  actions:
    - type: mask
      config: { keep_last: 4 }
";

pub(crate) fn fixed() -> String {
    BROKEN
        .replace("mode: loud", "mode: dry-run")
        .replace("min_confidence: 2", "min_confidence: 0.8")
}

/// A policy with a hostile name and description, made through the API; returns its id.
pub(crate) async fn hostile_policy(admin: &Client<'_>) -> String {
    crate::remediation::policy(
        admin,
        &format!(
            "apiVersion: governance.dps/v1
kind: Policy
metadata:
  name: '{HOSTILE_NAME}'
  description: '{HOSTILE_TEXT}'
  tags: [x]
spec:
  mode: dry-run
  conditions: [{{ category: us_ssn, min_confidence: 0.5 }}]
  actions: [{{ type: mask, config: {{ keep_last: 4 }} }}]
"
        ),
    )
    .await
}

/// The dev sign-in of `TestApp::spawn_console`, for a platform-api started otherwise: users
/// `admin` (admin, analyst) and `analyst` of tenant `acme`.
pub(crate) fn dev_sign_in(extra: &mut platform_api::Extra) {
    integration_tests::dev_console("acme")(extra);
}

/// platform-api on `moto` with a scan worker, remediation and the console's dev sign-in.
pub(crate) async fn console_on_moto(moto: &emulators::Emulator) -> TestApp {
    let moto_url = moto.url();
    TestApp::spawn_changed(
        Service::Platform,
        testkit::database().await,
        |env| {
            for (name, value) in seed::moto_platform_env(&moto_url) {
                env.insert(name.into(), value);
            }
            env.insert("DPS_SCAN_WORKERS".into(), "1".into());
        },
        dev_sign_in,
    )
    .await
}

pub(crate) const SSNS: &[u8] = b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n";

/// The bucket `people-data` on moto holding SSNs, a connector to it, an enforced policy
/// masking SSNs and one full scan: the bucket, the connector and the remediation, receipted.
pub(crate) async fn masked(
    moto: &emulators::Emulator,
    admin: &Client<'_>,
) -> (std::sync::Arc<dyn object_store::ObjectStore>, String, Value) {
    let bucket = seed::s3_bucket(&moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", SSNS)]).await;
    let connector = crate::scans::connector(admin, "HR", "people-data").await;
    crate::remediation::policy_of(
        admin,
        "ssn-mask",
        "enforced",
        "us_ssn",
        0.5,
        "{ type: mask, config: { keep_last: 4 } }",
    )
    .await;
    crate::scans::full_scan(admin, &connector).await;
    let r = crate::remediation::ended(admin, 1).await.remove(0);
    assert_eq!(r["status"], "receipted", "{r}");
    (bucket, connector, r)
}

fn admin_of(app: &TestApp) -> Client<'_> {
    Client {
        app,
        token: app.token("acme", "ann", &["admin"]),
    }
}

/// The page's CSRF token.
fn csrf(page: &Answer) -> String {
    page.field("csrf")
}

#[tokio::test]
async fn a_policy_is_shown_its_problems_at_their_lines_then_saved_switched_previewed_and_deleted() {
    let app = TestApp::spawn_console("acme").await;
    let admin = admin_of(&app);
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("admin").await;

    let list = visitor.get("/console/policies").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains("No policies match"), "{}", list.body);
    assert!(list.body.contains("href=\"/console/policies/new\""));
    let new = visitor.get("/console/policies/new").await;
    assert_eq!(new.status, 200, "{}", new.body);
    let token = csrf(&new);

    // Every problem at its pointer and line, with the line as typed; the text kept whole.
    let refused = visitor
        .post("/console/policies", &[("csrf", &token), ("yaml", BROKEN)])
        .await;
    assert_eq!(refused.status, 200, "{}", refused.body);
    let body = &refused.body;
    assert!(body.contains("role=\"alert\""), "{body}");
    assert!(body.contains("2 problems"), "{body}");
    for (field, line) in [
        ("/spec/mode", "line 7"),
        ("/spec/conditions/0/min_confidence", "line 10"),
    ] {
        let at = body
            .find(&format!("data-field=\"{field}\""))
            .unwrap_or_else(|| panic!("no problem at {field}: {body}"));
        let item = &body[at..at + body[at..].find("</li>").unwrap()];
        assert!(item.contains(line), "{item}");
    }
    assert!(
        body.contains("<code class=\"typed\">  mode: loud</code>"),
        "{body}"
    );
    assert!(
        body.contains("# keep an eye on SSNs\nspec:\n  mode: loud\n"),
        "{body}"
    );
    assert!(body.contains("aria-invalid=\"true\""), "{body}");
    let (_, listed) = admin.send(Method::GET, "/governance/policies", None).await;
    assert_eq!(
        listed["data"],
        json!([]),
        "an invalid document stored nothing"
    );

    let saved = visitor
        .post("/console/policies", &[("csrf", &token), ("yaml", &fixed())])
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let path = saved.location().to_owned();
    let id = path.strip_prefix("/console/policies/").unwrap().to_owned();
    let shown = visitor.get(&path).await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(shown.body.contains("Policy ssn-watch"), "{}", shown.body);
    assert!(shown.body.contains("<textarea"), "{}", shown.body);

    // A taken name is a problem at /metadata/name, the text kept.
    let taken = visitor
        .post("/console/policies", &[("csrf", &token), ("yaml", &fixed())])
        .await;
    assert_eq!(taken.status, 200, "{}", taken.body);
    assert!(taken.body.contains("data-field=\"/metadata/name\""));
    assert!(taken.body.contains("line 4"), "{}", taken.body);

    // The mode form changes the mode only: the comment stays in the stored text.
    let switched = visitor
        .post(
            &format!("/console/policies/{id}/mode"),
            &[("csrf", &token), ("mode", "enforced")],
        )
        .await;
    assert_eq!(switched.status, 303, "{}", switched.body);
    assert_eq!(switched.location(), path);
    let (_, detail) = admin
        .send(Method::GET, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(detail["data"]["mode"], "enforced", "{detail}");
    assert_eq!(detail["data"]["version"], 2, "{detail}");
    let yaml = app
        .http
        .get(app.url(&format!("/governance/policies/{id}")))
        .bearer_auth(&admin.token)
        .header("accept", "application/yaml")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(yaml, fixed().replace("mode: dry-run", "mode: enforced"));
    let wrong = visitor
        .post(
            &format!("/console/policies/{id}/mode"),
            &[("csrf", &token), ("mode", "loud")],
        )
        .await;
    assert_eq!(wrong.status, 200, "{}", wrong.body);
    assert!(wrong.body.contains("data-field=\"/spec/mode\""));

    // The preview queues a dry-run reconciliation of this policy, whose page waits for it.
    let preview = visitor
        .post(
            &format!("/console/policies/{id}/preview"),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(preview.status, 303, "{}", preview.body);
    let run = preview.location().to_owned();
    assert!(run.starts_with("/console/reconciliations/"), "{run}");
    let reconciliation = run.rsplit('/').next().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let page = visitor.get(&run).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let running = page.body.contains("http-equiv=\"refresh\"");
        assert_eq!(
            running,
            page.body.contains("id=\"reconciliation-status\">queued")
                || page.body.contains("id=\"reconciliation-status\">running"),
            "{}",
            page.body
        );
        if !running {
            break page;
        }
        assert!(Instant::now() < deadline, "{}", page.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(done.body.contains(">completed<"), "{}", done.body);
    assert!(done.body.contains(">dry-run<") || done.body.contains("dry-run"));
    let (_, api) = admin
        .send(
            Method::GET,
            &format!("/governance/reconciliations/{reconciliation}"),
            None,
        )
        .await;
    assert_eq!(api["data"]["mode"], "dry-run", "{api}");
    assert_eq!(api["data"]["scope"]["policies"], json!([id]), "{api}");

    // Delete asks first; only the question's form deletes.
    let question = visitor.get(&format!("/console/policies/{id}/delete")).await;
    assert_eq!(question.status, 200, "{}", question.body);
    assert!(question.body.contains("Delete policy"), "{}", question.body);
    let (status, _) = admin
        .send(Method::GET, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(status, 200, "the question deleted nothing");
    let deleted = visitor
        .post(
            &format!("/console/policies/{id}/delete"),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    assert_eq!(deleted.location(), "/console/policies");
    let (status, _) = admin
        .send(Method::GET, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(status, 404);
    assert_eq!(visitor.get(&path).await.status, 404);
}

#[tokio::test]
async fn forged_forms_change_nothing_hostile_names_are_text_and_an_analyst_changes_no_policy() {
    let app = TestApp::spawn_console("acme").await;
    let admin = admin_of(&app);
    let id = hostile_policy(&admin).await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("admin").await;
    let page = format!("/console/policies/{id}");

    for (path, form) in [
        (page.clone(), vec![("csrf", "forged"), ("yaml", "kind: x")]),
        (
            format!("{page}/mode"),
            vec![("csrf", "forged"), ("mode", "enforced")],
        ),
        (format!("{page}/delete"), vec![("csrf", "forged")]),
        (format!("{page}/preview"), vec![("csrf", "forged")]),
        ("/console/policies".to_owned(), vec![("yaml", BROKEN)]),
    ] {
        let refused = visitor.post(&path, &form).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
    }
    let (_, detail) = admin
        .send(Method::GET, &format!("/governance/policies/{id}"), None)
        .await;
    assert_eq!(detail["data"]["version"], 1, "{detail}");
    assert_eq!(detail["data"]["mode"], "dry-run", "{detail}");

    for path in ["/console/policies".to_owned(), page.clone()] {
        let shown = visitor.get(&path).await;
        assert_eq!(shown.status, 200, "{}", shown.body);
        assert!(!shown.body.contains("<img src=x"), "{}", shown.body);
        assert!(!shown.body.contains("<script>"), "{}", shown.body);
        assert!(
            shown.body.contains("&#60;img src=x onerror=alert(1)&#62;"),
            "{}",
            shown.body
        );
    }
    let list = visitor.get("/console/policies").await;
    assert!(
        list.body
            .contains("&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;")
    );
    // A refused filter is said beside the form.
    let refused = visitor.get("/console/policies?mode=loud").await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
    let filtered = visitor.get("/console/policies?mode=enforced&tag=").await;
    assert!(
        filtered.body.contains("No policies match"),
        "{}",
        filtered.body
    );

    // An analyst reads policies, as the API lets any user, and is shown no control to change
    // one; the server refuses each anyway.
    let mut analyst = Visitor::new(&app);
    analyst.sign_in("analyst").await;
    let list = analyst.get("/console/policies").await;
    assert_eq!(list.status, 200);
    assert!(list.body.contains("&#60;img src=x"), "{}", list.body);
    assert!(
        !list.body.contains("/console/policies/new"),
        "{}",
        list.body
    );
    assert!(!list.body.contains("href=\"/console/remediations\""));
    let shown = analyst.get(&page).await;
    assert_eq!(shown.status, 200);
    assert!(
        shown.body.contains("<pre class=\"document\""),
        "{}",
        shown.body
    );
    for control in ["<textarea", "/mode\"", "/preview\"", "/delete\""] {
        assert!(!shown.body.contains(control), "{control}: {}", shown.body);
    }
    let token = csrf(&shown);
    assert_eq!(analyst.get("/console/policies/new").await.status, 403);
    assert_eq!(analyst.get(&format!("{page}/delete")).await.status, 403);
    for (path, form) in [
        (
            page.clone(),
            vec![("csrf", token.as_str()), ("yaml", BROKEN)],
        ),
        (
            format!("{page}/mode"),
            vec![("csrf", &token), ("mode", "enforced")],
        ),
        (format!("{page}/delete"), vec![("csrf", &token)]),
        (format!("{page}/preview"), vec![("csrf", &token)]),
        (
            "/console/policies".to_owned(),
            vec![("csrf", &token), ("yaml", BROKEN)],
        ),
    ] {
        let refused = analyst.post(&path, &form).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
        assert!(refused.body.contains("Not allowed"), "{}", refused.body);
    }
    // Remediations are the API's admins': not a page for an analyst.
    let any = uuid::Uuid::now_v7();
    for path in [
        "/console/remediations".to_owned(),
        format!("/console/remediations/{any}"),
        format!("/console/remediations/{any}/undo"),
    ] {
        assert_eq!(analyst.get(&path).await.status, 403, "{path}");
    }
    let undo = analyst
        .post(
            &format!("/console/remediations/{any}/undo"),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(undo.status, 403);
    // An admin's list of none, and a remediation that is not the tenant's.
    assert_eq!(visitor.get("/console/remediations").await.status, 200);
    assert_eq!(
        visitor
            .get(&format!("/console/remediations/{any}"))
            .await
            .status,
        404
    );
    assert_eq!(
        visitor
            .get("/console/reconciliations/not-an-id")
            .await
            .status,
        404
    );
}

/// Drift events on `connector`, recorded as the posture checks record them: a bucket made
/// public (critical) and its versioning turned off two days earlier (medium), and an event on
/// an object with a hostile name.
async fn drifted(app: &TestApp, connector: &str) {
    use posture::drift::{Kind, NewEvent};
    let tenant: ids::TenantId = "acme".parse().unwrap();
    let connector = ids::ConnectorId::parse(connector).unwrap();
    let event = |kind: Kind, severity, resource: &str, previous: Value, current: Value| NewEvent {
        kind,
        severity,
        connector,
        resource: resource.to_owned(),
        description: format!("{} changed", kind.as_str()),
        previous,
        current,
        policies: Vec::new(),
        remediation: posture::findings::RemediationStatus::None,
    };
    use policies::document::Severity;
    let mut conn = app.conn().await;
    posture::drift::record(
        &mut conn,
        &tenant,
        &[
            event(
                Kind::Config,
                Severity::Medium,
                "payroll",
                json!({"versioning": "enabled"}),
                json!({"versioning": "suspended"}),
            ),
            event(
                Kind::Exposure,
                Severity::Critical,
                "payroll",
                json!({"public": false, "findings_count": 1}),
                json!({"public": true, "findings_count": 1}),
            ),
            event(
                Kind::Data,
                Severity::Low,
                &format!("payroll/{HOSTILE_NAME}"),
                json!({}),
                json!({"findings_count": 2}),
            ),
        ],
    )
    .await
    .unwrap();
    diesel::sql_query(
        "UPDATE governance_drift_events SET occurred_at = now() - interval '2 days'
          WHERE kind = 'config_drift'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn drift_is_a_timeline_by_day_filtered_as_the_api_and_acknowledged_with_a_note() {
    let app = TestApp::spawn_console("acme").await;
    let admin = admin_of(&app);
    let external_id = admin.external_id().await;
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({
                "name": "Payroll",
                "provider": "aws",
                "config": {
                    "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                    "external_id": external_id,
                    "region": "us-east-1",
                    "buckets": ["payroll"],
                },
            })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    drifted(&app, body["data"]["id"].as_str().unwrap()).await;
    let (_, exposure) = admin
        .send(
            Method::GET,
            "/governance/drift-events?type=exposure_drift",
            None,
        )
        .await;
    let exposure = exposure["data"][0]["event_id"].as_str().unwrap().to_owned();

    let mut visitor = Visitor::new(&app);
    visitor.sign_in("analyst").await;
    let page = visitor.get("/console/drift").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    // Newest first, by day: today's two events, then the one two days back.
    let today = body.find("exposure_drift").unwrap();
    let data = body.find("<code>data_drift").unwrap();
    let config = body.find("config_drift</code>").unwrap();
    assert!(today < config && data < config, "{body}");
    assert_eq!(body.matches("<h2 id=\"day-").count(), 2, "{body}");
    assert!(body.contains("on Payroll"), "{body}");
    assert!(
        body.contains("<th scope=\"row\"><code>public</code></th><td>false</td><td>true</td>"),
        "{body}"
    );
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(body.contains("payroll/&#60;img src=x onerror=alert(1)&#62;"));
    assert_eq!(body.matches("class=\"ack\"").count(), 3, "{body}");

    let critical = visitor
        .get("/console/drift?severity=critical&type=&connector=")
        .await;
    assert_eq!(
        critical.body.matches("data-event=").count(),
        1,
        "{}",
        critical.body
    );
    let config = visitor.get("/console/drift?type=config_drift").await;
    assert!(config.body.contains("versioning"), "{}", config.body);
    assert_eq!(config.body.matches("data-event=").count(), 1);
    let refused = visitor.get("/console/drift?severity=dreadful").await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
    let none = visitor.get("/console/drift?status=acknowledged").await;
    assert!(none.body.contains("No drift events match"), "{}", none.body);

    // Acknowledged with a note: back to the timeline as it was filtered, at the event.
    let token = csrf(&page);
    let path = format!("/console/drift/{exposure}/acknowledge");
    let forged = visitor
        .post(&path, &[("csrf", "forged"), ("note", "x")])
        .await;
    assert_eq!(forged.status, 403);
    let note = "Opened for the auditors; closed again on Monday";
    let done = visitor
        .post(
            &path,
            &[
                ("csrf", &token),
                ("note", note),
                ("then", "severity=critical&connector=&evil=%3Cx%3E"),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(
        done.location(),
        format!("/console/drift?severity=critical#event-{exposure}")
    );
    let after = visitor.get("/console/drift?severity=critical").await;
    assert!(
        after.body.contains("Acknowledged by analyst"),
        "{}",
        after.body
    );
    assert!(after.body.contains(note), "{}", after.body);
    assert!(!after.body.contains("class=\"ack\""), "{}", after.body);
    let open = visitor.get("/console/drift?status=open").await;
    assert_eq!(open.body.matches("data-event=").count(), 2, "{}", open.body);
    let (status, listed) = admin
        .send(
            Method::GET,
            "/governance/drift-events?status=acknowledged",
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["data"][0]["note"], note);
    let (status, _) = admin
        .send(Method::GET, "/governance/drift-events?status=closed", None)
        .await;
    assert_eq!(status, 400);

    // A note over the API's limit is the form again, the note as typed.
    let (_, config) = admin
        .send(
            Method::GET,
            "/governance/drift-events?type=config_drift",
            None,
        )
        .await;
    let config = config["data"][0]["event_id"].as_str().unwrap().to_owned();
    let long = format!("{}{HOSTILE_TEXT}", "n".repeat(1000));
    let refused = visitor
        .post(
            &format!("/console/drift/{config}/acknowledge"),
            &[("csrf", &token), ("note", &long), ("then", "")],
        )
        .await;
    assert_eq!(refused.status, 200, "{}", refused.body);
    assert!(refused.body.contains("role=\"alert\""));
    assert!(refused.body.contains(&"n".repeat(1000)), "the note is kept");
    assert!(!refused.body.contains("<script>"), "{}", refused.body);
    let (_, still) = admin
        .send(Method::GET, "/governance/drift-events?status=open", None)
        .await;
    assert_eq!(still["data"].as_array().unwrap().len(), 2, "{still}");
}

#[tokio::test]
async fn a_remediations_receipts_are_shown_checked_and_it_is_undone_after_a_question() {
    let moto = emulators::moto(&[]);
    let app = console_on_moto(&moto).await;
    let admin = admin_of(&app);
    let (bucket, _, r) = masked(&moto, &admin).await;
    let id = r["remediation_id"].as_str().unwrap().to_owned();
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("admin").await;

    let list = visitor.get("/console/remediations").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(
        list.body.contains("people-data/people.csv"),
        "{}",
        list.body
    );
    assert!(list.body.contains(">receipted<"), "{}", list.body);
    let refused = visitor.get("/console/remediations?status=sleeping").await;
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
    let undone_list = visitor.get("/console/remediations?status=undone").await;
    assert!(undone_list.body.contains("No remediations match"));

    let path = format!("/console/remediations/{id}");
    let detail = visitor.get(&path).await;
    assert_eq!(detail.status, 200, "{}", detail.body);
    assert_eq!(
        detail.body.matches("class=\"signature valid\"").count(),
        1,
        "{}",
        detail.body
    );
    assert!(!detail.body.contains("signature invalid"));
    assert!(detail.body.contains("id=\"undo-until\""), "{}", detail.body);
    assert!(detail.body.contains(&format!("href=\"{path}/undo\"")));
    for value in ["219-09-9999", "078-05-1120"] {
        assert!(!detail.body.contains(value), "{}", detail.body);
    }

    let question = visitor.get(&format!("{path}/undo")).await;
    assert_eq!(question.status, 200, "{}", question.body);
    assert!(question.body.contains("Undo remediation"));
    assert_eq!(
        crate::remediation::read(bucket.as_ref(), "people.csv")
            .await
            .unwrap()[..9],
        b"name,ssn\n"[..]
    );
    let token = csrf(&question);
    let forged = visitor
        .post(&format!("{path}/undo"), &[("csrf", "forged")])
        .await;
    assert_eq!(forged.status, 403);
    let undone = visitor
        .post(&format!("{path}/undo"), &[("csrf", &token)])
        .await;
    assert_eq!(undone.status, 303, "{}", undone.body);
    assert_eq!(undone.location(), path);
    assert_eq!(
        crate::remediation::read(bucket.as_ref(), "people.csv")
            .await
            .unwrap(),
        SSNS
    );
    let after = visitor.get(&path).await;
    assert!(
        after.body.contains("id=\"remediation-status\">undone<"),
        "{}",
        after.body
    );
    assert!(
        after.body.contains("id=\"undone\">by admin"),
        "{}",
        after.body
    );
    assert_eq!(
        after.body.matches("class=\"signature valid\"").count(),
        2,
        "{}",
        after.body
    );
    assert!(!after.body.contains(&format!("href=\"{path}/undo\"")));
    let again = visitor
        .post(&format!("{path}/undo"), &[("csrf", &token)])
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert!(again.body.contains("role=\"alert\""), "{}", again.body);

    // A receipt changed after it was signed no longer verifies, and the page says so.
    let mut conn = app.conn().await;
    diesel::sql_query(
        "UPDATE remediation_receipts
            SET document = jsonb_set(document, '{receipt,resource,key}', '\"other.csv\"')
          WHERE kind <> 'undone'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let tampered = visitor.get(&path).await;
    assert_eq!(
        tampered.body.matches("class=\"signature valid\"").count(),
        1
    );
    assert!(
        tampered
            .body
            .contains("invalid: the signature does not verify"),
        "{}",
        tampered.body
    );
}

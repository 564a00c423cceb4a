//! The console's alerts page: a webhook channel made with its secret shown once, a policy's
//! alert delivered to a local receiver and listed, a channel in use kept and one no policy
//! uses deleted, in a real browser on moto; over HTTP, what an analyst is refused, forged
//! forms, refusals shown beside the form, and a URL's token never on the page.

use integration_tests::TestApp;
use reqwest::Method;
use serde_json::{Value, json};
use testkit::browser::Browser;
use testkit::seed;

use crate::Client;
use crate::console::Visitor;

const YAML: &str = "application/yaml";

#[tokio::test]
async fn journey_an_alert_reaches_a_channel_made_in_the_console_which_is_then_deleted() {
    let (app, moto) = crate::console_map::console_on_moto(|_| {}).await;
    let bucket = seed::s3_bucket(&moto.url(), "hr-exports").await;
    seed::put_all(
        bucket.as_ref(),
        &[(
            "people.csv",
            b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n".as_slice(),
        )],
    )
    .await;
    let receiver = testkit::identity::http_server(|_| (200, Value::Null));
    let origin = &app.origin;
    let browser = Browser::launch("console_alerts_journey").await;
    browser.goto(&format!("{origin}/console/sign-in")).await;
    browser.click_button("Sign in as admin").await;
    browser.wait_for_text("h1", "Overview").await;
    browser.click_link("Alerts").await;
    browser.wait_for_text("h1", "Alerts").await;
    browser
        .wait_for_text("#no-channels", "No channel yet")
        .await;

    // A name the API refuses is shown beside the form, what was typed kept.
    browser.fill("Name", "Security Team!").await;
    browser
        .fill("URL", &format!("{}/hook/t0k3n", receiver.url()))
        .await;
    browser.click_button("Create channel").await;
    browser.wait_for_text("#problems", "Name:").await;
    browser.screenshot("alerts-invalid").await;
    browser.fill("Name", "security").await;
    browser.click_button("Create channel").await;
    browser.wait_for_text("#made", "created").await;
    let secret = browser
        .find("#secret")
        .await
        .attr("value")
        .await
        .unwrap()
        .unwrap();
    assert!(secret.len() >= 32, "{secret}");
    let channels = browser.text("#channels").await;
    assert!(channels.contains("security"), "{channels}");
    assert!(!channels.contains("t0k3n"), "{channels}");
    browser.screenshot("alerts-created").await;
    // Shown once: the page read again has no secret.
    browser.goto(&format!("{origin}/console/alerts")).await;
    assert!(browser.try_find("#secret").await.is_none());

    // A policy alerts the channel; a scan finds the SSNs; the alert reaches the receiver and
    // the page lists it delivered.
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let connector = crate::scans::connector(&admin, "HR", "hr-exports").await;
    let policy = format!(
        "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: ssn-alert }}
spec:
  mode: enforced
  scope: {{ connectors: [{connector}] }}
  conditions: [{{ category: us_ssn, min_confidence: 0.5 }}]
  actions:
    - {{ type: alert, config: {{ channels: [security], severity: critical }} }}
"
    );
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, &policy)
        .await;
    assert_eq!(status, 201, "{body}");
    let policy_id = body["data"]["id"].as_str().unwrap().to_owned();
    crate::scans::full_scan(&admin, &connector).await;
    let delivered = browser
        .wait_for(
            "the alert listed as delivered",
            std::time::Duration::from_secs(60),
            async |b: &Browser| {
                b.goto(&format!("{origin}/console/alerts")).await;
                b.try_text("#deliveries")
                    .await
                    .filter(|t| t.contains("delivered"))
            },
        )
        .await;
    assert!(delivered.contains("ssn-alert"), "{delivered}");
    assert!(delivered.contains("hr-exports/people.csv"), "{delivered}");
    assert!(delivered.contains("critical"), "{delivered}");
    assert!(!delivered.contains("219-09-9999"), "{delivered}");
    let seen = receiver.requests();
    assert!(
        seen.iter().any(|r| r.path == "/hook/t0k3n"),
        "the receiver got no alert"
    );
    browser.assert_accessible().await;
    browser.screenshot("alerts").await;

    // Deleting a channel a policy uses is refused, naming the policy; once the policy is
    // gone, it is deleted.
    browser.click_link("Delete").await;
    browser.wait_for_text("h1", "Delete an alert channel").await;
    browser.click_button("Delete channel").await;
    browser.wait_for_text("#problems", "ssn-alert").await;
    browser.screenshot("alerts-delete-in-use").await;
    let (status, body) = admin
        .send(
            Method::DELETE,
            &format!("/governance/policies/{policy_id}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    browser.click_button("Delete channel").await;
    browser.wait_for_text("#deleted", "security").await;
    assert!(browser.try_find("#channels").await.is_none());
    let (_, body) = admin.send(Method::GET, "/governance/channels", None).await;
    assert_eq!(body["data"], json!([]), "{body}");
    browser.finish().await;
}

#[tokio::test]
async fn only_admins_reach_alerts_and_forged_or_bad_forms_change_nothing() {
    let app = TestApp::spawn_console("acme").await;
    let admin_api = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let mut analyst = Visitor::new(&app);
    analyst.sign_in("analyst").await;
    let overview = analyst.get("/console").await;
    assert!(!overview.body.contains("href=\"/console/alerts\""));
    assert_eq!(analyst.get("/console/alerts").await.status, 403);
    let csrf = overview.field("csrf");
    let refused = analyst
        .post(
            "/console/alerts",
            &[
                ("csrf", &csrf),
                ("name", "mine"),
                ("url", "https://hooks.example.com/x"),
            ],
        )
        .await;
    assert_eq!(refused.status, 403);

    let mut admin = Visitor::new(&app);
    admin.sign_in("admin").await;
    let page = admin.get("/console/alerts").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("href=\"/console/alerts\""));
    let csrf = page.field("csrf");
    // Without the session's CSRF token: refused, nothing made.
    let forged = admin
        .post(
            "/console/alerts",
            &[
                ("csrf", "forged"),
                ("name", "security"),
                ("url", "https://hooks.example.com/x"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
    // A hostile name is refused and shown back as text; a URL the rules refuse too.
    let hostile = "<img src=x onerror=alert(1)>";
    let bad = admin
        .post(
            "/console/alerts",
            &[("csrf", &csrf), ("name", hostile), ("url", "ftp://x")],
        )
        .await;
    assert_eq!(bad.status, 200);
    assert!(bad.body.contains("role=\"alert\""), "{}", bad.body);
    assert!(
        bad.body.contains("Name:") && bad.body.contains("URL:"),
        "{}",
        bad.body
    );
    assert!(!bad.body.contains(hostile), "{}", bad.body);
    assert!(bad.body.contains("&#60;img src=x onerror=alert(1)&#62;"));
    let (_, body) = admin_api
        .send(Method::GET, "/governance/channels", None)
        .await;
    assert_eq!(body["data"], json!([]), "{body}");

    // Made: the secret on this page only, the URL's path (a token) on none.
    let made = admin
        .post(
            "/console/alerts",
            &[
                ("csrf", &csrf),
                ("name", "security"),
                ("url", "https://hooks.example.com/services/T0/B0/s3cr3tpath"),
            ],
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.body);
    assert!(made.body.contains("id=\"secret\""));
    assert!(!made.body.contains("s3cr3tpath"));
    assert!(made.body.contains("https://hooks.example.com/…"));
    let again = admin.get("/console/alerts").await;
    assert!(!again.body.contains("id=\"secret\""));
    assert!(!again.body.contains("s3cr3tpath"));
    let (_, body) = admin_api
        .send(Method::GET, "/governance/channels", None)
        .await;
    assert_eq!(body["data"][0]["name"], "security", "{body}");
    // The same name again is refused beside the form.
    let twice = admin
        .post(
            "/console/alerts",
            &[
                ("csrf", &csrf),
                ("name", "security"),
                ("url", "https://hooks.example.com/y"),
            ],
        )
        .await;
    assert!(
        twice.body.contains("already has a channel"),
        "{}",
        twice.body
    );
    // A channel that does not exist has no delete page; a forged delete deletes nothing.
    assert_eq!(
        admin.get("/console/alerts/nowhere/delete").await.status,
        404
    );
    let forged = admin
        .post("/console/alerts/security/delete", &[("csrf", "forged")])
        .await;
    assert_eq!(forged.status, 403);
    let deleted = admin
        .post("/console/alerts/security/delete", &[("csrf", &csrf)])
        .await;
    assert_eq!(deleted.status, 303);
    assert_eq!(deleted.location(), "/console/alerts?deleted=security");
    let (_, body) = admin_api
        .send(Method::GET, "/governance/channels", None)
        .await;
    assert_eq!(body["data"], json!([]), "{body}");
}

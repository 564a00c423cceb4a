//! The console's data map, connectors and scans pages: over HTTP as a browser sends them
//! (every page for an admin, what an analyst sees and is refused, CSRF, hostile names as text,
//! inline validation), and in a real browser on moto (a connector created, tested and scanned
//! with its progress bar reaching 100%; an analyst without the role sees no control).

use std::time::{Duration, Instant};

use integration_tests::{Service, TestApp};
use testkit::browser::Browser;
use testkit::emulators::{self, Emulator};
use testkit::seed;

use crate::console::Visitor;

const HOSTILE_NAME: &str = "<img src=x onerror=alert(1)>";
const HOSTILE_KEY: &str = "reports/\"><script>alert(1)</script>.csv";
/// Text as askama escapes it in HTML.
fn escaped(text: &str) -> String {
    text.replace('&', "&#38;")
        .replace('<', "&#60;")
        .replace('>', "&#62;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

const PEOPLE: &[u8] = b"name,ssn\nAnn Lee,123-45-6789\nBo Park,234-56-7890\n";

/// The bucket `people-data` with SSNs in `people.csv` and under [`HOSTILE_KEY`], that key
/// stored as it is (`Path::from` would percent-encode its quotes and angle brackets).
async fn people_with_a_hostile_key(moto: &Emulator) {
    use object_store::{Attribute, AttributeValue, Attributes, PutOptions, PutPayload};
    let bucket = seed::s3_bucket(&moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", PEOPLE)]).await;
    let options = PutOptions {
        attributes: Attributes::from_iter([(
            Attribute::ContentType,
            AttributeValue::from("text/csv"),
        )]),
        ..Default::default()
    };
    bucket
        .put_opts(
            &object_store::path::Path::parse(HOSTILE_KEY).unwrap(),
            PutPayload::from(PEOPLE.to_vec()),
            options,
        )
        .await
        .unwrap();
}

/// platform-api on moto with a scan worker, its console's dev sign-in set as
/// `TestApp::spawn_console` sets it, and the environment changed by `tweak`.
pub(crate) async fn console_on_moto(
    tweak: impl FnOnce(&mut std::collections::HashMap<String, String>),
) -> (TestApp, Emulator) {
    let moto = emulators::moto(&[]);
    let moto_url = moto.url();
    let app = TestApp::spawn_changed(
        Service::Platform,
        testkit::database().await,
        |env| {
            for (name, value) in seed::moto_platform_env(&moto_url) {
                env.insert(name.into(), value);
            }
            env.insert("DPS_SCAN_WORKERS".into(), "1".into());
            tweak(env);
        },
        integration_tests::dev_console("acme"),
    )
    .await;
    (app, moto)
}

/// The form fields of an AWS connector on moto over `bucket`.
fn aws_form<'a>(csrf: &'a str, name: &'a str, bucket: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("csrf", csrf),
        ("name", name),
        ("provider", "aws"),
        ("aws_role_arn", "arn:aws:iam::123456789012:role/dps-scanner"),
        ("aws_region", "us-east-1"),
        ("buckets", bucket),
    ]
}

/// Creates the connector through the form; returns its page's path.
async fn create(visitor: &mut Visitor<'_>, name: &str, bucket: &str) -> String {
    let form = visitor.get("/console/connectors/new").await;
    assert_eq!(form.status, 200, "{}", form.body);
    let csrf = form.field("csrf");
    let created = visitor
        .post("/console/connectors", &aws_form(&csrf, name, bucket))
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let at = created.location().to_owned();
    assert!(at.starts_with("/console/connectors/"), "{at}");
    at
}

/// Waits until the scan's page says it completed; returns that page.
async fn completed(visitor: &mut Visitor<'_>, scan: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = visitor.get(scan).await;
        assert_eq!(page.status, 200, "{}", page.body);
        if page.body.contains(r#"id="scan-status">completed<"#) {
            return page.body;
        }
        assert!(
            Instant::now() < deadline,
            "the scan did not end: {}",
            page.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the page at `path` holds `needle` (risk and posture are recorded after a scan,
/// by the governance work it queues); returns that page.
async fn holding(visitor: &mut Visitor<'_>, path: &str, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = visitor.get(path).await;
        assert_eq!(page.status, 200, "{}", page.body);
        if page.body.contains(needle) {
            return page.body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never held {needle}: {}",
            page.body
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Reloads `url` in the browser until `css` holds `needle`.
async fn reload_until(browser: &Browser, url: &str, css: &str, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        browser.goto(url).await;
        let text = browser.try_text(css).await.unwrap_or_default();
        if text.contains(needle) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{url}: `{css}` never held {needle:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn an_admin_creates_scans_and_deletes_a_connector_and_sees_every_page() {
    let (app, moto) = console_on_moto(|_| {}).await;
    people_with_a_hostile_key(&moto).await;
    let mut admin = Visitor::new(&app);
    admin.sign_in("admin").await;

    for empty in ["/console/data-map", "/console/connectors", "/console/scans"] {
        let page = admin.get(empty).await;
        assert_eq!(page.status, 200, "{empty}: {}", page.body);
    }
    let new = admin.get("/console/connectors/new").await;
    // The tenant's external id and a trust policy requiring it, from the API's own derivation.
    let external_id = new
        .body
        .split(r#"<code id="external-id">"#)
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap()
        .to_owned();
    assert!(external_id.starts_with("dps-"), "{external_id}");
    assert!(new.body.contains("sts:ExternalId"), "{}", new.body);

    let connector = create(&mut admin, HOSTILE_NAME, "people-data").await;
    let list = admin.get("/console/connectors").await;
    assert!(list.body.contains(&escaped(HOSTILE_NAME)), "{}", list.body);
    assert!(!list.body.contains("<img src=x"), "{}", list.body);
    assert!(list.body.contains("New connector"), "{}", list.body);

    // Its page: status, configuration (the external id, never a secret), the controls.
    let detail = admin.get(&connector).await;
    assert_eq!(detail.status, 200, "{}", detail.body);
    assert!(detail.body.contains("pending_test"), "{}", detail.body);
    assert!(detail.body.contains(&external_id), "{}", detail.body);
    for control in ["Test connection", "Scan now", "Delete…"] {
        assert!(detail.body.contains(control), "{control}: {}", detail.body);
    }
    let csrf = detail.field("csrf");

    let tested = admin
        .post(&format!("{connector}/test"), &[("csrf", &csrf)])
        .await;
    assert_eq!(tested.status, 303, "{}", tested.body);
    let detail = admin.get(&connector).await;
    assert!(
        detail.body.contains(r#"id="connector-status">active<"#),
        "{}",
        detail.body
    );

    let started = admin
        .post(&format!("{connector}/scan"), &[("csrf", &csrf)])
        .await;
    assert_eq!(started.status, 303, "{}", started.body);
    let scan = started.location().to_owned();
    assert!(scan.starts_with("/console/scans/"), "{scan}");
    let done = completed(&mut admin, &scan).await;
    assert!(done.contains(r#"<progress id="scan-progress""#), "{done}");
    assert!(done.contains(r#"value="100""#), "{done}");
    assert!(done.contains(r#"id="scan-percent">100%<"#), "{done}");
    // An ended scan does not refresh itself, and offers no cancel.
    assert!(!done.contains("http-equiv=\"refresh\""), "{done}");
    assert!(!done.contains("Cancel scan"), "{done}");
    let cancel = admin.get(&format!("{scan}/cancel")).await;
    let refused = admin
        .post(
            &format!("{scan}/cancel"),
            &[("csrf", &cancel.field("csrf"))],
        )
        .await;
    assert_eq!(refused.status, 200, "{}", refused.body);
    assert!(refused.body.contains(r#"role="alert""#), "{}", refused.body);
    assert!(refused.body.contains("already ended"), "{}", refused.body);

    let scans = admin.get("/console/scans").await;
    assert!(
        scans.body.contains(&escaped(HOSTILE_NAME)),
        "{}",
        scans.body
    );
    assert!(!scans.body.contains("<img src=x"), "{}", scans.body);

    // The data map: the bucket's tile, and its page with the hostile key as text.
    let map = holding(
        &mut admin,
        "/console/data-map",
        r#"data-bucket="people-data""#,
    )
    .await;
    assert!(!map.contains("<img src=x"), "{map}");
    let tile = map
        .split(r#"href="/console/data-map/"#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let page = holding(
        &mut admin,
        &format!("/console/data-map/{tile}"),
        &escaped(HOSTILE_KEY),
    )
    .await;
    assert!(page.contains("us_ssn"), "{page}");
    assert!(!page.contains("<script>"), "{page}");
    assert!(page.contains("people.csv"), "{page}");

    // Delete: confirmed on a page of its own, then gone.
    let confirm = admin.get(&format!("{connector}/delete")).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(
        confirm.body.contains("cannot be undone"),
        "{}",
        confirm.body
    );
    let deleted = admin
        .post(
            &format!("{connector}/delete"),
            &[("csrf", &confirm.field("csrf"))],
        )
        .await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    assert_eq!(deleted.location(), "/console/connectors");
    assert_eq!(admin.get(&connector).await.status, 404);
}

#[tokio::test]
async fn forged_posts_are_refused_and_an_invalid_form_is_shown_again_with_its_problems() {
    let app = TestApp::spawn_console("acme").await;
    let mut admin = Visitor::new(&app);
    admin.sign_in("admin").await;
    let forged = admin
        .post(
            "/console/connectors",
            &aws_form("not-the-token", "Forged", "people-data"),
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let list = admin.get("/console/connectors").await;
    assert!(!list.body.contains("Forged"), "{}", list.body);

    let form = admin.get("/console/connectors/new").await;
    let csrf = form.field("csrf");
    let invalid = admin
        .post(
            "/console/connectors",
            &[
                ("csrf", csrf.as_str()),
                ("name", HOSTILE_NAME),
                ("provider", "aws"),
                ("aws_role_arn", ""),
                ("aws_region", "mars-1"),
                ("azure_client_secret", "typed-secret-value"),
            ],
        )
        .await;
    assert_eq!(invalid.status, 200, "{}", invalid.body);
    assert!(invalid.body.contains(r#"role="alert""#), "{}", invalid.body);
    assert!(invalid.body.contains("Role ARN:"), "{}", invalid.body);
    assert!(invalid.body.contains("Region:"), "{}", invalid.body);
    // What was typed stays, as text; a secret is never sent back.
    assert!(
        invalid.body.contains(r#"value="mars-1""#),
        "{}",
        invalid.body
    );
    assert!(
        invalid
            .body
            .contains(&format!("value=\"{}\"", escaped(HOSTILE_NAME))),
        "{}",
        invalid.body
    );
    assert!(
        !invalid.body.contains("typed-secret-value"),
        "{}",
        invalid.body
    );

    let list = admin.get("/console/scans?status=sideways").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains(r#"role="alert""#), "{}", list.body);

    for missing in [
        "/console/connectors/00000000-0000-0000-0000-000000000000",
        "/console/connectors/not-an-id",
        "/console/scans/00000000-0000-0000-0000-000000000000",
        "/console/data-map/00000000-0000-0000-0000-000000000000/people-data",
    ] {
        assert_eq!(admin.get(missing).await.status, 404, "{missing}");
    }
}

#[tokio::test]
async fn an_analyst_has_the_controls_the_api_allows_them_and_no_other() {
    // By default the API lets any user of the tenant create, test, scan and delete.
    let app = TestApp::spawn_console("acme").await;
    let mut analyst = Visitor::new(&app);
    analyst.sign_in("analyst").await;
    let list = analyst.get("/console/connectors").await;
    assert!(list.body.contains("New connector"), "{}", list.body);
    create(&mut analyst, "Analyst's", "people-data").await;

    // A deployment requiring admin for both groups: no control, and the server refuses.
    let (app, _moto) = console_on_moto(|env| {
        env.insert(
            "DPS_ROLE_REQUIREMENTS".into(),
            "connectors=admin,scans=admin".into(),
        );
    })
    .await;
    let mut admin = Visitor::new(&app);
    admin.sign_in("admin").await;
    let connector = create(&mut admin, "HR", "people-data").await;
    let mut analyst = Visitor::new(&app);
    analyst.sign_in("analyst").await;
    let list = analyst.get("/console/connectors").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains("HR"), "{}", list.body);
    assert!(!list.body.contains("New connector"), "{}", list.body);
    let detail = analyst.get(&connector).await;
    assert_eq!(detail.status, 200, "{}", detail.body);
    for control in ["Test connection", "Scan now", "Delete"] {
        assert!(!detail.body.contains(control), "{control}: {}", detail.body);
    }
    assert_eq!(analyst.get("/console/connectors/new").await.status, 403);
    assert_eq!(
        analyst.get(&format!("{connector}/delete")).await.status,
        403
    );
    let csrf = detail.field("csrf");
    for action in ["test", "scan", "delete"] {
        let refused = analyst
            .post(&format!("{connector}/{action}"), &[("csrf", &csrf)])
            .await;
        assert_eq!(refused.status, 403, "{action}: {}", refused.body);
    }
    let refused = analyst
        .post(
            "/console/connectors",
            &aws_form(&csrf, "Mine", "people-data"),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(admin.get(&connector).await.status, 200);
}

/// The journey in a real browser: a connector created on moto through the form, tested,
/// scanned with its progress bar reaching 100%, its bucket on the data map with a hostile key
/// shown as text; an analyst of a deployment requiring admin sees no create or delete control.
#[tokio::test]
async fn journey_create_scan_and_map_a_connector_in_a_browser() {
    let (app, moto) = console_on_moto(|env| {
        env.insert(
            "DPS_ROLE_REQUIREMENTS".into(),
            "connectors=admin,scans=admin".into(),
        );
    })
    .await;
    people_with_a_hostile_key(&moto).await;
    let origin = &app.origin;
    let browser = Browser::launch("console_map_journey").await;
    browser.goto(&format!("{origin}/console/sign-in")).await;
    browser.click_button("Sign in as admin").await;
    browser.wait_for_text("h1", "Overview").await;

    browser.goto(&format!("{origin}/console/connectors")).await;
    browser.screenshot("connectors-empty").await;
    browser.click_link("New connector").await;
    browser.wait_for_text("h1", "New connector").await;
    browser.fill("Name", HOSTILE_NAME).await;
    browser
        .fill("Role ARN", "arn:aws:iam::123456789012:role/dps-scanner")
        .await;
    browser.fill("Region", "mars-1").await;
    browser.click_button("Create connector").await;
    browser.wait_for_text("#problems", "Region").await;
    browser.screenshot("connector-invalid").await;
    browser.fill("Region", "us-east-1").await;
    browser
        .fill(
            "Buckets (containers), one per line or comma; all the identity can list when empty",
            "people-data",
        )
        .await;
    browser.screenshot("connector-new").await;
    browser.click_button("Create connector").await;
    browser.wait_for_text("h1", HOSTILE_NAME).await;
    browser.click_button("Test connection").await;
    browser.wait_for_text("#connector-status", "active").await;
    browser.screenshot("connector").await;
    let connector_page = browser.url().await;
    browser.click_link("Delete…").await;
    browser.wait_for_text("h2", "Delete the connector").await;
    browser.screenshot("connector-delete").await;
    browser.click_link("Keep it").await;

    assert!(
        browser
            .url()
            .await
            .ends_with(&connector_page[connector_page.len() - 36..])
    );
    browser.click_button("Scan now").await;
    browser.wait_for_text("h1", "Scan").await;
    browser.screenshot("scan-running").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let percent = browser.try_text("#scan-percent").await.unwrap_or_default();
        if percent == "100%" {
            break;
        }
        assert!(Instant::now() < deadline, "the scan stayed at {percent}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    browser.wait_for_text("#scan-status", "completed").await;
    let value = browser
        .find("#scan-progress")
        .await
        .attr("value")
        .await
        .unwrap();
    assert_eq!(value.as_deref(), Some("100"));
    browser.screenshot("scan-completed").await;
    let scan_page = browser.url().await;
    browser.goto(&format!("{scan_page}/cancel")).await;
    browser.wait_for_text("h2", "Cancel this scan?").await;
    browser.screenshot("scan-cancel").await;
    browser.click_button("Cancel scan").await;
    browser.wait_for_text("[role=alert]", "already ended").await;

    browser.goto(&format!("{origin}/console/scans")).await;
    browser.screenshot("scans").await;
    reload_until(
        &browser,
        &format!("{origin}/console/data-map"),
        ".tile",
        "people-data",
    )
    .await;
    browser.screenshot("data-map").await;
    browser.click(".tile").await;
    browser.wait_for_text("h1", "people-data").await;
    let bucket_page = browser.url().await;
    reload_until(
        &browser,
        &bucket_page,
        "#bucket-files",
        "\"><script>alert(1)</script>.csv",
    )
    .await;
    browser.screenshot("bucket").await;

    // An analyst, where connectors and scans require admin: the pages, no control.
    let analyst = browser.driver().open("console_map_journey_analyst").await;
    analyst.goto(&format!("{origin}/console/sign-in")).await;
    analyst.click_button("Sign in as analyst").await;
    analyst.wait_for_text("h1", "Overview").await;
    analyst.goto(&format!("{origin}/console/connectors")).await;
    analyst.wait_for_text("#connectors", HOSTILE_NAME).await;
    assert!(
        analyst
            .try_find("a[href='/console/connectors/new']")
            .await
            .is_none()
    );
    analyst.click_link(HOSTILE_NAME).await;
    analyst.wait_for_text("#connector-status", "active").await;
    assert!(analyst.try_find("a.danger").await.is_none());
    assert!(analyst.try_find("form[action$='/scan']").await.is_none());
    analyst.screenshot("connector-analyst").await;
    analyst.finish().await;
    browser.finish().await;
}

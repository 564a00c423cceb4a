//! The journeys of the console's policies, drift and remediations in a real browser (headless
//! Chromium), against platform-api on a real Postgres, and on moto where a remediation needs a
//! bucket. Each ends with `finish()`, which fails on any dialog or console error, and takes a
//! screenshot of every page it visits.

use std::time::{Duration, Instant};

use integration_tests::TestApp;
use reqwest::Method;
use serde_json::Value;
use testkit::browser::Browser;
use testkit::emulators;

use crate::Client;
use crate::console_gov::{
    BROKEN, HOSTILE_NAME, SSNS, console_on_moto, fixed, hostile_policy, masked,
};

/// Signs in through the sign-in page's dev form, with the button `button`.
async fn sign_in(browser: &Browser, app: &TestApp, button: &str) {
    browser
        .goto(&format!("{}/console/sign-in", app.origin))
        .await;
    browser.click_button(button).await;
    browser.wait_for_text("h1", "Overview").await;
}

async fn value_of(browser: &Browser, css: &str) -> String {
    browser
        .find(css)
        .await
        .prop("value")
        .await
        .unwrap()
        .unwrap_or_default()
}

#[tokio::test]
async fn an_admin_fixes_a_policy_at_its_error_and_previews_it_and_an_analyst_sees_no_admin_control()
{
    let app = TestApp::spawn_console("acme").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let hostile = hostile_policy(&admin).await;
    let browser = Browser::launch(
        "an_admin_fixes_a_policy_at_its_error_and_previews_it_and_an_analyst_sees_no_admin_control",
    )
    .await;
    sign_in(&browser, &app, "Sign in as admin").await;
    browser.click_link("Policies").await;
    browser.wait_for_element("#policies").await;
    // The hostile name is text: the page holds it, and no image or script came of it.
    assert_eq!(
        browser
            .text(&format!("tr[data-policy=\"{hostile}\"] th a"))
            .await,
        HOSTILE_NAME
    );
    assert!(browser.try_find("#policies img").await.is_none());
    browser.screenshot("policies").await;

    browser.click_link("New policy").await;
    browser.wait_for_text("h1", "New policy").await;
    browser.screenshot("new policy").await;
    browser.fill("Policy document (YAML)", BROKEN).await;
    browser.click_button("Create policy").await;
    let problems = browser.wait_for_text("#problems", "/spec/mode").await;
    let line_of = |field: &str| {
        problems
            .lines()
            .find(|l| l.starts_with(field))
            .unwrap_or_else(|| panic!("no {field} in {problems}"))
            .to_owned()
    };
    assert!(line_of("/spec/mode ").contains("line 7"), "{problems}");
    assert!(
        line_of("/spec/conditions/0/min_confidence").contains("line 10"),
        "{problems}"
    );
    assert_eq!(
        value_of(&browser, "#yaml").await,
        BROKEN,
        "the text is kept"
    );
    browser.screenshot("policy with problems").await;

    browser.fill("Policy document (YAML)", &fixed()).await;
    browser.click_button("Create policy").await;
    browser.wait_for_text("h1", "Policy ssn-watch").await;
    let policy = browser.url().await;
    browser.screenshot("policy").await;

    browser.fill("Mode", "enforced").await;
    browser.click_button("Change mode").await;
    browser.wait_for_text(".facts", "enforced").await;
    assert!(value_of(&browser, "#yaml").await.contains("mode: enforced"));

    browser.click_button("Preview what it would do").await;
    browser
        .wait_for(
            "the preview to complete",
            Duration::from_secs(30),
            async |b| {
                b.try_text("#reconciliation-status")
                    .await
                    .filter(|s| s == "completed")
            },
        )
        .await;
    assert!(browser.try_find("meta[http-equiv=refresh]").await.is_none());
    browser.screenshot("dry-run preview").await;

    browser.goto(&policy).await;
    browser.click_link("Delete policy…").await;
    browser
        .wait_for_text("h1", "Delete policy ssn-watch?")
        .await;
    browser.screenshot("delete question").await;
    browser.click_button("Delete policy").await;
    browser.wait_for_text("h1", "Policies").await;
    assert!(browser.try_find("#policies").await.is_some());
    assert!(!browser.text("#policies").await.contains("ssn-watch"));

    // An analyst: no remediations in the navigation, and no control to change a policy.
    browser.click_button("Sign out").await;
    browser.wait_for_text("h1", "Sign in").await;
    sign_in(&browser, &app, "Sign in as analyst").await;
    assert!(
        browser
            .try_find("nav a[href=\"/console/remediations\"]")
            .await
            .is_none()
    );
    browser.click_link("Policies").await;
    browser.wait_for_element("#policies").await;
    assert!(
        browser
            .try_find("a[href=\"/console/policies/new\"]")
            .await
            .is_none()
    );
    browser.click_link(HOSTILE_NAME).await;
    browser.wait_for_element("#yaml-text").await;
    for control in ["#yaml", "#mode-form", "#preview-form", "a.danger"] {
        assert!(browser.try_find(control).await.is_none(), "{control}");
    }
    browser.screenshot("policy as an analyst").await;
    browser.finish().await;
}

/// Waits until the tenant has an exposure drift event; returns it.
async fn exposure_drift(admin: &Client<'_>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = admin
            .send(
                Method::GET,
                "/governance/drift-events?type=exposure_drift",
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        if let Some(event) = body["data"].as_array().and_then(|a| a.first()) {
            return event.clone();
        }
        assert!(Instant::now() < deadline, "no exposure drift: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn an_admin_checks_a_remediations_receipt_undoes_it_and_acknowledges_a_public_buckets_drift()
{
    let moto = emulators::moto(&[]);
    let app = console_on_moto(&moto).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (bucket, connector, _) = masked(&moto, &admin).await;
    let browser = Browser::launch(
        "an_admin_checks_a_remediations_receipt_undoes_it_and_acknowledges_a_public_buckets_drift",
    )
    .await;
    sign_in(&browser, &app, "Sign in as admin").await;
    browser.click_link("Remediations").await;
    browser.wait_for_element("#remediations").await;
    browser.screenshot("remediations").await;

    browser.click_link("people-data/people.csv").await;
    browser.wait_for_text("h2", "Receipts").await;
    let signatures = browser.find_all(".signature").await;
    assert_eq!(signatures.len(), 1);
    assert!(
        browser.text(".signature").await.starts_with("valid"),
        "{}",
        browser.text(".signature").await
    );
    assert!(browser.try_find(".signature.invalid").await.is_none());
    browser.click(".receipt details summary").await;
    browser.screenshot("remediation and its receipt").await;

    browser.click_link("Undo…").await;
    browser.wait_for_text("h1", "Undo this remediation?").await;
    browser.screenshot("undo question").await;
    browser.click_button("Undo remediation").await;
    browser.wait_for_text("#remediation-status", "undone").await;
    assert_eq!(browser.find_all(".signature.valid").await.len(), 2);
    assert!(browser.try_find(".signature.invalid").await.is_none());
    assert!(browser.text("#undone").await.starts_with("by admin"));
    browser.screenshot("undone").await;
    assert_eq!(
        crate::remediation::read(bucket.as_ref(), "people.csv")
            .await
            .unwrap(),
        SSNS
    );

    // The bucket is made public; the next scan's posture check records the exposure.
    crate::reconcile::s3_put(
        &moto.url(),
        "people-data",
        "acl",
        &[("x-amz-acl", "public-read")],
        "",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let event = exposure_drift(&admin).await;
    let id = event["event_id"].as_str().unwrap();
    browser.click_link("Drift").await;
    browser.wait_for_element(&format!("#event-{id}")).await;
    browser.fill("Type", "exposure_drift").await;
    browser.click_button("Filter").await;
    browser
        .wait_for_element(&format!("#event-{id} form.ack"))
        .await;
    assert!(
        browser
            .text(&format!("#event-{id} .changes"))
            .await
            .contains("public"),
    );
    browser.screenshot("drift").await;
    browser
        .find(&format!("#note-{id}"))
        .await
        .send_keys("Opened for the auditors; closing it today")
        .await
        .unwrap();
    browser.click(&format!("#event-{id} form.ack button")).await;
    let acknowledged = browser
        .wait_for_text(
            &format!("#event-{id} .acknowledged"),
            "Acknowledged by admin",
        )
        .await;
    assert!(
        acknowledged.contains("Opened for the auditors; closing it today"),
        "{acknowledged}"
    );
    assert!(browser.url().await.contains("type=exposure_drift"));
    browser.screenshot("drift acknowledged").await;
    browser.finish().await;
}

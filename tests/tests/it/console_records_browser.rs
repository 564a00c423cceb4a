//! The audit log, settings and tokenization journeys in a real Chromium, against platform-api
//! (and tokens-api) on a real Postgres: each ends with `finish`, which fails on any dialog or
//! console error, and screenshots every page.

use integration_tests::TestApp;
use testkit::browser::{Browser, Problem};

use crate::console_records::{HOSTILE, hostile_audit_entry, sam_saw_a_token, with_tokens};

/// Signs in as the dev user `user` and lands on `then`.
async fn signed_in(browser: &Browser, app: &TestApp, user: &str, then: &str) {
    browser
        .goto(&format!("{}/console/sign-in?then={then}", app.origin))
        .await;
    browser.click_button(&format!("Sign in as {user}")).await;
    browser.wait_for_text("header .who", user).await;
}

#[tokio::test]
async fn an_admin_changes_the_rollback_window_and_deny_list_and_sees_the_chain_verified() {
    let app = TestApp::spawn_console("acme").await;
    hostile_audit_entry(&app).await;
    let browser = Browser::launch("console_records_settings").await;
    signed_in(&browser, &app, "admin", "/console/settings").await;
    browser.wait_for_text("h1", "Settings").await;
    browser.screenshot("settings").await;

    browser
        .fill("Keep last-known-good copies for", "168 hours (7 days)")
        .await;
    browser.click_button("Save rollback window").await;
    browser
        .wait_for_text("#rollback-window [role=status]", "Rollback window saved.")
        .await;
    let chosen = browser
        .find("#retention_hours option:checked")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(chosen, "168 hours (7 days)");

    browser.click("input[value=destructive]").await;
    browser.click("input[value=governance]").await;
    browser.click_button("Save deny-list").await;
    browser
        .wait_for_text("#deny-list [role=status]", "Deny-list saved.")
        .await;
    for class in ["destructive", "governance"] {
        let ticked = browser
            .find(&format!("input[value={class}]"))
            .await
            .prop("checked")
            .await
            .unwrap();
        assert_eq!(ticked.as_deref(), Some("true"), "{class}");
    }
    browser.screenshot("settings-saved").await;

    // A bad value: refused beside its form, which keeps it.
    browser
        .fill("Endpoint URL", "http://cosign.example.com/sign")
        .await;
    browser.click_button("Save co-signing").await;
    browser
        .wait_for_text("#cosign-error", "endpoint_url must use https")
        .await;
    let kept = browser
        .field("Endpoint URL")
        .await
        .prop("value")
        .await
        .unwrap();
    assert_eq!(kept.as_deref(), Some("http://cosign.example.com/sign"));
    browser.screenshot("settings-refused").await;

    browser.click_link("Audit log").await;
    browser
        .wait_for_text("#chain-status", "Hash chain verified")
        .await;
    browser
        .wait_for_text("#audit", "lkg_retention_changed")
        .await;
    // The hostile entry is text on the page, not an element.
    browser.wait_for_text("#audit", HOSTILE).await;
    assert!(browser.try_find("#audit img").await.is_none());
    browser.screenshot("audit").await;
    browser.finish().await;
}

#[tokio::test]
async fn an_analyst_finds_no_settings_and_no_admin_tokenization_control() {
    let (app, t) = with_tokens().await;
    sam_saw_a_token(&t).await;
    let browser = Browser::launch("console_records_analyst").await;
    signed_in(&browser, &app, "analyst", "/console/tokenization").await;
    browser.wait_for_text("h1", "Tokenization").await;
    assert!(
        browser
            .try_find("nav a[href='/console/settings']")
            .await
            .is_none()
    );
    assert!(
        browser
            .try_find("a[href='/console/tokenization/policies/new']")
            .await
            .is_none()
    );
    assert!(
        browser
            .try_find("a[href^='/console/tokenization/detokenizations']")
            .await
            .is_none()
    );
    browser.wait_for_text("#token-policies", HOSTILE).await;
    assert!(browser.try_find("#token-policies img").await.is_none());
    browser.screenshot("tokenization-analyst").await;

    browser
        .goto(&format!("{}/console/settings", app.origin))
        .await;
    browser.wait_for_text("h1", "Not allowed").await;
    browser.screenshot("settings-403").await;
    // Chromium logs the refused page's 403 as a failed load: this journey ends with `close`
    // and requires that load, once, and nothing else (no dialog, no script).
    let problems = browser.close().await;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems.iter().all(|p| matches!(
            p,
            Problem::ConsoleError { source, message }
                if source == "network" && message.contains("/console/settings") && message.contains("403")
        )),
        "{problems:?}"
    );
}

#[tokio::test]
async fn an_admin_looks_up_who_saw_a_token() {
    let (app, t) = with_tokens().await;
    let ids = sam_saw_a_token(&t).await;
    let browser = Browser::launch("console_records_tokenization").await;
    signed_in(&browser, &app, "admin", "/console/tokenization").await;
    browser.wait_for_text("#token-policies", HOSTILE).await;
    assert!(browser.try_find("#token-policies img").await.is_none());
    browser.wait_for_text("#vault-entries", &ids[0]).await;
    browser
        .wait_for_text("#usage", "Tokens created this month")
        .await;
    browser.screenshot("tokenization").await;

    browser.click_link("the detokenization audit").await;
    browser.fill("Token id", &ids[0]).await;
    browser.click_button("Look up").await;
    let saw = browser.wait_for_text("#saw", "sam").await;
    assert_eq!(saw.trim(), "sam");
    browser.screenshot("who-saw").await;

    browser.click_link("sam").await;
    browser
        .wait_for_text("#detokenizations", "fraud_review")
        .await;
    browser.screenshot("by-user").await;

    browser
        .goto(&format!("{}/console/tokenization/policies/new", app.origin))
        .await;
    browser.fill("Name", "support lookups").await;
    browser.fill("Mode for email", "randomized").await;
    browser
        .fill("Roles that may detokenize (separated by spaces)", "support")
        .await;
    browser.screenshot("policy-form").await;
    browser.click_button("Save policy").await;
    browser
        .wait_for_text("#policies [role=status]", "Policy saved.")
        .await;
    browser
        .wait_for_text("#token-policies", "support lookups")
        .await;
    browser.finish().await;
}

//! The console in a real browser (headless Chromium): signing in, the overview saying what
//! the API says, filtering findings, what an analyst sees, and a forged form from another
//! site changing nothing. Every journey ends by checking that no dialog opened and nothing
//! was logged as an error.

use std::collections::BTreeMap;
use std::time::Duration;

use integration_tests::{Service, TestApp, dev_console};
use reqwest::Method;
use serde_json::Value;
use testkit::browser::{Browser, Problem};
use testkit::{emulators, seed};

use crate::Client;

const PEOPLE: &[u8] = b"name,ssn,email,phone\n\
Ann Lee,219-09-9999,ann.lee@example.com,(415) 555-0142\n\
Bo Chan,078-05-1120,bo.chan@example.com,(212) 555-0199\n\
Cy Diaz,536-22-4105,cy.diaz@example.org,(646) 555-0107\n";

/// platform-api on moto with a scan worker and the console's dev sign-in, and a bucket of
/// people scanned once; returns the app and the connector id.
async fn scanned(moto: &emulators::Emulator) -> (TestApp, String) {
    let url = moto.url();
    let app = TestApp::spawn_changed(
        Service::Platform,
        testkit::database().await,
        |env| {
            for (name, value) in seed::moto_platform_env(&url) {
                env.insert(name.into(), value);
            }
            env.insert("DPS_SCAN_WORKERS".into(), "1".into());
        },
        dev_console("acme"),
    )
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let bucket = seed::s3_bucket(&url, "hr-exports").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", PEOPLE)]).await;
    let connector = crate::scans::connector(&admin, "HR exports", "hr-exports").await;
    crate::scans::full_scan(&admin, &connector).await;
    (app, connector)
}

/// Signs in through the sign-in page's dev form as `user`, from `/console`.
async fn sign_in(browser: &Browser, app: &TestApp, user: &str) {
    browser.goto(&format!("{}/console", app.origin)).await;
    browser.wait_for_text("h1", "Sign in").await;
    browser.click_button(&format!("Sign in as {user}")).await;
    browser.wait_for_text("h1", "Overview").await;
}

/// Every page of `GET path`'s list, through the API.
async fn all(admin: &Client<'_>, path: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let page = match &cursor {
            Some(c) => format!("{path}{sep}limit=100&cursor={c}"),
            None => format!("{path}{sep}limit=100"),
        };
        let (status, body) = admin.send(Method::GET, &page, None).await;
        assert_eq!(status, 200, "{body}");
        items.extend(body["data"].as_array().unwrap().iter().cloned());
        match body["pagination"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return items,
        }
    }
}

/// The `data-key` → number cells of the overview's table `id`.
async fn table(browser: &Browser, id: &str) -> BTreeMap<String, i64> {
    let mut counts = BTreeMap::new();
    for cell in browser.find_all(&format!("#{id} td[data-key]")).await {
        let key = cell.attr("data-key").await.unwrap().unwrap();
        let text = cell.text().await.unwrap();
        counts.insert(key, text.replace(',', "").parse().unwrap());
    }
    counts
}

type Counts = BTreeMap<String, i64>;

/// The overview's numbers as the API gives them: open findings by category (the summary),
/// by the severity of each finding's risk score (its values), and open drift by severity.
async fn api_numbers(admin: &Client<'_>) -> (Counts, Counts, Counts) {
    let (status, summary) = admin.send(Method::GET, "/governance/summary", None).await;
    assert_eq!(status, 200, "{summary}");
    let counts = |object: &Value| -> Counts {
        object
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
            .collect()
    };
    let by_category: Counts = counts(&summary["data"]["findings_by_category"])
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    let severities = || {
        ["critical", "high", "medium", "low"]
            .into_iter()
            .map(|s| (s.to_owned(), 0))
            .collect::<Counts>()
    };
    let mut drift = severities();
    drift.extend(counts(&summary["data"]["open_drift_events"]));
    let occurrences: Counts = all(admin, "/findings?status=open")
        .await
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_owned(),
                f["occurrences"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut by_severity = severities();
    for score in all(admin, "/governance/risk-scores?level=finding").await {
        *by_severity
            .get_mut(score["severity"].as_str().unwrap())
            .unwrap() += occurrences
            .get(score["entity_id"].as_str().unwrap())
            .copied()
            .unwrap_or(0);
    }
    (by_category, by_severity, drift)
}

#[tokio::test]
async fn an_admin_signs_in_and_the_overview_and_findings_say_what_the_api_says() {
    let moto = emulators::moto(&[]);
    let (app, connector) = scanned(&moto).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let browser =
        Browser::launch("an_admin_signs_in_and_the_overview_and_findings_say_what_the_api_says")
            .await;
    browser
        .goto(&format!("{}/console/sign-in", app.origin))
        .await;
    browser.screenshot("sign-in").await;
    browser.assert_accessible().await;
    sign_in(&browser, &app, "admin").await;

    // The overview and the API read the same tables; the bucket's posture check rescored
    // after the scan may land between two reads, so they are compared until one reading of
    // both agrees.
    browser
        .wait_for(
            "the overview to equal the API",
            Duration::from_secs(30),
            async |b| {
                let api = api_numbers(&admin).await;
                b.goto(&format!("{}/console", app.origin)).await;
                let shown = (
                    table(b, "findings-by-category").await,
                    table(b, "findings-by-severity").await,
                    table(b, "drift-by-severity").await,
                );
                (shown == api).then_some(())
            },
        )
        .await;
    let (by_category, by_severity, _) = api_numbers(&admin).await;
    assert!(!by_category.is_empty());
    assert_eq!(
        by_severity.values().sum::<i64>(),
        by_category.values().sum::<i64>()
    );
    browser.screenshot("overview").await;
    browser.assert_accessible().await;

    // Filtering findings as a user does: the same rows as the API's filter.
    browser.click_link("Findings").await;
    browser.wait_for_element("#findings").await;
    browser.fill("Category", "government_id").await;
    browser.fill("Connector", "HR exports").await;
    browser.click_button("Filter").await;
    browser
        .wait_for(
            "the filtered findings",
            Duration::from_secs(10),
            async |b| {
                b.url()
                    .await
                    .contains("category=government_id")
                    .then_some(())
            },
        )
        .await;
    browser.screenshot("findings-filtered").await;
    browser.assert_accessible().await;
    let api = all(
        &admin,
        &format!("/findings?category=government_id&connector={connector}"),
    )
    .await;
    let rows = browser.find_all("#findings tbody tr").await;
    assert_eq!(rows.len(), api.len());
    assert!(!api.is_empty());
    for (row, finding) in rows.iter().zip(&api) {
        assert_eq!(
            row.attr("data-finding").await.unwrap().as_deref(),
            finding["id"].as_str()
        );
        let text = row.text().await.unwrap();
        assert!(
            text.contains(finding["preview"].as_str().unwrap()),
            "{text}"
        );
        // Never a value: only the masked preview.
        for value in ["219-09-9999", "078-05-1120", "536-22-4105"] {
            assert!(!text.contains(value), "{text}");
        }
    }
    let page = browser.client().source().await.unwrap();
    for value in [
        "219-09-9999",
        "078-05-1120",
        "536-22-4105",
        "ann.lee@example.com",
    ] {
        assert!(!page.contains(value), "a value on the page: {value}");
    }
    browser.finish().await;
}

#[tokio::test]
async fn an_analyst_finds_no_admin_control_and_a_forged_form_from_another_site_changes_nothing() {
    let app = TestApp::spawn_console("acme").await;
    let browser = Browser::launch(
        "an_analyst_finds_no_admin_control_and_a_forged_form_from_another_site_changes_nothing",
    )
    .await;
    sign_in(&browser, &app, "analyst").await;
    browser.screenshot("overview-analyst").await;
    browser.assert_accessible().await;
    let nav = browser.text("nav").await;
    assert!(nav.contains("Findings"), "{nav}");
    for admin_only in ["Settings", "Remediations"] {
        assert!(!nav.contains(admin_only), "{nav}");
    }
    assert!(browser.try_find("#remediations-by-state").await.is_none());

    // Another site's page posts a sign-out form to the console without the session's CSRF
    // token: the browser does not even send the session (SameSite=Strict), the console
    // refuses it, and the session lives on.
    let evil = evil_site(&app.origin).await;
    browser.goto(&evil).await;
    browser.click_button("Claim your prize").await;
    browser
        .wait_for("the console's answer", Duration::from_secs(10), async |b| {
            b.url().await.starts_with(&app.origin).then_some(())
        })
        .await;
    browser.screenshot("forged-post-answer").await;
    browser.goto(&format!("{}/console", app.origin)).await;
    browser.wait_for_text("h1", "Overview").await;
    let problems = browser.close().await;
    // The only thing logged is the refused post's own status, if the browser logs it.
    for problem in &problems {
        match problem {
            Problem::ConsoleError { message, .. } => {
                assert!(message.contains("40"), "{problem}");
            }
            Problem::Dialog { .. } => panic!("a dialog opened: {problem}"),
        }
    }
}

/// A page on another origin with a form that posts to the console's sign-out, as a site
/// trying cross-site request forgery would; returns its URL.
async fn evil_site(console: &str) -> String {
    use actix_web::{App, HttpResponse, HttpServer, web};
    let page = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Prize</title></head>
<body><form method="post" action="{console}/console/sign-out"><input type="hidden" name="csrf" value="guessed"><button type="submit">Claim your prize</button></form></body></html>"#
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = HttpServer::new(move || {
        let page = page.clone();
        App::new().route(
            "/",
            web::get().to(move || {
                let page = page.clone();
                async move { HttpResponse::Ok().content_type("text/html").body(page) }
            }),
        )
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    tokio::spawn(server);
    format!("http://localhost:{}/", addr.port())
}

/// platform-api whose console signs people in with a real OpenID Provider (authorization
/// code with PKCE), and that provider.
async fn with_provider() -> (TestApp, emulators::Emulator) {
    let port = emulators::free_port();
    let console = format!("http://127.0.0.1:{port}/console");
    let audience = "https://dps.test/api";
    let provider = emulators::oidc_provider(
        &format!("{console}/auth/callback"),
        audience,
        &serde_json::json!({"ann": {"tenant_id": "acme", "roles": ["admin"]}}),
    );
    let issuer = provider.url();
    let app = TestApp::spawn_changed(
        Service::Platform,
        testkit::database().await,
        |env| {
            env.insert("BIND_ADDR".into(), format!("127.0.0.1:{port}"));
            env.insert("DPS_AUTH_ISSUER".into(), issuer.clone());
            env.insert("DPS_AUTH_JWKS".into(), format!("{issuer}/jwks"));
            env.insert("DPS_AUTH_AUDIENCE".into(), audience.into());
            env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "true".into());
            env.insert("DPS_CONSOLE_CLIENT_ID".into(), "dps-console".into());
            env.insert("DPS_CONSOLE_URL".into(), console.clone());
        },
        // Plain HTTP on the test's loopback: cookies without `Secure`, as in the dev stack.
        |extra| extra.console.secure_cookies = false,
    )
    .await;
    (app, provider)
}

#[tokio::test]
async fn a_user_signs_in_with_the_identity_provider_by_code_and_pkce() {
    let (app, provider) = with_provider().await;
    let browser =
        Browser::launch("a_user_signs_in_with_the_identity_provider_by_code_and_pkce").await;
    browser
        .goto(&format!("{}/console/findings", app.origin))
        .await;
    browser.wait_for_text("h1", "Sign in").await;
    assert!(
        browser
            .try_find("form[action='/console/dev-sign-in']")
            .await
            .is_none()
    );
    browser.screenshot("sign-in-oidc").await;
    browser.assert_accessible().await;
    browser
        .click_link("Sign in with your identity provider")
        .await;
    // The provider's own login and consent pages.
    browser.wait_for_element("input[name=login]").await;
    browser
        .find("input[name=login]")
        .await
        .send_keys("ann")
        .await
        .unwrap();
    browser
        .find("input[name=password]")
        .await
        .send_keys("any")
        .await
        .unwrap();
    browser.screenshot("provider-login").await;
    browser.click("button[type=submit]").await;
    if browser.try_find("button[autofocus]").await.is_some() {
        browser.click("button[autofocus]").await;
    }
    // Back at the console, signed in, on the page first asked for.
    browser.wait_for_text("h1", "Findings").await;
    let who = browser.text("header .who").await;
    assert!(who.contains("ann") && who.contains("acme"), "{who}");
    browser.screenshot("signed-in-oidc").await;
    // The provider's own pages load a web font (unreachable offline) and have no icon: what
    // the browser logs there is the provider's. The console's pages logged nothing.
    let problems = browser.close().await;
    for problem in &problems {
        match problem {
            Problem::ConsoleError { message, .. }
                if message.contains(&provider.url())
                    || message.contains("fonts.googleapis.com") => {}
            other => panic!("the console logged or opened: {other}"),
        }
    }
}

#[tokio::test]
async fn a_provider_answer_that_is_not_this_sign_ins_is_refused() {
    let (app, _provider) = with_provider().await;
    let mut visitor = crate::console::Visitor::new(&app);
    // No sign-in started: the answer belongs to none.
    let lost = visitor
        .get("/console/auth/callback?code=abc&state=def")
        .await;
    assert_eq!(lost.status, 400, "{}", lost.body);
    // A sign-in started here, answered with another state: a forged or mixed-up answer.
    let started = visitor.get("/console/auth/start?then=/console").await;
    assert_eq!(started.status, 303);
    let to = started.location().to_owned();
    assert!(to.contains("code_challenge_method=S256"), "{to}");
    assert!(to.contains("client_id=dps-console"), "{to}");
    assert!(!to.contains("code_verifier"), "{to}");
    let forged = visitor
        .get("/console/auth/callback?code=abc&state=forged")
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(!visitor.cookies.contains_key("dps-console"));
    // The right state with a code the provider never issued: refused by the provider.
    let state = url::Url::parse(&to)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let refused = visitor
        .get(&format!(
            "/console/auth/callback?code=made-up&state={state}"
        ))
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("invalid_grant"), "{}", refused.body);
    assert!(!visitor.cookies.contains_key("dps-console"));
}

/// Every page the navigation offers, for an admin and for an analyst: each renders, is
/// accessible, opens no dialog and logs nothing; a screenshot of each is kept.
#[tokio::test]
async fn every_page_of_the_navigation_renders_accessibly_for_both_roles() {
    let app = TestApp::spawn_console("acme").await;
    for user in ["admin", "analyst"] {
        let browser = Browser::launch(&format!(
            "every_page_of_the_navigation_renders_accessibly_for_both_roles_{user}"
        ))
        .await;
        sign_in(&browser, &app, user).await;
        let mut links = Vec::new();
        for link in browser.find_all("nav a").await {
            let label = link.text().await.unwrap();
            let href = link.attr("href").await.unwrap().unwrap();
            links.push((label, href));
        }
        assert!(links.len() >= 9, "{links:?}");
        for (label, href) in &links {
            browser.goto(&format!("{}{href}", app.origin)).await;
            browser.wait_for_element("main h1").await;
            let heading = browser.text("main h1").await;
            assert!(
                !heading.contains("Not allowed") && !heading.contains("Not found"),
                "{user}: {label}: {heading}"
            );
            browser.assert_accessible().await;
            browser
                .screenshot(&label.to_lowercase().replace(' ', "-"))
                .await;
        }
        browser.finish().await;
    }
}

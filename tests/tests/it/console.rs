//! The web console over HTTP, as a browser sends it: sign-in, the sealed session cookie and
//! its attributes, CSRF on every form, the headers that allow no script, errors as pages,
//! and tenant data shown as text. (The journeys in a real browser are in `console_browser`.)

use std::collections::HashMap;

use integration_tests::{Service, TestApp};
use reqwest::header::{self, HeaderMap};
use reqwest::redirect::Policy;
use serde_json::json;

use crate::Client;

/// A browser without a script engine: it keeps cookies, follows nothing by itself.
pub(crate) struct Visitor<'a> {
    pub(crate) app: &'a TestApp,
    http: reqwest::Client,
    pub(crate) cookies: HashMap<String, String>,
}

pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect()
    }

    /// The value of the first form field `name` on the page.
    pub(crate) fn field(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .body
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name} in {}", self.body))
            + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].to_owned()
    }
}

impl<'a> Visitor<'a> {
    pub(crate) fn new(app: &'a TestApp) -> Self {
        Self {
            app,
            http: reqwest::Client::builder()
                .redirect(Policy::none())
                .pool_idle_timeout(std::time::Duration::from_secs(2))
                .build()
                .unwrap(),
            cookies: HashMap::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn answer(&mut self, request: reqwest::RequestBuilder) -> Answer {
        let response = request
            .header(header::COOKIE, self.cookie_header())
            .send()
            .await
            .unwrap();
        let answer = Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        };
        for cookie in answer.set_cookies() {
            let pair = cookie.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        answer
    }

    pub(crate) async fn get(&mut self, path: &str) -> Answer {
        let url = format!("{}{path}", self.app.origin);
        let request = self.http.get(url);
        self.answer(request).await
    }

    pub(crate) async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Answer {
        let url = format!("{}{path}", self.app.origin);
        let request = self.http.post(url).form(form);
        self.answer(request).await
    }

    /// Signs in as the dev user `user` through the sign-in page's form.
    pub(crate) async fn sign_in(&mut self, user: &str) -> Answer {
        let page = self.get("/console/sign-in?then=/console").await;
        assert_eq!(page.status, 200, "{}", page.body);
        let csrf = page.field("csrf");
        let answer = self
            .post(
                "/console/dev-sign-in",
                &[("csrf", &csrf), ("user", user), ("then", "/console")],
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer
    }
}

/// The headers every console page carries.
fn assert_locked_down(answer: &Answer) {
    let h = |name: &str| {
        answer
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let csp = h("content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("script-src"), "no script is allowed: {csp}");
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(h("x-frame-options"), "DENY");
    assert_eq!(h("cache-control"), "no-store");
    assert!(
        h("content-type").starts_with("text/html"),
        "{}",
        h("content-type")
    );
}

#[tokio::test]
async fn a_stranger_is_sent_to_sign_in_and_no_dev_sign_in_exists_outside_the_dev_stack() {
    let app = TestApp::spawn(Service::Platform).await;
    let mut visitor = Visitor::new(&app);
    let answer = visitor.get("/console/findings?status=open").await;
    assert_eq!(answer.status, 303);
    assert_eq!(
        answer.location(),
        "/console/sign-in?then=%2Fconsole%2Ffindings%3Fstatus%3Dopen"
    );
    let page = visitor.get("/console/sign-in").await;
    assert_eq!(page.status, 200);
    assert_locked_down(&page);
    assert!(!page.body.contains("Dev sign-in"), "{}", page.body);
    assert!(
        page.body.contains("No sign-in is configured"),
        "{}",
        page.body
    );
    let csrf = "any";
    // The dev sign-in is no route of a production service: a page, not JSON.
    let refused = visitor
        .post("/console/dev-sign-in", &[("csrf", csrf), ("user", "admin")])
        .await;
    assert_eq!(refused.status, 404);
    assert_locked_down(&refused);
    assert!(refused.body.contains("Not found"), "{}", refused.body);
    assert!(
        !visitor
            .cookies
            .keys()
            .any(|c| c.contains("dps-console") && !c.contains("sign-in"))
    );
    // Errors under /console are pages; the API's stay JSON.
    let missing = visitor.get("/console/no/such/page").await;
    assert_eq!(missing.status, 404);
    assert_locked_down(&missing);
    let api = visitor.get("/api/v1/no-such-route").await;
    assert!(
        api.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
}

#[tokio::test]
async fn a_dev_user_signs_in_to_a_sealed_strict_session_and_signs_out() {
    let app = TestApp::spawn_console("acme").await;
    let mut visitor = Visitor::new(&app);
    let page = visitor.get("/console/sign-in").await;
    assert!(page.body.contains("Sign in as admin"), "{}", page.body);
    let pending = page
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("dps-console-sign-in="))
        .unwrap();
    assert!(
        pending.contains("HttpOnly") && pending.contains("SameSite=Lax"),
        "{pending}"
    );

    let signed_in = visitor.sign_in("admin").await;
    let session = signed_in
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("dps-console="))
        .unwrap();
    assert!(session.contains("HttpOnly"), "{session}");
    assert!(session.contains("SameSite=Strict"), "{session}");
    assert!(session.contains("Path=/"), "{session}");
    // Plain HTTP in the dev stack: not Secure there, and always Secure elsewhere.
    assert!(!session.contains("Secure"), "{session}");
    // The token is sealed: nothing of a JWT is readable in the cookie.
    let value = &visitor.cookies["dps-console"];
    assert!(!value.contains("eyJ"), "{value}");
    assert!(
        signed_in.body.contains("url=/console"),
        "{}",
        signed_in.body
    );

    let overview = visitor.get("/console").await;
    assert_eq!(overview.status, 200, "{}", overview.body);
    assert_locked_down(&overview);
    assert!(overview.body.contains("Sensitive and exposed"));
    assert!(overview.body.contains("data-user=\"admin\""));
    assert!(overview.body.contains("href=\"/console/settings\""));
    assert!(overview.body.contains("href=\"/console/remediations\""));

    // A forged sign-out, without the session's token, is refused and changes nothing.
    let forged = visitor
        .post("/console/sign-out", &[("csrf", "forged")])
        .await;
    assert_eq!(forged.status, 403);
    assert_locked_down(&forged);
    assert_eq!(visitor.get("/console").await.status, 200);

    let csrf = overview.field("csrf");
    let out = visitor.post("/console/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303);
    assert_eq!(out.location(), "/console/sign-in");
    assert!(!visitor.cookies.contains_key("dps-console"));
    assert_eq!(visitor.get("/console").await.status, 303);
}

#[tokio::test]
async fn an_analyst_sees_no_admin_section_and_a_sign_in_form_from_elsewhere_is_refused() {
    let app = TestApp::spawn_console("acme").await;
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("analyst").await;
    let overview = visitor.get("/console").await;
    assert_eq!(overview.status, 200);
    assert!(overview.body.contains("data-user=\"analyst\""));
    assert!(!overview.body.contains("href=\"/console/settings\""));
    assert!(!overview.body.contains("href=\"/console/remediations\""));

    // A sign-in posted without the sign-in page's cookie (another site's form) is refused.
    let mut stranger = Visitor::new(&app);
    let refused = stranger
        .post(
            "/console/dev-sign-in",
            &[("csrf", "guess"), ("user", "admin")],
        )
        .await;
    assert_eq!(refused.status, 403);
    assert!(stranger.cookies.is_empty());
    // A session cookie from another key, or a changed one, is no session.
    stranger.cookies.insert(
        "dps-console".into(),
        visitor.cookies["dps-console"].replace('A', "B"),
    );
    assert_eq!(stranger.get("/console").await.status, 303);
}

#[tokio::test]
async fn tenant_data_is_shown_as_text_never_as_markup() {
    let app = TestApp::spawn_console("acme").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let hostile = "<img src=x onerror=alert(1)>\"><script>alert(2)</script>";
    let external_id = admin.external_id().await;
    let (status, body) = admin
        .send(
            reqwest::Method::POST,
            "/connectors",
            Some(json!({
                "name": hostile,
                "provider": "aws",
                "config": {
                    "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                    "external_id": external_id,
                    "region": "us-east-1",
                    "buckets": ["hr-exports"],
                },
            })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let mut visitor = Visitor::new(&app);
    visitor.sign_in("admin").await;
    let findings = visitor
        .get("/console/findings?resource_prefix=%3Cscript%3Ealert(3)%3C%2Fscript%3E")
        .await;
    assert_eq!(findings.status, 200, "{}", findings.body);
    assert!(!findings.body.contains("<img src=x"), "{}", findings.body);
    assert!(!findings.body.contains("<script>"), "{}", findings.body);
    assert!(
        findings
            .body
            .contains("&#60;img src=x onerror=alert(1)&#62;"),
        "{}",
        findings.body
    );
    assert!(
        findings
            .body
            .contains("&#60;script&#62;alert(3)&#60;/script&#62;")
    );
    // A filter the API refuses is said beside the form, not as a failure.
    let refused = visitor.get("/console/findings?category=nonsense").await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
}

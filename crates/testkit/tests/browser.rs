//! The browser harness against pages served by a real HTTP server: what a journey does works,
//! and each thing a console page must never do (open a dialog, log an error, run a script its
//! Content-Security-Policy forbids) fails the check.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use testkit::browser::{Browser, Problem};

/// Every page declares an icon: without one Chromium asks for `/favicon.ico`, and the 404 is a
/// console error.
const HEAD: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8">
<link rel="icon" href="data:,"><title>Buckets</title></head><body>"#;

/// Serves the test pages on a free loopback port, on the test's runtime; returns the origin.
async fn site() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(respond))
                    .await;
            });
        }
    });
    origin
}

async fn respond(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| escape(v))
            .unwrap_or_default()
    };
    let mut response = Response::builder().header("Content-Type", "text/html; charset=utf-8");
    let body = match request.uri().path() {
        "/" => format!(
            r#"{HEAD}<h1>Buckets</h1>
<form id="add" action="/added" method="get">
  <label for="bucket">Bucket name</label> <input id="bucket" name="bucket" value="draft">
  <label>Region <select name="region"><option>eu-west-1</option><option>us-east-1</option></select></label>
  <button>Add bucket</button>
</form>
<input aria-label="Filter buckets" id="filter">
<button id="reveal" type="button">Show details</button>
<p id="details"></p>
<script>
  document.getElementById("reveal").addEventListener("click", () =>
    setTimeout(() => {{ document.getElementById("details").textContent = "Details shown"; }}, 300));
</script>"#
        ),
        "/added" => format!(
            r#"{HEAD}<p id="result">Added {} in {}</p><div style="height: 3000px">tall</div>
<a href="/">Back to buckets</a>"#,
            param("bucket"),
            param("region")
        ),
        "/unlabelled" => format!(
            r#"{HEAD}<h1>Search</h1><input name="q"><a href="/"></a>
<table><tr><td>1</td></tr></table><span tabindex="2">first</span>"#
        ),
        "/alert" => format!(r#"{HEAD}<p>Hello</p><script>alert("injected");</script>"#),
        "/confirm" => format!(
            r#"{HEAD}<button type="button" onclick="confirm('Delete everything?')">Delete</button>"#
        ),
        "/console-error" => {
            format!(r#"{HEAD}<p>Hello</p><script>console.error("the page broke");</script>"#)
        }
        "/exception" => {
            format!(r#"{HEAD}<p>Hello</p><script>throw new Error("nobody caught this");</script>"#)
        }
        "/csp" => {
            // The console's policy forbids every script: an injected one is refused and logged.
            response = response.header("Content-Security-Policy", "script-src 'none'");
            format!(
                r#"{HEAD}<p id="marker">untouched</p>
<label for="search">Search</label> <input id="search">
<script>document.getElementById("marker").textContent = "script ran";</script>"#
            )
        }
        _ => {
            response = response.status(404);
            "not found".to_owned()
        }
    };
    Ok(response.body(Full::new(Bytes::from(body))).unwrap())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test]
async fn a_clean_page_is_read_filled_clicked_submitted_and_captured() {
    let origin = site().await;
    let test = "a_clean_page_is_read_filled_clicked_submitted_and_captured";
    let browser = Browser::launch(test).await;
    browser.goto(&format!("{origin}/")).await;
    assert_eq!(browser.title().await, "Buckets");
    assert_eq!(browser.text("h1").await, "Buckets");
    browser.assert_accessible().await;

    // The text appears 300 ms after the click: only a wait sees it.
    browser.click_button("Show details").await;
    assert_eq!(
        browser.wait_for_text("#details", "Details shown").await,
        "Details shown"
    );

    // A control with no <label> is found by its aria-label.
    browser.fill("Filter buckets", "inv").await;
    assert_eq!(
        browser.find("#filter").await.prop("value").await.unwrap(),
        Some("inv".to_owned())
    );
    browser.fill("Bucket name", "invoices-2024").await;
    browser.fill("Region", "us-east-1").await;
    assert_eq!(
        browser
            .field("Bucket name")
            .await
            .prop("value")
            .await
            .unwrap(),
        Some("invoices-2024".to_owned())
    );
    browser.submit("#add").await;
    assert_eq!(
        browser.wait_for_text("#result", "Added").await,
        "Added invoices-2024 in us-east-1"
    );
    assert!(browser.url().await.contains("/added?bucket=invoices-2024"));

    // The whole page, beyond the 900-pixel window.
    let path = browser.screenshot("after add").await;
    assert_eq!(
        path,
        testkit::target_dir()
            .join("screenshots")
            .join(test)
            .join("after_add.png")
    );
    let (width, height) = png_size(&std::fs::read(&path).unwrap());
    assert!(width > 1000 && height > 3000, "{width}x{height}");

    // The link sits below the window; clicking scrolls to it.
    browser.click_link("Back to buckets").await;
    browser.wait_for_element("#add").await;

    assert_eq!(browser.problems().await, vec![]);
    browser.finish().await;
}

#[tokio::test]
async fn an_alert_and_a_confirm_are_caught() {
    let origin = site().await;
    let browser = Browser::launch("an_alert_and_a_confirm_are_caught").await;
    browser.goto(&format!("{origin}/alert")).await;
    // The harness dismissed the dialog, so the journey goes on.
    assert_eq!(browser.text("p").await, "Hello");
    browser.goto(&format!("{origin}/confirm")).await;
    browser.click_button("Delete").await;
    assert_eq!(
        browser.close().await,
        vec![
            Problem::Dialog {
                text: "injected".into(),
                url: format!("{origin}/alert")
            },
            Problem::Dialog {
                text: "Delete everything?".into(),
                url: format!("{origin}/confirm")
            },
        ]
    );
}

#[tokio::test]
#[should_panic(expected = "a form control without a label")]
async fn a_page_with_an_unlabelled_control_is_not_accessible() {
    let origin = site().await;
    let browser = Browser::launch("a_page_with_an_unlabelled_control_is_not_accessible").await;
    browser.goto(&format!("{origin}/unlabelled")).await;
    // Each problem is listed: the link without text, the table without headers and the
    // positive tabindex beside the input.
    let checked = std::panic::AssertUnwindSafe(browser.assert_accessible());
    let failed = futures::FutureExt::catch_unwind(checked).await.unwrap_err();
    let message = failed.downcast_ref::<String>().cloned().unwrap_or_default();
    for problem in [
        "a control without a name",
        "a table without header cells",
        "a positive tabindex",
    ] {
        assert!(message.contains(problem), "{message}");
    }
    browser.finish().await;
    std::panic::resume_unwind(failed);
}

#[tokio::test]
#[should_panic(expected = "a JavaScript dialog opened on")]
async fn finish_fails_a_journey_that_opened_a_dialog() {
    let origin = site().await;
    let browser = Browser::launch("finish_fails_a_journey_that_opened_a_dialog").await;
    browser.goto(&format!("{origin}/alert")).await;
    browser.finish().await;
}

#[tokio::test]
async fn console_errors_and_uncaught_exceptions_are_caught() {
    let origin = site().await;
    let browser = Browser::launch("console_errors_and_uncaught_exceptions_are_caught").await;
    browser.goto(&format!("{origin}/console-error")).await;
    browser.goto(&format!("{origin}/exception")).await;
    let problems = browser.close().await;
    let [
        Problem::ConsoleError {
            source: logged,
            message: logged_message,
        },
        Problem::ConsoleError {
            source: thrown,
            message: thrown_message,
        },
    ] = problems.as_slice()
    else {
        panic!("expected two console errors: {problems:#?}");
    };
    assert_eq!(logged, "console-api");
    assert!(
        logged_message.contains("the page broke"),
        "{logged_message}"
    );
    assert_eq!(thrown, "javascript");
    assert!(
        thrown_message.contains("nobody caught this"),
        "{thrown_message}"
    );
}

#[tokio::test]
async fn an_inline_script_refused_by_a_strict_csp_is_caught() {
    let origin = site().await;
    let browser = Browser::launch("an_inline_script_refused_by_a_strict_csp_is_caught").await;
    browser.goto(&format!("{origin}/csp")).await;
    // The policy held: the script did not run.
    assert_eq!(browser.text("#marker").await, "untouched");
    // The harness's own scripts are WebDriver's, not the page's: the policy does not stop
    // them, and they log nothing.
    browser.fill("Search", "invoices").await;
    let problems = browser.close().await;
    let [Problem::ConsoleError { source, message }] = problems.as_slice() else {
        panic!("expected one console error: {problems:#?}");
    };
    assert_eq!(source, "security");
    assert!(
        message.contains("Content Security Policy") && message.contains("script-src 'none'"),
        "{message}"
    );
}

#[tokio::test]
#[should_panic(expected = "waited 300ms for `#details` to appear")]
async fn a_wait_that_times_out_fails_saying_what_it_waited_for() {
    let origin = site().await;
    let browser = Browser::launch("a_wait_that_times_out_fails_saying_what_it_waited_for").await;
    browser.goto(&format!("{origin}/")).await;
    // Nobody clicks "Show details": the text never comes.
    browser
        .wait_for(
            "`#details` to appear",
            Duration::from_millis(300),
            async |b| b.try_text("#details").await.filter(|t| !t.is_empty()),
        )
        .await;
}

#[tokio::test]
#[should_panic(expected = "dropped without finish() or close()")]
async fn a_browser_dropped_unchecked_fails_the_test() {
    let origin = site().await;
    let browser = Browser::launch("a_browser_dropped_unchecked_fails_the_test").await;
    browser.goto(&format!("{origin}/")).await;
    drop(browser);
}

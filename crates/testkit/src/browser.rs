//! A real browser for tests: headless Chromium driven over WebDriver by Debian's chromedriver,
//! for the console's journeys.
//!
//! [`Browser::launch`] starts chromedriver and opens one session; [`ChromeDriver::open`] opens
//! more on the same driver (a second user). A browser records every JavaScript dialog (alert,
//! confirm, prompt) that opens and every error Chromium logs to its console (`console.error`,
//! uncaught exceptions, Content-Security-Policy violations, failed loads, a missing favicon
//! included), and a test ends with [`Browser::finish`], which fails with what it saw. That is
//! how a journey detects script injected into a page: under the console's CSP an injected
//! inline script does not run, and Chromium logs the violation as an error.
//!
//! Variables: `CHROMEDRIVER` (default `/usr/bin/chromedriver`, Debian's `chromium-driver`) and
//! `CHROMIUM` (default `/usr/bin/chromium`, Debian's `chromium`). Either missing fails the test
//! with the packages to install; browser tests never skip.
//!
//! The helpers panic with the test's name, what they were doing and everything the browser saw
//! so far, as the rest of the test kit does; [`Browser::client`] is the WebDriver client itself
//! for anything they do not cover.

use std::fmt;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use fantoccini::error::CmdError;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

mod driver;
pub use driver::ChromeDriver;
pub use fantoccini::elements::Element;

/// How long a page may take to load, and a script to run, before the command fails: a page of
/// the console that takes longer is a failure to report, not to wait out.
const PAGE_TIMEOUT_MS: u64 = 30_000;
/// How long the `wait_for_*` helpers wait.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);
/// How often a wait asks again.
const POLL: Duration = Duration::from_millis(50);
/// How many dialogs in a row a page may open before the harness stops dismissing them.
const MAX_DIALOGS: usize = 20;
/// The key of an element reference in WebDriver's JSON (W3C WebDriver, "web element
/// identifier").
const WEB_ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// The controls labelled `arguments[0]`, for [`Browser::field`]. `HTMLLabelElement.control`
/// is the `for` target or the first labelable element inside.
/// What makes the page hard to use without a mouse or a screen: each problem a line. The
/// checks a page can be held to without a renderer's judgement: the document's language and
/// title, one `h1`, every form control with a name (its label, `aria-label` or
/// `aria-labelledby`), every button and link with text or a label, every image and SVG with
/// alternative text or a role and label, every table with header cells, and no positive
/// `tabindex` (which breaks the keyboard's order).
const ACCESSIBILITY: &str = include_str!("browser/accessibility.js");

const FIND_FIELDS: &str = r#"
const wanted = arguments[0];
const normal = (text) => text.replace(/\s+/g, " ").trim();
const found = [];
for (const label of document.querySelectorAll("label")) {
  const text = label.cloneNode(true);
  text.querySelectorAll("input, select, textarea, button").forEach((c) => c.remove());
  if (normal(text.textContent) === wanted && label.control) found.push(label.control);
}
if (found.length === 0) {
  for (const named of document.querySelectorAll("[aria-label]")) {
    if (normal(named.getAttribute("aria-label")) === wanted) found.push(named);
  }
}
return found;
"#;

impl ChromeDriver {
    /// Opens a headless Chromium session with a profile of its own, for the test named `test`
    /// (which names its screenshots' directory and prefixes its failures). Panics with
    /// chromedriver's log when Chromium does not start.
    pub async fn open(&self, test: &str) -> Browser {
        let profile = tempfile::Builder::new()
            .prefix("dps-chromium-")
            .tempdir()
            .unwrap_or_else(|e| panic!("{test}: creating Chromium's profile directory: {e}"));
        let mut args = vec![
            "--headless=new".to_owned(),
            "--window-size=1366,900".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        // Chromium refuses to run as root with its sandbox (CI runs as root in a container).
        if driver::running_as_root() {
            args.push("--no-sandbox".to_owned());
        }
        let capabilities = serde_json::Map::from_iter([
            ("browserName".to_owned(), json!("chrome")),
            // A dialog stays open until the harness reads and dismisses it, so that it is
            // recorded rather than dismissed by chromedriver as a side effect of the next
            // command.
            ("unhandledPromptBehavior".to_owned(), json!("ignore")),
            // Every console message, and what Chromium itself logs (CSP violations, failed
            // loads, uncaught exceptions), read back through `POST /session/{id}/se/log`.
            ("goog:loggingPrefs".to_owned(), json!({ "browser": "ALL" })),
            (
                "timeouts".to_owned(),
                json!({ "implicit": 0, "pageLoad": PAGE_TIMEOUT_MS, "script": PAGE_TIMEOUT_MS }),
            ),
            (
                "goog:chromeOptions".to_owned(),
                json!({ "binary": self.chromium(), "args": args }),
            ),
        ]);
        let mut builder = ClientBuilder::new(HttpConnector::new());
        builder.capabilities(capabilities);
        let client = builder.connect(&self.url()).await.unwrap_or_else(|e| {
            panic!(
                "{test}: chromedriver could not open a Chromium session ({e}); its log ends:\n{}",
                self.log_tail()
            )
        });
        let session_id = client.session_id().await.ok().flatten().unwrap_or_default();
        Browser::new(client, self.clone(), session_id, test, profile)
    }
}

/// What a page should never do, seen by the browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A JavaScript dialog (alert, confirm or prompt) opened; the harness dismissed it.
    Dialog { text: String, url: String },
    /// Chromium logged an error to the console. `source` is Chromium's: `console-api`
    /// (`console.error`), `javascript` (an uncaught exception), `security` (a CSP violation),
    /// `network` (a failed load), and others.
    ConsoleError { source: String, message: String },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Dialog { text, url } => {
                write!(f, "a JavaScript dialog opened on {url}, saying {text:?}")
            }
            Problem::ConsoleError { source, message } => {
                write!(f, "console error ({source}): {message}")
            }
        }
    }
}

/// One headless Chromium session, checked for dialogs and console errors.
///
/// End it with [`finish`](Self::finish) (or [`close`](Self::close) to inspect what it saw):
/// dropping it unchecked, when the test has not already failed, panics, so a journey cannot
/// forget the check.
#[derive(Debug)]
pub struct Browser {
    client: fantoccini::Client,
    session_id: String,
    test: String,
    seen: Mutex<Vec<Problem>>,
    visited: Mutex<Vec<String>>,
    closed: bool,
    /// Removed after the session ends, which the fields' order guarantees.
    _profile: tempfile::TempDir,
    driver: ChromeDriver,
}

impl Browser {
    fn new(
        client: fantoccini::Client,
        driver: ChromeDriver,
        session_id: String,
        test: &str,
        profile: tempfile::TempDir,
    ) -> Self {
        Self {
            client,
            session_id,
            test: test.to_owned(),
            seen: Mutex::new(Vec::new()),
            visited: Mutex::new(Vec::new()),
            closed: false,
            _profile: profile,
            driver,
        }
    }

    /// Starts a chromedriver of its own and opens a session for the test named `test`.
    pub async fn launch(test: &str) -> Self {
        let driver = tokio::task::spawn_blocking(ChromeDriver::start)
            .await
            .unwrap_or_else(|e| panic!("{test}: starting chromedriver: {e}"));
        driver.open(test).await
    }

    /// The chromedriver this session runs on, to open another session (another user) on it.
    pub fn driver(&self) -> &ChromeDriver {
        &self.driver
    }

    /// The WebDriver client, for what the helpers do not cover. Dialogs and console errors
    /// that its commands cause are still seen by [`finish`](Self::finish).
    pub fn client(&self) -> &fantoccini::Client {
        &self.client
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        lock(&self.visited).push(url.to_owned());
        let result = self.client.goto(url).await;
        self.ok(&format!("opening {url}"), result).await;
        self.settle_dialogs().await;
    }

    /// The current URL.
    pub async fn url(&self) -> String {
        let result = self.client.current_url().await;
        self.ok("reading the URL", result).await.to_string()
    }

    /// The page's title.
    pub async fn title(&self) -> String {
        let result = self.client.title().await;
        self.ok("reading the title", result).await
    }

    /// The element matching the CSS selector; panics when there is none.
    pub async fn find(&self, css: &str) -> Element {
        let result = self.client.find(Locator::Css(css)).await;
        self.ok(&format!("finding `{css}`"), result).await
    }

    /// Every element matching the CSS selector.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let result = self.client.find_all(Locator::Css(css)).await;
        self.ok(&format!("finding `{css}`"), result).await
    }

    /// The element matching the CSS selector, if there is one now.
    pub async fn try_find(&self, css: &str) -> Option<Element> {
        match self.client.find(Locator::Css(css)).await {
            Ok(element) => Some(element),
            Err(e) if e.is_no_such_element() => None,
            Err(e) => self.fail(&format!("finding `{css}`"), e).await,
        }
    }

    /// The form control labelled `label`: the control of the `<label>` whose text, apart from
    /// any control inside it and with whitespace collapsed, is exactly `label` (its `for`
    /// target, else the control it holds), else the element whose `aria-label` is `label`.
    /// Panics when there is none, or more than one.
    pub async fn field(&self, label: &str) -> Element {
        match self.try_field(label).await {
            Some(field) => field,
            None => {
                let report = self.report().await;
                panic!("{}: no field is labelled {label:?}\n{report}", self.test)
            }
        }
    }

    /// [`field`](Self::field), or `None` when no field is labelled `label` now.
    pub async fn try_field(&self, label: &str) -> Option<Element> {
        let doing = format!("finding the field labelled {label:?}");
        // A script rather than XPath: a label's text without the text of the control inside it
        // (a <select>'s options) is not an XPath 1.0 expression. WebDriver's scripts are not
        // the page's, so the console's CSP does not stop them.
        let found = self
            .client
            .execute(FIND_FIELDS, vec![Value::from(label)])
            .await;
        let found = self.ok(&doing, found).await;
        let mut fields = Vec::new();
        for reference in found.as_array().map(Vec::as_slice).unwrap_or_default() {
            let Some(id) = reference[WEB_ELEMENT].as_str() else {
                panic!("{}: {doing}: not an element: {reference}", self.test);
            };
            fields.push(Element::from_element_id(
                self.client.clone(),
                id.to_owned().into(),
            ));
        }
        match fields.len() {
            0 | 1 => fields.pop(),
            _ => {
                self.ambiguous(&format!("the field labelled {label:?}"))
                    .await
            }
        }
    }

    /// Types `value` into the field labelled `label` (see [`field`](Self::field)), replacing
    /// what it held; for a `<select>`, chooses the option whose text is `value`.
    pub async fn fill(&self, label: &str, value: &str) {
        let field = self.field(label).await;
        let doing = format!("filling {label:?}");
        let tag = field.tag_name().await;
        if self.ok(&doing, tag).await.eq_ignore_ascii_case("select") {
            let chosen = field.select_by_label(value).await;
            self.ok(&doing, chosen).await;
        } else {
            let cleared = field.clear().await;
            self.ok(&doing, cleared).await;
            let typed = field.send_keys(value).await;
            self.ok(&doing, typed).await;
        }
    }

    /// Submits the form matching `form_css` as a user would: by clicking its submit button,
    /// or, when it has none, by `requestSubmit()` (which validates and fires `submit`, as a
    /// click does).
    pub async fn submit(&self, form_css: &str) {
        let form = self.find(form_css).await;
        let doing = format!("submitting `{form_css}`");
        let buttons = form
            .find_all(Locator::Css(
                "button:not([type]), button[type=submit], input[type=submit]",
            ))
            .await;
        match self.ok(&doing, buttons).await.first() {
            Some(button) => {
                let clicked = button.click().await;
                self.ok(&doing, clicked).await;
            }
            None => {
                let form = serde_json::to_value(&form).unwrap_or(Value::Null);
                let submitted = self
                    .client
                    .execute("arguments[0].requestSubmit()", vec![form])
                    .await;
                self.ok(&doing, submitted).await;
            }
        }
        self.settle_dialogs().await;
    }

    /// Clicks the element matching the CSS selector.
    pub async fn click(&self, css: &str) {
        let element = self.find(css).await;
        let clicked = element.click().await;
        self.ok(&format!("clicking `{css}`"), clicked).await;
        self.settle_dialogs().await;
    }

    /// Clicks the one button whose text (or, for an `<input>`, value) is `text`. Panics when
    /// several match: use [`click`](Self::click) with a selector then.
    pub async fn click_button(&self, text: &str) {
        let literal = xpath_literal(text);
        let buttons = self
            .xpath_all(&format!(
                "//button[normalize-space(.)={literal}] | //input[(@type='submit' or \
                 @type='button' or @type='reset') and @value={literal}]"
            ))
            .await;
        self.click_one(buttons, &format!("the button {text:?}"))
            .await;
    }

    /// Clicks the one link whose text is `text`.
    pub async fn click_link(&self, text: &str) {
        let links = self.client.find_all(Locator::LinkText(text)).await;
        let links = self.ok(&format!("finding the link {text:?}"), links).await;
        self.click_one(links, &format!("the link {text:?}")).await;
    }

    /// The rendered text of the element matching the CSS selector.
    pub async fn text(&self, css: &str) -> String {
        let element = self.find(css).await;
        let text = element.text().await;
        self.ok(&format!("reading the text of `{css}`"), text).await
    }

    /// The rendered text of the element matching the CSS selector, if there is one now.
    pub async fn try_text(&self, css: &str) -> Option<String> {
        let element = self.try_find(css).await?;
        match element.text().await {
            Ok(text) => Some(text),
            // Replaced between the lookup and the read: not there now.
            Err(e) if e.is_stale_element_reference() => None,
            Err(e) => self.fail(&format!("reading the text of `{css}`"), e).await,
        }
    }

    /// Asks `probe` again every 50 ms until it answers `Some`, and returns that. Panics when
    /// `timeout` passes first, or at once when a dialog opens meanwhile, saying it waited for
    /// `what`.
    pub async fn wait_for<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut probe: impl AsyncFnMut(&Self) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            let dialogs = self.dialogs_seen();
            self.settle_dialogs().await;
            if self.dialogs_seen() > dialogs {
                let report = self.report().await;
                panic!(
                    "{}: a dialog opened while waiting for {what}\n{report}",
                    self.test
                );
            }
            if let Some(found) = probe(self).await {
                return found;
            }
            if Instant::now() >= deadline {
                let report = self.report().await;
                panic!("{}: waited {timeout:?} for {what}\n{report}", self.test);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits (up to [`DEFAULT_WAIT`]) for an element matching the CSS selector.
    pub async fn wait_for_element(&self, css: &str) -> Element {
        let what = format!("an element matching `{css}`");
        self.wait_for(&what, DEFAULT_WAIT, async |b| b.try_find(css).await)
            .await
    }

    /// Waits (up to [`DEFAULT_WAIT`]) until the element matching the CSS selector contains
    /// `needle`, and returns its whole text.
    pub async fn wait_for_text(&self, css: &str, needle: &str) -> String {
        let what = format!("`{css}` to contain {needle:?}");
        self.wait_for(&what, DEFAULT_WAIT, async |b| {
            b.try_text(css).await.filter(|text| text.contains(needle))
        })
        .await
    }

    /// Panics listing what makes the page now shown hard to use without a mouse or a screen
    /// ([`ACCESSIBILITY`]'s checks).
    pub async fn assert_accessible(&self) {
        let found = self.client.execute(ACCESSIBILITY, Vec::new()).await;
        let found = self.ok("checking accessibility", found).await;
        let problems: Vec<&str> = found
            .as_array()
            .map(|all| all.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !problems.is_empty() {
            let url = self.url().await;
            panic!(
                "{}: {url} is not accessible:\n  - {}",
                self.test,
                problems.join("\n  - ")
            );
        }
    }

    /// Saves a PNG of the whole page, beyond the window, as
    /// `<target dir>/screenshots/<test>/<name>.png`, and returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let doing = format!("taking the screenshot {name:?}");
        let reply = self
            .client
            .issue_cmd(SessionPost::cdp(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true }),
            ))
            .await;
        let reply = self.ok(&doing, reply).await;
        let png = reply["data"]
            .as_str()
            .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
            .unwrap_or_else(|| panic!("{}: {doing}: no PNG in {reply}", self.test));
        let dir = crate::target_dir()
            .join("screenshots")
            .join(file_name(&self.test));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("{}: creating {}: {e}", self.test, dir.display()));
        let path = dir.join(format!("{}.png", file_name(name)));
        std::fs::write(&path, png)
            .unwrap_or_else(|e| panic!("{}: writing {}: {e}", self.test, path.display()));
        path
    }

    /// Every dialog and console error seen so far in this session, on every page it visited,
    /// oldest first. Dismisses an open dialog and reads the console log first. Panics when the
    /// log cannot be read: a check that cannot see would pass.
    pub async fn problems(&self) -> Vec<Problem> {
        if let Err(e) = self.collect().await {
            panic!("{}: {e}", self.test);
        }
        lock(&self.seen).clone()
    }

    /// Ends the session and fails the test if any dialog opened or any console error was
    /// logged, listing them and the pages visited.
    pub async fn finish(self) {
        let test = self.test.clone();
        let visited = lock(&self.visited).clone();
        let problems = self.close().await;
        if !problems.is_empty() {
            panic!("{test}: {}", render(&problems, &visited));
        }
    }

    /// Ends the session and returns everything it saw: for tests that expect problems.
    #[must_use = "a journey that ignores what the browser saw checks nothing; use finish()"]
    pub async fn close(mut self) -> Vec<Problem> {
        let problems = self.problems().await;
        self.closed = true;
        // A failed close leaves Chromium to the driver, which kills it when dropped.
        let _ = self.client.clone().close().await;
        problems
    }

    /// Records and dismisses every dialog open now (a page may open one after another).
    async fn settle_dialogs(&self) {
        for _ in 0..MAX_DIALOGS {
            let Ok(text) = self.client.get_alert_text().await else {
                return;
            };
            let _ = self.client.dismiss_alert().await;
            let url = match self.client.current_url().await {
                Ok(url) => url.to_string(),
                Err(_) => "an unknown page".to_owned(),
            };
            lock(&self.seen).push(Problem::Dialog { text, url });
        }
    }

    /// Settles dialogs and moves the console log's errors into `seen`. chromedriver hands out
    /// each entry once, whichever page logged it.
    async fn collect(&self) -> Result<(), String> {
        let mut last_error = String::new();
        // A dialog opening between the two steps makes the log command fail; settle again.
        for _ in 0..3 {
            self.settle_dialogs().await;
            match self
                .client
                .issue_cmd(SessionPost::new("se/log", json!({ "type": "browser" })))
                .await
            {
                Ok(entries) => {
                    let errors = console_errors(&entries).map_err(|e| {
                        format!("the browser log is not a list of entries ({e}): {entries}")
                    })?;
                    lock(&self.seen).extend(errors);
                    return Ok(());
                }
                Err(e) if e.is_unexpected_alert_open() => last_error = e.to_string(),
                Err(e) => return Err(format!("cannot read the browser's console log: {e}")),
            }
        }
        Err(format!(
            "cannot read the browser's console log: {last_error}"
        ))
    }

    fn dialogs_seen(&self) -> usize {
        lock(&self.seen)
            .iter()
            .filter(|p| matches!(p, Problem::Dialog { .. }))
            .count()
    }

    /// What the browser saw, and the pages visited, for a failure message.
    async fn report(&self) -> String {
        let collected = self.collect().await;
        let mut report = render(&lock(&self.seen), &lock(&self.visited));
        if let Err(e) = collected {
            report.push_str(&format!("\n(and {e})"));
        }
        report
    }

    /// The command's result, or a panic saying what failed and what the browser saw.
    async fn ok<T>(&self, doing: &str, result: Result<T, CmdError>) -> T {
        match result {
            Ok(value) => value,
            Err(e) => self.fail(doing, e).await,
        }
    }

    async fn fail<T>(&self, doing: &str, error: CmdError) -> T {
        let report = self.report().await;
        panic!("{}: {doing}: {error}\n{report}", self.test)
    }

    async fn ambiguous<T>(&self, what: &str) -> T {
        let report = self.report().await;
        panic!("{}: more than one element is {what}\n{report}", self.test)
    }

    async fn xpath_all(&self, xpath: &str) -> Vec<Element> {
        let result = self.client.find_all(Locator::XPath(xpath)).await;
        self.ok(&format!("finding `{xpath}`"), result).await
    }

    async fn click_one(&self, elements: Vec<Element>, what: &str) {
        let element = match elements.as_slice() {
            [one] => one,
            [] => {
                let report = self.report().await;
                panic!("{}: there is no {what}\n{report}", self.test)
            }
            _ => self.ambiguous(what).await,
        };
        let clicked = element.click().await;
        self.ok(&format!("clicking {what}"), clicked).await;
        self.settle_dialogs().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        // The async client cannot end the session from here; without this, Chromium would run
        // on until the driver is killed, its profile directory removed under it.
        self.driver.delete_session_blocking(&self.session_id);
        if !std::thread::panicking() {
            panic!(
                "{}: the browser was dropped without finish() or close(), so nothing checked it \
                 for dialogs and console errors",
                self.test
            );
        }
    }
}

/// A chromedriver command outside the W3C protocol, posted to the current session:
/// `se/log` (the logs `goog:loggingPrefs` asked for) or `goog/cdp/execute` (a DevTools
/// protocol command).
#[derive(Debug)]
struct SessionPost {
    path: &'static str,
    body: Value,
}

impl SessionPost {
    fn new(path: &'static str, body: Value) -> Self {
        Self { path, body }
    }

    fn cdp(command: &str, params: Value) -> Self {
        Self::new(
            "goog/cdp/execute",
            json!({ "cmd": command, "params": params }),
        )
    }
}

impl WebDriverCompatibleCommand for SessionPost {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}

/// The `SEVERE` entries of a browser log (`[{level, message, source, timestamp}]`): what
/// Chromium's console shows as errors. Warnings and information are not problems.
fn console_errors(entries: &Value) -> Result<Vec<Problem>, &'static str> {
    let entries = entries.as_array().ok_or("not an array")?;
    let mut errors = Vec::new();
    for entry in entries {
        let level = entry["level"].as_str().ok_or("an entry without a level")?;
        if level == "SEVERE" {
            errors.push(Problem::ConsoleError {
                source: entry["source"].as_str().unwrap_or("unknown").to_owned(),
                message: entry["message"].as_str().unwrap_or_default().to_owned(),
            });
        }
    }
    Ok(errors)
}

fn render(problems: &[Problem], visited: &[String]) -> String {
    let mut out = if problems.is_empty() {
        "the browser saw no dialog and no console error".to_owned()
    } else {
        let mut out = format!("the browser saw {} problem(s):", problems.len());
        for problem in problems {
            out.push_str(&format!("\n  - {problem}"));
        }
        out
    };
    out.push_str(&format!("\npages visited: {visited:?}"));
    out
}

/// `text` as an XPath 1.0 string literal, which has no escapes: quoted with whichever quote it
/// lacks, else pieced together with `concat()`.
fn xpath_literal(text: &str) -> String {
    if !text.contains('\'') {
        format!("'{text}'")
    } else if !text.contains('"') {
        format!("\"{text}\"")
    } else {
        let parts: Vec<String> = text.split('\'').map(|p| format!("'{p}'")).collect();
        format!("concat({})", parts.join(", \"'\", "))
    }
}

/// `name` with everything but ASCII letters, digits, `-`, `_` and `.` made `_`, for a path.
fn file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match cleaned.trim_matches('.') {
        "" => "_".to_owned(),
        trimmed => trimmed.to_owned(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_browser_names_the_debian_packages() {
        let message = driver::locate(
            "CHROMEDRIVER",
            Some("/nonexistent/chromedriver".into()),
            "/usr/bin/chromedriver",
        )
        .unwrap_err();
        assert!(message.contains("/nonexistent/chromedriver"), "{message}");
        assert!(
            message.contains("apt-get install chromium chromium-driver"),
            "{message}"
        );
        // A directory is not an executable either.
        assert!(driver::locate("CHROMIUM", Some("/".into()), "/usr/bin/chromium").is_err());
    }

    #[test]
    fn only_severe_log_entries_are_console_errors() {
        let entries = json!([
            { "level": "INFO", "message": "hello", "source": "console-api" },
            { "level": "WARNING", "message": "deprecated", "source": "deprecation" },
            { "level": "SEVERE", "message": "boom", "source": "console-api" },
        ]);
        assert_eq!(
            console_errors(&entries),
            Ok(vec![Problem::ConsoleError {
                source: "console-api".into(),
                message: "boom".into()
            }])
        );
        assert!(console_errors(&json!({ "not": "a list" })).is_err());
        assert!(console_errors(&json!([{ "message": "no level" }])).is_err());
    }

    #[test]
    fn xpath_literals_quote_any_text() {
        assert_eq!(xpath_literal("Name"), "'Name'");
        assert_eq!(xpath_literal("Owner's name"), "\"Owner's name\"");
        assert_eq!(xpath_literal(r#"a'b"c"#), r#"concat('a', "'", 'b"c')"#);
    }

    #[test]
    fn screenshot_names_are_plain_file_names() {
        assert_eq!(file_name("console::login flow"), "console__login_flow");
        assert_eq!(file_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(file_name(".."), "_");
    }
}

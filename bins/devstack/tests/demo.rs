//! The dev stack as a developer runs it: the real binary, on free ports, against a database of
//! its own on the test Postgres, its demo store under a directory of its own, read over real
//! HTTP with the admin token it prints.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

/// How long a start may take to print its banner, and the demo its last line.
const START: Duration = Duration::from_secs(120);

/// A running `devstack`, its stdout and stderr collected line by line.
struct Stack {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    platform: String,
    token: String,
    http: reqwest::Client,
}

fn collect(pipe: impl std::io::Read + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

impl Stack {
    /// Starts the binary with only the variables given here (so a developer's own AWS
    /// variables cannot turn the demo off), and waits for its banner.
    fn start(database: &str, dev_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Stack {
        let mut child = Command::new(env!("CARGO_BIN_EXE_devstack"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", database)
            .env("DPS_DEV_DIR", dev_dir)
            .env("TOKENS_BIND_ADDR", "127.0.0.1:0")
            .env("PLATFORM_BIND_ADDR", "127.0.0.1:0")
            .env("STORAGE_BIND_ADDR", "127.0.0.1:0")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        let mut stack = Stack {
            child,
            stdout,
            stderr,
            platform: String::new(),
            token: String::new(),
            http: {
                boot::install_tls_provider();
                reqwest::Client::new()
            },
        };
        stack.wait_for("Ctrl-C stops everything.");
        let lines = stack.lines();
        stack.platform = lines
            .iter()
            .find_map(|l| l.trim().strip_prefix("platform-api"))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned();
        let at = lines
            .iter()
            .position(|l| l.starts_with("Dev admin access token"))
            .unwrap();
        stack.token = lines[at + 1].trim().to_owned();
        stack
    }

    fn lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// The first stdout line that starts with `prefix`, waited for.
    fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + START;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| l.starts_with(prefix)) {
                return line;
            }
            let exited = self.child.try_wait().unwrap();
            if exited.is_some() || Instant::now() > deadline {
                panic!(
                    "no line {prefix:?} (exit: {exited:?});\nstdout: {:#?}\nstderr: {:#?}",
                    self.lines(),
                    self.stderr.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    async fn get(&self, path: &str) -> Value {
        let response = self
            .http
            .get(format!("{}{path}", self.platform))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "GET {path}: {status} {body}");
        body
    }

    /// Every item of a list, page by page.
    async fn list(&self, path: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = match &cursor {
                None => format!("{path}&limit=100"),
                Some(c) => format!("{path}&limit=100&cursor={c}"),
            };
            let body = self.get(&page).await;
            items.extend(body["data"].as_array().unwrap().iter().cloned());
            match body["pagination"]["next_cursor"].as_str() {
                Some(next) if body["pagination"]["has_more"] == true => {
                    cursor = Some(url::form_urlencoded::byte_serialize(next.as_bytes()).collect());
                }
                _ => return items,
            }
        }
    }

    /// The dev tenant's connectors named `demo`.
    async fn demo_connectors(&self) -> Vec<Value> {
        self.list("/connectors?provider=aws")
            .await
            .into_iter()
            .filter(|c| c["name"] == "demo")
            .collect()
    }

    /// Stops it as Ctrl-C does, and waits for it to exit.
    fn stop(mut self) {
        let signalled = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(signalled.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "devstack did not stop on SIGINT");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Stack {
    /// A test that fails midway leaves no dev stack running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A directory of its own for one test's dev environment, removed at the end.
struct DevDir(PathBuf);

impl DevDir {
    fn new(name: &str) -> DevDir {
        let dir = std::env::temp_dir().join(format!("devstack-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        DevDir(dir)
    }
}

impl Drop for DevDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every file under `dir` with its length and modification time.
fn files(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut found = BTreeMap::new();
    let mut queue = vec![dir.to_owned()];
    while let Some(dir) = queue.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                queue.push(entry.path());
            } else {
                found.insert(entry.path(), (meta.len(), meta.modified().unwrap()));
            }
        }
    }
    found
}

/// The files the demo plants personal data in, and a type each must be found with.
const PLANTED: &[(&str, &str)] = &[
    ("demo-records/crm/customers-2024-q1.csv", "us_ssn"),
    ("demo-records/crm/customers-2024-q2.csv", "dob"),
    ("demo-records/logs/api/2024-05-14.log", "email"),
    ("demo-records/support/tickets-2024-05.ndjson", "us_ssn"),
    ("demo-records/exports/orders-2024-05.json", "phone"),
    ("demo-records/warehouse/customers.parquet", "us_ssn"),
    ("demo-records/warehouse/payroll.parquet", "us_ssn"),
    ("demo-records/events/signups.avro", "email"),
    ("demo-records/finance/payroll-2024.xlsx", "us_ssn"),
    ("demo-records/finance/ledger-q1.xlsx", "us_ssn"),
    ("demo-records/legal/case-summary.docx", "case_number"),
    ("demo-records/statements/statement-2024-04.pdf", "us_ssn"),
    ("demo-records/hr/offer-letters.pdf", "email"),
    ("demo-records/archive/crm-export-2023.zip", "us_ssn"),
    ("demo-records/archive/api-logs-2024-04.tar.gz", "email"),
    ("demo-records/integrations/customers.xml", "phone"),
    ("demo-records/marketing/welcome-letters.html", "us_ssn"),
    ("demo-public-share/shared/partner-contacts.csv", "email"),
    ("demo-public-share/shared/customer-letters.html", "us_ssn"),
];

/// The PII-free controls: 10 objects under this prefix.
const CONTROLS: &str = "demo-records/reference/";

/// Signs in at `console` (`http://…/console`) as the dev admin, through the sign-in page's
/// form as a browser would, and returns the overview's HTML.
async fn signed_in_overview(console: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let cookie = |response: &reqwest::Response, name: &str| {
        response
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix(&format!("{name}=")))
            .map(|c| c.split(';').next().unwrap().to_owned())
            .unwrap_or_else(|| panic!("no cookie {name}"))
    };
    let page = http.get(format!("{console}/sign-in")).send().await.unwrap();
    let pending = cookie(&page, "dps-console-sign-in");
    let body = page.text().await.unwrap();
    let marker = "name=\"csrf\" value=\"";
    let at = body.find(marker).unwrap() + marker.len();
    let csrf = &body[at..at + body[at..].find('"').unwrap()];
    let signed_in = http
        .post(format!("{console}/dev-sign-in"))
        .header(
            reqwest::header::COOKIE,
            format!("dps-console-sign-in={pending}"),
        )
        .form(&[("csrf", csrf), ("user", "dev-admin"), ("then", "/console")])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 200);
    let session = cookie(&signed_in, "dps-console");
    let overview = http
        .get(console)
        .header(reqwest::header::COOKIE, format!("dps-console={session}"))
        .send()
        .await
        .unwrap();
    assert_eq!(overview.status(), 200);
    overview.text().await.unwrap()
}

#[tokio::test]
async fn the_first_start_scans_the_demo_and_a_later_one_makes_nothing_twice() {
    let database = testkit::database().await;
    let dev = DevDir::new("demo");

    let mut stack = Stack::start(&database.url, &dev.0, &[], &[]);
    let banner = stack.lines().join("\n");
    assert!(
        banner.contains("demo storage  http://127.0.0.1:"),
        "{banner}"
    );
    assert!(
        banner.contains("demo-records: 27 objects created"),
        "{banner}"
    );
    assert!(
        banner.contains("demo-public-share: 2 objects created"),
        "{banner}"
    );
    // The outcome line comes before governance's.
    let governance = stack.wait_for("demo: exposure drift on demo-public-share (critical)");
    let outcome = stack
        .lines()
        .into_iter()
        .find(|l| l.starts_with("demo: scan ") && l.contains("files scanned"))
        .unwrap();
    assert!(
        outcome.contains(" completed in ") && outcome.contains("29 of 29 files scanned"),
        "{outcome}"
    );

    // One demo connector, tested, with the one scan the first start ran, completed.
    let demo = stack.demo_connectors().await;
    assert_eq!(demo.len(), 1, "{demo:?}");
    assert_eq!(demo[0]["status"], "active");
    let id = demo[0]["id"].as_str().unwrap().to_owned();
    let detail = stack.get(&format!("/connectors/{id}")).await["data"].clone();
    assert_eq!(detail["config"]["buckets"].as_array().unwrap().len(), 2);
    let history = detail["scan_history"].as_array().unwrap().clone();
    assert_eq!(history.len(), 1, "{history:?}");
    let scan = stack
        .get(&format!(
            "/scans/{}",
            history[0]["scan_id"].as_str().unwrap()
        ))
        .await["data"]
        .clone();
    assert_eq!(scan["status"], "completed", "{scan}");
    assert_eq!(scan["coverage"]["total_scanned"], 29, "{scan}");
    assert_eq!(scan["coverage"]["total_failed"], 0, "{scan}");

    // Findings in every planted file, none in a control.
    let findings = stack.list(&format!("/findings?connector={id}")).await;
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &findings {
        found
            .entry(f["resource"].as_str().unwrap().to_owned())
            .or_default()
            .insert(f["pii_type"].as_str().unwrap().to_owned());
    }
    for (resource, pii_type) in PLANTED {
        assert!(
            found.get(*resource).is_some_and(|t| t.contains(*pii_type)),
            "no {pii_type} in {resource}: {found:#?}"
        );
    }
    let in_controls: Vec<&String> = found.keys().filter(|r| r.starts_with(CONTROLS)).collect();
    assert!(
        in_controls.is_empty(),
        "findings in controls: {in_controls:?}"
    );
    assert_eq!(
        found.len(),
        PLANTED.len(),
        "findings outside the planted files: {:?}",
        found.keys()
    );

    // The public share drifted to public, and its files' risk counts it as exposed; the private
    // bucket did not.
    let exposure = stack
        .list(&format!(
            "/governance/drift-events?type=exposure_drift&connector={id}"
        ))
        .await;
    assert_eq!(exposure.len(), 1, "{exposure:?}");
    assert_eq!(exposure[0]["resource"], "demo-public-share");
    assert_eq!(exposure[0]["severity"], "critical");
    assert_eq!(exposure[0]["current_state"]["public"], true);
    assert_eq!(exposure[0]["current_state"]["encryption"], "none");
    let files_risk = stack
        .list(&format!(
            "/governance/risk-scores?level=file&connector={id}"
        ))
        .await;
    let exposure_of = |resource: &str| {
        files_risk
            .iter()
            .find(|r| r["entity_id"] == resource)
            .unwrap_or_else(|| panic!("no risk for {resource}"))["factors"]["exposure"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        exposure_of("demo-public-share/shared/partner-contacts.csv"),
        1.0
    );
    assert_eq!(exposure_of("demo-records/crm/customers-2024-q1.csv"), 0.2);
    assert!(detail["risk_score"].as_i64().unwrap() > 0, "{detail}");
    assert!(governance.contains("connector risk"), "{governance}");

    // The printed console URL, the dev sign-in, and the overview showing the demo's data.
    let console = stack
        .lines()
        .iter()
        .find_map(|l| l.trim().strip_prefix("console"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    let overview = signed_in_overview(&console).await;
    assert!(overview.contains("Sensitive and exposed"), "{overview}");
    assert!(overview.contains("demo-public-share"), "{overview}");
    assert!(overview.contains("government_id"), "{overview}");
    // In a browser, as the README shows it: the screenshots under target/screenshots are the
    // README's (docs/images).
    let browser = testkit::browser::Browser::launch("devstack_demo").await;
    browser.goto(&console).await;
    browser.wait_for_text("h1", "Sign in").await;
    browser.click_button("Sign in as dev-admin").await;
    browser.wait_for_text("h1", "Overview").await;
    browser
        .wait_for_text("#findings-by-category", "government_id")
        .await;
    browser.screenshot("overview").await;
    browser
        .goto(&format!("{console}/findings?status=open"))
        .await;
    browser.wait_for_element("#findings").await;
    browser.screenshot("findings").await;
    browser.finish().await;

    let storage = dev.0.join("storage");
    let before = files(&storage);
    stack.stop();

    // A later start keeps the data, the connector and its one scan.
    let mut again = Stack::start(&database.url, &dev.0, &[], &[]);
    let banner = again.lines().join("\n");
    assert!(banner.contains("demo-records: kept as it was"), "{banner}");
    assert!(
        banner.contains("demo-public-share: kept as it was"),
        "{banner}"
    );
    let report = again.wait_for("demo: last scan");
    assert!(report.contains("completed"), "{report}");
    assert!(
        again
            .lines()
            .iter()
            .any(|l| l.starts_with("demo: connector `demo` exists")),
        "{:?}",
        again.lines()
    );
    let demo = again.demo_connectors().await;
    assert_eq!(demo.len(), 1, "{demo:?}");
    let detail = again.get(&format!("/connectors/{id}")).await["data"].clone();
    assert_eq!(detail["scan_history"].as_array().unwrap().len(), 1);
    assert_eq!(files(&storage), before);
    again.stop();
}

#[tokio::test]
async fn no_demo_and_an_environment_that_names_a_cloud_make_nothing() {
    let database = testkit::database().await;
    let dev = DevDir::new("no-demo");

    let stack = Stack::start(&database.url, &dev.0, &["--no-demo"], &[]);
    let banner = stack.lines().join("\n");
    assert!(banner.contains("demo          off: --no-demo"), "{banner}");
    assert!(!banner.contains("demo storage"), "{banner}");
    assert!(stack.demo_connectors().await.is_empty());
    assert!(stack.list("/connectors?provider=aws").await.is_empty());
    stack.stop();

    // A real cloud's variables: the platform would go there, not to a demo store.
    let stack = Stack::start(
        &database.url,
        &dev.0,
        &[],
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:1")],
    );
    let banner = stack.lines().join("\n");
    assert!(
        banner.contains("demo          off: AWS_ENDPOINT_URL is set"),
        "{banner}"
    );
    // Nothing demo comes later either.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !stack.lines().iter().any(|l| l.starts_with("demo:")),
        "{:?}",
        stack.lines()
    );
    assert!(stack.list("/connectors?provider=aws").await.is_empty());
    stack.stop();
    assert!(!dev.0.join("storage").exists());
}

//! The demo: buckets of sample data in the dev stack's own store, a `demo` AWS connector for
//! the dev tenant that reaches them through the store's STS, and on the first start a full scan,
//! so that findings, risk and drift are there by the time anyone looks.
//!
//! Everything is made once: a bucket that exists is kept (`files::seed`), a connector named
//! `demo` that exists is kept, and a scan is started only for a connector that has none. A later
//! start reports what is there.

pub mod api;
pub mod files;
mod generate;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use api::{Api, Refused};

/// The demo connector's name in the dev tenant.
pub const CONNECTOR: &str = "demo";

/// The role the demo connector assumes, in AWS's documentation account.
pub const ROLE_ARN: &str = "arn:aws:iam::111122223333:role/dps-demo-scanner";

/// The region the demo connector names (the store answers for any).
pub const REGION: &str = "us-east-1";

/// The variables through which the platform finds its own AWS identity or AWS's endpoints
/// (docs/configuration.md, "Cloud access"). When the environment sets any of them, the platform
/// goes where they say, not to the demo store, so the demo is not made at all.
pub const CLOUD_VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL_STS",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
];

/// Whether the demo is made, and why not when it is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    On,
    Off(String),
}

impl Switch {
    /// Off with `--no-demo`, or when `set` (an environment variable, unset when empty) names
    /// any of [`CLOUD_VARIABLES`].
    pub fn decide(no_demo: bool, set: impl Fn(&str) -> Option<String>) -> Switch {
        if no_demo {
            return Switch::Off("--no-demo".into());
        }
        match CLOUD_VARIABLES.iter().find(|name| set(name).is_some()) {
            Some(name) => Switch::Off(format!(
                "{name} is set, so the platform uses the cloud the environment names"
            )),
            None => Switch::On,
        }
    }
}

/// How often the scan's progress is read while the demo follows it.
const POLL: Duration = Duration::from_secs(1);

/// The shortest time between two progress lines.
const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// How long the demo waits for the public bucket's exposure drift after its scan ended: the
/// posture check is queued at the scan's end and runs within seconds.
const DRIFT_WAIT: Duration = Duration::from_secs(90);

/// Makes the demo connector and starts its first scan, or finds them; prints what it did, then
/// the scan's progress and outcome and what governance made of it.
pub async fn run(api: &Api, external_id: &str) -> anyhow::Result<()> {
    let connector = match find(api).await? {
        Some(found) => {
            println!("demo: connector `{CONNECTOR}` exists ({found}); nothing created");
            found
        }
        None => create(api, external_id).await?,
    };
    let (detail, _) = api.get(&format!("/connectors/{connector}")).await?;
    let history = detail["scan_history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let scan = match history.first() {
        None => {
            let started = api
                .post(
                    &format!("/connectors/{connector}/scan"),
                    json!({"type": "full"}),
                )
                .await?;
            let scan = text(&started["scan_id"]);
            println!("demo: full scan {scan} started");
            scan
        }
        Some(last) => {
            let scan = text(&last["scan_id"]);
            let status = text(&last["status"]);
            if matches!(status.as_str(), "queued" | "running") {
                println!("demo: scan {scan} is {status}; following it");
            } else {
                println!(
                    "demo: last scan {scan} {status}: {} files, {} findings; {} open findings, \
                     connector risk {}",
                    last["files_processed"],
                    last["findings_count"],
                    detail["findings_count"],
                    detail["risk_score"]
                );
                return Ok(());
            }
            scan
        }
    };
    let ended = follow(api, &scan).await?;
    if ended["status"] != "cancelled" {
        governance(api, &connector).await?;
    }
    Ok(())
}

/// The id of the dev tenant's connector named [`CONNECTOR`], if there is one.
async fn find(api: &Api) -> anyhow::Result<Option<String>> {
    let connectors = api.list("/connectors").await?;
    Ok(connectors
        .iter()
        .find(|c| c["name"] == CONNECTOR)
        .map(|c| text(&c["id"])))
}

/// Creates the connector and tests it, so that it is `active` before its scan.
async fn create(api: &Api, external_id: &str) -> anyhow::Result<String> {
    let body = json!({
        "name": CONNECTOR,
        "provider": "aws",
        "config": {
            "role_arn": ROLE_ARN,
            "external_id": external_id,
            "region": REGION,
            "buckets": [files::RECORDS, files::PUBLIC_SHARE],
        },
    });
    let created = match api.post("/connectors", body).await {
        Ok(created) => created,
        // Another dev stack on the same database made it a moment ago.
        Err(e) if e.downcast_ref::<Refused>().is_some_and(|r| r.status == 409) => {
            let found = find(api).await?.context("the demo connector vanished")?;
            println!("demo: connector `{CONNECTOR}` exists ({found}); nothing created");
            return Ok(found);
        }
        Err(e) => return Err(e),
    };
    let id = text(&created["id"]);
    let test = api
        .post(&format!("/connectors/{id}/test"), json!({}))
        .await?;
    if test["connected"] != true {
        anyhow::bail!(
            "the demo connector {id} failed its connection test: {}",
            test["error"]
        );
    }
    println!(
        "demo: connector `{CONNECTOR}` created ({id}): AWS, role {ROLE_ARN}, buckets {} and {}; \
         connection test passed ({} objects sampled)",
        files::RECORDS,
        files::PUBLIC_SHARE,
        test["sample_objects"]
    );
    Ok(id)
}

/// Prints the scan's progress while it runs (when it moved, at most every few seconds), then
/// its outcome line; returns the scan as it ended.
async fn follow(api: &Api, scan: &str) -> anyhow::Result<Value> {
    let mut shown = (-1, -1);
    let mut last_line: Option<Instant> = None;
    loop {
        let (now, _) = api.get(&format!("/scans/{scan}")).await?;
        let status = text(&now["status"]);
        let progress = &now["progress"];
        if !matches!(status.as_str(), "queued" | "running") {
            let coverage = &now["coverage"];
            println!(
                "demo: scan {scan} {status} in {} s: {} of {} files scanned, {} skipped, {} \
                 failed, {} findings{}",
                progress["elapsed_seconds"],
                coverage["total_scanned"],
                coverage["total_enumerated"],
                coverage["total_skipped"],
                coverage["total_failed"],
                progress["findings_count"],
                now["status_reason"]
                    .as_str()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
            return Ok(now);
        }
        let position = (
            progress["files_processed"].as_i64().unwrap_or(0),
            progress["findings_count"].as_i64().unwrap_or(0),
        );
        if status == "running"
            && position != shown
            && last_line.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY)
        {
            println!(
                "demo: scan {status}: {} of {} files, {} findings ({}%)",
                position.0, progress["files_total"], position.1, progress["percent_complete"]
            );
            shown = position;
            last_line = Some(Instant::now());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits for the public bucket's exposure drift (the posture check after the scan), then
/// prints it with the connector's risk.
async fn governance(api: &Api, connector: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + DRIFT_WAIT;
    let drift = loop {
        let (events, _) = api
            .get(&format!(
                "/governance/drift-events?type=exposure_drift&connector={connector}"
            ))
            .await?;
        if let Some(event) = events.as_array().and_then(|e| e.first()).cloned() {
            break Some(event);
        }
        if Instant::now() > deadline {
            break None;
        }
        tokio::time::sleep(POLL).await;
    };
    let (detail, _) = api.get(&format!("/connectors/{connector}")).await?;
    let events = api
        .list(&format!("/governance/drift-events?connector={connector}"))
        .await?;
    match drift {
        Some(event) => println!(
            "demo: exposure drift on {} ({}): {}; {} drift events, {} open findings, connector \
             risk {}",
            text(&event["resource"]),
            text(&event["severity"]),
            text(&event["description"]),
            events.len(),
            detail["findings_count"],
            detail["risk_score"]
        ),
        None => println!(
            "demo: no exposure drift yet after {} s; {} open findings, connector risk {}",
            DRIFT_WAIT.as_secs(),
            detail["findings_count"],
            detail["risk_score"]
        ),
    }
    Ok(())
}

/// A JSON string's text, or its JSON form when it is not a string.
fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_stays_off_when_asked_or_when_the_environment_names_a_cloud() {
        let none = |_: &str| None;
        assert_eq!(Switch::decide(false, none), Switch::On);
        assert_eq!(Switch::decide(true, none), Switch::Off("--no-demo".into()));
        let profile = |name: &str| (name == "AWS_PROFILE").then(|| "work".to_owned());
        assert!(
            matches!(Switch::decide(false, profile), Switch::Off(why) if why.starts_with("AWS_PROFILE"))
        );
        // The region alone sends no request anywhere else.
        let region = |name: &str| (name == "AWS_REGION").then(|| "eu-west-1".to_owned());
        assert_eq!(Switch::decide(false, region), Switch::On);
    }
}

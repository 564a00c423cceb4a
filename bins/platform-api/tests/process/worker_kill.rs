//! A `scan-worker` process SIGKILLed in the middle of its chunk, with outcomes recorded and
//! outcomes not yet recorded. Another worker takes the chunk again once the lease runs out,
//! scans what was not recorded, and the scan completes with every object covered once and no
//! finding twice.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use serde_json::json;
use testkit::emulators;

use crate::replicas::{count, scan_worker_binary};

const BUCKET: &str = "big-exports";
/// Objects, in one chunk; the worker records outcomes 32 at a time.
const OBJECTS: usize = 160;

/// Object `n`: one SSN no other object holds, then 24 KiB of plain text to read.
pub(crate) fn object(n: usize) -> (String, Vec<u8>) {
    let mut body = format!(
        "name,ssn\nAnn Lee {n},{:03}-{:02}-{:04}\n",
        101 + n % 500,
        11 + n % 80,
        1001 + n
    );
    body.push_str(&"lorem ipsum dolor sit amet, consectetur adipiscing elit\n".repeat(440));
    (format!("rows/{n:04}.csv"), body.into_bytes())
}

/// A `scan-worker` process, killed when dropped so that a failing test leaves none behind.
pub(crate) struct Worker(std::process::Child);

impl Worker {
    pub(crate) fn start(env: &HashMap<String, String>) -> Self {
        Worker(
            std::process::Command::new(scan_worker_binary())
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .envs(env)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    /// SIGKILL, and the exit reaped.
    pub(crate) fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    pub(crate) fn wait(&mut self) -> std::process::ExitStatus {
        self.0.wait().unwrap()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_mid_chunk_leaves_it_to_the_next_with_no_duplicate_finding() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let master_key = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
    let moto = emulators::moto(&[]);
    let objects: Vec<(String, Vec<u8>)> = (0..OBJECTS).map(object).collect();
    crate::seeded_bucket(&moto, BUCKET, &objects).await;

    // Only scan-worker processes scan.
    let (started, scan) = crate::scan_of_bucket(
        &db,
        &master_key,
        &moto,
        BUCKET,
        &[("DPS_SCAN_WORKERS", "0")],
        json!({"max_workers": 1}),
    )
    .await;
    let config = crate::deployment_config(&started, &scan).await;
    let mut worker_env = crate::moto_env(&db, &master_key, &moto);
    for (name, value) in config["data"]["environment"].as_object().unwrap() {
        worker_env.insert(name.clone(), value.as_str().unwrap().to_owned());
    }
    // A short lease, so that the chunk of the killed worker is free again soon.
    worker_env.insert("DPS_SCAN_LEASE_SECONDS".into(), "3".into());

    let recorded =
        "SELECT count(*) AS n FROM scan_resources WHERE tenant_id = $1 AND state <> 'pending'";
    let mut first = Worker::start(&worker_env);
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_kill = loop {
        let n = count(&mut conn, recorded).await;
        if n >= 1 || Instant::now() >= deadline {
            first.kill();
            break count(&mut conn, recorded).await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        (1..OBJECTS as i64).contains(&at_kill),
        "the worker was to be killed mid-chunk, but {at_kill} of {OBJECTS} were recorded"
    );

    // A second worker takes the chunk once the lease runs out and finishes it.
    let mut second = Worker::start(&worker_env);
    let status = tokio::task::spawn_blocking(move || second.wait())
        .await
        .unwrap();
    assert!(status.success(), "the second worker: {status}");
    let done = crate::get(&started, &format!("/scans/{scan}")).await;
    assert_eq!(done["data"]["status"], "completed", "{done}");
    assert_eq!(
        done["data"]["progress"]["files_processed"], OBJECTS,
        "{done}"
    );
    crate::assert_ssn_findings_once(&mut conn, OBJECTS).await;
    let (status, _) = started.service.stop();
    assert!(status.success());
}

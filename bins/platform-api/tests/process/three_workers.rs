//! Three `scan-worker` processes on one scan, configured only from the scan's deployment
//! config and the cloud identity they read objects with, as an orchestrator runs them: they
//! hold no database URL and no master key, and work through the coordinator API. One is
//! SIGKILLed mid-scan. The other two take its chunk once its lease runs out, and the scan
//! completes with every object covered once, its counts exact and no finding twice.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use serde_json::json;
use testkit::emulators;

use crate::replicas::count;
use crate::worker_kill::{Worker, object};

const BUCKET: &str = "estate";
const WORKERS: usize = 3;
/// Objects: three chunks of 80, one per worker.
const OBJECTS: usize = 240;

#[tokio::test(flavor = "multi_thread")]
async fn three_workers_finish_a_scan_when_one_is_killed_with_no_object_lost_or_found_twice() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let master_key = base64::engine::general_purpose::STANDARD.encode([6u8; 32]);
    let moto = emulators::moto(&[]);
    let objects: Vec<(String, Vec<u8>)> = (0..OBJECTS).map(object).collect();
    crate::seeded_bucket(&moto, BUCKET, &objects).await;

    // Only scan-worker processes scan, and the coordinator leases them chunks for 3 s, so
    // that the killed worker's chunk is free again soon.
    let (started, scan) = crate::scan_of_bucket(
        &db,
        &master_key,
        &moto,
        BUCKET,
        &[("DPS_SCAN_WORKERS", "0"), ("DPS_SCAN_LEASE_SECONDS", "3")],
        json!({ "max_workers": WORKERS }),
    )
    .await;
    let config = crate::deployment_config(&started, &scan).await;
    // What a worker is given: the deployment config's environment, and the identity it reads
    // the bucket with. No database, no master key.
    let mut worker_env: HashMap<String, String> = config["data"]["environment"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_owned()))
        .collect();
    assert!(
        !worker_env.contains_key("DATABASE_URL") && !worker_env.contains_key("DPS_MASTER_KEY"),
        "{worker_env:?}"
    );
    for (name, value) in testkit::seed::moto_platform_env(&moto.url()) {
        worker_env.insert(name.into(), value);
    }
    // The coordinator and the bucket are on the loopback, over http.
    worker_env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "true".into());

    let recorded =
        "SELECT count(*) AS n FROM scan_resources WHERE tenant_id = $1 AND state <> 'pending'";
    let mut workers: Vec<Worker> = (0..WORKERS).map(|_| Worker::start(&worker_env)).collect();
    let running =
        "SELECT count(*) AS n FROM scan_chunks WHERE tenant_id = $1 AND status = 'running'";
    // Killed once every worker holds its chunk and has recorded some of it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_kill = loop {
        let n = count(&mut conn, recorded).await;
        let held = count(&mut conn, running).await;
        if (held == WORKERS as i64 && n >= (OBJECTS / WORKERS / 4) as i64)
            || Instant::now() >= deadline
        {
            workers[1].kill();
            break count(&mut conn, recorded).await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        (1..OBJECTS as i64).contains(&at_kill),
        "a worker was to be killed mid-scan, but {at_kill} of {OBJECTS} were recorded"
    );
    let survivors: Vec<Worker> = workers
        .into_iter()
        .enumerate()
        .filter_map(|(n, worker)| (n != 1).then_some(worker))
        .collect();
    for mut worker in survivors {
        let status = tokio::task::spawn_blocking(move || worker.wait())
            .await
            .unwrap();
        assert!(status.success(), "a surviving worker: {status}");
    }

    let done = crate::get(&started, &format!("/scans/{scan}")).await;
    assert_eq!(done["data"]["status"], "completed", "{done}");
    let progress = &done["data"]["progress"];
    assert_eq!(progress["files_total"], OBJECTS, "{done}");
    assert_eq!(progress["files_processed"], OBJECTS, "{done}");
    assert_eq!(progress["files_failed"], 0, "{done}");
    assert_eq!(progress["findings_count"], OBJECTS, "{done}");
    assert_eq!(
        count(
            &mut conn,
            "SELECT count(*) AS n FROM scan_resources WHERE tenant_id = $1 AND state = 'scanned'"
        )
        .await,
        OBJECTS as i64,
        "every object scanned, none lost"
    );
    // The killed worker's chunk, and only it, was claimed twice.
    assert_eq!(
        count(
            &mut conn,
            "SELECT count(*) AS n FROM scan_chunks WHERE tenant_id = $1 AND attempts >= 2"
        )
        .await,
        1,
        "one chunk taken again"
    );
    crate::assert_ssn_findings_once(&mut conn, OBJECTS).await;
    let (status, _) = started.service.stop();
    assert!(status.success());
}

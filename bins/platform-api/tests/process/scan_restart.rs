//! Postgres crashed (`pg_ctl stop -m immediate`) in the middle of a scan run by platform-api's
//! own workers, and started again a second later. The service reconnects, the chunks whose
//! workers lost their connection are taken again when their leases run out, and the scan
//! completes with every object covered once and no finding twice.

use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use serde_json::json;
use testkit::emulators;

use crate::replicas::count;
use crate::worker_kill::object;

const BUCKET: &str = "big-exports";
const OBJECTS: usize = 160;

#[tokio::test(flavor = "multi_thread")]
async fn a_database_crash_mid_scan_is_survived_with_exact_coverage() {
    let (mut cluster, db) = testkit::private_cluster().await;
    let master_key = base64::engine::general_purpose::STANDARD.encode([3u8; 32]);
    let moto = emulators::moto(&[]);
    let objects: Vec<(String, Vec<u8>)> = (0..OBJECTS).map(object).collect();
    crate::seeded_bucket(&moto, BUCKET, &objects).await;

    let (started, scan) = crate::scan_of_bucket(
        &db,
        &master_key,
        &moto,
        BUCKET,
        &[("DPS_SCAN_WORKERS", "2"), ("DPS_SCAN_LEASE_SECONDS", "3")],
        json!({"max_workers": 2}),
    )
    .await;
    let crate::Started {
        service,
        http,
        admin,
        base: _,
    } = started;

    // The crash comes once the first outcomes are recorded, and before the last.
    let recorded =
        "SELECT count(*) AS n FROM scan_resources WHERE tenant_id = $1 AND state <> 'pending'";
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_crash = {
        let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
        loop {
            let n = count(&mut conn, recorded).await;
            if n >= 1 {
                break n;
            }
            assert!(Instant::now() < deadline, "nothing was recorded");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::task::block_in_place(|| cluster.crash()).unwrap();
    assert!(
        at_crash < OBJECTS as i64,
        "the crash was to come mid-scan, but {at_crash} of {OBJECTS} were recorded"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::block_in_place(|| cluster.start()).unwrap();

    let done = crate::scan_ended(&http, &[&service.origin], &admin, &scan).await;
    assert_eq!(done["data"]["status"], "completed", "{done}");
    assert_eq!(
        done["data"]["progress"]["files_processed"], OBJECTS,
        "{done}"
    );
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    crate::assert_ssn_findings_once(&mut conn, OBJECTS).await;
    let (status, _) = service.stop();
    assert!(status.success());
}

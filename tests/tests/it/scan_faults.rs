//! A scan whose storage goes away in the middle. The objects read before the emulator stopped
//! are scanned; every one after fails with a reason; the scan ends partial, and its coverage
//! counts each object exactly once, with no finding twice.

use std::time::Duration;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl as _;
use serde_json::json;
use testkit::{emulators, seed};

use crate::Client;
use crate::scans::{app_with, connector, enumerated, finished};

const OBJECTS: usize = 12;

#[derive(QueryableByName)]
struct Reason {
    #[diesel(sql_type = Text)]
    reason: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[tokio::test(flavor = "multi_thread")]
async fn storage_that_stops_mid_scan_fails_the_rest_with_a_reason_and_the_scan_ends_partial() {
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "hr-data").await;
    let keys: Vec<String> = (0..OBJECTS).map(|i| format!("d/{i:02}.txt")).collect();
    let bodies: Vec<String> = (0..OBJECTS)
        .map(|i| format!("ssn {:03}-45-{:04}\n", 101 + i, 6781 + i))
        .collect();
    let objects: Vec<(&str, &[u8])> = keys
        .iter()
        .zip(&bodies)
        .map(|(k, b)| (k.as_str(), b.as_bytes()))
        .collect();
    seed::put_all(bucket.as_ref(), &objects).await;
    let (master, master_b64) = keys::MasterKey::generate().unwrap();
    // No worker tasks in the service: this test runs the worker, chunk by chunk.
    let app = app_with(&moto, "0", |env| {
        env.insert("DPS_MASTER_KEY".into(), master_b64);
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let hr = connector(&admin, "HR", "hr-data").await;
    let (scan, config) = enumerated(&admin, &hr, json!({"max_workers": 3})).await;
    assert!(config["chunks"].as_array().unwrap().len() >= 2, "{config}");
    let token = config["environment"]["AUTH_TOKEN"]
        .as_str()
        .unwrap()
        .to_owned();

    let worker = scans::Worker::new(
        "fault-test".into(),
        seed::moto_cloud(&moto.url()),
        std::sync::Arc::new(keys::KeyRing::new(std::sync::Arc::new(master))),
    );
    let pool = db::build_pool(&db::PoolConfig {
        url: app.db.url.clone(),
        max_size: 2,
        statement_timeout: Duration::from_secs(10),
        application_name: "scan-fault-test".into(),
        wait_timeout: Duration::from_secs(10),
    })
    .unwrap();
    let scan_id: ids::ScanId = scan.parse().unwrap();
    let tenant: ids::TenantId = "acme".parse().unwrap();

    // One chunk while the storage answers.
    {
        let mut conn = pool.get().await.unwrap();
        let claim = scans::lease::claim(&mut conn, "fault-test", Some((&tenant, scan_id)), 30)
            .await
            .unwrap()
            .expect("a chunk to claim");
        worker.run_chunk(&mut conn, &claim).await.unwrap();
    }
    // Then the storage stops, and the worker carries on with the rest.
    drop(moto);
    let summary = scans::coordinator::work_on(&pool, &worker, scan_id, &token)
        .await
        .unwrap();
    assert_eq!(summary.status, scans::Status::Partial, "{summary:?}");

    let done = finished(&admin, &scan).await;
    assert_eq!(done["status"], "partial", "{done}");
    let coverage = &done["coverage"];
    let scanned = coverage["total_scanned"].as_i64().unwrap();
    let failed = coverage["total_failed"].as_i64().unwrap();
    assert!(scanned >= 1 && failed >= 1, "{coverage}");
    assert_eq!(coverage["total_enumerated"], OBJECTS, "{coverage}");
    assert_eq!(
        scanned + failed + coverage["total_skipped"].as_i64().unwrap(),
        OBJECTS as i64,
        "every object counted once: {coverage}"
    );
    assert_eq!(done["progress"]["findings_count"], scanned, "{done}");

    // Each failed object says why; no object has a finding twice.
    let mut conn = app.conn().await;
    let reasons: Vec<Reason> = diesel::sql_query(
        "SELECT coalesce(reason, '') AS reason, count(*) AS n FROM scan_resources \
          WHERE tenant_id = 'acme' AND state = 'failed' GROUP BY 1",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(reasons.iter().map(|r| r.n).sum::<i64>(), failed);
    for reason in &reasons {
        assert!(
            !reason.reason.is_empty(),
            "a failed object without a reason"
        );
    }
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let count = async |conn: &mut diesel_async::AsyncPgConnection, sql: &str| {
        diesel::sql_query(sql)
            .get_result::<Count>(conn)
            .await
            .unwrap()
            .n
    };
    let rows = count(
        &mut conn,
        "SELECT count(*) AS n FROM findings WHERE tenant_id = 'acme'",
    )
    .await;
    let distinct = count(
        &mut conn,
        "SELECT count(DISTINCT (object_key, field)) AS n FROM findings WHERE tenant_id = 'acme'",
    )
    .await;
    let values = count(
        &mut conn,
        "SELECT coalesce(sum(occurrences), 0)::bigint AS n FROM findings WHERE tenant_id = 'acme'",
    )
    .await;
    assert_eq!(
        (rows, distinct, values),
        (scanned, scanned, scanned),
        "one value per scanned object, one finding of it, none twice"
    );
}

/// Storage that accepts connections and never answers: every listing hangs.
fn black_hole() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for socket in listener.incoming().flatten() {
            held.push(socket);
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread")]
async fn listings_that_hang_take_at_most_their_share_of_the_pool() {
    let storage = black_hole();
    let app = integration_tests::TestApp::spawn_with(integration_tests::Service::Platform, |env| {
        for (name, value) in seed::moto_platform_env(&storage) {
            env.insert(name.into(), value);
        }
        env.insert("DPS_SCAN_WORKERS".into(), "0".into());
        env.insert("DPS_SCAN_ENUMERATIONS".into(), "1".into());
        env.insert("DATABASE_POOL_SIZE".into(), "4".into());
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let mut scans = Vec::new();
    for i in 0..4 {
        let hr = connector(&admin, &format!("HR {i}"), "hr-data").await;
        let (status, body) = admin
            .send(
                reqwest::Method::POST,
                &format!("/connectors/{hr}/scan"),
                Some(json!({"type": "full"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        scans.push(body["data"]["scan_id"].as_str().unwrap().to_owned());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Four listings holding a connection each would have taken the whole pool: requests
    // still answer, and one scan lists while the others wait, queued.
    let mut states = Vec::new();
    for scan in &scans {
        let (status, body) = admin
            .send(reqwest::Method::GET, &format!("/scans/{scan}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        states.push(body["data"]["status"].as_str().unwrap().to_owned());
    }
    states.sort();
    assert_eq!(states, ["queued", "queued", "queued", "running"]);
}

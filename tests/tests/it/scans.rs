//! Scans end to end: platform-api's coordinator and worker tasks scanning buckets in moto
//! (real S3 and STS protocols), with every coverage field checked against a bucket whose
//! contents are known.

use std::time::{Duration, Instant};

use integration_tests::{Service, TestApp};
use object_store::ObjectStoreExt as _;
use reqwest::Method;
use serde_json::{Value, json};
use testkit::{emulators, seed};

use crate::Client;

const SSN: &str = "219-09-9999";
const EMAIL: &str = "ann.lee@example.com";

pub(crate) async fn app_on(moto: &emulators::Emulator, workers: &str) -> TestApp {
    app_with(moto, workers, |_| {}).await
}

pub(crate) async fn app_with(
    moto: &emulators::Emulator,
    workers: &str,
    tweak: impl FnOnce(&mut std::collections::HashMap<String, String>),
) -> TestApp {
    let moto_url = moto.url();
    let workers = workers.to_owned();
    TestApp::spawn_with(Service::Platform, |env| {
        for (name, value) in seed::moto_platform_env(&moto_url) {
            env.insert(name.into(), value);
        }
        env.insert("DPS_SCAN_WORKERS".into(), workers);
        tweak(env);
    })
    .await
}

pub(crate) async fn connector(admin: &Client<'_>, name: &str, bucket: &str) -> String {
    connector_with(admin, name, json!({"buckets": [bucket]})).await
}

/// An AWS connector on moto with the test role, and `fields` (buckets, lkg_location, ...) in
/// its config; returns its id.
pub(crate) async fn connector_with(admin: &Client<'_>, name: &str, fields: Value) -> String {
    let mut config = json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": admin.external_id().await,
        "region": "us-east-1",
    });
    for (field, value) in fields.as_object().into_iter().flatten() {
        config[field] = value.clone();
    }
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": name, "provider": "aws", "config": config})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

/// Starts a full scan of `connector` and waits until it completed.
pub(crate) async fn full_scan(admin: &Client<'_>, connector: &str) {
    assert_eq!(
        scan_to_its_end(admin, connector).await["status"],
        "completed"
    );
}

/// Starts a full scan of `connector` and waits for it to end; returns its last state.
pub(crate) async fn scan_to_its_end(admin: &Client<'_>, connector: &str) -> Value {
    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{connector}/scan"),
            Some(json!({"type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    finished(admin, body["data"]["scan_id"].as_str().unwrap()).await
}

/// Starts a full scan of `connector` with `options` and waits until it is enumerated; returns
/// the scan's id and its deployment configuration.
pub(crate) async fn enumerated(
    admin: &Client<'_>,
    connector: &str,
    options: Value,
) -> (String, Value) {
    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{connector}/scan"),
            Some(json!({"type": "full", "options": options})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = admin
            .send(
                Method::GET,
                &format!("/scans/{scan}/deployment-config"),
                None,
            )
            .await;
        if body["data"]["enumeration_status"] == "complete" {
            return (scan, body["data"].clone());
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls the scan until it ends; returns its last state.
pub(crate) async fn finished(admin: &Client<'_>, scan: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (status, body) = admin
            .send(Method::GET, &format!("/scans/{scan}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        let state = body["data"]["status"].as_str().unwrap().to_owned();
        if !["queued", "running"].contains(&state.as_str()) {
            return body["data"].clone();
        }
        assert!(Instant::now() < deadline, "scan still {state}: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Objects in a long scan's bucket: enough that one worker reads them for several heartbeats
/// (2 s each), so that a cancel or a deadline always lands mid-scan, however fast the machine
/// (300 were read in under 2 s once, and the deadline test then saw a completed scan).
const LONG_SCAN_OBJECTS: i64 = 1200;

/// Starts a full scan with `options` of a new connector whose bucket holds `LONG_SCAN_OBJECTS`
/// objects with an SSN each: long enough with one worker to stop it midway. Returns
/// (connector, scan).
async fn long_scan(
    admin: &Client<'_>,
    moto: &emulators::Emulator,
    options: Value,
) -> (String, String) {
    let bucket = seed::s3_bucket(&moto.url(), "many").await;
    let body = format!("ssn {SSN}\n");
    let keys: Vec<String> = (0..LONG_SCAN_OBJECTS)
        .map(|i| format!("f/{i:04}.txt"))
        .collect();
    let objects: Vec<(&str, &[u8])> = keys.iter().map(|k| (k.as_str(), body.as_bytes())).collect();
    seed::put_all(bucket.as_ref(), &objects).await;
    let id = connector(admin, "Many", "many").await;
    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{id}/scan"),
            Some(json!({"type": "full", "options": options})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    (id, body["data"]["scan_id"].as_str().unwrap().to_owned())
}

/// Polls until the running scan has recorded its first objects.
async fn under_way(admin: &Client<'_>, scan: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = admin
            .send(Method::GET, &format!("/scans/{scan}"), None)
            .await;
        if body["data"]["progress"]["files_processed"]
            .as_i64()
            .unwrap_or(0)
            > 0
        {
            assert_eq!(body["data"]["status"], "running");
            return;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_full_then_an_incremental_scan_of_a_known_bucket() {
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "hr-exports").await;
    let big = "x".repeat(5000);
    let people = format!("name,ssn,email\nAnn Lee,{SSN},{EMAIL}\n");
    seed::put_all(
        bucket.as_ref(),
        &[
            ("2024/people.csv", people.as_bytes()),
            ("2024/notes.txt", b"nothing to see here"),
            (
                "2024/contacts.json",
                b"{\"phone\": \"+1 415 555 0132\", \"note\": \"call\"}",
            ),
            ("2024/photo.png", b"\x89PNG\r\n\x1a\nnot really"),
            ("2024/blob.dat", b"abc\0\0\0def\0ghi\0"),
            ("2024/big.txt", big.as_bytes()),
            ("2024/empty/", b""),
        ],
    )
    .await;
    let app = app_on(&moto, "2").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let id = connector(&admin, "HR exports", "hr-exports").await;

    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{id}/scan"),
            Some(json!({"type": "full", "options": {"max_object_bytes": 1000}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let created = &body["data"];
    assert_eq!(created["connector_id"], id.as_str());
    assert_eq!(created["status"], "queued");
    let scan = created["scan_id"].as_str().unwrap().to_owned();

    let done = finished(&admin, &scan).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["connector_id"], id.as_str());
    assert!(done.get("connectors").is_none());
    let coverage = &done["coverage"];
    assert_eq!(coverage["enumeration_status"], "complete", "{done}");
    assert_eq!(
        coverage["total_enumerated"], 6,
        "the folder marker is not an object: {done}"
    );
    assert_eq!(coverage["total_scanned"], 3, "{done}");
    assert_eq!(
        coverage["total_skipped"], 3,
        "png, NUL bytes, size limit: {done}"
    );
    assert_eq!(coverage["total_failed"], 0, "{done}");
    let skipped = coverage["skipped_reasons"].as_object().unwrap();
    assert_eq!(skipped["size_limit"], 1, "{done}");
    assert_eq!(skipped["unsupported_format"], 1, "{done}");
    assert_eq!(
        skipped
            .iter()
            .filter(|(k, _)| k.starts_with("binary:"))
            .map(|(_, v)| v.as_i64().unwrap())
            .sum::<i64>(),
        1,
        "{done}"
    );
    assert_eq!(coverage["failed_reasons"], json!({}));
    assert_eq!(coverage["coverage_pct"], 1.0);
    assert_eq!(coverage["target_met"], true);
    assert_eq!(coverage["completeness_score"], 1.0);
    assert_eq!(coverage["coverage_target"], 0.95);
    assert_eq!(coverage["coverage_strategy"], "best_effort");
    let progress = &done["progress"];
    assert_eq!(progress["files_total"], 6);
    assert_eq!(progress["files_processed"], 6);
    assert_eq!(progress["files_failed"], 0);
    assert_eq!(progress["percent_complete"], 100);
    assert_eq!(progress["estimated_remaining_seconds"], 0);
    let findings = progress["findings_count"].as_i64().unwrap();
    assert!(findings >= 3, "ssn, email and phone at least: {done}");
    assert_eq!(done["workers"]["failed"], 0);
    assert_eq!(done["workers"]["active"], 0);
    assert_eq!(done["workers"]["completed"], done["workers"]["total"]);

    // Workers: chunks that together cover every resource once.
    let (status, body) = admin
        .send(Method::GET, &format!("/scans/{scan}/workers"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let workers = body["data"].as_array().unwrap();
    let covered: i64 = workers
        .iter()
        .map(|w| w["chunk"]["file_count"].as_i64().unwrap())
        .sum();
    assert_eq!(covered, 6);
    for w in workers {
        assert_eq!(w["status"], "completed", "{w}");
        assert_eq!(w["progress"]["percent_complete"], 100);
        assert!(w["worker_id"].as_str().unwrap().contains("platform-api"));
    }

    // The connector is current, with its history. Its risk is scored by the rescoring that
    // follows a scan, in the background: on a busy machine, a moment after the scan ends.
    let deadline = Instant::now() + Duration::from_secs(30);
    let body = loop {
        let (_, body) = admin
            .send(Method::GET, &format!("/connectors/{id}"), None)
            .await;
        if body["data"]["risk_score"].as_i64().unwrap_or(0) > 0 {
            break body;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let c = &body["data"];
    assert_eq!(c["findings_count"], findings, "{c}");
    assert!(c["last_scan"].is_string(), "{c}");
    let history = c["scan_history"].as_array().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["scan_id"], scan.as_str());
    assert_eq!(history[0]["status"], "completed");
    assert_eq!(history[0]["files_processed"], 6);
    assert_eq!(history[0]["findings_count"], findings);

    // Findings hold no value: not in any column.
    let dump = testkit::pg_dump(&app.db);
    for secret in [SSN, EMAIL, "219099999", "415 555 0132"] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
    assert!(dump.contains("***-**-9999"), "the masked preview is stored");

    // Incremental: one object changed, one deleted, one added.
    seed::put_all(
        bucket.as_ref(),
        &[
            ("2024/notes.txt", format!("ssn {SSN}").as_bytes()),
            ("2024/new.csv", b"name,email\nBo,bo@example.org\n"),
        ],
    )
    .await;
    bucket
        .delete(&object_store::path::Path::from("2024/people.csv"))
        .await
        .unwrap();
    let (status, body) = admin
        .send(
            Method::POST,
            "/scans/parallel",
            Some(json!({"connectors": [id], "type": "incremental", "options": {"max_object_bytes": 1000}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["connectors"], json!([id]));
    assert_eq!(body["data"]["type"], "incremental");
    assert_eq!(body["data"]["workers_requested"], 4);
    let incremental = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let done = finished(&admin, &incremental).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["coverage"]["total_enumerated"], 3,
        "the changed and the new object, and big.txt, never read for its size: {done}"
    );
    assert_eq!(done["connectors"], json!([id]));
    let (_, body) = admin
        .send(Method::GET, &format!("/connectors/{id}"), None)
        .await;
    let c = &body["data"];
    // people.csv's ssn and email are resolved; notes.txt's ssn, new.csv's email and
    // contacts.json's phone are open.
    assert_eq!(c["findings_count"], findings - 2 + 2, "{c}");
    assert_eq!(c["scan_history"].as_array().unwrap().len(), 2);

    // The list: newest first, with filters.
    let (status, body) = admin
        .send(Method::GET, &format!("/scans?connector={id}&limit=1"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"][0]["scan_id"], incremental.as_str());
    assert_eq!(body["pagination"]["has_more"], true);
    let next = body["pagination"]["next_cursor"].as_str().unwrap();
    let (_, body) = admin
        .send(
            Method::GET,
            &format!("/scans?connector={id}&limit=1&cursor={next}"),
            None,
        )
        .await;
    assert_eq!(body["data"][0]["scan_id"], scan.as_str());
    let (_, body) = admin.send(Method::GET, "/scans?status=failed", None).await;
    assert_eq!(body["data"], json!([]));
    let (status, body) = admin.send(Method::GET, "/scans?status=done", None).await;
    assert_eq!(status, 400, "{body}");

    // An incremental scan of CSV files only leaves the others' findings open: a file type
    // left out of a scan is not a deleted object.
    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{id}/scan"),
            Some(json!({"type": "incremental", "options": {"file_types": ["csv"]}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let csv_only = body["data"]["scan_id"].as_str().unwrap().to_owned();
    assert_eq!(finished(&admin, &csv_only).await["status"], "completed");
    let (_, body) = admin
        .send(Method::GET, &format!("/connectors/{id}"), None)
        .await;
    assert_eq!(
        body["data"]["findings_count"], c["findings_count"],
        "{body}"
    );

    // A full rescan supersedes what each object held: as many findings are open as before,
    // the new ones, and the old ones are resolved.
    let open_before = c["findings_count"].as_i64().unwrap();
    let (status, body) = admin
        .send(
            Method::POST,
            "/scans/parallel",
            Some(json!({"connectors": [id], "type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let rescan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let done = finished(&admin, &rescan).await;
    assert_eq!(done["status"], "completed", "{done}");
    let (_, body) = admin
        .send(Method::GET, &format!("/connectors/{id}"), None)
        .await;
    assert_eq!(body["data"]["findings_count"], open_before, "{body}");
    let mut conn = app.conn().await;
    let open: Vec<Count> = diesel_async::RunQueryDsl::load(
        diesel::sql_query(format!(
            "SELECT count(*) AS n FROM findings WHERE status = 'open' AND scan_id <> '{rescan}'"
        )),
        &mut conn,
    )
    .await
    .unwrap();
    assert_eq!(open[0].n, 0, "findings of earlier scans are still open");

    // Every field of the start has a default: no body is a full scan with the tier's options.
    let (status, body) = admin
        .send(Method::POST, &format!("/connectors/{id}/scan"), None)
        .await;
    assert_eq!(status, 201, "{body}");
    let bare = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let done = finished(&admin, &bare).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["type"], "full", "{done}");

    // Deleting the connector takes its scans and findings with it.
    let (status, _) = admin
        .send(Method::DELETE, &format!("/connectors/{id}"), None)
        .await;
    assert_eq!(status, 200);
    let (status, _) = admin
        .send(Method::GET, &format!("/scans/{scan}"), None)
        .await;
    assert_eq!(status, 404);
    for table in ["findings", "scan_resources", "scanned_objects", "scans"] {
        let left: Vec<Count> = diesel_async::RunQueryDsl::load(
            diesel::sql_query(format!("SELECT count(*) AS n FROM {table}")),
            &mut conn,
        )
        .await
        .unwrap();
        assert_eq!(left[0].n, 0, "{table} keeps rows of a deleted connector");
    }
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[tokio::test]
async fn scan_requests_are_validated() {
    let moto = emulators::moto(&[]);
    let app = app_on(&moto, "0").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let id = connector(&admin, "Any", "any-bucket").await;
    let bad = [
        (
            json!({"connectors": [id], "type": "full", "options": {"llm_assist": true}}),
            "options.llm_assist",
        ),
        (
            json!({"connectors": [id], "type": "full", "options": {"turbo": 1}}),
            "options.turbo",
        ),
        (json!({"connectors": [id], "type": "sometimes"}), "type"),
        (json!({"connectors": [], "type": "full"}), "connectors"),
        (
            json!({"connectors": [id], "type": "full", "options": {"max_workers": 1000}}),
            "options.max_workers",
        ),
    ];
    for (request, field) in bad {
        let (status, body) = admin
            .send(Method::POST, "/scans/parallel", Some(request))
            .await;
        assert_eq!(status, 400, "{body}");
        let error = crate::area_b_error(&body, "VALIDATION_FAILED");
        assert!(
            error["details"]["fields"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["field"] == field),
            "{field}: {body}"
        );
    }
    let (status, body) = admin
        .send(
            Method::POST,
            "/scans/parallel",
            Some(json!({"connectors": ["00000000-0000-0000-0000-000000000000"], "type": "full"})),
        )
        .await;
    assert_eq!(status, 404);
    crate::area_b_error(&body, "CONNECTOR_NOT_FOUND");
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    // Any user of the tenant starts scans (the spec's role model): the analyst's request
    // reaches validation.
    let (status, body) = analyst
        .send(
            Method::POST,
            "/scans/parallel",
            Some(json!({"connectors": [id], "type": "bogus"})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = admin.send(Method::GET, "/scans/not-a-scan", None).await;
    assert_eq!(status, 404);
    crate::area_b_error(&body, "SCAN_NOT_FOUND");
}

#[tokio::test]
async fn a_cancelled_scan_stops_and_keeps_its_findings() {
    let moto = emulators::moto(&[]);
    let app = app_on(&moto, "1").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (id, scan) = long_scan(&admin, &moto, json!({"max_workers": 1})).await;
    under_way(&admin, &scan).await;
    let (status, body) = admin
        .send(Method::POST, &format!("/scans/{scan}/cancel"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let cancelled = &body["data"];
    assert_eq!(cancelled["status"], "cancelled");
    assert!(cancelled["cancelled_at"].is_string());
    let processed = cancelled["partial_results"]["files_processed"]
        .as_i64()
        .unwrap();
    assert!(processed > 0 && processed < LONG_SCAN_OBJECTS, "{body}");

    // The worker stops: at most the object in flight is recorded after the cancel.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, body) = admin
        .send(Method::GET, &format!("/scans/{scan}"), None)
        .await;
    let after = body["data"]["progress"]["files_processed"]
        .as_i64()
        .unwrap();
    assert_eq!(body["data"]["status"], "cancelled");
    assert!(after <= processed + 1, "{processed} then {after}");
    assert!(body["data"]["progress"]["findings_count"].as_i64().unwrap() >= processed);
    let (_, body) = admin
        .send(Method::GET, &format!("/connectors/{id}"), None)
        .await;
    assert!(body["data"]["findings_count"].as_i64().unwrap() >= processed);

    // A second cancel is a conflict.
    let (status, body) = admin
        .send(Method::POST, &format!("/scans/{scan}/cancel"), None)
        .await;
    assert_eq!(status, 409, "{body}");
}

#[tokio::test]
async fn a_deployment_config_lets_a_worker_elsewhere_run_the_scan() {
    let moto = emulators::moto(&[]);
    let body = format!("ssn {SSN}\n");
    let mut expected = Vec::new();
    for (name, count) in [("eu-exports", 5), ("us-exports", 4)] {
        let bucket = seed::s3_bucket(&moto.url(), name).await;
        let keys: Vec<String> = (0..count).map(|i| format!("d/{i}.txt")).collect();
        let objects: Vec<(&str, &[u8])> =
            keys.iter().map(|k| (k.as_str(), body.as_bytes())).collect();
        seed::put_all(bucket.as_ref(), &objects).await;
        expected.extend(keys.iter().map(|k| format!("{name}/{k}")));
    }
    let (_, master_b64) = keys::MasterKey::generate().unwrap();
    // No worker tasks: platform-api starts and enumerates the scan, and nothing else reads.
    let app = app_with(&moto, "0", |env| {
        env.insert("DPS_MASTER_KEY".into(), master_b64);
        env.insert(
            "DPS_SCAN_WORKER_IMAGE".into(),
            "registry.example/dps/scan-worker:test".into(),
        );
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let eu = connector(&admin, "EU", "eu-exports").await;
    let us = connector(&admin, "US", "us-exports").await;
    let (status, body) = admin
        .send(
            Method::POST,
            "/scans/parallel",
            Some(json!({"connectors": [eu, us], "type": "full", "options": {"max_workers": 3}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let path = format!("/scans/{scan}/deployment-config");

    let deadline = Instant::now() + Duration::from_secs(60);
    let config = loop {
        let (status, body) = admin.send(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{body}");
        if body["data"]["enumeration_status"] != "in_progress" {
            break body["data"].clone();
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(config["enumeration_status"], "complete", "{config}");
    assert_eq!(config["status"], "running");
    assert_eq!(
        config["container_image"],
        "registry.example/dps/scan-worker:test"
    );
    let env = &config["environment"];
    assert_eq!(env["SCAN_ID"], scan.as_str());
    assert_eq!(env["COORDINATOR_URL"], app.origin.as_str());
    let token = env["AUTH_TOKEN"].as_str().unwrap().to_owned();
    assert!(token.starts_with("dpsw_"), "{config}");

    // Every object once; each chunk within one connector, whose public config it carries.
    let chunks = config["chunks"].as_array().unwrap();
    assert!(chunks.len() >= 3, "{config}");
    let mut files: Vec<String> = Vec::new();
    for (n, chunk) in chunks.iter().enumerate() {
        assert_eq!(chunk["chunk_id"], format!("chunk-{n}"));
        let connector = &chunk["connector_config"];
        assert_eq!(connector["provider"], "aws");
        assert!(
            connector["external_id"]
                .as_str()
                .unwrap()
                .starts_with("dps-")
        );
        let bucket = connector["buckets"][0].as_str().unwrap();
        let id = connector["connector_id"].as_str().unwrap();
        assert_eq!(id == eu, bucket == "eu-exports", "{chunk}");
        for file in chunk["files"].as_array().unwrap() {
            let file = file.as_str().unwrap();
            assert!(file.starts_with(&format!("{bucket}/")), "{chunk}");
            files.push(file.to_owned());
        }
    }
    files.sort();
    expected.sort();
    assert_eq!(files, expected);
    // One chunk at a time, as a large scan's deployment would fetch them.
    let (status, one) = admin
        .send(Method::GET, &format!("{path}?chunk=chunk-1"), None)
        .await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["data"]["chunks"], json!([chunks[1].clone()]));
    assert_eq!(one["data"]["environment"], config["environment"]);
    for bad in ["1", "chunk-x", "chunk--1"] {
        let (status, body) = admin
            .send(Method::GET, &format!("{path}?chunk={bad}"), None)
            .await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["error"]["details"]["field"], "chunk", "{body}");
    }

    // It holds the worker token, whose holder writes the findings that drive remediation, so
    // only admins see it by default; the analyst who may start the scan may not.
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let (status, body) = analyst.send(Method::GET, &path, None).await;
    assert_eq!(status, 403, "{body}");
    crate::area_b_error(&body, "FORBIDDEN");
    assert!(body.to_string().find("dpsw_").is_none(), "{body}");
    let other = Client {
        app: &app,
        token: app.token("globex", "cy", &["admin"]),
    };
    let (status, body) = other.send(Method::GET, &path, None).await;
    assert_eq!(status, 404, "another tenant's scan: {body}");
    crate::area_b_error(&body, "SCAN_NOT_FOUND");

    // A worker outside the platform, with only that environment and its own cloud identity
    // (no database, no master key, no connector secret), runs the scan to the end through the
    // coordinator API; the `scan-worker` binary is this loop behind a main.
    let scan_id: ids::ScanId = scan.parse().unwrap();
    let egress = egress::Egress {
        allow_private: true,
    };
    let coordinator_url = env["COORDINATOR_URL"].as_str().unwrap();
    let worker =
        scans::Worker::without_keys("customer-k8s/job-0".into(), seed::moto_cloud(&moto.url()));
    let mut wrong =
        scan_worker::Remote::new(&egress, coordinator_url, scan_id, "dpsw_0000".into(), None)
            .unwrap();
    let refused = scan_worker::work_through(&mut wrong, &worker, scan_id).await;
    assert!(
        matches!(refused, Err(scans::ScanError::Unauthorized)),
        "{refused:?}"
    );
    // Nor does the token of one scan open another.
    let other_scan: ids::ScanId = ids::ScanId::new();
    let mut elsewhere =
        scan_worker::Remote::new(&egress, coordinator_url, other_scan, token.clone(), None)
            .unwrap();
    let refused = scan_worker::work_through(&mut elsewhere, &worker, other_scan).await;
    assert!(
        matches!(refused, Err(scans::ScanError::Unauthorized)),
        "{refused:?}"
    );
    let mut coordinator =
        scan_worker::Remote::new(&egress, coordinator_url, scan_id, token.clone(), None).unwrap();
    let summary = scan_worker::work_through(&mut coordinator, &worker, scan_id)
        .await
        .unwrap();
    assert_eq!(summary.status, scans::Status::Completed);
    assert_eq!(summary.chunks as usize, chunks.len());
    let done = finished(&admin, &scan).await;
    assert_eq!(done["coverage"]["total_scanned"], 9, "{done}");
    assert_eq!(done["progress"]["findings_count"], 9, "{done}");
    // The workers, a page of one at a time through the cursor: every chunk once.
    let mut seen: Vec<i64> = Vec::new();
    let mut path = format!("/scans/{scan}/workers?limit=1");
    loop {
        let (status, body) = admin.send(Method::GET, &path, None).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["pagination"]["limit"], 1, "{body}");
        let page = body["data"].as_array().unwrap();
        assert_eq!(page.len(), 1, "{body}");
        assert_eq!(page[0]["worker_id"], "customer-k8s/job-0", "{body}");
        seen.push(page[0]["chunk"]["start_index"].as_i64().unwrap());
        if body["pagination"]["has_more"] != true {
            break;
        }
        let cursor = body["pagination"]["next_cursor"].as_str().unwrap();
        path = format!("/scans/{scan}/workers?limit=1&cursor={cursor}");
    }
    assert_eq!(seen.len(), chunks.len(), "{seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "in chunk order: {seen:?}"
    );
    let (_, body) = admin
        .send(Method::GET, &format!("/scans/{scan}/workers"), None)
        .await;
    assert_eq!(body["pagination"]["limit"], 20, "{body}");
    assert_eq!(body["data"].as_array().unwrap().len(), chunks.len());
    let (status, body) = admin
        .send(
            Method::GET,
            &format!("/scans/{scan}/workers?cursor=not-a-cursor"),
            None,
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "VALIDATION_FAILED", "{body}");
}

#[tokio::test]
async fn objects_the_role_may_not_read_fail_as_permission_and_strict_scans_fail() {
    let moto = emulators::moto(&[]);
    let url = moto.url();
    let bucket = seed::s3_bucket(&url, "restricted").await;
    let body = format!("ssn {SSN}\n");
    seed::put_all(
        bucket.as_ref(),
        &[
            ("open/a.txt", body.as_bytes()),
            ("open/b.txt", body.as_bytes()),
            ("open/c.txt", body.as_bytes()),
            ("secret/d.txt", body.as_bytes()),
        ],
    )
    .await;
    // The role may list the bucket and read open/ only; moto then enforces IAM as AWS does.
    let (key_id, secret) = seed::moto_iam(
        &url,
        "dps-scanner",
        &json!({
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::restricted"},
                {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::restricted/open/*"},
            ],
        }),
    )
    .await;
    seed::moto_enforce_auth(&url).await;
    let app = app_with(&moto, "2", |env| {
        env.insert("AWS_ACCESS_KEY_ID".into(), key_id);
        env.insert("AWS_SECRET_ACCESS_KEY".into(), secret);
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let id = connector(&admin, "Restricted", "restricted").await;

    let scan = |options: Value| {
        let admin = &admin;
        let id = &id;
        async move {
            let (status, body) = admin
                .send(
                    Method::POST,
                    &format!("/connectors/{id}/scan"),
                    Some(json!({"type": "full", "options": options})),
                )
                .await;
            assert_eq!(status, 201, "{body}");
            finished(admin, body["data"]["scan_id"].as_str().unwrap()).await
        }
    };
    // best_effort: the readable objects are scanned, the others fail as permission, and
    // the scan ends partial because coverage (3 of 4) is under the 0.95 target.
    let done = scan(json!({})).await;
    assert_eq!(done["status"], "partial", "{done}");
    let coverage = &done["coverage"];
    assert_eq!(coverage["enumeration_status"], "complete", "{done}");
    assert_eq!(coverage["total_enumerated"], 4);
    assert_eq!(coverage["total_scanned"], 3, "{done}");
    assert_eq!(coverage["total_failed"], 1, "{done}");
    assert_eq!(
        coverage["failed_reasons"],
        json!({"permission": 1}),
        "{done}"
    );
    assert_eq!(coverage["skipped_reasons"], json!({}));
    assert_eq!(coverage["coverage_pct"], 0.75);
    assert_eq!(coverage["target_met"], false);
    assert_eq!(coverage["completeness_score"], 0.75);
    assert_eq!(done["progress"]["files_failed"], 1);
    assert_eq!(done["progress"]["findings_count"], 3);

    // strict with the same target fails; a target of 0.75 is met and the scan completes.
    let done = scan(json!({"coverage_strategy": "strict"})).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        done["status_reason"].as_str().unwrap().contains("coverage"),
        "{done}"
    );
    let done = scan(json!({"coverage_strategy": "strict", "coverage_target": 0.75})).await;
    assert_eq!(done["status"], "completed", "{done}");
}

#[derive(diesel::QueryableByName)]
struct Minutes {
    #[diesel(sql_type = diesel::sql_types::Double)]
    minutes: f64,
}

#[tokio::test]
async fn a_scan_past_its_timeout_ends_partial_and_its_workers_stop() {
    let moto = emulators::moto(&[]);
    let app = app_on(&moto, "1").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (_, scan) = long_scan(
        &admin,
        &moto,
        json!({"max_workers": 1, "timeout_minutes": 5}),
    )
    .await;
    under_way(&admin, &scan).await;
    // The deadline is started_at + timeout_minutes. Five minutes is too long for a test, so
    // the clock is moved instead: the deadline is set to a moment ago, as if they had passed.
    let mut conn = app.conn().await;
    let scan_id: uuid::Uuid = scan.parse().unwrap();
    let set: Vec<Minutes> = diesel_async::RunQueryDsl::load(
        diesel::sql_query(
            "SELECT EXTRACT(EPOCH FROM deadline - started_at)::float8 / 60 AS minutes \
             FROM scans WHERE scan_id = $1",
        )
        .bind::<diesel::sql_types::Uuid, _>(scan_id),
        &mut conn,
    )
    .await
    .unwrap();
    assert!((set[0].minutes - 5.0).abs() < 1e-6, "{}", set[0].minutes);
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "UPDATE scans SET deadline = now() - interval '1 second' WHERE scan_id = $1",
        )
        .bind::<diesel::sql_types::Uuid, _>(scan_id),
        &mut conn,
    )
    .await
    .unwrap();

    let done = finished(&admin, &scan).await;
    assert_eq!(done["status"], "partial", "{done}");
    assert_eq!(done["status_reason"], "timeout_minutes was exceeded");
    assert!(done["completed_at"].is_string());
    let processed = done["progress"]["files_processed"].as_i64().unwrap();
    assert!(processed > 0 && processed < LONG_SCAN_OBJECTS, "{done}");
    assert_eq!(done["coverage"]["target_met"], false, "{done}");
    // The worker stops: at most the object in flight is recorded after the timeout.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, body) = admin
        .send(Method::GET, &format!("/scans/{scan}"), None)
        .await;
    let after = body["data"]["progress"]["files_processed"]
        .as_i64()
        .unwrap();
    assert!(after <= processed + 1, "{processed} then {after}");
    assert_eq!(body["data"]["status"], "partial");
    assert_eq!(body["data"]["workers"]["active"], 0, "{body}");
    assert!(body["data"]["progress"]["findings_count"].as_i64().unwrap() >= processed);
}

/// Two buckets, "kept" with 3 objects holding an SSN each and "gone" with 5, a connector to
/// each, and one parallel scan of both, finished: the connectors' ids, the scan's id and its
/// final state.
async fn kept_and_gone_scanned(
    moto: &emulators::Emulator,
    admin: &Client<'_>,
) -> (String, String, String, Value) {
    for (bucket, count) in [("kept", 3), ("gone", 5)] {
        let store = seed::s3_bucket(&moto.url(), bucket).await;
        let body = format!("ssn {SSN}\n");
        let keys: Vec<String> = (0..count).map(|i| format!("{bucket}/{i}.txt")).collect();
        let objects: Vec<(&str, &[u8])> =
            keys.iter().map(|k| (k.as_str(), body.as_bytes())).collect();
        seed::put_all(store.as_ref(), &objects).await;
    }
    let kept = connector(admin, "Kept", "kept").await;
    let gone = connector(admin, "Gone", "gone").await;
    let (status, body) = admin
        .send(
            Method::POST,
            "/scans/parallel",
            Some(json!({"connectors": [kept, gone], "type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let shared = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let done = finished(admin, &shared).await;
    (kept, gone, shared, done)
}

#[tokio::test]
async fn deleting_a_connector_removes_its_share_of_a_parallel_scan() {
    let moto = emulators::moto(&[]);
    let app = app_on(&moto, "2").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (kept, gone, shared, done) = kept_and_gone_scanned(&moto, &admin).await;
    assert_eq!(done["progress"]["files_total"], 8, "{done}");
    assert_eq!(done["progress"]["findings_count"], 8, "{done}");
    // A scan of the deleted connector alone goes with it.
    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{gone}/scan"),
            Some(json!({"type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let alone = body["data"]["scan_id"].as_str().unwrap().to_owned();
    finished(&admin, &alone).await;

    let (status, body) = admin
        .send(Method::DELETE, &format!("/connectors/{gone}"), None)
        .await;
    assert_eq!(status, 200, "{body}");

    // The shared scan now counts only what remains: files, findings, workers and connectors.
    let (status, body) = admin
        .send(Method::GET, &format!("/scans/{shared}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let scan = &body["data"];
    assert_eq!(scan["progress"]["files_total"], 3, "{scan}");
    assert_eq!(scan["progress"]["files_processed"], 3, "{scan}");
    assert_eq!(scan["progress"]["findings_count"], 3, "{scan}");
    assert_eq!(scan["coverage"]["total_enumerated"], 3, "{scan}");
    assert_eq!(scan["connectors"], json!([kept]), "{scan}");
    let (_, body) = admin
        .send(Method::GET, &format!("/scans/{shared}/workers"), None)
        .await;
    let covered: i64 = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["chunk"]["file_count"].as_i64().unwrap())
        .sum();
    assert_eq!(covered, 3, "{body}");
    assert_eq!(
        scan["workers"]["total"],
        body["data"].as_array().unwrap().len()
    );
    let (status, _) = admin
        .send(Method::GET, &format!("/scans/{alone}"), None)
        .await;
    assert_eq!(status, 404);
    // The remaining connector is untouched.
    let (_, body) = admin
        .send(Method::GET, &format!("/connectors/{kept}"), None)
        .await;
    assert_eq!(body["data"]["findings_count"], 3, "{body}");
    assert_eq!(
        body["data"]["scan_history"][0]["files_processed"], 3,
        "{body}"
    );
    // Deleting it again, or a connector of another tenant, is not found.
    let (status, _) = admin
        .send(Method::DELETE, &format!("/connectors/{gone}"), None)
        .await;
    assert_eq!(status, 404);
}

/// An ended scan's per-object rows go once it is past the retention; its counts, the
/// connectors' scan histories and its findings stay, and a connector deleted afterwards still
/// takes its share of the scan with it.
#[tokio::test]
async fn an_ended_scan_loses_its_object_rows_after_the_retention_and_keeps_its_counts() {
    use diesel_async::RunQueryDsl as _;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let moto = emulators::moto(&[]);
    let app = app_on(&moto, "2").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (kept, gone, shared, done) = kept_and_gone_scanned(&moto, &admin).await;
    assert_eq!(done["progress"]["files_total"], 8, "{done}");
    let history = async |id: &str| {
        let (status, body) = admin
            .send(Method::GET, &format!("/connectors/{id}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        // What each scan processed (its completed_at is moved back below).
        body["data"]["scan_history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["scan_id"].clone(),
                    h["files_processed"].clone(),
                    h["findings_count"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    let before = (history(&kept).await, history(&gone).await);
    assert_eq!((&before.0[0].1, &before.0[0].2), (&json!(3), &json!(3)));
    assert_eq!((&before.1[0].1, &before.1[0].2), (&json!(5), &json!(5)));

    let mut conn = app.conn().await;
    let resources = async |conn: &mut db::AsyncPgConnection| {
        diesel::sql_query("SELECT count(*) AS n FROM scan_resources")
            .get_result::<Count>(conn)
            .await
            .unwrap()
            .n
    };
    let minute = Duration::from_secs(60);
    // Within the retention: nothing goes.
    assert_eq!(
        scans::retention::prune_resources(&mut conn, 30, minute)
            .await
            .unwrap(),
        0
    );
    assert_eq!(resources(&mut conn).await, 8);
    // Ranges as migration 040 fills them in for scans enumerated before it.
    diesel::sql_query("UPDATE scan_connectors SET first_idx = NULL, last_idx = NULL")
        .execute(&mut conn)
        .await
        .unwrap();
    let backfill =
        include_str!("../../../migrations/2026-11-27-000040_scan_connector_resources/up.sql")
            .split_once("ADD COLUMN last_idx integer;")
            .unwrap()
            .1;
    diesel::sql_query(backfill)
        .execute(&mut conn)
        .await
        .unwrap();
    // The whole scan moves 31 days back, so that what it reports (its elapsed time among it)
    // is what it was.
    diesel::sql_query(
        "UPDATE scans SET created_at = created_at - interval '31 days',
                          started_at = started_at - interval '31 days',
                          completed_at = completed_at - interval '31 days'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        scans::retention::prune_resources(&mut conn, 30, minute)
            .await
            .unwrap(),
        8
    );
    assert_eq!(resources(&mut conn).await, 0);

    let (status, body) = admin
        .send(Method::GET, &format!("/scans/{shared}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["progress"], done["progress"], "{body}");
    assert_eq!(body["data"]["coverage"], done["coverage"], "{body}");
    assert_eq!((history(&kept).await, history(&gone).await), before);
    let (status, body) = admin
        .send(Method::GET, &format!("/findings?scan={shared}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"].as_array().unwrap().len(), 8, "{body}");
    // The deployment config of the ended scan has no objects left to name.
    let (status, body) = admin
        .send(
            Method::GET,
            &format!("/scans/{shared}/deployment-config"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["chunks"], json!([]), "{body}");

    // Resolved findings go after their own retention, never within the rollback window, and
    // open ones never.
    diesel::sql_query(
        "UPDATE findings SET status = 'resolved', resolved_at = now() - make_interval(days => d.days)
           FROM (SELECT finding_id, (ARRAY[100, 100, 5])[row_number() OVER (ORDER BY finding_id)] AS days
                   FROM findings ORDER BY finding_id LIMIT 3) d
          WHERE findings.finding_id = d.finding_id",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let findings = async |conn: &mut db::AsyncPgConnection, status: &str| {
        diesel::sql_query("SELECT count(*) AS n FROM findings WHERE status = $1")
            .bind::<diesel::sql_types::Text, _>(status)
            .get_result::<Count>(conn)
            .await
            .unwrap()
            .n
    };
    assert_eq!(
        (
            findings(&mut conn, "open").await,
            findings(&mut conn, "resolved").await
        ),
        (5, 3)
    );
    assert_eq!(
        scans::retention::prune_resolved_findings(&mut conn, 90, minute)
            .await
            .unwrap(),
        2
    );
    // One day is raised to the smallest retention an undo allows (8 days).
    assert_eq!(
        scans::retention::prune_resolved_findings(&mut conn, 1, minute)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        (
            findings(&mut conn, "open").await,
            findings(&mut conn, "resolved").await
        ),
        (5, 1)
    );

    // A connector deleted now still takes its chunks of the shared scan with it.
    let (status, body) = admin
        .send(Method::DELETE, &format!("/connectors/{gone}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = admin
        .send(Method::GET, &format!("/scans/{shared}"), None)
        .await;
    let scan = &body["data"];
    assert_eq!(scan["progress"]["files_total"], 3, "{scan}");
    assert_eq!(scan["progress"]["findings_count"], 3, "{scan}");
    assert_eq!(history(&kept).await, before.0);
}

/// The coordinator API opens with the scan's worker token only, and checks every report: an
/// object outside the chunk, a malformed finding, a stale fence. A report sent twice (its
/// answer lost) is counted once.
#[tokio::test]
async fn the_coordinator_api_takes_only_the_scans_token_and_checks_every_report() {
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "payroll").await;
    let body = format!("ssn {SSN}\n");
    seed::put_all(
        bucket.as_ref(),
        &[
            ("a.txt", body.as_bytes()),
            ("b.txt", body.as_bytes()),
            ("c.txt", body.as_bytes()),
        ],
    )
    .await;
    let app = app_on(&moto, "0").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let connector = connector(&admin, "Payroll", "payroll").await;
    let (scan, config) = enumerated(&admin, &connector, json!({"max_workers": 1})).await;
    let token = config["environment"]["AUTH_TOKEN"]
        .as_str()
        .unwrap()
        .to_owned();
    let worker = Client {
        app: &app,
        token: token.clone(),
    };
    let work = |path: &str| format!("/scans/{scan}/work/{path}");
    let me = json!({"worker_id": "customer-k8s/job-0"});

    // Nothing but the scan's own token opens it: not an access token, not another scan's
    // path, not nothing.
    for (client, path) in [
        (&admin, work("claim")),
        (
            &worker,
            format!("/scans/{}/work/claim", uuid::Uuid::now_v7()),
        ),
        (&worker, "/scans/not-a-scan/work/claim".to_owned()),
    ] {
        let (status, body) = client.send(Method::POST, &path, Some(me.clone())).await;
        assert_eq!(status, 401, "{path}: {body}");
        crate::area_b_error(&body, "UNAUTHORIZED");
    }
    let response = app
        .http
        .post(app.url(&work("claim")))
        .json(&me)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    // A report may be large, so the token is checked before its body is read: without it, even
    // 3 MiB of what is not JSON at all is 401.
    let response = app
        .http
        .post(app.url(&work("record")))
        .bearer_auth("dpsw_not-the-token")
        .header("content-type", "application/json")
        .body(vec![b'x'; 3 * 1024 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let (status, body) = worker
        .send(
            Method::POST,
            &work("claim"),
            Some(json!({"worker_id": " "})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["details"]["field"], "worker_id");

    // The claim: the chunk's objects, the findings key, the connector's public configuration.
    let (status, body) = worker
        .send(Method::POST, &work("claim"), Some(me.clone()))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["scan_status"], "running");
    let claim = body["data"]["claim"].clone();
    assert_eq!(claim["tenant_id"], "acme");
    assert_eq!(claim["resources"].as_array().unwrap().len(), 3, "{claim}");
    // No key of the tenant's reaches a worker.
    assert!(claim.get("finding_key").is_none(), "{claim}");
    assert_eq!(claim["connectors"][0]["provider"], "aws");
    assert_eq!(claim["connectors"][0]["config"]["region"], "us-east-1");
    let (chunk_no, fence) = (claim["chunk_no"].clone(), claim["fence"].as_i64().unwrap());
    let idx: Vec<i64> = claim["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["idx"].as_i64().unwrap())
        .collect();
    // Three SSNs of one text: one finding.
    let finding = json!({
        "pii_type": "us_ssn", "category": "government_id", "field": "", "occurrences": 3,
        "confidence": 0.9, "preview": "***-**-9999",
        "locations": [{"line": 1, "column": 5}, {"line": 2, "column": 5}, {"line": 9, "column": 1}],
    });
    let record = |fence: i64, outcomes: Value| json!({"chunk_no": chunk_no, "fence": fence, "outcomes": outcomes});

    // Refused, naming what is wrong: an object outside the chunk, a finding without values,
    // without samples or with more than are kept, one claimed to be the tenant's tokens where
    // the platform wrote none, an unknown outcome, a skip without its reason.
    let mut no_values = finding.clone();
    no_values["occurrences"] = json!(0);
    let mut no_samples = finding.clone();
    no_samples["locations"] = json!([]);
    let mut too_many_samples = finding.clone();
    too_many_samples["occurrences"] = json!(100);
    too_many_samples["locations"] = json!(vec![json!({"line": 1, "column": 5}); 16]);
    let mut more_samples_than_values = finding.clone();
    more_samples_than_values["occurrences"] = json!(2);
    let mut long_field = finding.clone();
    long_field["field"] = json!("f".repeat(257));
    let mut not_our_tokens = finding.clone();
    not_our_tokens["tokenized"] = json!(true);
    let mut unknown_type = finding.clone();
    unknown_type["pii_type"] = json!("custom:not_a_classifier");
    let mut wrong_category = finding.clone();
    wrong_category["category"] = json!("contact");
    for (outcomes, field) in [
        (
            json!([{"idx": 9999, "outcome": "scanned", "findings": [finding]}]),
            "outcomes",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [no_values]}]),
            "outcomes[0].findings[0].occurrences",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [no_samples]}]),
            "outcomes[0].findings[0].locations",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [too_many_samples]}]),
            "outcomes[0].findings[0].locations",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [more_samples_than_values]}]),
            "outcomes[0].findings[0].locations",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [long_field]}]),
            "outcomes[0].findings[0].field",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [not_our_tokens]}]),
            "outcomes",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [unknown_type]}]),
            "outcomes",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [wrong_category]}]),
            "outcomes",
        ),
        (
            json!([{"idx": idx[0], "outcome": "skipped", "reason": "corrupt_zip",
                    "unread": {"corrupt_zip": 1}}]),
            "outcomes[0].unread",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [finding],
                    "unread": {"Not A Reason": 1}}]),
            "outcomes[0].unread",
        ),
        (
            json!([{"idx": idx[0], "outcome": "scanned", "findings": [finding],
                    "unread": {"compression_ratio": 0}}]),
            "outcomes[0].unread",
        ),
        (
            json!([{"idx": idx[0], "outcome": "lost"}]),
            "outcomes[0].outcome",
        ),
        (
            json!([{"idx": idx[0], "outcome": "skipped"}]),
            "outcomes[0].reason",
        ),
    ] {
        let (status, body) = worker
            .send(Method::POST, &work("record"), Some(record(fence, outcomes)))
            .await;
        assert_eq!(status, 400, "{field}: {body}");
        assert_eq!(body["error"]["details"]["field"], field, "{body}");
    }
    // A stale fence writes nothing.
    let (status, body) = worker
        .send(
            Method::POST,
            &work("record"),
            Some(record(
                fence - 1,
                json!([{"idx": idx[0], "outcome": "failed", "reason": "provider"}]),
            )),
        )
        .await;
    assert_eq!(
        (status, &body["data"]["held"]),
        (200, &json!(false)),
        "{body}"
    );

    // A report, and the same again (its answer lost): counted once.
    let first = json!([{"idx": idx[0], "outcome": "scanned", "findings": [finding],
                        "unread": {"compression_ratio": 2}}]);
    for _ in 0..2 {
        let (status, body) = worker
            .send(
                Method::POST,
                &work("record"),
                Some(record(fence, first.clone())),
            )
            .await;
        assert_eq!(
            (status, &body["data"]["held"]),
            (200, &json!(true)),
            "{body}"
        );
    }
    let (_, body) = admin
        .send(Method::GET, &format!("/scans/{scan}"), None)
        .await;
    assert_eq!(body["data"]["progress"]["files_processed"], 1, "{body}");
    // Counts are of values.
    assert_eq!(body["data"]["progress"]["findings_count"], 3, "{body}");
    let (status, body) = worker
        .send(
            Method::POST,
            &work("heartbeat"),
            Some(json!({"chunk_no": 999, "fence": fence})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = worker
        .send(
            Method::POST,
            &work("heartbeat"),
            Some(json!({"chunk_no": chunk_no, "fence": fence})),
        )
        .await;
    assert_eq!(
        (status, &body["data"]["held"]),
        (200, &json!(true)),
        "{body}"
    );

    // The rest, the end of the chunk, and the scan is done.
    let rest = json!([
        {"idx": idx[1], "outcome": "skipped", "reason": "unsupported_format"},
        {"idx": idx[2], "outcome": "failed", "reason": "permission"},
    ]);
    let (_, body) = worker
        .send(Method::POST, &work("record"), Some(record(fence, rest)))
        .await;
    assert_eq!(body["data"]["held"], true, "{body}");
    let (_, body) = worker
        .send(
            Method::POST,
            &work("complete"),
            Some(json!({"chunk_no": chunk_no, "fence": fence})),
        )
        .await;
    assert_eq!(body["data"]["held"], true, "{body}");
    let (_, body) = worker.send(Method::POST, &work("claim"), Some(me)).await;
    assert_eq!(body["data"]["claim"], Value::Null, "{body}");
    let done = finished(&admin, &scan).await;
    assert_eq!(done["coverage"]["total_scanned"], 1, "{done}");
    assert_eq!(done["coverage"]["total_skipped"], 1, "{done}");
    // Members an archive left unread are said beside the skipped objects, counted once.
    assert_eq!(
        done["coverage"]["skip_reasons"],
        json!({"compression_ratio": 2, "unsupported_format": 1}),
        "{done}"
    );
    assert_eq!(done["coverage"]["total_failed"], 1, "{done}");
    let (_, body) = admin
        .send(
            Method::GET,
            &format!("/findings?connector={connector}"),
            None,
        )
        .await;
    let found = body["data"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{body}");
    assert_eq!(found[0]["preview"], "***-**-9999");
    assert_eq!(found[0]["occurrences"], 3, "{body}");
    assert_eq!(
        found[0]["field"],
        Value::Null,
        "plain text is one field: {body}"
    );
    assert_eq!(
        found[0]["location"],
        json!({"line": 1, "column": 5}),
        "{body}"
    );
    assert_eq!(found[0]["locations"].as_array().unwrap().len(), 3, "{body}");
    // An id that is no id names nothing: an empty page.
    for filter in ["connector=not-an-id", "scan=not-an-id"] {
        let (status, body) = admin
            .send(Method::GET, &format!("/findings?{filter}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"], serde_json::json!([]), "{body}");
        assert_eq!(body["pagination"]["has_more"], false, "{body}");
        // The cursor is still checked: a page of nothing is no licence for a foreign cursor.
        let (status, body) = admin
            .send(
                Method::GET,
                &format!("/findings?{filter}&cursor={}", "A".repeat(54)),
                None,
            )
            .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["code"], "VALIDATION_FAILED", "{body}");
    }
}

/// A worker that sends whole values as its previews (modified, or buggy) has them masked by
/// the platform before they are stored: no value reaches the findings table, the API or a
/// dump of the database. A location that is not one of the detector's shapes is refused.
#[tokio::test]
async fn a_worker_cannot_store_a_preview_the_platform_did_not_mask() {
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "payroll").await;
    seed::put_all(bucket.as_ref(), &[("a.txt", b"ssn on file\n" as &[u8])]).await;
    let app = app_on(&moto, "0").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let connector = connector(&admin, "Payroll", "payroll").await;
    let (scan, config) = enumerated(&admin, &connector, json!({"max_workers": 1})).await;
    let worker = Client {
        app: &app,
        token: config["environment"]["AUTH_TOKEN"]
            .as_str()
            .unwrap()
            .to_owned(),
    };
    let work = |path: &str| format!("/scans/{scan}/work/{path}");
    let (_, body) = worker
        .send(
            Method::POST,
            &work("claim"),
            Some(json!({"worker_id": "modified"})),
        )
        .await;
    let claim = body["data"]["claim"].clone();
    let (chunk_no, fence) = (claim["chunk_no"].clone(), claim["fence"].clone());
    let idx = claim["resources"][0]["idx"].clone();
    let found = |pii_type: &str, category: &str, preview: &str, location: Value| {
        json!({
            "pii_type": pii_type, "category": category, "field": "", "occurrences": 1,
            "confidence": 0.9, "locations": [location], "preview": preview,
        })
    };
    let line = json!({"line": 1, "column": 5});
    let report = |findings: Value| {
        json!({"chunk_no": chunk_no, "fence": fence,
               "outcomes": [{"idx": idx, "outcome": "scanned", "findings": findings}]})
    };
    let (status, body) = worker
        .send(
            Method::POST,
            &work("record"),
            Some(report(json!([found(
                "us_ssn",
                "government_id",
                "***-**-9999",
                json!({"line": 1, "column": 5, "value": "219-09-9999"})
            )]))),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["details"]["field"], "outcomes[0].findings[0].locations",
        "{body}"
    );
    let (status, body) = worker
        .send(
            Method::POST,
            &work("record"),
            Some(report(json!([
                found("us_ssn", "government_id", "219-09-9999", line.clone()),
                found("email", "contact", "ann.lee@example.com", line.clone()),
                found("dob", "personal", "1984-05-21", line.clone()),
            ]))),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["held"], true, "{body}");
    let (_, body) = admin
        .send(
            Method::GET,
            &format!("/findings?connector={connector}"),
            None,
        )
        .await;
    let mut previews: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["preview"].as_str().unwrap())
        .collect();
    previews.sort_unstable();
    assert_eq!(
        previews,
        ["****-**-**", "***-**-9999", "a***@example.com"],
        "{body}"
    );
    let dump = testkit::pg_dump(&app.db);
    for value in ["219-09-9999", "ann.lee@example.com", "1984-05-21"] {
        assert!(!dump.contains(value), "{value} is in the database");
        assert!(!body.to_string().contains(value), "{value} is in the API");
    }
}

/// The retentions' variables: defaults, 0 to keep for good, and values refused with the
/// variable named (a resolved finding is kept at least as long as an undo can open it again).
#[tokio::test]
async fn retention_settings_have_defaults_and_refuse_what_undo_could_not_survive() {
    let db = testkit::database().await;
    let config = |pairs: &[(&str, &str)]| {
        let mut env = integration_tests::default_env(&db);
        for (k, v) in pairs {
            env.insert((*k).into(), (*v).into());
        }
        platform_api::Config::from_lookup(&|k| env.get(k).cloned())
    };
    let defaults = config(&[]).unwrap();
    assert_eq!(defaults.scan_resource_retention_days, Some(30));
    assert_eq!(defaults.resolved_findings_retention_days, Some(90));
    let kept = config(&[
        ("DPS_SCAN_RESOURCE_RETENTION_DAYS", "0"),
        ("DPS_RESOLVED_FINDINGS_RETENTION_DAYS", "0"),
    ])
    .unwrap();
    assert_eq!(kept.scan_resource_retention_days, None);
    assert_eq!(kept.resolved_findings_retention_days, None);
    for (variable, value) in [
        ("DPS_RESOLVED_FINDINGS_RETENTION_DAYS", "7"),
        ("DPS_RESOLVED_FINDINGS_RETENTION_DAYS", "3651"),
        ("DPS_RESOLVED_FINDINGS_RETENTION_DAYS", "-1"),
        ("DPS_SCAN_RESOURCE_RETENTION_DAYS", "3651"),
        ("DPS_SCAN_RESOURCE_RETENTION_DAYS", "a month"),
    ] {
        let refused = config(&[(variable, value)]).unwrap_err();
        assert_eq!(refused.variable, variable, "{value}");
    }
}

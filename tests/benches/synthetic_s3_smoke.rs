//! Proves `support/synthetic_s3.rs` against the clients that will use it, and times its
//! listing of a million keys.
//!
//! `cargo bench -p integration-tests --bench synthetic_s3_smoke` (`-- --quick` skips the scan
//! through platform-api). Over 3,000 generated objects it:
//! 1. runs the connector's connection test and posture check (a private, encrypted bucket);
//! 2. lists the bucket and reads every object through `connectors::Cloud`, as `scan_moto`'s
//!    raw run does (the connector's AssumeRole against a stand-in STS, then object_store), and
//!    checks the count, the bytes and the server's counters;
//! 3. checks a changed object (new ETag and content, the old ETag refused), a ranged read,
//!    and listings with a prefix, a start-after and a delimiter through object_store;
//! 4. scans the bucket through platform-api, as `scan_moto` does, and checks that every
//!    object was scanned, each read once.
//!
//! Then it lists 1,000,000 generated keys through `connectors::Cloud`, pages of 1,000, with
//! their sizes learnt from the generated bodies and then declared, and prints the times.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary reports on stdout and stops at the first failure"
)]

use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use integration_tests::{Service, TestApp};
use object_store::{ObjectStore as _, ObjectStoreExt as _};
use serde_json::json;
use testkit::seed;

#[path = "support/synthetic_s3.rs"]
mod synthetic_s3;
use synthetic_s3::SyntheticS3;

const BUCKET: &str = "bench-events";

/// The length of every generated object.
const OBJECT_BYTES: usize = 1024;

/// `OBJECT_BYTES` of application events as NDJSON, a user's email on one event in four, the
/// last line padded with spaces.
fn events(n: usize) -> Vec<u8> {
    let mut text = String::with_capacity(OBJECT_BYTES);
    for i in 1.. {
        let k = n * 100 + i;
        let contact = if i.is_multiple_of(4) {
            format!(",\"contact\":\"user{k}@example.com\"")
        } else {
            String::new()
        };
        let line = format!(
            "{{\"ts\":\"2024-05-{:02}T10:{:02}:00Z\",\"event\":\"{}\",\"user_id\":{}{contact}}}\n",
            k % 28 + 1,
            k % 60,
            ["login", "view", "search", "checkout"][k % 4],
            k % 50_000,
        );
        if text.len() + line.len() > OBJECT_BYTES {
            break;
        }
        text.push_str(&line);
    }
    text.pop();
    while text.len() < OBJECT_BYTES - 1 {
        text.push(' ');
    }
    text.push('\n');
    text.into_bytes()
}

fn connector_config() -> serde_json::Value {
    json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": "tenant-acme-7731",
        "region": "us-east-1",
        "buckets": [BUCKET],
    })
}

/// The environment of a platform that reads the synthetic bucket through a stand-in STS.
fn storage_env(storage: &str, sts: &str) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&'static str, String)> = seed::moto_platform_env(storage).into();
    env.push(("AWS_ENDPOINT_URL_STS", sts.to_owned()));
    env
}

/// The connector's view of the storage, as platform-api opens it.
fn open_storage(env: &[(&'static str, String)]) -> connectors::Storage {
    let cloud = connectors::Cloud::new(
        connectors::CloudEnv::from_vars(|name| {
            env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())
        })
        .unwrap(),
    )
    .unwrap();
    let config = connectors::validate(connectors::Provider::Aws, &connector_config()).unwrap();
    cloud
        .open(&"bench".parse().unwrap(), ids::ConnectorId::new(), &config)
        .unwrap()
}

/// Every object of the bucket, page by page, as `scan_moto`'s raw run lists it.
async fn list_all(bucket: &connectors::cloud::Bucket) -> Vec<connectors::cloud::Object> {
    let mut objects = Vec::new();
    let mut token = None;
    loop {
        let page = bucket.list_page(None, token.take(), 1000).await.unwrap();
        objects.extend(page.objects);
        token = page.next;
        if token.is_none() {
            return objects;
        }
    }
}

/// Reads every object to the end with four concurrent readers; returns the bytes read.
async fn read_all(
    bucket: &connectors::cloud::Bucket,
    objects: &[connectors::cloud::Object],
) -> u64 {
    futures::stream::iter(objects)
        .map(|o| async move {
            let mut body = bucket.read(&o.key, o.etag.as_deref()).await.unwrap();
            let mut bytes = 0u64;
            while let Some(piece) = body.next().await {
                bytes += piece.unwrap().len() as u64;
            }
            bytes
        })
        .buffer_unordered(4)
        .fold(0, |total, bytes| async move { total + bytes })
        .await
}

/// A connection test and a posture check; lists and reads all; a changed object, a ranged read
/// and object_store's own listings.
async fn check_clients(server: &SyntheticS3, env: &[(&'static str, String)], objects: usize) {
    let storage = open_storage(env);
    // A connection test (list ten keys, read the start of one) and a posture check.
    let probe = storage.probe(&[], Duration::from_secs(10)).await;
    assert!(probe.error.is_none(), "{:?}", probe.error);
    assert_eq!(
        (probe.buckets_accessible, probe.sample_objects),
        (vec![BUCKET.to_owned()], 10)
    );
    let posture = storage.posture(BUCKET).await.unwrap();
    assert_eq!(posture.public, Some(false), "{posture:?}");
    assert_eq!(posture.encryption.as_deref(), Some("AES256"));
    assert_eq!(posture.versioning.as_deref(), Some("disabled"));
    let (lists, gets) = (server.lists(), server.gets());
    assert_eq!((lists, gets), (1, 1));

    let bucket = storage.bucket(BUCKET).unwrap();
    let listed = list_all(&bucket).await;
    assert_eq!(listed.len(), objects);
    assert_eq!(server.lists() - lists, objects.div_ceil(1000) as u64);
    let expected: u64 = (0..objects).map(|n| events(n).len() as u64).sum();
    assert!(
        listed
            .iter()
            .enumerate()
            .all(|(n, o)| o.key == SyntheticS3::key(n) && o.size == events(n).len() as u64)
    );
    let started = Instant::now();
    assert_eq!(read_all(&bucket, &listed).await, expected);
    assert_eq!(server.gets() - gets, objects as u64);
    println!(
        "listed and read {objects} objects ({:.1} MB) through connectors::Cloud in {:.2} s",
        expected as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    // A changed object: a new ETag and content; a read of the listed version is refused.
    let old = listed[7].clone();
    server.change(7);
    let page = bucket.list_page(Some(&old.key), None, 10).await.unwrap();
    let new = page.objects[0].clone();
    assert_eq!(page.objects.len(), 1);
    assert_ne!(new.etag, old.etag);
    assert!(new.last_modified > old.last_modified);
    assert!(bucket.read(&old.key, old.etag.as_deref()).await.is_err());
    let content: Vec<u8> = bucket
        .read(&new.key, new.etag.as_deref())
        .await
        .unwrap()
        .try_fold(Vec::new(), |mut all, piece| async move {
            all.extend_from_slice(&piece);
            Ok(all)
        })
        .await
        .unwrap();
    assert_eq!(content, server.content(7));
    assert!(content.ends_with(b"{\"version\":1}\n"));
    assert_eq!(content.len() as u64, new.size);
    let head = bucket.read_head(&SyntheticS3::key(8), 100).await.unwrap();
    assert_eq!(head.as_ref(), &events(8)[..100]);

    // object_store's own listings: a prefix, a start-after and a delimiter.
    let store = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(server.url())
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name(BUCKET)
        .with_access_key_id(seed::MOTO_KEY_ID)
        .with_secret_access_key(seed::MOTO_SECRET)
        .build()
        .unwrap();
    let under = |prefix: &str| {
        let prefix = object_store::path::Path::from(prefix);
        let store = &store;
        async move {
            store
                .list(Some(&prefix))
                .map_ok(|m| m.location.to_string())
                .try_collect::<Vec<_>>()
                .await
                .unwrap()
        }
    };
    assert_eq!(under("events").await.len(), objects);
    assert!(under("logs").await.is_empty());
    let after = object_store::path::Path::from(SyntheticS3::key(objects - 3));
    let rest: Vec<String> = store
        .list_with_offset(None, &after)
        .map_ok(|m| m.location.to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        rest,
        [SyntheticS3::key(objects - 2), SyntheticS3::key(objects - 1)]
    );
    let top = store.list_with_delimiter(None).await.unwrap();
    assert!(top.objects.is_empty());
    assert_eq!(
        top.common_prefixes,
        [object_store::path::Path::from("events")]
    );
    let err = store
        .head(&object_store::path::Path::from("events/x.ndjson"))
        .await
        .unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
}

/// Scans the bucket through platform-api, as `scan_moto` does; returns the finished scan.
async fn scan(env: Vec<(&'static str, String)>, objects: usize) -> serde_json::Value {
    let app = TestApp::spawn_with(Service::Platform, |vars| {
        for (name, value) in env {
            vars.insert(name.into(), value);
        }
        vars.insert("DPS_SCAN_WORKERS".into(), "2".into());
        vars.insert("DATABASE_POOL_SIZE".into(), "10".into());
        vars.insert("HTTP_WORKERS".into(), "1".into());
        vars.insert("RUST_LOG".into(), "warn".into());
        vars.insert("DPS_REMEDIATION_EXECUTOR".into(), "false".into());
    })
    .await;
    let token = app.token("acme", "ann", &["admin"]);
    let send = |method: reqwest::Method, path: &str, body: Option<serde_json::Value>| {
        let mut request = app.http.request(method, app.url(path)).bearer_auth(&token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: serde_json::Value = response.json().await.unwrap();
            (status, body)
        }
    };
    let (_, answer) = send(reqwest::Method::GET, "/connectors/external-id", None).await;
    let mut config = connector_config();
    config["external_id"] = answer["data"]["external_id"].clone();
    let (status, body) = send(
        reqwest::Method::POST,
        "/connectors",
        Some(json!({"name": "Synthetic", "provider": "aws", "config": config})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let connector = body["data"]["id"].as_str().unwrap().to_owned();
    let (status, body) = send(
        reqwest::Method::POST,
        &format!("/connectors/{connector}/scan"),
        Some(json!({"type": "full", "options": {"max_workers": 2, "max_files": objects}})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    let done = loop {
        let (code, body) = send(reqwest::Method::GET, &format!("/scans/{scan}"), None).await;
        let status = body["data"]["status"].as_str().unwrap_or("");
        if code == 200 && status != "queued" && status != "running" {
            break body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!(
        "scanned {objects} objects through platform-api in {:.2} s: {} findings",
        started.elapsed().as_secs_f64(),
        done["progress"]["findings_count"]
    );
    app.stop().await;
    done
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let sts = testkit::identity::sts(seed::MOTO_KEY_ID, seed::MOTO_SECRET);

    let objects = 3000;
    let server = SyntheticS3::start(
        BUCKET,
        objects,
        seed::MOTO_KEY_ID,
        seed::MOTO_SECRET,
        events,
    )
    .await;
    let env = storage_env(&server.url(), &sts.url());
    check_clients(&server, &env, objects).await;
    if !quick {
        let gets = server.gets();
        let done = scan(env, objects).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["progress"]["files_total"], objects, "{done}");
        assert_eq!(done["coverage"]["total_scanned"], objects, "{done}");
        assert_eq!(server.gets() - gets, objects as u64);
    }
    drop(server);

    // A million keys, their sizes learnt from the bodies, then declared.
    let million = 1_000_000;
    for sized in [false, true] {
        let mut server = SyntheticS3::start(
            BUCKET,
            million,
            seed::MOTO_KEY_ID,
            seed::MOTO_SECRET,
            events,
        )
        .await;
        if sized {
            server = server.sized(|_| OBJECT_BYTES);
        }
        let bucket = open_storage(&storage_env(&server.url(), &sts.url()))
            .bucket(BUCKET)
            .unwrap();
        let started = Instant::now();
        let listed = list_all(&bucket).await;
        let elapsed = started.elapsed();
        assert_eq!(listed.len(), million);
        assert!(listed.iter().all(|o| o.size == OBJECT_BYTES as u64));
        assert_eq!(server.lists(), 1000);
        let ends = [listed[0].clone(), listed[million - 1].clone()];
        assert_eq!(read_all(&bucket, &ends).await, 2 * OBJECT_BYTES as u64);
        println!(
            "listed {million} keys in {:.2} s ({:.0} keys/s), sizes {}",
            elapsed.as_secs_f64(),
            million as f64 / elapsed.as_secs_f64(),
            if sized {
                "declared"
            } else {
                "from generated 1 KiB bodies"
            }
        );
    }
}

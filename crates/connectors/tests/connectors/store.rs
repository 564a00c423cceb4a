//! Connectors in Postgres: validation, secrets sealed at rest, names unique per tenant, tenant
//! isolation, filters and cursor pages, deletion.

use std::sync::Arc;

use connectors::store::{self, ConnectorError};
use connectors::{Filter, Provider, Status};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use serde_json::{Value, json};

const SECRET: &str = "azure-client-secret-7f3a9c";

fn azure(name_suffix: &str) -> Value {
    json!({
        "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "client_id": "0b3f2c1e-1111-2222-3333-444455556666",
        "client_secret": SECRET,
        "storage_account": format!("acme{name_suffix}"),
        "buckets": ["exports"],
    })
}

fn new<'a>(name: &'a str, provider: &'a str, config: &'a Value) -> store::NewConnector<'a> {
    store::NewConnector {
        name,
        provider,
        config,
        aws_external_id: config["external_id"].as_str().unwrap_or_default(),
    }
}

fn limit(n: i64) -> paging::Limit {
    paging::Limit::parse(Some(n), 20).unwrap()
}

fn aws() -> Value {
    json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": "tenant-acme",
        "region": "us-east-1",
        "buckets": ["hr-exports"],
    })
}

#[tokio::test]
async fn connectors_are_stored_without_secrets_and_scoped_to_their_tenant() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let (master, _) = keys::MasterKey::generate().unwrap();
    let master = Arc::new(master);
    let keyring = keys::KeyRing::new(master.clone());
    let cursors = paging::CursorKey::new(&master.derive(b"cursor"));
    let acme: ids::TenantId = "acme".parse().unwrap();
    let other: ids::TenantId = "globex".parse().unwrap();
    let keys = keyring.tenant(&mut conn, &acme).await.unwrap();

    let blob = store::create(
        &mut conn,
        &keyring,
        &acme,
        &new("Blob exports", "azure", &azure("data")),
    )
    .await
    .unwrap();
    assert_eq!(blob.status, Status::PendingTest);
    assert_eq!(blob.provider, Provider::Azure);
    assert!(!blob.config.contains_key("client_secret"));
    assert_eq!(blob.config["storage_account"], "acmedata");

    // The secret is sealed: not in any column, and it opens for connecting.
    let dump = testkit::pg_dump(&db);
    assert!(
        !dump.contains(SECRET),
        "the client secret is in the database"
    );
    let full = store::config(&mut conn, &keys, &acme, blob.id)
        .await
        .unwrap();
    assert_eq!(full.text("client_secret"), SECRET);

    // Names are unique per tenant, not across tenants.
    let again = store::create(
        &mut conn,
        &keyring,
        &acme,
        &new("Blob exports", "aws", &aws()),
    )
    .await;
    assert!(
        matches!(again, Err(ConnectorError::DuplicateName)),
        "{again:?}"
    );
    store::create(
        &mut conn,
        &keyring,
        &other,
        &new("Blob exports", "aws", &aws()),
    )
    .await
    .unwrap();

    // Every invalid field is named.
    let bad = store::create(
        &mut conn,
        &keyring,
        &acme,
        &new(" ", "gcp", &json!({"project_id": "x"})),
    )
    .await;
    let Err(ConnectorError::Invalid(fields)) = bad else {
        panic!("{bad:?}")
    };
    let names: Vec<_> = fields.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(
        names,
        [
            "name",
            "config.project_id",
            "config.service_account_email",
            "config.wif_provider"
        ]
    );
    let bad = store::create(&mut conn, &keyring, &acme, &new("x", "dropbox", &json!({}))).await;
    assert!(matches!(bad, Err(ConnectorError::Invalid(_))));

    // Pages, filters and isolation.
    for n in 0..3 {
        let name = format!("S3 {n}");
        store::create(&mut conn, &keyring, &acme, &new(&name, "aws", &aws()))
            .await
            .unwrap();
    }
    let first = store::list(
        &mut conn,
        &acme,
        Filter::default(),
        paging::PageRequest {
            cursors: &cursors,
            limit: limit(2),
            cursor: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(first.items.len(), 2);
    assert!(first.pagination.has_more);
    let cursor = first.pagination.next_cursor.clone().unwrap();
    let second = store::list(
        &mut conn,
        &acme,
        Filter::default(),
        paging::PageRequest {
            cursors: &cursors,
            limit: limit(2),
            cursor: Some(&cursor),
        },
    )
    .await
    .unwrap();
    assert_eq!(second.items.len(), 2);
    assert!(!second.pagination.has_more);
    let names: Vec<_> = first
        .items
        .iter()
        .chain(&second.items)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["Blob exports", "S3 0", "S3 1", "S3 2"]);
    // Another tenant's cursor is refused.
    let stolen = store::list(
        &mut conn,
        &other,
        Filter::default(),
        paging::PageRequest {
            cursors: &cursors,
            limit: limit(2),
            cursor: Some(&cursor),
        },
    )
    .await;
    assert!(matches!(stolen, Err(ConnectorError::BadCursor)));
    let only_aws = store::list(
        &mut conn,
        &acme,
        Filter {
            provider: Some(Provider::Aws),
            status: Some(Status::PendingTest),
        },
        paging::PageRequest::first(&cursors, limit(20)),
    )
    .await
    .unwrap();
    assert_eq!(only_aws.items.len(), 3);

    // Another tenant can neither see nor delete it.
    assert!(matches!(
        store::get(&mut conn, &other, blob.id).await,
        Err(ConnectorError::NotFound)
    ));
    assert!(matches!(
        store::delete(&mut conn, &other, blob.id).await,
        Err(ConnectorError::NotFound)
    ));
    store::delete(&mut conn, &acme, blob.id).await.unwrap();
    assert!(matches!(
        store::get(&mut conn, &acme, blob.id).await,
        Err(ConnectorError::NotFound)
    ));
}

/// A connector of the bucket `bucket` in moto.
fn moto_bucket(bucket: &str) -> Value {
    json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": "tenant-acme-7731",
        "region": "us-east-1",
        "buckets": [bucket],
    })
}

#[tokio::test]
async fn the_connection_test_lists_and_reads_for_real_and_records_the_outcome() {
    use futures::StreamExt as _;
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let moto = testkit::emulators::moto(&[]);
    let bucket = testkit::seed::s3_bucket(&moto.url(), "hr-exports").await;
    testkit::seed::put_all(
        bucket.as_ref(),
        &[
            ("2024/a.csv", b"name\nAnn\n"),
            ("2024/b.csv", b"name\nBo\n"),
        ],
    )
    .await;
    let cloud = testkit::seed::moto_cloud(&moto.url());
    let (master, _) = keys::MasterKey::generate().unwrap();
    let keyring = keys::KeyRing::new(Arc::new(master));
    let acme: ids::TenantId = "acme".parse().unwrap();

    let good = store::create(
        &mut conn,
        &keyring,
        &acme,
        &new("HR", "aws", &moto_bucket("hr-exports")),
    )
    .await
    .unwrap();
    let outcome = connectors::test_connection(&mut conn, &cloud, &keyring, &acme, good.id)
        .await
        .unwrap();
    assert!(outcome.connected, "{outcome:?}");
    assert_eq!(outcome.buckets_accessible, ["hr-exports"]);
    assert!(outcome.sample_objects >= 1, "{outcome:?}");
    assert!(outcome.error.is_none());
    let stored = store::get(&mut conn, &acme, good.id).await.unwrap();
    assert_eq!(stored.status, Status::Active);
    assert_eq!(stored.status_message, None);

    // The storage the scans read through: pages of listings, and reads conditional on the ETag.
    let keys = keyring.tenant(&mut conn, &acme).await.unwrap();
    let config = store::config(&mut conn, &keys, &acme, good.id)
        .await
        .unwrap();
    let storage = cloud.open(&acme, good.id, &config).unwrap();
    assert_eq!(storage.buckets().await.unwrap(), ["hr-exports"]);
    let hr = storage.bucket("hr-exports").unwrap();
    let page = hr.list_page(Some("2024/"), None, 1).await.unwrap();
    assert_eq!(page.objects.len(), 1);
    let next = page.next.clone().expect("a second page");
    let rest = hr.list_page(Some("2024/"), Some(next), 1).await.unwrap();
    assert_eq!(rest.objects.len(), 1);
    let first = &page.objects[0];
    let mut body = hr.read(&first.key, first.etag.as_deref()).await.unwrap();
    let mut bytes = Vec::new();
    while let Some(piece) = body.next().await {
        bytes.extend_from_slice(&piece.unwrap());
    }
    assert_eq!(bytes, b"name\nAnn\n");
    // A read conditional on an ETag the object no longer has is refused, not served stale.
    testkit::seed::put_all(bucket.as_ref(), &[("2024/a.csv", b"name\nAnn\nCy\n")]).await;
    assert!(hr.read(&first.key, first.etag.as_deref()).await.is_err());

    // A bucket that does not exist: the test says why, and the connector is in error.
    let bad = store::create(
        &mut conn,
        &keyring,
        &acme,
        &new("Missing", "aws", &moto_bucket("no-such-bucket")),
    )
    .await
    .unwrap();
    let outcome = connectors::test_connection(&mut conn, &cloud, &keyring, &acme, bad.id)
        .await
        .unwrap();
    assert!(!outcome.connected);
    let error = outcome.error.expect("a failure");
    assert_eq!(error.failure, connectors::Failure::NotFound, "{error:?}");
    let stored = store::get(&mut conn, &acme, bad.id).await.unwrap();
    assert_eq!(stored.status, Status::Error);
    assert!(
        stored
            .status_message
            .as_deref()
            .is_some_and(|m| m.starts_with("not_found")),
        "{stored:?}"
    );
    // Storage that does not answer at all: the connector is disconnected, not in error, and a
    // test that reaches it again makes it active.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let unreachable = testkit::seed::moto_cloud(&format!("http://127.0.0.1:{closed}"));
    let outcome = connectors::test_connection(&mut conn, &unreachable, &keyring, &acme, good.id)
        .await
        .unwrap();
    assert!(!outcome.connected);
    let error = outcome.error.expect("a failure");
    assert_eq!(error.failure, connectors::Failure::Network, "{error:?}");
    let stored = store::get(&mut conn, &acme, good.id).await.unwrap();
    assert_eq!(stored.status, Status::Disconnected);
    assert!(
        stored
            .status_message
            .as_deref()
            .is_some_and(|m| m.starts_with("network")),
        "{stored:?}"
    );
    connectors::test_connection(&mut conn, &cloud, &keyring, &acme, good.id)
        .await
        .unwrap();
    let stored = store::get(&mut conn, &acme, good.id).await.unwrap();
    assert_eq!(stored.status, Status::Active);
    assert_eq!(stored.status_message, None);

    // Another tenant cannot test it.
    let globex: ids::TenantId = "globex".parse().unwrap();
    assert!(matches!(
        connectors::test_connection(&mut conn, &cloud, &keyring, &globex, bad.id).await,
        Err(ConnectorError::NotFound)
    ));
}

/// A storage that accepts connections and never answers: the connection test gives up at its
/// deadline, says how far it got, and counts as a network failure (the connector is
/// `disconnected`), instead of waiting out every bucket's own timeouts in turn.
#[tokio::test]
async fn a_connection_test_gives_up_at_its_deadline() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let silent = testkit::seed::moto_cloud(&format!("http://127.0.0.1:{port}"));
    let (master, _) = keys::MasterKey::generate().unwrap();
    let keyring = keys::KeyRing::new(Arc::new(master));
    let acme: ids::TenantId = "acme".parse().unwrap();
    let mut config = moto_bucket("hr-exports");
    config["buckets"] = json!(["hr-exports", "finance", "legal"]);
    let created = store::create(&mut conn, &keyring, &acme, &new("HR", "aws", &config))
        .await
        .unwrap();
    let config = connectors::probe::test_config(&mut conn, &keyring, &acme, created.id)
        .await
        .unwrap();
    let storage = silent.open(&acme, created.id, &config).unwrap();
    let probe = storage
        .probe(&[], std::time::Duration::from_millis(500))
        .await;
    assert!(probe.buckets_accessible.is_empty());
    let error = probe.error.expect("a failure");
    assert_eq!(error.failure, connectors::Failure::Network);
    assert_eq!(
        error.message,
        "the storage answered for 0 of 3 buckets within 500ms"
    );
    let outcome = connectors::probe::record_test(&mut conn, &acme, created.id, {
        let mut p = storage
            .probe(&[], std::time::Duration::from_millis(200))
            .await;
        p.latency = std::time::Duration::ZERO;
        p
    })
    .await
    .unwrap();
    assert!(!outcome.connected);
    let stored = store::get(&mut conn, &acme, created.id).await.unwrap();
    assert_eq!(stored.status, Status::Disconnected);
}

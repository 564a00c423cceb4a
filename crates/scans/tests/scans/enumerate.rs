//! Enumeration: which objects a scan covers (file types, prefixes, the file cap, incremental
//! scans), and what sources that cannot be listed do to the scan.

use object_store::ObjectStoreExt as _;
use object_store::path::Path;
use scans::lease;
use scans::outbox::{Event, Position};
use scans::record::Outcome;
use scans::{Enumeration, Status};
use serde_json::json;

use crate::common::{World, count, events, finding, keys_of};

#[tokio::test]
async fn only_objects_of_the_requested_types_under_the_requested_prefixes_are_covered() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket(
        "mixed-bucket",
        &[
            ("hr/a.csv", "a"),
            ("hr/b.json", "b"),
            ("hr/c.csv.gz", "c"),
            ("hr/d.CSV", "d"),
            ("hr/sub/f.csv", "f"),
            ("other/e.csv", "e"),
        ],
    )
    .await;
    let mixed = w.connector(&acme, "Mixed", "mixed-bucket").await;
    let options = json!({ "file_types": ["csv"], "prefixes": ["hr/"], "max_workers": 1 });
    let scan = w.started(&acme, &[mixed], options).await;

    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.enumeration, Enumeration::Complete);
    assert_eq!((view.sources_total, view.sources_listed), (1, 1));
    assert_eq!(view.counts.enumerated, 4);
    let claim = w.claim(&acme, scan, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    assert_eq!(
        keys_of(&pending),
        ["hr/a.csv", "hr/c.csv.gz", "hr/d.CSV", "hr/sub/f.csv"]
    );
    assert!(pending.iter().all(|r| r.bucket == "mixed-bucket"));
    assert!(pending.iter().all(|r| r.size == 1));

    // What a worker elsewhere would be given: the objects and the connector's public config.
    let deployment = scans::store::deployment(&mut w.conn, &acme, scan, None)
        .await
        .unwrap();
    assert_eq!(deployment.status, Status::Running);
    assert_eq!(deployment.enumeration_status, Enumeration::Complete);
    assert_eq!(deployment.chunks.len(), 1);
    let chunk = &deployment.chunks[0];
    assert_eq!(chunk.connector_id, mixed);
    assert_eq!(
        chunk.files,
        [
            "mixed-bucket/hr/a.csv",
            "mixed-bucket/hr/c.csv.gz",
            "mixed-bucket/hr/d.CSV",
            "mixed-bucket/hr/sub/f.csv"
        ]
    );
    assert_eq!(chunk.connector_config["provider"], "aws");
    assert_eq!(chunk.connector_config["connector_id"], mixed.to_string());
    assert_eq!(chunk.connector_config["buckets"], json!(["mixed-bucket"]));

    // The file cap stops the listing there.
    let capped = w
        .started(&acme, &[mixed], json!({ "max_files": 2, "max_workers": 1 }))
        .await;
    let claim = w.claim(&acme, capped, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    assert_eq!(keys_of(&pending), ["hr/a.csv", "hr/b.json"]);
    // Objects in scope were left unlisted: the listing is partial, and says why.
    let view = scans::store::get(&mut w.conn, &acme, capped).await.unwrap();
    assert_eq!(view.enumeration, Enumeration::Partial);
    let reason = view.status_reason.unwrap_or_default();
    assert!(reason.contains("max_files (2) was reached"), "{reason}");

    // A cap that every object in scope fits under is no cap.
    let roomy = w
        .started(
            &acme,
            &[mixed],
            json!({ "max_files": 1000, "max_workers": 1 }),
        )
        .await;
    let view = scans::store::get(&mut w.conn, &acme, roomy).await.unwrap();
    assert_eq!(view.enumeration, Enumeration::Complete);
    assert_eq!(view.status_reason, None);
}

/// The connector's open findings by category.
async fn open_findings(w: &mut World, connector: ids::ConnectorId) -> Vec<(String, i64)> {
    let acme = w.acme.clone();
    scans::connector::activity(&mut w.conn, &acme, &[connector])
        .await
        .unwrap()
        .remove(&connector)
        .unwrap()
        .open_findings
}

#[tokio::test]
async fn an_incremental_scan_covers_what_changed_and_resolves_what_was_deleted() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    let bucket = w
        .bucket(
            "hr-exports",
            &[("a.txt", "alpha"), ("b.txt", "bravo"), ("c.txt", "charlie")],
        )
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let full = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    w.run(&acme, full, |_| {
        Outcome::scanned(vec![finding("ssn", "government_id")])
    })
    .await;
    assert_eq!(
        open_findings(&mut w, hr).await,
        [("government_id".to_owned(), 3)]
    );

    // One object changed, one deleted, one added.
    w.bucket(
        "hr-exports",
        &[("b.txt", "bravo, changed"), ("d.txt", "delta")],
    )
    .await;
    bucket.delete(&Path::from("c.txt")).await.unwrap();
    let incremental = w
        .scan_of(&acme, &[hr], "incremental", json!({ "max_workers": 1 }))
        .await;
    w.start(&acme, incremental).await;
    let view = scans::store::get(&mut w.conn, &acme, incremental)
        .await
        .unwrap();
    assert_eq!(view.kind, scans::Kind::Incremental);
    assert_eq!(view.counts.enumerated, 2);
    // The deleted object's finding is resolved as soon as the listing shows it gone.
    assert_eq!(
        open_findings(&mut w, hr).await,
        [("government_id".to_owned(), 2)]
    );
    let claims = w
        .run(&acme, incremental, |r| match r.object_key.as_str() {
            "d.txt" => Outcome::scanned(vec![finding("email", "contact")]),
            _ => Outcome::scanned(vec![]),
        })
        .await;
    assert_eq!(claims.len(), 1);
    let view = scans::store::get(&mut w.conn, &acme, incremental)
        .await
        .unwrap();
    assert_eq!(view.status, Status::Completed);
    assert_eq!((view.counts.scanned, view.counts.findings), (2, 1));
    // a.txt keeps its finding; b.txt's was superseded by its rescan; d.txt's is new.
    assert_eq!(
        open_findings(&mut w, hr).await,
        [("contact".to_owned(), 1), ("government_id".to_owned(), 1)]
    );
    assert_eq!(
        count(
            &mut w.conn,
            "SELECT count(*) AS n FROM findings WHERE status = 'resolved' AND resolved_at IS NOT NULL"
        )
        .await,
        2
    );
    assert_eq!(
        count(
            &mut w.conn,
            "SELECT count(*) AS n FROM scanned_objects WHERE object_key IN ('a.txt', 'b.txt', 'd.txt')"
        )
        .await,
        3
    );
    assert_eq!(
        count(&mut w.conn, "SELECT count(*) AS n FROM scanned_objects").await,
        3,
        "the deleted object is forgotten"
    );

    // Nothing changed since: the next incremental scan covers nothing and ends at once.
    let nothing = w.scan_of(&acme, &[hr], "incremental", json!({})).await;
    w.start(&acme, nothing).await;
    let view = scans::store::get(&mut w.conn, &acme, nothing)
        .await
        .unwrap();
    assert_eq!(view.status, Status::Completed);
    assert_eq!(view.counts, scans::Counts::default());
    assert_eq!(view.workers.total, 0);
    // How many events the earlier scans wrote depends on how their objects were batched, and
    // the outbox shows an event only once every earlier transaction has committed: wait until
    // the newest event is this scan's end, or 30 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let last = loop {
        let all = events(&mut w.conn, Position::default(), 1).await;
        let ended = all
            .last()
            .is_some_and(|e| e.scan == nothing && matches!(e.event, Event::ScanEnded { .. }));
        if ended || std::time::Instant::now() > deadline {
            break all;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let ended = last.last().unwrap();
    assert_eq!(ended.scan, nothing, "{last:#?}");
    assert!(matches!(
        ended.event,
        Event::ScanEnded {
            status: Status::Completed,
            ..
        }
    ));
}

/// A connector's earlier objects are held a page at a time: 25,000 recorded objects that the
/// listing no longer shows are all forgotten, past every page boundary, while the one still
/// there and unchanged is neither read nor forgotten, and another bucket's records stay.
#[tokio::test]
async fn an_incremental_scan_forgets_every_vanished_object_across_pages_of_records() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("hr-exports", &[("a.txt", "alpha")]).await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let full = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    w.run(&acme, full, |_| Outcome::scanned(vec![])).await;
    // Records of objects deleted since, in this bucket and in one the connector no longer
    // lists (which this scan cannot judge).
    let insert = format!(
        "INSERT INTO scanned_objects (tenant_id, connector_id, bucket, object_key, size, etag, \
         last_modified, scan_id) \
         SELECT '{acme}', '{connector}', b, 'old/' || lpad(n::text, 6, '0') || '.txt', 5, \
         '\"e' || n || '\"', now(), '{full}' \
         FROM generate_series(1, 25000) AS n, (VALUES ('hr-exports'), ('elsewhere')) AS v(b)",
        acme = acme.as_str(),
        connector = hr.as_uuid(),
        full = full.as_uuid(),
    );
    diesel_async::RunQueryDsl::execute(diesel::sql_query(insert), &mut w.conn)
        .await
        .unwrap();

    let incremental = w
        .scan_of(&acme, &[hr], "incremental", json!({ "max_workers": 1 }))
        .await;
    w.start(&acme, incremental).await;
    let view = scans::store::get(&mut w.conn, &acme, incremental)
        .await
        .unwrap();
    assert_eq!(view.counts.enumerated, 0, "a.txt did not change");
    assert_eq!(
        count(
            &mut w.conn,
            "SELECT count(*) AS n FROM scanned_objects WHERE bucket = 'hr-exports'"
        )
        .await,
        1,
        "only a.txt is still known in the listed bucket"
    );
    assert_eq!(
        count(
            &mut w.conn,
            "SELECT count(*) AS n FROM scanned_objects WHERE bucket = 'elsewhere'"
        )
        .await,
        25_000
    );
}

/// Two objects scanned in full with a finding each, one of them deleted since, and an
/// incremental scan of the connector started (not yet listed).
async fn incremental_after_a_deletion() -> (World, ids::ConnectorId, ids::ScanId) {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    let bucket = w
        .bucket("hr-exports", &[("a.txt", "alpha"), ("b.txt", "bravo")])
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let full = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    w.run(&acme, full, |_| {
        Outcome::scanned(vec![finding("ssn", "government_id")])
    })
    .await;
    bucket.delete(&Path::from("b.txt")).await.unwrap();
    let scan = w
        .scan_of(&acme, &[hr], "incremental", json!({ "max_workers": 1 }))
        .await;
    let started = scans::lifecycle::start_next(&mut w.conn).await.unwrap();
    assert_eq!(started, Some((acme.clone(), scan)));
    (w, hr, scan)
}

/// A cancel that commits while the listing's last page is being judged wins: the objects the
/// listing no longer shows keep their open findings.
#[tokio::test]
async fn a_scan_cancelled_as_its_last_page_is_judged_resolves_nothing() {
    use diesel_async::{
        AnsiTransactionManager, AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _,
        TransactionManager as _,
    };
    let (mut w, hr, scan) = incremental_after_a_deletion().await;
    let acme = w.acme.clone();

    // A cancel is under way: it holds the scan's row while the listing runs.
    let mut cancelling = w.connect().await;
    AnsiTransactionManager::begin_transaction(&mut cancelling)
        .await
        .unwrap();
    diesel::sql_query("SELECT 1 FROM scans WHERE scan_id = $1 FOR UPDATE")
        .bind::<diesel::sql_types::Uuid, _>(scan.as_uuid())
        .execute(&mut cancelling)
        .await
        .unwrap();
    let (cloud, keyring, url) = (
        w.cloud.clone().unwrap(),
        w.keyring.clone(),
        w.db.url.clone(),
    );
    let tenant = acme.clone();
    let listing = tokio::spawn(async move {
        let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
        scans::enumerate::enumerate(&mut conn, &cloud, &keyring, &tenant, scan).await
    });
    // The listing has read every page and waits for the row before judging what is gone.
    testkit::wait_for_lock_wait(&mut w.conn).await;
    scans::lifecycle::cancel(&mut cancelling, &acme, scan)
        .await
        .unwrap();
    AnsiTransactionManager::commit_transaction(&mut cancelling)
        .await
        .unwrap();
    listing.await.unwrap().unwrap();

    assert_eq!(
        open_findings(&mut w, hr).await,
        [("government_id".to_owned(), 2)],
        "a scan cancelled before its judgement judges nothing deleted"
    );
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Cancelled);
}

/// A scan cancelled before or while it is listed stops listing at the next page and judges
/// nothing deleted: an object gone from the storage keeps its open finding until a scan that
/// runs to its end says so.
#[tokio::test]
async fn a_scan_cancelled_while_it_is_listed_stops_and_resolves_nothing() {
    let (mut w, hr, scan) = incremental_after_a_deletion().await;
    let acme = w.acme.clone();
    scans::lifecycle::cancel(&mut w.conn, &acme, scan)
        .await
        .unwrap();
    let cloud = w.cloud.clone().unwrap();
    scans::enumerate::enumerate(&mut w.conn, &cloud, &w.keyring, &acme, scan)
        .await
        .unwrap();

    assert_eq!(
        open_findings(&mut w, hr).await,
        [("government_id".to_owned(), 2)],
        "a cancelled scan judges nothing deleted"
    );
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Cancelled);
    assert_eq!(view.status_reason.as_deref(), Some("cancelled by request"));
    assert_eq!(view.counts.enumerated, 0, "nothing listed after the cancel");
    assert_eq!(
        count(&mut w.conn, "SELECT count(*) AS n FROM scan_chunks WHERE scan_id NOT IN (SELECT scan_id FROM scans WHERE kind = 'full')").await,
        0
    );
}

#[tokio::test]
async fn sources_that_cannot_be_listed_make_the_scan_partial_or_failed() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("present-bucket", &[("x.txt", "x")]).await;
    let present = w.connector(&acme, "Present", "present-bucket").await;
    let absent = w.connector(&acme, "Absent", "absent-bucket").await;

    let partial = w
        .started(&acme, &[present, absent], json!({ "max_workers": 1 }))
        .await;
    let view = scans::store::get(&mut w.conn, &acme, partial)
        .await
        .unwrap();
    assert_eq!(view.enumeration, Enumeration::Partial);
    assert_eq!((view.sources_total, view.sources_listed), (2, 1));
    let reason = view.status_reason.clone().unwrap_or_default();
    assert!(
        reason.contains(&absent.to_string()) && reason.contains("absent-bucket"),
        "{reason}"
    );
    assert!(!reason.contains(&present.to_string()), "{reason}");
    w.run(&acme, partial, |_| Outcome::scanned(vec![])).await;
    let view = scans::store::get(&mut w.conn, &acme, partial)
        .await
        .unwrap();
    assert_eq!(view.status, Status::Partial);
    // It ends saying which source could not be listed, as its listing did.
    assert_eq!(view.status_reason.as_ref(), Some(&reason));
    let coverage = view.coverage();
    assert!((coverage.coverage_pct - 1.0).abs() < 1e-9);
    assert!((coverage.completeness_score - 0.5).abs() < 1e-9);

    // Nothing listable at all: the scan fails as soon as it is enumerated.
    let failed = w.started(&acme, &[absent], json!({})).await;
    let view = scans::store::get(&mut w.conn, &acme, failed).await.unwrap();
    assert_eq!(view.enumeration, Enumeration::Failed);
    assert_eq!(view.status, Status::Failed);
    assert_eq!(view.status_reason.as_deref(), Some("enumeration failed"));
    assert_eq!(view.coverage().completeness_score, 0.0);
    let got = events(&mut w.conn, Position::default(), 3).await;
    let ended: Vec<(ids::ScanId, &Event)> = got
        .iter()
        .filter(|e| matches!(e.event, Event::ScanEnded { .. }))
        .map(|e| (e.scan, &e.event))
        .collect();
    assert_eq!(
        ended,
        [
            (
                partial,
                &Event::ScanEnded {
                    status: Status::Partial,
                    reason: Some(reason.clone()),
                    connectors: vec![present, absent],
                }
            ),
            (
                failed,
                &Event::ScanEnded {
                    status: Status::Failed,
                    reason: Some("enumeration failed".into()),
                    connectors: vec![absent],
                }
            ),
        ]
    );
}

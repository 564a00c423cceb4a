//! What the scans crate knows of one connector: its activity and history, and forgetting it
//! when it is deleted.

use diesel_async::AsyncConnection as _;
use ids::ConnectorId;
use scans::lease::{self, Held};
use scans::outbox::{Event, Position};
use scans::record::{self, Outcome};
use scans::{ScanError, Status};
use serde_json::json;

use crate::common::{LEASE, World, count, events, finding, tenant};

/// Deletes a connector as platform does: the scans crate forgets it, then the row goes, in
/// one transaction.
async fn delete_connector(w: &mut World, connector: ConnectorId) {
    let acme = w.acme.clone();
    w.conn
        .transaction::<_, ScanError, _>(async |conn| {
            scans::connector::forget_connector(conn, &acme, connector).await?;
            connectors::store::delete(conn, &acme, connector)
                .await
                .map_err(|e| panic!("deleting the connector: {e}"))
        })
        .await
        .unwrap();
}

async fn findings_of(w: &mut World, connector: ConnectorId) -> i64 {
    count(
        &mut w.conn,
        &format!("SELECT count(*) AS n FROM findings WHERE connector_id = '{connector}'"),
    )
    .await
}

#[tokio::test]
async fn forgetting_a_connector_leaves_a_finished_shared_scan_with_only_the_others_work() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("left", &[("l1.txt", "1"), ("l2.txt", "2"), ("l3.txt", "3")])
        .await;
    w.bucket("right", &[("r1.txt", "1"), ("r2.txt", "2")]).await;
    let left = w.connector(&acme, "Left", "left").await;
    let right = w.connector(&acme, "Right", "right").await;

    let shared = w
        .started(&acme, &[left, right], json!({ "max_workers": 2 }))
        .await;
    let claims = w
        .run(&acme, shared, |_| {
            Outcome::scanned(vec![finding("ssn", "government_id")])
        })
        .await;
    assert_eq!(claims.len(), 2, "one chunk per connector");
    let alone = w.started(&acme, &[left], json!({ "max_workers": 1 })).await;
    w.run(&acme, alone, |_| {
        Outcome::scanned(vec![finding("email", "contact")])
    })
    .await;

    let before = scans::store::get(&mut w.conn, &acme, shared).await.unwrap();
    assert_eq!(before.status, Status::Completed);
    assert_eq!(before.connectors, [left, right]);
    assert_eq!(
        (
            before.counts.enumerated,
            before.counts.scanned,
            before.counts.findings
        ),
        (5, 5, 5)
    );
    assert_eq!(before.workers.total, 2);
    assert_eq!(findings_of(&mut w, left).await, 6);
    assert_eq!(findings_of(&mut w, right).await, 2);
    let ended = "SELECT count(*) AS n FROM scan_events WHERE kind = 'scan_ended'";
    assert_eq!(count(&mut w.conn, ended).await, 2);

    delete_connector(&mut w, left).await;

    // The shared scan counts only what remains.
    let after = scans::store::get(&mut w.conn, &acme, shared).await.unwrap();
    assert_eq!(after.status, Status::Completed, "a finished scan stays so");
    assert_eq!(after.connectors, [right]);
    assert_eq!(
        (
            after.counts.enumerated,
            after.counts.scanned,
            after.counts.skipped,
            after.counts.failed,
            after.counts.findings
        ),
        (2, 2, 0, 0, 2)
    );
    assert_eq!((after.workers.total, after.workers.completed), (1, 1));
    let workers = scans::store::workers(&mut w.conn, &acme, shared)
        .await
        .unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!((workers[0].start_index, workers[0].end_index), (3, 4));
    assert_eq!(workers[0].file_count(), 2);
    assert_eq!(
        (workers[0].files_processed, workers[0].findings_count),
        (2, 2)
    );
    let deployment = scans::store::deployment(&mut w.conn, &acme, shared, None)
        .await
        .unwrap();
    assert_eq!(deployment.chunks.len(), 1);
    assert_eq!(deployment.chunks[0].connector_id, right);
    assert_eq!(deployment.chunks[0].files, ["right/r1.txt", "right/r2.txt"]);

    // The scan of the deleted connector alone is gone, and with it everything of it.
    let gone = scans::store::get(&mut w.conn, &acme, alone).await;
    assert!(matches!(gone, Err(ScanError::NotFound)), "{gone:?}");
    let gone = scans::store::workers(&mut w.conn, &acme, alone).await;
    assert!(matches!(gone, Err(ScanError::NotFound)), "{gone:?}");
    assert_eq!(findings_of(&mut w, left).await, 0);
    assert_eq!(findings_of(&mut w, right).await, 2);
    for table in ["scan_resources", "scanned_objects", "scan_connectors"] {
        let sql = format!("SELECT count(*) AS n FROM {table} WHERE connector_id = '{left}'");
        assert_eq!(count(&mut w.conn, &sql).await, 0, "{table}");
    }
    let page = scans::store::list(
        &mut w.conn,
        &acme,
        &scans::store::Filter::default(),
        paging::PageRequest {
            cursors: &w.cursors,
            limit: paging::Limit::parse(None, 20).unwrap(),
            cursor: None,
        },
    )
    .await
    .unwrap();
    let listed: Vec<ids::ScanId> = page.items.iter().map(|s| s.id).collect();
    assert_eq!(listed, [shared]);

    // The remaining connector's view agrees.
    let history = scans::connector::history(&mut w.conn, &acme, right, 10)
        .await
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].scan_id, shared);
    assert_eq!(
        (history[0].files_processed, history[0].findings_count),
        (2, 2)
    );
    let activity = scans::connector::activity(&mut w.conn, &acme, &[left, right])
        .await
        .unwrap();
    assert_eq!(activity[&left], scans::connector::Activity::default());
    assert_eq!(activity[&right].last_scan, after.completed_at);
    assert_eq!(
        activity[&right].open_findings,
        [("government_id".to_owned(), 2)]
    );
    // Ended scans were not ended again.
    assert_eq!(count(&mut w.conn, ended).await, 2);
}

#[tokio::test]
async fn forgetting_a_connector_cancels_its_active_scans_and_fences_their_workers() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("left", &[("l1.txt", "1"), ("l2.txt", "2")]).await;
    w.bucket("right", &[("r1.txt", "1")]).await;
    let left = w.connector(&acme, "Left", "left").await;
    let right = w.connector(&acme, "Right", "right").await;

    let running = w
        .started(&acme, &[left, right], json!({ "max_workers": 2 }))
        .await;
    let queued = w.scan(&acme, &[left], json!({})).await;
    let claim = w.claim(&acme, running, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    assert!(pending.iter().all(|r| r.connector_id == left));
    let mut pending = pending.into_iter();
    let first = pending.next().unwrap();
    let second = pending.next().unwrap();
    record::record(
        &mut w.conn,
        &claim,
        vec![(
            first,
            Outcome::scanned(vec![finding("ssn", "government_id")]),
        )],
        LEASE,
    )
    .await
    .unwrap();
    let seen = events(&mut w.conn, Position::default(), 1).await;
    assert_eq!(seen.len(), 1);

    delete_connector(&mut w, left).await;

    let after = scans::store::get(&mut w.conn, &acme, running)
        .await
        .unwrap();
    assert_eq!(after.status, Status::Cancelled);
    assert_eq!(
        after.status_reason.as_deref(),
        Some("a connector of the scan was deleted")
    );
    assert_eq!(after.connectors, [right]);
    assert_eq!(
        (
            after.counts.enumerated,
            after.counts.scanned,
            after.counts.findings
        ),
        (1, 0, 0)
    );
    let workers = scans::store::workers(&mut w.conn, &acme, running)
        .await
        .unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0].status, "failed", "the other chunk was closed");
    let gone = scans::store::get(&mut w.conn, &acme, queued).await;
    assert!(matches!(gone, Err(ScanError::NotFound)), "{gone:?}");

    // The worker that held the deleted connector's chunk can no longer write.
    let late = vec![(
        second,
        Outcome::scanned(vec![finding("ssn", "government_id")]),
    )];
    assert_eq!(
        record::record(&mut w.conn, &claim, late, LEASE)
            .await
            .unwrap(),
        Held::Lost
    );
    assert_eq!(
        lease::heartbeat(&mut w.conn, &claim, LEASE).await.unwrap(),
        Held::Lost
    );
    assert_eq!(findings_of(&mut w, left).await, 0);

    // Each cancelled scan's end is in the outbox, naming the connectors it had.
    let got = events(&mut w.conn, seen[0].position, 2).await;
    let mut ended: Vec<(ids::ScanId, Event)> = got.into_iter().map(|e| (e.scan, e.event)).collect();
    let reason = Some("a connector of the scan was deleted".to_owned());
    let mut expected = vec![
        (
            running,
            Event::ScanEnded {
                status: Status::Cancelled,
                reason: reason.clone(),
                connectors: vec![left, right],
            },
        ),
        (
            queued,
            Event::ScanEnded {
                status: Status::Cancelled,
                reason,
                connectors: vec![left],
            },
        ),
    ];
    // The order between the two is the order the scans were found in.
    ended.sort_by_key(|(scan, _)| *scan);
    expected.sort_by_key(|(scan, _)| *scan);
    assert_eq!(ended, expected);
}

#[tokio::test]
async fn activity_reports_the_last_scan_and_the_open_findings_by_category() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("hr-exports", &[("a.txt", "a"), ("b.txt", "b")])
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let idle = w.connector(&acme, "Idle", "idle-bucket").await;
    let unknown = ConnectorId::new();

    let activity = scans::connector::activity(&mut w.conn, &acme, &[hr, idle, unknown])
        .await
        .unwrap();
    assert_eq!(activity.len(), 3);
    assert!(
        activity
            .values()
            .all(|a| *a == scans::connector::Activity::default())
    );
    assert!(
        scans::connector::activity(&mut w.conn, &acme, &[])
            .await
            .unwrap()
            .is_empty()
    );

    let first = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    w.run(&acme, first, |r| match r.object_key.as_str() {
        "a.txt" => Outcome::scanned(vec![
            finding("ssn", "government_id"),
            finding("passport", "government_id"),
            finding("email", "contact"),
        ]),
        _ => Outcome::scanned(vec![finding("phone", "contact")]),
    })
    .await;
    let first_view = scans::store::get(&mut w.conn, &acme, first).await.unwrap();
    assert!(first_view.completed_at.is_some());
    let activity = scans::connector::activity(&mut w.conn, &acme, &[hr, idle])
        .await
        .unwrap();
    assert_eq!(activity[&hr].last_scan, first_view.completed_at);
    assert_eq!(
        activity[&hr].open_findings,
        [("contact".to_owned(), 2), ("government_id".to_owned(), 2)]
    );
    assert_eq!(activity[&hr].open_findings_count(), 4);
    assert_eq!(activity[&idle], scans::connector::Activity::default());

    // A rescan supersedes what each object held: only what it found now is open.
    let second = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    w.run(&acme, second, |r| match r.object_key.as_str() {
        "a.txt" => Outcome::scanned(vec![]),
        _ => Outcome::scanned(vec![finding("email", "contact")]),
    })
    .await;
    let second_view = scans::store::get(&mut w.conn, &acme, second).await.unwrap();
    let activity = scans::connector::activity(&mut w.conn, &acme, &[hr])
        .await
        .unwrap();
    assert_eq!(activity[&hr].last_scan, second_view.completed_at);
    assert_eq!(activity[&hr].open_findings, [("contact".to_owned(), 1)]);
    assert_eq!(activity[&hr].open_findings_count(), 1);

    // A cancelled scan is a last scan too.
    let third = w.scan(&acme, &[hr], json!({})).await;
    let cancelled = scans::lifecycle::cancel(&mut w.conn, &acme, third)
        .await
        .unwrap();
    let activity = scans::connector::activity(&mut w.conn, &acme, &[hr])
        .await
        .unwrap();
    assert_eq!(activity[&hr].last_scan, Some(cancelled.cancelled_at));

    // The history, newest first, with what each scan processed of the connector.
    let history = scans::connector::history(&mut w.conn, &acme, hr, 10)
        .await
        .unwrap();
    let rows: Vec<(ids::ScanId, &str, i64, i64)> = history
        .iter()
        .map(|h| {
            (
                h.scan_id,
                h.status.as_str(),
                h.files_processed,
                h.findings_count,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (third, "cancelled", 0, 0),
            (second, "completed", 2, 1),
            (first, "completed", 2, 4),
        ]
    );
    assert_eq!(history[1].started_at, second_view.started_at);
    assert_eq!(history[1].completed_at, second_view.completed_at);
    let latest = scans::connector::history(&mut w.conn, &acme, hr, 1)
        .await
        .unwrap();
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0].scan_id, third);

    // Another tenant learns nothing of it.
    let globex = tenant("globex");
    let theirs = scans::connector::activity(&mut w.conn, &globex, &[hr])
        .await
        .unwrap();
    assert_eq!(theirs[&hr], scans::connector::Activity::default());
    assert!(
        scans::connector::history(&mut w.conn, &globex, hr, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

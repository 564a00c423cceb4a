//! The outbox: what recording and ending scans write, in commit order, and positions that
//! never skip an event.

use std::sync::Arc;
use std::time::Duration;

use diesel_async::{
    AnsiTransactionManager, AsyncConnection as _, RunQueryDsl as _, TransactionManager as _,
};
use scans::lease::{self, Held};
use scans::lifecycle;
use scans::outbox::{self, Event, Position, RecordedObject};
use scans::record::{self, Outcome};
use scans::{ScanError, Status};
use serde_json::json;

use crate::common::{LEASE, World, count, events, finding, keys_of};

fn object(key: &str, state: &str, findings: i32) -> RecordedObject {
    RecordedObject {
        bucket: "hr-exports".into(),
        object_key: key.into(),
        state: state.into(),
        findings,
    }
}

#[tokio::test]
async fn recorded_batches_and_the_scans_end_are_read_in_order_and_resumed_after_a_position() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket(
        "hr-exports",
        &[
            ("a.txt", "ssn 219-09-9999"),
            ("b.txt", "nothing"),
            ("c.png", "png"),
            ("d.txt", "locked"),
        ],
    )
    .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let scan = w
        .started(
            &acme,
            &[hr],
            json!({ "max_workers": 1, "coverage_target": 0.5 }),
        )
        .await;
    let claim = w.claim(&acme, scan, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    assert_eq!(keys_of(&pending), ["a.txt", "b.txt", "c.png", "d.txt"]);
    let mut pending = pending.into_iter();
    let mut next = || pending.next().unwrap();

    let first = vec![
        (
            next(),
            Outcome::scanned(vec![
                finding("ssn", "government_id"),
                finding("email", "contact"),
            ]),
        ),
        (next(), Outcome::scanned(vec![])),
    ];
    let second = vec![
        (next(), Outcome::Skipped("unsupported_format".into())),
        (next(), Outcome::Failed("permission".into())),
    ];
    for batch in [first, second] {
        assert_eq!(
            record::record(&mut w.conn, &claim, batch, LEASE)
                .await
                .unwrap(),
            Held::Yes
        );
    }
    assert_eq!(
        lifecycle::complete(&mut w.conn, &claim).await.unwrap(),
        Held::Yes
    );

    let got = events(&mut w.conn, Position::default(), 3).await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(got.iter().all(|e| e.tenant == acme && e.scan == scan));
    assert_eq!(
        got[0].event,
        Event::ObjectsRecorded {
            connector: hr,
            objects: vec![object("a.txt", "scanned", 2), object("b.txt", "scanned", 0)],
        }
    );
    assert_eq!(
        got[1].event,
        Event::ObjectsRecorded {
            connector: hr,
            objects: vec![object("c.png", "skipped", 0), object("d.txt", "failed", 0)],
        }
    );
    assert_eq!(
        got[2].event,
        Event::ScanEnded {
            status: Status::Completed,
            reason: None,
            connectors: vec![hr],
        }
    );
    assert!(got.windows(2).all(|p| p[0].position < p[1].position));

    // A consumer resumes after the last position it handled.
    let rest = outbox::read(&mut w.conn, got[0].position, 100)
        .await
        .unwrap();
    assert_eq!(rest, got[1..]);
    let none = outbox::read(&mut w.conn, got[2].position, 100)
        .await
        .unwrap();
    assert!(none.is_empty(), "{none:#?}");
    let one = outbox::read(&mut w.conn, Position::default(), 1)
        .await
        .unwrap();
    assert_eq!(one, got[..1]);

    // The scan says what the events said.
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Completed);
    assert_eq!(
        (
            view.counts.enumerated,
            view.counts.scanned,
            view.counts.skipped,
            view.counts.failed,
            view.counts.findings
        ),
        (4, 2, 1, 1, 2)
    );
    assert_eq!(view.reasons.skipped.get("unsupported_format"), Some(&1));
    assert_eq!(view.reasons.failed.get("permission"), Some(&1));
}

#[tokio::test]
async fn a_small_scan_run_by_a_real_worker_reports_what_it_found_without_storing_the_value() {
    let ssn = "219-09-9999";
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket(
        "payroll",
        &[
            ("p/clean.txt", "nothing to see here\n"),
            ("p/ssn.txt", &format!("employee ssn {ssn}\n")),
        ],
    )
    .await;
    let payroll = w.connector(&acme, "Payroll", "payroll").await;
    let scan = w.started(&acme, &[payroll], json!({})).await;
    let worker = scans::Worker::new(
        "worker-e2e".into(),
        w.cloud.clone().unwrap(),
        Arc::clone(&w.keyring),
    );
    // The standard tier's four workers make a chunk of each object; one worker runs both.
    let mut chunks = 0;
    while let Some(claim) = lease::claim(&mut w.conn, &worker.id, Some((&acme, scan)), LEASE)
        .await
        .unwrap()
    {
        let stop = worker.run_chunk(&mut w.conn, &claim).await.unwrap();
        assert_eq!(stop, scans::worker::Stop::Done);
        chunks += 1;
    }
    assert_eq!(chunks, 2);

    // Two chunks recorded, then the scan's end: three events. Waiting for all three matters:
    // a transaction open anywhere in the cluster (another test's) holds back the newest
    // events, and reading too soon would take the last recorded event for the end.
    let got = events(&mut w.conn, Position::default(), 3).await;
    assert_eq!(got.len(), 3, "{got:#?}");
    let (ended, recorded) = got.split_last().unwrap();
    let mut objects: Vec<RecordedObject> = recorded
        .iter()
        .flat_map(|e| match &e.event {
            Event::ObjectsRecorded { connector, objects } => {
                assert_eq!(*connector, payroll);
                objects.clone()
            }
            other => panic!("expected objects_recorded, got {other:?}"),
        })
        .collect();
    objects.sort_by(|a, b| a.object_key.cmp(&b.object_key));
    let seen: Vec<(&str, &str, i32)> = objects
        .iter()
        .map(|o| (o.object_key.as_str(), o.state.as_str(), o.findings))
        .collect();
    assert_eq!(
        seen,
        [("p/clean.txt", "scanned", 0), ("p/ssn.txt", "scanned", 1)]
    );
    assert_eq!(
        ended.event,
        Event::ScanEnded {
            status: Status::Completed,
            reason: None,
            connectors: vec![payroll],
        }
    );
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.counts.scanned, 2);
    assert_eq!(view.counts.findings, 1);
    assert!(
        !testkit::pg_dump(&w.db).contains(ssn),
        "the detected value reached the database"
    );
}

#[tokio::test]
async fn an_event_written_in_a_transaction_that_rolls_back_is_never_read() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("hr-exports", &[("a.txt", "a"), ("b.txt", "b")])
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let scan = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    let claim = w.claim(&acme, scan, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    let batch: Vec<_> = pending
        .iter()
        .map(|r| {
            (
                r.clone(),
                Outcome::scanned(vec![finding("ssn", "government_id")]),
            )
        })
        .collect();

    let (tenant, inner) = (acme.clone(), batch.clone());
    let rolled_back = w
        .conn
        .transaction::<(), ScanError, _>(async |conn| {
            let held = record::record(conn, &claim, inner, LEASE).await?;
            assert_eq!(held, Held::Yes);
            lifecycle::cancel(conn, &tenant, scan).await?;
            // Both events exist inside the transaction...
            assert_eq!(
                count(conn, "SELECT count(*) AS n FROM scan_events").await,
                2
            );
            // ...and go with it.
            Err(ScanError::NotFound)
        })
        .await;
    assert!(matches!(rolled_back, Err(ScanError::NotFound)));
    assert_eq!(
        count(&mut w.conn, "SELECT count(*) AS n FROM scan_events").await,
        0
    );
    assert!(
        outbox::read(&mut w.conn, Position::default(), 100)
            .await
            .unwrap()
            .is_empty()
    );
    // Nor did the changes they reported happen.
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Running);
    assert_eq!(view.counts.processed(), 0);
    assert_eq!(lease::pending(&mut w.conn, &claim).await.unwrap().len(), 2);

    // The same batch committed is read, once.
    assert_eq!(
        record::record(&mut w.conn, &claim, batch, LEASE)
            .await
            .unwrap(),
        Held::Yes
    );
    let got = events(&mut w.conn, Position::default(), 1).await;
    assert_eq!(got.len(), 1, "{got:#?}");
    let Event::ObjectsRecorded { connector, objects } = &got[0].event else {
        panic!("{got:#?}");
    };
    assert_eq!(*connector, hr);
    assert_eq!(objects.len(), 2);
    assert!(
        objects
            .iter()
            .all(|o| o.state == "scanned" && o.findings == 1)
    );
}

#[tokio::test]
async fn events_of_an_open_transaction_hold_back_later_ones_until_it_commits_so_none_is_skipped() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket(
        "hr-exports",
        &[("a.txt", "a"), ("b.txt", "b"), ("c.txt", "c")],
    )
    .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let options = json!({ "max_workers": 1 });
    let x = w.started(&acme, &[hr], options.clone()).await;
    let y = w.started(&acme, &[hr], options.clone()).await;
    let z = w.started(&acme, &[hr], options).await;
    let y_claim = w.claim(&acme, y, "worker-y").await;
    let z_claim = w.claim(&acme, z, "worker-z").await;
    let y_pending = lease::pending(&mut w.conn, &y_claim).await.unwrap();
    let z_pending = lease::pending(&mut w.conn, &z_claim).await.unwrap();
    let scanned = |r: &lease::Resource| (r.clone(), Outcome::scanned(vec![]));

    // A consumer has read what was committed so far.
    record::record(&mut w.conn, &y_claim, vec![scanned(&y_pending[0])], LEASE)
        .await
        .unwrap();
    let mut delivered = events(&mut w.conn, Position::default(), 1).await;
    assert_eq!(delivered.len(), 1);
    let mut at = delivered[0].position;

    // Another session cancels scan x and has not committed yet; meanwhile a later change of
    // scan y commits, with a later event id.
    let mut other = w.connect().await;
    AnsiTransactionManager::begin_transaction(&mut other)
        .await
        .unwrap();
    lifecycle::cancel(&mut other, &acme, x).await.unwrap();
    record::record(&mut w.conn, &y_claim, vec![scanned(&y_pending[1])], LEASE)
        .await
        .unwrap();
    let committed_later = count(
        &mut w.conn,
        &format!(
            "SELECT count(*) AS n FROM scan_events WHERE event_id > {}",
            at.event_id
        ),
    )
    .await;
    assert_eq!(
        committed_later, 1,
        "y's later event is committed and visible"
    );
    // Neither is read: y's would put the position past x's, which would then be skipped.
    for _ in 0..5 {
        let held_back = outbox::read(&mut w.conn, at, 100).await.unwrap();
        assert!(held_back.is_empty(), "{held_back:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    AnsiTransactionManager::commit_transaction(&mut other)
        .await
        .unwrap();
    let got = events(&mut w.conn, at, 2).await;
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!((got[0].scan, got[1].scan), (x, y));
    assert_eq!(
        got[0].event,
        Event::ScanEnded {
            status: Status::Cancelled,
            reason: Some("cancelled by request".into()),
            connectors: vec![hr],
        }
    );
    assert!(matches!(got[1].event, Event::ObjectsRecorded { .. }));
    at = got[1].position;
    delivered.extend(got);

    // Commit order, not id order: a transaction that began (took its id) before a later
    // commit, and writes its event after it, is still read first, and nothing is skipped.
    AnsiTransactionManager::begin_transaction(&mut other)
        .await
        .unwrap();
    diesel::sql_query("SELECT pg_current_xact_id()")
        .execute(&mut other)
        .await
        .unwrap();
    lifecycle::cancel(&mut w.conn, &acme, y).await.unwrap();
    record::record(&mut other, &z_claim, vec![scanned(&z_pending[0])], LEASE)
        .await
        .unwrap();
    assert!(outbox::read(&mut w.conn, at, 100).await.unwrap().is_empty());
    AnsiTransactionManager::commit_transaction(&mut other)
        .await
        .unwrap();
    let got = events(&mut w.conn, at, 2).await;
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!((got[0].scan, got[1].scan), (z, y));
    assert!(
        got[0].position.event_id > got[1].position.event_id,
        "z's event has the larger id yet comes first: {got:#?}"
    );
    assert!(matches!(got[0].event, Event::ObjectsRecorded { .. }));
    assert!(matches!(
        got[1].event,
        Event::ScanEnded {
            status: Status::Cancelled,
            ..
        }
    ));
    delivered.extend(got);

    // Every event was delivered once, in increasing positions.
    assert!(delivered.windows(2).all(|p| p[0].position < p[1].position));
    let total = count(&mut w.conn, "SELECT count(*) AS n FROM scan_events").await;
    assert_eq!(delivered.len() as i64, total);
    let last = delivered.last().unwrap().position;
    assert!(
        outbox::read(&mut w.conn, last, 100)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn cancelling_writes_scan_ended_and_keeps_what_was_found() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("hr-exports", &[("a.txt", "a"), ("b.txt", "b")])
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;

    // A queued scan.
    let queued = w.scan(&acme, &[hr], json!({})).await;
    let cancelled = lifecycle::cancel(&mut w.conn, &acme, queued).await.unwrap();
    assert_eq!(cancelled.id, queued);
    assert_eq!(
        (cancelled.files_processed, cancelled.findings_count),
        (0, 0)
    );
    let view = scans::store::get(&mut w.conn, &acme, queued).await.unwrap();
    assert_eq!(view.status, Status::Cancelled);
    assert_eq!(view.status_reason.as_deref(), Some("cancelled by request"));
    assert_eq!(view.completed_at, Some(cancelled.cancelled_at));
    let again = lifecycle::cancel(&mut w.conn, &acme, queued).await;
    assert!(
        matches!(again, Err(ScanError::Finished("cancelled"))),
        "{again:?}"
    );
    // It is no longer queued: nothing starts it.
    assert_eq!(lifecycle::start_next(&mut w.conn).await.unwrap(), None);

    // A running scan with one object recorded.
    let running = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    let claim = w.claim(&acme, running, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    let first = (
        pending[0].clone(),
        Outcome::scanned(vec![finding("ssn", "government_id")]),
    );
    record::record(&mut w.conn, &claim, vec![first], LEASE)
        .await
        .unwrap();
    let cancelled = lifecycle::cancel(&mut w.conn, &acme, running)
        .await
        .unwrap();
    assert_eq!(
        (cancelled.files_processed, cancelled.findings_count),
        (1, 1)
    );
    // The holder learns it at its next write or heartbeat, and writes nothing more.
    let second = (
        pending[1].clone(),
        Outcome::scanned(vec![finding("ssn", "government_id")]),
    );
    assert_eq!(
        record::record(&mut w.conn, &claim, vec![second], LEASE)
            .await
            .unwrap(),
        Held::Lost
    );
    assert_eq!(
        lease::heartbeat(&mut w.conn, &claim, LEASE).await.unwrap(),
        Held::Lost
    );
    assert_eq!(
        lifecycle::complete(&mut w.conn, &claim).await.unwrap(),
        Held::Lost
    );
    let view = scans::store::get(&mut w.conn, &acme, running)
        .await
        .unwrap();
    assert_eq!(view.status, Status::Cancelled);
    assert_eq!((view.counts.scanned, view.counts.findings), (1, 1));
    let workers = scans::store::workers(&mut w.conn, &acme, running)
        .await
        .unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0].status, "failed");
    assert_eq!(workers[0].files_processed, 1);

    let got = events(&mut w.conn, Position::default(), 3).await;
    let kinds: Vec<(ids::ScanId, &str)> = got
        .iter()
        .map(|e| {
            let kind = match &e.event {
                Event::ObjectsRecorded { .. } => "objects_recorded",
                Event::ScanEnded { .. } => "scan_ended",
            };
            (e.scan, kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (queued, "scan_ended"),
            (running, "objects_recorded"),
            (running, "scan_ended"),
        ]
    );
    for ended in [&got[0], &got[2]] {
        assert_eq!(
            ended.event,
            Event::ScanEnded {
                status: Status::Cancelled,
                reason: Some("cancelled by request".into()),
                connectors: vec![hr],
            }
        );
    }

    // Scans that are not the tenant's, or not at all, are not found.
    let globex = crate::common::tenant("globex");
    let theirs = lifecycle::cancel(&mut w.conn, &globex, running).await;
    assert!(matches!(theirs, Err(ScanError::NotFound)), "{theirs:?}");
    let unknown = lifecycle::cancel(&mut w.conn, &acme, ids::ScanId::new()).await;
    assert!(matches!(unknown, Err(ScanError::NotFound)), "{unknown:?}");
}

//! The chunk protocol: claims under a lease and the worker count, the fence every write
//! checks, timeouts, and chunks whose workers keep dying.

use diesel_async::RunQueryDsl as _;
use scans::Status;
use scans::lease::{self, Held, MAX_ATTEMPTS};
use scans::lifecycle;
use scans::outbox::{Event, Position};
use scans::record::{self, Outcome};
use serde_json::json;

use crate::common::{LEASE, World, count, events, expire_leases, finding, keys_of};

async fn findings_rows(w: &mut World) -> i64 {
    count(&mut w.conn, "SELECT count(*) AS n FROM findings").await
}

async fn outbox_rows(w: &mut World) -> i64 {
    count(&mut w.conn, "SELECT count(*) AS n FROM scan_events").await
}

fn ssn() -> Outcome {
    Outcome::scanned(vec![finding("ssn", "government_id")])
}

#[tokio::test]
async fn a_holder_whose_lease_was_taken_over_writes_nothing() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket(
        "hr-exports",
        &[("a.txt", "a"), ("b.txt", "b"), ("c.txt", "c")],
    )
    .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let scan = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;

    let first = w.claim(&acme, scan, "worker-a").await;
    let pending = lease::pending(&mut w.conn, &first).await.unwrap();
    assert_eq!(keys_of(&pending), ["a.txt", "b.txt", "c.txt"]);
    let (a, b) = (pending[0].clone(), pending[1].clone());
    assert_eq!(
        record::record(&mut w.conn, &first, vec![(a.clone(), ssn())], LEASE)
            .await
            .unwrap(),
        Held::Yes
    );
    // A live lease is not taken.
    let none = lease::claim(&mut w.conn, "worker-b", Some((&acme, scan)), LEASE)
        .await
        .unwrap();
    assert!(none.is_none(), "{none:?}");

    expire_leases(&mut w.conn, scan).await;
    let second = w.claim(&acme, scan, "worker-b").await;
    assert_eq!(second.chunk_no, first.chunk_no);
    assert_eq!(second.fence, first.fence + 1);
    assert_eq!((second.start, second.end), (first.start, first.end));

    // The first holder wakes up: every write it tries is refused and changes nothing.
    assert_eq!(
        record::record(&mut w.conn, &first, vec![(b.clone(), ssn())], LEASE)
            .await
            .unwrap(),
        Held::Lost
    );
    assert_eq!(
        record::record(&mut w.conn, &first, Vec::new(), LEASE)
            .await
            .unwrap(),
        Held::Lost,
        "an empty batch still says the lease is gone"
    );
    assert_eq!(
        lease::heartbeat(&mut w.conn, &first, LEASE).await.unwrap(),
        Held::Lost
    );
    assert_eq!(
        lifecycle::complete(&mut w.conn, &first).await.unwrap(),
        Held::Lost
    );
    let workers = scans::store::workers(&mut w.conn, &acme, scan)
        .await
        .unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0].status, "running");
    assert_eq!(workers[0].worker_id.as_deref(), Some("worker-b"));
    assert_eq!(
        (workers[0].files_processed, workers[0].findings_count),
        (1, 1)
    );
    assert_eq!(findings_rows(&mut w).await, 1);
    assert_eq!(outbox_rows(&mut w).await, 1);
    // The new holder has exactly what the old one did not record.
    let rest = lease::pending(&mut w.conn, &second).await.unwrap();
    assert_eq!(keys_of(&rest), ["b.txt", "c.txt"]);

    // Recording an object already recorded (a stale list) counts nothing twice.
    assert_eq!(
        record::record(&mut w.conn, &second, vec![(a, ssn())], LEASE)
            .await
            .unwrap(),
        Held::Yes
    );
    assert_eq!(findings_rows(&mut w).await, 1);
    assert_eq!(outbox_rows(&mut w).await, 1);

    let batch = rest.into_iter().map(|r| (r, ssn())).collect();
    assert_eq!(
        lease::heartbeat(&mut w.conn, &second, LEASE).await.unwrap(),
        Held::Yes
    );
    assert_eq!(
        record::record(&mut w.conn, &second, batch, LEASE)
            .await
            .unwrap(),
        Held::Yes
    );
    assert_eq!(
        lifecycle::complete(&mut w.conn, &second).await.unwrap(),
        Held::Yes
    );
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Completed);
    assert_eq!((view.counts.scanned, view.counts.findings), (3, 3));
    // Had the process stopped between completing the last chunk and ending the scan, the
    // coordinator's sweep ends it: nothing is left to run.
    {
        use diesel_async::RunQueryDsl as _;
        diesel::sql_query(
            "UPDATE scans SET status = 'running', status_reason = NULL, completed_at = NULL",
        )
        .execute(&mut w.conn)
        .await
        .unwrap();
    }
    assert_eq!(
        lifecycle::finalize_left_behind(&mut w.conn).await.unwrap(),
        1
    );
    assert_eq!(
        lifecycle::finalize_left_behind(&mut w.conn).await.unwrap(),
        0
    );
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Completed);
    assert_eq!(findings_rows(&mut w).await, 3);
    let workers = scans::store::workers(&mut w.conn, &acme, scan)
        .await
        .unwrap();
    assert_eq!(workers[0].files_processed, 3, "each object counted once");
    assert_eq!(workers[0].status, "completed");
    // A completed chunk holds no lease.
    assert_eq!(
        lease::heartbeat(&mut w.conn, &second, LEASE).await.unwrap(),
        Held::Lost
    );
}

#[tokio::test]
async fn claims_never_exceed_the_scans_worker_count() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("left", &[("l.txt", "l")]).await;
    w.bucket("right", &[("r.txt", "r")]).await;
    let left = w.connector(&acme, "Left", "left").await;
    let right = w.connector(&acme, "Right", "right").await;
    // One worker, two connectors: two chunks, one at a time.
    let scan = w
        .started(&acme, &[left, right], json!({ "max_workers": 1 }))
        .await;
    let workers = scans::store::workers(&mut w.conn, &acme, scan)
        .await
        .unwrap();
    assert_eq!(workers.len(), 2);
    // A deployment may fetch its chunks one at a time.
    let all = scans::store::deployment(&mut w.conn, &acme, scan, None)
        .await
        .unwrap();
    assert_eq!(all.chunks.len(), 2);
    let one = scans::store::deployment(&mut w.conn, &acme, scan, Some(1))
        .await
        .unwrap();
    assert_eq!(one.chunks.len(), 1);
    assert_eq!(one.chunks[0].chunk_no, 1);
    assert_eq!(one.chunks[0].files, ["right/r.txt"]);
    assert_eq!(one.chunks[0].connector_id, right);
    let none = scans::store::deployment(&mut w.conn, &acme, scan, Some(7))
        .await
        .unwrap();
    assert!(none.chunks.is_empty());

    let first = w.claim(&acme, scan, "worker-a").await;
    assert_eq!(first.chunk_no, 0);
    let busy = lease::claim(&mut w.conn, "worker-b", Some((&acme, scan)), LEASE)
        .await
        .unwrap();
    assert!(busy.is_none(), "{busy:?}");
    let pending = lease::pending(&mut w.conn, &first).await.unwrap();
    assert!(pending.iter().all(|r| r.connector_id == left));
    let batch = pending.into_iter().map(|r| (r, ssn())).collect();
    record::record(&mut w.conn, &first, batch, LEASE)
        .await
        .unwrap();
    assert_eq!(
        lifecycle::complete(&mut w.conn, &first).await.unwrap(),
        Held::Yes
    );
    assert_eq!(
        scans::store::get(&mut w.conn, &acme, scan)
            .await
            .unwrap()
            .status,
        Status::Running,
        "one chunk is left"
    );
    let second = w.claim(&acme, scan, "worker-b").await;
    assert_eq!(second.chunk_no, 1);
    let pending = lease::pending(&mut w.conn, &second).await.unwrap();
    assert!(pending.iter().all(|r| r.connector_id == right));
}

/// Many idle workers claiming at once (a new scan wakes them all) still hold no more chunks
/// than the scan's `max_workers`: each claim sees the others'.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_never_exceed_the_scans_worker_count() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    let mut connectors = Vec::new();
    for name in ["b-one", "b-two", "b-three", "b-four", "b-five", "b-six"] {
        w.bucket(name, &[("x.txt", "x")]).await;
        connectors.push(w.connector(&acme, name, name).await);
    }
    // Six connectors: six chunks, for two workers at most.
    let scan = w
        .started(&acme, &connectors, json!({ "max_workers": 2 }))
        .await;
    let claimers = 12;
    let mut conns = Vec::new();
    for _ in 0..claimers {
        conns.push(w.connect().await);
    }
    for round in 0..20 {
        let start = std::sync::Arc::new(tokio::sync::Barrier::new(claimers));
        let mut tasks = Vec::new();
        for (i, mut conn) in conns.drain(..).enumerate() {
            let tenant = acme.clone();
            let start = start.clone();
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                let claim =
                    lease::claim(&mut conn, &format!("w-{i}"), Some((&tenant, scan)), LEASE)
                        .await
                        .unwrap();
                (conn, claim.is_some())
            }));
        }
        let mut claimed = 0;
        for task in tasks {
            let (conn, got) = task.await.unwrap();
            conns.push(conn);
            claimed += usize::from(got);
        }
        assert_eq!(claimed, 2, "round {round}");
        // Every lease runs out, and the next round claims again.
        expire_leases(&mut w.conn, scan).await;
        diesel::sql_query(
            "UPDATE scan_chunks SET status = 'pending', attempts = 0 WHERE status = 'running'",
        )
        .execute(&mut w.conn)
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn a_scan_past_its_deadline_ends_partial_and_its_holder_stops() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("hr-exports", &[("a.txt", "a"), ("b.txt", "b")])
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let scan = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    let claim = w.claim(&acme, scan, "worker-a").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    record::record(
        &mut w.conn,
        &claim,
        vec![(pending[0].clone(), ssn())],
        LEASE,
    )
    .await
    .unwrap();

    assert_eq!(lifecycle::expire(&mut w.conn).await.unwrap(), 0);
    diesel::sql_query(format!(
        "UPDATE scans SET deadline = now() - interval '1 second' WHERE scan_id = '{scan}'"
    ))
    .execute(&mut w.conn)
    .await
    .unwrap();
    assert_eq!(lifecycle::expire(&mut w.conn).await.unwrap(), 1);
    assert_eq!(lifecycle::expire(&mut w.conn).await.unwrap(), 0);

    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Partial);
    assert_eq!(
        view.status_reason.as_deref(),
        Some("timeout_minutes was exceeded")
    );
    assert!(view.completed_at.is_some());
    assert_eq!((view.counts.scanned, view.counts.findings), (1, 1));
    assert_eq!(
        lease::heartbeat(&mut w.conn, &claim, LEASE).await.unwrap(),
        Held::Lost
    );
    assert_eq!(
        record::record(
            &mut w.conn,
            &claim,
            vec![(pending[1].clone(), ssn())],
            LEASE
        )
        .await
        .unwrap(),
        Held::Lost
    );

    let got = events(&mut w.conn, Position::default(), 2).await;
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(
        got[1].event,
        Event::ScanEnded {
            status: Status::Partial,
            reason: Some("timeout_minutes was exceeded".into()),
            connectors: vec![hr],
        }
    );
}

#[tokio::test]
async fn a_chunk_whose_workers_keep_dying_is_given_up_as_worker_lost() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("hr-exports", &[("a.txt", "a"), ("b.txt", "b")])
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let scan = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;

    let first = w.claim(&acme, scan, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &first).await.unwrap();
    record::record(
        &mut w.conn,
        &first,
        vec![(pending[0].clone(), Outcome::scanned(vec![]))],
        LEASE,
    )
    .await
    .unwrap();
    let mut fence = first.fence;
    for attempt in 2..=MAX_ATTEMPTS {
        expire_leases(&mut w.conn, scan).await;
        // Not yet given up: it is claimed again.
        assert_eq!(lifecycle::reap(&mut w.conn).await.unwrap(), 0);
        let again = w.claim(&acme, scan, &format!("worker-{attempt}")).await;
        assert_eq!(again.fence, fence + 1);
        fence = again.fence;
    }
    expire_leases(&mut w.conn, scan).await;
    let exhausted = lease::claim(&mut w.conn, "worker-x", Some((&acme, scan)), LEASE)
        .await
        .unwrap();
    assert!(exhausted.is_none(), "{exhausted:?}");
    assert_eq!(lifecycle::reap(&mut w.conn).await.unwrap(), 1);
    assert_eq!(lifecycle::reap(&mut w.conn).await.unwrap(), 0);

    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(
        (view.counts.scanned, view.counts.failed),
        (1, 1),
        "the recorded object stays scanned, the other failed"
    );
    assert_eq!(view.reasons.failed.get("worker_lost"), Some(&1));
    assert_eq!(view.status, Status::Partial, "{:?}", view.status_reason);
    let workers = scans::store::workers(&mut w.conn, &acme, scan)
        .await
        .unwrap();
    assert_eq!(workers[0].status, "failed");
    assert_eq!(
        workers[0].files_processed, 2,
        "the worker's progress counts its lost object, as the scan's does"
    );

    let got = events(&mut w.conn, Position::default(), 2).await;
    assert_eq!(got.len(), 2, "{got:#?}");
    let Event::ScanEnded {
        status, connectors, ..
    } = &got[1].event
    else {
        panic!("{got:#?}");
    };
    assert_eq!(
        (*status, connectors.as_slice()),
        (Status::Partial, &[hr][..])
    );
}

#[tokio::test]
async fn a_chunk_completed_with_objects_unreported_fails_them_and_the_scan_ends() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket(
        "hr-exports",
        &[("a.txt", "a"), ("b.txt", "b"), ("c.txt", "c")],
    )
    .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let scan = w.started(&acme, &[hr], json!({ "max_workers": 1 })).await;
    let claim = w.claim(&acme, scan, "worker-1").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    record::record(
        &mut w.conn,
        &claim,
        vec![(pending[0].clone(), Outcome::scanned(vec![]))],
        LEASE,
    )
    .await
    .unwrap();
    // The worker ends its chunk with two objects never reported.
    assert_eq!(
        lifecycle::complete(&mut w.conn, &claim).await.unwrap(),
        Held::Yes
    );
    assert!(
        lease::pending(&mut w.conn, &claim)
            .await
            .unwrap()
            .is_empty()
    );
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(
        (
            view.counts.enumerated,
            view.counts.scanned,
            view.counts.failed
        ),
        (3, 1, 2),
        "every enumerated object is accounted for"
    );
    assert_eq!(view.reasons.failed.get("not_reported"), Some(&2));
    assert_eq!(view.status, Status::Partial, "{:?}", view.status_reason);
    let workers = scans::store::workers(&mut w.conn, &acme, scan)
        .await
        .unwrap();
    assert_eq!(
        (workers[0].status.as_str(), workers[0].files_processed),
        ("completed", 3)
    );
}

/// A strict scan past its deadline short of its target fails ("fail if target not met"), where
/// a best-effort one ends partial.
#[tokio::test]
async fn a_strict_scan_past_its_deadline_below_its_target_fails() {
    let mut w = World::with_storage().await;
    let acme = w.acme.clone();
    w.bucket("hr-exports", &[("a.txt", "a"), ("b.txt", "b")])
        .await;
    let hr = w.connector(&acme, "HR", "hr-exports").await;
    let scan = w
        .started(
            &acme,
            &[hr],
            json!({ "max_workers": 1, "coverage_strategy": "strict" }),
        )
        .await;
    let claim = w.claim(&acme, scan, "worker-a").await;
    let pending = lease::pending(&mut w.conn, &claim).await.unwrap();
    record::record(
        &mut w.conn,
        &claim,
        vec![(pending[0].clone(), ssn())],
        LEASE,
    )
    .await
    .unwrap();
    diesel::sql_query(format!(
        "UPDATE scans SET deadline = now() - interval '1 second' WHERE scan_id = '{scan}'"
    ))
    .execute(&mut w.conn)
    .await
    .unwrap();
    assert_eq!(lifecycle::expire(&mut w.conn).await.unwrap(), 1);
    let view = scans::store::get(&mut w.conn, &acme, scan).await.unwrap();
    assert_eq!(view.status, Status::Failed);
    assert_eq!(
        view.status_reason.as_deref(),
        Some("coverage 0.5000 is below the strict target 0.95")
    );
}

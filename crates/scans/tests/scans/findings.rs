//! The findings list: pages that never skip a finding whose batch commits late.

use std::time::Duration;

use diesel_async::{AnsiTransactionManager, AsyncPgConnection, TransactionManager as _};
use ids::TenantId;
use scans::findings::{self, Filter};
use uuid::Uuid;

use crate::common::World;

/// Writes a finding with `id`, as a worker's batch would, in whatever transaction `conn` is in.
async fn write(conn: &mut AsyncPgConnection, tenant: &TenantId, id: Uuid) {
    use diesel_async::RunQueryDsl as _;
    diesel::sql_query(
        "INSERT INTO findings (tenant_id, finding_id, scan_id, connector_id, bucket, object_key,
                               pii_type, category, confidence, locations, preview)
         VALUES ($1, $2, $2, $2, 'hr-exports', 'a.csv', 'us_ssn', 'government_id', 0.9,
                 '[{}]', '***-**-6789')",
    )
    .bind::<diesel::sql_types::Text, _>(tenant.as_str())
    .bind::<diesel::sql_types::Uuid, _>(id)
    .execute(conn)
    .await
    .unwrap();
}

/// One page of one finding after `cursor`: its ids, and the cursor that follows, if any.
async fn page(w: &mut World, cursor: Option<&str>) -> (Vec<Uuid>, Option<String>) {
    let limit = paging::Limit::parse(Some(1), 20).unwrap();
    let page = findings::list(
        &mut w.conn,
        &w.acme.clone(),
        &Filter::default(),
        paging::PageRequest {
            cursors: &w.cursors,
            limit,
            cursor,
        },
    )
    .await
    .unwrap();
    let ids = page.items.iter().map(|f| f.finding_id).collect();
    (ids, page.pagination.next_cursor)
}

#[tokio::test]
async fn a_batch_that_commits_after_later_ids_is_not_skipped_by_a_client_resuming_its_cursor() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    // A worker mints its id first, then a second worker writes later ids and commits first.
    let late = Uuid::now_v7();
    tokio::time::sleep(Duration::from_millis(2)).await;
    let (first, second) = (Uuid::now_v7(), Uuid::now_v7());
    let mut slow = w.connect().await;
    AnsiTransactionManager::begin_transaction(&mut slow)
        .await
        .unwrap();
    write(&mut slow, &acme, late).await;
    write(&mut w.conn, &acme, first).await;
    write(&mut w.conn, &acme, second).await;

    // A client pages to the end of what it can see, keeping the last cursor it was given.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let (ids, next) = page(&mut w, cursor.as_deref()).await;
        seen.extend(ids);
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert!(!seen.contains(&late), "not committed yet");

    // The slow batch commits; the client resumes from its last cursor until the list ends.
    AnsiTransactionManager::commit_transaction(&mut slow)
        .await
        .unwrap();
    for _ in 0..200 {
        let (ids, next) = page(&mut w, cursor.as_deref()).await;
        let empty = ids.is_empty();
        seen.extend(ids);
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
        if empty {
            // Another test's transaction holds the watermark back for a moment.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    let mut all = vec![late, first, second];
    all.sort();
    assert_eq!(
        sorted, all,
        "every finding once, in the order seen: {seen:?}"
    );
}

#[tokio::test]
async fn a_whole_list_on_one_page_shows_every_committed_finding_at_once() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let (early, later) = (Uuid::now_v7(), Uuid::now_v7());
    let mut slow = w.connect().await;
    AnsiTransactionManager::begin_transaction(&mut slow)
        .await
        .unwrap();
    write(&mut slow, &acme, Uuid::now_v7()).await;
    write(&mut w.conn, &acme, early).await;
    write(&mut w.conn, &acme, later).await;
    // An open transaction holds the watermark, but no cursor is handed out past it: a list
    // that fits on one page is current.
    let page = findings::list(
        &mut w.conn,
        &acme,
        &Filter::default(),
        paging::PageRequest {
            cursors: &w.cursors,
            limit: paging::Limit::parse(Some(20), 20).unwrap(),
            cursor: None,
        },
    )
    .await
    .unwrap();
    let ids: Vec<Uuid> = page.items.iter().map(|f| f.finding_id).collect();
    assert_eq!(ids, vec![early, later]);
    assert!(!page.pagination.has_more);
    AnsiTransactionManager::rollback_transaction(&mut slow)
        .await
        .unwrap();
}

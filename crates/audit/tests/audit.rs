//! The audit log against a real Postgres: the chain, the list, checkpoints, and a verifier
//! that names the first entry changed, removed, moved or cut off.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use audit::{Actor, CheckpointKey, Checkpointer, Filter, NewEntry, PublicKey};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::{ConnectorId, PolicyId, TenantId, UserId};
use paging::{CursorKey, Limit};
use serde_json::json;
use std::sync::Arc;

async fn connect() -> (testkit::TestDatabase, AsyncPgConnection) {
    let db = testkit::database().await;
    let conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    (db, conn)
}

fn tenant(name: &str) -> TenantId {
    name.parse().unwrap()
}

fn key() -> CheckpointKey {
    let (master, _) = keys::MasterKey::generate().unwrap();
    CheckpointKey::from_master(&master)
}

fn entry(i: usize) -> NewEntry {
    NewEntry::new(audit::Kind::PolicyEvaluated, Actor::System)
        .details(json!({ "n": i, "matched": 2 }))
}

/// Appends `n` entries, `per` to a transaction.
async fn fill(conn: &mut AsyncPgConnection, tenant: &TenantId, n: usize, per: usize) {
    let mut i = 0;
    while i < n {
        let batch: Vec<NewEntry> = (i..(i + per).min(n)).map(entry).collect();
        conn.transaction(async |conn| audit::append(conn, tenant, &batch).await)
            .await
            .unwrap();
        i += per;
    }
}

async fn sql(conn: &mut AsyncPgConnection, statement: &str) {
    diesel::sql_query(statement).execute(conn).await.unwrap();
}

async fn verify(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    key: &PublicKey,
) -> Result<audit::Verified, audit::Broken> {
    audit::verify(conn, tenant, key).await.unwrap()
}

#[tokio::test]
async fn entries_are_numbered_and_chained_per_tenant() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let globex = tenant("globex");
    let alice: UserId = "alice".parse().unwrap();
    let policy = PolicyId::new();
    let connector = ConnectorId::new();
    let appended = conn
        .transaction(async |conn| {
            audit::append(
                conn,
                &acme,
                &[
                    NewEntry::new(audit::Kind::PolicyCreated, Actor::User(alice.clone()))
                        .policy(policy, 1),
                    NewEntry::new(audit::Kind::ActionPlanned, Actor::System)
                        .policy(policy, 1)
                        .action("mask")
                        .connector(connector)
                        .resource("exports/2026/a\0b.csv")
                        .outcome("planned"),
                ],
            )
            .await
        })
        .await
        .unwrap();
    assert_eq!(appended.iter().map(|a| a.seq).collect::<Vec<_>>(), [1, 2]);
    fill(&mut conn, &globex, 1, 1).await;

    let cursors = CursorKey::new(&[7; 32]);
    let page = audit::list(
        &mut conn,
        &acme,
        &Filter::default(),
        paging::PageRequest {
            cursors: &cursors,
            limit: Limit::parse(None, 50).unwrap(),
            cursor: None,
        },
    )
    .await
    .unwrap();
    let entries = page.items;
    assert_eq!(entries.len(), 2, "another tenant's entries never show");
    assert_eq!(entries[0].prev_hash, audit::GENESIS.to_vec());
    assert_eq!(entries[1].prev_hash, entries[0].hash);
    assert_eq!(entries[0].actor, "alice");
    assert_eq!(entries[1].actor, "system");
    assert_eq!(
        entries[1].resource.as_deref(),
        Some("exports/2026/a\u{fffd}b.csv")
    );
    assert_eq!(entries[1].connector_id, Some(connector.as_uuid()));
    assert!(entries[1].recorded_at >= entries[0].recorded_at);

    let public = key().public().clone();
    assert_eq!(verify(&mut conn, &acme, &public).await.unwrap().entries, 2);
    assert_eq!(
        verify(&mut conn, &globex, &public).await.unwrap().entries,
        1
    );
}

#[tokio::test]
async fn the_list_filters_by_time_policy_and_action_and_pages_in_order() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let policy = PolicyId::new();
    fill(&mut conn, &acme, 5, 5).await;
    let middle = time::OffsetDateTime::now_utc();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let actions: Vec<NewEntry> = ["alert", "mask", "alert"]
        .into_iter()
        .map(|a| {
            NewEntry::new(audit::Kind::ActionSimulated, Actor::System)
                .policy(policy, 2)
                .action(a)
                .simulated(true)
                .outcome("simulated")
        })
        .collect();
    conn.transaction(async |conn| audit::append(conn, &acme, &actions).await)
        .await
        .unwrap();

    let cursors = CursorKey::new(&[7; 32]);
    let list =
        async |conn: &mut AsyncPgConnection, filter: Filter, limit: i64, cursor: Option<String>| {
            audit::list(
                conn,
                &acme,
                &filter,
                paging::PageRequest {
                    cursors: &cursors,
                    limit: Limit::parse(Some(limit), 50).unwrap(),
                    cursor: cursor.as_deref(),
                },
            )
            .await
        };
    let seqs =
        |page: &paging::Page<audit::Entry>| page.items.iter().map(|e| e.seq).collect::<Vec<_>>();

    let since = list(
        &mut conn,
        Filter {
            since: Some(middle),
            ..Filter::default()
        },
        50,
        None,
    )
    .await
    .unwrap();
    assert_eq!(seqs(&since), [6, 7, 8]);
    let alerts = list(
        &mut conn,
        Filter {
            policy: Some(policy),
            action_type: Some("alert".into()),
            ..Filter::default()
        },
        50,
        None,
    )
    .await
    .unwrap();
    assert_eq!(seqs(&alerts), [6, 8]);
    let other_policy = list(
        &mut conn,
        Filter {
            policy: Some(PolicyId::new()),
            ..Filter::default()
        },
        50,
        None,
    )
    .await
    .unwrap();
    assert!(other_policy.items.is_empty());

    // Pages of three, in seq order, resuming exactly after the cursor.
    let first = list(&mut conn, Filter::default(), 3, None).await.unwrap();
    assert_eq!(seqs(&first), [1, 2, 3]);
    assert!(first.pagination.has_more);
    let second = list(
        &mut conn,
        Filter::default(),
        3,
        first.pagination.next_cursor.clone(),
    )
    .await
    .unwrap();
    assert_eq!(seqs(&second), [4, 5, 6]);
    let third = list(
        &mut conn,
        Filter::default(),
        3,
        second.pagination.next_cursor.clone(),
    )
    .await
    .unwrap();
    assert_eq!(seqs(&third), [7, 8]);
    assert!(!third.pagination.has_more);

    // Another tenant's cursor is refused.
    let foreign = audit::list(
        &mut conn,
        &tenant("globex"),
        &Filter::default(),
        paging::PageRequest {
            cursors: &cursors,
            limit: Limit::parse(None, 50).unwrap(),
            cursor: first.pagination.next_cursor.as_deref(),
        },
    )
    .await;
    assert!(matches!(foreign, Err(audit::ListError::BadCursor)));
}

#[tokio::test]
async fn the_service_cannot_change_or_remove_an_entry() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    fill(&mut conn, &acme, 2, 2).await;
    for statement in [
        "UPDATE audit_log SET outcome = 'x' WHERE seq = 1",
        "DELETE FROM audit_log WHERE seq = 2",
        "TRUNCATE audit_log",
    ] {
        let refused = diesel::sql_query(statement).execute(&mut conn).await;
        assert!(refused.is_err(), "{statement}");
    }
}

#[tokio::test]
async fn concurrent_appends_never_share_a_seq() {
    let db = testkit::database().await;
    let acme = tenant("acme");
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let url = db.url.clone();
        let acme = acme.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
            fill(&mut conn, &acme, 25, 1).await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let verified = verify(&mut conn, &acme, key().public()).await.unwrap();
    assert_eq!(verified.entries, 100);
}

#[tokio::test]
async fn checkpoints_are_signed_every_thousand_entries_and_at_a_moved_head() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let key = Arc::new(key());
    let checkpointer = Checkpointer { key: key.clone() };
    fill(&mut conn, &acme, 2_500, 500).await;
    assert_eq!(checkpointer.run_once(&mut conn).await.unwrap(), 3);
    let seqs: Vec<i64> = audit::checkpoints(&mut conn, &acme)
        .await
        .unwrap()
        .iter()
        .map(|c| c.seq)
        .collect();
    assert_eq!(seqs, [1_000, 2_000, 2_500]);
    // Nothing moved: nothing to sign. The head moved, but the last checkpoint is recent: only
    // the next thousandth entry is signed.
    assert_eq!(checkpointer.run_once(&mut conn).await.unwrap(), 0);
    fill(&mut conn, &acme, 600, 600).await;
    assert_eq!(checkpointer.run_once(&mut conn).await.unwrap(), 1);
    let verified = verify(&mut conn, &acme, key.public()).await.unwrap();
    assert_eq!((verified.entries, verified.checkpoints), (3_100, 4));

    // A checkpoint checked with another key does not verify.
    let other = self::key();
    let broken = verify(&mut conn, &acme, other.public()).await.unwrap_err();
    assert_eq!(broken.seq, 1_000);
    // The public key travels as hex.
    let hex = key.public().to_hex();
    assert_eq!(PublicKey::from_hex(&hex).as_ref(), Some(key.public()));
    assert_eq!(PublicKey::from_hex("zz"), None);
}

/// A log of 1,500 entries with checkpoints at 1,000 and 1,500, whose append-only trigger is
/// off, as it would be for someone with the database's owner rights.
async fn tamperable() -> (
    testkit::TestDatabase,
    AsyncPgConnection,
    TenantId,
    Arc<CheckpointKey>,
) {
    let (db, mut conn) = connect().await;
    let acme = tenant("acme");
    let key = Arc::new(key());
    fill(&mut conn, &acme, 1_500, 500).await;
    Checkpointer { key: key.clone() }
        .run_once(&mut conn)
        .await
        .unwrap();
    assert!(verify(&mut conn, &acme, key.public()).await.is_ok());
    sql(&mut conn, "ALTER TABLE audit_log DISABLE TRIGGER USER").await;
    (db, conn, acme, key)
}

#[tokio::test]
async fn verify_names_a_modified_entry() {
    let (_db, mut conn, acme, key) = tamperable().await;
    sql(
        &mut conn,
        "UPDATE audit_log SET details = '{\"n\": 99, \"matched\": 0}' WHERE seq = 42",
    )
    .await;
    let broken = verify(&mut conn, &acme, key.public()).await.unwrap_err();
    assert_eq!(broken.seq, 42, "{broken}");
    assert!(broken.reason.contains("changed"), "{broken}");
}

/// An entry whose type this service never writes is named by the verifier, and refused by the
/// list rather than shown as something it is not.
#[tokio::test]
async fn an_entry_of_a_type_this_service_never_writes_is_broken_and_unlisted() {
    let (_db, mut conn, acme, key) = tamperable().await;
    sql(
        &mut conn,
        "UPDATE audit_log SET kind = 'policy_renamed' WHERE seq = 7",
    )
    .await;
    let broken = verify(&mut conn, &acme, key.public()).await.unwrap_err();
    assert_eq!(broken.seq, 7, "{broken}");
    assert!(broken.reason.contains("type"), "{broken}");
    let listed = audit::list(
        &mut conn,
        &acme,
        &Filter::default(),
        paging::PageRequest::first(
            &CursorKey::new(&[1; 32]),
            Limit::parse(Some(20), 50).unwrap(),
        ),
    )
    .await;
    assert!(listed.is_err(), "{listed:?}");
}

#[tokio::test]
async fn verify_names_a_modified_entry_whose_hash_was_recomputed() {
    // Someone who rewrites an entry and its hash breaks the link to the next entry.
    let (_db, mut conn, acme, key) = tamperable().await;
    let mut entries = audit::list(
        &mut conn,
        &acme,
        &Filter::default(),
        paging::PageRequest {
            cursors: &CursorKey::new(&[1; 32]),
            limit: Limit::parse(Some(20), 50).unwrap(),
            cursor: None,
        },
    )
    .await
    .unwrap()
    .items;
    let mut forged = entries.remove(9);
    assert_eq!(forged.seq, 10);
    forged.outcome = Some("forged".into());
    let hash = hex::encode(forged.compute_hash(&forged.prev_hash));
    sql(
        &mut conn,
        &format!("UPDATE audit_log SET outcome = 'forged', hash = '\\x{hash}' WHERE seq = 10"),
    )
    .await;
    let broken = verify(&mut conn, &acme, key.public()).await.unwrap_err();
    assert_eq!(broken.seq, 11, "{broken}");
}

#[tokio::test]
async fn verify_names_a_deleted_entry() {
    let (_db, mut conn, acme, key) = tamperable().await;
    sql(&mut conn, "DELETE FROM audit_log WHERE seq = 700").await;
    let broken = verify(&mut conn, &acme, key.public()).await.unwrap_err();
    assert_eq!(broken.seq, 700, "{broken}");
    assert!(broken.reason.contains("missing"), "{broken}");
}

#[tokio::test]
async fn verify_names_reordered_entries() {
    let (_db, mut conn, acme, key) = tamperable().await;
    for statement in [
        "UPDATE audit_log SET seq = 1000000 WHERE seq = 300",
        "UPDATE audit_log SET seq = 300 WHERE seq = 301",
        "UPDATE audit_log SET seq = 301 WHERE seq = 1000000",
    ] {
        sql(&mut conn, statement).await;
    }
    let broken = verify(&mut conn, &acme, key.public()).await.unwrap_err();
    assert_eq!(broken.seq, 300, "{broken}");
}

#[tokio::test]
async fn verify_names_a_tail_cut_past_a_checkpoint() {
    let (_db, mut conn, acme, key) = tamperable().await;
    // The last 600 entries go, and the head is set back to match, so the chain itself is
    // intact: only the signed checkpoint at 1,500 shows the cut.
    sql(&mut conn, "DELETE FROM audit_log WHERE seq > 900").await;
    sql(
        &mut conn,
        "UPDATE audit_heads SET seq = 900, hash = (SELECT hash FROM audit_log WHERE seq = 900)",
    )
    .await;
    let broken = verify(&mut conn, &acme, key.public()).await.unwrap_err();
    assert_eq!(broken.seq, 901, "{broken}");
    assert!(broken.reason.contains("cut"), "{broken}");
}

/// One call appends any number of entries, and a single one, each in one statement with the
/// head: 5,000 entries here, beyond what binding each column of each row (16 parameters a row,
/// 65,535 at most) could take in one statement.
#[tokio::test]
async fn one_append_takes_one_entry_or_thousands() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    fill(&mut conn, &acme, 1, 1).await;
    fill(&mut conn, &acme, 5_000, 5_000).await;
    fill(&mut conn, &acme, 1, 1).await;
    let verified = verify(&mut conn, &acme, key().public()).await.unwrap();
    assert_eq!(verified.entries, 5_002);
}

/// The console's check: the newest entries, from the signed checkpoint before them, in time
/// that does not grow with the log. What lies before the checkpoint is not read.
#[tokio::test]
async fn the_newest_entries_are_verified_from_the_checkpoint_before_them() {
    let (_db, mut conn, acme, key) = tamperable().await;
    let ok = audit::verify_recent(&mut conn, &acme, key.public(), 400)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((ok.from, ok.to, ok.checkpoints), (1_001, 1_500, 1));
    assert!(
        matches!(ok.anchor, audit::Anchor::Checkpoint { seq: 1_000, .. }),
        "{ok:?}"
    );
    assert_eq!(ok.key_id, key.public().key_id);
    // The whole log, when it is this short.
    let all = audit::verify_recent(&mut conn, &acme, key.public(), 5_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((all.from, all.anchor), (1, audit::Anchor::Genesis));
    // Another key does not verify the anchor.
    let other = self::key();
    let broken = audit::verify_recent(&mut conn, &acme, other.public(), 400)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(broken.seq, 1_000, "{broken}");

    // A change before the anchor is the whole verifier's to find; one after it is found here.
    sql(
        &mut conn,
        "UPDATE audit_log SET details = '{\"n\": 0}' WHERE seq = 42",
    )
    .await;
    assert!(
        audit::verify_recent(&mut conn, &acme, key.public(), 400)
            .await
            .unwrap()
            .is_ok()
    );
    assert_eq!(
        verify(&mut conn, &acme, key.public())
            .await
            .unwrap_err()
            .seq,
        42
    );
    sql(
        &mut conn,
        "UPDATE audit_log SET details = '{\"n\": 0}' WHERE seq = 1234",
    )
    .await;
    let broken = audit::verify_recent(&mut conn, &acme, key.public(), 400)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(broken.seq, 1_234, "{broken}");
    assert!(broken.reason.contains("changed"), "{broken}");
}

#[tokio::test]
async fn the_newest_entries_show_a_cut_tail_and_a_gap() {
    let (_db, mut conn, acme, key) = tamperable().await;
    sql(&mut conn, "DELETE FROM audit_log WHERE seq = 1300").await;
    let broken = audit::verify_recent(&mut conn, &acme, key.public(), 400)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(broken.seq, 1_300, "{broken}");
    sql(&mut conn, "DELETE FROM audit_log WHERE seq > 1200").await;
    sql(
        &mut conn,
        "UPDATE audit_heads SET seq = 1200, hash = (SELECT hash FROM audit_log WHERE seq = 1200)",
    )
    .await;
    let broken = audit::verify_recent(&mut conn, &acme, key.public(), 400)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(broken.seq, 1_201, "{broken}");
    assert!(broken.reason.contains("cut"), "{broken}");
}

use diesel::QueryableByName;
use diesel::sql_types::{Bool, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};

#[tokio::test]
async fn migrations_apply_once_and_a_second_run_finds_nothing() {
    let db = testkit::empty_database().await;
    let first = db::migrate(&db.url).await.unwrap();
    assert!(!first.is_empty());
    let second = db::migrate(&db.url).await.unwrap();
    assert!(second.is_empty(), "{second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_migration_runs_apply_each_migration_exactly_once() {
    let db = testkit::empty_database().await;
    let runs = (0..4).map(|_| {
        let url = db.url.clone();
        tokio::spawn(async move { db::migrate(&url).await })
    });
    let mut applied = Vec::new();
    for run in runs {
        applied.extend(run.await.unwrap().unwrap());
    }
    let unique: std::collections::BTreeSet<_> = applied.iter().collect();
    assert_eq!(
        unique.len(),
        applied.len(),
        "a migration ran twice: {applied:?}"
    );
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let rows: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "(SELECT count(*) FROM __diesel_schema_migrations)",
    ))
    .get_result(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows as usize, applied.len());
}

#[tokio::test]
async fn schema_rs_matches_the_migrations() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let generated = db::print_schema(&mut conn).await.unwrap();
    let committed = include_str!("../../../crates/db/src/schema.rs");
    assert!(
        generated == committed,
        "crates/db/src/schema.rs is stale; regenerate it with \
         `cargo run -p dpsctl -- print-schema > crates/db/src/schema.rs`.\n--- generated ---\n{generated}"
    );
}

/// Tables that belong to no tenant. Adding one here is a design decision: say why beside it.
const GLOBAL_TABLES: &[&str] = &[
    // A consumer's position in the scans outbox, which is read in commit order across every
    // tenant at once: one row per consumer, owned by no tenant.
    "governance_consumers",
];

#[derive(QueryableByName)]
struct TableFacts {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Bool)]
    has_tenant_id: bool,
    #[diesel(sql_type = Bool)]
    has_tenant_leading_index: bool,
}

#[tokio::test]
async fn every_tenant_table_has_tenant_id_and_an_index_led_by_it() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let facts: Vec<TableFacts> = diesel::sql_query(
        "SELECT c.relname::text AS table_name,
                EXISTS (SELECT 1 FROM pg_attribute a
                        WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
                    AS has_tenant_id,
                EXISTS (SELECT 1 FROM pg_index i
                        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
                        WHERE i.indrelid = c.oid AND a.attname = 'tenant_id')
                    AS has_tenant_leading_index
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname NOT LIKE '\\_\\_diesel%'",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert!(!facts.is_empty());
    for table in facts
        .iter()
        .filter(|t| !GLOBAL_TABLES.contains(&t.table_name.as_str()))
    {
        assert!(
            table.has_tenant_id,
            "{} has no tenant_id column",
            table.table_name
        );
        assert!(
            table.has_tenant_leading_index,
            "{} has no index led by tenant_id",
            table.table_name
        );
    }
}

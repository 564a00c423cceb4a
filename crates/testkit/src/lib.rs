#![doc = include_str!("../README.md")]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use auth::TokenMinter;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, SimpleAsyncConnection as _};
use pgcluster::{Cluster, Durability};

pub mod browser;
pub mod cosigner;
pub mod domain;
pub mod emulators;
pub mod identity;
mod process;
pub mod seed;
pub use process::{ServiceProcess, leaks};

/// Issuer and audience of the tokens [`minter`] signs.
pub const TEST_ISSUER: &str = "dps-test";
pub const TEST_AUDIENCE: &str = "dps";
pub const TEST_KID: &str = "test-key-1";

/// The Postgres server the tests of this process share, and its migrated template.
struct Server {
    /// A URL whose database part is replaced per test.
    base_url: String,
    template: String,
    /// Kept so the cluster's lifetime is the process's; the reaper removes it at exit.
    _cluster: Option<Cluster>,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

/// A database of its own for one test, cloned from the migrated template.
#[derive(Debug, Clone)]
pub struct TestDatabase {
    pub name: String,
    pub url: String,
}

/// Replaces the database name of a `postgres://` URL, keeping any query string.
pub fn with_database(url: &str, database: &str) -> String {
    let (main, query) = url
        .split_once('?')
        .map_or((url, None), |(m, q)| (m, Some(q)));
    let authority_start = main.find("://").map_or(0, |i| i + 3);
    let base = match main[authority_start..].find('/') {
        Some(slash) => &main[..authority_start + slash],
        None => main,
    };
    match query {
        Some(q) => format!("{base}/{database}?{q}"),
        None => format!("{base}/{database}"),
    }
}

fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}_{}", std::process::id(), nanos)
}

fn start_server(durability: Durability) -> Result<Server, String> {
    let (base_url, cluster) = match std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    {
        // DATABASE_URL always wins: the tests then create their databases in that server.
        Some(url) => (url, None),
        None => {
            let root = std::env::temp_dir().join(format!("dps-test-pg-{}", unique_suffix()));
            let mut cluster =
                Cluster::open_or_init(&root, durability).map_err(|e| e.to_string())?;
            cluster
                .remove_when_process_exits(std::process::id())
                .map_err(|e| e.to_string())?;
            cluster.start().map_err(|e| e.to_string())?;
            (cluster.url("postgres"), Some(cluster))
        }
    };
    let template = format!("dps_tpl_{}", unique_suffix());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let mut conn = AsyncPgConnection::establish(&base_url)
            .await
            .map_err(|e| e.to_string())?;
        conn.batch_execute(&format!("CREATE DATABASE \"{template}\""))
            .await
            .map_err(|e| e.to_string())
    })?;
    drop(runtime);
    db::migrate_blocking(&with_database(&base_url, &template)).map_err(|e| e.to_string())?;
    Ok(Server {
        base_url,
        template,
        _cluster: cluster,
    })
}

/// Makes every database of this process live on a cluster with production durability (fsync
/// and synchronous commit on), for benchmarks that write. Call it before the first
/// [`database`]; afterwards it changes nothing. `DATABASE_URL`, when set, still wins.
pub fn use_durable_cluster() {
    server_with(Durability::Durable);
}

fn server() -> &'static Server {
    server_with(Durability::Disposable)
}

fn server_with(durability: Durability) -> &'static Server {
    let result = SERVER.get_or_init(|| {
        // Started on a plain thread: the migration harness runs its own runtime, which must not
        // be nested in the test's.
        std::thread::spawn(move || start_server(durability))
            .join()
            .unwrap_or_else(|_| Err("the test database set-up panicked".into()))
    });
    match result {
        Ok(server) => server,
        Err(e) => panic!("cannot start the test database: {e}"),
    }
}

/// A cluster of its own, for a test that stops and crashes the server (the shared one serves
/// every other test of the process), with one migrated database `dps`. Its durability is
/// production's (fsync and synchronous commit on): an answer given before a crash must
/// survive it, which the test cluster's settings do not promise. Removed when the test process
/// exits.
pub async fn private_cluster() -> (Cluster, TestDatabase) {
    let root = std::env::temp_dir().join(format!("dps-test-pg-private-{}", unique_suffix()));
    let cluster = tokio::task::spawn_blocking(move || {
        let mut cluster = Cluster::open_or_init(&root, Durability::Durable)?;
        cluster.remove_when_process_exits(std::process::id())?;
        cluster.start()?;
        Ok::<_, pgcluster::ClusterError>(cluster)
    })
    .await
    .unwrap_or_else(|e| panic!("the private cluster set-up panicked: {e}"))
    .unwrap_or_else(|e| panic!("cannot start a private cluster: {e}"));
    let mut conn = AsyncPgConnection::establish(&cluster.url("postgres"))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    conn.batch_execute("CREATE DATABASE dps")
        .await
        .unwrap_or_else(|e| panic!("create database: {e}"));
    let url = cluster.url("dps");
    let migrate_url = url.clone();
    tokio::task::spawn_blocking(move || db::migrate_blocking(&migrate_url))
        .await
        .unwrap_or_else(|e| panic!("migration panicked: {e}"))
        .unwrap_or_else(|e| panic!("migrate: {e}"));
    (
        cluster,
        TestDatabase {
            name: "dps".into(),
            url,
        },
    )
}

/// The build's target directory: `CARGO_TARGET_DIR` when set, else the workspace's `target/`.
/// What tests install (emulators) or leave behind to look at (screenshots) goes under it.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    )
}

/// A fresh, migrated database for one test.
pub async fn database() -> TestDatabase {
    let template = &server().template;
    create_database("dps_t", &format!("TEMPLATE \"{template}\"")).await
}

/// A migration-free, empty database (for tests of the migrations themselves).
pub async fn empty_database() -> TestDatabase {
    create_database("dps_e", "").await
}

async fn create_database(prefix: &str, options: &str) -> TestDatabase {
    let server = server();
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    let mut conn = AsyncPgConnection::establish(&server.base_url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the test server: {e}"));
    conn.batch_execute(&format!("CREATE DATABASE \"{name}\" {options}"))
        .await
        .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
    TestDatabase {
        url: with_database(&server.base_url, &name),
        name,
    }
}

/// The URL of the server's maintenance database, for tests that inspect the server itself.
pub fn server_admin_url() -> String {
    server().base_url.clone()
}

/// The identity provider of the tests: one Ed25519 key per process.
pub fn minter() -> &'static TokenMinter {
    static MINTER: OnceLock<TokenMinter> = OnceLock::new();
    MINTER.get_or_init(|| {
        TokenMinter::generate(TEST_KID, TEST_ISSUER, TEST_AUDIENCE)
            .unwrap_or_else(|e| panic!("cannot make the test signing key: {e}"))
    })
}

/// A JWKS file trusting [`minter`]'s key, written once per process.
pub fn jwks_file() -> PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("dps-test-jwks-{}.json", unique_suffix()));
        std::fs::write(&path, minter().jwks_json())
            .unwrap_or_else(|e| panic!("cannot write the test JWKS: {e}"));
        path
    })
    .clone()
}

/// A plain-SQL `pg_dump` of `db`, data included: for tests that prove no plaintext reached any
/// table.
pub fn pg_dump(db: &TestDatabase) -> String {
    let tool = pgcluster::ServerBinaries::locate()
        .map(|b| b.tool("pg_dump"))
        .unwrap_or_else(|_| PathBuf::from("pg_dump"));
    let output = std::process::Command::new(tool)
        .args(["--no-owner", "--no-privileges", "--inserts", "--dbname"])
        .arg(&db.url)
        .output()
        .unwrap_or_else(|e| panic!("cannot run pg_dump: {e}"));
    assert!(
        output.status.success(),
        "pg_dump failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Rows the connection has read from `table` and not yet reported to the statistics system, by
/// sequential and index scans together (`pg_stat_xact_user_tables`): for tests that prove a
/// statement reads only the rows it needs, whatever plan Postgres chose. A backend reports at
/// most once a second, so the count can include earlier transactions' reads: take a reading
/// before the statement and one after, inside one transaction, and compare them.
pub async fn rows_read(conn: &mut AsyncPgConnection, table: &str) -> i64 {
    use diesel::sql_types::{BigInt, Text};
    use diesel_async::RunQueryDsl as _;
    #[derive(diesel::QueryableByName)]
    struct Read {
        #[diesel(sql_type = BigInt)]
        tuples: i64,
    }
    db::sql(
        "SELECT (coalesce(sum(seq_tup_read), 0) + coalesce(sum(idx_tup_fetch), 0))::bigint
                AS tuples
           FROM pg_stat_xact_user_tables WHERE relname = $1",
    )
    .bind::<Text, _>(table)
    .get_result::<Read>(conn)
    .await
    .unwrap_or_else(|e| panic!("reading the statistics of {table}: {e}"))
    .tuples
}

/// Waits until some session of this connection's database waits for a lock: for tests that hold
/// a row and must know a concurrent statement has reached it before they let go. Panics after
/// ten seconds.
pub async fn wait_for_lock_wait(conn: &mut AsyncPgConnection) {
    use diesel::sql_types::BigInt;
    use diesel_async::RunQueryDsl as _;
    #[derive(diesel::QueryableByName)]
    struct Waiting {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    for _ in 0..500 {
        let waiting = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .get_result::<Waiting>(conn)
        .await
        .unwrap_or_else(|e| panic!("reading pg_stat_activity: {e}"))
        .n;
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("no session waited for a lock within ten seconds");
}

/// A pool of one connection to `url`: for tests that prove some code gives its pooled
/// connection back while it waits (see [`assert_pool_free`]).
pub fn pool_of_one(url: &str) -> db::Pool {
    db::build_pool(&db::PoolConfig {
        url: url.to_owned(),
        max_size: 1,
        statement_timeout: std::time::Duration::from_secs(30),
        application_name: "pool-of-one".into(),
        wait_timeout: std::time::Duration::from_secs(30),
    })
    .unwrap_or_else(|e| panic!("pool: {e}"))
}

/// Takes `pool`'s connection within `within` and runs a statement on it, then gives it back;
/// panics, saying `holder` held it, when it is not free by then.
pub async fn assert_pool_free(pool: &db::Pool, within: std::time::Duration, holder: &str) {
    use diesel_async::RunQueryDsl as _;
    let mut conn = tokio::time::timeout(within, pool.get())
        .await
        .unwrap_or_else(|_| panic!("{holder} held the pool's only connection"))
        .unwrap_or_else(|e| panic!("pool: {e}"));
    diesel::sql_query("SELECT 1")
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("SELECT 1: {e}"));
}

/// Both ways Postgres plans a prepared statement: for its parameters (its first five runs), and
/// generically, without them (later runs, when that looks no costlier). A test that proves a
/// statement's plan runs it under each.
pub const PLAN_MODES: [&str; 2] = ["force_custom_plan", "force_generic_plan"];

/// Plans the rest of the current transaction's statements `mode`, one of [`PLAN_MODES`].
pub async fn plan_cache_mode(conn: &mut AsyncPgConnection, mode: &str) {
    assert!(PLAN_MODES.contains(&mode), "not a plan mode: {mode}");
    conn.batch_execute(&format!("SET LOCAL plan_cache_mode = {mode}"))
        .await
        .unwrap_or_else(|e| panic!("setting plan_cache_mode: {e}"));
}

/// The environment a service binary needs against `db`: the test identity provider and a
/// master key, migrations off (the template is migrated), one worker.
pub fn service_env(
    db: &TestDatabase,
    master_key: &str,
) -> std::collections::HashMap<String, String> {
    std::collections::HashMap::from([
        ("DATABASE_URL".to_owned(), db.url.clone()),
        (
            "DPS_AUTH_JWKS".to_owned(),
            jwks_file().to_string_lossy().into_owned(),
        ),
        ("DPS_AUTH_ISSUER".to_owned(), TEST_ISSUER.to_owned()),
        ("DPS_AUTH_AUDIENCE".to_owned(), TEST_AUDIENCE.to_owned()),
        ("DPS_MASTER_KEY".to_owned(), master_key.to_owned()),
        ("DPS_MIGRATE_ON_START".to_owned(), "false".to_owned()),
        ("HTTP_WORKERS".to_owned(), "1".to_owned()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_swapped_in_urls() {
        assert_eq!(
            with_database("postgres://u:p@h:5/a", "b"),
            "postgres://u:p@h:5/b"
        );
        assert_eq!(
            with_database("postgres://u:p@h:5/a?sslmode=disable", "b"),
            "postgres://u:p@h:5/b?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "b"), "postgres://h/b");
    }
}

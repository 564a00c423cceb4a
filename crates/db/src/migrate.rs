use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

/// Every migration under the workspace's `migrations/`, compiled into the binary.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// The advisory lock key that serializes migration runs across processes ("dps_migr" in ASCII).
const MIGRATION_LOCK_KEY: i64 = 0x6470_735f_6d69_6772;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("could not connect to the database to migrate: {0}")]
    Connect(#[from] diesel::ConnectionError),
    #[error("could not take the migration lock: {0}")]
    Lock(diesel::result::Error),
    #[error("a migration failed: {0}")]
    Migration(String),
    #[error("the migration task stopped unexpectedly: {0}")]
    Task(String),
}

/// Applies every pending migration and returns the versions it applied, in order.
///
/// A session-level advisory lock is held for the whole run, so two replicas starting together
/// apply each migration once: the second waits, then finds nothing pending.
///
/// This blocks the calling thread. From async code, use [`migrate`].
pub fn migrate_blocking(url: &str) -> Result<Vec<String>, MigrateError> {
    let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::establish(url)?;
    conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
        .map_err(MigrateError::Lock)?;
    let applied = conn
        .run_pending_migrations(MIGRATIONS)
        .map(|versions| versions.iter().map(ToString::to_string).collect::<Vec<_>>())
        .map_err(|e| MigrateError::Migration(e.to_string()));
    // The lock is also released when the session ends; unlocking explicitly just frees it sooner.
    if let Err(e) = conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))
    {
        tracing::warn!(error = %e, "could not release the migration lock; it is freed at disconnect");
    }
    let applied = applied?;
    if applied.is_empty() {
        tracing::info!("database schema is up to date");
    } else {
        tracing::info!(applied = ?applied, "applied migrations");
    }
    Ok(applied)
}

/// [`migrate_blocking`] on tokio's blocking pool.
pub async fn migrate(url: &str) -> Result<Vec<String>, MigrateError> {
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || migrate_blocking(&url))
        .await
        .map_err(|e| MigrateError::Task(e.to_string()))?
}

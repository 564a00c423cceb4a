use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use diesel::ConnectionError;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};

/// The pool type every service uses.
pub type Pool = diesel_async::pooled_connection::deadpool::Pool<AsyncPgConnection>;
/// A connection checked out of [`Pool`].
pub type PooledConnection = diesel_async::pooled_connection::deadpool::Object<AsyncPgConnection>;

/// How to build a pool. Built once from the binary's typed config.
#[derive(Clone)]
pub struct PoolConfig {
    /// A `postgres://` URL. It may hold a password, so it is never logged or shown by `Debug`.
    pub url: String,
    pub max_size: usize,
    /// Applied to every connection as `statement_timeout`.
    pub statement_timeout: Duration,
    /// Applied to every connection as `application_name`, so that `pg_stat_activity` shows who
    /// is connected. Only `[A-Za-z0-9_-]` is kept.
    pub application_name: String,
    /// How long a caller waits for a free connection before getting an error.
    pub wait_timeout: Duration,
}

impl std::fmt::Debug for PoolConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolConfig")
            .field("url", &"<redacted>")
            .field("max_size", &self.max_size)
            .field("statement_timeout", &self.statement_timeout)
            .field("application_name", &self.application_name)
            .field("wait_timeout", &self.wait_timeout)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("could not build the database pool: {0}")]
    Build(String),
    #[error("could not get a database connection: {0}")]
    Checkout(String),
    #[error("database query failed: {0}")]
    Query(#[from] diesel::result::Error),
}

/// Builds the service's connection pool. This is the only place a pool is built.
///
/// Connections are made lazily; use [`check_ready`] to find out whether the database answers.
pub fn build_pool(config: &PoolConfig) -> Result<Pool, PoolError> {
    let init_sql = session_init_sql(config);
    let mut manager_config = ManagerConfig::<AsyncPgConnection>::default();
    // Fast recycling only checks for an open transaction; a dead connection surfaces as an error
    // on first use and is then dropped by the pool.
    manager_config.recycling_method = RecyclingMethod::Fast;
    manager_config.custom_setup =
        Box::new(move |url: &str| establish(url.to_owned(), init_sql.clone()));
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(
        config.url.clone(),
        manager_config,
    );
    Pool::builder(manager)
        .max_size(config.max_size)
        .wait_timeout(Some(config.wait_timeout))
        .create_timeout(Some(config.wait_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map_err(|e| PoolError::Build(e.to_string()))
}

type SetupFuture =
    Pin<Box<dyn Future<Output = diesel::ConnectionResult<AsyncPgConnection>> + Send>>;

fn establish(url: String, init_sql: String) -> SetupFuture {
    Box::pin(async move {
        let mut conn = AsyncPgConnection::establish(&url).await?;
        conn.batch_execute(&init_sql)
            .await
            .map_err(ConnectionError::CouldntSetupConfiguration)?;
        Ok(conn)
    })
}

fn session_init_sql(config: &PoolConfig) -> String {
    let app: String = config
        .application_name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(63)
        .collect();
    // A session idle inside a transaction that long (its process stalled or stopped while
    // holding row locks) is ended by the server, so it cannot block others indefinitely.
    format!(
        "SET statement_timeout = {ms}; SET idle_in_transaction_session_timeout = {ms}; \
         SET application_name = '{app}'",
        ms = config.statement_timeout.as_millis(),
    )
}

/// Checks out a connection and runs `SELECT 1`: the readiness probe behind `/health`.
pub async fn check_ready(pool: &Pool) -> Result<(), PoolError> {
    let mut conn = pool
        .get()
        .await
        .map_err(|e| PoolError::Checkout(e.to_string()))?;
    crate::sql("SELECT 1").execute(&mut conn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_init_sql_sets_timeout_and_sanitized_name() {
        let cfg = PoolConfig {
            url: "postgres://u:p@h/db".into(),
            max_size: 4,
            statement_timeout: Duration::from_secs(5),
            application_name: "tokens-api'; DROP TABLE x; --".into(),
            wait_timeout: Duration::from_secs(1),
        };
        assert_eq!(
            session_init_sql(&cfg),
            "SET statement_timeout = 5000; SET idle_in_transaction_session_timeout = 5000; \
             SET application_name = 'tokens-apiDROPTABLEx--'"
        );
    }

    #[test]
    fn debug_never_shows_the_url() {
        let cfg = PoolConfig {
            url: "postgres://u:secretpw@h/db".into(),
            max_size: 4,
            statement_timeout: Duration::from_secs(5),
            application_name: "x".into(),
            wait_timeout: Duration::from_secs(1),
        };
        assert!(!format!("{cfg:?}").contains("secretpw"));
    }
}

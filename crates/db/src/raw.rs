//! Plain tokio-postgres connections, for what diesel-async cannot issue: `COPY ... FROM STDIN`
//! inside a transaction. The vault's tokenize transaction runs on one (docs/decisions.md, "The
//! vault's insert is a binary COPY"); everything else uses [`crate::Pool`].
//!
//! A [`RawPool`] is built from the same [`PoolConfig`] as the diesel pool: the same URL, the
//! same session settings and the same size. Each connection prepares a statement once and then
//! runs it by name, as [`crate::sql()`] does for diesel.

use std::collections::HashMap;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use diesel::result::{DatabaseErrorInformation, DatabaseErrorKind, Error as DieselError};
pub use tokio_postgres::Row;
pub use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, NoTls, Statement};

use crate::pool::{PoolConfig, PoolError, session_init_sql};

/// A pool of [`RawConn`].
#[derive(Clone)]
pub struct RawPool(managed::Pool<Manager>);

impl std::fmt::Debug for RawPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawPool")
            .field("status", &self.0.status())
            .finish()
    }
}

/// A connection checked out of [`RawPool`].
pub type RawObject = managed::Object<Manager>;

/// One connection and the statements it has prepared.
pub struct RawConn {
    pub client: tokio_postgres::Client,
    pub statements: Statements,
}

/// Statements a connection prepared, by their text. The text is static, so the map stays as
/// small as the code that uses it.
#[derive(Default)]
pub struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    /// `sql` prepared on `client`'s connection: once, then from the map.
    pub async fn get(
        &mut self,
        client: &impl GenericClient,
        sql: &'static str,
    ) -> Result<Statement, DieselError> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql).await.map_err(to_diesel)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
    }
}

impl std::fmt::Debug for RawConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawConn")
            .field("closed", &self.client.is_closed())
            .field("statements", &self.statements)
            .finish()
    }
}

impl std::fmt::Debug for Statements {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Statements").field(&self.0.len()).finish()
    }
}

impl RawConn {
    /// Opens a transaction. Dropped without [`Tx::commit`], it rolls back.
    pub async fn begin(&mut self) -> Result<Tx<'_>, DieselError> {
        Ok(Tx {
            tx: self.client.transaction().await.map_err(to_diesel)?,
            statements: &mut self.statements,
        })
    }
}

/// A transaction (or a savepoint in one) on a [`RawConn`], running prepared statements.
pub struct Tx<'c> {
    tx: tokio_postgres::Transaction<'c>,
    statements: &'c mut Statements,
}

impl std::fmt::Debug for Tx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx").finish_non_exhaustive()
    }
}

impl Tx<'_> {
    /// Runs `sql`, prepared once per connection, and says how many rows it changed.
    pub async fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, DieselError> {
        let statement = self.statements.get(&self.tx, sql).await?;
        self.tx.execute(&statement, params).await.map_err(to_diesel)
    }

    /// Runs `sql`, prepared once per connection, and returns its rows.
    pub async fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, DieselError> {
        let statement = self.statements.get(&self.tx, sql).await?;
        self.tx.query(&statement, params).await.map_err(to_diesel)
    }

    /// Writes `rows` through `sql`, a `COPY ... FROM STDIN (FORMAT binary)` of columns of
    /// `types`, and says how many rows it wrote. One failing row fails the statement, and with
    /// it the transaction (or savepoint).
    pub async fn copy_rows<const N: usize>(
        &mut self,
        sql: &'static str,
        types: &[Type; N],
        rows: &[[&(dyn ToSql + Sync); N]],
    ) -> Result<u64, DieselError> {
        let statement = self.statements.get(&self.tx, sql).await?;
        let sink = self.tx.copy_in(&statement).await.map_err(to_diesel)?;
        let writer = tokio_postgres::binary_copy::BinaryCopyInWriter::new(sink, types);
        let mut writer = std::pin::pin!(writer);
        for row in rows {
            writer.as_mut().write(row).await.map_err(to_diesel)?;
        }
        writer.as_mut().finish().await.map_err(to_diesel)
    }

    /// A savepoint: what runs in it is undone alone when it is dropped without
    /// [`Tx::commit`].
    pub async fn savepoint(&mut self) -> Result<Tx<'_>, DieselError> {
        Ok(Tx {
            tx: self
                .tx
                .savepoint("raw_savepoint")
                .await
                .map_err(to_diesel)?,
            statements: &mut *self.statements,
        })
    }

    /// Commits the transaction, or releases the savepoint.
    pub async fn commit(self) -> Result<(), DieselError> {
        self.tx.commit().await.map_err(to_diesel)
    }

    /// Rolls the transaction (or the savepoint) back now, rather than as it drops.
    pub async fn rollback(self) -> Result<(), DieselError> {
        self.tx.rollback().await.map_err(to_diesel)
    }
}

/// Makes and checks [`RawConn`]s. Its URL may hold a password: `Debug` does not show it.
pub struct Manager {
    url: String,
    init_sql: String,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager").finish_non_exhaustive()
    }
}

impl managed::Manager for Manager {
    type Type = RawConn;
    type Error = tokio_postgres::Error;

    async fn create(&self) -> Result<RawConn, tokio_postgres::Error> {
        let (client, connection) = tokio_postgres::connect(&self.url, NoTls).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a database connection ended");
            }
        });
        client.batch_execute(&self.init_sql).await?;
        Ok(RawConn {
            client,
            statements: Statements::default(),
        })
    }

    async fn recycle(
        &self,
        conn: &mut RawConn,
        _: &Metrics,
    ) -> RecycleResult<tokio_postgres::Error> {
        // A transaction dropped unfinished sends its ROLLBACK as it drops, ahead of anything
        // the next user sends; a closed connection is dropped here.
        if conn.client.is_closed() {
            return Err(RecycleError::message("the connection is closed"));
        }
        Ok(())
    }
}

/// Builds a pool of plain connections, made lazily like [`crate::build_pool`]'s.
pub fn build_raw_pool(config: &PoolConfig) -> Result<RawPool, PoolError> {
    let manager = Manager {
        url: config.url.clone(),
        init_sql: session_init_sql(config),
    };
    managed::Pool::builder(manager)
        .max_size(config.max_size)
        .wait_timeout(Some(config.wait_timeout))
        .create_timeout(Some(config.wait_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map(RawPool)
        .map_err(|e| PoolError::Build(e.to_string()))
}

impl RawPool {
    /// A connection, or an error that [`crate::is_unavailable`] recognizes: the caller answers
    /// as it would to a database that is down.
    pub async fn get(&self) -> Result<RawObject, DieselError> {
        self.0.get().await.map_err(|e| {
            DieselError::DatabaseError(
                DatabaseErrorKind::UnableToSendCommand,
                Box::new(format!("no connection to the server: {e}")),
            )
        })
    }
}

/// Column `index` of `row`, or diesel's deserialization error when it does not hold a `T`.
pub fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
) -> Result<T, DieselError> {
    row.try_get(index)
        .map_err(|e| DieselError::DeserializationError(Box::new(e)))
}

/// A tokio-postgres error as diesel reports the same error, so that callers handle both alike
/// (unique violations, concurrency conflicts, a database that went away).
pub fn to_diesel(error: tokio_postgres::Error) -> DieselError {
    use tokio_postgres::error::SqlState;
    let Some(db) = error.as_db_error() else {
        let kind = if error.is_closed() {
            DatabaseErrorKind::ClosedConnection
        } else {
            DatabaseErrorKind::UnableToSendCommand
        };
        return DieselError::DatabaseError(kind, Box::new(error.to_string()));
    };
    let kind = match *db.code() {
        SqlState::UNIQUE_VIOLATION => DatabaseErrorKind::UniqueViolation,
        SqlState::FOREIGN_KEY_VIOLATION => DatabaseErrorKind::ForeignKeyViolation,
        SqlState::RESTRICT_VIOLATION => DatabaseErrorKind::RestrictViolation,
        SqlState::EXCLUSION_VIOLATION => DatabaseErrorKind::ExclusionViolation,
        SqlState::T_R_SERIALIZATION_FAILURE => DatabaseErrorKind::SerializationFailure,
        SqlState::READ_ONLY_SQL_TRANSACTION => DatabaseErrorKind::ReadOnlyTransaction,
        SqlState::NOT_NULL_VIOLATION => DatabaseErrorKind::NotNullViolation,
        SqlState::CHECK_VIOLATION => DatabaseErrorKind::CheckViolation,
        _ => DatabaseErrorKind::Unknown,
    };
    DieselError::DatabaseError(kind, Box::new(DbError(db.clone())))
}

/// The server's error, as diesel reads one.
struct DbError(tokio_postgres::error::DbError);

impl DatabaseErrorInformation for DbError {
    fn message(&self) -> &str {
        self.0.message()
    }
    fn details(&self) -> Option<&str> {
        self.0.detail()
    }
    fn hint(&self) -> Option<&str> {
        self.0.hint()
    }
    fn table_name(&self) -> Option<&str> {
        self.0.table()
    }
    fn column_name(&self) -> Option<&str> {
        self.0.column()
    }
    fn constraint_name(&self) -> Option<&str> {
        self.0.constraint()
    }
    fn statement_position(&self) -> Option<i32> {
        None
    }
}

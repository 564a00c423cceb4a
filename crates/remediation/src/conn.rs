//! The executor's database connection, held only while a step talks to Postgres.
//!
//! A remediation spends most of its time waiting on the customer's storage (a read, a copy, a
//! write) or a co-signer. A pooled connection held through those waits would do nothing for
//! anyone, and with several executor tasks it would take a share of the pool that the API
//! needs. So each step takes a connection from the pool when it runs a statement and gives it
//! back before it waits on the network (or runs detection, its longest stretch of CPU). No transaction spans a release: every transaction of
//! the executor begins and commits inside one call.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::AsyncPgConnection;

/// Where a run's statements go.
#[expect(
    clippy::large_enum_variant,
    reason = "one per run, inside the run's future: boxing the connection would only add an allocation per checkout"
)]
pub(crate) enum Conn<'c> {
    /// A connection taken from the pool for the statements at hand and given back by
    /// [`Conn::release`] (or at the end of the run).
    Pooled {
        pool: &'c db::Pool,
        held: Option<db::PooledConnection>,
    },
    /// The caller's own connection, kept for the whole run (tests, tools).
    Borrowed(&'c mut AsyncPgConnection),
}

impl<'c> Conn<'c> {
    /// Takes connections from `pool` as needed.
    pub(crate) fn pooled(pool: &'c db::Pool) -> Self {
        Conn::Pooled { pool, held: None }
    }

    /// The connection for the next statements: the one held, or one taken from the pool. A
    /// pool that cannot give one is reported as a database that is not there
    /// ([`db::is_unavailable`]), which every caller already retries.
    pub(crate) async fn get(&mut self) -> Result<&mut AsyncPgConnection, DieselError> {
        match self {
            Conn::Borrowed(conn) => Ok(conn),
            Conn::Pooled { pool, held } => {
                let conn = match held {
                    Some(conn) => conn,
                    None => held.insert(pool.get().await.map_err(unavailable)?),
                };
                Ok(conn)
            }
        }
    }

    /// Gives a pooled connection back before the step waits on something else. The caller's
    /// own connection stays with it.
    pub(crate) fn release(&mut self) {
        if let Conn::Pooled { held, .. } = self {
            *held = None;
        }
    }
}

/// A pool that gave no connection, as the error of a database that is not there.
fn unavailable(e: impl std::fmt::Display) -> DieselError {
    DieselError::DatabaseError(
        DatabaseErrorKind::UnableToSendCommand,
        Box::new(format!("no connection to the server from the pool: {e}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_failure_reads_as_a_database_that_is_not_there() {
        assert!(db::is_unavailable(&unavailable("timed out")));
    }
}

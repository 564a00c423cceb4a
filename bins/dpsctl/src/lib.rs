//! What `dpsctl` and the dev stack (`bins/devstack`) share: the local development environment
//! and a database connection. No web framework: `dpsctl` never links one.

pub mod dev;

use anyhow::Context as _;

/// One connection to `url`.
pub async fn connect(url: &str) -> anyhow::Result<db::AsyncPgConnection> {
    use diesel_async::AsyncConnection as _;
    db::AsyncPgConnection::establish(url)
        .await
        .context("connecting to the database")
}

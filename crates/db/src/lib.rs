#![doc = include_str!("../README.md")]

mod migrate;
mod pool;
mod print_schema;
pub mod schema;

pub use diesel_async::AsyncPgConnection;
pub use migrate::{MIGRATIONS, MigrateError, migrate, migrate_blocking};
pub use pool::{Pool, PoolConfig, PoolError, PooledConnection, build_pool, check_ready};
pub use print_schema::print_schema;

//! The connectors crate's public API against real services: Postgres for the connectors
//! themselves, and the storage emulators (moto, Azurite over HTTPS, fake-gcs-server) for what
//! the cloud access reads and writes. One binary, so the throwaway Postgres cluster starts once;
//! every test has its own database.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod config;
mod pinned;
mod posture;
mod store;
mod writes;

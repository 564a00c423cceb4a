//! The scans crate's public API against a real Postgres and, where objects are listed or read,
//! the S3 emulator moto: creating and listing scans, the chunk protocol and its fence, the
//! lifecycle, the outbox, a connector's activity and its deletion, and classifier snapshots.
//! One binary, so the throwaway Postgres cluster starts once; every test has its own database.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

mod classifiers;
mod connector;
mod enumerate;
mod findings;
mod lease;
mod outbox;
mod plans;
mod store;

//! Posture against a real Postgres: drift events kept per tenant, listed with their filters,
//! counted by severity and acknowledged once, with one audit entry.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod drift;

pub use testkit::domain::{Env, acme, admin, globex};

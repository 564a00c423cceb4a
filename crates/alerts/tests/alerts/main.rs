//! Alerts against a real Postgres: channels with sealed URLs and secrets, kept per tenant, and
//! never deleted while a policy alerts them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod channels;

pub use testkit::domain::{Env, acme, admin, globex};

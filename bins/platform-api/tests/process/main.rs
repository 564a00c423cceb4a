//! The real `platform-api` binary, run as operators run it, in a process of its own: its logs,
//! and remediation surviving the process being killed at each step.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod crash;
mod hostile;
mod logs;
mod replicas;

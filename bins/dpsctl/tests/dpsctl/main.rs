//! `dpsctl` as operators run it: the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

mod audit;
mod detect;

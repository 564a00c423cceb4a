#![doc = include_str!("../README.md")]

pub mod backlog;
pub mod drift;
pub mod evaluate;
pub mod findings;
pub mod posture;
pub mod reconcile;
pub mod remediate;
pub mod risk;
pub mod summary;

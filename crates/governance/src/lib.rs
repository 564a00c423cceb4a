#![doc = include_str!("../README.md")]

pub mod backlog;
pub mod evaluate;
pub mod reconcile;
pub mod summary;

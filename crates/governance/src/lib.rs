#![doc = include_str!("../README.md")]

pub mod backlog;
pub mod evaluate;
pub mod offboard;
pub mod reconcile;
pub mod summary;

#![doc = include_str!("../README.md")]

pub mod classifiers;
pub mod coordinator;
pub mod engine;
pub mod model;
pub mod options;
pub mod store;
pub mod worker;

pub use coordinator::Coordinator;
pub use model::{Counts, Coverage, Enumeration, Progress, Scan, Status};
pub use options::{Kind, Options, Strategy, Tier};
pub use store::ScanError;
pub use worker::Worker;

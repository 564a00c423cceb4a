#![doc = include_str!("../README.md")]

// Dependencies point one way: error, model, options, preview and rows at the bottom; the lease protocol
// above them; recording, the lifecycle and enumeration above that; the store of views, the
// per-connector facts, the grouping of an object's values, the worker and the coordinator on
// top.
mod error;
pub mod model;
pub mod options;
pub mod preview;
mod rows;

pub mod lease;
pub mod outbox;

mod archive;
mod baseline;
pub mod enumerate;
pub mod lifecycle;
pub mod record;
pub mod remote;
pub mod retention;

pub mod classifiers;
pub mod connector;
pub mod coordinator;
pub mod findings;
pub mod group;
pub mod open_counts;
pub mod store;
pub mod tokens;
pub mod worker;

pub use coordinator::Coordinator;
pub use error::ScanError;
pub use model::{Counts, Coverage, Enumeration, Progress, Scan, Status};
pub use options::{Kind, Options, Strategy, Tier};
pub use worker::Worker;

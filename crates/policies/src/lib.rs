#![doc = include_str!("../README.md")]

pub mod changes;
pub mod channel_name;
pub mod document;
pub mod ledger;
pub mod matching;
pub mod store;
pub mod thresholds;

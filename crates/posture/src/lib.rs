#![doc = include_str!("../README.md")]

pub mod buckets;
pub mod drift;
pub mod findings;
pub mod risk;

#![doc = include_str!("../README.md")]

pub mod channels;
pub mod delivery;
pub mod queue;

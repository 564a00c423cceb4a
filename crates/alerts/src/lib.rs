#![doc = include_str!("../README.md")]

pub mod channels;
pub mod deliveries;
pub mod delivery;
pub mod queue;

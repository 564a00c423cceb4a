#![doc = include_str!("../README.md")]

mod channel_name;
pub mod channels;
pub mod document;
pub mod policies;
pub mod risk;

#![doc = include_str!("../README.md")]

pub mod channels;
pub mod document;
pub mod risk;

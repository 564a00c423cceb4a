#![doc = include_str!("../README.md")]

pub mod config;

pub use config::{Config, FieldError, Provider, validate};

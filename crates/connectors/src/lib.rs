#![doc = include_str!("../README.md")]

pub mod config;
pub mod store;

pub use config::{Config, FieldError, Provider, validate};
pub use store::{Connector, ConnectorError, Filter, Page, Status};

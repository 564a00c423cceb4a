#![doc = include_str!("../README.md")]

pub mod cloud;
pub mod config;
pub mod external_id;
pub mod probe;
pub mod store;

pub use cloud::{AccessError, Cloud, CloudEnv, Failure, GcpTrust, Posture, Storage, SubjectIssuer};
pub use config::{Config, FieldError, Provider, validate};
pub use external_id::external_id;
pub use probe::{TestOutcome, test_connection};
pub use store::{Connector, ConnectorError, Filter, NewConnector, Status};

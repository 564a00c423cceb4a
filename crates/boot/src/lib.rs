#![doc = include_str!("../README.md")]

mod env;
mod telemetry;
mod tls;

pub use env::{ConfigError, Env, process_env};
pub use telemetry::{LogFormat, init_tracing};
pub use tls::install_tls_provider;

#![doc = include_str!("../README.md")]

mod env;
mod panics;
mod telemetry;
mod tls;

pub use env::{ConfigError, Env, process_env};
pub use panics::install_panic_hook;
pub use telemetry::{LogFormat, check_log_filter, init_tracing};
pub use tls::install_tls_provider;

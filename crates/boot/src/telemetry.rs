use tracing_subscriber::EnvFilter;

use crate::{ConfigError, Env};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line (`LOG_FORMAT=json`).
    Json,
}

impl LogFormat {
    /// Reads `LOG_FORMAT`: `json` or `text` (unset means text; anything else is an error naming
    /// the choices).
    pub fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        match env.get("LOG_FORMAT").as_deref().map(str::trim) {
            None | Some("text") => Ok(Self::Text),
            Some("json") => Ok(Self::Json),
            Some(other) => Err(ConfigError::new(
                "LOG_FORMAT",
                format!("must be `text` or `json`, not `{other}`"),
            )),
        }
    }
}

/// Installs the global subscriber, and the panic hook that logs through it without a panic's
/// data ([`crate::install_panic_hook`]). The level comes from `RUST_LOG` (default `info`).
/// Calling it twice is harmless.
pub fn init_tracing(format: LogFormat) {
    crate::install_panic_hook();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

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

/// Checks `RUST_LOG`: unset or blank means `info`; anything else must parse as a filter. A
/// service calls it with its configuration, so that a bad filter stops it before it serves
/// rather than leaving it without the logs its operators expect.
pub fn check_log_filter(env: &Env<'_>) -> Result<(), ConfigError> {
    match env.get("RUST_LOG").filter(|v| !v.trim().is_empty()) {
        None => Ok(()),
        Some(value) => EnvFilter::try_new(value.trim())
            .map(drop)
            .map_err(|e| ConfigError::new("RUST_LOG", format!("is not a log filter: {e}"))),
    }
}

/// The filter `RUST_LOG` names, `info` when it is unset or blank. An empty filter would log
/// nothing at all, panics included, so blank is read as unset; a filter that does not parse
/// (for tools that did not check it with [`check_log_filter`]) logs at `info` and says so.
fn log_filter() -> EnvFilter {
    match std::env::var("RUST_LOG") {
        Ok(value) if !value.trim().is_empty() => {
            EnvFilter::try_new(value.trim()).unwrap_or_else(|e| {
                eprintln!("RUST_LOG is not a log filter ({e}); logging at info");
                EnvFilter::new("info")
            })
        }
        _ => EnvFilter::new("info"),
    }
}

/// Installs the global subscriber, and the panic hook that logs through it without a panic's
/// data ([`crate::install_panic_hook`]). The level comes from `RUST_LOG` (default `info`).
/// Calling it twice is harmless.
pub fn init_tracing(format: LogFormat) {
    crate::install_panic_hook();
    let filter = log_filter();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_filter_is_unset_and_a_bad_one_is_a_configuration_error() {
        let with =
            |value: &'static str| move |name: &str| (name == "RUST_LOG").then(|| value.to_owned());
        for fine in ["", "   ", "info", "warn,tokens_api=debug"] {
            assert!(check_log_filter(&Env::new(&with(fine))).is_ok(), "{fine:?}");
        }
        let refused = check_log_filter(&Env::new(&with("tokens_api=loud"))).unwrap_err();
        assert_eq!(refused.variable, "RUST_LOG");
    }
}

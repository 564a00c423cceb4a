//! Configuration of `tokens-api`, read once from the environment at start-up.
//!
//! | Variable | Default | Meaning |
//! |---|---|---|
//! | `BIND_ADDR` | `127.0.0.1:8080` | Address to listen on. |
//! | `HTTP_WORKERS` | CPUs | Worker threads. |
//! | `DATABASE_URL` | required | Postgres URL. |
//! | `DATABASE_POOL_SIZE` | 16 | Connections in the pool. |
//! | `DATABASE_STATEMENT_TIMEOUT_MS` | 5000 | `statement_timeout` and `idle_in_transaction_session_timeout` of every connection. |
//! | `DATABASE_WAIT_TIMEOUT_MS` | 5000 | Longest wait for a pooled connection. |
//! | `DPS_MIGRATE_ON_START` | true | Apply pending migrations (under an advisory lock) first. |
//! | `DPS_AUTH_JWKS` | required | File path or http(s) URL of the trusted JWKS. |
//! | `DPS_AUTH_ISSUER` | required | Required `iss` of access tokens. |
//! | `DPS_AUTH_AUDIENCE` | required | Required `aud` of access tokens. |
//! | `DPS_MASTER_KEY` / `DPS_MASTER_KEY_FILE` | one required | Base64 of 32 bytes: wraps tenant data keys. |
//! | `DPS_SUPPORTED_SDK_MAJORS` | `1` | Comma-separated SDK majors accepted. |
//! | `MAX_BODY_BYTES` | 2097152 | Largest request body. |
//! | `DPS_BODY_TIMEOUT_SECONDS` | 60 | The longest a request body may take to arrive (408 after). |
//! | `DPS_GRANT_KEY_VERSION` | 1 | Which derived Ed25519 key signs grants; the version before it still verifies. |
//! | `DPS_RATE_LIMITS` | the spec's | `endpoint=USER/TENANT` requests per minute, comma-separated, over the defaults. |
//! | `DPS_ANONYMOUS_RATE_LIMIT` | 120 | Requests per minute per client address whose caller is not known (no or a bad credential, an unknown route). |
//! | `DPS_ROLE_REQUIREMENTS` | the spec's, admin for policy writes | `group=role` or `group=any` per endpoint group (docs/configuration.md). |
//! | `DPS_ALLOW_PRIVATE_NETWORKS` | false | `true` lets the JWKS URL be a loopback or private address (and http): tests and development only. |
//! | `METRICS_BIND_ADDR` | unset | Address of `GET /metrics`, apart from the public port. |
//! | `LOG_FORMAT` | `text` | `text` or `json`. |
//! | `RUST_LOG` | `info` | Log filter; blank is unset, one that does not parse stops the service. |

use boot::{ConfigError, Env};
use dps_http::CommonConfig;

/// Everything `tokens-api` reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    pub common: CommonConfig,
    /// `DPS_GRANT_KEY_VERSION`: bump it on every replica to rotate the grant signing key.
    pub grant_key_version: u32,
    /// `DPS_RATE_LIMITS`.
    pub rate_limits: limits::RateLimits,
    /// `DPS_ANONYMOUS_RATE_LIMIT`.
    pub anonymous_rate_limit: u32,
}

impl Config {
    pub const SERVICE: &'static str = "tokens-api";
    pub const DEFAULT_BIND: &'static str = "127.0.0.1:8080";

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env::new(lookup);
        Ok(Self {
            common: CommonConfig::from_env(&env, Self::SERVICE, Self::DEFAULT_BIND)?,
            grant_key_version: match env.parsed("DPS_GRANT_KEY_VERSION", 1u32)? {
                0 => {
                    return Err(ConfigError {
                        variable: "DPS_GRANT_KEY_VERSION",
                        problem: "must be 1 or more".into(),
                    });
                }
                v => v,
            },
            rate_limits: limits::RateLimits::parse(&env.get("DPS_RATE_LIMITS").unwrap_or_default())
                .map_err(|e| ConfigError {
                    variable: "DPS_RATE_LIMITS",
                    problem: e.to_string(),
                })?,
            anonymous_rate_limit: match env.parsed("DPS_ANONYMOUS_RATE_LIMIT", 120u32)? {
                0 => {
                    return Err(ConfigError::new(
                        "DPS_ANONYMOUS_RATE_LIMIT",
                        "must be 1 or more",
                    ));
                }
                n => n,
            },
        })
    }
}

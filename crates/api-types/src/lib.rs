#![doc = include_str!("../README.md")]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `Debug` that names every field but shows the secret ones as `<redacted>`: the types that
/// carry a value, a grant or a credential must not put it in a debug log line, whoever writes
/// one later.
macro_rules! redacted_debug {
    ($type:ident { $($shown:ident),* ; $($hidden:ident),+ }) => {
        impl std::fmt::Debug for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($type))
                    $(.field(stringify!($shown), &self.$shown))*
                    $(.field(stringify!($hidden), &"<redacted>"))+
                    .finish()
            }
        }
    };
}

pub mod classifiers;
pub mod connectors;
pub mod governance;
pub mod remediation;
pub mod scans;
pub mod settings;
pub mod tokens;
pub mod values;

/// Area A error body: `{"error": {...}}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The `error` object of an Area A error body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Machine-readable code, for example `INVALID_INPUT` or `GRANT_EXPIRED`.
    pub code: String,
    /// One sentence for a human.
    pub message: String,
    /// What exactly was wrong, when there is more to say; empty otherwise.
    pub detail: String,
    pub retryable: bool,
    /// Present on rate limiting.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub retry_after_seconds: Option<u64>,
    /// Present on 426 Upgrade Required: the SDK major versions this deployment accepts.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub supported_major_versions: Option<Vec<u64>>,
}

/// `metadata` of every Area B response.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Metadata {
    pub request_id: String,
    /// RFC 3339 time the response was made.
    pub timestamp: String,
}

/// Cursor pagination of Area B lists (and of the vault list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Pagination {
    pub limit: u32,
    pub has_more: bool,
    /// Opaque; present when `has_more` is true.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_cursor: Option<String>,
}

/// The query of an Area B list that takes only its page: `GET /governance/channels`,
/// `GET /classifiers`, `GET /scans/:id/workers`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// 1 to 100, default 20.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// Area B success envelope.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Envelope<T> {
    /// Always `success`.
    pub status: String,
    pub data: T,
    pub metadata: Metadata,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pagination: Option<Pagination>,
}

/// Area B error envelope.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorEnvelope {
    /// Always `error`.
    pub status: String,
    pub error: EnvelopeError,
    pub metadata: Metadata,
}

/// The `error` object of the Area B error envelope.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EnvelopeError {
    pub code: String,
    pub message: String,
    /// Structured detail, for example the invalid fields. An empty object when there is none.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

/// Readiness of a service and of each component it needs.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok` when every check passes, else `unavailable`.
    pub status: String,
    pub service: String,
    pub version: String,
    pub checks: BTreeMap<String, Check>,
    /// tokens-api only: whether the kill switch stops tokenize, grant and detokenize.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kill_switch: Option<KillSwitchReport>,
}

/// The kill switch as health reports it. Tenant names are not disclosed; only how many
/// tenants are stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KillSwitchReport {
    /// Every tenant is stopped.
    pub global: bool,
    /// How many tenants are stopped one by one.
    pub tenants_stopped: usize,
}

/// One component's readiness.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Check {
    /// `ok` or `failing`.
    pub status: String,
    /// Why it is failing, in operator terms. Never holds a secret.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub latency_ms: Option<u64>,
}

impl Check {
    pub fn ok(latency_ms: Option<u64>) -> Self {
        Self {
            status: "ok".into(),
            detail: None,
            latency_ms,
        }
    }

    pub fn failing(detail: impl Into<String>) -> Self {
        Self {
            status: "failing".into(),
            detail: Some(detail.into()),
            latency_ms: None,
        }
    }

    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every type that carries a value, a grant or a credential shows it as `<redacted>`.
    #[test]
    fn debug_never_shows_a_secret() {
        const SECRET: &str = "123-45-6789-secret";
        let shown = [
            format!(
                "{:?}",
                tokens::TokenizeItem {
                    value: SECRET.into(),
                    pii_type: "us_ssn".into(),
                    mode: None,
                }
            ),
            format!(
                "{:?}",
                tokens::GrantResponse {
                    grant_jwt: SECRET.into(),
                    expires_in_seconds: 300,
                    trace_id: "t".into(),
                }
            ),
            format!(
                "{:?}",
                tokens::DetokenizeRequest {
                    tokens: vec!["id".into()],
                    grant_jwt: SECRET.into(),
                }
            ),
            format!(
                "{:?}",
                tokens::DetokenizeResult {
                    token_id: "id".into(),
                    status: "GRANTED".into(),
                    value: Some(SECRET.into()),
                    revoked_at: None,
                    currency: None,
                }
            ),
            format!(
                "{:?}",
                scans::DeploymentEnvironment {
                    SCAN_ID: "s".into(),
                    COORDINATOR_URL: "https://dps.example".into(),
                    AUTH_TOKEN: SECRET.into(),
                }
            ),
        ];
        for text in shown {
            assert!(!text.contains(SECRET), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
    }
}

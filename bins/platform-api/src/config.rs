//! Configuration of `platform-api`, read once from the environment at start-up.
//!
//! | Variable | Default | Meaning |
//! |---|---|---|
//! | `BIND_ADDR` | `127.0.0.1:8081` | Address to listen on. |
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
//! | `DPS_COSIGNING_CLIENT_CERT_FILE` | unset | PEM client certificate the platform presents to tenants' co-signing services. |
//! | `DPS_COSIGNING_CLIENT_KEY_FILE` | unset | Its PEM private key. Both or neither; with neither, co-signing stays `disabled`. |
//! | `DPS_COSIGNING_CA_FILE` | unset | PEM bundle of CA certificates trusted for co-signing services, on top of the system's. |
//! | `DPS_SCAN_TIER` | `standard` | Scan tier: `starter`, `standard` or `enterprise`. |
//! | `DPS_SCAN_WORKERS` | 4 | Scan worker tasks in this process. |
//! | `DPS_SCAN_LEASE_SECONDS` | 30 | Lease of each chunk a worker of this process claims (1 to 3600): how long a chunk whose worker died waits before another takes it. |
//! | `DPS_SCAN_ENUMERATIONS` | 2 | Scan listings this process runs at once (1 to 64); each holds a database connection while it lists. |
//! | `DPS_SCAN_RESOURCE_RETENTION_DAYS` | 30 | Days an ended scan keeps its per-object rows (0 to 3650; 0 keeps them for good). Counts and findings stay. |
//! | `DPS_RESOLVED_FINDINGS_RETENTION_DAYS` | 90 | Days a resolved finding is kept (0, or 8 to 3650; 0 keeps them for good). |
//! | `DPS_SCAN_WORKER_IMAGE` | `dps/scan-worker:<version>` | Image named in deployment configs. |
//! | `DPS_COORDINATOR_URL` | the request's origin | URL named in deployment configs. |
//! | cloud variables | | See docs/configuration.md, "Cloud access". |
//! | `DPS_ALLOW_PRIVATE_NETWORKS` | false | `true` lets alert webhooks, co-signing services and the identity provider's JWKS use loopback or private addresses (and http): tests and development only. |
//! | `DPS_ROLE_REQUIREMENTS` | the spec's, admin where it is silent | `group=role` or `group=any` per endpoint group (docs/configuration.md). |
//! | `DPS_RECONCILE_MAX_ACTIONS` | 1000 | Blast-radius limit of an enforced reconciliation that sets none. |
//! | `DPS_REMEDIATION_EXECUTOR` | true | Whether this process executes remediation requests. |
//! | `DPS_REMEDIATION_TASKS` | 8 | Remediation requests executed at once, 1 to 64. |
//! | `DPS_REMEDIATION_CRASH_AT` | unset | Crash-safety tests only: abort after the named step. |
//! | `METRICS_BIND_ADDR` | unset | Address of `GET /metrics`, apart from the public port. |
//! | `LOG_FORMAT` | `text` | `text` or `json`. |
//! | `RUST_LOG` | `info` | Log filter; blank is unset, one that does not parse stops the service. |

use std::path::{Path, PathBuf};

use boot::{ConfigError, Env};
use dps_http::CommonConfig;

/// Everything `platform-api` reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    pub common: CommonConfig,
    /// The client certificate for co-signing, when the operator has provisioned one.
    pub cosigning_client: Option<CosigningClient>,
    /// `DPS_COSIGNING_CA_FILE`: extra roots trusted for co-signing services' certificates (a
    /// tenant's private CA, a test CA).
    pub cosigning_ca: Option<PathBuf>,
    /// Where the cloud services live and the platform's own cloud identities.
    pub cloud: connectors::CloudEnv,
    /// `DPS_SCAN_TIER`: the defaults and ceilings of max_files and max_workers.
    pub scan_tier: scans::Tier,
    /// `DPS_SCAN_WORKERS`: scan worker tasks in this process (0 leaves scanning to
    /// `scan-worker` processes; queued scans are still started and enumerated here).
    pub scan_workers: usize,
    /// `DPS_SCAN_LEASE_SECONDS`: the lease of each chunk this process's workers claim.
    pub scan_lease_seconds: i64,
    /// `DPS_SCAN_ENUMERATIONS`: scan listings this process runs at once (default 2, 1 to
    /// 64). Each holds a pooled connection while it lists; queued scans wait for a free one.
    pub scan_enumerations: usize,
    /// `DPS_SCAN_RESOURCE_RETENTION_DAYS`: days an ended scan keeps its per-object rows
    /// (`scans::retention`); `None` (0) keeps them.
    pub scan_resource_retention_days: Option<u32>,
    /// `DPS_RESOLVED_FINDINGS_RETENTION_DAYS`: days a resolved finding is kept
    /// (`scans::retention`); `None` (0) keeps them.
    pub resolved_findings_retention_days: Option<u32>,
    /// `DPS_SCAN_WORKER_IMAGE`: the container image deployment configs name.
    pub scan_worker_image: String,
    /// `DPS_COORDINATOR_URL`: this service's URL as workers elsewhere reach it; without it,
    /// deployment configs name the origin of the request (the gateway's, behind one).
    pub coordinator_url: Option<String>,
    /// `DPS_ALLOW_PRIVATE_NETWORKS`: the rules for URLs called on a tenant's behalf.
    pub egress: egress::Egress,
    /// `DPS_RECONCILE_MAX_ACTIONS`: object-changing actions an enforced reconciliation may
    /// newly plan when its request sets no limit (default 1000, at most 1,000,000).
    pub reconcile_max_actions: u32,
    /// `DPS_REMEDIATION_EXECUTOR`: whether this process executes remediation requests (default
    /// true). With false it still plans them; another replica executes them.
    pub remediation_executor: bool,
    /// `DPS_REMEDIATION_TASKS`: requests this process executes at once (default 8, 1 to 64).
    pub remediation_tasks: usize,
    /// `DPS_REMEDIATION_CRASH_AT`: for crash-safety tests only, the remediation step after
    /// which the process aborts (`copied`, `snapshotted`, `replaced`, `written`, `receipted`).
    pub remediation_crash_at: Option<String>,
    /// `DPS_CONSOLE_*`: the console's OpenID Connect client, when sign-in is configured.
    pub console_sign_in: Option<ConsoleSignIn>,
}

/// Where the platform's co-signing client certificate and key live. Only the paths are kept:
/// the material is read to check it, and never logged, stored or returned.
#[derive(Debug, Clone)]
pub struct CosigningClient {
    pub certificate: PathBuf,
    pub private_key: PathBuf,
}

/// The variables of the co-signing client.
pub(crate) const COSIGNING_CERT: &str = "DPS_COSIGNING_CLIENT_CERT_FILE";
pub(crate) const COSIGNING_KEY: &str = "DPS_COSIGNING_CLIENT_KEY_FILE";
pub(crate) const COSIGNING_CA: &str = "DPS_COSIGNING_CA_FILE";

impl CosigningClient {
    fn from_env(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        const CERT: &str = COSIGNING_CERT;
        const KEY: &str = COSIGNING_KEY;
        let (certificate, private_key) = match (env.get(CERT), env.get(KEY)) {
            (None, None) => return Ok(None),
            (Some(c), Some(k)) => (PathBuf::from(c), PathBuf::from(k)),
            (Some(_), None) => return Err(missing_pair(KEY, CERT)),
            (None, Some(_)) => return Err(missing_pair(CERT, KEY)),
        };
        check_pem(CERT, &certificate, "CERTIFICATE")?;
        check_pem(KEY, &private_key, "PRIVATE KEY")?;
        Ok(Some(Self {
            certificate,
            private_key,
        }))
    }
}

impl Config {
    /// The client of tenants' co-signing services: the certificate and key are read here, once,
    /// handed to the TLS stack and dropped; the problem reported names the variable, never the
    /// material.
    pub fn cosigner(&self) -> Result<remediation::Cosigner, ConfigError> {
        use remediation::{Cosigner, CosignerBuildError};
        let identity = match &self.cosigning_client {
            None => None,
            Some(client) => {
                let mut pem = read(COSIGNING_CERT, &client.certificate)?;
                pem.push(b'\n');
                pem.extend(read(COSIGNING_KEY, &client.private_key)?);
                Some(pem)
            }
        };
        let roots = match &self.cosigning_ca {
            None => None,
            Some(path) => Some(read(COSIGNING_CA, path)?),
        };
        Cosigner::new(identity.as_deref(), roots.as_deref(), self.egress).map_err(|e| {
            let variable = match e {
                CosignerBuildError::Roots => COSIGNING_CA,
                CosignerBuildError::Identity => COSIGNING_CERT,
            };
            ConfigError::new(variable, e.to_string())
        })
    }
}

fn read(variable: &'static str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| ConfigError {
        variable,
        problem: format!("cannot read {}: {}", path.display(), e.kind()),
    })
}

fn missing_pair(missing: &'static str, given: &str) -> ConfigError {
    ConfigError {
        variable: missing,
        problem: format!("must be set together with {given}"),
    }
}

/// Checks that `path` holds a PEM block whose label ends with `label` ("CERTIFICATE",
/// "PRIVATE KEY", which also matches "EC PRIVATE KEY" and "RSA PRIVATE KEY"). The problem
/// reported never includes the file's content.
fn check_pem(variable: &'static str, path: &Path, label: &str) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        variable,
        problem: format!("cannot read {}: {}", path.display(), e.kind()),
    })?;
    let has_block = text.lines().any(|line| {
        line.trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
            .is_some_and(|found| found.ends_with(label))
    });
    if has_block {
        Ok(())
    } else {
        Err(ConfigError {
            variable,
            problem: format!("{} holds no PEM {label} block", path.display()),
        })
    }
}

impl Config {
    pub const SERVICE: &'static str = "platform-api";
    pub const DEFAULT_BIND: &'static str = "127.0.0.1:8081";

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env::new(lookup);
        let common = CommonConfig::from_env(&env, Self::SERVICE, Self::DEFAULT_BIND)?;
        // One process serves every tenant: each GCP connector presents its own tenant's subject.
        let mut cloud = connectors::CloudEnv::from_vars(|k| lookup(k).filter(|v| !v.is_empty()))
            .map_err(crate::cloud_error)?;
        cloud
            .gcp
            .for_tenants(&common.master_key)
            .map_err(crate::cloud_error)?;
        Ok(Self {
            common,
            cosigning_client: CosigningClient::from_env(&env)?,
            cosigning_ca: match env.get(COSIGNING_CA) {
                None => None,
                Some(path) => {
                    let path = PathBuf::from(path.trim());
                    check_pem(COSIGNING_CA, &path, "CERTIFICATE")?;
                    Some(path)
                }
            },
            cloud,
            scan_tier: match env.get("DPS_SCAN_TIER") {
                None => scans::Tier::standard(),
                Some(name) => scans::Tier::named(name.trim()).ok_or_else(|| ConfigError {
                    variable: "DPS_SCAN_TIER",
                    problem: format!(
                        "must be one of {}",
                        scans::options::TIERS.map(|t| t.name).join(", ")
                    ),
                })?,
            },
            scan_workers: env.parsed("DPS_SCAN_WORKERS", 4usize)?,
            scan_lease_seconds: {
                let seconds = env.parsed("DPS_SCAN_LEASE_SECONDS", scans::worker::LEASE_SECONDS)?;
                if !(1..=3600).contains(&seconds) {
                    return Err(ConfigError::new(
                        "DPS_SCAN_LEASE_SECONDS",
                        "must be 1 to 3600",
                    ));
                }
                seconds
            },
            scan_enumerations: {
                let n = env.parsed("DPS_SCAN_ENUMERATIONS", 2usize)?;
                if !(1..=64).contains(&n) {
                    return Err(ConfigError::new("DPS_SCAN_ENUMERATIONS", "must be 1 to 64"));
                }
                n
            },
            scan_resource_retention_days: {
                let days = env.parsed(
                    "DPS_SCAN_RESOURCE_RETENTION_DAYS",
                    scans::retention::DEFAULT_DAYS,
                )?;
                if days > 3650 {
                    return Err(ConfigError::new(
                        "DPS_SCAN_RESOURCE_RETENTION_DAYS",
                        "must be 0 to 3650",
                    ));
                }
                (days > 0).then_some(days)
            },
            resolved_findings_retention_days: {
                let days = env.parsed(
                    "DPS_RESOLVED_FINDINGS_RETENTION_DAYS",
                    scans::retention::DEFAULT_RESOLVED_FINDINGS_DAYS,
                )?;
                if days != 0
                    && !(scans::retention::MIN_RESOLVED_FINDINGS_DAYS..=3650).contains(&days)
                {
                    return Err(ConfigError::new(
                        "DPS_RESOLVED_FINDINGS_RETENTION_DAYS",
                        "must be 0 (keep them), or 8 to 3650: an undo within the longest rollback window (168 hours) opens its findings again",
                    ));
                }
                (days > 0).then_some(days)
            },
            egress: egress::Egress::from_env(&env)?,
            reconcile_max_actions: {
                let max = env.parsed(
                    "DPS_RECONCILE_MAX_ACTIONS",
                    governance::reconcile::DEFAULT_MAX_ACTIONS,
                )?;
                if max > governance::reconcile::MAX_MAX_ACTIONS {
                    return Err(ConfigError {
                        variable: "DPS_RECONCILE_MAX_ACTIONS",
                        problem: "must be at most 1000000".into(),
                    });
                }
                max
            },
            remediation_executor: env.parsed("DPS_REMEDIATION_EXECUTOR", true)?,
            remediation_tasks: {
                let tasks = env.parsed("DPS_REMEDIATION_TASKS", 8usize)?;
                if !(1..=64).contains(&tasks) {
                    return Err(ConfigError {
                        variable: "DPS_REMEDIATION_TASKS",
                        problem: "must be 1 to 64".into(),
                    });
                }
                tasks
            },
            console_sign_in: ConsoleSignIn::from_env(&env)?,
            remediation_crash_at: match env.get("DPS_REMEDIATION_CRASH_AT") {
                None => None,
                Some(point) => {
                    const POINTS: [&str; 5] =
                        ["copied", "snapshotted", "replaced", "written", "receipted"];
                    let point = point.trim();
                    if !POINTS.contains(&point) {
                        return Err(ConfigError {
                            variable: "DPS_REMEDIATION_CRASH_AT",
                            problem: format!("must be one of {}", POINTS.join(", ")),
                        });
                    }
                    Some(point.to_owned())
                }
            },
            scan_worker_image: env
                .get("DPS_SCAN_WORKER_IMAGE")
                .map(|v| v.trim().to_owned())
                .unwrap_or_else(|| format!("dps/scan-worker:{}", env!("CARGO_PKG_VERSION"))),
            coordinator_url: match env.get("DPS_COORDINATOR_URL") {
                None => None,
                Some(url) => {
                    let url = url.trim().trim_end_matches('/');
                    if !(url.starts_with("https://") || url.starts_with("http://")) {
                        return Err(ConfigError {
                            variable: "DPS_COORDINATOR_URL",
                            problem: "must be an http or https URL".into(),
                        });
                    }
                    Some(url.to_owned())
                }
            },
        })
    }
}

/// The console as an OpenID Connect client of the identity provider (`DPS_AUTH_ISSUER`).
#[derive(Clone)]
pub struct ConsoleSignIn {
    /// `DPS_CONSOLE_CLIENT_ID`: turns the console's sign-in on.
    pub client_id: String,
    /// `DPS_CONSOLE_CLIENT_SECRET` or `DPS_CONSOLE_CLIENT_SECRET_FILE`: for a confidential
    /// client; a public one has none and relies on PKCE.
    pub client_secret: Option<String>,
    /// `DPS_CONSOLE_URL`: the console's address as browsers reach it (`…/console`); the
    /// redirect URI registered at the provider is this plus `/auth/callback`.
    pub url: String,
    /// `DPS_CONSOLE_SCOPES` (default `openid`).
    pub scopes: String,
    /// `DPS_CONSOLE_RESOURCE`: the resource indicator naming the API, when the provider
    /// issues access tokens per resource.
    pub resource: Option<String>,
}

/// The secret is left out.
impl std::fmt::Debug for ConsoleSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSignIn")
            .field("client_id", &self.client_id)
            .field("url", &self.url)
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ConsoleSignIn {
    fn from_env(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        let Some(client_id) = env
            .get("DPS_CONSOLE_CLIENT_ID")
            .map(|v| v.trim().to_owned())
        else {
            return Ok(None);
        };
        let url = env.required("DPS_CONSOLE_URL")?.trim().to_owned();
        let parsed = url::Url::parse(&url).map_err(|_| ConfigError {
            variable: "DPS_CONSOLE_URL",
            problem: "must be an absolute URL ending in /console".into(),
        })?;
        let loopback = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        if !parsed.path().trim_end_matches('/').ends_with("/console")
            || parsed.query().is_some()
            || parsed.fragment().is_some()
            || (parsed.scheme() != "https" && !(parsed.scheme() == "http" && loopback))
        {
            return Err(ConfigError {
                variable: "DPS_CONSOLE_URL",
                problem: "must be an https URL (http only on localhost) ending in /console, \
                          without a query"
                    .into(),
            });
        }
        let client_secret = match (
            env.get("DPS_CONSOLE_CLIENT_SECRET"),
            env.get("DPS_CONSOLE_CLIENT_SECRET_FILE"),
        ) {
            (Some(secret), _) => Some(secret.trim().to_owned()),
            (None, Some(path)) => Some(
                std::fs::read_to_string(path.trim())
                    .map_err(|e| ConfigError {
                        variable: "DPS_CONSOLE_CLIENT_SECRET_FILE",
                        problem: format!("cannot be read: {}", e.kind()),
                    })?
                    .trim()
                    .to_owned(),
            ),
            (None, None) => None,
        };
        Ok(Some(Self {
            client_id,
            client_secret,
            url: url.trim_end_matches('/').to_owned(),
            scopes: env
                .get("DPS_CONSOLE_SCOPES")
                .map_or_else(|| "openid".to_owned(), |s| s.trim().to_owned()),
            resource: env.get("DPS_CONSOLE_RESOURCE").map(|r| r.trim().to_owned()),
        }))
    }
}

//! What both services share at start-up: their common configuration, their state, the server
//! itself and the readiness report.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use api_types::{Check, Health};
use auth::{AuthConfig, JwksSource, JwtVerifier};
use keys::MasterKey;

use crate::roles::RoleRequirements;

use boot::{ConfigError, Env, LogFormat};

/// Configuration both services read. Each binary's `Config` embeds it; the variables are listed
/// in its module doc and in docs/configuration.md.
#[derive(Debug, Clone)]
pub struct CommonConfig {
    /// `BIND_ADDR`.
    pub bind_addr: SocketAddr,
    /// `HTTP_WORKERS`, default: the number of CPUs.
    pub http_workers: usize,
    /// `DATABASE_URL` and the `DATABASE_*` pool settings.
    pub database: db::PoolConfig,
    /// `DPS_MIGRATE_ON_START` (default true): apply pending migrations before serving.
    pub migrate_on_start: bool,
    /// `DPS_AUTH_JWKS`, `DPS_AUTH_ISSUER`, `DPS_AUTH_AUDIENCE`.
    pub auth: AuthConfig,
    /// `DPS_MASTER_KEY` (base64 of 32 bytes) or `DPS_MASTER_KEY_FILE`.
    pub master_key: Arc<MasterKey>,
    /// `DPS_SUPPORTED_SDK_MAJORS`, comma-separated, default `1`.
    pub supported_sdk_majors: Vec<u64>,
    /// `MAX_BODY_BYTES`, default 2 MiB.
    pub max_body_bytes: usize,
    /// `DPS_BODY_TIMEOUT_SECONDS`, default 60: the longest a request body may take to arrive.
    pub body_timeout: Duration,
    /// `LOG_FORMAT`: `text` (default) or `json`.
    pub log_format: LogFormat,
    /// `DPS_ROLE_REQUIREMENTS`: endpoint groups' required roles (see [`crate::roles`]).
    pub roles: RoleRequirements,
    /// `METRICS_BIND_ADDR`: where `GET /metrics` is served; not at all when unset.
    pub metrics_bind_addr: Option<SocketAddr>,
}

impl CommonConfig {
    pub fn from_env(env: &Env<'_>, service: &str, default_bind: &str) -> Result<Self, ConfigError> {
        let bind_addr = env
            .get("BIND_ADDR")
            .unwrap_or_else(|| default_bind.to_owned())
            .parse()
            .map_err(|e| ConfigError {
                variable: "BIND_ADDR",
                problem: format!("{e}"),
            })?;
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let master_key = MasterKey::from_env(env)?;
        let supported_sdk_majors = env
            .get("DPS_SUPPORTED_SDK_MAJORS")
            .unwrap_or_else(|| "1".into())
            .split(',')
            .map(|m| m.trim().parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ConfigError {
                variable: "DPS_SUPPORTED_SDK_MAJORS",
                problem: e.to_string(),
            })?;
        if supported_sdk_majors.is_empty() {
            return Err(ConfigError {
                variable: "DPS_SUPPORTED_SDK_MAJORS",
                problem: "must name a major".into(),
            });
        }
        Ok(Self {
            bind_addr,
            http_workers: env.parsed("HTTP_WORKERS", cpus)?,
            database: db::PoolConfig {
                url: env.required("DATABASE_URL")?,
                max_size: env.parsed("DATABASE_POOL_SIZE", 16)?,
                statement_timeout: Duration::from_millis(
                    env.parsed("DATABASE_STATEMENT_TIMEOUT_MS", 5_000)?,
                ),
                application_name: service.to_owned(),
                wait_timeout: Duration::from_millis(env.parsed("DATABASE_WAIT_TIMEOUT_MS", 5_000)?),
            },
            migrate_on_start: env.parsed("DPS_MIGRATE_ON_START", true)?,
            auth: AuthConfig {
                jwks: JwksSource::parse(&env.required("DPS_AUTH_JWKS")?),
                issuer: env.required("DPS_AUTH_ISSUER")?,
                audience: env.required("DPS_AUTH_AUDIENCE")?,
                egress: egress::Egress::from_env(env)?,
            },
            master_key: Arc::new(master_key),
            supported_sdk_majors,
            max_body_bytes: env.parsed("MAX_BODY_BYTES", 2 * 1024 * 1024)?,
            body_timeout: body_timeout(env)?,
            log_format: {
                boot::check_log_filter(env)?;
                LogFormat::from_env(env)?
            },
            metrics_bind_addr: env
                .get("METRICS_BIND_ADDR")
                .filter(|v| !v.trim().is_empty())
                .map(|v| {
                    v.trim().parse().map_err(|e| ConfigError {
                        variable: "METRICS_BIND_ADDR",
                        problem: format!("must be an address such as 127.0.0.1:9090: {e}"),
                    })
                })
                .transpose()?,
            roles: RoleRequirements::parse(&env.get("DPS_ROLE_REQUIREMENTS").unwrap_or_default())
                .map_err(|problem| ConfigError {
                variable: "DPS_ROLE_REQUIREMENTS",
                problem,
            })?,
        })
    }
}

/// `DPS_BODY_TIMEOUT_SECONDS`: 1 to 3600, default 60.
fn body_timeout(env: &Env<'_>) -> Result<Duration, ConfigError> {
    let seconds: u64 = env.parsed("DPS_BODY_TIMEOUT_SECONDS", 60)?;
    if !(1..=3600).contains(&seconds) {
        return Err(ConfigError {
            variable: "DPS_BODY_TIMEOUT_SECONDS",
            problem: "must be 1 to 3600".into(),
        });
    }
    Ok(Duration::from_secs(seconds))
}

/// What every request handler of either service can reach.
#[derive(Clone)]
pub struct ServiceState {
    pub service: &'static str,
    pub pool: db::Pool,
    pub verifier: Arc<JwtVerifier>,
    pub master_key: Arc<MasterKey>,
    pub supported_sdk_majors: Vec<u64>,
    pub max_body_bytes: usize,
    /// The longest a request body may take to arrive.
    pub body_timeout: Duration,
    /// Each endpoint group's required role.
    pub roles: Arc<RoleRequirements>,
}

impl std::fmt::Debug for ServiceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceState")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl ServiceState {
    /// Migrates (when configured), builds the pool and loads the signing keys.
    ///
    /// A pending migration that cannot be applied stops the start-up: serving an old schema is
    /// worse than not serving. Without migrations to run, a database or identity provider that
    /// is down does not stop the service: it reports itself unready on `/health` until they
    /// answer, so an orchestrator's readiness probe holds traffic back.
    pub async fn bootstrap(service: &'static str, config: &CommonConfig) -> anyhow::Result<Self> {
        if config.migrate_on_start {
            db::migrate(&config.database.url).await?;
        }
        let pool = db::build_pool(&config.database)?;
        let verifier = Arc::new(JwtVerifier::new(config.auth.clone()));
        if let Err(e) = verifier.refresh().await {
            tracing::error!(error = %e, "starting without signing keys; /health reports unready");
        }
        Ok(Self {
            service,
            pool,
            verifier,
            master_key: config.master_key.clone(),
            supported_sdk_majors: config.supported_sdk_majors.clone(),
            max_body_bytes: config.max_body_bytes,
            body_timeout: config.body_timeout,
            roles: Arc::new(config.roles.clone()),
        })
    }

    /// A pooled connection, or 503 when the database does not answer in time.
    pub async fn conn(&self) -> Result<db::PooledConnection, crate::error::ApiError> {
        let started = Instant::now();
        let conn = self.pool.get().await;
        crate::metrics::pool_wait(started.elapsed(), conn.is_err());
        conn.map_err(|_| crate::error::ApiError::unavailable("the database is not answering"))
    }

    /// Checks every component the service needs and returns the status to answer with.
    pub async fn readiness(&self) -> (StatusCode, Health) {
        let mut checks = std::collections::BTreeMap::new();
        let started = Instant::now();
        let database =
            match tokio::time::timeout(Duration::from_secs(2), db::check_ready(&self.pool)).await {
                Ok(Ok(())) => Check::ok(Some(started.elapsed().as_millis() as u64)),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "readiness: database check failed");
                    Check::failing("the database is not answering")
                }
                Err(_) => Check::failing("the database did not answer within 2 s"),
            };
        checks.insert("database".to_owned(), database);
        // The master key is parsed at start-up, so its presence is given; the signing keys of
        // the identity provider can fail to load and are checked here.
        let key_material = if self.verifier.ensure_keys().await {
            Check::ok(None)
        } else {
            Check::failing("the identity provider's signing keys (DPS_AUTH_JWKS) are not loaded")
        };
        checks.insert("key_material".to_owned(), key_material);
        let ready = checks.values().all(Check::is_ok);
        let health = Health {
            status: if ready { "ok" } else { "unavailable" }.into(),
            service: self.service.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            checks,
            kill_switch: None,
        };
        let status = if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        (status, health)
    }
}

/// Binds `addr`, reporting the address actually bound (useful with port 0).
pub fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// What distinguishes one service from the other. Everything else (extractor configs, the edge
/// middleware, the JSON 404, the server) is shared and lives here.
pub trait ServiceSpec: 'static {
    /// What the service's handlers need beyond [`ServiceState`], built from its own `Config`
    /// and registered as `web::Data<Extra>`.
    type Extra: Clone + Send + Sync + 'static;
    /// The service's name, as logs and `application_name` show it.
    const NAME: &'static str;
    /// The API area, which decides the error shape.
    const AREA: crate::error::Area;
    /// Every route of the service: the one list both the server and the OpenAPI test read.
    fn register(routes: &mut crate::routes::Routes<'_>);

    /// Starts the service's background tasks on the current runtime, once the state is ready
    /// and before the server is built. None by default.
    fn background(_state: &ServiceState, _extra: &Self::Extra) {}

    /// The budget of requests without a known caller, for a service whose every response
    /// carries rate-limit headers. None by default.
    fn anonymous_budget(_extra: &Self::Extra) -> Option<Arc<crate::ratelimit::AnonymousBudget>> {
        None
    }

    /// Where the service serves pages to a browser, whose errors are pages too. None by
    /// default.
    fn html_errors() -> Option<crate::edge::HtmlErrors> {
        None
    }

    /// Sets the gauges that are read by query when `/metrics` is scraped (outbox depth,
    /// remediation states). Nothing by default.
    fn sample(
        _state: ServiceState,
        _extra: Self::Extra,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }
}

/// The routes `S` registers, for tests.
pub fn route_table<S: ServiceSpec>() -> crate::routes::RouteTable {
    let mut routes = crate::routes::Routes::recording();
    S::register(&mut routes);
    routes.into_table()
}

/// Adds app data and routes: extractor configs that turn bad input into
/// [`ApiError`](crate::error::ApiError)s, the edge settings, the verifier, the pool, the state, the
/// service's routes and the JSON 404 for unknown paths. The binaries and the tests both build
/// their app through this.
pub fn configure<S: ServiceSpec>(
    state: ServiceState,
    extra: S::Extra,
) -> impl Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static {
    use actix_web::web;
    let extra = web::Data::new(extra);
    move |cfg| {
        let (json, query, path, payload) = crate::reject::body_configs(state.max_body_bytes);
        cfg.app_data(json)
            .app_data(query)
            .app_data(path)
            .app_data(payload)
            .app_data(web::Data::new(crate::edge::EdgeSettings {
                service: S::NAME,
                area: S::AREA,
                supported_sdk_majors: state.supported_sdk_majors.clone(),
                anonymous: S::anonymous_budget(&extra),
                html_errors: S::html_errors(),
            }))
            .app_data(web::Data::from(state.verifier.clone()))
            .app_data(web::Data::new(state.pool.clone()))
            .app_data(web::Data::new(state.clone()))
            .app_data(extra.clone())
            .default_service(web::to(crate::routes::not_found));
        S::register(&mut crate::routes::Routes::new(cfg));
    }
}

/// The HTTP server of `S` on an already bound listener, with the edge middleware outermost.
/// Shutdown on SIGINT/SIGTERM is graceful: in-flight requests get up to 30 seconds to finish.
pub fn http_server<S: ServiceSpec>(
    state: ServiceState,
    extra: S::Extra,
    listener: TcpListener,
    workers: usize,
) -> std::io::Result<actix_web::dev::Server> {
    use actix_web::middleware::from_fn;
    let configure = configure::<S>(state, extra);
    Ok(actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .wrap(from_fn(crate::edge::edge))
            .configure(configure.clone())
    })
    .workers(workers.max(1))
    .shutdown_timeout(30)
    .listen(listener)?
    .run())
}

/// Boots `S` from its common configuration and binds its address: the server is ready to be
/// awaited (or spawned), and the address is the one actually bound (useful with port 0).
pub async fn start<S: ServiceSpec>(
    common: &CommonConfig,
    extra: S::Extra,
) -> anyhow::Result<(actix_web::dev::Server, SocketAddr)> {
    use anyhow::Context as _;
    let state = ServiceState::bootstrap(S::NAME, common).await?;
    S::background(&state, &extra);
    if let Some(metrics_addr) = common.metrics_bind_addr {
        let (sampled_state, sampled_extra) = (state.clone(), extra.clone());
        let sampler: crate::metrics::Sampler =
            Arc::new(move || S::sample(sampled_state.clone(), sampled_extra.clone()));
        let (metrics, bound) = crate::metrics::serve(metrics_addr, state.pool.clone(), sampler)
            .with_context(|| format!("binding {}'s metrics to {metrics_addr}", S::NAME))?;
        tracing::info!(addr = %bound, service = S::NAME, "metrics listening");
        tokio::spawn(metrics);
    }
    let (listener, addr) = bind(common.bind_addr)
        .with_context(|| format!("binding {} to {}", S::NAME, common.bind_addr))?;
    let server = http_server::<S>(state, extra, listener, common.http_workers)?;
    Ok((server, addr))
}

/// Boots `S` from its common configuration and serves until told to stop.
pub async fn run<S: ServiceSpec>(common: &CommonConfig, extra: S::Extra) -> anyhow::Result<()> {
    let (server, addr) = start::<S>(common, extra).await?;
    tracing::info!(%addr, service = S::NAME, "listening");
    server.await?;
    tracing::info!(service = S::NAME, "stopped");
    Ok(())
}

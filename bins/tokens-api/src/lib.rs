#![doc = include_str!("../README.md")]

mod config;
mod errors;
mod handlers;

use std::sync::Arc;

use actix_web::http::Method;
use dps_http::ApiError;
use dps_http::{Area, Routes, ServiceSpec, on};
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};

pub use config::Config;

/// The OpenAPI 3.1 document, generated from the handlers' annotations.
#[derive(Debug, OpenApi)]
#[openapi(
    info(title = "Data Protection Service: Tokenization API", version = "1.0.0"),
    paths(
        handlers::health::health,
        handlers::openapi::openapi,
        handlers::tokenize::tokenize,
        handlers::policies::list,
        handlers::policies::create,
        handlers::policies::update,
        handlers::vault::list,
        handlers::vault::revoke,
        handlers::grants::grant,
        handlers::grants::detokenize,
        handlers::grants::audit,
        handlers::usage::usage,
    ),
    components(schemas(
        api_types::ErrorBody,
        api_types::ErrorDetail,
        api_types::Health,
        api_types::Check,
        api_types::KillSwitchReport,
        api_types::Pagination,
        api_types::tokens::TokenizeItem,
        api_types::tokens::TokenizeRequest,
        api_types::tokens::TokenizeResponse,
        api_types::tokens::TokenizeResult,
        api_types::tokens::TokenizedItem,
        api_types::tokens::FailedItem,
        api_types::tokens::ItemError,
        api_types::tokens::Fallback,
        api_types::tokens::TypeRule,
        api_types::tokens::PolicyInput,
        api_types::tokens::Policy,
        api_types::tokens::PolicyList,
        api_types::tokens::VaultEntry,
        api_types::tokens::VaultList,
        api_types::tokens::RevokeRequest,
        api_types::tokens::Revoked,
        api_types::tokens::GrantRequest,
        api_types::tokens::GrantResponse,
        api_types::tokens::DetokenizeRequest,
        api_types::tokens::DetokenizeResponse,
        api_types::tokens::DetokenizeResult,
        api_types::tokens::DetokenizationAudit,
        api_types::tokens::DetokenizationRecord,
        api_types::tokens::AuditedToken,
        api_types::tokens::Usage,
        api_types::tokens::UsageCounts,
        api_types::tokens::Quota,
    )),
    modifiers(&SecuritySchemes)
)]
pub struct ApiDoc;

/// Declares the `bearer` (access token) and `api_key` (X-API-Key) security schemes.
struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        dps_http::add_bearer_scheme(openapi);
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "api_key",
                SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
            );
    }
}

/// What tokens-api's handlers need beyond the shared state: the tenants' keys and the cursor
/// signing key, both derived from the master key.
#[derive(Debug, Clone)]
pub struct Extra {
    pub keyring: Arc<keys::KeyRing>,
    pub cursors: Arc<paging::CursorKey>,
    pub grant_keys: Arc<grants::GrantKeys>,
    pub rate_limits: Arc<limits::RateLimits>,
    pub kill_switches: Arc<limits::KillSwitches>,
}

impl Extra {
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let master = config.common.master_key.clone();
        Ok(Self {
            cursors: Arc::new(paging::CursorKey::new(&master.derive(b"cursor"))),
            grant_keys: Arc::new(grants::GrantKeys::new(&master, config.grant_key_version)?),
            keyring: Arc::new(keys::KeyRing::new(master)),
            rate_limits: Arc::new(config.rate_limits.clone()),
            kill_switches: Arc::new(limits::KillSwitches::default()),
        })
    }
}

/// Who a rate limit counts a request against: an access token's user, or an API key's owner
/// (the key itself when it has none).
pub(crate) enum Subject<'a> {
    User(&'a ids::Principal),
    Key(&'a auth::ApiKeyPrincipal),
}

impl Subject<'_> {
    fn tenant(&self) -> &ids::TenantId {
        match self {
            Subject::User(p) => &p.tenant_id,
            Subject::Key(k) => &k.tenant_id,
        }
    }

    fn counter(&self) -> String {
        match self {
            Subject::User(p) => format!("user:{}", p.user_id),
            Subject::Key(k) => k
                .owner_id
                .as_ref()
                .map_or_else(|| format!("key:{}", k.key_id), |o| format!("user:{o}")),
        }
    }
}

/// Runs before an operation's domain call and hands back the connection to make it with:
/// refuses the operation when the kill switch is on for the tenant (`stoppable` operations
/// only: tokenize, grant, detokenize), then counts it against the rate limits and records the
/// numbers for the `X-RateLimit-*` headers.
pub(crate) async fn admit(
    req: &actix_web::HttpRequest,
    state: &dps_http::ServiceState,
    extra: &Extra,
    subject: Subject<'_>,
    endpoint: limits::Endpoint,
    stoppable: bool,
) -> Result<db::PooledConnection, ApiError> {
    use actix_web::HttpMessage as _;
    let mut conn = state.conn().await?;
    let conn_ref: &mut db::AsyncPgConnection = &mut conn;
    let tenant = subject.tenant();
    if stoppable
        && extra
            .kill_switches
            .is_on(conn_ref, tenant)
            .await
            .map_err(ApiError::database)?
    {
        return Err(ApiError::new(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            dps_http::Code::Named("KILL_SWITCH_ACTIVE"),
            "tokenization is temporarily disabled for this tenant by an operator",
        ));
    }
    let decision = limits::check(
        conn_ref,
        &extra.rate_limits,
        tenant,
        &subject.counter(),
        endpoint,
    )
    .await
    .map_err(|e| match e {
        limits::LimitsError::Database(e) => ApiError::database(e),
        limits::LimitsError::Config(c) => ApiError::internal(c),
    })?;
    req.extensions_mut().insert(dps_http::RateLimitHeaders {
        limit: decision.limit,
        remaining: decision.remaining,
        reset: decision.reset,
    });
    if decision.exceeded {
        let mut error = ApiError::new(
            actix_web::http::StatusCode::TOO_MANY_REQUESTS,
            dps_http::Code::RateLimited,
            "the rate limit for this operation is exceeded; retry after the window resets",
        );
        error.retryable = true;
        error.retry_after_seconds = Some(decision.retry_after);
        return Err(error);
    }
    Ok(conn)
}

/// Area A's page size: 1 to 100, default 50.
pub(crate) fn page_limit(limit: Option<i64>) -> Result<paging::Limit, ApiError> {
    paging::Limit::parse(limit, 50).map_err(|e| ApiError::invalid(e.to_string()))
}

/// The tokens-api service: its name, its area and its routes.
#[derive(Debug)]
pub struct TokensApi;

impl ServiceSpec for TokensApi {
    type Extra = Extra;
    const NAME: &'static str = Config::SERVICE;
    const AREA: Area = Area::Tokens;

    fn register(routes: &mut Routes<'_>) {
        routes
            .resource(
                "/api/v1/tokens/health",
                [on(Method::GET, handlers::health::health)],
            )
            .resource(
                "/api/v1/tokens/openapi.json",
                [on(Method::GET, handlers::openapi::openapi)],
            )
            .resource(
                "/api/v1/tokens/tokenize",
                [on(Method::POST, handlers::tokenize::tokenize)],
            )
            .resource(
                "/api/v1/tokens/policies",
                [
                    on(Method::GET, handlers::policies::list),
                    on(Method::POST, handlers::policies::create),
                ],
            )
            .resource(
                "/api/v1/tokens/policies/{id}",
                [on(Method::PUT, handlers::policies::update)],
            )
            .resource(
                "/api/v1/tokens/vault",
                [on(Method::GET, handlers::vault::list)],
            )
            .resource(
                "/api/v1/tokens/vault/{token_id}",
                [on(Method::DELETE, handlers::vault::revoke)],
            )
            .resource(
                "/api/v1/tokens/grant",
                [on(Method::POST, handlers::grants::grant)],
            )
            .resource(
                "/api/v1/tokens/detokenize",
                [on(Method::POST, handlers::grants::detokenize)],
            )
            .resource(
                "/api/v1/tokens/audit/detokenizations",
                [on(Method::GET, handlers::grants::audit)],
            )
            .resource(
                "/api/v1/tokens/usage",
                [on(Method::GET, handlers::usage::usage)],
            );
    }
}

/// Starts the service and serves until it is told to stop.
pub async fn run(config: Config) -> anyhow::Result<()> {
    dps_http::run::<TokensApi>(&config.common, Extra::from_config(&config)?).await
}

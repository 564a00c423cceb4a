#![doc = include_str!("../README.md")]

mod admission;
mod config;
mod errors;
mod handlers;
mod wire;

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
        dps_http::document_common_answers(openapi, Area::Tokens);
        dps_http::unique_operation_ids(openapi);
        dps_http::add_links(openapi, LINKS);
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
    /// The budget of requests whose caller is not known, per client address.
    pub anonymous: Arc<dps_http::AnonymousBudget>,
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
            anonymous: Arc::new(dps_http::AnonymousBudget::new(config.anonymous_rate_limit)),
        })
    }
}

/// What an Area A list request asks of paging: its `cursor`, and its `limit` (1 to 100,
/// default 50).
pub(crate) fn paged<'a>(
    cursors: &'a paging::CursorKey,
    limit: Option<i64>,
    cursor: Option<&'a str>,
) -> Result<paging::PageRequest<'a>, ApiError> {
    let limit = paging::Limit::parse(limit, 50).map_err(|e| ApiError::invalid(e.to_string()))?;
    Ok(paging::PageRequest {
        cursors,
        limit,
        cursor,
    })
}

/// From the operation that creates or lists a resource to those that use its id.
const LINKS: &[dps_http::LinkSpec] = &[
    dps_http::LinkSpec {
        from: ("post", "/api/v1/tokens/policies"),
        status: "201",
        to: ("put", "/api/v1/tokens/policies/{id}"),
        parameter: "id",
        pointer: "/policy_id",
    },
    dps_http::LinkSpec {
        from: ("get", "/api/v1/tokens/vault"),
        status: "200",
        to: ("delete", "/api/v1/tokens/vault/{token_id}"),
        parameter: "token_id",
        pointer: "/items/0/token_id",
    },
];

/// The tokens-api service: its name, its area and its routes.
#[derive(Debug)]
pub struct TokensApi;

impl ServiceSpec for TokensApi {
    type Extra = Extra;
    const NAME: &'static str = Config::SERVICE;
    const AREA: Area = Area::Tokens;

    /// Area A's limits rule 1: every response carries the rate-limit headers, those of
    /// requests without a known caller included.
    fn anonymous_budget(extra: &Extra) -> Option<Arc<dps_http::AnonymousBudget>> {
        Some(extra.anonymous.clone())
    }

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
    tokenize_core::warm_up();
    dps_http::run::<TokensApi>(&config.common, Extra::from_config(&config)?).await
}

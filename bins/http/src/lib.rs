#![doc = include_str!("../README.md")]

mod anonymous;
mod body;
mod edge;
mod error;
mod extract;
mod routes;
mod service;

pub use anonymous::{AnonymousBudget, AnonymousDecision};
pub use body::{Body, Document};
pub use edge::{RateLimitHeaders, RequestId, edge, rate_limited};
pub use error::{ApiError, Area, Code};
pub use extract::{AdminCaller, ApiKeyCaller, Caller, Enveloped, body_configs};
pub use routes::{RouteTable, Routes, not_found, on};
pub use service::{
    CommonConfig, ServiceSpec, ServiceState, bind, configure, http_server, route_table, run, start,
};

/// What the [`edge`] middleware needs to know about the service it fronts. Registered as app
/// data by each binary's `configure`.
#[derive(Debug, Clone)]
pub struct EdgeSettings {
    pub area: Area,
    /// SDK major versions accepted in `X-Service-SDK-Version`.
    pub supported_sdk_majors: Vec<u64>,
    /// Where every response carries rate-limit headers (Area A): the budget of requests whose
    /// caller is not known. `None` where responses carry none (Area B).
    pub anonymous: Option<std::sync::Arc<AnonymousBudget>>,
}

/// Declares the `bearer` security scheme (an access token, `Authorization: Bearer <JWT>`) that
/// protected paths of both OpenAPI documents name.
pub fn add_bearer_scheme(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
    openapi
        .components
        .get_or_insert_with(Default::default)
        .add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
}

#![doc = include_str!("../README.md")]

mod answers;
mod body;
mod edge;
mod error;
mod extract;
mod links;
pub mod metrics;
mod nul;
mod permitted;
mod ratelimit;
mod reject;
pub mod roles;
mod routes;
mod service;
mod since;

pub use answers::document_common_answers;
pub use body::{
    AnyJson, Body, Document, DocumentSyntax, LARGE_BODY_LIMIT, OptionalBody, RawDocument,
    large_json,
};
pub use edge::{EdgeSettings, HtmlErrors, RequestId, TraceId, edge};
pub use error::{ApiError, Area, Code};
pub use extract::{ApiKeyCaller, Caller, Enveloped};
pub use links::{LinkSpec, add_links, served_document, unique_operation_ids};
pub use permitted::Permitted;
pub use ratelimit::{AnonymousBudget, AnonymousDecision, RateLimitHeaders, rate_limited};
pub use reject::body_configs;
pub use roles::{Group, RoleRequirements, groups};
pub use routes::{RouteTable, Routes, not_found, on};
pub use service::{
    CommonConfig, ServiceSpec, ServiceState, bind, configure, http_server, route_table, run, start,
};
pub use since::since;

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

#![doc = include_str!("../README.md")]

mod config;
mod handlers;

use actix_web::http::Method;
use dps_http::{Area, Routes, ServiceSpec, on};
use utoipa::OpenApi;

pub use config::Config;

/// The OpenAPI 3.1 document, generated from the handlers' annotations.
#[derive(Debug, OpenApi)]
#[openapi(
    info(title = "Data Protection Service: Tokenization API", version = "1.0.0"),
    paths(handlers::health::health, handlers::openapi::openapi),
    components(schemas(
        api_types::ErrorBody,
        api_types::ErrorDetail,
        api_types::Health,
        api_types::Check
    ))
)]
pub struct ApiDoc;

/// The tokens-api service: its name, its area and its routes.
#[derive(Debug)]
pub struct TokensApi;

impl ServiceSpec for TokensApi {
    type Extra = ();
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
            );
    }
}

/// Starts the service and serves until it is told to stop.
pub async fn run(config: Config) -> anyhow::Result<()> {
    dps_http::run::<TokensApi>(&config.common, ()).await
}

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
    info(title = "Data Protection Service: Platform API", version = "1.0.0"),
    paths(handlers::health::health, handlers::openapi::openapi),
    components(schemas(
        api_types::ErrorEnvelope,
        api_types::EnvelopeError,
        api_types::Metadata,
        api_types::Health,
        api_types::Check
    ))
)]
pub struct ApiDoc;

/// The platform-api service: its name, its area and its routes.
#[derive(Debug)]
pub struct PlatformApi;

impl ServiceSpec for PlatformApi {
    const NAME: &'static str = Config::SERVICE;
    const AREA: Area = Area::Platform;

    fn register(routes: &mut Routes<'_>) {
        routes
            .resource(
                "/api/v1/health",
                [on(Method::GET, handlers::health::health)],
            )
            .resource(
                "/api/v1/openapi.json",
                [on(Method::GET, handlers::openapi::openapi)],
            );
    }
}

/// Starts the service and serves until it is told to stop.
pub async fn run(config: Config) -> anyhow::Result<()> {
    dps_http::run::<PlatformApi>(&config.common).await
}

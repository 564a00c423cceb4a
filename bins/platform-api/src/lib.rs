#![doc = include_str!("../README.md")]

mod config;
mod handlers;

use std::net::TcpListener;

use actix_web::dev::Server;
use actix_web::http::Method;
use actix_web::web;
use dps_http::{Area, RouteTable, Routes, ServiceState, install_common, on};
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

/// Every route of the service. The one list both the server and the OpenAPI test read.
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

/// The routes `register` adds, for tests.
pub fn route_table() -> RouteTable {
    let mut routes = Routes::recording();
    register(&mut routes);
    routes.into_table()
}

/// Adds app data and routes. The binary and the tests both build the app through this.
pub fn configure(state: ServiceState) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    move |cfg| {
        install_common(cfg, &state, Area::Platform);
        register(&mut Routes::new(cfg));
    }
}

/// The HTTP server on an already bound listener.
pub fn http_server(
    state: ServiceState,
    listener: TcpListener,
    workers: usize,
) -> std::io::Result<Server> {
    dps_http::http_server(listener, workers, configure(state))
}

/// Starts the service and serves until it is told to stop.
pub async fn run(config: Config) -> anyhow::Result<()> {
    dps_http::run(Config::SERVICE, &config.common, configure).await
}

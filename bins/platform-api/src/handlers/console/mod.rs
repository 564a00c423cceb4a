//! The web console (crates/console) at `/console`: the session cookie read and checked, the
//! caller verified from it exactly as a Bearer token is, forms' CSRF tokens checked, and the
//! page the console renders sent with headers that allow no script and no framing. A failure
//! is an `ApiError`, which the edge renders as the console's error page under `/console`.
//!
//! `page` holds what every handler shares; each other module serves one part of the console
//! and registers its own routes.

mod alerts;
mod audit;
mod config;
mod connectors;
mod data_map;
mod drift;
mod forms;
mod overview;
pub(crate) mod page;
mod policies;
mod remediations;
mod scans;
mod settings;
mod sign_in;
mod tokenization;

use actix_web::http::Method;
use dps_http::{Routes, on};

pub use config::{ConsoleSettings, DevSignIn, DevUser};

/// Every page of the console. Paths are pages, not API operations (`Routes::page`).
pub(crate) fn register(routes: &mut Routes<'_>) {
    routes
        .page("/console", [on(Method::GET, overview::overview)])
        .page(
            console::assets::STYLESHEET_PATH,
            [on(Method::GET, overview::stylesheet)],
        )
        .page("/console/sign-in", [on(Method::GET, sign_in::sign_in)])
        .page(
            "/console/dev-sign-in",
            [on(Method::POST, sign_in::dev_sign_in)],
        )
        .page("/console/sign-out", [on(Method::POST, sign_in::sign_out)])
        .page(
            "/console/auth/start",
            [on(Method::GET, sign_in::auth_start)],
        )
        .page(
            "/console/auth/callback",
            [on(Method::GET, sign_in::auth_callback)],
        )
        .page("/console/findings", [on(Method::GET, overview::findings)]);
    alerts::register(routes);
    audit::register(routes);
    settings::register(routes);
    tokenization::register(routes);
    data_map::register(routes);
    connectors::register(routes);
    scans::register(routes);
    policies::register(routes);
    drift::register(routes);
    remediations::register(routes);
    // Last: any other path under /console is a page that does not exist.
    routes.page(
        "/console/{rest:.*}",
        [
            on(Method::GET, overview::not_found),
            on(Method::POST, overview::not_found),
        ],
    );
}

//! The overview and the findings list, the stylesheet, and the pages that do not exist.

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::governance::FindingQuery;
use dps_http::{ApiError, ServiceState};

use super::page::{Signed, failure, listed, listing, page};
use crate::Extra;

/// The stylesheet, cached for good: its path changes with its content.
pub async fn stylesheet() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(console::assets::STYLESHEET)
}

/// Any other path under `/console`.
pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found("there is no such page"))
}

/// The overview.
pub async fn overview(
    Signed(viewer): Signed,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = state.conn().await?;
    let html = console::overview(&mut conn, &viewer, &extra.cursors)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Findings, filtered and paged as `GET /findings` is.
pub async fn findings(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let listed = listed::<FindingQuery>(&req, &extra);
    let listing = listing(&req, &extra, &listed)?;
    let mut conn = state.conn().await?;
    let html = console::findings(&mut conn, &viewer, listing)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

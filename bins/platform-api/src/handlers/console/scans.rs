//! Scans: the list, one scan's live view, and its confirmed cancel (the API's `scans` group).

use std::collections::HashMap;

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::scans::ScanQuery;
use dps_http::roles::Group;
use dps_http::{ApiError, ServiceState, on};
use ids::ScanId;
use paging::{Limit, PageRequest};

use super::forms::answer;
use super::page::{Signed, allowed, checked, failure, listed, listing, page};
use crate::Extra;
use crate::queries::Listed;

pub(super) fn register(routes: &mut dps_http::Routes<'_>) {
    routes
        .page("/console/scans", [on(Method::GET, list)])
        .page("/console/scans/{id}", [on(Method::GET, detail)])
        .page(
            "/console/scans/{id}/cancel",
            [on(Method::GET, confirm_cancel), on(Method::POST, cancel)],
        );
}

fn id(raw: &str) -> Result<ScanId, ApiError> {
    ScanId::parse(raw).ok_or_else(|| ApiError::not_found("scan not found"))
}

/// Scans, filtered and paged as `GET /scans` is.
async fn list(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let listed = listed::<ScanQuery>(&req, &extra);
    let listing = listing(&req, &extra, &listed)?;
    let mut conn = state.conn().await?;
    let html = console::scans(&mut conn, &viewer, listing)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// One scan, live while it runs; `?cursor=` pages its workers as `GET /scans/:id/workers`.
async fn detail(
    Signed(viewer): Signed,
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let id = id(&path)?;
    let listed = Listed::<api_types::ListQuery>::parse(req.query_string(), extra.cursors.clone());
    let first = PageRequest::first(
        &extra.cursors,
        Limit::parse(None, 20).map_err(ApiError::internal)?,
    );
    let workers = listed.as_ref().map_or(first, Listed::page);
    let mut conn = state.conn().await?;
    let html = console::scan(&mut conn, &viewer, id, workers, None)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// The cancel's confirmation.
async fn confirm_cancel(
    Signed(viewer): Signed,
    path: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Scans)?;
    let id = id(&path)?;
    let mut conn = state.conn().await?;
    let html = console::confirm_cancel(&mut conn, &viewer, id)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Cancels the scan, confirmed.
async fn cancel(
    Signed(viewer): Signed,
    path: web::Path<String>,
    form: web::Form<HashMap<String, String>>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::Scans)?;
    let id = id(&path)?;
    let mut conn = state.conn().await?;
    let posted = console::cancel_scan(&mut conn, &viewer, id)
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

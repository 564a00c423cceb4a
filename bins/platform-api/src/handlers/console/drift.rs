//! Drift: the timeline and the acknowledge form, which any user of the tenant may use, as in
//! the API.

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::governance::DriftQuery;
use dps_http::{ApiError, Routes, ServiceState, on};
use ids::DriftEventId;

use super::forms::{answer, fields};
use super::page::{Signed, checked, failure, listed, listing, page};
use crate::Extra;

pub(super) fn register(routes: &mut Routes<'_>) {
    routes.page("/console/drift", [on(Method::GET, list)]).page(
        "/console/drift/{id}/acknowledge",
        [on(Method::POST, acknowledge)],
    );
}

/// The timeline, filtered as `GET /governance/drift-events` is.
async fn list(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let listed = listed::<DriftQuery>(&req, &extra);
    let listing = listing(&req, &extra, &listed)?;
    let mut conn = state.conn().await?;
    let html = console::drift(&mut conn, &viewer, listing)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Acknowledges an event with the form's note, as `POST
/// /governance/drift-events/:id/acknowledge` does.
async fn acknowledge(
    Signed(viewer): Signed,
    id: web::Path<String>,
    body: web::Bytes,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let form = fields(&body);
    checked(&viewer, &form)?;
    let field = |name: &str| form.get(name).map_or("", String::as_str);
    let mut conn = state.conn().await?;
    let posted = console::acknowledge_drift(
        &mut conn,
        &viewer,
        DriftEventId::parse_or_nil(&id),
        field("note"),
        field("then"),
    )
    .await
    .map_err(failure)?;
    Ok(answer(posted))
}

//! Remediations: the list, one remediation with its receipts checked, and undo (confirmed).
//! All of it needs the API's `remediations` group (admins by default), as in the API.

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::remediation::RemediationQuery;
use dps_http::roles::Group;
use dps_http::{ApiError, Routes, ServiceState, on};
use ids::RemediationId;

use super::forms::{answer, fields};
use super::page::{Signed, allowed, checked, failure, listed, listing, page};
use crate::Extra;

pub(super) fn register(routes: &mut Routes<'_>) {
    routes
        .page("/console/remediations", [on(Method::GET, list)])
        .page("/console/remediations/{id}", [on(Method::GET, show)])
        .page(
            "/console/remediations/{id}/undo",
            [on(Method::GET, undo_question), on(Method::POST, undo)],
        );
}

/// The remediations, filtered as `GET /governance/remediations` is.
async fn list(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Remediations)?;
    let listed = listed::<RemediationQuery>(&req, &extra);
    let listing = listing(&req, &extra, &listed)?;
    let mut conn = state.conn().await?;
    let html = console::remediations(&mut conn, &viewer, listing)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// One remediation, its receipts checked against the keys `GET /governance/receipt-keys`
/// serves.
async fn show(
    Signed(viewer): Signed,
    id: web::Path<String>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Remediations)?;
    let jwks = extra.remediation.receipts.jwks();
    let mut conn = state.conn().await?;
    let html = console::remediation(&mut conn, &viewer, RemediationId::parse_or_nil(&id), &jwks)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

async fn undo_question(
    Signed(viewer): Signed,
    id: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Remediations)?;
    let mut conn = state.conn().await?;
    let html = console::undo_question(&mut conn, &viewer, RemediationId::parse_or_nil(&id))
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Undoes a remediation, once its question was answered, as `POST
/// /governance/remediations/:id/undo` does.
async fn undo(
    Signed(viewer): Signed,
    id: web::Path<String>,
    body: web::Bytes,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let form = fields(&body);
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::Remediations)?;
    let force = form.get("force").is_some_and(|v| v == "true");
    let mut conn = state.conn().await?;
    let posted = console::undo(
        &mut conn,
        &extra.remediation,
        &viewer,
        RemediationId::parse_or_nil(&id),
        force,
    )
    .await
    .map_err(failure)?;
    Ok(answer(posted))
}

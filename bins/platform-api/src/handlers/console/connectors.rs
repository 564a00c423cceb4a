//! Connectors: the list, the create form, one connector, and its test, scan and delete. Each
//! action checks the API's group (`connectors`, or `scans` to start a scan) and the form's
//! CSRF token, makes one console call and answers 303 to the page of what it changed.

use std::collections::HashMap;

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::connectors::ConnectorQuery;
use console::{Posted, Trust, Viewer};
use dps_http::roles::Group;
use dps_http::{ApiError, ServiceState, on};
use ids::ConnectorId;

use super::forms::answer;
use super::page::{Signed, allowed, checked, failure, listed, listing, page, see_other};
use crate::Extra;

pub(super) fn register(routes: &mut dps_http::Routes<'_>) {
    routes
        .page(
            "/console/connectors",
            [on(Method::GET, list), on(Method::POST, create)],
        )
        .page("/console/connectors/new", [on(Method::GET, new)])
        .page("/console/connectors/{id}", [on(Method::GET, detail)])
        .page("/console/connectors/{id}/test", [on(Method::POST, test)])
        .page("/console/connectors/{id}/scan", [on(Method::POST, scan)])
        .page(
            "/console/connectors/{id}/delete",
            [on(Method::GET, confirm_delete), on(Method::POST, delete)],
        );
}

fn id(raw: &str) -> Result<ConnectorId, ApiError> {
    ConnectorId::parse(raw).ok_or_else(|| ApiError::not_found("connector not found"))
}

/// How the tenant's cloud must trust the platform, as the API's external-id and gcp-subject
/// handlers answer.
fn trust(extra: &Extra, viewer: &Viewer) -> Trust {
    let tenant = &viewer.principal.tenant_id;
    Trust {
        external_id: connectors::external_id(&extra.external_id_key, tenant),
        gcp: extra.cloud.gcp_trust(tenant),
    }
}

/// Connectors, filtered and paged as `GET /connectors` is.
async fn list(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let listed = listed::<ConnectorQuery>(&req, &extra);
    let listing = listing(&req, &extra, &listed)?;
    let mut conn = state.conn().await?;
    let html = console::connectors(&mut conn, &viewer, listing)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// The create form.
async fn new(
    Signed(viewer): Signed,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Connectors)?;
    let html = console::new_connector(&viewer, &trust(&extra, &viewer)).map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Creates a connector; an invalid form is shown again with its problems.
async fn create(
    Signed(viewer): Signed,
    form: web::Form<HashMap<String, String>>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::Connectors)?;
    let mut conn = state.conn().await?;
    let trust = trust(&extra, &viewer);
    let posted = console::create_connector(&mut conn, &extra.keyring, &viewer, &trust, &form)
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

/// One connector.
async fn detail(
    Signed(viewer): Signed,
    path: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let id = id(&path)?;
    let mut conn = state.conn().await?;
    let html = console::connector(&mut conn, &viewer, id, None)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Tests the connection; its page shows the status it recorded.
async fn test(
    Signed(viewer): Signed,
    path: web::Path<String>,
    form: web::Form<HashMap<String, String>>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::Connectors)?;
    let id = id(&path)?;
    console::test_connector(&state.pool, &extra.cloud, &extra.keyring, &viewer, id)
        .await
        .map_err(failure)?;
    Ok(see_other(&format!("/console/connectors/{id}")))
}

/// Starts a full scan, then shows it.
async fn scan(
    Signed(viewer): Signed,
    path: web::Path<String>,
    form: web::Form<HashMap<String, String>>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::Scans)?;
    let id = id(&path)?;
    let mut conn = state.conn().await?;
    let started = console::scan_connector(
        &mut conn,
        &viewer,
        id,
        &extra.scan_token_key,
        extra.scan_tier,
    )
    .await
    .map_err(failure)?;
    if let Posted::Done(_) = started {
        extra.scan_wake.ring();
    }
    Ok(answer(started))
}

/// The delete's confirmation.
async fn confirm_delete(
    Signed(viewer): Signed,
    path: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Connectors)?;
    let id = id(&path)?;
    let mut conn = state.conn().await?;
    let html = console::confirm_delete(&mut conn, &viewer, id)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Deletes the connector, confirmed.
async fn delete(
    Signed(viewer): Signed,
    path: web::Path<String>,
    form: web::Form<HashMap<String, String>>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::Connectors)?;
    let id = id(&path)?;
    let mut conn = state.conn().await?;
    let posted = console::delete_connector(&mut conn, &viewer, id)
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

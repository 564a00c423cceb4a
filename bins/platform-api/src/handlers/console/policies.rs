//! Governance policies: the list, the YAML editor, the mode form, delete (confirmed) and a
//! policy's dry-run preview, with the reconciliation page it lands on. Reading is any user's,
//! as in the API; changing needs the API's `governance_policies` group, previewing its
//! `reconcile` group.

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::governance::GovernancePolicyQuery;
use dps_http::roles::Group;
use dps_http::{ApiError, Routes, ServiceState, on};
use ids::{PolicyId, ReconciliationId};

use super::forms::{answer, fields};
use super::page::{Signed, allowed, checked, failure, listed, listing, page};
use crate::Extra;

pub(super) fn register(routes: &mut Routes<'_>) {
    routes
        .page(
            "/console/policies",
            [on(Method::GET, list), on(Method::POST, create)],
        )
        .page("/console/policies/new", [on(Method::GET, new)])
        .page(
            "/console/policies/{id}",
            [on(Method::GET, show), on(Method::POST, save)],
        )
        .page("/console/policies/{id}/mode", [on(Method::POST, mode)])
        .page(
            "/console/policies/{id}/delete",
            [on(Method::GET, delete_question), on(Method::POST, delete)],
        )
        .page(
            "/console/policies/{id}/preview",
            [on(Method::POST, preview)],
        )
        .page(
            "/console/reconciliations/{id}",
            [on(Method::GET, reconciliation)],
        );
}

/// The policies, filtered as `GET /governance/policies` is.
async fn list(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let listed = listed::<GovernancePolicyQuery>(&req, &extra);
    let listing = listing(&req, &extra, &listed)?;
    let mut conn = state.conn().await?;
    let html = console::policies(&mut conn, &viewer, listing)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

async fn new(
    Signed(viewer): Signed,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::GovernancePolicies)?;
    let html = console::new_policy(&viewer).map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

async fn show(
    Signed(viewer): Signed,
    id: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = state.conn().await?;
    let html = console::policy(&mut conn, &viewer, PolicyId::parse_or_nil(&id))
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Creates a policy from the editor, as `POST /governance/policies` with a YAML body does.
async fn create(
    Signed(viewer): Signed,
    body: web::Bytes,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let form = fields(&body);
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::GovernancePolicies)?;
    let yaml = form.get("yaml").map_or("", String::as_str);
    let mut conn = state.conn().await?;
    let posted = console::save_policy(&mut conn, &viewer, None, yaml)
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

/// Replaces a policy from the editor, as `PUT /governance/policies/:id` does.
async fn save(
    Signed(viewer): Signed,
    id: web::Path<String>,
    body: web::Bytes,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let form = fields(&body);
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::GovernancePolicies)?;
    let yaml = form.get("yaml").map_or("", String::as_str);
    let mut conn = state.conn().await?;
    let posted = console::save_policy(&mut conn, &viewer, Some(PolicyId::parse_or_nil(&id)), yaml)
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

async fn mode(
    Signed(viewer): Signed,
    id: web::Path<String>,
    body: web::Bytes,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let form = fields(&body);
    checked(&viewer, &form)?;
    allowed(&state, &viewer, Group::GovernancePolicies)?;
    let mode = form.get("mode").map_or("", String::as_str);
    let mut conn = state.conn().await?;
    let posted = console::set_mode(&mut conn, &viewer, PolicyId::parse_or_nil(&id), mode)
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

async fn delete_question(
    Signed(viewer): Signed,
    id: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::GovernancePolicies)?;
    let mut conn = state.conn().await?;
    let html = console::delete_policy_page(&mut conn, &viewer, PolicyId::parse_or_nil(&id))
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Deletes a policy, once its question was answered, as `DELETE /governance/policies/:id`.
async fn delete(
    Signed(viewer): Signed,
    id: web::Path<String>,
    body: web::Bytes,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    checked(&viewer, &fields(&body))?;
    allowed(&state, &viewer, Group::GovernancePolicies)?;
    let mut conn = state.conn().await?;
    let posted = console::delete_policy(&mut conn, &viewer, PolicyId::parse_or_nil(&id))
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

/// Queues the policy's dry-run reconciliation, as `POST /governance/reconcile` does.
async fn preview(
    Signed(viewer): Signed,
    id: web::Path<String>,
    body: web::Bytes,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    checked(&viewer, &fields(&body))?;
    allowed(&state, &viewer, Group::Reconcile)?;
    let mut conn = state.conn().await?;
    let posted = console::preview_policy(
        &mut conn,
        &viewer,
        PolicyId::parse_or_nil(&id),
        extra.reconcile_max_actions,
    )
    .await
    .map_err(failure)?;
    Ok(answer(posted))
}

/// A reconciliation, as `GET /governance/reconciliations/:id` reads it.
async fn reconciliation(
    Signed(viewer): Signed,
    id: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = state.conn().await?;
    let html = console::reconciliation(&mut conn, &viewer, ReconciliationId::parse_or_nil(&id))
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

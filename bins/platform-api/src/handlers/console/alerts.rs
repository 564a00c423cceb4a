//! Alerts (the API's `alert_channels` group): the channels, a new webhook channel (its secret
//! shown on the page that answers, once), deleting one (confirmed), and the latest alerts.

use std::collections::HashMap;

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use dps_http::roles::Group;
use dps_http::{ApiError, Routes, ServiceState, on};

use super::forms::{answer, fields};
use super::page::{Signed, allowed, checked, failure, page};
use crate::Extra;

pub(super) fn register(routes: &mut Routes<'_>) {
    routes
        .page(
            "/console/alerts",
            [on(Method::GET, list), on(Method::POST, create)],
        )
        .page(
            "/console/alerts/{name}/delete",
            [on(Method::GET, confirm_delete), on(Method::POST, delete)],
        );
}

/// The channels and the latest alerts; `?deleted=` names a channel just deleted.
async fn list(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::AlertChannels)?;
    let deleted = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(|q| q.get("deleted").cloned().unwrap_or_default())
        .unwrap_or_default();
    let mut conn = state.conn().await?;
    let html = console::alerts(&mut conn, &viewer, &extra.keyring, &extra.cursors, &deleted)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Makes a webhook channel, as `POST /governance/channels` does.
async fn create(
    Signed(viewer): Signed,
    body: web::Bytes,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::AlertChannels)?;
    let form = fields(&body);
    checked(&viewer, &form)?;
    let field = |name: &str| form.get(name).map_or("", String::as_str);
    let mut conn = state.conn().await?;
    let html = console::create_channel(
        &mut conn,
        &viewer,
        console::Outbound {
            keyring: &extra.keyring,
            egress: &extra.egress,
        },
        &extra.cursors,
        field("name"),
        field("url"),
    )
    .await
    .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Asks before deleting a channel.
async fn confirm_delete(
    Signed(viewer): Signed,
    name: web::Path<String>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::AlertChannels)?;
    let mut conn = state.conn().await?;
    let html =
        console::confirm_delete_channel(&mut conn, &viewer, &extra.keyring, &extra.cursors, &name)
            .await
            .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Deletes a channel, as `DELETE /governance/channels/:name` does.
async fn delete(
    Signed(viewer): Signed,
    name: web::Path<String>,
    body: web::Bytes,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::AlertChannels)?;
    let form = fields(&body);
    checked(&viewer, &form)?;
    let mut conn = state.conn().await?;
    let posted = console::delete_channel(&mut conn, &viewer, &name)
        .await
        .map_err(failure)?;
    Ok(answer(posted))
}

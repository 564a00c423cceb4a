//! Alert channels (not in the spec): where policies' alerts are delivered. Admins only: a
//! channel's URL may carry a token.

use actix_web::web;
use alerts::channels::{self as store, NewChannel};
use api_types::governance::{Channel, ChannelCreated, ChannelDeleted, ChannelRequest};
use dps_http::{ApiError, Body, Enveloped, Permitted, ServiceState, groups};

use crate::queries::Listed;
use crate::{Extra, errors, wire};

/// Lists the tenant's channels, oldest first, without their secrets.
#[utoipa::path(
    get,
    path = "/api/v1/governance/channels",
    tag = "governance",
    security(("bearer" = [])),
    params(
        api_types::ListQuery,
    ),
    responses(
        (status = 200, description = "One page of channels", body = [Channel]),
        (status = 400, description = "VALIDATION_FAILED: a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Permitted(caller, _): Permitted<groups::AlertChannels>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    query: Listed<api_types::ListQuery>,
) -> Result<Enveloped<Vec<Channel>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = store::list(&mut conn, &extra.keyring, &caller.tenant_id, query.page())
        .await
        .map_err(errors::channels)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::channel).collect(),
        wire::pagination(page.pagination),
    ))
}

/// Creates a webhook channel and returns its signing secret, this once.
#[utoipa::path(
    post,
    path = "/api/v1/governance/channels",
    tag = "governance",
    security(("bearer" = [])),
    request_body = ChannelRequest,
    responses(
        (status = 201, description = "The channel and its secret, shown once", body = ChannelCreated),
        (status = 400, description = "VALIDATION_FAILED naming each invalid field, or the tenant's 50 channels reached", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: the tenant has a channel with this name", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn create(
    Permitted(caller, _): Permitted<groups::AlertChannels>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: Body<ChannelRequest>,
) -> Result<Enveloped<ChannelCreated>, ApiError> {
    let mut conn = state.conn().await?;
    let created = store::create(
        &mut conn,
        &extra.keyring,
        &extra.egress,
        &caller.tenant_id,
        &caller.user_id,
        NewChannel {
            name: &body.name,
            kind: &body.kind,
            url: &body.url,
        },
    )
    .await
    .map_err(errors::channels)?;
    Ok(Enveloped::created(wire::channel_created(created)))
}

/// Deletes a channel no policy sends alerts to.
#[utoipa::path(
    delete,
    path = "/api/v1/governance/channels/{name}",
    tag = "governance",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Channel name")),
    responses(
        (status = 200, description = "The channel was deleted", body = ChannelDeleted),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "CHANNEL_NOT_FOUND", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: policies still alert this channel (details.policies names them)", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn delete(
    Permitted(caller, _): Permitted<groups::AlertChannels>,
    state: web::Data<ServiceState>,
    name: web::Path<String>,
) -> Result<Enveloped<ChannelDeleted>, ApiError> {
    let mut conn = state.conn().await?;
    store::delete(&mut conn, &caller.tenant_id, &caller.user_id, &name)
        .await
        .map_err(errors::channels)?;
    Ok(Enveloped::ok(ChannelDeleted {
        name: name.into_inner(),
        deleted: true,
    }))
}

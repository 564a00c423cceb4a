//! Drift events and the governance summary: any user of the tenant reads them and acknowledges
//! events.

use actix_web::web;
use api_types::governance::{Acknowledge, DriftEvent, DriftQuery, Summary};
use dps_http::{ApiError, Caller, Enveloped, OptionalBody, ServiceState};
use ids::DriftEventId;
use posture::drift::{self};

use crate::path::Record;
use crate::queries::Listed;
use crate::{errors, wire};

/// The tenant's drift events, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/governance/drift-events",
    tag = "governance",
    security(("bearer" = [])),
    params(
        DriftQuery,
    ),
    responses(
        (status = 200, description = "One page of drift events, newest first", body = [DriftEvent]),
        (status = 400, description = "VALIDATION_FAILED: an unknown filter value or parameter, a bad since, a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<DriftQuery>,
) -> Result<Enveloped<Vec<DriftEvent>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = drift::list(&mut conn, &caller.tenant_id, &query.filter, query.page())
        .await
        .map_err(errors::drift)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::drift_event).collect(),
        wire::pagination(page.pagination),
    ))
}

/// Acknowledges a drift event. It stays in the timeline; acknowledging it again changes nothing.
#[utoipa::path(
    post,
    path = "/api/v1/governance/drift-events/{id}/acknowledge",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Drift event id")),
    request_body = Option<Acknowledge>,
    responses(
        (status = 200, description = "The event, acknowledged", body = DriftEvent),
        (status = 400, description = "VALIDATION_FAILED: a note over 1000 characters or an unknown field", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "DRIFT_EVENT_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn acknowledge(
    Record(Caller(caller), id): Record<Caller, DriftEventId>,
    state: web::Data<ServiceState>,
    // The note is optional, and so is a body that would hold only it.
    body: OptionalBody<Acknowledge>,
) -> Result<Enveloped<DriftEvent>, ApiError> {
    let mut conn = state.conn().await?;
    let event = drift::acknowledge(
        &mut conn,
        &caller.tenant_id,
        &caller.user_id,
        id,
        body.0.as_ref().and_then(|b| b.note.as_deref()),
    )
    .await
    .map_err(errors::drift)?;
    Ok(Enveloped::ok(wire::drift_event(event)))
}

/// The tenant's governance at a glance.
#[utoipa::path(
    get,
    path = "/api/v1/governance/summary",
    tag = "governance",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Open drift events by severity, the workspace risk score, open findings by category and policies by mode", body = Summary),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn summary(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<Summary>, ApiError> {
    let mut conn = state.conn().await?;
    let summary = governance::summary::summary(&mut conn, &caller.tenant_id)
        .await
        .map_err(ApiError::database)?;
    Ok(Enveloped::ok(wire::summary(summary)))
}

//! Remediations: admins list them, read one with its receipts, and undo one within the
//! rollback window; any user of the tenant reads the receipt-signing keys.

use actix_web::web;
use api_types::remediation::{ReceiptKeys, Remediation, RemediationQuery, UndoRequest};
use dps_http::{ApiError, Caller, Enveloped, OptionalBody, Permitted, ServiceState, groups};
use ids::RemediationId;

use crate::path::Record;
use crate::queries::Listed;
use crate::{Extra, errors, wire};

/// The tenant's remediations, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/governance/remediations",
    tag = "governance",
    security(("bearer" = [])),
    params(
        RemediationQuery,
    ),
    responses(
        (status = 200, description = "One page of remediations, newest first", body = [Remediation]),
        (status = 400, description = "VALIDATION_FAILED: an unknown filter value or parameter, a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Permitted(caller, _): Permitted<groups::Remediations>,
    state: web::Data<ServiceState>,
    query: Listed<RemediationQuery>,
) -> Result<Enveloped<Vec<Remediation>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = remediation::read::list(&mut conn, &caller.tenant_id, &query.filter, query.page())
        .await
        .map_err(errors::remediation_read)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::remediation).collect(),
        wire::pagination(page.pagination),
    ))
}

/// One remediation: the request, its state and its receipts.
#[utoipa::path(
    get,
    path = "/api/v1/governance/remediations/{id}",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Remediation id")),
    responses(
        (status = 200, description = "The remediation", body = Remediation),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "REMEDIATION_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get(
    Record(Permitted(caller, _), id): Record<Permitted<groups::Remediations>, RemediationId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<Remediation>, ApiError> {
    let mut conn = state.conn().await?;
    let found = remediation::read::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(ApiError::database)?
        .ok_or_else(errors::remediation_not_found)?;
    Ok(Enveloped::ok(wire::remediation(found)))
}

/// Undoes a remediation within the tenant's rollback window: the snapshot is restored (a
/// quarantined object moves back), conditional on the object being as the remediation left it
/// unless `force` is set.
#[utoipa::path(
    post,
    path = "/api/v1/governance/remediations/{id}/undo",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Remediation id")),
    request_body = Option<UndoRequest>,
    responses(
        (status = 200, description = "The remediation, undone", body = Remediation),
        (status = 400, description = "VALIDATION_FAILED: an unknown field or a force that is not a boolean", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "REMEDIATION_NOT_FOUND", body = api_types::ErrorEnvelope),
        (status = 409, description = "object_changed_since_remediation (unless force), remediation_not_undoable, already_undone, undo_in_progress, snapshot_changed (the snapshot no longer holds the original bytes), or storage_refused (archived, immutable or held, or not permitted: retrying will not help)", body = api_types::ErrorEnvelope),
        (status = 410, description = "lkg_expired: the rollback window has passed; connector_deleted: the connector, and the snapshot in its storage, are out of reach", body = api_types::ErrorEnvelope),
        (status = 503, description = "storage_unavailable: the storage could not be reached; retry", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn undo(
    Record(Permitted(caller, _), id): Record<Permitted<groups::Remediations>, RemediationId>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: OptionalBody<UndoRequest>,
) -> Result<Enveloped<Remediation>, ApiError> {
    let force = body.0.is_some_and(|b| b.force);
    let mut conn = state.conn().await?;
    remediation::undo(
        &mut conn,
        &extra.remediation,
        &caller.tenant_id,
        id,
        &caller.user_id,
        force,
    )
    .await
    .map_err(errors::undo)?;
    let found = remediation::read::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(ApiError::database)?
        .ok_or_else(errors::remediation_not_found)?;
    Ok(Enveloped::ok(wire::remediation(found)))
}

/// The public keys that check remediation receipts, as a JWKS (RFC 7517, Ed25519 per RFC 8037).
#[utoipa::path(
    get,
    path = "/api/v1/governance/receipt-keys",
    tag = "governance",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The receipt-signing public keys", body = ReceiptKeys),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn receipt_keys(
    Caller(_caller): Caller,
    extra: web::Data<Extra>,
) -> Result<Enveloped<ReceiptKeys>, ApiError> {
    let jwks = extra.remediation.receipts.jwks();
    let keys: ReceiptKeys = serde_json::from_value(jwks)
        .map_err(|_| ApiError::internal("the receipt keys could not be shown"))?;
    Ok(Enveloped::ok(keys))
}

//! Tenant settings: admin only, always the caller's own tenant.

use actix_web::web;
use api_types::settings::{
    Cosigning, CosigningUpdate, LkgRetention, LkgRetentionUpdate, RemediationPolicy,
    RemediationPolicyUpdate,
};
use dps_http::{ApiError, Body, Enveloped, Permitted, ServiceState, groups};

use crate::{Extra, errors, wire};

/// The rollback window, which also bounds the one-click undo window.
#[utoipa::path(
    get,
    path = "/api/v1/settings/lkg-retention",
    tag = "settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The rollback window", body = LkgRetention),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get_lkg_retention(
    Permitted(caller, _): Permitted<groups::Settings>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<LkgRetention>, ApiError> {
    let mut conn = state.conn().await?;
    let view = settings::lkg_retention(&mut conn, &caller.tenant_id)
        .await
        .map_err(errors::settings)?;
    Ok(Enveloped::ok(wire::lkg_retention(view)))
}

/// Sets the rollback window to 24, 72 or 168 hours. A change of value is audited as
/// `lkg_retention_changed`.
#[utoipa::path(
    put,
    path = "/api/v1/settings/lkg-retention",
    tag = "settings",
    security(("bearer" = [])),
    request_body = LkgRetentionUpdate,
    responses(
        (status = 200, description = "The rollback window after the change", body = LkgRetention),
        (status = 400, description = "VALIDATION_FAILED: not 24, 72 or 168, or an unknown field", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn put_lkg_retention(
    Permitted(caller, _): Permitted<groups::Settings>,
    state: web::Data<ServiceState>,
    body: Body<LkgRetentionUpdate>,
) -> Result<Enveloped<LkgRetention>, ApiError> {
    let mut conn = state.conn().await?;
    let view = settings::set_lkg_retention(
        &mut conn,
        &caller.tenant_id,
        &caller.user_id,
        body.retention_hours,
    )
    .await
    .map_err(errors::settings)?;
    Ok(Enveloped::ok(wire::lkg_retention(view)))
}

/// The safety-class deny-list. An empty list denies nothing.
#[utoipa::path(
    get,
    path = "/api/v1/settings/remediation-policy",
    tag = "settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The remediation policy", body = RemediationPolicy),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get_remediation_policy(
    Permitted(caller, _): Permitted<groups::Settings>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<RemediationPolicy>, ApiError> {
    let mut conn = state.conn().await?;
    let view = settings::remediation_policy(&mut conn, &caller.tenant_id)
        .await
        .map_err(errors::settings)?;
    Ok(Enveloped::ok(wire::remediation_policy(view)))
}

/// Replaces the deny-list; audited as `remediation_policy_changed`.
///
/// The body is taken as any JSON object and checked by the domain, because every malformed
/// object (a non-list, an unknown class, an unknown field) must answer `invalid_safety_class`
/// rather than the generic `VALIDATION_FAILED`.
#[utoipa::path(
    put,
    path = "/api/v1/settings/remediation-policy",
    tag = "settings",
    security(("bearer" = [])),
    request_body = RemediationPolicyUpdate,
    responses(
        (status = 200, description = "The remediation policy after the change", body = RemediationPolicy),
        (status = 400, description = "invalid_safety_class: a non-list, an unknown class or an unknown field", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn put_remediation_policy(
    Permitted(caller, _): Permitted<groups::Settings>,
    state: web::Data<ServiceState>,
    body: dps_http::AnyJson,
) -> Result<Enveloped<RemediationPolicy>, ApiError> {
    // A body that is not an object is malformed, as everywhere. Within an object, the
    // settings crate judges every field and answers `invalid_safety_class` for a non-list, an
    // unknown class or an unknown field, as the spec requires: a NUL in a class or a field name
    // makes it just an unknown one (only valid classes are ever stored).
    let body = body.0;
    if !body.is_object() {
        return Err(ApiError::invalid("the request body must be a JSON object"));
    }
    let mut conn = state.conn().await?;
    let view =
        settings::set_remediation_policy(&mut conn, &caller.tenant_id, &caller.user_id, &body)
            .await
            .map_err(errors::settings)?;
    Ok(Enveloped::ok(wire::remediation_policy(view)))
}

/// The co-signing decision. Certificate material is never returned.
#[utoipa::path(
    get,
    path = "/api/v1/settings/cosigning",
    tag = "settings",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The co-signing decision", body = Cosigning),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get_cosigning(
    Permitted(caller, _): Permitted<groups::Settings>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<Enveloped<Cosigning>, ApiError> {
    let mut conn = state.conn().await?;
    let view = settings::cosigning(&mut conn, &caller.tenant_id, extra.cosigning_certificate)
        .await
        .map_err(errors::settings)?;
    Ok(Enveloped::ok(wire::cosigning(view)))
}

/// Sets the co-signing mode and endpoint; audited as `cosigning_changed`.
#[utoipa::path(
    put,
    path = "/api/v1/settings/cosigning",
    tag = "settings",
    security(("bearer" = [])),
    request_body = CosigningUpdate,
    responses(
        (status = 200, description = "The co-signing decision after the change", body = Cosigning),
        (status = 400, description = "VALIDATION_FAILED: unknown field, unknown mode or a bad endpoint_url", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 422, description = "cosigning_provisioning_incomplete: the platform has no client certificate yet", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn put_cosigning(
    Permitted(caller, _): Permitted<groups::Settings>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: Body<CosigningUpdate>,
) -> Result<Enveloped<Cosigning>, ApiError> {
    let mut conn = state.conn().await?;
    let view = settings::set_cosigning(
        &mut conn,
        &caller.tenant_id,
        &caller.user_id,
        &wire::cosigning_update(&body),
        extra.cosigning_certificate,
        |url| extra.egress.check_url(url).is_ok(),
    )
    .await
    .map_err(errors::settings)?;
    Ok(Enveloped::ok(wire::cosigning(view)))
}

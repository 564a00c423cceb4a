//! Scans: any user of the tenant may start, cancel and read them, as the spec has it;
//! `DPS_ROLE_REQUIREMENTS` (group `scans`) can require a role for the writes and the
//! deployment configuration.

use actix_web::web;
use api_types::scans::{
    ConnectorScanStarted, DeploymentConfig, ParallelStarted, Scan, ScanCancelled, ScanQuery,
    StartConnectorScan, StartParallel, Worker,
};
use dps_http::{ApiError, Body, Caller, Enveloped, OptionalBody, Permitted, ServiceState, groups};
use ids::ScanId;
use scans::store::{self, NewScan, Origin};

use crate::path::Record;
use crate::queries::Listed;
use crate::{Extra, errors, wire};

/// Starts a scan over several connectors at once.
#[utoipa::path(
    post,
    path = "/api/v1/scans/parallel",
    tag = "scans",
    security(("bearer" = [])),
    request_body = StartParallel,
    responses(
        (status = 201, description = "The scan, queued", body = ParallelStarted),
        (status = 400, description = "VALIDATION_FAILED naming each invalid field or option (llm_assist true included: no LLM is configured)", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller lacks the role the deployment requires for this group (DPS_ROLE_REQUIREMENTS; none by default)", body = api_types::ErrorEnvelope),
        (status = 404, description = "CONNECTOR_NOT_FOUND: a connector is not the tenant's", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn start_parallel(
    Permitted(caller, _): Permitted<groups::Scans>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: Body<StartParallel>,
) -> Result<Enveloped<ParallelStarted>, ApiError> {
    let mut conn = state.conn().await?;
    let request = NewScan {
        connectors: &body.connectors,
        kind: body.kind.as_deref(),
        options: body.options.as_ref(),
        tier: extra.scan_tier,
        origin: Origin::Parallel,
    };
    let created = store::create(
        &mut conn,
        &caller.tenant_id,
        &extra.scan_token_key,
        &request,
    )
    .await
    .map_err(errors::scans)?;
    extra.scan_wake.ring();
    Ok(Enveloped::created(wire::parallel_started(created)))
}

/// Starts a scan of one connector.
#[utoipa::path(
    post,
    path = "/api/v1/connectors/{id}/scan",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Connector id")),
    request_body = Option<StartConnectorScan>,
    responses(
        (status = 201, description = "The scan, queued", body = ConnectorScanStarted),
        (status = 400, description = "VALIDATION_FAILED naming each invalid field or option", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller lacks the role the deployment requires for this group (DPS_ROLE_REQUIREMENTS; none by default)", body = api_types::ErrorEnvelope),
        (status = 404, description = "CONNECTOR_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn start_for_connector(
    Permitted(caller, _): Permitted<groups::Scans>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    id: web::Path<String>,
    // Every field has a default (a full scan with the tier's options), so the body may be left
    // out.
    body: OptionalBody<StartConnectorScan>,
) -> Result<Enveloped<ConnectorScanStarted>, ApiError> {
    let body = body.0.unwrap_or_default();
    let mut conn = state.conn().await?;
    let request = NewScan {
        connectors: std::slice::from_ref(&*id),
        kind: Some(body.kind.as_deref().unwrap_or("full")),
        options: body.options.as_ref(),
        tier: extra.scan_tier,
        origin: Origin::Connector,
    };
    let created = store::create(
        &mut conn,
        &caller.tenant_id,
        &extra.scan_token_key,
        &request,
    )
    .await
    .map_err(errors::scans)?;
    extra.scan_wake.ring();
    Ok(Enveloped::created(wire::connector_scan_started(created)))
}

/// One scan with its progress, coverage and worker counts.
#[utoipa::path(
    get,
    path = "/api/v1/scans/{id}",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Scan id")),
    responses(
        (status = 200, description = "The scan", body = Scan),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "SCAN_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get(
    Record(Caller(caller), id): Record<Caller, ScanId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<Scan>, ApiError> {
    let mut conn = state.conn().await?;
    let scan = store::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::scans)?;
    Ok(Enveloped::ok(wire::scan(scan)))
}

/// The tenant's scans, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/scans",
    tag = "scans",
    security(("bearer" = [])),
    params(
        ScanQuery,
    ),
    responses(
        (status = 200, description = "One page of scans", body = [Scan]),
        (status = 400, description = "VALIDATION_FAILED: a bad filter, limit or cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<ScanQuery>,
) -> Result<Enveloped<Vec<Scan>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = store::list(&mut conn, &caller.tenant_id, &query.filter, query.page())
        .await
        .map_err(errors::scans)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::scan).collect(),
        wire::pagination(page.pagination),
    ))
}

/// Cancels a queued or running scan; its findings so far are kept.
#[utoipa::path(
    post,
    path = "/api/v1/scans/{id}/cancel",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Scan id")),
    responses(
        (status = 200, description = "Cancelled, with what it had done", body = ScanCancelled),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller lacks the role the deployment requires for this group (DPS_ROLE_REQUIREMENTS; none by default)", body = api_types::ErrorEnvelope),
        (status = 404, description = "SCAN_NOT_FOUND", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: the scan already ended", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn cancel(
    Record(Permitted(caller, _), id): Record<Permitted<groups::Scans>, ScanId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<ScanCancelled>, ApiError> {
    let mut conn = state.conn().await?;
    let cancelled = scans::lifecycle::cancel(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::scans)?;
    Ok(Enveloped::ok(wire::scan_cancelled(cancelled)))
}

/// The scan's workers: each is a chunk of the enumerated resources and who ran it.
#[utoipa::path(
    get,
    path = "/api/v1/scans/{id}/workers",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Scan id"), api_types::ListQuery),
    responses(
        (status = 200, description = "One page of the workers, in chunk order", body = [Worker]),
        (status = 400, description = "VALIDATION_FAILED: a bad limit or cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "SCAN_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn workers(
    Record(Caller(caller), id): Record<Caller, ScanId>,
    state: web::Data<ServiceState>,
    query: Listed<api_types::ListQuery>,
) -> Result<Enveloped<Vec<Worker>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = store::workers_page(&mut conn, &caller.tenant_id, id, query.page())
        .await
        .map_err(errors::scans)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::worker).collect(),
        wire::pagination(page.pagination),
    ))
}

/// What a deployment in the customer's own infrastructure needs to work on the scan: the
/// image, the environment with the scan's worker token, and the chunks with their objects.
#[utoipa::path(
    get,
    path = "/api/v1/scans/{id}/deployment-config",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Scan id"), api_types::scans::DeploymentQuery),
    responses(
        (status = 200, description = "The deployment configuration; chunks is empty until the scan is enumerated", body = DeploymentConfig),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller lacks the role required for scan_deployment (admin by default, DPS_ROLE_REQUIREMENTS): the configuration holds the scan's worker token", body = api_types::ErrorEnvelope),
        (status = 404, description = "SCAN_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn deployment_config(
    Record(Permitted(caller, _), id): Record<Permitted<groups::ScanDeployment>, ScanId>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    request: actix_web::HttpRequest,
    query: web::Query<api_types::scans::DeploymentQuery>,
) -> Result<Enveloped<DeploymentConfig>, ApiError> {
    let only = query
        .chunk
        .as_deref()
        .map(|chunk| {
            chunk
                .strip_prefix("chunk-")
                .and_then(|n| n.parse::<i32>().ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    ApiError::invalid("chunk must be a chunk_id of the scan, such as chunk-0")
                        .with_details(serde_json::json!({ "field": "chunk" }))
                })
        })
        .transpose()?;
    let mut conn = state.conn().await?;
    let deployment = store::deployment(&mut conn, &caller.tenant_id, id, only)
        .await
        .map_err(errors::scans)?;
    let coordinator = extra.coordinator_url.clone().unwrap_or_else(|| {
        let info = request.connection_info();
        format!("{}://{}", info.scheme(), info.host())
    });
    let token = store::worker_token(&extra.scan_token_key, &caller.tenant_id, id);
    Ok(Enveloped::ok(wire::deployment_config(
        deployment,
        extra.scan_worker_image.clone(),
        coordinator,
        token,
    )))
}

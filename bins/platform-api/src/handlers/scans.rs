//! Scans: admins start and cancel them; any user of the tenant reads them.

use actix_web::web;
use api_types::scans::{
    Chunk, ConnectorScanStarted, Coverage, DeploymentChunk, DeploymentConfig,
    DeploymentEnvironment, ParallelStarted, PartialResults, Progress, Scan, ScanCancelled,
    ScanQuery, StartConnectorScan, StartParallel, Worker, WorkerCounts, WorkerProgress,
};
use dps_http::{AdminCaller, ApiError, Body, Caller, Enveloped, ServiceState};
use scans::store;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::{Extra, errors};

/// An id that is not a UUID names no scan.
fn scan_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| errors::scans(scans::ScanError::NotFound))
}

pub(crate) fn wire(scan: scans::Scan) -> Scan {
    let now = OffsetDateTime::now_utc();
    let progress = scan.progress(now);
    let coverage = (scan.status != scans::Status::Queued).then(|| scan.coverage());
    let connectors: Vec<String> = scan.connectors.iter().map(Uuid::to_string).collect();
    Scan {
        scan_id: scan.id.to_string(),
        status: scan.status.as_str().into(),
        kind: scan.kind.as_str().into(),
        connector_id: (!scan.parallel).then(|| connectors.first().cloned().unwrap_or_default()),
        connectors: scan.parallel.then_some(connectors),
        workers_requested: scan.options.max_workers,
        progress: Progress {
            files_total: progress.files_total,
            files_processed: progress.files_processed,
            files_failed: progress.files_failed,
            findings_count: progress.findings_count,
            percent_complete: progress.percent_complete,
            elapsed_seconds: progress.elapsed_seconds,
            estimated_remaining_seconds: progress.estimated_remaining_seconds,
        },
        coverage: coverage.map(|c| Coverage {
            coverage_target: c.coverage_target,
            coverage_strategy: c.coverage_strategy.as_str().into(),
            coverage_pct: c.coverage_pct,
            target_met: c.target_met,
            completeness_score: c.completeness_score,
            enumeration_status: c.enumeration_status.as_str().into(),
            total_enumerated: c.total_enumerated,
            total_scanned: c.total_scanned,
            total_skipped: c.total_skipped,
            total_failed: c.total_failed,
            skipped_reasons: scan.reasons.skipped.clone(),
            failed_reasons: scan.reasons.failed.clone(),
        }),
        workers: WorkerCounts {
            total: scan.workers.total,
            active: scan.workers.active,
            completed: scan.workers.completed,
            failed: scan.workers.failed,
        },
        status_reason: scan.status_reason,
        created_at: scan.created_at,
        started_at: scan.started_at,
        completed_at: scan.completed_at,
    }
}

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
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "CONNECTOR_NOT_FOUND: a connector is not the tenant's", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn start_parallel(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: Body<StartParallel>,
) -> Result<Enveloped<ParallelStarted>, ApiError> {
    let mut conn = state.conn().await?;
    let created = store::create(
        &mut conn,
        &caller.tenant_id,
        &extra.scan_token_key,
        &body.connectors,
        body.kind.as_deref(),
        body.options.as_ref(),
        extra.scan_tier,
        true,
    )
    .await
    .map_err(errors::scans)?;
    extra.scan_wake.ring();
    Ok(Enveloped::created(ParallelStarted {
        scan_id: created.id.to_string(),
        status: created.status.as_str().into(),
        connectors: created.connectors.iter().map(Uuid::to_string).collect(),
        kind: created.kind.as_str().into(),
        workers_requested: created.workers_requested,
        created_at: created.created_at,
    }))
}

/// Starts a scan of one connector.
#[utoipa::path(
    post,
    path = "/api/v1/connectors/{id}/scan",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Connector id")),
    request_body = StartConnectorScan,
    responses(
        (status = 201, description = "The scan, queued", body = ConnectorScanStarted),
        (status = 400, description = "VALIDATION_FAILED naming each invalid field or option", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "CONNECTOR_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn start_for_connector(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    id: web::Path<String>,
    body: Body<StartConnectorScan>,
) -> Result<Enveloped<ConnectorScanStarted>, ApiError> {
    let mut conn = state.conn().await?;
    let created = store::create(
        &mut conn,
        &caller.tenant_id,
        &extra.scan_token_key,
        std::slice::from_ref(&*id),
        Some(body.kind.as_deref().unwrap_or("full")),
        body.options.as_ref(),
        extra.scan_tier,
        false,
    )
    .await
    .map_err(errors::scans)?;
    extra.scan_wake.ring();
    Ok(Enveloped::created(ConnectorScanStarted {
        scan_id: created.id.to_string(),
        connector_id: created
            .connectors
            .first()
            .map(Uuid::to_string)
            .unwrap_or_default(),
        status: created.status.as_str().into(),
        created_at: created.created_at,
    }))
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
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    id: web::Path<String>,
) -> Result<Enveloped<Scan>, ApiError> {
    let id = scan_id(&id)?;
    let mut conn = state.conn().await?;
    let scan = store::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::scans)?;
    Ok(Enveloped::ok(wire(scan)))
}

/// The tenant's scans, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/scans",
    tag = "scans",
    security(("bearer" = [])),
    params(
        ("connector" = Option<String>, Query, description = "Only scans of this connector"),
        ("status" = Option<String>, Query, description = "queued, running, completed, partial, failed or cancelled"),
        ("since" = Option<String>, Query, description = "ISO 8601: created at or after"),
        ("limit" = Option<i64>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, description = "Opaque, from a previous page"),
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
    extra: web::Data<Extra>,
    query: web::Query<ScanQuery>,
) -> Result<Enveloped<Vec<Scan>>, ApiError> {
    let field = |name: &str, message: &str| {
        ApiError::invalid(message.to_owned()).with_details(serde_json::json!({ "field": name }))
    };
    let limit = super::page_limit(query.limit)?;
    let status = match query.status.as_deref() {
        None => None,
        Some(s) => Some(scans::Status::parse(s).ok_or_else(|| {
            field(
                "status",
                "status must be one of queued, running, completed, partial, failed, cancelled",
            )
        })?),
    };
    let since = match query.since.as_deref() {
        None => None,
        Some(s) => Some(
            OffsetDateTime::parse(s, &Rfc3339)
                .map_err(|_| field("since", "since must be an ISO 8601 timestamp with a zone"))?,
        ),
    };
    // An id that is not a UUID matches no scan.
    let connector = query
        .connector
        .as_deref()
        .map(|c| Uuid::parse_str(c).unwrap_or(Uuid::nil()));
    let mut conn = state.conn().await?;
    let page = store::list(
        &mut conn,
        &extra.cursors,
        &caller.tenant_id,
        &store::Filter {
            connector,
            status,
            since,
        },
        limit,
        query.cursor.as_deref(),
    )
    .await
    .map_err(errors::scans)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire).collect(),
        crate::wire::pagination(page.pagination),
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
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "SCAN_NOT_FOUND", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: the scan already ended", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn cancel(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    id: web::Path<String>,
) -> Result<Enveloped<ScanCancelled>, ApiError> {
    let id = scan_id(&id)?;
    let mut conn = state.conn().await?;
    let cancelled = store::cancel(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::scans)?;
    Ok(Enveloped::ok(ScanCancelled {
        scan_id: cancelled.id.to_string(),
        status: scans::Status::Cancelled.as_str().into(),
        partial_results: PartialResults {
            files_processed: cancelled.files_processed,
            findings_count: cancelled.findings_count,
        },
        cancelled_at: cancelled.cancelled_at,
    }))
}

/// The scan's workers: each is a chunk of the enumerated resources and who ran it.
#[utoipa::path(
    get,
    path = "/api/v1/scans/{id}/workers",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Scan id")),
    responses(
        (status = 200, description = "The workers", body = [Worker]),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "SCAN_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn workers(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    id: web::Path<String>,
) -> Result<Enveloped<Vec<Worker>>, ApiError> {
    let id = scan_id(&id)?;
    let mut conn = state.conn().await?;
    let workers = store::workers(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::scans)?;
    let items = workers
        .into_iter()
        .map(|w| {
            let count = w.file_count();
            Worker {
                worker_id: w
                    .worker_id
                    .clone()
                    .unwrap_or_else(|| format!("unassigned-{}", w.chunk_no)),
                status: w.status.clone(),
                chunk: Chunk {
                    start_index: w.start_index.into(),
                    end_index: w.end_index.into(),
                    file_count: count,
                },
                progress: WorkerProgress {
                    files_processed: w.files_processed.into(),
                    findings_count: w.findings_count.into(),
                    percent_complete: if count > 0 {
                        (i64::from(w.files_processed) * 100 / count).min(100)
                    } else {
                        100
                    },
                },
                started_at: w.started_at,
                completed_at: w.completed_at,
            }
        })
        .collect();
    Ok(Enveloped::ok(items))
}

/// What a deployment in the customer's own infrastructure needs to work on the scan: the
/// image, the environment with the scan's worker token, and the chunks with their objects.
#[utoipa::path(
    get,
    path = "/api/v1/scans/{id}/deployment-config",
    tag = "scans",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Scan id")),
    responses(
        (status = 200, description = "The deployment configuration; chunks is empty until the scan is enumerated", body = DeploymentConfig),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin (the configuration holds the worker token)", body = api_types::ErrorEnvelope),
        (status = 404, description = "SCAN_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn deployment_config(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    request: actix_web::HttpRequest,
    id: web::Path<String>,
) -> Result<Enveloped<DeploymentConfig>, ApiError> {
    let id = scan_id(&id)?;
    let mut conn = state.conn().await?;
    let deployment = store::deployment(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::scans)?;
    let coordinator = extra.coordinator_url.clone().unwrap_or_else(|| {
        let info = request.connection_info();
        format!("{}://{}", info.scheme(), info.host())
    });
    Ok(Enveloped::ok(DeploymentConfig {
        container_image: extra.scan_worker_image.clone(),
        environment: DeploymentEnvironment {
            SCAN_ID: id.to_string(),
            COORDINATOR_URL: coordinator,
            AUTH_TOKEN: store::worker_token(&extra.scan_token_key, &caller.tenant_id, id),
        },
        chunks: deployment
            .chunks
            .into_iter()
            .map(|c| DeploymentChunk {
                chunk_id: format!("chunk-{}", c.chunk_no),
                files: c.files,
                connector_config: c.connector_config,
            })
            .collect(),
        status: deployment.status.as_str().into(),
        enumeration_status: deployment.enumeration_status.as_str().into(),
    }))
}

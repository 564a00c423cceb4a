//! Reconciliation: admins queue one; any user of the tenant reads how it went.

use actix_web::web;
use api_types::governance::{ReconcileQueued, ReconcileRequest, Reconciliation};
use dps_http::{ApiError, Body, Caller, Enveloped, Permitted, ServiceState, groups};
use governance::reconcile::{self, MAX_MAX_ACTIONS, MAX_SCOPE_IDS, Mode, Request, Scope};
use ids::{ConnectorId, PolicyId, ReconciliationId};
use serde_json::json;

use crate::path::Record;
use crate::{Extra, errors, wire};

/// Queues a re-evaluation of every open finding in scope.
#[utoipa::path(
    post,
    path = "/api/v1/governance/reconcile",
    tag = "governance",
    security(("bearer" = [])),
    request_body = ReconcileRequest,
    responses(
        (status = 202, description = "Queued; follow it at /governance/reconciliations/{id}", body = ReconcileQueued),
        (status = 400, description = "VALIDATION_FAILED naming every problem: a missing or unknown mode, a connector or policy not of the tenant, a scope over 100 ids, max_actions outside 0-1000000, an unknown field", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: a reconciliation is already queued or running for the tenant (details.reconciliation_id)", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn request(
    Permitted(caller, _): Permitted<groups::Reconcile>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: Body<ReconcileRequest>,
) -> Result<Enveloped<ReconcileQueued>, ApiError> {
    let request = parse(&body, extra.reconcile_max_actions)?;
    let mut conn = state.conn().await?;
    let queued = reconcile::request(&mut conn, &caller.tenant_id, &caller.user_id, &request)
        .await
        .map_err(errors::reconcile)?;
    let mut answer = Enveloped::ok(wire::reconcile_queued(queued));
    answer.status = actix_web::http::StatusCode::ACCEPTED;
    Ok(answer)
}

/// One reconciliation of the tenant: its status, counts and plan.
#[utoipa::path(
    get,
    path = "/api/v1/governance/reconciliations/{id}",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Reconciliation id")),
    responses(
        (status = 200, description = "The reconciliation", body = Reconciliation),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "RECONCILIATION_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get(
    Record(Caller(caller), id): Record<Caller, ReconciliationId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<Reconciliation>, ApiError> {
    let mut conn = state.conn().await?;
    let found = reconcile::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::reconcile)?;
    Ok(Enveloped::ok(wire::reconciliation(found)))
}

/// Checks the body's shape, naming every problem; the scope's ids are checked against the
/// tenant afterwards.
fn parse(body: &ReconcileRequest, default_max: u32) -> Result<Request, ApiError> {
    let mut problems: Vec<serde_json::Value> = Vec::new();
    let mut problem = |field: String, reason: &str| {
        problems.push(json!({ "field": field, "reason": reason }));
    };
    let mode = match body.mode.as_deref() {
        None => {
            problem("/mode".into(), "required: dry-run or enforced");
            None
        }
        Some(raw) => {
            let mode = Mode::parse(raw);
            if mode.is_none() {
                problem("/mode".into(), "must be dry-run or enforced");
            }
            mode
        }
    };
    let scope = body.scope.clone().unwrap_or_default();
    let mut ids = |key: &str, raw: &[String]| -> Vec<uuid::Uuid> {
        if raw.len() > MAX_SCOPE_IDS {
            // One problem, whatever the length: a long list must not make a longer answer.
            problem(format!("/scope/{key}"), "at most 100 ids");
            return Vec::new();
        }
        // Each id once: a connector named twice would be walked twice, counting its findings
        // and blocked actions twice.
        let mut unique: Vec<uuid::Uuid> = Vec::with_capacity(raw.len());
        for (i, s) in raw.iter().enumerate() {
            match uuid::Uuid::parse_str(s.trim()) {
                Ok(id) if !unique.contains(&id) => unique.push(id),
                Ok(_) => {}
                Err(_) => problem(format!("/scope/{key}/{i}"), "not an id"),
            }
        }
        unique
    };
    let connectors = ids("connectors", &scope.connectors);
    let policies = ids("policies", &scope.policies);
    let max_actions = match body.limits.as_ref().and_then(|l| l.max_actions) {
        None => Some(default_max),
        Some(n) => match u32::try_from(n) {
            Ok(n) if n <= MAX_MAX_ACTIONS => Some(n),
            _ => {
                problem(
                    "/limits/max_actions".into(),
                    "must be an integer from 0 to 1000000",
                );
                None
            }
        },
    };
    match (mode, max_actions) {
        (Some(mode), Some(max_actions)) if problems.is_empty() => Ok(Request {
            mode,
            scope: Scope {
                connectors: connectors.into_iter().map(ConnectorId::from_uuid).collect(),
                policies: policies.into_iter().map(PolicyId::from_uuid).collect(),
            },
            max_actions,
        }),
        _ => Err(ApiError::invalid(format!(
            "the reconcile request is invalid: {} problem{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        ))
        .with_details(json!({ "fields": problems }))),
    }
}

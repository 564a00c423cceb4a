//! Findings (not in the spec): what scans found, without values, with the policies each
//! matches and its remediation status. Any user of the tenant reads them.

use actix_web::web;
use api_types::governance::{Finding, FindingQuery};
use dps_http::{ApiError, Caller, Enveloped, ServiceState};
use ids::FindingId;

use crate::path::Record;
use crate::queries::Listed;
use crate::{errors, wire};

/// Lists the tenant's findings in the order their scans wrote them (docs/decisions.md, "The
/// findings list pages in commit order").
#[utoipa::path(
    get,
    path = "/api/v1/findings",
    tag = "governance",
    security(("bearer" = [])),
    params(
        FindingQuery,
    ),
    responses(
        (status = 200, description = "One page of findings", body = [Finding]),
        (status = 400, description = "VALIDATION_FAILED: an unknown filter value or parameter, a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<FindingQuery>,
) -> Result<Enveloped<Vec<Finding>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = platform::findings::list(&mut conn, &caller.tenant_id, &query.filter, query.page())
        .await
        .map_err(errors::platform)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::finding).collect(),
        wire::pagination(page.pagination),
    ))
}

/// One finding.
#[utoipa::path(
    get,
    path = "/api/v1/findings/{id}",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Finding id")),
    responses(
        (status = 200, description = "The finding", body = Finding),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "FINDING_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get(
    Record(Caller(caller), id): Record<Caller, FindingId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<Finding>, ApiError> {
    let mut conn = state.conn().await?;
    let found = platform::findings::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::platform)?;
    Ok(Enveloped::ok(wire::finding(found)))
}

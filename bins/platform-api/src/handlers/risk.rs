//! Risk scores: any user of the tenant reads them.

use actix_web::web;
use api_types::governance::{RiskQuery, RiskScore};
use dps_http::{ApiError, Caller, Enveloped, ServiceState};
use posture::risk::{self};

use crate::queries::Listed;
use crate::{errors, wire};

/// Risk scores at one level, highest first.
#[utoipa::path(
    get,
    path = "/api/v1/governance/risk-scores",
    tag = "governance",
    security(("bearer" = [])),
    params(
        RiskQuery,
    ),
    responses(
        (status = 200, description = "One page of scores, highest first", body = [RiskScore]),
        (status = 400, description = "VALIDATION_FAILED: an unknown level or parameter, min_score outside 0-100, a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<RiskQuery>,
) -> Result<Enveloped<Vec<RiskScore>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = risk::list(&mut conn, &caller.tenant_id, &query.filter, query.page())
        .await
        .map_err(errors::risk)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::risk_score).collect(),
        wire::pagination(page.pagination),
    ))
}

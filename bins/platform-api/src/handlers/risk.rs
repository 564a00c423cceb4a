//! Risk scores: any user of the tenant reads them.

use actix_web::web;
use api_types::governance::{RiskQuery, RiskScore};
use dps_http::{ApiError, Caller, Enveloped, ServiceState};
use ids::ConnectorId;
use posture::risk::{self, Level, Query};

use crate::{Extra, errors, wire};

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
    extra: web::Data<Extra>,
    query: web::Query<RiskQuery>,
) -> Result<Enveloped<Vec<RiskScore>>, ApiError> {
    let paged = super::paged(&extra.cursors, query.limit, query.cursor.as_deref())?;
    let level = match query.level.as_deref() {
        None => Level::Connector,
        Some(l) => Level::parse(l).ok_or_else(|| {
            ApiError::invalid("level must be one of finding, file, connector, workspace")
                .with_details(serde_json::json!({ "field": "level" }))
        })?,
    };
    let min_score = match query.min_score {
        None => None,
        Some(n) => Some(
            i16::try_from(n)
                .ok()
                .filter(|n| (0..=100).contains(n))
                .ok_or_else(|| {
                    ApiError::invalid("min_score must be between 0 and 100")
                        .with_details(serde_json::json!({ "field": "min_score" }))
                })?,
        ),
    };
    let connector = query.connector.as_deref().map(ConnectorId::parse_or_nil);
    let mut conn = state.conn().await?;
    let page = risk::list(
        &mut conn,
        &caller.tenant_id,
        &Query {
            level,
            connector,
            min_score,
        },
        paged,
    )
    .await
    .map_err(errors::risk)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::risk_score).collect(),
        wire::pagination(page.pagination),
    ))
}

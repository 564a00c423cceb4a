//! Findings (not in the spec): what scans found, without values, with the policies each
//! matches and its remediation status. Any user of the tenant reads them.

use actix_web::web;
use api_types::governance::{Finding, FindingQuery};
use dps_http::{ApiError, Caller, Enveloped, ServiceState};
use ids::{ConnectorId, FindingId, ScanId};
use scans::findings::Filter;
use tokenize_core::{Category, PiiType};

use crate::path::Record;
use crate::{Extra, errors, wire};

fn field(name: &'static str, message: &'static str) -> ApiError {
    ApiError::invalid(message).with_details(serde_json::json!({ "field": name }))
}

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
    extra: web::Data<Extra>,
    query: web::Query<FindingQuery>,
) -> Result<Enveloped<Vec<Finding>>, ApiError> {
    let paged = super::paged(&extra.cursors, query.limit, query.cursor.as_deref())?;
    if let Some(t) = query.pii_type.as_deref()
        && t.parse::<PiiType>().is_err()
        && detect::Selector::parse(t).is_none_or(|s| !matches!(s, detect::Selector::Custom(_)))
    {
        return Err(field(
            "pii_type",
            "pii_type must be a pii type code or custom:<name>",
        ));
    }
    if let Some(c) = query.category.as_deref()
        && Category::parse(c).is_none()
    {
        return Err(field(
            "category",
            "category must be one of government_id, contact, personal, financial, legal_medical",
        ));
    }
    if let Some(s) = query.status.as_deref()
        && !matches!(s, "open" | "resolved")
    {
        return Err(field("status", "status must be open or resolved"));
    }
    let min_confidence = match query.min_confidence {
        None => None,
        Some(c) if (0.0..=1.0).contains(&c) => Some(c as f32),
        Some(_) => {
            return Err(field(
                "min_confidence",
                "min_confidence must be between 0 and 1",
            ));
        }
    };
    if query
        .resource
        .as_deref()
        .is_some_and(|r| r.is_empty() || r.len() > 1024 || r.contains('\0'))
    {
        return Err(field("resource", "resource must be 1 to 1024 characters"));
    }
    // An id that is not a UUID becomes the nil id, which matches nothing.
    let filter = Filter {
        connector: query.connector.as_deref().map(ConnectorId::parse_or_nil),
        scan: query.scan.as_deref().map(ScanId::parse_or_nil),
        pii_type: query.pii_type.clone(),
        category: query.category.clone(),
        status: query.status.clone(),
        min_confidence,
        resource_prefix: query.resource.clone(),
    };
    let mut conn = state.conn().await?;
    let page = platform::findings::list(&mut conn, &caller.tenant_id, &filter, paged)
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

//! The governance audit log: any user of the tenant reads it.

use actix_web::web;
use api_types::governance::{AuditEntry, AuditQuery};
use dps_http::{ApiError, Caller, Enveloped, ServiceState};

use crate::queries::Listed;
use crate::{errors, wire};

/// The tenant's audit log, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/governance/audit-log",
    tag = "governance",
    security(("bearer" = [])),
    params(
        AuditQuery,
    ),
    responses(
        (status = 200, description = "One page of entries, in seq order", body = [AuditEntry]),
        (status = 400, description = "VALIDATION_FAILED: an unknown action_type or parameter, a bad since, a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<AuditQuery>,
) -> Result<Enveloped<Vec<AuditEntry>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = audit::list(&mut conn, &caller.tenant_id, &query.filter, query.page())
        .await
        .map_err(errors::audit)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::audit_entry).collect(),
        wire::pagination(page.pagination),
    ))
}

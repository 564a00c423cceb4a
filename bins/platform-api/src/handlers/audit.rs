//! The governance audit log: any user of the tenant reads it.

use actix_web::web;
use api_types::governance::{AuditEntry, AuditQuery};
use dps_http::{ApiError, Caller, Enveloped, ServiceState};
use ids::PolicyId;
use policies::document::ActionType;

use crate::{Extra, errors, wire};

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
    extra: web::Data<Extra>,
    query: web::Query<AuditQuery>,
) -> Result<Enveloped<Vec<AuditEntry>>, ApiError> {
    let paged = super::paged_by(
        audit::DEFAULT_LIMIT,
        &extra.cursors,
        query.limit,
        query.cursor.as_deref(),
    )?;
    let since = query.since.as_deref().map(super::since).transpose()?;
    let action_type = match query.action_type.as_deref() {
        None => None,
        Some(a) => Some(
            ActionType::parse(a)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "action_type must be one of alert, tokenize, mask, quarantine",
                    )
                    .with_details(serde_json::json!({ "field": "action_type" }))
                })?
                .as_str()
                .to_owned(),
        ),
    };
    // An id that is not a UUID matches no entry.
    let policy = query.policy.as_deref().map(PolicyId::parse_or_nil);
    let mut conn = state.conn().await?;
    let page = audit::list(
        &mut conn,
        &caller.tenant_id,
        &audit::Filter {
            since,
            policy,
            action_type,
        },
        paged,
    )
    .await
    .map_err(errors::audit)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::audit_entry).collect(),
        wire::pagination(page.pagination),
    ))
}

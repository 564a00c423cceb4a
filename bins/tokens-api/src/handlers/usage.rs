use actix_web::HttpResponse;
use api_types::tokens::Usage;
use dps_http::ApiError;

use crate::admission::{self as op, Admitted};
use crate::{errors, wire};

/// The tenant's usage this calendar month (UTC), with its quota. Any user of the tenant, unless
/// the deployment requires a role (`DPS_ROLE_REQUIREMENTS`).
#[utoipa::path(
    get,
    path = "/api/v1/tokens/usage",
    tag = "usage",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Usage of the current month", body = Usage),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "The caller lacks the role the deployment requires for this group (DPS_ROLE_REQUIREMENTS; none by default)", body = api_types::ErrorBody),
    ),
)]
pub async fn usage(
    Admitted {
        caller, mut conn, ..
    }: Admitted<op::Usage>,
) -> Result<HttpResponse, ApiError> {
    let usage = limits::usage(&mut conn, &caller.0.tenant_id)
        .await
        .map_err(|e| errors::limits(e.into()))?;
    Ok(HttpResponse::Ok().json(wire::usage(usage)))
}

use actix_web::{HttpRequest, HttpResponse, web};
use api_types::tokens::Usage;
use dps_http::{AdminCaller, ApiError, ServiceState};

use crate::Extra;

/// The tenant's usage this calendar month (UTC), with its quota. Admin only.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/usage",
    tag = "usage",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Usage of the current month", body = Usage),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorBody),
    ),
)]
pub async fn usage(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut conn = crate::admit(
        &req,
        &state,
        &extra,
        crate::Subject::User(&caller),
        limits::Endpoint::Usage,
        false,
    )
    .await?;
    let usage = limits::usage(&mut conn, &caller.tenant_id)
        .await
        .map_err(ApiError::database)?;
    Ok(HttpResponse::Ok().json(usage))
}

use actix_web::{HttpRequest, HttpResponse, web};
use api_types::tokens::{PageQuery, Policy, PolicyInput, PolicyList};
use dps_http::{AdminCaller, ApiError, Body, ServiceState};

use crate::{Extra, errors};

/// Lists the tenant's tokenization policies, oldest first, with cursor pagination.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/policies",
    tag = "policies",
    security(("bearer" = [])),
    params(
        ("limit" = Option<i64>, Query, description = "1 to 100, default 50"),
        ("cursor" = Option<String>, Query, description = "Opaque, from a previous page"),
    ),
    responses(
        (status = 200, description = "One page of policies", body = PolicyList),
        (status = 400, description = "INVALID_INPUT: a limit outside 1-100 or a cursor this service did not issue", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorBody),
    ),
)]
pub async fn list(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    query: web::Query<PageQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let limit = crate::page_limit(query.limit)?;
    let mut conn = crate::admit(
        &req,
        &state,
        &extra,
        crate::Subject::User(&caller),
        limits::Endpoint::Policies,
        false,
    )
    .await?;
    let page = vault::policies::list(
        &mut conn,
        &extra.cursors,
        &caller.tenant_id,
        limit,
        query.cursor.as_deref(),
    )
    .await
    .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(page))
}

/// Creates a policy at version 1.
#[utoipa::path(
    post,
    path = "/api/v1/tokens/policies",
    tag = "policies",
    security(("bearer" = [])),
    request_body = PolicyInput,
    responses(
        (status = 201, description = "The whole stored policy", body = Policy),
        (status = 400, description = "INVALID_INPUT naming every invalid field", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorBody),
    ),
)]
pub async fn create(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: Body<PolicyInput>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut conn = crate::admit(
        &req,
        &state,
        &extra,
        crate::Subject::User(&caller),
        limits::Endpoint::Policies,
        false,
    )
    .await?;
    let policy = vault::policies::create(&mut conn, &caller.tenant_id, &caller.user_id, &body)
        .await
        .map_err(errors::vault)?;
    Ok(HttpResponse::Created().json(policy))
}

/// Replaces a policy's whole definition and bumps its version.
#[utoipa::path(
    put,
    path = "/api/v1/tokens/policies/{id}",
    tag = "policies",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The policy_id")),
    request_body = PolicyInput,
    responses(
        (status = 200, description = "The whole stored policy at its new version", body = Policy),
        (status = 400, description = "INVALID_INPUT naming every invalid field", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorBody),
        (status = 404, description = "POLICY_NOT_FOUND", body = api_types::ErrorBody),
    ),
)]
pub async fn update(
    AdminCaller(caller): AdminCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    id: web::Path<String>,
    body: Body<PolicyInput>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut conn = crate::admit(
        &req,
        &state,
        &extra,
        crate::Subject::User(&caller),
        limits::Endpoint::Policies,
        false,
    )
    .await?;
    let policy = vault::policies::update(&mut conn, &caller.tenant_id, &caller.user_id, &id, &body)
        .await
        .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(policy))
}

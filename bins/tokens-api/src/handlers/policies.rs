use actix_web::{HttpResponse, web};
use api_types::tokens::{PageQuery, Policy, PolicyInput, PolicyList};
use dps_http::{ApiError, Body};

use crate::admission::{self as op, Admitted};
use crate::{Extra, errors, wire};

/// Lists the tenant's tokenization policies, oldest first, with cursor pagination.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/policies",
    tag = "policies",
    security(("bearer" = [])),
    params(
        PageQuery,
    ),
    responses(
        (status = 200, description = "One page of policies", body = PolicyList),
        (status = 400, description = "INVALID_INPUT: a limit outside 1-100 or a cursor this service did not issue", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
    ),
)]
pub async fn list(
    Admitted {
        caller,
        input: query,
        mut conn,
        ..
    }: Admitted<op::PolicyList, web::Query<PageQuery>>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let paged = crate::paged(&extra.cursors, query.limit, query.cursor.as_deref())?;
    let page = vault::policies::list(&mut conn, &caller.0.tenant_id, paged)
        .await
        .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(wire::policy_list(page)))
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
        (status = 403, description = "The caller lacks the role required for tokenization_policies (admin by default, DPS_ROLE_REQUIREMENTS): a policy decides who may detokenize", body = api_types::ErrorBody),
    ),
)]
pub async fn create(
    Admitted {
        caller,
        input: body,
        mut conn,
        ..
    }: Admitted<op::PolicyWrite, Body<PolicyInput>>,
) -> Result<HttpResponse, ApiError> {
    let caller = caller.0;
    let definition = wire::definition(body.0);
    let policy =
        vault::policies::create(&mut conn, &caller.tenant_id, &caller.user_id, &definition)
            .await
            .map_err(errors::vault)?;
    Ok(HttpResponse::Created().json(wire::policy(policy)))
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
        (status = 403, description = "The caller lacks the role required for tokenization_policies (admin by default, DPS_ROLE_REQUIREMENTS): a policy decides who may detokenize", body = api_types::ErrorBody),
        (status = 404, description = "POLICY_NOT_FOUND", body = api_types::ErrorBody),
    ),
)]
pub async fn update(
    Admitted {
        caller,
        input: (id, body),
        mut conn,
        ..
    }: Admitted<op::PolicyWrite, (web::Path<String>, Body<PolicyInput>)>,
) -> Result<HttpResponse, ApiError> {
    let caller = caller.0;
    let id = ids::TokenPolicyId::parse(&id)
        .ok_or_else(|| errors::vault(vault::VaultError::PolicyNotFound))?;
    let definition = wire::definition(body.0);
    let policy = vault::policies::update(
        &mut conn,
        &caller.tenant_id,
        &caller.user_id,
        id,
        &definition,
    )
    .await
    .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(wire::policy(policy)))
}

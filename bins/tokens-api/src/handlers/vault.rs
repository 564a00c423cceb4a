use actix_web::{HttpRequest, HttpResponse, web};
use api_types::tokens::{RevokeRequest, Revoked, VaultList, VaultQuery};
use dps_http::{ApiError, Body, Caller, ServiceState};

use crate::{Extra, errors};

/// Lists the tenant's vault entries (never their values), oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/vault",
    tag = "vault",
    security(("bearer" = [])),
    params(
        ("limit" = Option<i64>, Query, description = "1 to 100, default 50"),
        ("cursor" = Option<String>, Query, description = "Opaque, from a previous page"),
        ("pii_type" = Option<String>, Query, description = "Only this PII type"),
        ("status" = Option<String>, Query, description = "active, revoked or expired"),
    ),
    responses(
        (status = 200, description = "One page of entries", body = VaultList),
        (status = 400, description = "INVALID_INPUT: a bad limit, filter or cursor", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    query: web::Query<VaultQuery>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let limit = crate::page_limit(query.limit)?;
    let mut conn = crate::admit(
        &req,
        &state,
        &extra,
        crate::Subject::User(&caller),
        limits::Endpoint::VaultList,
        false,
    )
    .await?;
    let page = vault::entries::list(
        &mut conn,
        &extra.cursors,
        &caller.tenant_id,
        limit,
        query.cursor.as_deref(),
        query.pii_type.as_deref(),
        query.status.as_deref(),
    )
    .await
    .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(page))
}

/// Revokes a token: detokenization answers REVOKED from then on. Idempotent.
#[utoipa::path(
    delete,
    path = "/api/v1/tokens/vault/{token_id}",
    tag = "vault",
    security(("bearer" = [])),
    params(("token_id" = String, Path, description = "The vault entry's id")),
    request_body = RevokeRequest,
    responses(
        (status = 200, description = "Revoked (now or before)", body = Revoked),
        (status = 400, description = "INVALID_INPUT: no reason", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "Neither admin nor a role the token's policy allows", body = api_types::ErrorBody),
        (status = 404, description = "TOKEN_NOT_FOUND", body = api_types::ErrorBody),
    ),
)]
pub async fn revoke(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    token_id: web::Path<String>,
    body: Body<RevokeRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut conn = crate::admit(
        &req,
        &state,
        &extra,
        crate::Subject::User(&caller),
        limits::Endpoint::Revoke,
        false,
    )
    .await?;
    let revoked = vault::entries::revoke(&mut conn, &caller, &token_id, &body.reason)
        .await
        .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(revoked))
}

use actix_web::{HttpResponse, web};
use api_types::tokens::{RevokeRequest, Revoked, VaultList, VaultQuery};
use dps_http::{ApiError, Body};

use crate::admission::{self as op, Admitted};
use crate::{Extra, errors, wire};

/// Lists the tenant's vault entries (never their values), oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/vault",
    tag = "vault",
    security(("bearer" = [])),
    params(
        VaultQuery,
    ),
    responses(
        (status = 200, description = "One page of entries", body = VaultList),
        (status = 400, description = "INVALID_INPUT: a bad limit, status or cursor; UNSUPPORTED_PII_TYPE: an unknown pii_type", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
    ),
)]
pub async fn list(
    Admitted {
        caller,
        input: query,
        mut conn,
        ..
    }: Admitted<op::VaultList, web::Query<VaultQuery>>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let paged = crate::paged(&extra.cursors, query.limit, query.cursor.as_deref())?;
    let request = vault::entries::ListRequest {
        pii_type: query.pii_type.as_deref(),
        status: query.status.as_deref(),
    };
    let page = vault::entries::list(&mut conn, &caller.0.tenant_id, request, paged)
        .await
        .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(wire::vault_list(page)))
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
    Admitted {
        caller,
        input: (token_id, body),
        mut conn,
        ..
    }: Admitted<op::Revoke, (web::Path<String>, Body<RevokeRequest>)>,
) -> Result<HttpResponse, ApiError> {
    let token_id = ids::TokenId::parse_or_nil(&token_id);
    let revoked = vault::entries::revoke(&mut conn, &caller.0, token_id, &body.reason)
        .await
        .map_err(errors::vault)?;
    Ok(HttpResponse::Ok().json(wire::revoked(revoked)))
}

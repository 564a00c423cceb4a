//! The platform as an OpenID Connect issuer for Google workload identity federation: its
//! discovery document and JWKS, public, as a provider fetches them (plain JSON, no envelope).
//! Served only where `DPS_GCP_OIDC_ISSUER` is set; the issuer URL must route here
//! (`<issuer>/.well-known/openid-configuration` and `<issuer>/jwks`).

use actix_web::{HttpResponse, web};
use dps_http::ApiError;

use crate::Extra;

fn issuer(extra: &Extra) -> Result<&connectors::SubjectIssuer, ApiError> {
    extra
        .cloud
        .gcp_issuer()
        .ok_or_else(|| ApiError::not_found("this deployment is not a GCP identity issuer"))
}

/// The OpenID Connect discovery document of the platform's GCP issuer.
#[utoipa::path(
    get,
    path = "/api/v1/gcp-oidc/.well-known/openid-configuration",
    tag = "connectors",
    responses(
        (status = 200, description = "The discovery document (issuer, jwks_uri, ES256)"),
        (status = 404, description = "DPS_GCP_OIDC_ISSUER is not set", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn discovery(extra: web::Data<Extra>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(issuer(&extra)?.discovery()))
}

/// The public keys of the platform's GCP issuer.
#[utoipa::path(
    get,
    path = "/api/v1/gcp-oidc/jwks",
    tag = "connectors",
    responses(
        (status = 200, description = "The issuer's JWKS (one P-256 key, ES256)"),
        (status = 404, description = "DPS_GCP_OIDC_ISSUER is not set", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn jwks(extra: web::Data<Extra>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(issuer(&extra)?.jwks()))
}

use actix_web::HttpResponse;
use utoipa::OpenApi as _;

use crate::ApiDoc;

/// This document.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document of the Platform API")),
)]
pub async fn openapi() -> HttpResponse {
    HttpResponse::Ok().json(dps_http::served_document(&ApiDoc::openapi()))
}

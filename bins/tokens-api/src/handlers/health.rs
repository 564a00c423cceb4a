use actix_web::{HttpResponse, web};
use api_types::Health;
use dps_http::ServiceState;

/// Readiness: 200 when the database answers and the key material is loaded, else 503.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/health",
    tag = "health",
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "Not ready; the failing checks say why", body = Health),
    ),
)]
pub async fn health(state: web::Data<ServiceState>) -> HttpResponse {
    let (status, report) = state.readiness().await;
    HttpResponse::build(status).json(report)
}

use actix_web::web;
use api_types::Health;
use dps_http::{ApiError, Enveloped, ServiceState};

/// Readiness: 200 with the report as `data` when the database answers and the key material is
/// loaded; otherwise 503 `SERVICE_UNAVAILABLE` with the report under `error.details`.
#[utoipa::path(
    get,
    path = "/api/v1/health",
    tag = "health",
    responses(
        (status = 200, description = "Ready; the report is the envelope's data", body = Health),
        (status = 503, description = "Not ready; error.details.checks says why", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn health(state: web::Data<ServiceState>) -> Result<Enveloped<Health>, ApiError> {
    let (status, report) = state.readiness().await;
    if status.is_success() {
        return Ok(Enveloped::ok(report));
    }
    Err(ApiError::unavailable("the service is not ready")
        .with_details(serde_json::to_value(&report).unwrap_or_default()))
}

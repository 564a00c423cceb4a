use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use api_types::{Health, KillSwitchReport};
use dps_http::ServiceState;

use crate::Extra;

/// Readiness: 200 when the database answers and the key material is loaded, else 503. The
/// report also says whether the kill switch is on (which does not make the service unready:
/// it is up, and refusing on purpose).
///
/// Like every Area A response it carries the rate-limit headers: those of the client address's
/// budget for unauthenticated requests, which a probe reads but never spends, so that a busy
/// prober is never refused.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/health",
    tag = "health",
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "Not ready; the failing checks say why", body = Health),
    ),
)]
pub async fn health(
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    req: HttpRequest,
) -> HttpResponse {
    let addr = req.peer_addr().map(|a| a.ip());
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    req.extensions_mut()
        .insert(extra.anonymous.peek(addr, now).headers);
    let (status, mut report) = state.readiness().await;
    if let Ok(mut conn) = state.conn().await
        && let Ok(kill) = extra.kill_switches.state(&mut conn).await
    {
        report.kill_switch = Some(KillSwitchReport {
            global: kill.global,
            tenants_stopped: kill.tenants.len(),
        });
    }
    HttpResponse::build(status).json(report)
}

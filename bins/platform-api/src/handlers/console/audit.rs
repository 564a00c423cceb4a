//! The audit log page: the API's list, and the newest part of the hash chain checked.

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::governance::AuditQuery;
use dps_http::{ApiError, ServiceState, on};

use super::page::{Signed, failure, listed, listing, page};
use crate::Extra;

pub(super) fn register(routes: &mut dps_http::Routes<'_>) {
    routes.page("/console/audit", [on(Method::GET, audit)]);
}

/// The audit log, filtered and paged as `GET /governance/audit-log` is (any user of the
/// tenant), with the chain checked under the service's checkpoint key.
async fn audit(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let listed = listed::<AuditQuery>(&req, &extra);
    let listing = listing(&req, &extra, &listed)?;
    let mut conn = state.conn().await?;
    let html = console::audit(&mut conn, &viewer, listing, extra.audit_key.public())
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

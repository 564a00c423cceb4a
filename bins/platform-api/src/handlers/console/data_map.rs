//! The data map and one bucket of it.

use actix_web::http::Method;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use dps_http::{ApiError, ServiceState, on};
use ids::ConnectorId;

use super::page::{Signed, failure, page};

pub(super) fn register(routes: &mut dps_http::Routes<'_>) {
    routes
        .page("/console/data-map", [on(Method::GET, data_map)])
        .page(
            "/console/data-map/{connector}/{bucket}",
            [on(Method::GET, bucket)],
        );
}

/// Every bucket, by connector.
async fn data_map(
    Signed(viewer): Signed,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let mut conn = state.conn().await?;
    let html = console::data_map(&mut conn, &viewer)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// One bucket: its types, counts, riskiest files and last scan.
async fn bucket(
    Signed(viewer): Signed,
    path: web::Path<(String, String)>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    let (connector, bucket) = path.into_inner();
    let connector =
        ConnectorId::parse(&connector).ok_or_else(|| ApiError::not_found("bucket not found"))?;
    let mut conn = state.conn().await?;
    let html = console::bucket(&mut conn, &viewer, connector, &bucket)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

pub mod audit;
pub mod channels;
pub mod classifiers;
pub mod connectors;
pub mod drift;
pub mod findings;
pub mod gcp_oidc;
pub mod health;
pub mod openapi;
pub mod policies;
pub mod reconcile;
pub mod remediations;
pub mod risk;
pub mod scans;
pub mod settings;
pub mod work;

use dps_http::ApiError;

/// What a list request asks of paging: its `cursor`, and its `limit` (20 when absent, else 1
/// to 100).
pub(crate) fn paged<'a>(
    cursors: &'a paging::CursorKey,
    limit: Option<i64>,
    cursor: Option<&'a str>,
) -> Result<paging::PageRequest<'a>, ApiError> {
    paged_by(20, cursors, limit, cursor)
}

/// [`paged`], with a list's own default page size.
pub(crate) fn paged_by<'a>(
    default: u32,
    cursors: &'a paging::CursorKey,
    limit: Option<i64>,
    cursor: Option<&'a str>,
) -> Result<paging::PageRequest<'a>, ApiError> {
    let limit = paging::Limit::parse(limit, default).map_err(|e| {
        ApiError::invalid(e.to_string()).with_details(serde_json::json!({ "field": "limit" }))
    })?;
    Ok(paging::PageRequest {
        cursors,
        limit,
        cursor,
    })
}

pub(crate) use dps_http::since;

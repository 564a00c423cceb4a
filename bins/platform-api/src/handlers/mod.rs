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

/// A list's `limit`: 20 when absent, else 1 to 100.
pub(crate) fn page_limit(limit: Option<i64>) -> Result<paging::Limit, ApiError> {
    paging::Limit::parse(limit, 20).map_err(|e| {
        ApiError::invalid(e.to_string()).with_details(serde_json::json!({ "field": "limit" }))
    })
}

pub(crate) use dps_http::since;

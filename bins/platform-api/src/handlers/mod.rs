pub mod classifiers;
pub mod connectors;
pub mod health;
pub mod openapi;
pub mod scans;
pub mod settings;

use dps_http::ApiError;

/// A list's `limit`: 20 when absent, else 1 to 100.
pub(crate) fn page_limit(limit: Option<i64>) -> Result<i64, ApiError> {
    match limit {
        None => Ok(20),
        Some(l) if (1..=100).contains(&l) => Ok(l),
        Some(_) => Err(ApiError::invalid("limit must be between 1 and 100")
            .with_details(serde_json::json!({ "field": "limit" }))),
    }
}

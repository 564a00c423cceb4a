//! The one place tokens-api turns domain errors into HTTP errors. Each match is exhaustive,
//! so a new domain error cannot slip through as a generic 400 or 500.

use actix_web::http::StatusCode;
use dps_http::{ApiError, Code};
use grants::GrantError;
use serde_json::json;
use vault::VaultError;

pub fn vault(error: VaultError) -> ApiError {
    match error {
        VaultError::Invalid(problems) => {
            let detail = problems
                .iter()
                .map(|p| format!("{}: {}", p.field, p.problem))
                .collect::<Vec<_>>()
                .join("; ");
            ApiError::invalid("the request has invalid fields")
                .with_detail(detail)
                .with_details(json!({ "fields": problems }))
        }
        VaultError::InvalidRequest(message) => ApiError::invalid(message),
        VaultError::UnsupportedPiiType => ApiError::new(
            StatusCode::BAD_REQUEST,
            Code::Named("UNSUPPORTED_PII_TYPE"),
            error.to_string(),
        ),
        VaultError::PolicyNotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("POLICY_NOT_FOUND"),
            "no such policy in this tenant",
        ),
        VaultError::TokenNotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("TOKEN_NOT_FOUND"),
            "no such token in this tenant",
        ),
        VaultError::Forbidden(message) => ApiError::forbidden(message),
        VaultError::IdempotencyKeyReused => ApiError::new(
            StatusCode::CONFLICT,
            Code::Named("IDEMPOTENCY_KEY_REUSED"),
            "this idempotency_key was used with a different request body",
        ),
        VaultError::QuotaExceeded => {
            let mut error = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                Code::Named("QUOTA_EXCEEDED"),
                "the tenant's monthly token quota is used up",
            );
            // Not retryable before the period ends; Retry-After says when it does.
            error.retry_after_seconds =
                Some(limits::quota_resets_in(time::OffsetDateTime::now_utc()));
            error
        }
        VaultError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
        }
        VaultError::CorruptPolicy => ApiError::internal("a stored policy does not validate"),
        VaultError::Crypto => ApiError::internal("a vault cryptographic operation failed"),
        VaultError::Database(e) => ApiError::database(e),
    }
}

/// An ALL_OR_NOTHING batch with a failed item: the first failure's code, every failed item in
/// `detail`, and every item's result beside it. The status is the one the spec's error table
/// gives that code (403 for TOKEN_REVOKED), and 400 for the item codes it does not list, which
/// all say the request's own values are wrong.
pub fn batch_rejected(
    first: vault::tokenize::ItemFailure,
    result: &vault::tokenize::Tokenized,
) -> ApiError {
    let response = crate::wire::tokenize_response(result);
    let failed: Vec<String> = response
        .results
        .iter()
        .filter_map(|r| match r {
            api_types::tokens::TokenizeResult::Failed(f) if f.status == "FAILED" => Some(format!(
                "item {}: {} ({})",
                f.index, f.error.code, f.error.message
            )),
            _ => None,
        })
        .collect();
    let status = match first.code {
        "TOKEN_REVOKED" => StatusCode::FORBIDDEN,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(
        status,
        Code::Named(first.code),
        "the ALL_OR_NOTHING batch has failed items; nothing was written",
    )
    .with_detail(failed.join("; "))
    .with_details(json!({
        "results": response.results,
        "success_count": response.success_count,
        "failure_count": response.failure_count,
        "batch_policy_version": response.batch_policy_version,
        "trace_id": response.trace_id,
    }))
}

pub fn grant(error: GrantError) -> ApiError {
    let named = |status: StatusCode, code: &'static str, e: &GrantError| {
        ApiError::new(status, Code::Named(code), e.to_string())
    };
    match error {
        GrantError::Invalid(message) => ApiError::invalid(message),
        GrantError::ReasonRequired => named(StatusCode::BAD_REQUEST, "REASON_REQUIRED", &error),
        GrantError::RoleNotAllowed => named(StatusCode::FORBIDDEN, "ROLE_NOT_ALLOWED", &error),
        GrantError::PurposeNotAllowed => {
            named(StatusCode::FORBIDDEN, "PURPOSE_NOT_ALLOWED", &error)
        }
        // The grant is the detokenization's credential (the spec's authentication table), and
        // an invalid credential is 401 UNAUTHORIZED. The audit keeps the precise GRANT_INVALID.
        GrantError::GrantInvalid => ApiError::unauthorized(error.to_string()),
        GrantError::GrantExpired => named(StatusCode::FORBIDDEN, "GRANT_EXPIRED", &error),
        GrantError::GrantReused => named(StatusCode::FORBIDDEN, "GRANT_NONCE_REUSED", &error),
        GrantError::NotInGrant => named(StatusCode::FORBIDDEN, "TOKEN_NOT_IN_GRANT", &error),
        GrantError::TokenRevoked => named(StatusCode::FORBIDDEN, "TOKEN_REVOKED", &error),
        GrantError::Key => ApiError::internal("the grant signing key is unusable"),
        GrantError::AuditUnavailable => {
            ApiError::unavailable("the detokenization could not be audited; nothing was revealed")
        }
        GrantError::Vault(e) => vault(e),
        GrantError::Database(e) => ApiError::database(e),
    }
}

pub fn limits(error: limits::LimitsError) -> ApiError {
    match error {
        limits::LimitsError::Database(e) => ApiError::database(e),
        limits::LimitsError::Config(c) => ApiError::internal(c),
    }
}

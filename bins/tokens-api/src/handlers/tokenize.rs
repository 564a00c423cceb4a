use actix_web::{HttpResponse, web};
use api_types::tokens::{TokenizeQuery, TokenizeRequest, TokenizeResponse};
use dps_http::{ApiError, Body};
use vault::tokenize::Outcome;

use crate::admission::{self as op, Admitted};
use crate::{Extra, errors, wire};

/// Tokenizes up to 1000 values under a policy. Authenticated by an API key.
#[utoipa::path(
    post,
    path = "/api/v1/tokens/tokenize",
    tag = "tokenize",
    security(("api_key" = [])),
    params(TokenizeQuery),
    request_body = TokenizeRequest,
    responses(
        (status = 200, description = "Per-item results (BEST_EFFORT, or an ALL_OR_NOTHING batch that fully succeeded)", body = TokenizeResponse),
        (status = 400, description = "INVALID_INPUT, or an ALL_OR_NOTHING batch with a failed item: the first failure's code, with every result", body = api_types::ErrorBody),
        (status = 401, description = "Missing, unknown or revoked API key", body = api_types::ErrorBody),
        (status = 403, description = "TOKEN_REVOKED: an ALL_OR_NOTHING batch whose first failed item is a revoked value, with every result", body = api_types::ErrorBody),
        (status = 404, description = "POLICY_NOT_FOUND", body = api_types::ErrorBody),
        (status = 409, description = "IDEMPOTENCY_KEY_REUSED: the key came with a different body", body = api_types::ErrorBody),
        (status = 429, description = "RATE_LIMIT_EXCEEDED, or QUOTA_EXCEEDED", body = api_types::ErrorBody),
        (status = 503, description = "KILL_SWITCH_ACTIVE", body = api_types::ErrorBody),
    ),
)]
pub async fn tokenize(
    Admitted {
        caller,
        input: (query, body),
        mut conn,
        ..
    }: Admitted<op::Tokenize, (web::Query<TokenizeQuery>, Body<TokenizeRequest>)>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let dry_run = query.dry_run.unwrap_or(false);
    let request = wire::tokenize_request(body.0, dry_run).map_err(errors::vault)?;
    let outcome = vault::tokenize::tokenize(
        &mut conn,
        &extra.keyring,
        &caller.0.tenant_id,
        &request,
        &wire::tokenize_body,
    )
    .await
    .map_err(errors::vault)?;
    count_items(&outcome, if dry_run { "dry_run" } else { "write" });
    match outcome {
        Outcome::Done { body, result } => {
            let mut response = HttpResponse::Ok()
                .content_type("application/json")
                .body(body);
            response
                .extensions_mut()
                .insert(dps_http::TraceId(result.trace_id));
            Ok(response)
        }
        // A replay answers the first call's body, whose trace id that call's log line names.
        Outcome::Replayed { body } => Ok(HttpResponse::Ok()
            .content_type("application/json")
            .body(body)),
        Outcome::Rejected { first, result } => Err(errors::batch_rejected(first, &result)),
    }
}

/// Counts the items of a processed batch (a replay was counted when first processed).
fn count_items(outcome: &Outcome, run: &'static str) {
    use dps_http::metrics::TOKENIZE_ITEMS;
    let (tokenized, failed, rejected) = match outcome {
        Outcome::Done { result, .. } => (result.success_count(), result.failure_count(), 0),
        Outcome::Rejected { result, .. } => (0, 0, result.success_count() + result.failure_count()),
        Outcome::Replayed { .. } => return,
    };
    for (outcome, n) in [
        ("tokenized", tokenized),
        ("failed", failed),
        ("rejected", rejected),
    ] {
        if n > 0 {
            metrics::counter!(TOKENIZE_ITEMS, "outcome" => outcome, "run" => run)
                .increment(n as u64);
        }
    }
}

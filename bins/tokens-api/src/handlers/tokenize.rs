use actix_web::{HttpRequest, HttpResponse, web};
use api_types::tokens::{TokenizeQuery, TokenizeRequest, TokenizeResponse};
use dps_http::{ApiError, ApiKeyCaller, Body, ServiceState};

use crate::{Extra, errors};

/// Tokenizes up to 1000 values under a policy. Authenticated by an API key.
#[utoipa::path(
    post,
    path = "/api/v1/tokens/tokenize",
    tag = "tokenize",
    security(("api_key" = [])),
    params(("dry_run" = Option<bool>, Query, description = "Validate and preview; write nothing")),
    request_body = TokenizeRequest,
    responses(
        (status = 200, description = "Per-item results (BEST_EFFORT, or an ALL_OR_NOTHING batch that fully succeeded)", body = TokenizeResponse),
        (status = 400, description = "INVALID_INPUT, or an ALL_OR_NOTHING batch with a failed item: the first failure's code, with every result", body = api_types::ErrorBody),
        (status = 401, description = "Missing, unknown or revoked API key", body = api_types::ErrorBody),
        (status = 404, description = "POLICY_NOT_FOUND", body = api_types::ErrorBody),
        (status = 409, description = "IDEMPOTENCY_KEY_REUSED: the key came with a different body", body = api_types::ErrorBody),
        (status = 429, description = "RATE_LIMIT_EXCEEDED, or QUOTA_EXCEEDED", body = api_types::ErrorBody),
        (status = 503, description = "KILL_SWITCH_ACTIVE", body = api_types::ErrorBody),
    ),
)]
pub async fn tokenize(
    ApiKeyCaller(caller): ApiKeyCaller,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    query: web::Query<TokenizeQuery>,
    body: Body<TokenizeRequest>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut conn = crate::admit(
        &req,
        &state,
        &extra,
        crate::Subject::Key(&caller),
        limits::Endpoint::Tokenize,
        true,
    )
    .await?;
    let outcome = vault::tokenize::tokenize(
        &mut conn,
        &extra.keyring,
        &caller.tenant_id,
        &body,
        query.dry_run.unwrap_or(false),
    )
    .await
    .map_err(errors::vault)?;
    match outcome {
        vault::tokenize::Outcome::Done { body, .. }
        | vault::tokenize::Outcome::Replayed { body } => Ok(HttpResponse::Ok()
            .content_type("application/json")
            .body(body)),
        vault::tokenize::Outcome::Rejected { first, response } => {
            Err(errors::batch_rejected(first, response))
        }
    }
}

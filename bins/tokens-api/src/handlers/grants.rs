use actix_web::{HttpResponse, web};
use api_types::tokens::{
    AuditQuery, DetokenizationAudit, DetokenizeRequest, DetokenizeResponse, GrantRequest,
    GrantResponse,
};
use dps_http::{ApiError, Body};

use crate::admission::{self as op, Admitted};
use crate::{Extra, errors, wire};

/// Issues a single-use grant, valid 300 seconds, for the caller to detokenize the listed
/// tokens.
#[utoipa::path(
    post,
    path = "/api/v1/tokens/grant",
    tag = "detokenize",
    security(("bearer" = [])),
    request_body = GrantRequest,
    responses(
        (status = 200, description = "The grant", body = GrantResponse),
        (status = 400, description = "INVALID_INPUT, or REASON_REQUIRED by a token's policy", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "ROLE_NOT_ALLOWED or PURPOSE_NOT_ALLOWED by a token's policy, or TOKEN_REVOKED", body = api_types::ErrorBody),
    ),
)]
pub async fn grant(
    Admitted {
        caller,
        input: body,
        mut conn,
        ..
    }: Admitted<op::Grant, Body<GrantRequest>>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let request = grants::GrantRequest {
        token_ids: &body.token_ids,
        purpose: &body.purpose,
        reason: body.reason.as_deref(),
    };
    let grant = grants::issue(&mut conn, &extra.grant_keys, &caller.0, &request)
        .await
        .map_err(errors::grant)?;
    let trace = dps_http::TraceId(grant.trace_id);
    // A grant is a credential: no cache along the way may keep it.
    let mut response = HttpResponse::Ok()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(wire::grant(grant));
    response.extensions_mut().insert(trace);
    Ok(response)
}

/// Reveals tokens under a grant issued to the same caller. The grant is consumed.
#[utoipa::path(
    post,
    path = "/api/v1/tokens/detokenize",
    tag = "detokenize",
    security(("bearer" = [])),
    request_body = DetokenizeRequest,
    responses(
        (status = 200, description = "Per-token results: GRANTED, NOT_FOUND, REVOKED, EXPIRED or DENIED", body = DetokenizeResponse),
        (status = 400, description = "INVALID_INPUT", body = api_types::ErrorBody),
        (status = 401, description = "UNAUTHORIZED: a missing or invalid access token, or a grant that is forged, altered, malformed or not this caller's", body = api_types::ErrorBody),
        (status = 403, description = "GRANT_EXPIRED, GRANT_NONCE_REUSED or TOKEN_NOT_IN_GRANT", body = api_types::ErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE: the attempt could not be audited, so nothing was revealed", body = api_types::ErrorBody),
    ),
)]
pub async fn detokenize(
    Admitted {
        caller,
        input: body,
        mut conn,
        ..
    }: Admitted<op::Detokenize, Result<Body<DetokenizeRequest>, ApiError>>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    // An attempt whose body cannot be read is still an attempt: audited, then refused.
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            grants::refuse_unreadable(&mut conn, &caller.0, e.code.render(dps_http::Area::Tokens))
                .await;
            count_detokenize(Err(&e));
            return Err(e);
        }
    };
    let request = grants::DetokenizeRequest {
        tokens: &body.tokens,
        grant_jwt: &body.grant_jwt,
    };
    let revealed = grants::detokenize(
        &mut conn,
        &extra.grant_keys,
        &extra.keyring,
        &caller.0,
        &request,
    )
    .await
    .map_err(errors::grant);
    count_detokenize(revealed.as_ref());
    let revealed = revealed?;
    let trace = dps_http::TraceId(revealed.trace_id);
    // Plaintext: no cache along the way may keep it.
    let mut response = HttpResponse::Ok()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(wire::detokenized(revealed));
    response.extensions_mut().insert(trace);
    Ok(response)
}

/// The detokenization audit: every attempt, granted or not. Admin only.
#[utoipa::path(
    get,
    path = "/api/v1/tokens/audit/detokenizations",
    tag = "detokenize",
    security(("bearer" = [])),
    params(
        AuditQuery,
    ),
    responses(
        (status = 200, description = "One page of attempts, oldest first", body = DetokenizationAudit),
        (status = 400, description = "INVALID_INPUT", body = api_types::ErrorBody),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorBody),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorBody),
    ),
)]
pub async fn audit(
    Admitted {
        caller,
        input: query,
        mut conn,
        ..
    }: Admitted<op::Audit, web::Query<AuditQuery>>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let paged = crate::paged(&extra.cursors, query.limit, query.cursor.as_deref())?;
    let filter = grants::AuditFilter {
        user: query.user.as_deref(),
        token_id: query.token_id.as_deref(),
        since: query.since.as_deref().map(dps_http::since).transpose()?,
    };
    let page = grants::audit(&mut conn, &caller.0.tenant_id, &filter, paged)
        .await
        .map_err(errors::grant)?;
    Ok(HttpResponse::Ok().json(wire::audit(page)))
}

/// Counts a detokenize request: a grant used, or a refusal by its code; and its tokens.
fn count_detokenize(revealed: Result<&grants::Detokenized, &ApiError>) {
    use dps_http::metrics::{DETOKENIZE_REQUESTS, DETOKENIZE_TOKENS};
    match revealed {
        Ok(revealed) => {
            metrics::counter!(DETOKENIZE_REQUESTS, "outcome" => "granted", "code" => "")
                .increment(1);
            let granted = revealed.success_count();
            let denied = revealed.results.len() - granted;
            metrics::counter!(DETOKENIZE_TOKENS, "outcome" => "granted").increment(granted as u64);
            metrics::counter!(DETOKENIZE_TOKENS, "outcome" => "denied").increment(denied as u64);
        }
        Err(e) => {
            metrics::counter!(
                DETOKENIZE_REQUESTS,
                "outcome" => "denied",
                "code" => e.code.render(dps_http::Area::Tokens)
            )
            .increment(1);
        }
    }
}

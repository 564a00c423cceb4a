use std::future::Future;
use std::pin::Pin;

use actix_web::body::BoxBody;
use actix_web::dev::Payload;
use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::http::StatusCode;
use actix_web::http::header::{AUTHORIZATION, HeaderName};
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder, web};
use api_types::{Envelope, Pagination};
use auth::JwtVerifier;
use ids::{Principal, Role};
use serde::Serialize;

use crate::edge::{metadata, request_id_of};
use crate::error::ApiError;

type LocalFuture<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

const API_KEY: HeaderName = HeaderName::from_static("x-api-key");

/// A caller authenticated by an access token (`Authorization: Bearer …`).
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

/// A caller authenticated by an access token who holds the `admin` role; 403 otherwise.
#[derive(Debug, Clone)]
pub struct AdminCaller(pub Principal);

/// A caller authenticated by an API key (`X-API-Key`).
#[derive(Debug, Clone)]
pub struct ApiKeyCaller(pub auth::ApiKeyPrincipal);

fn bearer_token(req: &HttpRequest) -> Result<String, ApiError> {
    let value = req.headers().get(AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized("an access token is required: Authorization: Bearer <token>")
    })?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is malformed"))?;
    let (scheme, token) = value.split_once(' ').ok_or_else(|| {
        ApiError::unauthorized("the Authorization header must use the Bearer scheme")
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::unauthorized(
            "the Authorization header must use the Bearer scheme",
        ));
    }
    Ok(token.trim().to_owned())
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = LocalFuture<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let verifier = req.app_data::<web::Data<JwtVerifier>>().cloned();
        let token = bearer_token(req);
        Box::pin(async move {
            let token = token?;
            let verifier =
                verifier.ok_or_else(|| ApiError::internal("no JwtVerifier registered"))?;
            let principal = verifier.verify(&token).await.map_err(|e| match e {
                auth::JwtError::KeysUnavailable => {
                    ApiError::unavailable("the identity provider's signing keys cannot be loaded")
                }
                other => ApiError::unauthorized(other.to_string()),
            })?;
            Ok(Caller(principal))
        })
    }
}

impl FromRequest for AdminCaller {
    type Error = ApiError;
    type Future = LocalFuture<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(req, payload);
        Box::pin(async move {
            let Caller(principal) = caller.await?;
            if !principal.is(Role::Admin) {
                return Err(ApiError::forbidden(
                    "this operation requires the admin role",
                ));
            }
            Ok(AdminCaller(principal))
        })
    }
}

impl FromRequest for ApiKeyCaller {
    type Error = ApiError;
    type Future = LocalFuture<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<crate::ServiceState>>().cloned();
        let presented = req
            .headers()
            .get(API_KEY)
            .map(|v| v.to_str().map(str::to_owned));
        Box::pin(async move {
            let presented = match presented {
                None => return Err(ApiError::unauthorized("an API key is required: X-API-Key")),
                Some(Err(_)) => {
                    return Err(ApiError::unauthorized("the API key is invalid or revoked"));
                }
                Some(Ok(key)) => key,
            };
            let state = state.ok_or_else(|| ApiError::internal("no service state registered"))?;
            let mut conn = state.conn().await?;
            match auth::api_keys::authenticate(&mut conn, &presented).await {
                Ok(Some(principal)) => Ok(ApiKeyCaller(principal)),
                Ok(None) => Err(ApiError::unauthorized("the API key is invalid or revoked")),
                Err(e) => Err(ApiError::database(e)),
            }
        })
    }
}

/// An Area B success response: `{status:"success", data, metadata, pagination?}`.
#[derive(Debug)]
pub struct Enveloped<T> {
    pub status: StatusCode,
    pub data: T,
    pub pagination: Option<Pagination>,
}

impl<T> Enveloped<T> {
    pub fn ok(data: T) -> Self {
        Self {
            status: StatusCode::OK,
            data,
            pagination: None,
        }
    }

    pub fn created(data: T) -> Self {
        Self {
            status: StatusCode::CREATED,
            data,
            pagination: None,
        }
    }

    pub fn page(data: T, pagination: Pagination) -> Self {
        Self {
            status: StatusCode::OK,
            data,
            pagination: Some(pagination),
        }
    }
}

impl<T: Serialize> Responder for Enveloped<T> {
    type Body = BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse<Self::Body> {
        let request_id = request_id_of(req);
        let envelope = Envelope {
            status: "success".into(),
            data: self.data,
            metadata: metadata(&request_id.0),
            pagination: self.pagination,
        };
        HttpResponse::build(self.status).json(envelope)
    }
}

/// Removes echoed input from a serde message. serde writes the offending value into
/// "invalid type" and "invalid value" messages, and that value may be personal data.
pub(crate) fn sanitize_serde_message(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: ", "unknown variant "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            let expected = rest
                .find(", expected ")
                .map(|i| &rest[i + 2..])
                .unwrap_or("");
            let kind = prefix.trim_end_matches(": ").trim_end();
            return if expected.is_empty() {
                kind.to_owned()
            } else {
                format!("{kind}, {expected}")
            };
        }
    }
    // Other serde messages ("missing field `x`", "unknown field `y`") name fields, not values.
    message.to_owned()
}

/// A body that does not parse, or parses into the wrong shape; the message names the position
/// and the expectation, never the value.
pub(crate) fn serde_json_error(e: serde_json::Error) -> ApiError {
    let position = format!("line {}, column {}", e.line(), e.column());
    if e.is_data() {
        ApiError::invalid(format!(
            "the JSON body does not have the expected shape: {} (at {position})",
            sanitize_serde_message(e.to_string().split(" at line ").next().unwrap_or(""))
        ))
    } else {
        ApiError::invalid(format!(
            "the request body is not valid JSON (at {position})"
        ))
    }
}

fn json_error(error: JsonPayloadError) -> ApiError {
    match error {
        JsonPayloadError::ContentType => {
            ApiError::invalid("the request body must be JSON (Content-Type: application/json)")
        }
        JsonPayloadError::Overflow { limit }
        | JsonPayloadError::OverflowKnownLength { limit, .. } => ApiError::invalid(format!(
            "the request body is larger than the {limit}-byte limit"
        )),
        JsonPayloadError::Deserialize(e) => serde_json_error(e),
        JsonPayloadError::Serialize(_) | JsonPayloadError::Payload(_) => {
            ApiError::invalid("the request body could not be read")
        }
        _ => ApiError::invalid("the request body could not be read"),
    }
}

fn query_error(error: QueryPayloadError) -> ApiError {
    match error {
        QueryPayloadError::Deserialize(e) => ApiError::invalid(format!(
            "invalid query parameters: {}",
            sanitize_serde_message(&e.to_string())
        )),
        _ => ApiError::invalid("invalid query parameters"),
    }
}

fn path_error(error: PathError) -> ApiError {
    match error {
        PathError::Deserialize(e) => ApiError::invalid(format!(
            "invalid path parameter: {}",
            sanitize_serde_message(&e.to_string())
        )),
        _ => ApiError::invalid("invalid path parameter"),
    }
}

/// The extractor configurations both services register, so that every body, query and path
/// problem becomes an [`ApiError`] in the area's shape.
pub fn body_configs(
    max_body_bytes: usize,
) -> (
    web::JsonConfig,
    web::QueryConfig,
    web::PathConfig,
    web::PayloadConfig,
) {
    (
        web::JsonConfig::default()
            .limit(max_body_bytes)
            .error_handler(|e, _| json_error(e).into()),
        web::QueryConfig::default().error_handler(|e, _| query_error(e).into()),
        web::PathConfig::default().error_handler(|e, _| path_error(e).into()),
        web::PayloadConfig::default().limit(max_body_bytes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_lose_echoed_values() {
        assert_eq!(
            sanitize_serde_message("invalid type: string \"123-45-6789\", expected u32"),
            "invalid type, expected u32"
        );
        assert_eq!(
            sanitize_serde_message("invalid value: integer `123456789`, expected a string"),
            "invalid value, expected a string"
        );
        assert_eq!(
            sanitize_serde_message("missing field `items`"),
            "missing field `items`"
        );
    }
}

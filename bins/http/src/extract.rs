use std::future::Future;
use std::pin::Pin;

use actix_web::body::BoxBody;
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{AUTHORIZATION, HeaderName};
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder, web};
use api_types::{Envelope, Pagination};
use auth::JwtVerifier;
use ids::Principal;
use serde::Serialize;

use crate::edge::{metadata, request_id_of};
use crate::error::ApiError;

type LocalFuture<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

const API_KEY: HeaderName = HeaderName::from_static("x-api-key");

/// A caller authenticated by an access token (`Authorization: Bearer …`).
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

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

impl FromRequest for ApiKeyCaller {
    type Error = ApiError;
    type Future = LocalFuture<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req
            .app_data::<web::Data<crate::service::ServiceState>>()
            .cloned();
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

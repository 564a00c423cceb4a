//! [`Body`]: the request-body extractor of both services.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::{FromRequest, HttpRequest, web};
use futures_core::Stream as _;
use serde::de::DeserializeOwned;

use crate::ApiError;
use crate::extract::serde_json_error;

/// A JSON request body that must be an object, deserialized into `T`.
///
/// `web::Json` would also accept a JSON array for a struct (serde reads a sequence as the
/// fields in order), so `[72]` would pass for `{"retention_hours": 72}`. Every body of both APIs
/// is an object; anything else is refused before deserialization. Oversized bodies are refused
/// from `Content-Length` when it is given and while reading when it is not, with a 400 naming
/// the limit.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<T> std::ops::Deref for Body<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

fn is_json(req: &HttpRequest) -> bool {
    let Some(value) = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

fn too_large(limit: usize) -> ApiError {
    ApiError::invalid(format!(
        "the request body is larger than the {limit}-byte limit"
    ))
}

impl<T: DeserializeOwned + 'static> FromRequest for Body<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = req
            .app_data::<web::Data<crate::ServiceState>>()
            .map_or(2 * 1024 * 1024, |s| s.max_body_bytes);
        let json = is_json(req);
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let mut payload = payload.take();
        Box::pin(async move {
            if !json {
                return Err(ApiError::invalid(
                    "the request body must be JSON (Content-Type: application/json)",
                ));
            }
            if declared.is_some_and(|n| n > limit) {
                return Err(too_large(limit));
            }
            let mut bytes = web::BytesMut::with_capacity(declared.unwrap_or(0).min(limit));
            while let Some(chunk) =
                std::future::poll_fn(|cx| Pin::new(&mut payload).poll_next(cx)).await
            {
                let chunk =
                    chunk.map_err(|_| ApiError::invalid("the request body could not be read"))?;
                if bytes.len() + chunk.len() > limit {
                    return Err(too_large(limit));
                }
                bytes.extend_from_slice(&chunk);
            }
            let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
            match first {
                None => return Err(ApiError::invalid("the request body is empty")),
                Some(b'{') => {}
                Some(_) => return Err(ApiError::invalid("the request body must be a JSON object")),
            }
            serde_json::from_slice(&bytes)
                .map(Body)
                .map_err(serde_json_error)
        })
    }
}

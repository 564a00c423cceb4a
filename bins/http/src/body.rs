//! [`Body`] and [`Document`]: the request-body extractors of both services.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::{FromRequest, HttpRequest, web};
use futures_core::Stream as _;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, Code};
use crate::nul;
use crate::reject::{sanitize_serde_message, serde_json_error};

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

/// How a request body is written, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Json,
    Yaml,
}

fn syntax(req: &HttpRequest) -> Option<Syntax> {
    let value = req.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
    {
        Some(Syntax::Json)
    } else if matches!(
        essence.as_str(),
        "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml"
    ) {
        Some(Syntax::Yaml)
    } else {
        None
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::invalid(format!(
        "the request body is larger than the {limit}-byte limit"
    ))
}

/// Reads the whole body, refusing it past the service's limit.
fn read(
    req: &HttpRequest,
    payload: &mut Payload,
) -> impl Future<Output = Result<web::BytesMut, ApiError>> + use<> {
    let limit = req
        .app_data::<web::Data<crate::service::ServiceState>>()
        .map_or(2 * 1024 * 1024, |s| s.max_body_bytes);
    read_at_most(req, payload, limit, body_timeout(req))
}

/// The longest a body may take to arrive (`DPS_BODY_TIMEOUT_SECONDS`). actix's own timeout
/// covers only the request head: without this, a client that sends part of a body and stops
/// would hold its request (and whatever the request holds) for as long as the connection
/// stays open.
fn body_timeout(req: &HttpRequest) -> Duration {
    req.app_data::<web::Data<crate::service::ServiceState>>()
        .map_or(DEFAULT_BODY_TIMEOUT, |s| s.body_timeout)
}

const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads the whole body, refusing it past `limit` bytes or once `deadline` has passed.
fn read_at_most(
    req: &HttpRequest,
    payload: &mut Payload,
    limit: usize,
    deadline: Duration,
) -> impl Future<Output = Result<web::BytesMut, ApiError>> + use<> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let mut payload = payload.take();
    let whole = async move {
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
        Ok(bytes)
    };
    async move {
        tokio::time::timeout(deadline, whole)
            .await
            .unwrap_or_else(|_| {
                Err(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    Code::Invalid,
                    format!(
                        "the request body did not arrive within {} seconds",
                        deadline.as_secs()
                    ),
                ))
            })
    }
}

/// A JSON body must be an object; anything else is refused before deserialization.
fn from_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        None => return Err(ApiError::invalid("the request body is empty")),
        Some(b'{') => {}
        Some(_) => return Err(ApiError::invalid("the request body must be a JSON object")),
    }
    if nul::may_hold_nul(bytes) {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(serde_json_error)?;
        nul::check(&value)?;
    }
    serde_json::from_slice(bytes).map_err(serde_json_error)
}

/// A YAML body must be a mapping. It is read into a JSON value first, so that it meets exactly
/// the same types and rules as JSON; messages name the position and never a value.
///
/// The value is built by `docread`, the reader governance policies use: one parser (yaml-rust2)
/// that refuses anchors, aliases, tags, duplicate keys and more than one document. An alias
/// replayed at every use could make a body of a few kilobytes millions of values (an alias
/// bomb); here it is never replayed, and no second parser reads the body differently.
fn from_yaml<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let limits = docread::Limits {
        // The service's body limit has applied already.
        max_bytes: usize::MAX,
        max_depth: YAML_MAX_DEPTH,
    };
    let (value, problems) = match docread::read(bytes, docread::Syntax::Yaml, limits) {
        Ok((value, problems)) => (Some(value), problems),
        Err(problems) => (None, problems),
    };
    // docread speaks of "the document"; here it is the request body.
    let problems: Vec<docread::Problem> = problems
        .into_iter()
        .map(|p| docread::Problem {
            reason: p.reason.replace("the document", "the request body").into(),
            ..p
        })
        .collect();
    if let Some(first) = problems.first() {
        let said = first.reason.to_string();
        let message = match (first.pointer.as_str(), problems.len()) {
            ("", 1) => said,
            ("", n) => format!("{said} (and {} more problems)", n - 1),
            (at, 1) => format!("the request body at {at}: {said}"),
            (at, n) => format!(
                "the request body at {at}: {said} (and {} more problems)",
                n - 1
            ),
        };
        return Err(
            ApiError::invalid(message).with_details(serde_json::json!({ "fields": problems }))
        );
    }
    let value = value.ok_or_else(|| ApiError::invalid("the request body is not valid YAML"))?;
    serde_json::from_value(value).map_err(|e| {
        ApiError::invalid(format!(
            "the YAML body does not have the expected shape: {}",
            sanitize_serde_message(&e.to_string())
        ))
    })
}

/// The deepest nesting a YAML request body may have (the top-level mapping is level 1).
const YAML_MAX_DEPTH: usize = 64;

impl<T: DeserializeOwned + 'static> FromRequest for Body<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json = syntax(req) == Some(Syntax::Json);
        let body = read(req, payload);
        Box::pin(async move {
            if !json {
                return Err(ApiError::invalid(
                    "the request body must be JSON (Content-Type: application/json)",
                ));
            }
            from_json(&body.await?).map(Body)
        })
    }
}

/// The most a [`large_json`] body may hold (or the service's own limit, if larger).
pub const LARGE_BODY_LIMIT: usize = 64 * 1024 * 1024;

/// A JSON object body of `T`, by the rules of [`Body`], up to [`LARGE_BODY_LIMIT`] bytes: for
/// what a machine sends in bulk (a scan worker's report of a batch of objects, whose one dense
/// object may carry tens of thousands of findings). A function rather than an extractor, so
/// that the handler authenticates the caller before it reads such a body.
pub async fn large_json<T: DeserializeOwned>(
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<T, ApiError> {
    if syntax(req) != Some(Syntax::Json) {
        return Err(ApiError::invalid(
            "the request body must be JSON (Content-Type: application/json)",
        ));
    }
    let limit = req
        .app_data::<web::Data<crate::service::ServiceState>>()
        .map_or(LARGE_BODY_LIMIT, |s| s.max_body_bytes.max(LARGE_BODY_LIMIT));
    let mut payload = payload.into_inner();
    // A bulk body may be 32 times the usual one: it gets five times the usual time, and at
    // least five minutes.
    let deadline = (body_timeout(req) * 5).max(Duration::from_secs(300));
    from_json(&read_at_most(req, &mut payload, limit, deadline).await?)
}

/// Any JSON value as the body (an object or not), for an endpoint whose own validation must
/// answer for every shape with its own error code (`PUT /settings/remediation-policy`:
/// `invalid_safety_class` for a non-list, an unknown class or an unknown field). Only syntax
/// is checked here: JSON `Content-Type`, the size limit, well-formed JSON. NUL characters are
/// not refused here: the endpoint must take only values it recognizes.
#[derive(Debug)]
pub struct AnyJson(pub serde_json::Value);

impl FromRequest for AnyJson {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json = syntax(req) == Some(Syntax::Json);
        let body = read(req, payload);
        Box::pin(async move {
            if !json {
                return Err(ApiError::invalid(
                    "the request body must be JSON (Content-Type: application/json)",
                ));
            }
            let bytes = body.await?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Err(ApiError::invalid("the request body is empty"));
            }
            serde_json::from_slice(&bytes)
                .map(AnyJson)
                .map_err(serde_json_error)
        })
    }
}

/// A JSON body that may be left out: no bytes at all is `None`; anything else must be a JSON
/// object of `T`, by the same rules as [`Body`] (a malformed body is a 400, never `None`).
#[derive(Debug)]
pub struct OptionalBody<T>(pub Option<T>);

impl<T: DeserializeOwned + 'static> FromRequest for OptionalBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json = syntax(req) == Some(Syntax::Json);
        let body = read(req, payload);
        Box::pin(async move {
            let bytes = body.await?;
            if bytes.is_empty() {
                return Ok(OptionalBody(None));
            }
            if !json {
                return Err(ApiError::invalid(
                    "the request body must be JSON (Content-Type: application/json)",
                ));
            }
            from_json(&bytes).map(|t| OptionalBody(Some(t)))
        })
    }
}

/// A request body in JSON (`application/json`) or YAML (`application/yaml`, also
/// `application/x-yaml` and `text/yaml`), deserialized into `T` by the same rules: the policy
/// and classifier endpoints take both.
#[derive(Debug)]
pub struct Document<T>(pub T);

impl<T> std::ops::Deref for Document<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for Document<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let syntax = syntax(req);
        let body = read(req, payload);
        Box::pin(async move {
            let Some(syntax) = syntax else {
                return Err(ApiError::invalid(
                    "the request body must be JSON (Content-Type: application/json) or YAML \
                     (Content-Type: application/yaml)",
                ));
            };
            let bytes = body.await?;
            match syntax {
                Syntax::Json => from_json(&bytes),
                Syntax::Yaml => from_yaml(&bytes),
            }
            .map(Document)
        })
    }
}

/// How a [`RawDocument`] is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentSyntax {
    Json,
    Yaml,
}

/// A request body in JSON or YAML, kept as bytes for a domain reader that checks documents
/// itself (governance policies: size, depth, duplicate keys, anchors). Only the content type
/// and the service's body limit are checked here.
#[derive(Debug)]
pub struct RawDocument {
    pub bytes: web::Bytes,
    pub syntax: DocumentSyntax,
}

impl FromRequest for RawDocument {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let syntax = syntax(req);
        let body = read(req, payload);
        Box::pin(async move {
            let syntax = match syntax {
                Some(Syntax::Json) => DocumentSyntax::Json,
                Some(Syntax::Yaml) => DocumentSyntax::Yaml,
                None => {
                    return Err(ApiError::invalid(
                        "the request body must be YAML (Content-Type: application/yaml) or JSON \
                         (Content-Type: application/json)",
                    ));
                }
            };
            Ok(RawDocument {
                bytes: body.await?.freeze(),
                syntax,
            })
        })
    }
}

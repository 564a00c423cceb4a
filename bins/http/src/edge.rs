//! The outermost middleware of both services.

use std::future::{Ready, ready};
use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage as _, HttpRequest, HttpResponse, web};
use api_types::{EnvelopeError, ErrorBody, ErrorDetail, ErrorEnvelope, Metadata};
use serde_json::{Value, json};

use crate::error::{ApiError, Area, Code};
use crate::ratelimit::{AnonymousBudget, RateLimitHeaders, rate_limited};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const SDK_VERSION: HeaderName = HeaderName::from_static("x-service-sdk-version");
const RATE_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const RATE_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RATE_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// What the [`edge`](edge()) middleware needs to know about the service it fronts. Registered as app
/// data by each binary's `configure`.
#[derive(Debug, Clone)]
pub struct EdgeSettings {
    /// The service's name, a label of its request metrics.
    pub service: &'static str,
    pub area: Area,
    /// SDK major versions accepted in `X-Service-SDK-Version`.
    pub supported_sdk_majors: Vec<u64>,
    /// Where every response carries rate-limit headers (Area A): the budget of requests whose
    /// caller is not known. `None` where responses carry none (Area B).
    pub anonymous: Option<std::sync::Arc<AnonymousBudget>>,
    /// Where errors are pages for a browser rather than the area's JSON.
    pub html_errors: Option<HtmlErrors>,
}

/// Errors under `prefix` (a web console's paths) rendered as an HTML page by `render`: the
/// same status and message, never the cause.
#[derive(Debug, Clone, Copy)]
pub struct HtmlErrors {
    pub prefix: &'static str,
    /// The page for a status, a message and the request id.
    pub render: fn(u16, &str, &str) -> String,
    /// The pages' Content-Security-Policy.
    pub content_security_policy: &'static str,
}

/// The `trace_id` a response carries in its body (tokenize, grant, detokenize), put on the
/// response's extensions by its handler so that the request's log line names it: a caller who
/// quotes a trace id can then be found in the logs, and a refused detokenization in its audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceId(pub uuid::Uuid);

/// The id of the current request: the caller's `X-Request-Id` when it is sane, else a new UUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl FromRequest for RequestId {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(request_id_of(req)))
    }
}

pub(crate) fn request_id_of(req: &HttpRequest) -> RequestId {
    req.extensions()
        .get::<RequestId>()
        .cloned()
        .unwrap_or_else(|| RequestId(uuid::Uuid::new_v4().to_string()))
}

/// Accepts a caller's request id of 1 to 128 characters from a safe alphabet, so that it can be
/// logged and echoed without escaping. Anything else is replaced, not refused.
fn incoming_request_id(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(REQUEST_ID)?.to_str().ok()?;
    let ok = (1..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    ok.then(|| value.to_owned())
}

/// Parses a semantic version (`MAJOR.MINOR.PATCH`, optional `-pre` and `+build`) and returns
/// its major number.
fn sdk_major(version: &str) -> Option<u64> {
    let (core, _build) = version
        .split_once('+')
        .map_or((version, None), |(c, b)| (c, Some(b)));
    let (core, _pre) = core
        .split_once('-')
        .map_or((core, None), |(c, p)| (c, Some(p)));
    let identifiers_ok = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|id| {
                !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    };
    if let Some(pre) = _pre
        && !identifiers_ok(pre)
    {
        return None;
    }
    if let Some(build) = _build
        && !identifiers_ok(build)
    {
        return None;
    }
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 {
        return None;
    }
    let mut numbers = [0u64; 3];
    for (slot, part) in numbers.iter_mut().zip(&parts) {
        let leading_zero = part.len() > 1 && part.starts_with('0');
        if part.is_empty() || leading_zero || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = part.parse().ok()?;
    }
    Some(numbers[0])
}

fn check_sdk_version(headers: &HeaderMap, settings: &EdgeSettings) -> Result<(), ApiError> {
    let Some(value) = headers.get(SDK_VERSION) else {
        return Ok(());
    };
    let malformed =
        || ApiError::invalid("X-Service-SDK-Version must be a semantic version such as 1.4.2");
    let major = value
        .to_str()
        .ok()
        .and_then(sdk_major)
        .ok_or_else(malformed)?;
    if settings.supported_sdk_majors.contains(&major) {
        return Ok(());
    }
    let supported = settings
        .supported_sdk_majors
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut error = ApiError::new(
        StatusCode::UPGRADE_REQUIRED,
        Code::UnsupportedSdk,
        format!("SDK major version {major} is not supported; upgrade to a supported major version"),
    )
    .with_detail(format!("supported major versions: {supported}"));
    error.supported_major_versions = Some(settings.supported_sdk_majors.clone());
    Err(error)
}

/// The middleware: request id, SDK version check, the NUL character refused in the path and
/// query, error rendering, one log line per request.
pub async fn edge(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let settings = req
        .app_data::<web::Data<EdgeSettings>>()
        .map(|d| d.get_ref().clone())
        .unwrap_or(EdgeSettings {
            service: "unknown",
            area: Area::Tokens,
            supported_sdk_majors: vec![1],
            anonymous: None,
            html_errors: None,
        });
    let request_id =
        incoming_request_id(req.headers()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    req.extensions_mut().insert(RequestId(request_id.clone()));
    let started = Instant::now();

    // No clone of the request may be held across `next.call`: routing needs it unshared.
    // Inner services turn errors into responses, so an `Err` here is the framework's own
    // failure and is left to actix.
    let checked =
        check_sdk_version(req.headers(), &settings).and_then(|()| {
            match crate::nul::in_uri(req.uri().path(), req.uri().query().unwrap_or("")) {
                Some(field) => Err(crate::nul::refused(&field)),
                None => Ok(()),
            }
        });
    let response = match checked {
        Err(e) => req.error_response(e),
        Ok(()) => next.call(req).await?.map_into_boxed_body(),
    };

    let response = match &settings.anonymous {
        Some(budget) => count_anonymous(response, budget),
        None => response,
    };
    let mut response = render_errors(response, settings.area, settings.html_errors, &request_id);
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let limits = response
        .request()
        .extensions()
        .get::<RateLimitHeaders>()
        .copied();
    if let Some(limits) = limits {
        let headers = response.headers_mut();
        for (name, value) in [
            (RATE_LIMIT, limits.limit.to_string()),
            (RATE_REMAINING, limits.remaining.to_string()),
            (RATE_RESET, limits.reset.to_string()),
        ] {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        }
    }

    let status = response.status().as_u16();
    let route = response
        .request()
        .match_pattern()
        .unwrap_or_else(|| "<unmatched>".into());
    let method = crate::metrics::method_label(response.request().method());
    let elapsed = started.elapsed();
    crate::metrics::request(settings.service, &route, method, status, elapsed);
    if status == 429 {
        crate::metrics::rate_limited(settings.service, &route);
    }
    // To the microsecond: finer digits are noise, and noise that can look like anything.
    let elapsed_ms = elapsed.as_micros() as f64 / 1000.0;
    let trace_id = response
        .response()
        .extensions()
        .get::<TraceId>()
        .map(|t| tracing::field::display(t.0));
    if status >= 500 {
        tracing::warn!(
            request_id,
            trace_id,
            method,
            route,
            status,
            elapsed_ms,
            "request failed"
        );
    } else {
        tracing::info!(
            request_id, trace_id, method, route, status, elapsed_ms, "request"
        );
    }
    Ok(response)
}

/// Counts a response that no caller was counted for (no credential, a bad one, an unknown
/// route, a refused SDK version) against the client address's budget, and records its numbers
/// for the headers. Past the budget, the answer becomes 429 RATE_LIMIT_EXCEEDED.
///
/// A server error is not counted: a caller whose credential could not be checked because the
/// database is down is not unknown, and a client retrying through an outage must keep hearing
/// 503 and `retryable`, not a limit it never went past.
fn count_anonymous(
    response: ServiceResponse<BoxBody>,
    budget: &AnonymousBudget,
) -> ServiceResponse<BoxBody> {
    if response.status().is_server_error()
        || response
            .request()
            .extensions()
            .get::<RateLimitHeaders>()
            .is_some()
    {
        return response;
    }
    let addr = response.request().peer_addr().map(|a| a.ip());
    let decision = budget.hit(addr, time::OffsetDateTime::now_utc().unix_timestamp());
    response.request().extensions_mut().insert(decision.headers);
    if !decision.exceeded {
        return response;
    }
    let (req, _) = response.into_parts();
    ServiceResponse::from_err(rate_limited(decision.retry_after), req)
}

/// Writes the area's error body for any error response: a handler's or extractor's
/// [`ApiError`], or a framework default (which has no content type).
fn render_errors(
    response: ServiceResponse<BoxBody>,
    area: Area,
    html: Option<HtmlErrors>,
    request_id: &str,
) -> ServiceResponse<BoxBody> {
    let status = response.status();
    // A redirect is an answer, not an error (a page's extractor sends a stranger to sign in).
    if status.is_redirection() {
        return response;
    }
    let attached = response.response().error();
    let api_error = attached.and_then(|e| e.as_error::<ApiError>().cloned());
    let framework_default = !response.headers().contains_key(header::CONTENT_TYPE)
        && (status.is_client_error() || status.is_server_error());
    let error = match (api_error, attached) {
        (Some(e), _) => e,
        (None, Some(other)) => {
            let mut e = ApiError::from_status(status);
            if status.is_server_error() {
                e.cause = Some(other.to_string());
            }
            e
        }
        (None, None) if framework_default => ApiError::from_status(status),
        (None, None) => return response,
    };
    if let Some(cause) = &error.cause {
        // The one place an internal cause is logged. It never reaches the client.
        tracing::error!(
            request_id,
            status = error.status.as_u16(),
            cause,
            "internal error"
        );
    }

    let (req, old) = response.into_parts();
    let mut builder = HttpResponse::build(error.status);
    for (name, value) in old.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            builder.append_header((name.clone(), value.clone()));
        }
    }
    if let Some(seconds) = error.retry_after_seconds
        && !old.headers().contains_key(header::RETRY_AFTER)
    {
        builder.insert_header((header::RETRY_AFTER, seconds.to_string()));
    }
    if error.status == StatusCode::UNAUTHORIZED
        && !old.headers().contains_key(header::WWW_AUTHENTICATE)
    {
        builder.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
    }
    if let Some(html) = html.filter(|h| under(req.path(), h.prefix)) {
        let page = (html.render)(error.status.as_u16(), &error.message, request_id);
        builder
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .insert_header((
                header::CONTENT_SECURITY_POLICY,
                html.content_security_policy,
            ))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((header::X_FRAME_OPTIONS, "DENY"));
        return ServiceResponse::new(
            req,
            builder.content_type("text/html; charset=utf-8").body(page),
        );
    }
    let body = match area {
        Area::Tokens => serde_json::to_value(ErrorBody {
            error: ErrorDetail {
                code: error.code.render(area).to_owned(),
                message: error.message.clone(),
                detail: error.detail.clone(),
                retryable: error.retryable,
                retry_after_seconds: error.retry_after_seconds,
                supported_major_versions: error.supported_major_versions.clone(),
            },
        })
        .map(|mut body| {
            // Area A has no `details`; structured extras (an ALL_OR_NOTHING batch's results,
            // the fields at fault) sit beside the fixed fields of `error`, never over them.
            if let (Some(object), Value::Object(extra)) =
                (body["error"].as_object_mut(), &error.details)
            {
                for (key, value) in extra {
                    object.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
            body
        }),
        Area::Platform => serde_json::to_value(ErrorEnvelope {
            status: "error".into(),
            error: EnvelopeError {
                code: error.code.render(area).to_owned(),
                message: error.message.clone(),
                details: envelope_details(&error),
            },
            metadata: metadata(request_id),
        }),
    }
    .unwrap_or_else(|_| json!({}));
    ServiceResponse::new(req, builder.json(body))
}

/// Whether `path` is `prefix` or under it.
fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn envelope_details(error: &ApiError) -> Value {
    let mut details = match &error.details {
        Value::Object(map) => map.clone(),
        Value::Null => serde_json::Map::new(),
        other => {
            let mut map = serde_json::Map::new();
            map.insert("value".into(), other.clone());
            map
        }
    };
    if !error.detail.is_empty() {
        details
            .entry("detail")
            .or_insert_with(|| json!(error.detail));
    }
    if let Some(majors) = &error.supported_major_versions {
        details.insert("supported_major_versions".into(), json!(majors));
    }
    if let Some(seconds) = error.retry_after_seconds {
        details.insert("retry_after_seconds".into(), json!(seconds));
    }
    Value::Object(details)
}

/// The Area B `metadata` object for this response.
pub(crate) fn metadata(request_id: &str) -> Metadata {
    let timestamp = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    Metadata {
        request_id: request_id.to_owned(),
        timestamp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_versions_parse_as_semver() {
        assert_eq!(sdk_major("1.0.0"), Some(1));
        assert_eq!(sdk_major("2.13.7-beta.1+build.5"), Some(2));
        assert_eq!(sdk_major("0.1.0"), Some(0));
        for bad in [
            "1", "1.2", "1.2.3.4", "v1.2.3", "01.2.3", "1.2.x", "1.2.3-", "1.2.3+", "", "1..3",
        ] {
            assert_eq!(sdk_major(bad), None, "{bad}");
        }
    }

    #[test]
    fn request_ids_from_callers_are_kept_only_when_sane() {
        let mut headers = HeaderMap::new();
        headers.insert(REQUEST_ID, HeaderValue::from_static("abc-123_x.y:z"));
        assert_eq!(
            incoming_request_id(&headers).as_deref(),
            Some("abc-123_x.y:z")
        );
        headers.insert(REQUEST_ID, HeaderValue::from_static("has space"));
        assert_eq!(incoming_request_id(&headers), None);
        let long = "a".repeat(129);
        headers.insert(REQUEST_ID, HeaderValue::from_str(&long).unwrap());
        assert_eq!(incoming_request_id(&headers), None);
    }
}

use actix_web::http::StatusCode;
use actix_web::http::header::HeaderValue;
use actix_web::{HttpResponse, ResponseError};

/// Which API a response belongs to; it decides the error body's shape and some code names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// The Tokenization API: `{error:{code,message,detail,retryable,retry_after_seconds?}}`.
    Tokens,
    /// The Platform API: `{status:"error",error:{code,message,details},metadata}`.
    Platform,
}

/// A machine-readable error code. The generic codes are named per area (Area A says
/// `INVALID_INPUT` where Area B says `VALIDATION_FAILED`); [`Code::Named`] is the same in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Invalid,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    Conflict,
    UnsupportedSdk,
    RateLimited,
    Unavailable,
    Internal,
    /// A code the spec names for one specific condition, such as `GRANT_EXPIRED`.
    Named(&'static str),
}

impl Code {
    pub fn render(self, area: Area) -> &'static str {
        match self {
            Code::Invalid => match area {
                Area::Tokens => "INVALID_INPUT",
                Area::Platform => "VALIDATION_FAILED",
            },
            Code::Unauthorized => "UNAUTHORIZED",
            Code::Forbidden => "FORBIDDEN",
            Code::NotFound => "NOT_FOUND",
            Code::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Code::Conflict => "CONFLICT",
            Code::UnsupportedSdk => "UNSUPPORTED_SDK_VERSION",
            Code::RateLimited => "RATE_LIMIT_EXCEEDED",
            Code::Unavailable => "SERVICE_UNAVAILABLE",
            Code::Internal => "INTERNAL_ERROR",
            Code::Named(code) => code,
        }
    }
}

/// The error every handler and extractor returns. It is rendered into the area's shape by the
/// [`edge`](crate::edge) middleware, the only place that writes error bodies.
///
/// Boxed so that `Result<T, ApiError>` stays one pointer wide on the happy path.
#[derive(Debug, Clone)]
pub struct ApiError(Box<ErrorParts>);

/// The parts of an [`ApiError`], reachable through `Deref`.
#[derive(Debug, Clone)]
pub struct ErrorParts {
    pub status: StatusCode,
    pub code: Code,
    /// One sentence for the caller. Never holds a value, token or key.
    pub message: String,
    /// Area A's `detail` string; also put under `details.detail` in Area B when non-empty.
    pub detail: String,
    /// Area B's structured `details`; an empty object when `Null`.
    pub details: serde_json::Value,
    pub retryable: bool,
    pub retry_after_seconds: Option<u64>,
    pub supported_major_versions: Option<Vec<u64>>,
    /// Allowed methods, for 405 responses.
    pub allow: Option<String>,
    /// The internal cause of a 5xx: logged once at the edge, never sent.
    pub cause: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: Code, message: impl Into<String>) -> Self {
        Self(Box::new(ErrorParts {
            status,
            code,
            message: message.into(),
            detail: String::new(),
            details: serde_json::Value::Null,
            retryable: false,
            retry_after_seconds: None,
            supported_major_versions: None,
            allow: None,
            cause: None,
        }))
    }

    /// 400: the request is malformed or fails validation.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Code::Invalid, message)
    }

    /// 401: a credential is missing or invalid.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, Code::Unauthorized, message)
    }

    /// 403: the caller is known but may not do this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, Code::Forbidden, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, Code::NotFound, message)
    }

    /// 503, retryable: a dependency (usually the database) is not answering.
    pub fn unavailable(message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, Code::Unavailable, message);
        e.retryable = true;
        e
    }

    /// 500 with a generic message; `cause` is logged at the edge and never sent.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        let mut e = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            Code::Internal,
            "internal error; the request id identifies it in the service logs",
        );
        e.cause = Some(cause.to_string());
        e
    }

    /// A database failure: 503 (retryable) when the connection or the statement timeout gave
    /// way, or a concurrent transaction made Postgres end this one (a deadlock, a
    /// serialization failure); 500 otherwise. The cause is logged at the edge and never sent.
    pub fn database(error: diesel::result::Error) -> Self {
        use diesel::result::Error;
        let transient = db::is_unavailable(&error)
            || matches!(
                &error,
                // 57014: query_canceled, which is how statement_timeout ends a query.
                Error::DatabaseError(_, info) if info.message().contains("statement timeout")
            );
        let mut e = if db::is_concurrency_conflict(&error) {
            // A deadlock or serialization failure: nothing was committed, and the same
            // request can succeed at once.
            Self::unavailable("a concurrent change got in the way; retry the request")
        } else if transient {
            Self::unavailable("the database did not answer in time")
        } else {
            Self::internal("")
        };
        e.cause = Some(error.to_string());
        e
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = details;
        self
    }

    /// The fallback for a framework response that carries no `ApiError`, by status alone.
    pub fn from_status(status: StatusCode) -> Self {
        let code = match status.as_u16() {
            400 | 413 | 415 | 422 => Code::Invalid,
            401 => Code::Unauthorized,
            403 => Code::Forbidden,
            404 => Code::NotFound,
            405 => Code::MethodNotAllowed,
            409 => Code::Conflict,
            429 => Code::RateLimited,
            503 => Code::Unavailable,
            _ => Code::Internal,
        };
        let message = status.canonical_reason().unwrap_or("error").to_lowercase();
        Self::new(status, code, message)
    }
}

impl std::ops::Deref for ApiError {
    type Target = ErrorParts;
    fn deref(&self) -> &ErrorParts {
        &self.0
    }
}

impl std::ops::DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut ErrorParts {
        &mut self.0
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    /// The body is written by the edge middleware, which knows the area and the request id.
    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::new(self.status);
        if let Some(allow) = self
            .allow
            .as_deref()
            .and_then(|a| HeaderValue::from_str(a).ok())
        {
            response
                .headers_mut()
                .insert(actix_web::http::header::ALLOW, allow);
        }
        response
    }
}

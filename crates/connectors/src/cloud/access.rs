//! What every provider module shares: how an access failed ([`Failure`], [`AccessError`]), a bad
//! environment ([`EnvError`]), the [`Access`] each provider supplies, what it says about a
//! bucket ([`Posture`]), and the storage settings they all use. The provider modules and the
//! cache build on this one; `cloud` builds on them.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use object_store::list::PaginatedListStore;
use object_store::{ClientOptions, ObjectStore, RetryConfig};
use serde::Serialize;

use super::xml;

/// Why an access to cloud storage failed. The categories are what scans count failures by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The platform's own identity, or the exchange for the customer's credentials, failed.
    Identity,
    /// The storage refused the credentials or the action (401, 403).
    Permission,
    /// The bucket or object does not exist.
    NotFound,
    /// The service could not be reached, or timed out.
    Network,
    /// The service answered something this client cannot use.
    Provider,
}

impl Failure {
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Identity => "identity",
            Failure::Permission => "permission",
            Failure::NotFound => "not_found",
            Failure::Network => "network",
            Failure::Provider => "provider",
        }
    }
}

/// A failed access, explained. The message carries the provider's own explanation where there
/// is one, and never a credential.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct AccessError {
    pub failure: Failure,
    pub message: String,
}

impl AccessError {
    pub(crate) fn new(failure: Failure, message: impl Into<String>) -> Self {
        let mut message: String = message.into();
        if message.len() > MAX_MESSAGE {
            let mut cut = MAX_MESSAGE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        AccessError { failure, message }
    }

    /// A failed HTTP exchange with an identity service (`what` names it).
    pub(crate) fn identity_http(what: &str, e: &reqwest::Error) -> Self {
        let failure = if e.is_connect() || e.is_timeout() {
            Failure::Network
        } else {
            Failure::Identity
        };
        // reqwest's Display names the URL, which holds no secret in these exchanges.
        AccessError::new(failure, format!("{what}: {e}"))
    }

    /// The same failure, its message prefixed with what was being done.
    pub(crate) fn context(self, what: &str) -> Self {
        AccessError::new(self.failure, format!("{what}: {}", self.message))
    }

    /// Maps a storage error, classifying it by what went wrong.
    pub(crate) fn storage(e: object_store::Error) -> Self {
        use object_store::Error as E;
        // A credential exchange that failed inside the store keeps its own classification.
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(err) = cause {
            if let Some(access) = err.downcast_ref::<AccessError>() {
                return access.clone();
            }
            cause = err.source();
        }
        let text = e.to_string();
        // List errors arrive wrapped as Generic, with the HTTP status only in the text.
        let status = http_status(&text);
        let failure = match (&e, status) {
            (E::PermissionDenied { .. } | E::Unauthenticated { .. }, _) | (_, Some(401 | 403)) => {
                Failure::Permission
            }
            (E::NotFound { .. }, _) | (_, Some(404)) => Failure::NotFound,
            _ if is_network(&e) => Failure::Network,
            _ => Failure::Provider,
        };
        AccessError::new(failure, explain(&text, status))
    }
}

const MAX_MESSAGE: usize = 600;

/// The status in object_store's "status code: 404 Not Found" text.
fn http_status(text: &str) -> Option<u16> {
    let at = text.find("status code: ")? + "status code: ".len();
    text.get(at..at + 3)?.parse().ok()
}

/// A storage error in one line: the provider's own code and message when its body has them
/// (`404 NoSuchBucket: The specified bucket does not exist`), else object_store's text.
fn explain(text: &str, status: Option<u16>) -> String {
    let coded = xml::coded_error(text).or_else(|| {
        let json = &text[text.find('{')?..];
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        v.pointer("/error/message")?.as_str().map(str::to_owned)
    });
    match (status, coded) {
        (Some(status), Some(coded)) => format!("{status} {coded}"),
        (None, Some(coded)) => coded,
        (_, None) => text.to_owned(),
    }
}

/// Whether a connection could not be made or timed out, anywhere in the error's causes.
fn is_network(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(r) = err.downcast_ref::<reqwest::Error>()
            && (r.is_connect() || r.is_timeout())
        {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::TimedOut
            )
        {
            return true;
        }
        next = err.source();
    }
    false
}

/// A configuration problem found while reading the environment.
#[derive(Debug, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct EnvError {
    pub variable: &'static str,
    pub problem: String,
}

impl EnvError {
    pub(crate) fn new(variable: &'static str, problem: impl Into<String>) -> Self {
        EnvError {
            variable,
            problem: problem.into(),
        }
    }
}

/// What a provider says about one bucket's (Azure container's) exposure and configuration, for
/// detecting exposure drift and configuration drift. Every `None` means the provider does not
/// say: the call is not permitted to the connector's identity, not implemented (emulators), or
/// the setting is not readable with data-plane credentials. `None` is never a guess: it must not
/// be read as "private" or "off". See docs/governance.md, "Bucket posture".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Posture {
    /// Whether anyone, without credentials of the customer's, may read the bucket's objects.
    pub public: Option<bool>,
    /// Why it is public, one stable code per source that makes it so (`acl_all_users`,
    /// `policy_is_public`, `container_access_blob`, `iam_allUsers`, ...); empty when not public.
    pub public_reasons: Vec<String>,
    /// How objects are encrypted at rest by default: `AES256`, `aws:kms`, `none` (S3);
    /// `google-managed`, `customer-managed` (GCS); `microsoft-managed`,
    /// `encryption_scope:<name>` (Azure).
    pub encryption: Option<String>,
    /// Object versioning: `enabled`, `suspended` (S3 only) or `disabled`.
    pub versioning: Option<String>,
}

/// What each provider supplies: its bucket listing, a store per bucket, and each bucket's
/// posture.
#[async_trait::async_trait]
pub(crate) trait Access: Send + Sync + fmt::Debug {
    /// Every bucket (Azure container) the credentials can list.
    async fn list_buckets(&self) -> Result<Vec<String>, AccessError>;
    /// What the provider says about one bucket's exposure and configuration. A setting the
    /// provider withholds is `None`; a bucket that does not exist, or credentials that are
    /// refused outright, fail the whole call like a listing would.
    async fn posture(&self, bucket: &str) -> Result<Posture, AccessError>;
    /// A store for one bucket.
    fn store(&self, bucket: &str, options: ClientOptions) -> Result<Arc<dyn Blobs>, AccessError>;
}

/// A store that can list page by page from a raw prefix and read.
pub trait Blobs: ObjectStore + PaginatedListStore {}
impl<T: ObjectStore + PaginatedListStore> Blobs for T {}

/// Retries for storage requests: a few quick ones, never the library's three-minute default.
pub(crate) fn retry_config() -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(15),
        ..Default::default()
    }
}

/// `base` with `segments` appended to its path, each percent-encoded as one segment (a bucket
/// name never changes the path's shape).
pub(crate) fn url_with_segments(base: &str, segments: &[&str]) -> Result<url::Url, AccessError> {
    let mut url = url::Url::parse(base)
        .map_err(|e| AccessError::new(Failure::Provider, format!("bad endpoint {base}: {e}")))?;
    url.path_segments_mut()
        .map_err(|()| AccessError::new(Failure::Provider, format!("bad endpoint {base}")))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// Where a file named by an environment variable lives.
pub(crate) fn path_var(var: &impl Fn(&str) -> Option<String>, name: &str) -> Option<PathBuf> {
    var(name).map(PathBuf::from)
}

//! What every provider module shares: how an access failed ([`Failure`], [`AccessError`]), a bad
//! environment ([`EnvError`]), the [`Access`] each provider supplies, what it says about a
//! bucket ([`Posture`]), how it writes ([`Writes`]) and spells an ETag ([`EtagForm`]), and the
//! storage settings they all use. The provider modules and the cache build on this one; `cloud`
//! builds on them.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use object_store::list::PaginatedListStore;
use object_store::path::Path as ObjectPath;
use object_store::{
    ClientOptions, ObjectStore, PutMode, PutOptions, PutPayload, RetryConfig, UpdateVersion,
};
use serde::Serialize;

use super::properties::{Encryption, Properties};
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
    /// A write's precondition failed: the object no longer has the ETag the write was
    /// conditional on (HTTP 412, Azure's `ConditionNotMet`, a GCS generation mismatch), or is
    /// gone, or something already exists where a create-only write was asked. Nothing was
    /// written; the caller reads the object again before deciding anything.
    Changed,
    /// The object is larger than the caller may read whole. Nothing was read; asking again
    /// gives the same answer.
    TooLarge,
    /// The storage refused this operation on this object until its owner acts: an archived
    /// object (Azure's Archive tier, S3 Glacier), an immutability policy, legal hold or
    /// retention, an Azure blob with snapshots ([`REFUSALS`]). Nothing was read or written.
    Refused,
}

/// The providers' error codes that refuse an operation on one object until its owner
/// restores, releases or unlocks it: never a changed object, never worth a retry. Matched
/// exactly against the code of the provider's error document (S3's and Azure's `<Code>`,
/// GCS's `error.errors[].reason`), never against the rest of the text, which holds the key.
pub const REFUSALS: &[&str] = &[
    // Azure
    "BlobArchived",
    "BlobImmutableDueToPolicy",
    "BlobImmutableDueToLegalHold",
    "SnapshotsPresent",
    // S3: an archived object, and Object Lock's retention or legal hold
    "InvalidObjectState",
    "ObjectLockedException",
    // GCS
    "retentionPolicyNotMet",
    "objectUnderActiveHold",
];

/// Azure's answers to a blob someone else holds a lease on (412, 409): neither a change nor
/// for good, since leases last 15 to 60 seconds unless infinite. Retried.
const LEASED: &[&str] = &[
    "LeaseIdMissing",
    "LeaseIdMismatchWithBlobOperation",
    "LeaseLost",
    "LeaseAlreadyPresent",
];

/// What a provider's error code says about an object, where it says more than its status.
fn by_code(code: Option<&str>) -> Option<Failure> {
    let code = code?;
    if REFUSALS.contains(&code) {
        Some(Failure::Refused)
    } else if LEASED.contains(&code) {
        Some(Failure::Provider)
    } else {
        None
    }
}

/// The code of the error document in an object_store error's text: the XML `<Code>` of S3,
/// Azure and GCS's XML API, read only after the status (object_store's text names the path
/// before it, and a key may hold anything, `<Code>` included).
fn code_in(text: &str) -> Option<String> {
    let (_, answer) = text.rsplit_once("status code: ")?;
    xml::first(answer, "Code")
}

impl Failure {
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Identity => "identity",
            Failure::Permission => "permission",
            Failure::NotFound => "not_found",
            Failure::Network => "network",
            Failure::Provider => "provider",
            Failure::Changed => "object_changed",
            Failure::TooLarge => "too_large",
            Failure::Refused => "refused",
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

    /// A failed HTTP exchange with a storage service (`what` names the call).
    pub(crate) fn http(what: &str, e: &reqwest::Error) -> Self {
        let failure = if e.is_connect() || e.is_timeout() {
            Failure::Network
        } else {
            Failure::Provider
        };
        // reqwest's Display names the URL: a bucket and a key, never a credential.
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
        let coded = by_code(code_in(&text).as_deref());
        let failure = match (&e, status) {
            _ if coded.is_some() => coded.unwrap_or(Failure::Provider),
            (E::PermissionDenied { .. } | E::Unauthenticated { .. }, _) | (_, Some(401 | 403)) => {
                Failure::Permission
            }
            (E::NotFound { .. }, _) | (_, Some(404)) => Failure::NotFound,
            _ if is_network(&e) => Failure::Network,
            _ => Failure::Provider,
        };
        AccessError::new(failure, explain(&text, status))
    }

    /// Maps a storage error of a conditional write or read: a failed precondition, something
    /// already there for a create-only write (`create`), and (`conditional`) a missing object
    /// all mean the object is not the one the caller named. A refusal ([`REFUSALS`]) is not a
    /// change, though Azure answers some with 409 or 412; nor is a 409 to a read or a
    /// replacement (an archived blob, an immutable one).
    pub(crate) fn conditional(e: object_store::Error, conditional: bool, create: bool) -> Self {
        use object_store::Error as E;
        let why = || {
            let text = e.to_string();
            explain(&text, http_status(&text))
        };
        if by_code(code_in(&e.to_string()).as_deref()).is_some() {
            return AccessError::storage(e);
        }
        match &e {
            E::AlreadyExists { .. } if !create => AccessError::storage(e),
            E::Precondition { .. } | E::AlreadyExists { .. } | E::NotModified { .. } => {
                AccessError::new(Failure::Changed, why())
            }
            E::NotFound { .. } if conditional => {
                AccessError::new(Failure::Changed, format!("the object is gone: {}", why()))
            }
            _ => AccessError::storage(e),
        }
    }

    /// A write the service refused with `status`, its error `code` and `why` (its error
    /// document), for a raw request. `conditional`: the request named an ETag or generation, so
    /// a missing object means it changed; `missing_bucket` says whether the body's error code
    /// names a missing bucket or container, which stays `NotFound` either way.
    pub(crate) fn refused_write(
        what: &str,
        status: u16,
        code: Option<&str>,
        why: String,
        conditional: bool,
        missing_bucket: bool,
    ) -> Self {
        let failure = match status {
            _ if by_code(code).is_some() => by_code(code).unwrap_or(Failure::Provider),
            412 => Failure::Changed,
            404 if conditional && !missing_bucket => Failure::Changed,
            401 | 403 => Failure::Permission,
            404 => Failure::NotFound,
            _ => Failure::Provider,
        };
        AccessError::new(failure, format!("{what}: {status} {why}"))
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
    /// The writes to one bucket, given the store [`Access::store`] made for it.
    fn writes(
        &self,
        bucket: &str,
        store: Arc<dyn Blobs>,
        options: &ClientOptions,
    ) -> Result<Arc<dyn Writes>, AccessError>;
    /// How the provider's listing spells an ETag.
    fn etag_form(&self) -> EtagForm;
}

/// How a provider's listing spells an ETag. Every ETag this crate hands out (listed, read, head,
/// written or copied) is spelled so, so one from a listing can be compared with one from a write
/// as plain text, and stored and matched later (governance keys remediation on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EtagForm {
    /// In double quotes, as HTTP headers carry it: S3 lists `"9b2cf535f27731c974343645a3985328"`,
    /// the GCS XML API lists the same (fake-gcs-server lists it bare; it is quoted here).
    Quoted,
    /// Without quotes: Azure's List Blobs gives `0x8DC...` while its headers say `"0x8DC..."`.
    Bare,
}

impl EtagForm {
    /// `etag`, however it came quoted, spelled this way.
    pub(crate) fn spell(self, etag: &str) -> String {
        match self {
            EtagForm::Quoted => quoted(etag),
            EtagForm::Bare => bare(etag).to_owned(),
        }
    }
}

/// The ETag without surrounding double quotes.
pub(crate) fn bare(etag: &str) -> &str {
    let etag = etag.trim();
    etag.strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or(etag)
}

/// The ETag in double quotes, as `If-Match` and its relatives take it.
pub(crate) fn quoted(etag: &str) -> String {
    format!("\"{}\"", bare(etag))
}

/// Whether two ETags name the same version, however each is quoted.
pub(crate) fn same_etag(a: &str, b: &str) -> bool {
    bare(a) == bare(b)
}

/// What a write to one bucket is conditional on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Put<'a> {
    /// Nothing: whatever is there is replaced.
    Overwrite,
    /// That nothing exists at the key.
    Create,
    /// That the object exists with this ETag.
    Update(&'a str),
}

/// The writes each provider makes to one bucket, conditional where asked. Every ETag taken and
/// returned is the provider's own text; the caller spells it ([`EtagForm`]).
#[async_trait::async_trait]
pub(crate) trait Writes: Send + Sync + fmt::Debug {
    /// The kind of object at `key`, where the provider has more than one and a put replaces
    /// any of them with one kind: Azure's blob type (`BlockBlob`, `AppendBlob`, `PageBlob`).
    /// `None` where objects have one kind (S3, GCS).
    async fn kind(&self, _key: &str) -> Result<Option<String>, AccessError> {
        Ok(None)
    }
    /// Writes `bytes` at `key`; returns the new object's ETag. A failed condition is
    /// [`Failure::Changed`] and writes nothing.
    async fn put(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        mode: Put<'_>,
        properties: &Properties,
    ) -> Result<String, AccessError>;
    /// Deletes `key`. With `etag`, only while the object has it (a missing object is then
    /// [`Failure::Changed`]); without, a missing object is already deleted.
    async fn delete(&self, key: &str, etag: Option<&str>) -> Result<(), AccessError>;
    /// Copies `key` of this bucket, only while it has `etag`, over whatever is at `to_key` of
    /// `to_bucket` (the same connector's, perhaps this one); returns the copy's ETag. The copy
    /// is encrypted as the source is: `encryption` when its read said, else as asked.
    async fn copy(
        &self,
        key: &str,
        etag: &str,
        to_bucket: &str,
        to_key: &str,
        encryption: Option<&Encryption>,
    ) -> Result<String, AccessError>;
}

/// A put through object_store, which makes it conditional itself for S3 and Azure: `If-Match`
/// for [`Put::Update`] (S3's by its default `S3ConditionalPut::ETagMatch`) and
/// `If-None-Match: *` for [`Put::Create`]. Returns the service's ETag for the new object.
///
/// A retried request whose first attempt was written but not answered finds its own write and
/// fails as [`Failure::Changed`]; the caller reads again, as after any change.
pub(crate) async fn put_through(
    store: &dyn Blobs,
    key: &str,
    bytes: bytes::Bytes,
    mode: Put<'_>,
    properties: &Properties,
) -> Result<String, AccessError> {
    let path = object_path(key)?;
    let (conditional, create) = (matches!(mode, Put::Update(_)), matches!(mode, Put::Create));
    let mode = match mode {
        Put::Overwrite => PutMode::Overwrite,
        Put::Create => PutMode::Create,
        Put::Update(etag) => PutMode::Update(UpdateVersion {
            e_tag: Some(quoted(etag)),
            version: None,
        }),
    };
    let options = PutOptions {
        mode,
        attributes: properties.to_attributes(),
        ..Default::default()
    };
    let written = store
        .put_opts(&path, PutPayload::from_bytes(bytes), options)
        .await
        .map_err(|e| AccessError::conditional(e, conditional, create))?;
    written
        .e_tag
        .ok_or_else(|| AccessError::new(Failure::Provider, "the service answered without an ETag"))
}

/// A listed key as a store path (keys come from listings, which already parsed them). Keys for
/// hand-made requests are checked the same way, so every call refuses the same keys.
pub(crate) fn object_path(key: &str) -> Result<ObjectPath, AccessError> {
    ObjectPath::parse(key).map_err(|e| AccessError::new(Failure::Provider, e.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict(body: &str) -> object_store::Error {
        object_store::Error::AlreadyExists {
            path: "docs/a.csv".into(),
            source: format!("Server returned non-2xx status code: 409 Conflict: {body}").into(),
        }
    }

    fn precondition(body: &str) -> object_store::Error {
        object_store::Error::Precondition {
            path: "docs/a.csv".into(),
            source: format!("Server returned non-2xx status code: 412 Precondition Failed: {body}")
                .into(),
        }
    }

    const ARCHIVED: &str = "<Error><Code>BlobArchived</Code><Message>This operation is not \
                            permitted on an archived blob.</Message></Error>";

    #[test]
    fn a_refusal_is_never_a_change() {
        // Azure answers 409 to reading an archived blob, and to writing an immutable one.
        let read = AccessError::conditional(conflict(ARCHIVED), true, false);
        assert_eq!(read.failure, Failure::Refused, "{read:?}");
        // A lease is neither a change nor for good: retried.
        let leased = AccessError::conditional(
            precondition("<Error><Code>LeaseIdMissing</Code></Error>"),
            true,
            false,
        );
        assert_eq!(leased.failure, Failure::Provider, "{leased:?}");
        let delete = AccessError::refused_write(
            "Azure Delete Blob",
            409,
            Some("BlobImmutableDueToPolicy"),
            "BlobImmutableDueToPolicy: This operation is not permitted".into(),
            true,
            false,
        );
        assert_eq!(delete.failure, Failure::Refused);
        // S3's archived object is a 403, and stays a refusal rather than a permission.
        let glacier = AccessError::storage(object_store::Error::Generic {
            store: "S3",
            source: "status code: 403 Forbidden: <Error><Code>InvalidObjectState</Code>\
                     <Message>The operation is not valid for the object's storage class</Message>\
                     </Error>"
                .into(),
        });
        assert_eq!(glacier.failure, Failure::Refused, "{glacier:?}");
    }

    #[test]
    fn only_a_create_takes_a_conflict_for_a_change() {
        let exists = "<Error><Code>BlobAlreadyExists</Code></Error>";
        assert_eq!(
            AccessError::conditional(conflict(exists), false, true).failure,
            Failure::Changed
        );
        assert_eq!(
            AccessError::conditional(conflict("<Error><Code>Other</Code></Error>"), true, false)
                .failure,
            Failure::Provider
        );
        assert_eq!(
            AccessError::conditional(
                precondition("<Error><Code>ConditionNotMet</Code></Error>"),
                true,
                false
            )
            .failure,
            Failure::Changed
        );
    }

    #[test]
    fn a_code_spelled_in_the_key_is_not_the_answers() {
        let on_key = object_store::Error::Precondition {
            path: "a/<Code>InvalidObjectState</Code>.csv".into(),
            source: "Server returned non-2xx status code: 412 Precondition Failed: \
                     <Error><Code>PreconditionFailed</Code></Error>"
                .into(),
        };
        assert_eq!(
            AccessError::conditional(on_key, true, false).failure,
            Failure::Changed
        );
    }

    #[test]
    fn only_the_providers_code_is_read_never_the_key() {
        // A genuine precondition failure on a key that spells a refusal code is a change.
        let on_key = object_store::Error::Precondition {
            path: "exports/SnapshotsPresent/BlobArchived.csv".into(),
            source: "Server returned non-2xx status code: 412 Precondition Failed: \
                     <Error><Code>ConditionNotMet</Code></Error>"
                .into(),
        };
        assert_eq!(
            AccessError::conditional(on_key, true, false).failure,
            Failure::Changed
        );
        let missing = AccessError::refused_write(
            "Azure Delete Blob",
            404,
            Some("BlobNotFound"),
            "BlobNotFound: the blob LeaseLost.csv does not exist".into(),
            true,
            false,
        );
        assert_eq!(missing.failure, Failure::Changed);
        assert_eq!(by_code(Some("NotBlobArchived")), None);
        assert_eq!(by_code(None), None);
    }
}

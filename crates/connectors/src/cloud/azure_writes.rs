//! Writes to one Azure container. Put Blob goes through object_store ([`put_through`]), which
//! sends `If-Match` and `If-None-Match: *` itself. Delete Blob with `If-Match` and Copy Blob with
//! `x-ms-source-if-match` are not in object_store, so they are made here with the connector's
//! Entra ID token, as the container listing and posture are.
//!
//! Every condition is Azure's own, so each write is atomic with respect to the ETag. No
//! request is retried: a conditional request repeated after an unanswered success would find
//! its own change.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::access::{
    AccessError, Blobs, Failure, Put, Writes, put_through, quoted, url_with_segments,
};
use super::properties::{Encryption, Properties};
use super::xml;

/// How long a Copy Blob that Azure answers `pending` is waited for. Within one account a copy
/// is usually done before Azure answers (always on Azurite); a large blob may take longer.
const COPY_WAIT: Duration = Duration::from_secs(30);

/// The Blob service version every request names.
pub(super) const API_VERSION: &str = "2023-11-03";

/// Where the hand-made requests get their bearer token and client: the connector's Entra ID
/// client credentials (`azure`), behind a trait so that this module does not depend back on it.
#[async_trait::async_trait]
pub(super) trait BearerSource: Send + Sync + std::fmt::Debug {
    async fn bearer(&self) -> Result<String, AccessError>;
    fn http(&self) -> &reqwest::Client;
}

/// One container, and what it takes to write to it.
#[derive(Debug)]
pub(super) struct BlobWrites {
    pub(super) store: Arc<dyn Blobs>,
    pub(super) credentials: Arc<dyn BearerSource>,
    /// The account's Blob endpoint.
    pub(super) account_url: String,
    pub(super) container: String,
}

/// What Azure answered a hand-made request: its status, the headers read, and its body.
struct Answer {
    status: u16,
    etag: Option<String>,
    copy_status: Option<String>,
    copy_id: Option<String>,
    blob_type: Option<String>,
    body: String,
}

impl BlobWrites {
    fn url(&self, container: &str, key: &str) -> Result<url::Url, AccessError> {
        let segments: Vec<&str> = std::iter::once(container).chain(key.split('/')).collect();
        url_with_segments(&self.account_url, &segments)
    }

    async fn send(
        &self,
        what: &str,
        method: reqwest::Method,
        url: url::Url,
        headers: &[(&str, &str)],
    ) -> Result<Answer, AccessError> {
        let token = self.credentials.bearer().await?;
        let mut request = self
            .credentials
            .http()
            .request(method, url)
            .bearer_auth(token)
            .header("x-ms-version", API_VERSION);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| AccessError::http(what, &e))?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (etag, copy_status, copy_id, blob_type) = (
            header("etag"),
            header("x-ms-copy-status"),
            header("x-ms-copy-id"),
            header("x-ms-blob-type"),
        );
        let status = response.status().as_u16();
        let body = response
            .text()
            .await
            .map_err(|e| AccessError::http(what, &e))?;
        Ok(Answer {
            status,
            etag,
            copy_status,
            copy_id,
            blob_type,
            body,
        })
    }

    /// Waits for a pending copy into `url` (Get Blob Properties until it is no longer
    /// pending); returns the destination's ETag once it succeeded.
    async fn await_copy(&self, url: url::Url, copy_id: &str) -> Result<String, AccessError> {
        let what = "Azure Copy Blob (pending)";
        let started = Instant::now();
        let mut pause = Duration::from_millis(200);
        loop {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
            let answer = self
                .send(what, reqwest::Method::HEAD, url.clone(), &[])
                .await?;
            if !(200..300).contains(&answer.status) {
                return Err(refused(what, &answer, true));
            }
            if answer.copy_id.as_deref() != Some(copy_id) {
                return Err(AccessError::new(
                    Failure::Changed,
                    format!("{what}: the destination was replaced while the copy was pending"),
                ));
            }
            match answer.copy_status.as_deref() {
                Some("pending") if started.elapsed() < COPY_WAIT => continue,
                Some("success") => return etag_of(what, answer),
                status => {
                    return Err(AccessError::new(
                        Failure::Provider,
                        format!(
                            "{what}: copy {copy_id} is {} after {} s",
                            status.unwrap_or("of unknown status"),
                            started.elapsed().as_secs()
                        ),
                    ));
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl Writes for BlobWrites {
    /// Get Blob Properties' `x-ms-blob-type`: `BlockBlob`, `AppendBlob` or `PageBlob`.
    async fn kind(&self, key: &str) -> Result<Option<String>, AccessError> {
        let what = "Azure Get Blob Properties";
        let url = self.url(&self.container, key)?;
        let answer = self.send(what, reqwest::Method::HEAD, url, &[]).await?;
        if !(200..300).contains(&answer.status) {
            return Err(refused(what, &answer, false));
        }
        Ok(answer.blob_type)
    }

    async fn put(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        mode: Put<'_>,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        put_through(self.store.as_ref(), key, bytes, mode, properties)
            .await
            .map_err(|e| e.context("Azure Put Blob"))
    }

    /// Delete Blob, with `If-Match` when conditional. A blob with snapshots is refused by Azure
    /// (`SnapshotsPresent`): its snapshots are the customer's history, never deleted here.
    async fn delete(&self, key: &str, etag: Option<&str>) -> Result<(), AccessError> {
        let what = "Azure Delete Blob";
        let if_match = etag.map(quoted);
        let mut headers = Vec::new();
        if let Some(if_match) = &if_match {
            headers.push(("if-match", if_match.as_str()));
        }
        let url = self.url(&self.container, key)?;
        let answer = self
            .send(what, reqwest::Method::DELETE, url, &headers)
            .await?;
        let missing_blob = answer.status == 404 && !missing_container(&answer.body);
        if (200..300).contains(&answer.status) || (missing_blob && etag.is_none()) {
            return Ok(());
        }
        Err(refused(what, &answer, etag.is_some()))
    }

    /// Copy Blob of `x-ms-copy-source` (this account's URL of the source) with
    /// `x-ms-source-if-match`. Azure copies the blob's properties and metadata with it. A copy
    /// Azure leaves `pending` is waited for up to [`COPY_WAIT`].
    async fn copy(
        &self,
        key: &str,
        etag: &str,
        to_bucket: &str,
        to_key: &str,
        _encryption: Option<&Encryption>,
    ) -> Result<String, AccessError> {
        let what = "Azure Copy Blob";
        let source = self.url(&self.container, key)?;
        let if_match = quoted(etag);
        let headers = [
            ("x-ms-copy-source", source.as_str()),
            ("x-ms-source-if-match", if_match.as_str()),
            ("content-length", "0"),
        ];
        let destination = self.url(to_bucket, to_key)?;
        let answer = self
            .send(what, reqwest::Method::PUT, destination.clone(), &headers)
            .await?;
        if !(200..300).contains(&answer.status) {
            return Err(refused(what, &answer, true));
        }
        match (answer.copy_status.as_deref(), answer.copy_id.clone()) {
            (Some("pending"), Some(copy_id)) => self.await_copy(destination, &copy_id).await,
            (Some("success") | None, _) => etag_of(what, answer),
            (Some(status), _) => Err(AccessError::new(
                Failure::Provider,
                format!("{what}: the copy is {status}"),
            )),
        }
    }
}

fn etag_of(what: &str, answer: Answer) -> Result<String, AccessError> {
    answer
        .etag
        .ok_or_else(|| AccessError::new(Failure::Provider, format!("{what}: answered no ETag")))
}

/// Whether an error body says the container (not the blob) is missing.
fn missing_container(body: &str) -> bool {
    xml::first(body, "Code").as_deref() == Some("ContainerNotFound")
}

/// A refused request, classified: 412 (`ConditionNotMet`, `SourceConditionNotMet`) and, when
/// conditional, a missing blob (`BlobNotFound`, or `CannotVerifyCopySource` for a copy's
/// source) are a changed object; a missing container is `NotFound`.
fn refused(what: &str, answer: &Answer, conditional: bool) -> AccessError {
    let why = xml::coded_error(&answer.body).unwrap_or_else(|| "no explanation".to_owned());
    AccessError::refused_write(
        what,
        answer.status,
        xml::first(&answer.body, "Code").as_deref(),
        why,
        conditional,
        missing_container(&answer.body),
    )
}

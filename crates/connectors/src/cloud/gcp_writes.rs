//! Writes to one GCS bucket, through the JSON API with the connector's write token.
//!
//! GCS conditions writes on generations, not ETags, and its ETags (the XML API's, which the
//! listing and reads give) are content hashes. So a write conditional on an ETag first asks
//! the XML API for the object's live generation and ETag (`HEAD`), refuses a different ETag,
//! and then makes the write conditional on that generation: `ifGenerationMatch` on an upload or
//! a delete, `sourceGeneration` with `ifSourceGenerationMatch` on a rewrite. The write is atomic
//! with respect to the generation: an object replaced between the two requests has another
//! generation, and GCS refuses the write (412). `ifGenerationMatch=0` makes a create-only
//! upload.
//!
//! A write answers the new generation, not the XML ETag, so the ETag is read once more, of that
//! generation (`HEAD ?generation=`). No request is retried.

use std::sync::Arc;

use serde_json::Value;

use super::access::{AccessError, Failure, Put, Writes, same_etag, url_with_segments};
use super::properties::{Encryption, Properties, key_without_version};

/// The most rewrite calls one copy makes. GCS finishes a copy within one bucket's location and
/// storage class in one call; across them it copies a slice per call, and says to call again.
const MAX_REWRITE_CALLS: usize = 64;

/// Where the writes get their token: the connector's identity with write scope (`gcp`),
/// behind a trait so that this module does not depend back on that one.
#[async_trait::async_trait]
pub(super) trait GcsToken: Send + Sync + std::fmt::Debug {
    async fn credential(&self) -> Result<Arc<object_store::gcp::GcpCredential>, AccessError>;
}

/// One bucket, and what it takes to write to it.
#[derive(Debug)]
pub(super) struct GcsWrites {
    pub(super) writer: Arc<dyn GcsToken>,
    pub(super) http: reqwest::Client,
    /// The storage endpoint, without a trailing `/`.
    pub(super) base: String,
    pub(super) bucket: String,
}

/// What GCS answered: status, the XML API's version headers, body.
struct Answer {
    status: u16,
    etag: Option<String>,
    generation: Option<String>,
    /// `x-goog-encryption-kms-key-name`: the customer-managed key the object is under.
    kms_key: Option<String>,
    body: String,
}

/// The object version a HEAD found: its ETag, generation and customer-managed key, if any.
struct Version {
    etag: String,
    generation: String,
    kms_key: Option<String>,
}

impl GcsWrites {
    async fn send(
        &self,
        what: &str,
        method: reqwest::Method,
        url: url::Url,
        body: Option<(String, Vec<u8>)>,
    ) -> Result<Answer, AccessError> {
        let token = self.writer.credential().await?;
        let method_is_post = method == reqwest::Method::POST;
        let mut request = self.http.request(method, url).bearer_auth(&token.bearer);
        request = match body {
            Some((content_type, body)) => request.header("content-type", content_type).body(body),
            // Google refuses a POST without a length (411), and reqwest sends none when empty.
            None if method_is_post => request.header("content-length", "0"),
            None => request,
        };
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
        let (etag, generation, kms_key) = (
            header("etag"),
            header("x-goog-generation"),
            header("x-goog-encryption-kms-key-name"),
        );
        let status = response.status().as_u16();
        let body = response
            .text()
            .await
            .map_err(|e| AccessError::http(what, &e))?;
        Ok(Answer {
            status,
            etag,
            generation,
            kms_key,
            body,
        })
    }

    /// The XML API's ETag and generation of `bucket/key` (of `generation` when given), or
    /// `None` when there is no such object.
    async fn version(
        &self,
        bucket: &str,
        key: &str,
        generation: Option<&str>,
    ) -> Result<Option<Version>, AccessError> {
        let what = "GCS object metadata";
        let segments: Vec<&str> = std::iter::once(bucket).chain(key.split('/')).collect();
        let mut url = url_with_segments(&self.base, &segments)?;
        if let Some(generation) = generation {
            url.query_pairs_mut().append_pair("generation", generation);
        }
        let answer = self.send(what, reqwest::Method::HEAD, url, None).await?;
        match answer.status {
            404 => Ok(None),
            200..=299 => match (answer.etag, answer.generation) {
                (Some(etag), Some(generation)) => Ok(Some(Version {
                    etag,
                    generation,
                    kms_key: answer.kms_key,
                })),
                _ => Err(AccessError::new(
                    Failure::Provider,
                    format!("{what}: answered without ETag or x-goog-generation"),
                )),
            },
            _ => Err(refused(what, &answer, false)),
        }
    }

    /// The live generation of `key`, if its ETag is still `etag`.
    async fn generation_of(&self, key: &str, etag: &str) -> Result<String, AccessError> {
        Ok(self.live_version(key, etag).await?.generation)
    }

    /// The live version of `key`, if its ETag is still `etag`.
    async fn live_version(&self, key: &str, etag: &str) -> Result<Version, AccessError> {
        match self.version(&self.bucket, key, None).await? {
            None => Err(AccessError::new(
                Failure::Changed,
                format!("gs://{}/{key} is gone", self.bucket),
            )),
            Some(found) if !same_etag(&found.etag, etag) => Err(AccessError::new(
                Failure::Changed,
                format!(
                    "gs://{}/{key} has ETag {}, not {etag}",
                    self.bucket, found.etag
                ),
            )),
            Some(found) => Ok(found),
        }
    }

    /// The ETag of the generation a write just made.
    async fn etag_of(
        &self,
        bucket: &str,
        key: &str,
        written: &Value,
    ) -> Result<String, AccessError> {
        let generation = written
            .get("generation")
            .and_then(|g| {
                g.as_str()
                    .map(str::to_owned)
                    .or_else(|| g.as_i64().map(|g| g.to_string()))
            })
            .ok_or_else(|| {
                AccessError::new(
                    Failure::Provider,
                    "GCS answered a write without its generation",
                )
            })?;
        match self.version(bucket, key, Some(&generation)).await? {
            Some(found) => Ok(found.etag),
            // Only a newer write, racing this one, removes the generation just written.
            None => Err(AccessError::new(
                Failure::Changed,
                format!(
                    "gs://{bucket}/{key} was written as generation {generation}, and replaced \
                     before its ETag could be read"
                ),
            )),
        }
    }

    /// A multipart upload (metadata, then content) conditional on `if_generation`.
    async fn upload(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        if_generation: Option<&str>,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        let what = "GCS upload";
        let mut url = url_with_segments(
            &self.base,
            &["upload", "storage", "v1", "b", &self.bucket, "o"],
        )?;
        url.query_pairs_mut().append_pair("uploadType", "multipart");
        // The customer-managed key the content was under stays its key.
        if let Some(kms_key) = &properties.encryption.gcs_kms_key {
            url.query_pairs_mut().append_pair("kmsKeyName", kms_key);
        }
        if let Some(generation) = if_generation {
            url.query_pairs_mut()
                .append_pair("ifGenerationMatch", generation);
        }
        let resource = properties.gcs_resource(key);
        let (content_type, body) = multipart_related(&resource, &bytes, properties.content_type());
        let answer = self
            .send(what, reqwest::Method::POST, url, Some((content_type, body)))
            .await?;
        let written = json_answer(what, &answer, if_generation.is_some())?;
        self.etag_of(&self.bucket, key, &written).await
    }
}

#[async_trait::async_trait]
impl Writes for GcsWrites {
    async fn put(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        mode: Put<'_>,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        match mode {
            Put::Overwrite => self.upload(key, bytes, None, properties).await,
            Put::Create => self.upload(key, bytes, Some("0"), properties).await,
            Put::Update(etag) => {
                let generation = self.generation_of(key, etag).await?;
                self.upload(key, bytes, Some(&generation), properties).await
            }
        }
    }

    /// `DELETE .../o/{key}?ifGenerationMatch=`. Never with `generation=`, which would delete
    /// that generation for good instead of leaving it noncurrent in a versioned bucket.
    async fn delete(&self, key: &str, etag: Option<&str>) -> Result<(), AccessError> {
        let what = "GCS delete";
        let generation = match etag {
            Some(etag) => Some(self.generation_of(key, etag).await?),
            None => None,
        };
        let mut url =
            url_with_segments(&self.base, &["storage", "v1", "b", &self.bucket, "o", key])?;
        if let Some(generation) = &generation {
            url.query_pairs_mut()
                .append_pair("ifGenerationMatch", generation);
        }
        let answer = self.send(what, reqwest::Method::DELETE, url, None).await?;
        let missing_object = answer.status == 404 && !missing_bucket(&answer.body);
        if (200..300).contains(&answer.status) || (missing_object && etag.is_none()) {
            return Ok(());
        }
        Err(refused(what, &answer, etag.is_some()))
    }

    /// `POST .../o/{key}/rewriteTo/b/{to_bucket}/o/{to_key}` of exactly the generation that had
    /// `etag`, repeated with GCS's `rewriteToken` until it says done. The metadata (its content
    /// type among it) is copied with the object.
    async fn copy(
        &self,
        key: &str,
        etag: &str,
        to_bucket: &str,
        to_key: &str,
        _encryption: Option<&Encryption>,
    ) -> Result<String, AccessError> {
        let what = "GCS rewrite";
        let source = self.live_version(key, etag).await?;
        let generation = source.generation;
        // A copy of an object under a customer-managed key stays under it; without naming it,
        // the copy takes the destination bucket's default key (or Google's).
        let kms_key = source.kms_key.as_deref().map(key_without_version);
        let mut token: Option<String> = None;
        for _ in 0..MAX_REWRITE_CALLS {
            let mut url = url_with_segments(
                &self.base,
                &[
                    "storage",
                    "v1",
                    "b",
                    &self.bucket,
                    "o",
                    key,
                    "rewriteTo",
                    "b",
                    to_bucket,
                    "o",
                    to_key,
                ],
            )?;
            {
                let mut query = url.query_pairs_mut();
                query.append_pair("sourceGeneration", &generation);
                query.append_pair("ifSourceGenerationMatch", &generation);
                if let Some(kms_key) = kms_key {
                    query.append_pair("destinationKmsKeyName", kms_key);
                }
                if let Some(token) = &token {
                    query.append_pair("rewriteToken", token);
                }
            }
            let answer = self.send(what, reqwest::Method::POST, url, None).await?;
            let progress = json_answer(what, &answer, true)?;
            if progress.get("done").and_then(Value::as_bool) == Some(true) {
                let resource = progress.get("resource").cloned().unwrap_or_default();
                return self.etag_of(to_bucket, to_key, &resource).await;
            }
            token = progress
                .get("rewriteToken")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if token.is_none() {
                return Err(AccessError::new(
                    Failure::Provider,
                    format!("{what}: not done, and no rewriteToken to go on with"),
                ));
            }
        }
        Err(AccessError::new(
            Failure::Provider,
            format!("{what}: not done after {MAX_REWRITE_CALLS} calls"),
        ))
    }
}

/// A JSON API answer's body, or why the call failed.
fn json_answer(what: &str, answer: &Answer, conditional: bool) -> Result<Value, AccessError> {
    if !(200..300).contains(&answer.status) {
        return Err(refused(what, answer, conditional));
    }
    serde_json::from_str(&answer.body)
        .map_err(|_| AccessError::new(Failure::Provider, format!("{what}: unreadable JSON")))
}

/// Whether a 404's body says the bucket (not the object) is missing. GCS says "The specified
/// bucket does not exist."; fake-gcs-server says nothing either way.
fn missing_bucket(body: &str) -> bool {
    google_message(body).is_some_and(|m| m.to_ascii_lowercase().contains("bucket does not exist"))
}

fn google_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.pointer("/error/message")?.as_str().map(str::to_owned)
}

/// The first `error.errors[].reason` of a JSON API error (`retentionPolicyNotMet`, ...).
fn google_reason(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.pointer("/error/errors")?
        .as_array()?
        .iter()
        .find_map(|e| e.get("reason")?.as_str().map(str::to_owned))
}

fn refused(what: &str, answer: &Answer, conditional: bool) -> AccessError {
    let reason = google_reason(&answer.body);
    let message = google_message(&answer.body).unwrap_or_else(|| "no explanation".to_owned());
    let why = match &reason {
        Some(reason) => format!("{reason}: {message}"),
        None => message,
    };
    AccessError::refused_write(
        what,
        answer.status,
        reason.as_deref(),
        why,
        conditional,
        missing_bucket(&answer.body),
    )
}

/// A `multipart/related` body of `metadata` (JSON) then `content`, and its content type. The
/// boundary is random and checked against the content, so no content can end a part early.
fn multipart_related(metadata: &Value, content: &[u8], content_type: &str) -> (String, Vec<u8>) {
    let mut boundary = format!("dps-{}", uuid::Uuid::new_v4().simple());
    while contains(content, boundary.as_bytes()) {
        boundary = format!("dps-{}", uuid::Uuid::new_v4().simple());
    }
    let mut body = Vec::with_capacity(content.len() + 256);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n\
             --{boundary}\r\ncontent-type: {content_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/related; boundary={boundary}"), body)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_multipart_body_holds_the_metadata_then_the_exact_content() {
        let content = b"a,b\r\n--not-a-boundary\r\n\x00\xff";
        let (content_type, body) =
            multipart_related(&json!({"name": "k"}), content, "application/octet-stream");
        let boundary = content_type
            .strip_prefix("multipart/related; boundary=")
            .unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!("--{boundary}\r\n")), "{text}");
        assert!(text.contains("{\"name\":\"k\"}"), "{text}");
        let start = body.windows(4).position(|w| w == b"a,b\r").unwrap();
        let end = body.len() - format!("\r\n--{boundary}--\r\n").len();
        assert_eq!(&body[start..end], content);
    }

    #[test]
    fn a_missing_bucket_is_told_from_a_missing_object() {
        assert!(missing_bucket(
            r#"{"error":{"code":404,"message":"The specified bucket does not exist."}}"#
        ));
        assert!(!missing_bucket(
            r#"{"error":{"code":404,"message":"No such object: b/k"}}"#
        ));
        assert!(!missing_bucket(""));
    }

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            etag: None,
            generation: None,
            kms_key: None,
            body: body.to_owned(),
        }
    }

    #[test]
    fn a_retention_policy_or_hold_is_a_refusal() {
        let body = r#"{"error":{"code":403,"message":"Object 'b/k' is subject to bucket's retention policy or object retention and cannot be deleted or overwritten until 2027-01-01",
            "errors":[{"reason":"retentionPolicyNotMet","message":"..."}]}}"#;
        let refusal = refused("GCS delete", &answer(403, body), true);
        assert_eq!(refusal.failure, Failure::Refused, "{refusal:?}");
        assert!(
            refusal.message.contains("retentionPolicyNotMet"),
            "{refusal:?}"
        );
        let denied =
            r#"{"error":{"code":403,"message":"no access","errors":[{"reason":"forbidden"}]}}"#;
        assert_eq!(
            refused("GCS delete", &answer(403, denied), true).failure,
            Failure::Permission
        );
    }
}

//! Writes to one S3 bucket. Puts go through object_store ([`put_through`]), which sends
//! `If-Match` and `If-None-Match: *` itself. A DeleteObject conditional on an ETag and a
//! CopyObject conditional on its source's ETag are not in object_store, so they are signed here
//! like every other S3 call (`sigv4`) and addressed path-style, as object_store addresses the
//! bucket.
//!
//! Both conditions are the service's own, so each write is atomic with respect to the ETag: S3
//! checks it and writes in one step. No request is retried (object_store retries its puts): a
//! conditional request repeated after an unanswered success would find its own change.

use std::sync::Arc;

use super::access::{AccessError, Blobs, Failure, Put, Writes, put_through, quoted};
use super::properties::{Encryption, Properties};
use super::sigv4::signed;
use super::xml;

/// Where the hand-made requests get their credentials and client: the connector's assumed
/// role (`aws`), behind a trait so that this module does not depend back on that one.
#[async_trait::async_trait]
pub(super) trait S3Credentials: Send + Sync + std::fmt::Debug {
    async fn credential(&self) -> Result<Arc<object_store::aws::AwsCredential>, AccessError>;
    fn http(&self) -> &reqwest::Client;
}

/// Makes a store of this bucket that encrypts what it puts under a KMS key: the key id, whether
/// it is DSSE, and the bucket-key setting if the object named one.
pub(super) type EncryptedStore =
    Box<dyn Fn(&str, bool, Option<bool>) -> Result<Arc<dyn Blobs>, AccessError> + Send + Sync>;

/// A KMS key as a store names it: its id, whether it is DSSE, and the bucket-key setting.
type KmsKey = (String, bool, Option<bool>);

/// The stores of one bucket that put under a given KMS key, made once each.
pub(super) struct EncryptedStores {
    make: EncryptedStore,
    made: std::sync::Mutex<std::collections::HashMap<KmsKey, Arc<dyn Blobs>>>,
}

impl EncryptedStores {
    pub(super) fn new(make: EncryptedStore) -> Self {
        EncryptedStores {
            make,
            made: std::sync::Mutex::default(),
        }
    }

    fn get(
        &self,
        key: &str,
        dsse: bool,
        bucket_key: Option<bool>,
    ) -> Result<Arc<dyn Blobs>, AccessError> {
        let id = (key.to_owned(), dsse, bucket_key);
        if let Some(store) = self.made.lock().ok().and_then(|m| m.get(&id).cloned()) {
            return Ok(store);
        }
        let store = (self.make)(key, dsse, bucket_key)?;
        if let Ok(mut made) = self.made.lock() {
            made.insert(id, store.clone());
        }
        Ok(store)
    }
}

impl std::fmt::Debug for EncryptedStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let made = self.made.lock().map(|m| m.len()).unwrap_or_default();
        f.debug_struct("EncryptedStores")
            .field("made", &made)
            .finish()
    }
}

/// One bucket, and what it takes to write to it.
#[derive(Debug)]
pub(super) struct S3Writes {
    pub(super) store: Arc<dyn Blobs>,
    /// Where a put that keeps an object's KMS key goes.
    pub(super) encrypted: EncryptedStores,
    pub(super) role: Arc<dyn S3Credentials>,
    pub(super) region: String,
    /// The S3 endpoint, without a trailing `/`.
    pub(super) endpoint: String,
    pub(super) bucket: String,
}

impl S3Writes {
    /// `{endpoint}/{bucket}/{key}`, each part encoded as SigV4 canonicalizes it for S3 (every
    /// byte but the unreserved ones; `/` between a key's segments kept), so the path signed is
    /// the path S3 checks.
    fn url(&self, bucket: &str, key: &str) -> String {
        format!("{}/{}/{}", self.endpoint, encode(bucket), encode_key(key))
    }

    /// Sends a signed, empty-bodied request; returns its status, headers and body.
    async fn send(
        &self,
        what: &str,
        method: http::Method,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<(u16, reqwest::header::HeaderMap, String), AccessError> {
        let credential = self.role.credential().await?;
        let response = signed(
            self.role.http(),
            &credential,
            ("s3", &self.region),
            method,
            url,
            headers,
            Vec::new(),
        )?
        .send()
        .await
        .map_err(|e| AccessError::http(what, &e))?;
        let status = response.status().as_u16();
        let answered = response.headers().clone();
        let body = response
            .text()
            .await
            .map_err(|e| AccessError::http(what, &e))?;
        Ok((status, answered, body))
    }

    /// How the object at `key`, while it has `etag`, is encrypted at rest: the
    /// `x-amz-server-side-encryption*` headers a copy must name to keep it so. Without them
    /// CopyObject encrypts the copy as the destination bucket's default does, so a copy of an
    /// object under a customer-managed KMS key would be readable by anyone the bucket's
    /// default lets read.
    async fn encryption(&self, key: &str, etag: &str) -> Result<Encryption, AccessError> {
        let what = "S3 HeadObject";
        let if_match = quoted(etag);
        let url = self.url(&self.bucket, key);
        let (status, answered, body) = self
            .send(
                what,
                http::Method::HEAD,
                &url,
                &[("if-match", if_match.as_str())],
            )
            .await?;
        if !(200..300).contains(&status) {
            return Err(refused(what, status, &body, true));
        }
        Ok(Encryption::from_headers(&answered))
    }
}

#[async_trait::async_trait]
impl Writes for S3Writes {
    async fn put(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        mode: Put<'_>,
        properties: &Properties,
    ) -> Result<String, AccessError> {
        // The KMS key the content was under (the original's, or its snapshot's) stays its key;
        // else the bucket's default encryption applies.
        let store = match properties.encryption.s3_kms_key() {
            Some((kms_key, dsse, bucket_key)) => self.encrypted.get(kms_key, dsse, bucket_key)?,
            None => self.store.clone(),
        };
        put_through(store.as_ref(), key, bytes, mode, properties)
            .await
            .map_err(|e| e.context("S3 PutObject"))
    }

    /// `DELETE` with `If-Match`. S3 answers 204 for a missing key without a condition, and
    /// `NoSuchKey` (AWS) or 412 with one.
    async fn delete(&self, key: &str, etag: Option<&str>) -> Result<(), AccessError> {
        let what = "S3 DeleteObject";
        let if_match = etag.map(quoted);
        let mut headers = Vec::new();
        if let Some(if_match) = &if_match {
            headers.push(("if-match", if_match.as_str()));
        }
        let url = self.url(&self.bucket, key);
        let (status, _, body) = self
            .send(what, http::Method::DELETE, &url, &headers)
            .await?;
        if (200..300).contains(&status) {
            return Ok(());
        }
        Err(refused(what, status, &body, etag.is_some()))
    }

    /// `PUT` of the destination with `x-amz-copy-source` and `x-amz-copy-source-if-match`.
    /// The metadata (its content type among it) is copied with the object, and the source's
    /// encryption at rest is named (its KMS key), as read just before. CopyObject copies up to
    /// 5 GB; a larger source is refused by S3 (`InvalidRequest`, a provider failure).
    async fn copy(
        &self,
        key: &str,
        etag: &str,
        to_bucket: &str,
        to_key: &str,
        encryption: Option<&Encryption>,
    ) -> Result<String, AccessError> {
        let what = "S3 CopyObject";
        // The read of the object said how it is encrypted; else it is asked (one HeadObject).
        let asked;
        let encryption = match encryption {
            Some(known) => known,
            None => {
                asked = self.encryption(key, etag).await?;
                &asked
            }
        };
        let source = format!("/{}/{}", encode(&self.bucket), encode_key(key));
        let if_match = quoted(etag);
        let mut headers = vec![
            ("x-amz-copy-source", source.as_str()),
            ("x-amz-copy-source-if-match", if_match.as_str()),
            // moto wants a length even for an empty body, which reqwest leaves out.
            ("content-length", "0"),
        ];
        headers.extend(encryption.s3.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let url = self.url(to_bucket, to_key);
        let (status, _, body) = self.send(what, http::Method::PUT, &url, &headers).await?;
        copied_etag(what, status, &body)
    }
}

/// The ETag of a CopyObject's answer. S3 may answer 200 and still fail the copy, with an
/// `<Error>` body instead of `<CopyObjectResult>`.
fn copied_etag(what: &str, status: u16, body: &str) -> Result<String, AccessError> {
    if !(200..300).contains(&status) {
        return Err(refused(what, status, body, true));
    }
    if body.contains("<Error>") {
        let why = xml::coded_error(body).unwrap_or_else(|| "an error".to_owned());
        return Err(AccessError::new(
            Failure::Provider,
            format!("{what}: {status} {why}"),
        ));
    }
    xml::first(body, "ETag")
        .ok_or_else(|| AccessError::new(Failure::Provider, format!("{what}: answered no ETag")))
}

/// A refused write, classified. A missing bucket is `NotFound`; a missing key under a
/// condition is a changed object.
fn refused(what: &str, status: u16, body: &str, conditional: bool) -> AccessError {
    let code = xml::first(body, "Code");
    let why = xml::coded_error(body).unwrap_or_else(|| "no explanation".to_owned());
    let missing_bucket = code.as_deref() == Some("NoSuchBucket");
    AccessError::refused_write(
        what,
        status,
        code.as_deref(),
        why,
        conditional,
        missing_bucket,
    )
}

/// A key percent-encoded segment by segment, its `/`s kept.
fn encode_key(key: &str) -> String {
    key.split('/').map(encode).collect::<Vec<_>>().join("/")
}

/// Every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`) as `%XX`: SigV4's URI encoding.
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_encoded_as_sigv4_canonicalizes_them() {
        assert_eq!(encode_key("a b/c+d=é/x~y.z"), "a%20b/c%2Bd%3D%C3%A9/x~y.z");
        assert_eq!(encode_key(".dps-lkg/x/a.csv"), ".dps-lkg/x/a.csv");
    }

    #[test]
    fn a_copy_answered_200_with_an_error_body_failed() {
        let ok = "<CopyObjectResult><ETag>&quot;abc&quot;</ETag></CopyObjectResult>";
        assert_eq!(copied_etag("copy", 200, ok).unwrap(), "\"abc\"");
        let failed = "<Error><Code>InternalError</Code><Message>retry</Message></Error>";
        let e = copied_etag("copy", 200, failed).unwrap_err();
        assert_eq!(e.failure, Failure::Provider);
        assert!(e.message.contains("InternalError"), "{e:?}");
        let gone = "<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>";
        assert_eq!(
            copied_etag("copy", 404, gone).unwrap_err().failure,
            Failure::Changed
        );
        let no_bucket = "<Error><Code>NoSuchBucket</Code><Message>none</Message></Error>";
        assert_eq!(
            copied_etag("copy", 404, no_bucket).unwrap_err().failure,
            Failure::NotFound
        );
        let stale = "<Error><Code>PreconditionFailed</Code></Error>";
        assert_eq!(
            copied_etag("copy", 412, stale).unwrap_err().failure,
            Failure::Changed
        );
    }
}

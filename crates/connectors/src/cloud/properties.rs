//! What a rewrite keeps of an object besides its bytes: the headers its readers are served
//! (`Content-Type`, `Content-Encoding`, `Content-Disposition`, `Content-Language`,
//! `Cache-Control`) and the owner's metadata (S3 `x-amz-meta-*`, Azure `x-ms-meta-*`, GCS
//! `metadata`). A remediated object is the same object with some values replaced, so all of
//! them are read with its content and written back with the new content.
//!
//! The customer-managed key an object is under is kept too ([`Encryption`]), on S3 and GCS.
//!
//! Not kept, because a put cannot carry them: S3 object tags and the object's storage class
//! (the bucket's default applies to the new version), Azure's access tier and encryption
//! scope, GCS's custom time and retention. docs/governance.md lists them.

use std::collections::BTreeMap;
use std::fmt;

use object_store::{Attribute, AttributeValue, Attributes};
use serde_json::{Map, Value};

/// The content type every write gives an object that had none, or none that may be written
/// back: a service left to choose picks its own default (moto even stores an empty one).
pub(crate) const CONTENT_TYPE: &str = "application/octet-stream";

/// An object's served headers and user metadata, as read with it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Properties {
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub content_language: Option<String>,
    pub cache_control: Option<String>,
    /// User-defined metadata, by name as the service lists it (without its header prefix).
    pub metadata: BTreeMap<String, String>,
    /// The customer-managed key it is encrypted under, which a rewrite keeps.
    pub encryption: Encryption,
}

/// Metadata is the customer's and may name people: only its names' count is printed.
impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Properties")
            .field("content_type", &self.content_type)
            .field("content_encoding", &self.content_encoding)
            .field("content_disposition", &self.content_disposition.is_some())
            .field("content_language", &self.content_language)
            .field("cache_control", &self.cache_control)
            .field("metadata", &format_args!("{} entries", self.metadata.len()))
            .field("encryption", &self.encryption)
            .finish()
    }
}

impl Properties {
    /// Only a content type, as a new object is written.
    pub fn of_type(content_type: &str) -> Self {
        Properties {
            content_type: Some(content_type.to_owned()),
            ..Properties::default()
        }
    }

    /// Whether the stored bytes are encoded (compressed) for transfer: a rewrite of them in
    /// place would not be a rewrite of the content its readers see.
    pub fn is_encoded(&self) -> bool {
        self.content_encoding
            .as_deref()
            .map(str::trim)
            .is_some_and(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))
    }

    /// From the attributes object_store read with an object.
    pub(crate) fn from_attributes(attributes: &Attributes) -> Self {
        let mut properties = Properties::default();
        for (attribute, value) in attributes {
            let value = value.to_string();
            match attribute {
                Attribute::ContentType => properties.content_type = Some(value),
                Attribute::ContentEncoding => properties.content_encoding = Some(value),
                Attribute::ContentDisposition => properties.content_disposition = Some(value),
                Attribute::ContentLanguage => properties.content_language = Some(value),
                Attribute::CacheControl => properties.cache_control = Some(value),
                Attribute::Metadata(name) => {
                    properties.metadata.insert(name.to_string(), value);
                }
                // The storage class: never read by object_store's gets, and left to the
                // bucket's default on a put.
                _ => {}
            }
        }
        properties
    }

    /// The attributes object_store writes with a put (S3 and Azure). Each value goes into a
    /// header, so one that could not be a header value is left out; the content type then
    /// falls back to [`CONTENT_TYPE`].
    pub(crate) fn to_attributes(&self) -> Attributes {
        let mut attributes = Attributes::new();
        attributes.insert(
            Attribute::ContentType,
            AttributeValue::from(self.content_type().to_owned()),
        );
        for (attribute, value) in [
            (Attribute::ContentEncoding, &self.content_encoding),
            (Attribute::ContentDisposition, &self.content_disposition),
            (Attribute::ContentLanguage, &self.content_language),
            (Attribute::CacheControl, &self.cache_control),
        ] {
            if let Some(value) = value.as_deref().filter(|v| is_header_value(v)) {
                attributes.insert(attribute, AttributeValue::from(value.to_owned()));
            }
        }
        for (name, value) in self.written_metadata() {
            attributes.insert(
                Attribute::Metadata(name.clone().into()),
                AttributeValue::from(value.clone()),
            );
        }
        attributes
    }

    /// The fields of a GCS object resource that carry the same (a JSON API upload's metadata
    /// part), beside its `name`.
    pub(crate) fn gcs_resource(&self, name: &str) -> Value {
        let mut resource = Map::new();
        resource.insert("name".into(), name.into());
        resource.insert("contentType".into(), self.content_type().into());
        for (field, value) in [
            ("contentEncoding", &self.content_encoding),
            ("contentDisposition", &self.content_disposition),
            ("contentLanguage", &self.content_language),
            ("cacheControl", &self.cache_control),
        ] {
            if let Some(value) = value.as_deref().filter(|v| is_header_value(v)) {
                resource.insert(field.into(), value.into());
            }
        }
        let metadata: Map<String, Value> = self
            .written_metadata()
            .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
            .collect();
        if !metadata.is_empty() {
            resource.insert("metadata".into(), Value::Object(metadata));
        }
        Value::Object(resource)
    }

    /// The content type to write: the one read if it is a plain header value, else
    /// [`CONTENT_TYPE`].
    pub(crate) fn content_type(&self) -> &str {
        self.content_type
            .as_deref()
            .filter(|t| is_header_value(t) && !t.is_empty())
            .unwrap_or(CONTENT_TYPE)
    }

    fn written_metadata(&self) -> impl Iterator<Item = (&String, &String)> {
        self.metadata
            .iter()
            .filter(|(name, value)| is_metadata_name(name) && is_header_value(value))
    }
}

/// Printable ASCII and spaces, as read from a header: nothing that could end one.
fn is_header_value(text: &str) -> bool {
    text.len() <= 2048 && text.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// A header name's characters (and so a metadata name every service accepts back).
fn is_metadata_name(name: &str) -> bool {
    (1..=256).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// How an object is encrypted at rest, where a copy or a rewrite must say so to keep it: the
/// customer-managed key it is under. Without naming it, S3's CopyObject and PutObject and GCS's
/// rewrite and upload encrypt the new object as the bucket's default does, so a copy of the
/// original values would be readable by anyone that default lets read. Read with the object
/// (`read_whole`); empty for an object under the provider's own keys, which needs nothing said.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Encryption {
    /// S3 SSE-KMS: `x-amz-server-side-encryption` (`aws:kms` or `aws:kms:dsse`), the key id
    /// and the bucket-key setting, as S3 answered them.
    pub(crate) s3: Vec<(String, String)>,
    /// GCS CMEK: the Cloud KMS key, without the key version the object names.
    pub(crate) gcs_kms_key: Option<String>,
}

/// The names are fixed; the values (a KMS key's name) name the customer's key, and are shown.
impl fmt::Debug for Encryption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encryption")
            .field("s3", &self.s3)
            .field("gcs_kms_key", &self.gcs_kms_key)
            .finish()
    }
}

impl Encryption {
    /// The headers S3 answers with an object's encryption, which CopyObject takes as they are.
    const S3_HEADERS: [&'static str; 3] = [
        "x-amz-server-side-encryption",
        "x-amz-server-side-encryption-aws-kms-key-id",
        "x-amz-server-side-encryption-bucket-key-enabled",
    ];

    /// From a storage answer's headers: S3's SSE-KMS ones (SSE-S3's `AES256` says nothing a
    /// copy should repeat: naming it would override a stronger default at the destination),
    /// and GCS's `x-goog-encryption-kms-key-name`.
    pub(crate) fn from_headers(headers: &http::HeaderMap) -> Self {
        let header = |name: &str| headers.get(name)?.to_str().ok().map(str::to_owned);
        let s3 = match header("x-amz-server-side-encryption") {
            Some(algorithm) if algorithm.starts_with("aws:kms") => Self::S3_HEADERS
                .into_iter()
                .filter_map(|name| Some((name.to_owned(), header(name)?)))
                .collect(),
            _ => Vec::new(),
        };
        let gcs_kms_key = header("x-goog-encryption-kms-key-name")
            .map(|name| key_without_version(&name).to_owned());
        Encryption { s3, gcs_kms_key }
    }

    pub fn is_empty(&self) -> bool {
        self.s3.is_empty() && self.gcs_kms_key.is_none()
    }

    /// To keep with a request: `null` when empty, else `{"s3": [[name, value], ...],
    /// "gcs_kms_key": ...}`.
    pub fn to_json(&self) -> Option<Value> {
        (!self.is_empty())
            .then(|| serde_json::json!({ "s3": self.s3, "gcs_kms_key": self.gcs_kms_key }))
    }

    /// Back from [`Encryption::to_json`]; anything else is empty. Only S3's encryption headers
    /// are taken back, so a stored value can name nothing else.
    pub fn from_json(value: Option<&Value>) -> Self {
        let Some(value) = value else {
            return Encryption::default();
        };
        let s3 = value
            .get("s3")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|pair| {
                let name = pair.get(0)?.as_str()?;
                let value = pair.get(1)?.as_str()?;
                Self::S3_HEADERS
                    .contains(&name)
                    .then(|| (name.to_owned(), value.to_owned()))
            })
            .collect();
        let gcs_kms_key = value
            .get("gcs_kms_key")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Encryption { s3, gcs_kms_key }
    }

    /// The S3 KMS key id and whether it is DSSE, where one is named.
    pub(crate) fn s3_kms_key(&self) -> Option<(&str, bool, Option<bool>)> {
        let value = |name: &str| {
            self.s3
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let key = value("x-amz-server-side-encryption-aws-kms-key-id")?;
        let dsse = value("x-amz-server-side-encryption") == Some("aws:kms:dsse");
        let bucket_key = value("x-amz-server-side-encryption-bucket-key-enabled")
            .map(|v| v.eq_ignore_ascii_case("true"));
        Some((key, dsse, bucket_key))
    }
}

/// A Cloud KMS key's name without the `/cryptoKeyVersions/N` an object's header adds: what
/// GCS's `kmsKeyName` and `destinationKmsKeyName` take.
pub(crate) fn key_without_version(name: &str) -> &str {
    name.split_once("/cryptoKeyVersions/")
        .map_or(name, |(key, _)| key)
}

/// object_store's HTTP client for S3 and GCS stores, which puts the encryption headers of every
/// answer into its extensions ([`Encryption`]): a read then tells its caller how the object is
/// encrypted, and a copy or rewrite of it keeps that without asking again.
#[derive(Debug, Default)]
pub(crate) struct RecordEncryption;

impl object_store::client::HttpConnector for RecordEncryption {
    fn connect(
        &self,
        options: &object_store::ClientOptions,
    ) -> object_store::Result<object_store::client::HttpClient> {
        let inner = object_store::client::ReqwestConnector::default().connect(options)?;
        Ok(object_store::client::HttpClient::new(Recording(inner)))
    }
}

#[derive(Debug)]
struct Recording(object_store::client::HttpClient);

#[async_trait::async_trait]
impl object_store::client::HttpService for Recording {
    async fn call(
        &self,
        request: object_store::client::HttpRequest,
    ) -> Result<object_store::client::HttpResponse, object_store::client::HttpError> {
        let mut response = self.0.execute(request).await?;
        let encryption = Encryption::from_headers(response.headers());
        if !encryption.is_empty() {
            response.extensions_mut().insert(encryption);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Properties {
        Properties {
            content_type: Some("text/csv; charset=utf-8".into()),
            content_encoding: None,
            content_disposition: Some("attachment; filename=\"people.csv\"".into()),
            content_language: Some("en-CA".into()),
            cache_control: Some("no-store".into()),
            metadata: BTreeMap::from([
                ("owner".into(), "hr-team".into()),
                ("retention-class".into(), "7y".into()),
            ]),
            encryption: Encryption::default(),
        }
    }

    #[test]
    fn attributes_round_trip() {
        let properties = full();
        assert_eq!(
            Properties::from_attributes(&properties.to_attributes()),
            properties
        );
    }

    #[test]
    fn what_cannot_be_a_header_is_not_written() {
        let mut properties = full();
        properties.content_type = Some("text/csv\r\nx-amz-acl: public-read".into());
        properties.cache_control = Some("no-store\n".into());
        properties.metadata.insert("bad name".into(), "x".into());
        properties
            .metadata
            .insert("note".into(), "line\r\nbreak".into());
        let back = Properties::from_attributes(&properties.to_attributes());
        assert_eq!(back.content_type.as_deref(), Some(CONTENT_TYPE));
        assert_eq!(back.cache_control, None);
        assert_eq!(back.metadata.len(), 2);
        let gcs = properties.gcs_resource("k");
        assert_eq!(gcs["contentType"], CONTENT_TYPE);
        assert!(gcs.get("cacheControl").is_none());
        assert_eq!(gcs["metadata"].as_object().unwrap().len(), 2);
        assert_eq!(gcs["contentLanguage"], "en-CA");
    }

    #[test]
    fn only_a_real_encoding_counts_as_encoded() {
        let mut properties = Properties::default();
        assert!(!properties.is_encoded());
        properties.content_encoding = Some("identity".into());
        assert!(!properties.is_encoded());
        properties.content_encoding = Some("gzip".into());
        assert!(properties.is_encoded());
    }

    #[test]
    fn encryption_keeps_only_kms_and_round_trips_as_json() {
        let mut headers = http::HeaderMap::new();
        headers.insert("x-amz-server-side-encryption", "AES256".parse().unwrap());
        assert!(Encryption::from_headers(&headers).is_empty());
        headers.insert("x-amz-server-side-encryption", "aws:kms".parse().unwrap());
        headers.insert(
            "x-amz-server-side-encryption-aws-kms-key-id",
            "arn:aws:kms:us-east-1:1:key/k".parse().unwrap(),
        );
        let kms = Encryption::from_headers(&headers);
        assert_eq!(
            kms.s3_kms_key(),
            Some(("arn:aws:kms:us-east-1:1:key/k", false, None))
        );
        assert_eq!(Encryption::from_json(kms.to_json().as_ref()), kms);
        assert_eq!(Encryption::default().to_json(), None);
        assert!(Encryption::from_json(None).is_empty());
        let mut gcs = http::HeaderMap::new();
        gcs.insert(
            "x-goog-encryption-kms-key-name",
            "projects/p/locations/us/keyRings/r/cryptoKeys/k/cryptoKeyVersions/2"
                .parse()
                .unwrap(),
        );
        let cmek = Encryption::from_headers(&gcs);
        assert_eq!(
            cmek.gcs_kms_key.as_deref(),
            Some("projects/p/locations/us/keyRings/r/cryptoKeys/k")
        );
        assert_eq!(Encryption::from_json(cmek.to_json().as_ref()), cmek);
        // A stored value names nothing but encryption headers.
        let forged = serde_json::json!({"s3": [["x-amz-acl", "public-read"]]});
        assert!(Encryption::from_json(Some(&forged)).is_empty());
    }

    #[test]
    fn debug_shows_no_metadata_value() {
        let printed = format!("{:?}", full());
        assert!(
            !printed.contains("hr-team") && !printed.contains("owner"),
            "{printed}"
        );
        assert!(!printed.contains("people.csv"), "{printed}");
    }
}

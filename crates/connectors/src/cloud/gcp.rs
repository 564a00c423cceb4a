//! GCP: workload identity federation. The platform's own identity (a subject token named by an
//! `external_account` credentials file) is exchanged at Google STS for the connector's
//! workload identity provider, the federated token impersonates the connector's service
//! account, and that account's token reads GCS through object_store, and each bucket's
//! posture from its metadata and IAM policy. Writes (`gcp_writes`) use a second token of the
//! same account with the read-write scope.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use object_store::gcp::{GcpCredential, GcpSigningCredential, GoogleCloudStorageBuilder};
use object_store::{ClientOptions, CredentialProvider, StaticCredentialProvider};
use serde::Deserialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::access::{
    AccessError, Blobs, EnvError, EtagForm, Failure, Posture, Writes, path_var, retry_config,
    url_with_segments,
};
use super::cache::Cached;
use super::gcp_writes::{GcsToken, GcsWrites};
use crate::config::Config;

const STS_URL: &str = "https://sts.googleapis.com/v1/token";
const IAM_CREDENTIALS: &str = "https://iamcredentials.googleapis.com";
const STORAGE: &str = "https://storage.googleapis.com";
/// The scope of the token that lists and reads: all a scan needs.
const READ_ONLY: &str = "https://www.googleapis.com/auth/devstorage.read_only";
/// The scope of the token that writes, asked for only when a write is made, so the token every
/// scan holds cannot change an object even where the service account may.
const READ_WRITE: &str = "https://www.googleapis.com/auth/devstorage.read_write";

/// Where the platform's subject token comes from, per the `external_account` file.
#[derive(Clone)]
pub enum SubjectSource {
    File {
        path: PathBuf,
    },
    Url {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Header values are left out: a URL source's headers carry a bearer token (GitHub Actions'
/// request token, for one).
impl fmt::Debug for SubjectSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubjectSource::File { path } => f.debug_struct("File").field("path", path).finish(),
            SubjectSource::Url { url, headers } => {
                let names: Vec<&str> = headers.iter().map(|(name, _)| name.as_str()).collect();
                f.debug_struct("Url")
                    .field("url", url)
                    .field("header_names", &names)
                    .finish()
            }
        }
    }
}

/// The platform's GCP identity: an `external_account` credentials file (the format `gcloud iam
/// workload-identity-pools create-cred-config` writes).
#[derive(Debug, Clone)]
pub struct ExternalAccount {
    pub source: SubjectSource,
    /// `credential_source.format`: when `json`, the field holding the token.
    pub json_field: Option<String>,
    pub subject_token_type: String,
    /// `token_url`: Google STS, or an override.
    pub token_url: String,
    /// The origin of `service_account_impersonation_url`, when given: the IAM Credentials API.
    pub iam_credentials_url: String,
}

/// The GCP side of the environment.
#[derive(Clone, Default)]
pub struct GcpEnv {
    /// `STORAGE_EMULATOR_HOST`: GCS requests go there (`http://` assumed without a scheme).
    pub storage_url: Option<String>,
    /// From `GOOGLE_APPLICATION_CREDENTIALS`.
    pub identity: Option<ExternalAccount>,
}

impl fmt::Debug for GcpEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GcpEnv")
            .field("storage_url", &self.storage_url)
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

impl GcpEnv {
    pub(super) fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let storage_url = var("STORAGE_EMULATOR_HOST").map(|host| {
            let host = host.trim_end_matches('/');
            if host.contains("://") {
                host.to_owned()
            } else {
                format!("http://{host}")
            }
        });
        let identity = match path_var(var, "GOOGLE_APPLICATION_CREDENTIALS") {
            Some(path) => Some(read_external_account(&path)?),
            None => None,
        };
        Ok(GcpEnv {
            storage_url,
            identity,
        })
    }
}

fn read_external_account(path: &std::path::Path) -> Result<ExternalAccount, EnvError> {
    let name = "GOOGLE_APPLICATION_CREDENTIALS";
    let text = std::fs::read_to_string(path)
        .map_err(|e| EnvError::new(name, format!("cannot read {}: {e}", path.display())))?;
    let file: Value = serde_json::from_str(&text)
        .map_err(|_| EnvError::new(name, format!("{} is not JSON", path.display())))?;
    let text_field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    if text_field(&file, "type").as_deref() != Some("external_account") {
        return Err(EnvError::new(
            name,
            "only an external_account (workload identity federation) file can give the \
             platform its GCP identity",
        ));
    }
    let source = file.get("credential_source").cloned().unwrap_or_default();
    let subject = if let Some(path) = text_field(&source, "file") {
        SubjectSource::File { path: path.into() }
    } else if let Some(url) = text_field(&source, "url") {
        let headers = source
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| {
                h.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        SubjectSource::Url { url, headers }
    } else {
        return Err(EnvError::new(
            name,
            "credential_source must name a file or a url (executable and AWS sources \
             are not supported)",
        ));
    };
    let format = source.get("format");
    let json_field = match format.and_then(|f| text_field(f, "type")).as_deref() {
        Some("json") => Some(
            format
                .and_then(|f| text_field(f, "subject_token_field_name"))
                .ok_or_else(|| {
                    EnvError::new(name, "a json format needs subject_token_field_name")
                })?,
        ),
        _ => None,
    };
    let iam_credentials_url = text_field(&file, "service_account_impersonation_url")
        .and_then(|u| url::Url::parse(&u).ok())
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|| IAM_CREDENTIALS.to_owned());
    Ok(ExternalAccount {
        source: subject,
        json_field,
        subject_token_type: text_field(&file, "subject_token_type")
            .unwrap_or_else(|| "urn:ietf:params:oauth:token-type:jwt".into()),
        token_url: text_field(&file, "token_url").unwrap_or_else(|| STS_URL.into()),
        iam_credentials_url,
    })
}

/// The platform's GCP identity.
#[derive(Debug)]
pub(crate) struct Platform {
    identity: Option<ExternalAccount>,
    http: reqwest::Client,
}

impl Platform {
    pub(crate) fn new(env: &GcpEnv, http: reqwest::Client) -> Self {
        Platform {
            identity: env.identity.clone(),
            http,
        }
    }

    fn identity(&self) -> Result<&ExternalAccount, AccessError> {
        self.identity.as_ref().ok_or_else(|| {
            AccessError::new(
                Failure::Identity,
                "the platform has no GCP identity: set GOOGLE_APPLICATION_CREDENTIALS to an \
                 external_account file (docs/configuration.md)",
            )
        })
    }

    /// The platform's current subject token, read fresh (files and URLs rotate it).
    async fn subject_token(&self) -> Result<String, AccessError> {
        let identity = self.identity()?;
        let raw = match &identity.source {
            SubjectSource::File { path } => std::fs::read_to_string(path).map_err(|e| {
                AccessError::new(
                    Failure::Identity,
                    format!("cannot read the GCP subject token file: {e}"),
                )
            })?,
            SubjectSource::Url { url, headers } => {
                let mut request = self.http.get(url);
                for (k, v) in headers {
                    request = request.header(k, v);
                }
                request
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .map_err(|e| AccessError::identity_http("GCP subject token", &e))?
                    .text()
                    .await
                    .map_err(|e| AccessError::identity_http("GCP subject token", &e))?
            }
        };
        let token = match &identity.json_field {
            None => raw.trim().to_owned(),
            Some(field) => serde_json::from_str::<Value>(&raw)
                .ok()
                .and_then(|v| v.get(field).and_then(Value::as_str).map(str::to_owned))
                .ok_or_else(|| {
                    AccessError::new(
                        Failure::Identity,
                        format!("the GCP subject token source has no {field} field"),
                    )
                })?,
        };
        Ok(token)
    }
}

/// A Google error body: `{"error": "...", "error_description": "..."}` (STS) or
/// `{"error": {"message": "..."}}` (IAM).
fn google_error(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let error = v.get("error")?;
    if let Some(message) = error.get("message").and_then(Value::as_str) {
        return Some(message.to_owned());
    }
    let code = error.as_str()?;
    Some(match v.get("error_description").and_then(Value::as_str) {
        Some(d) => format!("{code}: {d}"),
        None => code.to_owned(),
    })
}

async fn answer(response: reqwest::Response, what: &str) -> Result<Value, AccessError> {
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| AccessError::identity_http(what, &e))?;
    if !status.is_success() {
        let failure = match status.as_u16() {
            403 => Failure::Permission,
            500.. => Failure::Provider,
            _ => Failure::Identity,
        };
        let why = google_error(&body).unwrap_or_else(|| status.to_string());
        return Err(AccessError::new(failure, format!("{what} refused: {why}")));
    }
    serde_json::from_str(&body).map_err(|_| {
        AccessError::new(
            Failure::Provider,
            format!("{what} answered unreadable JSON"),
        )
    })
}

/// The connector's service account token for one scope, through federation and impersonation.
#[derive(Debug)]
pub(super) struct Impersonated {
    platform: Arc<Platform>,
    audience: String,
    service_account: String,
    scope: &'static str,
    cache: Cached<GcpCredential>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccessToken {
    access_token: String,
    expire_time: String,
}

impl Impersonated {
    pub(super) async fn credential(&self) -> Result<Arc<GcpCredential>, AccessError> {
        self.cache.get(|| self.fetch()).await
    }

    async fn fetch(&self) -> Result<(GcpCredential, Option<OffsetDateTime>), AccessError> {
        let identity = self.platform.identity()?;
        let subject = self.platform.subject_token().await?;
        let http = &self.platform.http;
        let exchange = json!({
            "audience": self.audience,
            "grantType": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requestedTokenType": "urn:ietf:params:oauth:token-type:access_token",
            "scope": "https://www.googleapis.com/auth/cloud-platform",
            "subjectTokenType": identity.subject_token_type,
            "subjectToken": subject,
        });
        let response = http
            .post(&identity.token_url)
            .json(&exchange)
            .send()
            .await
            .map_err(|e| AccessError::identity_http("Google STS", &e))?;
        let federated = answer(response, "Google STS").await?;
        let Some(federated) = federated.get("access_token").and_then(Value::as_str) else {
            return Err(AccessError::new(
                Failure::Provider,
                "Google STS answered without access_token",
            ));
        };
        let url = format!(
            "{}/v1/projects/-/serviceAccounts/{}:generateAccessToken",
            identity.iam_credentials_url, self.service_account
        );
        let response = http
            .post(&url)
            .bearer_auth(federated)
            .json(&json!({ "scope": [self.scope], "lifetime": "3600s" }))
            .send()
            .await
            .map_err(|e| AccessError::identity_http("GCP service account impersonation", &e))?;
        let token = answer(response, "GCP service account impersonation").await?;
        let token: AccessToken = serde_json::from_value(token).map_err(|_| {
            AccessError::new(
                Failure::Provider,
                "GCP impersonation answered without accessToken and expireTime",
            )
        })?;
        let expires = Some(
            OffsetDateTime::parse(&token.expire_time, &Rfc3339)
                .unwrap_or_else(|_| super::cache::unknown_expiry()),
        );
        Ok((
            GcpCredential {
                bearer: token.access_token,
            },
            expires,
        ))
    }
}

#[async_trait::async_trait]
impl GcsToken for Impersonated {
    async fn credential(&self) -> Result<Arc<GcpCredential>, AccessError> {
        Impersonated::credential(self).await
    }
}

#[async_trait::async_trait]
impl CredentialProvider for Impersonated {
    type Credential = GcpCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<GcpCredential>> {
        self.credential()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "GCS",
                source: Box::new(e),
            })
    }
}

/// One GCP connector's access.
#[derive(Debug)]
pub(crate) struct Access {
    credentials: Arc<Impersonated>,
    /// The same identity with write access, for writes only.
    writer: Arc<Impersonated>,
    project: String,
    storage_url: Option<String>,
    http: reqwest::Client,
}

impl Access {
    pub(crate) fn new(
        env: &GcpEnv,
        platform: Arc<Platform>,
        http: reqwest::Client,
        config: &Config,
    ) -> Self {
        let impersonated = |scope| Impersonated {
            platform: platform.clone(),
            audience: format!("//iam.googleapis.com/{}", config.text("wif_provider")),
            service_account: config.text("service_account_email").to_owned(),
            scope,
            cache: Cached::default(),
        };
        Access {
            credentials: Arc::new(impersonated(READ_ONLY)),
            writer: Arc::new(impersonated(READ_WRITE)),
            project: config.text("project_id").to_owned(),
            storage_url: env.storage_url.clone(),
            http,
        }
    }
}

#[async_trait::async_trait]
impl super::access::Access for Access {
    async fn list_buckets(&self) -> Result<Vec<String>, AccessError> {
        let token = self.credentials.credential().await?;
        let base = self.storage_url.as_deref().unwrap_or(STORAGE);
        let mut names = Vec::new();
        let mut page: Option<String> = None;
        loop {
            let mut query = vec![("project", self.project.clone())];
            if let Some(token) = &page {
                query.push(("pageToken", token.clone()));
            }
            let response = self
                .http
                .get(format!("{base}/storage/v1/b"))
                .query(&query)
                .bearer_auth(&token.bearer)
                .send()
                .await
                .map_err(|e| AccessError::identity_http("GCS bucket list", &e))?;
            let body = answer(response, "GCS bucket list").await?;
            for item in body
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(name) = item.get("name").and_then(Value::as_str) {
                    names.push(name.to_owned());
                }
            }
            page = body
                .get("nextPageToken")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if page.is_none() {
                return Ok(names);
            }
        }
    }

    /// The bucket's metadata (encryption, versioning, public access prevention) and its IAM
    /// policy (who may read), read at once.
    async fn posture(&self, bucket: &str) -> Result<Posture, AccessError> {
        let token = self.credentials.credential().await?;
        let base = self.storage_url.as_deref().unwrap_or(STORAGE);
        let metadata = url_with_segments(base, &["storage", "v1", "b", bucket])?;
        let iam = url_with_segments(base, &["storage", "v1", "b", bucket, "iam"])?;
        let read = |url: url::Url, what: &'static str, optional: bool| {
            let request = self.http.get(url).bearer_auth(&token.bearer);
            async move {
                let response = request
                    .send()
                    .await
                    .map_err(|e| AccessError::identity_http(what, &e))?;
                storage_answer(response, what, optional).await
            }
        };
        // A missing bucket fails the metadata read. A 404 from the IAM read then means the
        // service has no such call (fake-gcs-server), so it only leaves the policy unknown.
        let (metadata, iam) = futures::try_join!(
            read(metadata, "GCS bucket metadata", false),
            read(iam, "GCS bucket IAM policy", true)
        )?;
        Ok(bucket_posture(metadata.as_ref(), iam.as_ref()))
    }

    fn store(&self, bucket: &str, options: ClientOptions) -> Result<Arc<dyn Blobs>, AccessError> {
        // An explicit signing credential, so the builder never falls back to the metadata
        // server (signed URLs are not used).
        let signing = StaticCredentialProvider::new(GcpSigningCredential {
            email: self.credentials.service_account.clone(),
            private_key: None,
        });
        let mut builder = GoogleCloudStorageBuilder::new()
            .with_bucket_name(bucket)
            .with_credentials(self.credentials.clone())
            .with_signing_credentials(Arc::new(signing))
            .with_retry(retry_config())
            // A read says which customer-managed key the object is under, which a copy or a
            // rewrite of it keeps.
            .with_http_connector(super::properties::RecordEncryption)
            .with_client_options(options);
        if let Some(url) = &self.storage_url {
            builder = builder.with_base_url(url);
        }
        let store = builder.build().map_err(AccessError::storage)?;
        Ok(Arc::new(store))
    }

    /// Writes are hand-made JSON API calls with the write token; the store, which holds the
    /// read-only one, is not used.
    fn writes(
        &self,
        bucket: &str,
        _store: Arc<dyn Blobs>,
        _options: &ClientOptions,
    ) -> Result<Arc<dyn Writes>, AccessError> {
        Ok(Arc::new(GcsWrites {
            writer: self.writer.clone(),
            http: self.http.clone(),
            base: self.storage_url.as_deref().unwrap_or(STORAGE).to_owned(),
            bucket: bucket.to_owned(),
        }))
    }

    /// The XML API, which object_store lists and reads through, quotes its ETags in headers
    /// and listings alike. (fake-gcs-server lists them bare; they are quoted here.)
    fn etag_form(&self) -> EtagForm {
        EtagForm::Quoted
    }
}

/// A GCS JSON answer, or `None` when the identity may not read it (403, which is also how
/// Google answers a token whose scope does not cover the call) or the service does not
/// implement it (405, 501, and 404 when `optional`: the caller knows the bucket exists).
async fn storage_answer(
    response: reqwest::Response,
    what: &str,
    optional: bool,
) -> Result<Option<Value>, AccessError> {
    let status = response.status().as_u16();
    let body = response
        .text()
        .await
        .map_err(|e| AccessError::identity_http(what, &e))?;
    let failure = match status {
        200..=299 => {
            return serde_json::from_str(&body).map(Some).map_err(|_| {
                AccessError::new(Failure::Provider, format!("{what}: unreadable JSON"))
            });
        }
        403 | 405 | 501 => return Ok(None),
        404 if optional => return Ok(None),
        401 => Failure::Permission,
        404 => Failure::NotFound,
        _ => Failure::Provider,
    };
    let why = google_error(&body).unwrap_or_else(|| status.to_string());
    Err(AccessError::new(failure, format!("{what}: {why}")))
}

/// A bucket's posture from its metadata and IAM policy, either unknown when withheld. Anyone may
/// read the bucket when a binding names `allUsers` or `allAuthenticatedUsers` (whatever the
/// role: the bindings of a bucket with fine-grained access include its ACL as legacy roles),
/// unless public access prevention is enforced, which overrides every such binding.
fn bucket_posture(metadata: Option<&Value>, iam: Option<&Value>) -> Posture {
    let enforced = metadata
        .and_then(|m| m.pointer("/iamConfiguration/publicAccessPrevention"))
        .and_then(Value::as_str)
        == Some("enforced");
    let public_reasons: Vec<String> = match iam {
        Some(policy) if !enforced => {
            let members = policy
                .get("bindings")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|b| b.get("members").and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>();
            ["allUsers", "allAuthenticatedUsers"]
                .into_iter()
                .filter(|m| members.contains(m))
                .map(|m| format!("iam_{m}"))
                .collect()
        }
        _ => Vec::new(),
    };
    let public = if enforced {
        Some(false)
    } else {
        iam.map(|_| !public_reasons.is_empty())
    };
    let encryption = metadata.map(|m| {
        let kms = m
            .pointer("/encryption/defaultKmsKeyName")
            .and_then(Value::as_str)
            .is_some_and(|k| !k.is_empty());
        if kms {
            "customer-managed"
        } else {
            "google-managed"
        }
    });
    let versioning = metadata.map(|m| {
        let enabled = m
            .pointer("/versioning/enabled")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if enabled { "enabled" } else { "disabled" }
    });
    Posture {
        public,
        public_reasons,
        encryption: encryption.map(str::to_owned),
        versioning: versioning.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_source_prints_header_names_not_values() {
        let source = SubjectSource::Url {
            url: "http://127.0.0.1:9/token".into(),
            headers: vec![("Authorization".into(), "Bearer req-t0ken-value".into())],
        };
        let printed = format!("{source:?}");
        assert!(printed.contains("Authorization"), "{printed}");
        assert!(!printed.contains("req-t0ken-value"), "{printed}");
    }

    #[test]
    fn bucket_posture_reads_metadata_and_public_bindings() {
        let metadata = json!({
            "name": "hr",
            "versioning": {"enabled": true},
            "encryption": {"defaultKmsKeyName": "projects/p/locations/us/keyRings/r/cryptoKeys/k"},
        });
        let iam = json!({"bindings": [
            {"role": "roles/storage.legacyBucketOwner", "members": ["projectOwner:p"]},
            {"role": "roles/storage.objectViewer", "members": ["allUsers", "user:a@b.c"]},
            {"role": "roles/storage.legacyBucketReader", "members": ["allAuthenticatedUsers"]},
        ]});
        assert_eq!(
            bucket_posture(Some(&metadata), Some(&iam)),
            Posture {
                public: Some(true),
                public_reasons: vec!["iam_allUsers".into(), "iam_allAuthenticatedUsers".into()],
                encryption: Some("customer-managed".into()),
                versioning: Some("enabled".into()),
            }
        );
        let plain = json!({"name": "hr"});
        let private = bucket_posture(Some(&plain), Some(&json!({"bindings": []})));
        assert_eq!(private.public, Some(false));
        assert_eq!(private.encryption.as_deref(), Some("google-managed"));
        assert_eq!(private.versioning.as_deref(), Some("disabled"));
        // Public access prevention overrides the bindings, even unread ones.
        let enforced = json!({"iamConfiguration": {"publicAccessPrevention": "enforced"}});
        let prevented = bucket_posture(Some(&enforced), Some(&iam));
        assert_eq!(
            (prevented.public, prevented.public_reasons.len()),
            (Some(false), 0)
        );
        assert_eq!(bucket_posture(Some(&enforced), None).public, Some(false));
        assert_eq!(bucket_posture(None, None), Posture::default());
    }

    #[test]
    fn explains_google_errors() {
        assert_eq!(
            google_error(r#"{"error":"invalid_grant","error_description":"bad audience"}"#)
                .as_deref(),
            Some("invalid_grant: bad audience")
        );
        assert_eq!(
            google_error(r#"{"error":{"code":403,"message":"Permission denied"}}"#).as_deref(),
            Some("Permission denied")
        );
        assert_eq!(google_error("nope"), None);
    }

    #[test]
    fn reads_an_external_account_file() {
        let dir = std::env::temp_dir().join(format!("dps-gcp-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("creds.json");
        std::fs::write(
            &path,
            r#"{"type":"external_account","audience":"x",
                "subject_token_type":"urn:ietf:params:oauth:token-type:jwt",
                "token_url":"http://127.0.0.1:9/v1/token",
                "service_account_impersonation_url":"http://127.0.0.1:9/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken",
                "credential_source":{"file":"/var/run/token","format":{"type":"text"}}}"#,
        )
        .unwrap();
        let account = read_external_account(&path).unwrap();
        assert_eq!(account.token_url, "http://127.0.0.1:9/v1/token");
        assert_eq!(account.iam_credentials_url, "http://127.0.0.1:9");
        assert!(matches!(account.source, SubjectSource::File { .. }));
        std::fs::write(&path, r#"{"type":"service_account"}"#).unwrap();
        assert!(read_external_account(&path).is_err());
        std::fs::remove_dir_all(dir).unwrap();
        let env = GcpEnv::from_vars(&|name: &str| {
            (name == "STORAGE_EMULATOR_HOST").then(|| "127.0.0.1:4443".to_owned())
        })
        .unwrap();
        assert_eq!(env.storage_url.as_deref(), Some("http://127.0.0.1:4443"));
    }
}

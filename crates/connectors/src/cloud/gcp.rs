//! GCP: workload identity federation. A subject token is exchanged at Google STS for the
//! connector's workload identity provider, the federated token impersonates the connector's
//! service account, and that account's token reads GCS through object_store, and each bucket's
//! posture from its metadata and IAM policy. Writes (`gcp_writes`) use a second token of the
//! same account with the read-write scope.
//!
//! The subject token is the tenant's own, minted by the platform as an OpenID Connect issuer
//! (`gcp_issuer`), so a connector reaches only providers that trust its tenant's subject. A
//! single-tenant deployment may instead present one identity for everything, an
//! `external_account` file's (`DPS_GCP_SINGLE_IDENTITY=true`); so does a `scan-worker` in a
//! customer's infrastructure, whose identity is the customer's own.

use std::fmt;
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
use super::gcp_account::{ExternalAccount, read_external_account};
use super::gcp_issuer::SubjectIssuer;
use super::gcp_writes::{GcsToken, GcsWrites};
use crate::config::Config;
use ids::TenantId;

/// Google STS; the exchange is `POST {STS}/v1/token`.
const STS: &str = "https://sts.googleapis.com";
const IAM_CREDENTIALS: &str = "https://iamcredentials.googleapis.com";
const STORAGE: &str = "https://storage.googleapis.com";
/// The scope of the token that lists and reads: all a scan needs.
const READ_ONLY: &str = "https://www.googleapis.com/auth/devstorage.read_only";
/// The scope of the token that writes, asked for only when a write is made, so the token every
/// scan holds cannot change an object even where the service account may.
const READ_WRITE: &str = "https://www.googleapis.com/auth/devstorage.read_write";

/// The GCP side of the environment.
#[derive(Clone, Default)]
pub struct GcpEnv {
    /// `STORAGE_EMULATOR_HOST`: GCS requests go there (`http://` assumed without a scheme).
    pub storage_url: Option<String>,
    /// From `GOOGLE_APPLICATION_CREDENTIALS`: one identity for every connector, used only in
    /// single-identity mode.
    pub identity: Option<ExternalAccount>,
    /// `DPS_GCP_SINGLE_IDENTITY=true`: every connector federates with `identity`, whatever its
    /// tenant. Off by default, and only for a deployment that serves one tenant (or a
    /// `scan-worker` with the customer's own identity): with several tenants, any of them could
    /// name a provider that trusts that identity.
    pub single_identity: bool,
    /// The tenants' subject tokens (`DPS_GCP_OIDC_ISSUER`, keys from the master key), set by a
    /// process that holds the master key.
    pub issuer: Option<Arc<SubjectIssuer>>,
    /// `DPS_GCP_OIDC_ISSUER`, as read; the process that holds the master key builds `issuer`
    /// from it.
    pub issuer_url: Option<String>,
    /// `DPS_GCP_STS_URL` (Google STS's token endpoint by default), for the tenants' tokens.
    pub sts_url: String,
    /// `DPS_GCP_IAM_CREDENTIALS_URL` (the IAM Credentials API by default), for the tenants'
    /// tokens.
    pub iam_credentials_url: String,
}

impl fmt::Debug for GcpEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GcpEnv")
            .field("storage_url", &self.storage_url)
            .field("identity", &self.identity.is_some())
            .field("single_identity", &self.single_identity)
            .field("issuer", &self.issuer_url)
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
        let single_identity = match var("DPS_GCP_SINGLE_IDENTITY").as_deref().map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(EnvError::new(
                    "DPS_GCP_SINGLE_IDENTITY",
                    "must be true or false",
                ));
            }
        };
        if single_identity && identity.is_none() {
            return Err(EnvError::new(
                "DPS_GCP_SINGLE_IDENTITY",
                "single-identity mode needs GOOGLE_APPLICATION_CREDENTIALS",
            ));
        }
        let origin = |name: &'static str, default: &str| -> Result<String, EnvError> {
            match var(name) {
                None => Ok(default.to_owned()),
                Some(v) => url::Url::parse(v.trim())
                    .ok()
                    .filter(|u| matches!(u.scheme(), "https" | "http") && u.has_host())
                    .map(|_| v.trim().trim_end_matches('/').to_owned())
                    .ok_or_else(|| EnvError::new(name, "must be an http or https URL")),
            }
        };
        Ok(GcpEnv {
            storage_url,
            identity,
            single_identity,
            issuer: None,
            issuer_url: var("DPS_GCP_OIDC_ISSUER").map(|v| v.trim().to_owned()),
            sts_url: origin("DPS_GCP_STS_URL", STS)?,
            iam_credentials_url: origin("DPS_GCP_IAM_CREDENTIALS_URL", IAM_CREDENTIALS)?,
        })
    }

    /// Builds the tenants' issuer from `DPS_GCP_OIDC_ISSUER` with keys derived from `master`,
    /// for a process that serves several tenants. Such a process refuses a platform-wide
    /// identity unless single-identity mode is asked for by name.
    pub fn for_tenants(&mut self, master: &keys::MasterKey) -> Result<(), EnvError> {
        if self.identity.is_some() && !self.single_identity {
            return Err(EnvError::new(
                "GOOGLE_APPLICATION_CREDENTIALS",
                "would give every tenant the platform's one GCP identity, so that any tenant \
                 could name a provider that trusts it: unset it and set DPS_GCP_OIDC_ISSUER, \
                 or set DPS_GCP_SINGLE_IDENTITY=true for a single-tenant deployment",
            ));
        }
        if let Some(url) = &self.issuer_url {
            self.issuer = Some(Arc::new(SubjectIssuer::new(master, url)?));
        }
        Ok(())
    }
}

/// What the platform presents to Google STS.
#[derive(Debug)]
enum Identity {
    /// Each tenant's own subject token.
    Tenants {
        issuer: Arc<SubjectIssuer>,
        sts_url: String,
        iam_credentials_url: String,
    },
    /// One identity for every connector (single-identity mode).
    Single(ExternalAccount),
    None,
}

/// The platform's GCP identity.
#[derive(Debug)]
pub(crate) struct Platform {
    identity: Identity,
    http: reqwest::Client,
}

/// The token to exchange, and where to exchange it and impersonate with the result.
struct Subject {
    token: String,
    token_type: String,
    sts_url: String,
    iam_credentials_url: String,
}

impl Platform {
    pub(crate) fn new(env: &GcpEnv, http: reqwest::Client) -> Self {
        let identity = match (&env.identity, &env.issuer) {
            (Some(account), _) if env.single_identity => Identity::Single(account.clone()),
            (_, Some(issuer)) => Identity::Tenants {
                issuer: issuer.clone(),
                sts_url: env.sts_url.clone(),
                iam_credentials_url: env.iam_credentials_url.clone(),
            },
            _ => Identity::None,
        };
        Platform { identity, http }
    }

    /// The tenants' issuer, when the platform mints tenants' tokens.
    pub(crate) fn issuer(&self) -> Option<&SubjectIssuer> {
        match &self.identity {
            Identity::Tenants { issuer, .. } => Some(issuer),
            _ => None,
        }
    }

    pub(crate) fn single_identity(&self) -> bool {
        matches!(self.identity, Identity::Single(_))
    }

    /// What to present for `tenant`'s connector to the provider of `audience`.
    async fn subject(&self, tenant: &TenantId, wif_provider: &str) -> Result<Subject, AccessError> {
        match &self.identity {
            Identity::Tenants {
                issuer,
                sts_url,
                iam_credentials_url,
            } => Ok(Subject {
                // The provider's default allowed audience.
                token: issuer.token(
                    tenant,
                    &format!("https://iam.googleapis.com/{wif_provider}"),
                )?,
                token_type: "urn:ietf:params:oauth:token-type:jwt".into(),
                sts_url: format!("{sts_url}/v1/token"),
                iam_credentials_url: iam_credentials_url.clone(),
            }),
            Identity::Single(account) => Ok(Subject {
                token: account.subject_token(&self.http).await?,
                token_type: account.subject_token_type.clone(),
                sts_url: account.token_url.clone(),
                iam_credentials_url: account.iam_credentials_url.clone(),
            }),
            Identity::None => Err(AccessError::new(
                Failure::Identity,
                "no GCP identity: platform-api presents each tenant's own subject once \
                 DPS_GCP_OIDC_ISSUER is set; a scan-worker in the customer's infrastructure \
                 presents GOOGLE_APPLICATION_CREDENTIALS (docs/configuration.md)",
            )),
        }
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
    /// The connector's tenant: whose subject token is presented.
    tenant: TenantId,
    wif_provider: String,
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
        let subject = self
            .platform
            .subject(&self.tenant, &self.wif_provider)
            .await?;
        let http = &self.platform.http;
        let exchange = json!({
            "audience": format!("//iam.googleapis.com/{}", self.wif_provider),
            "grantType": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requestedTokenType": "urn:ietf:params:oauth:token-type:access_token",
            "scope": "https://www.googleapis.com/auth/cloud-platform",
            "subjectTokenType": subject.token_type,
            "subjectToken": subject.token,
        });
        let response = http
            .post(&subject.sts_url)
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
            subject.iam_credentials_url, self.service_account
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
        tenant: &TenantId,
        config: &Config,
    ) -> Self {
        let impersonated = |scope| Impersonated {
            platform: platform.clone(),
            tenant: tenant.clone(),
            wif_provider: config.text("wif_provider").to_owned(),
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
}

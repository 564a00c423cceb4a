//! Azure: the OAuth 2.0 client-credentials grant at Microsoft Entra ID for the connector's
//! tenant, client id and secret, then Blob storage in its account through object_store, a
//! container's posture from its properties, and the conditional writes object_store lacks
//! (`azure_writes`).

use std::sync::Arc;

use object_store::azure::{AzureCredential, MicrosoftAzureBuilder};
use object_store::{ClientOptions, CredentialProvider};
use serde::Deserialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::access::{
    AccessError, Blobs, EtagForm, Failure, Posture, Writes, retry_config, url_with_segments,
};
use super::azure_writes::{API_VERSION, BearerSource, BlobWrites};
use super::cache::Cached;
use super::xml;
use crate::config::Config;

const AUTHORITY: &str = "https://login.microsoftonline.com";
const STORAGE_SCOPE: &str = "https://storage.azure.com/.default";

/// The Azure side of the environment.
#[derive(Debug, Clone, Default)]
pub struct AzureEnv {
    /// `AZURE_AUTHORITY_HOST`: Entra ID, or a sovereign cloud's.
    pub authority_host: Option<String>,
    /// `AZURITE_BLOB_STORAGE_URL`: a Blob endpoint serving accounts path-style
    /// (`{url}/{account}`), as Azurite does.
    pub blob_url: Option<String>,
}

impl AzureEnv {
    pub(super) fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Self {
        let trim = |v: String| v.trim_end_matches('/').to_owned();
        AzureEnv {
            authority_host: var("AZURE_AUTHORITY_HOST").map(trim),
            blob_url: var("AZURITE_BLOB_STORAGE_URL").map(trim),
        }
    }
}

/// The connector's Entra ID token, from its client secret.
pub(super) struct ClientSecret {
    token_url: String,
    client_id: String,
    secret: String,
    pub(super) http: reqwest::Client,
    cache: Cached<AzureCredential>,
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSecret")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: i64,
}

#[async_trait::async_trait]
impl BearerSource for ClientSecret {
    /// The bearer token for a hand-made Blob request.
    async fn bearer(&self) -> Result<String, AccessError> {
        match self.credential().await?.as_ref() {
            AzureCredential::BearerToken(token) => Ok(token.clone()),
            _ => Err(AccessError::new(Failure::Identity, "no bearer token")),
        }
    }

    fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

impl ClientSecret {
    async fn credential(&self) -> Result<Arc<AzureCredential>, AccessError> {
        self.cache.get(|| self.fetch()).await
    }

    async fn fetch(&self) -> Result<(AzureCredential, Option<OffsetDateTime>), AccessError> {
        let what = "Microsoft Entra ID";
        let form = [
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.secret.as_str()),
            ("grant_type", "client_credentials"),
            ("scope", STORAGE_SCOPE),
        ];
        let response = self
            .http
            .post(&self.token_url)
            .form(&form)
            .send()
            .await
            .map_err(|e| AccessError::identity_http(what, &e))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| AccessError::identity_http(what, &e))?;
        if !status.is_success() {
            // Entra explains itself in error_description ("AADSTS7000215: Invalid client
            // secret provided..."), which never repeats the secret.
            let why = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| {
                    v.get("error_description")
                        .or_else(|| v.get("error"))
                        .and_then(Value::as_str)
                        .map(|s| s.lines().next().unwrap_or_default().to_owned())
                })
                .unwrap_or_else(|| status.to_string());
            let failure = if status.is_server_error() {
                Failure::Provider
            } else {
                Failure::Identity
            };
            return Err(AccessError::new(failure, format!("{what} refused: {why}")));
        }
        let answer: TokenAnswer = serde_json::from_str(&body).map_err(|_| {
            AccessError::new(
                Failure::Provider,
                format!("{what} answered without a token"),
            )
        })?;
        // Bounded: an answer's lifetime out of range (negative, or past the calendar) must not
        // panic the call; Entra ID's tokens live about an hour.
        let expires = OffsetDateTime::now_utc()
            + time::Duration::seconds(answer.expires_in.clamp(0, 24 * 3600));
        Ok((
            AzureCredential::BearerToken(answer.access_token),
            Some(expires),
        ))
    }
}

#[async_trait::async_trait]
impl CredentialProvider for ClientSecret {
    type Credential = AzureCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AzureCredential>> {
        self.credential()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "MicrosoftAzure",
                source: Box::new(e),
            })
    }
}

/// One Azure connector's access.
#[derive(Debug)]
pub(crate) struct Access {
    credentials: Arc<ClientSecret>,
    account: String,
    /// The account's Blob endpoint.
    account_url: String,
}

impl Access {
    pub(crate) fn new(
        env: &AzureEnv,
        http: reqwest::Client,
        config: &Config,
    ) -> Result<Self, AccessError> {
        let account = config.text("storage_account").to_owned();
        let authority = env.authority_host.as_deref().unwrap_or(AUTHORITY);
        let credentials = ClientSecret {
            token_url: format!("{authority}/{}/oauth2/v2.0/token", config.text("tenant_id")),
            client_id: config.text("client_id").to_owned(),
            secret: config.text("client_secret").to_owned(),
            http,
            cache: Cached::default(),
        };
        if credentials.secret.is_empty() {
            return Err(AccessError::new(
                Failure::Identity,
                "the connector's client_secret could not be opened",
            ));
        }
        let account_url = match &env.blob_url {
            Some(url) => format!("{url}/{account}"),
            None => format!("https://{account}.blob.core.windows.net"),
        };
        Ok(Access {
            credentials: Arc::new(credentials),
            account,
            account_url,
        })
    }
}

#[async_trait::async_trait]
impl super::access::Access for Access {
    async fn list_buckets(&self) -> Result<Vec<String>, AccessError> {
        let what = "Azure container list";
        let credential = self.credentials.credential().await?;
        let AzureCredential::BearerToken(token) = credential.as_ref() else {
            return Err(AccessError::new(Failure::Identity, "no bearer token"));
        };
        let mut names = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut query = vec![("comp", "list".to_owned())];
            if let Some(m) = &marker {
                query.push(("marker", m.clone()));
            }
            let response = self
                .credentials
                .http
                .get(format!("{}/", self.account_url))
                .query(&query)
                .bearer_auth(token)
                .header("x-ms-version", API_VERSION)
                .send()
                .await
                .map_err(|e| AccessError::identity_http(what, &e))?;
            let status = response.status();
            let body = response
                .text()
                .await
                .map_err(|e| AccessError::identity_http(what, &e))?;
            if !status.is_success() {
                return Err(refused(what, status, &body));
            }
            names.extend(xml::all(&body, "Name"));
            marker = xml::first(&body, "NextMarker").filter(|m| !m.is_empty());
            if marker.is_none() {
                return Ok(names);
            }
        }
    }

    /// Get Container Properties. Versioning is a setting of the account's Blob service, which
    /// only the management plane (Azure Resource Manager) reads, so it stays unknown.
    async fn posture(&self, container: &str) -> Result<Posture, AccessError> {
        let what = "Azure container properties";
        let credential = self.credentials.credential().await?;
        let AzureCredential::BearerToken(token) = credential.as_ref() else {
            return Err(AccessError::new(Failure::Identity, "no bearer token"));
        };
        let mut url = url_with_segments(&self.account_url, &[container])?;
        url.set_query(Some("restype=container"));
        let response = self
            .credentials
            .http
            .get(url)
            .bearer_auth(token)
            .header("x-ms-version", API_VERSION)
            .send()
            .await
            .map_err(|e| AccessError::identity_http(what, &e))?;
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (public_access, scope) = (
            header("x-ms-blob-public-access"),
            header("x-ms-default-encryption-scope"),
        );
        let body = response
            .text()
            .await
            .map_err(|e| AccessError::identity_http(what, &e))?;
        if status.is_success() {
            return Ok(container_posture(
                public_access.as_deref(),
                scope.as_deref(),
            ));
        }
        // The identity's role lacks the read (RBAC speaking, not a refused token): nothing is
        // known, and nothing failed.
        if status == reqwest::StatusCode::FORBIDDEN
            && xml::first(&body, "Code").as_deref() == Some("AuthorizationPermissionMismatch")
        {
            return Ok(Posture::default());
        }
        Err(refused(what, status, &body))
    }

    fn store(&self, bucket: &str, options: ClientOptions) -> Result<Arc<dyn Blobs>, AccessError> {
        let store = MicrosoftAzureBuilder::new()
            .with_account(&self.account)
            .with_container_name(bucket)
            .with_endpoint(self.account_url.clone())
            .with_credentials(self.credentials.clone())
            .with_retry(retry_config())
            .with_client_options(options)
            .build()
            .map_err(AccessError::storage)?;
        Ok(Arc::new(store))
    }

    fn writes(
        &self,
        bucket: &str,
        store: Arc<dyn Blobs>,
        _options: &ClientOptions,
    ) -> Result<Arc<dyn Writes>, AccessError> {
        Ok(Arc::new(BlobWrites {
            store,
            credentials: self.credentials.clone(),
            account_url: self.account_url.clone(),
            container: bucket.to_owned(),
        }))
    }

    /// List Blobs gives ETags bare (`0x8DC...`) while every header quotes them; Azurite does
    /// the same.
    fn etag_form(&self) -> EtagForm {
        EtagForm::Bare
    }
}

/// A refused Blob request, classified, with Azure's own explanation.
fn refused(what: &str, status: reqwest::StatusCode, body: &str) -> AccessError {
    let failure = match status.as_u16() {
        401 | 403 => Failure::Permission,
        404 => Failure::NotFound,
        _ => Failure::Provider,
    };
    let why = xml::coded_error(body).unwrap_or_else(|| status.to_string());
    AccessError::new(failure, format!("{what}: {why}"))
}

/// A container's posture from its properties' headers. Without `x-ms-blob-public-access` the
/// container is private; `blob` lets anyone read blobs by name, `container` also lets anyone list
/// them. (An account that disallows public access overrides both, and is a management-plane
/// setting this cannot read.) Azure Storage always encrypts at rest: with the account's key
/// unless the container defaults to another encryption scope.
fn container_posture(public_access: Option<&str>, encryption_scope: Option<&str>) -> Posture {
    let (public, reason) = match public_access {
        None => (Some(false), None),
        Some("blob") => (Some(true), Some("container_access_blob")),
        Some("container") => (Some(true), Some("container_access_container")),
        Some(_) => (None, None),
    };
    let encryption = match encryption_scope {
        None | Some("$account-encryption-key") => "microsoft-managed".to_owned(),
        Some(scope) => format!("encryption_scope:{scope}"),
    };
    Posture {
        public,
        public_reasons: reason.into_iter().map(str::to_owned).collect(),
        encryption: Some(encryption),
        versioning: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_access_and_encryption_scope_read_from_the_headers() {
        let private = container_posture(None, Some("$account-encryption-key"));
        assert_eq!(
            private,
            Posture {
                public: Some(false),
                public_reasons: Vec::new(),
                encryption: Some("microsoft-managed".into()),
                versioning: None,
            }
        );
        let listed = container_posture(Some("container"), Some("finance-cmk"));
        assert_eq!(listed.public, Some(true));
        assert_eq!(listed.public_reasons, ["container_access_container"]);
        assert_eq!(
            listed.encryption.as_deref(),
            Some("encryption_scope:finance-cmk")
        );
        assert_eq!(container_posture(Some("other"), None).public, None);
    }
}

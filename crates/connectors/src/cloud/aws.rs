//! AWS: the platform's own identity from the standard chain, STS AssumeRole into the customer's
//! role with its external id, and S3 through object_store with the temporary credentials.
//!
//! STS, ListBuckets, a bucket's configuration (`aws_posture`) and the conditional writes
//! object_store lacks (`aws_writes`) are signed with object_store's SigV4 signer (`sigv4`);
//! there is no AWS SDK.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, AwsCredential, Checksum};
use object_store::{ClientOptions, CredentialProvider};
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::access::{
    AccessError, Blobs, EnvError, EtagForm, Failure, Posture, Writes, path_var, retry_config,
    url_with_segments,
};
use super::aws_posture;
use super::aws_writes::{S3Credentials, S3Writes};
use super::cache::Cached;
use super::sigv4::send_signed;
use super::xml;
use crate::config::Config;

/// Lifetime asked for the assumed role's credentials (STS allows 900 to 3600 by default).
const SESSION_SECONDS: u32 = 3600;

/// How the platform proves its own AWS identity, in the order the standard chain tries them.
#[derive(Clone, Default)]
pub enum CredentialSource {
    /// Nothing configured: AWS connectors fail their test with an identity error.
    #[default]
    None,
    /// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, or static keys of the
    /// selected profile in the shared credentials or config file.
    Static(StaticKeys),
    /// `AWS_WEB_IDENTITY_TOKEN_FILE` with `AWS_ROLE_ARN` (EKS IRSA and the like).
    WebIdentity {
        token_file: PathBuf,
        role_arn: String,
        session_name: String,
    },
    /// ECS/EKS Pod Identity container credentials, only when their variables are set.
    Container {
        url: String,
        token: Option<String>,
        token_file: Option<PathBuf>,
    },
    /// EC2 instance metadata, only when `AWS_EC2_METADATA_SERVICE_ENDPOINT` names it.
    Imds { endpoint: String },
}

impl fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CredentialSource::None => "None",
            CredentialSource::Static(_) => "Static",
            CredentialSource::WebIdentity { .. } => "WebIdentity",
            CredentialSource::Container { .. } => "Container",
            CredentialSource::Imds { .. } => "Imds",
        })
    }
}

/// Long-lived keys of the platform's own identity.
#[derive(Clone)]
pub struct StaticKeys {
    pub key_id: String,
    pub secret_key: String,
    pub token: Option<String>,
}

impl fmt::Debug for StaticKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticKeys")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl StaticKeys {
    fn credential(&self) -> AwsCredential {
        AwsCredential {
            key_id: self.key_id.clone(),
            secret_key: self.secret_key.clone(),
            token: self.token.clone(),
        }
    }
}

/// The AWS side of the environment.
#[derive(Debug, Clone, Default)]
pub struct AwsEnv {
    /// `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`: S3 requests go there, path-style.
    pub s3_endpoint: Option<String>,
    /// `AWS_ENDPOINT_URL_STS`, else `AWS_ENDPOINT_URL`.
    pub sts_endpoint: Option<String>,
    /// `AWS_REGION`, else `AWS_DEFAULT_REGION`: where the platform's own STS calls go.
    pub region: Option<String>,
    pub identity: CredentialSource,
}

impl AwsEnv {
    pub(super) fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let shared = var("AWS_ENDPOINT_URL");
        Ok(AwsEnv {
            s3_endpoint: var("AWS_ENDPOINT_URL_S3").or_else(|| shared.clone()),
            sts_endpoint: var("AWS_ENDPOINT_URL_STS").or(shared),
            region: var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")),
            identity: identity_from_vars(var)?,
        })
    }
}

fn identity_from_vars(var: &impl Fn(&str) -> Option<String>) -> Result<CredentialSource, EnvError> {
    if let (Some(key_id), Some(secret_key)) =
        (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"))
    {
        return Ok(CredentialSource::Static(StaticKeys {
            key_id,
            secret_key,
            token: var("AWS_SESSION_TOKEN"),
        }));
    }
    if let Some(credential) = profile_credential(var)? {
        return Ok(CredentialSource::Static(credential));
    }
    if let (Some(token_file), Some(role_arn)) = (
        path_var(var, "AWS_WEB_IDENTITY_TOKEN_FILE"),
        var("AWS_ROLE_ARN"),
    ) {
        return Ok(CredentialSource::WebIdentity {
            token_file,
            role_arn,
            session_name: var("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| "dps-platform".into()),
        });
    }
    let relative = match var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        // A path on the ECS agent's address. Anything else would name another host:
        // `@elsewhere/x` makes `http://169.254.170.2@elsewhere/x`, which hands the container's
        // authorization token to `elsewhere`.
        Some(path) if !path.starts_with('/') || path.contains(['@', '\\', '#']) => {
            return Err(EnvError::new(
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "must be a path starting with /",
            ));
        }
        relative => relative,
    };
    let container = var("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        .or_else(|| relative.map(|path| format!("http://169.254.170.2{path}")));
    if let Some(url) = container {
        return Ok(CredentialSource::Container {
            url,
            token: var("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
            token_file: path_var(var, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
        });
    }
    if let Some(endpoint) = var("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        return Ok(CredentialSource::Imds {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
        });
    }
    Ok(CredentialSource::None)
}

/// Static keys of `AWS_PROFILE` (default `default`) from the shared credentials file, then
/// the config file. Profiles that need another process or a browser (sso, credential_process)
/// and role chains are refused by name, so the operator knows why nothing was found.
fn profile_credential(
    var: &impl Fn(&str) -> Option<String>,
) -> Result<Option<StaticKeys>, EnvError> {
    let home = var("HOME").map(PathBuf::from);
    let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let credentials = path_var(var, "AWS_SHARED_CREDENTIALS_FILE")
        .or_else(|| home.as_ref().map(|h| h.join(".aws/credentials")));
    let config =
        path_var(var, "AWS_CONFIG_FILE").or_else(|| home.as_ref().map(|h| h.join(".aws/config")));
    let sections = [
        (credentials, profile.clone()),
        (
            config,
            if profile == "default" {
                profile.clone()
            } else {
                format!("profile {profile}")
            },
        ),
    ];
    for (file, section) in sections {
        let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) else {
            continue;
        };
        let values = ini_section(&text, &section);
        if values.is_empty() {
            continue;
        }
        let get = |k: &str| {
            values
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        if let (Some(key_id), Some(secret_key)) =
            (get("aws_access_key_id"), get("aws_secret_access_key"))
        {
            return Ok(Some(StaticKeys {
                key_id,
                secret_key,
                token: get("aws_session_token"),
            }));
        }
        for unsupported in [
            "sso_session",
            "sso_start_url",
            "credential_process",
            "role_arn",
        ] {
            if get(unsupported).is_some() {
                return Err(EnvError::new(
                    "AWS_PROFILE",
                    format!(
                        "profile {profile}: {unsupported} profiles are not supported; use static \
                     keys, web identity or container credentials"
                    ),
                ));
            }
        }
    }
    Ok(None)
}

/// The `key = value` pairs of one `[section]` of an INI file.
fn ini_section(text: &str, section: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut values = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
            continue;
        }
        if inside && let Some((k, v)) = line.split_once('=') {
            values.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    values
}

/// The platform's own identity, with its credentials cached.
#[derive(Debug)]
pub(crate) struct Platform {
    identity: CredentialSource,
    sts_endpoint: Option<String>,
    region: Option<String>,
    http: reqwest::Client,
    cache: Cached<AwsCredential>,
}

impl Platform {
    pub(crate) fn new(env: &AwsEnv, http: reqwest::Client) -> Self {
        Platform {
            identity: env.identity.clone(),
            sts_endpoint: env.sts_endpoint.clone(),
            region: env.region.clone(),
            http,
            cache: Cached::default(),
        }
    }

    async fn credential(&self) -> Result<Arc<AwsCredential>, AccessError> {
        self.cache.get(|| self.fetch()).await
    }

    async fn fetch(&self) -> Result<(AwsCredential, Option<OffsetDateTime>), AccessError> {
        match &self.identity {
            CredentialSource::None => Err(AccessError::new(
                Failure::Identity,
                "the platform has no AWS identity: set AWS credentials, a profile, web identity \
                 or container credentials (docs/configuration.md)",
            )),
            CredentialSource::Static(keys) => Ok((keys.credential(), None)),
            CredentialSource::WebIdentity {
                token_file,
                role_arn,
                session_name,
            } => {
                let token = std::fs::read_to_string(token_file).map_err(|e| {
                    AccessError::new(
                        Failure::Identity,
                        format!("cannot read AWS_WEB_IDENTITY_TOKEN_FILE: {e}"),
                    )
                })?;
                let url = sts_url(self.sts_endpoint.as_deref(), self.region.as_deref());
                let form = [
                    ("Action", "AssumeRoleWithWebIdentity"),
                    ("Version", "2011-06-15"),
                    ("RoleArn", role_arn.as_str()),
                    ("RoleSessionName", session_name.as_str()),
                    ("WebIdentityToken", token.trim()),
                ];
                let response = self
                    .http
                    .post(&url)
                    .form(&form)
                    .send()
                    .await
                    .map_err(|e| AccessError::identity_http("AWS STS", &e))?;
                sts_credentials(response).await
            }
            CredentialSource::Container {
                url,
                token,
                token_file,
            } => {
                let mut request = self.http.get(url);
                let token = match (token_file, token) {
                    (Some(file), _) => Some(std::fs::read_to_string(file).map_err(|e| {
                        AccessError::new(
                            Failure::Identity,
                            format!("cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: {e}"),
                        )
                    })?),
                    (None, token) => token.clone(),
                };
                if let Some(token) = token {
                    request = request.header("Authorization", token.trim());
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| AccessError::identity_http("AWS container credentials", &e))?;
                json_credentials(response, "AWS container credentials").await
            }
            CredentialSource::Imds { endpoint } => {
                let what = "EC2 instance metadata";
                let token = self
                    .http
                    .put(format!("{endpoint}/latest/api/token"))
                    .header("X-aws-ec2-metadata-token-ttl-seconds", "21600")
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .map_err(|e| AccessError::identity_http(what, &e))?
                    .text()
                    .await
                    .map_err(|e| AccessError::identity_http(what, &e))?;
                let base = format!("{endpoint}/latest/meta-data/iam/security-credentials/");
                let role = self
                    .http
                    .get(&base)
                    .header("X-aws-ec2-metadata-token", &token)
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .map_err(|e| AccessError::identity_http(what, &e))?
                    .text()
                    .await
                    .map_err(|e| AccessError::identity_http(what, &e))?;
                let role = role.lines().next().unwrap_or_default().trim().to_owned();
                let response = self
                    .http
                    .get(format!("{base}{role}"))
                    .header("X-aws-ec2-metadata-token", &token)
                    .send()
                    .await
                    .map_err(|e| AccessError::identity_http(what, &e))?;
                json_credentials(response, what).await
            }
        }
    }
}

/// The STS endpoint: the override, else the regional one, else the global one.
fn sts_url(endpoint: Option<&str>, region: Option<&str>) -> String {
    match (endpoint, region) {
        (Some(endpoint), _) => format!("{}/", endpoint.trim_end_matches('/')),
        (None, Some(region)) => format!("https://sts.{region}.amazonaws.com/"),
        (None, None) => "https://sts.amazonaws.com/".into(),
    }
}

/// Reads an STS answer's credentials, or explains its error.
async fn sts_credentials(
    response: reqwest::Response,
) -> Result<(AwsCredential, Option<OffsetDateTime>), AccessError> {
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| AccessError::identity_http("AWS STS", &e))?;
    if !status.is_success() {
        let failure = if status.is_server_error() {
            Failure::Provider
        } else {
            Failure::Identity
        };
        let why = xml::coded_error(&body).unwrap_or_else(|| status.to_string());
        return Err(AccessError::new(failure, format!("AWS STS refused: {why}")));
    }
    let field = |tag| {
        xml::first(&body, tag).ok_or_else(|| {
            AccessError::new(Failure::Provider, format!("AWS STS answered without {tag}"))
        })
    };
    let credential = AwsCredential {
        key_id: field("AccessKeyId")?,
        secret_key: field("SecretAccessKey")?,
        token: Some(field("SessionToken")?),
    };
    let expires = OffsetDateTime::parse(&field("Expiration")?, &Rfc3339).map_err(|_| {
        AccessError::new(
            Failure::Provider,
            "AWS STS answered an unreadable Expiration",
        )
    })?;
    Ok((credential, Some(expires)))
}

/// The JSON credentials that container and instance metadata endpoints answer.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct JsonCredentials {
    access_key_id: String,
    secret_access_key: String,
    token: Option<String>,
    expiration: Option<String>,
}

async fn json_credentials(
    response: reqwest::Response,
    what: &str,
) -> Result<(AwsCredential, Option<OffsetDateTime>), AccessError> {
    let status = response.status();
    if !status.is_success() {
        return Err(AccessError::new(
            Failure::Identity,
            format!("{what} answered {status}"),
        ));
    }
    let body: JsonCredentials = response.json().await.map_err(|_| {
        AccessError::new(
            Failure::Provider,
            format!("{what} answered unreadable JSON"),
        )
    })?;
    // A temporary credential lasts an hour or less: one without a readable expiry is fetched
    // again soon, not kept forever.
    let expires = Some(
        body.expiration
            .as_deref()
            .and_then(|e| OffsetDateTime::parse(e, &Rfc3339).ok())
            .unwrap_or_else(super::cache::unknown_expiry),
    );
    Ok((
        AwsCredential {
            key_id: body.access_key_id,
            secret_key: body.secret_access_key,
            token: body.token,
        },
        expires,
    ))
}

/// Credentials of the customer's role, assumed with the platform's identity and refreshed
/// before they expire.
#[derive(Debug)]
pub(super) struct AssumedRole {
    platform: Arc<Platform>,
    role_arn: String,
    external_id: String,
    session_name: String,
    region: String,
    sts_url: String,
    pub(super) http: reqwest::Client,
    cache: Cached<AwsCredential>,
}

#[async_trait::async_trait]
impl S3Credentials for AssumedRole {
    async fn credential(&self) -> Result<Arc<AwsCredential>, AccessError> {
        AssumedRole::credential(self).await
    }

    fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

impl AssumedRole {
    pub(super) async fn credential(&self) -> Result<Arc<AwsCredential>, AccessError> {
        self.cache.get(|| self.assume()).await
    }

    async fn assume(&self) -> Result<(AwsCredential, Option<OffsetDateTime>), AccessError> {
        let platform = self.platform.credential().await?;
        let duration = SESSION_SECONDS.to_string();
        let form = [
            ("Action", "AssumeRole"),
            ("Version", "2011-06-15"),
            ("RoleArn", self.role_arn.as_str()),
            ("RoleSessionName", self.session_name.as_str()),
            ("ExternalId", self.external_id.as_str()),
            ("DurationSeconds", duration.as_str()),
        ];
        let body = form_encode(&form);
        let response = send_signed(
            &self.http,
            &platform,
            ("sts", &self.region),
            http::Method::POST,
            &self.sts_url,
            body.into_bytes(),
        )
        .await
        .map_err(|e| e.context("AWS STS"))?;
        sts_credentials(response).await
    }
}

#[async_trait::async_trait]
impl CredentialProvider for AssumedRole {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        self.credential()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })
    }
}

fn form_encode(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// One AWS connector's access.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    role: Arc<AssumedRole>,
    region: String,
    s3_endpoint: Option<String>,
}

impl Access {
    pub(crate) fn new(
        env: &AwsEnv,
        platform: Arc<Platform>,
        http: reqwest::Client,
        connector_id: ids::ConnectorId,
        config: &Config,
    ) -> Self {
        let region = config.text("region").to_owned();
        let role = AssumedRole {
            platform,
            role_arn: config.text("role_arn").to_owned(),
            external_id: config.text("external_id").to_owned(),
            session_name: format!("dps-{}", connector_id.as_uuid().simple()),
            sts_url: sts_url(env.sts_endpoint.as_deref(), Some(&region)),
            region: region.clone(),
            http,
            cache: Cached::default(),
        };
        Access {
            role: Arc::new(role),
            region,
            s3_endpoint: env
                .s3_endpoint
                .as_ref()
                .map(|e| e.trim_end_matches('/').to_owned()),
        }
    }

    /// The builder of one bucket's store: the assumed role, quick retries, a SHA-256 with every
    /// put (`x-amz-checksum-sha256`: S3 checks what it stores against it, and a bucket with
    /// Object Lock refuses a put without one), and answers that say how objects are encrypted.
    fn builder(&self, bucket: &str, options: ClientOptions) -> AmazonS3Builder {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(&self.region)
            .with_credentials(self.role.clone())
            .with_retry(retry_config())
            .with_checksum_algorithm(Checksum::SHA256)
            .with_http_connector(super::properties::RecordEncryption)
            .with_client_options(options);
        if let Some(endpoint) = &self.s3_endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        builder
    }

    /// The S3 endpoint, without a trailing `/`: the override, else the region's.
    fn s3_url(&self) -> String {
        match &self.s3_endpoint {
            Some(endpoint) => endpoint.clone(),
            None => format!("https://s3.{}.amazonaws.com", self.region),
        }
    }
}

#[async_trait::async_trait]
impl super::access::Access for Access {
    async fn list_buckets(&self) -> Result<Vec<String>, AccessError> {
        let credential = self.role.credential().await?;
        let url = format!("{}/", self.s3_url());
        let response = send_signed(
            &self.role.http,
            &credential,
            ("s3", &self.region),
            http::Method::GET,
            &url,
            Vec::new(),
        )
        .await
        .map_err(|e| e.context("S3 ListBuckets"))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| AccessError::identity_http("S3 ListBuckets", &e))?;
        if !status.is_success() {
            let failure = match status.as_u16() {
                401 | 403 => Failure::Permission,
                _ => Failure::Provider,
            };
            let why = xml::coded_error(&body).unwrap_or_else(|| status.to_string());
            return Err(AccessError::new(failure, format!("S3 ListBuckets: {why}")));
        }
        Ok(xml::all(&body, "Name"))
    }

    async fn posture(&self, bucket: &str) -> Result<Posture, AccessError> {
        let credential = self.role.credential().await?;
        // Path-style, as object_store addresses the bucket when it lists and reads.
        let bucket_url = url_with_segments(&self.s3_url(), &[bucket])?;
        let s3 = aws_posture::S3 {
            http: &self.role.http,
            credential: &credential,
            region: &self.region,
            bucket_url,
        };
        s3.posture().await
    }

    fn store(&self, bucket: &str, options: ClientOptions) -> Result<Arc<dyn Blobs>, AccessError> {
        let store = self
            .builder(bucket, options)
            .build()
            .map_err(AccessError::storage)?;
        Ok(Arc::new(store))
    }

    fn writes(
        &self,
        bucket: &str,
        store: Arc<dyn Blobs>,
        options: &ClientOptions,
    ) -> Result<Arc<dyn Writes>, AccessError> {
        // A put that must keep an object's KMS key goes through a store that names it:
        // object_store sets encryption per store, not per put.
        let (access, name, options) = (self.clone(), bucket.to_owned(), options.clone());
        let encrypted: super::aws_writes::EncryptedStore =
            Box::new(move |key, dsse, bucket_key| {
                let mut builder = access.builder(&name, options.clone());
                builder = if dsse {
                    builder.with_dsse_kms_encryption(key)
                } else {
                    builder.with_sse_kms_encryption(key)
                };
                if let Some(enabled) = bucket_key {
                    builder = builder.with_bucket_key(enabled);
                }
                let store = builder.build().map_err(AccessError::storage)?;
                Ok(Arc::new(store) as Arc<dyn Blobs>)
            });
        Ok(Arc::new(S3Writes {
            store,
            encrypted: super::aws_writes::EncryptedStores::new(encrypted),
            role: self.role.clone(),
            region: self.region.clone(),
            endpoint: self.s3_url(),
            bucket: bucket.to_owned(),
        }))
    }

    /// S3 quotes its ETags everywhere: in listings, headers and CopyObject's answer.
    fn etag_form(&self) -> EtagForm {
        EtagForm::Quoted
    }
}

#[cfg(test)]
#[path = "aws_tests.rs"]
mod tests;

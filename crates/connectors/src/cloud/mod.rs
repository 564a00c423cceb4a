//! Real access to a connector's cloud storage.
//!
//! The platform proves its own identity with each ecosystem's standard credential chain, trades
//! it for access to the customer's storage (AWS STS AssumeRole with the external id, GCP
//! workload identity federation, an Entra ID client-credentials grant), and then lists and reads
//! objects through `object_store`. Short-lived credentials are cached and refreshed five minutes
//! before they expire.
//!
//! Where each service lives follows the ecosystem's own override variables (see
//! docs/configuration.md), read once into a [`CloudEnv`]. No cloud metadata endpoint is ever
//! called unless one is configured.

mod access;
mod aws;
mod aws_posture;
mod aws_writes;
mod azure;
mod azure_writes;
mod cache;
mod gcp;
mod gcp_account;
mod gcp_issuer;
mod gcp_writes;
mod properties;
mod sigv4;
mod writes;
mod xml;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::list::PaginatedListOptions;
use object_store::{ClientOptions, GetOptions, GetRange, ObjectMeta, ObjectStore};
use time::OffsetDateTime;

use crate::config::{Config, Provider};
use access::{Access, EtagForm, Writes, object_path};

pub use access::{AccessError, Blobs, EnvError, Failure, Posture};
pub use aws::AwsEnv;
pub use azure::AzureEnv;
pub use gcp::GcpEnv;
pub use gcp_issuer::SubjectIssuer;
pub use properties::{Encryption, Properties};
pub use writes::Whole;

/// How long one HTTP request to a cloud service may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Objects listed per page when enumerating.
pub const PAGE_SIZE: usize = 1000;

/// Where the cloud services live and how the platform proves who it is: read once from the
/// environment at start-up, or built directly (tests).
#[derive(Clone, Default)]
pub struct CloudEnv {
    pub aws: AwsEnv,
    pub gcp: GcpEnv,
    pub azure: AzureEnv,
    /// Extra PEM root certificates trusted for every cloud endpoint (a private cloud's CA, an
    /// emulator's self-signed certificate), on top of the system's.
    pub extra_roots_pem: Option<Vec<u8>>,
}

impl fmt::Debug for CloudEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudEnv")
            .field("aws", &self.aws)
            .field("gcp", &self.gcp)
            .field("azure", &self.azure)
            .field("extra_roots", &self.extra_roots_pem.is_some())
            .finish()
    }
}

impl CloudEnv {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// Reads the variables through `var` (unset and empty are both `None`).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let extra_roots_pem = match var("DPS_CLOUD_CA_FILE") {
            Some(path) => Some(std::fs::read(&path).map_err(|e| {
                EnvError::new("DPS_CLOUD_CA_FILE", format!("cannot read {path}: {e}"))
            })?),
            None => None,
        };
        Ok(CloudEnv {
            aws: AwsEnv::from_vars(&var)?,
            gcp: GcpEnv::from_vars(&var)?,
            azure: AzureEnv::from_vars(&var),
            extra_roots_pem,
        })
    }
}

/// The shared clients and the platform identities, built once per process.
#[derive(Debug, Clone)]
pub struct Cloud {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    env: CloudEnv,
    http: reqwest::Client,
    options: ClientOptions,
    aws: Arc<aws::Platform>,
    gcp: Arc<gcp::Platform>,
}

impl Cloud {
    pub fn new(env: CloudEnv) -> Result<Self, EnvError> {
        boot::install_tls_provider();
        let mut builder = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none());
        let mut options = ClientOptions::new()
            .with_timeout(REQUEST_TIMEOUT)
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_allow_http(true);
        if let Some(pem) = &env.extra_roots_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| EnvError::new("DPS_CLOUD_CA_FILE", e.to_string()))?;
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
            for cert in object_store::Certificate::from_pem_bundle(pem)
                .map_err(|e| EnvError::new("DPS_CLOUD_CA_FILE", e.to_string()))?
            {
                options = options.with_root_certificate(cert);
            }
        }
        let http = builder
            .build()
            .map_err(|e| EnvError::new("DPS_CLOUD_CA_FILE", format!("HTTP client: {e}")))?;
        let aws = Arc::new(aws::Platform::new(&env.aws, http.clone()));
        let gcp = Arc::new(gcp::Platform::new(&env.gcp, http.clone()));
        Ok(Cloud {
            inner: Arc::new(Shared {
                env,
                http,
                options,
                aws,
                gcp,
            }),
        })
    }

    /// How a GCP customer's workload identity provider must trust the platform for `tenant`'s
    /// connectors.
    pub fn gcp_trust(&self, tenant: &ids::TenantId) -> GcpTrust {
        let gcp = &self.inner.gcp;
        match gcp.issuer() {
            Some(issuer) => GcpTrust::Subject {
                issuer: issuer.issuer().to_owned(),
                jwks_uri: issuer.jwks_uri(),
                subject: issuer.subject(tenant),
            },
            None if gcp.single_identity() => GcpTrust::SingleIdentity,
            None => GcpTrust::NotConfigured,
        }
    }

    /// The tenants' issuer, if this process mints tenants' GCP subject tokens: what the
    /// issuer's discovery document and JWKS are served from.
    pub fn gcp_issuer(&self) -> Option<&SubjectIssuer> {
        self.inner.gcp.issuer()
    }

    /// Opens `tenant`'s connector's storage. Nothing is called yet: the first list or read
    /// does. The tenant is what a GCP connector's subject token names.
    pub fn open(
        &self,
        tenant: &ids::TenantId,
        connector_id: ids::ConnectorId,
        config: &Config,
    ) -> Result<Storage, AccessError> {
        let shared = &self.inner;
        let access: Arc<dyn Access> = match config.provider {
            Provider::Aws => Arc::new(aws::Access::new(
                &shared.env.aws,
                shared.aws.clone(),
                shared.http.clone(),
                connector_id,
                config,
            )),
            Provider::Gcp => Arc::new(gcp::Access::new(
                &shared.env.gcp,
                shared.gcp.clone(),
                shared.http.clone(),
                tenant,
                config,
            )),
            Provider::Azure => Arc::new(azure::Access::new(
                &shared.env.azure,
                shared.http.clone(),
                config,
            )?),
        };
        Ok(Storage {
            provider: config.provider,
            access,
            options: shared.options.clone(),
            configured_buckets: config.buckets(),
            lkg_bucket: config.lkg_location(),
            opened: Arc::default(),
        })
    }
}

/// What a GCP customer's workload identity provider must trust (`GET
/// /connectors/gcp-subject`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GcpTrust {
    /// The platform's issuer, with an attribute condition on the tenant's own subject.
    Subject {
        issuer: String,
        jwks_uri: String,
        subject: String,
    },
    /// The deployment's one identity (single-tenant deployments only).
    SingleIdentity,
    /// No GCP identity is configured: GCP connectors cannot connect.
    NotConfigured,
}

/// One connector's storage.
#[derive(Debug, Clone)]
pub struct Storage {
    provider: Provider,
    access: Arc<dyn Access>,
    options: ClientOptions,
    configured_buckets: Vec<String>,
    lkg_bucket: Option<String>,
    /// Each bucket's handle, made once: making one builds its HTTP clients, which reads and
    /// parses the system's root certificates.
    opened: Arc<std::sync::Mutex<std::collections::HashMap<String, Bucket>>>,
}

/// One object, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub key: String,
    pub size: u64,
    /// Spelled as the provider's listing spells it (S3 and GCS in double quotes, Azure
    /// without), wherever this crate hands an ETag out: listings, heads, reads and writes.
    pub etag: Option<String>,
    pub last_modified: OffsetDateTime,
}

/// One page of a listing.
#[derive(Debug)]
pub struct ListPage {
    pub objects: Vec<Object>,
    /// Objects left out because they hold no data: empty objects and folder markers (`dir/`).
    pub empty: u64,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<String>,
}

/// What a connection test found.
#[derive(Debug, Clone)]
pub struct Probe {
    pub buckets_accessible: Vec<String>,
    pub sample_objects: u64,
    /// The first failure, when any bucket could not be listed or read.
    pub error: Option<AccessError>,
    pub latency: Duration,
}

impl Storage {
    /// Whose storage this is.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// What a bucket keeps of an object's content once it is replaced or deleted, by the
    /// versioning its posture reported (`Posture::versioning`): `kept` when versioning is on
    /// (the old content stays as a noncurrent version); `not_kept` for S3 without versioning;
    /// else `unknown`: S3 with versioning suspended keeps versions written while it was on,
    /// GCS keeps overwritten and deleted objects for its soft-delete duration (seven days unless
    /// the bucket says otherwise, which posture does not read), and Azure's versioning and soft
    /// delete are not read either.
    pub fn prior_versions(&self, versioning: Option<&str>) -> &'static str {
        match (self.provider, versioning) {
            (_, Some("enabled")) => "kept",
            (Provider::Aws, Some("disabled")) => "not_kept",
            _ => "unknown",
        }
    }

    /// Where remediation keeps last-known-good snapshots, when the connector names a bucket
    /// for them (`lkg_location`); else each snapshot stays in its object's bucket.
    pub fn lkg_bucket(&self) -> Option<&str> {
        self.lkg_bucket.as_deref()
    }

    /// The buckets a scan covers: the configured ones, or every one the credentials can list.
    pub async fn buckets(&self) -> Result<Vec<String>, AccessError> {
        if self.configured_buckets.is_empty() {
            let mut found = self.access.list_buckets().await?;
            found.sort();
            Ok(found)
        } else {
            Ok(self.configured_buckets.clone())
        }
    }

    /// What the provider says about one bucket's exposure (who may read it) and configuration
    /// (encryption at rest, versioning), for drift detection. A setting the provider withholds
    /// from the connector's identity is `None`; a bucket that does not exist, or credentials
    /// that are refused, fail like a listing. Each call asks the provider afresh.
    pub async fn posture(&self, bucket: &str) -> Result<Posture, AccessError> {
        self.access.posture(bucket).await
    }

    /// A handle on one bucket.
    pub fn bucket(&self, name: &str) -> Result<Bucket, AccessError> {
        if let Some(bucket) = self.opened.lock().ok().and_then(|b| b.get(name).cloned()) {
            return Ok(bucket);
        }
        let store = self.access.store(name, self.options.clone())?;
        let bucket = Bucket {
            name: name.to_owned(),
            writes: self.access.writes(name, store.clone(), &self.options)?,
            store,
            form: self.access.etag_form(),
            lists_exact_prefix: self.provider() != Provider::Azure,
        };
        if let Ok(mut opened) = self.opened.lock() {
            opened.insert(name.to_owned(), bucket.clone());
        }
        Ok(bucket)
    }

    /// Lists each bucket's first objects under the given prefixes and reads the start of one
    /// object per bucket, to prove both list and read access. Starts no scan.
    /// Lists the buckets and samples each, one after another, until `deadline` has passed
    /// or a bucket does not answer at all (a network failure would only repeat for the
    /// others): a test answers an HTTP request.
    pub async fn probe(&self, prefixes: &[String], deadline: Duration) -> Probe {
        const SAMPLE: usize = 10;
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        let mut probe = Probe {
            buckets_accessible: Vec::new(),
            sample_objects: 0,
            error: None,
            latency: Duration::ZERO,
        };
        let late = |what: String| {
            AccessError::new(Failure::Network, format!("{what} within {deadline:?}"))
        };
        let buckets = match tokio::time::timeout_at(until, self.buckets()).await {
            Ok(Ok(buckets)) => buckets,
            Ok(Err(e)) => {
                probe.error = Some(e);
                probe.latency = started.elapsed();
                return probe;
            }
            Err(_) => {
                probe.error = Some(late("the storage listed no bucket".to_owned()));
                probe.latency = started.elapsed();
                return probe;
            }
        };
        if buckets.is_empty() {
            probe.error = Some(AccessError::new(
                Failure::NotFound,
                "the credentials can list no bucket, and the connector names none",
            ));
        }
        let total = buckets.len();
        for (checked, name) in buckets.into_iter().enumerate() {
            let outcome =
                tokio::time::timeout_at(until, self.probe_bucket(&name, prefixes, SAMPLE)).await;
            match outcome {
                Ok(Ok(seen)) => {
                    probe.buckets_accessible.push(name);
                    probe.sample_objects += seen;
                }
                Ok(Err(e)) => {
                    let unreachable = e.failure == Failure::Network;
                    if probe.error.is_none() {
                        probe.error = Some(AccessError::new(
                            e.failure,
                            format!("bucket {name}: {}", e.message),
                        ));
                    }
                    if unreachable {
                        break;
                    }
                }
                Err(_) => {
                    probe.error = Some(late(format!(
                        "the storage answered for {checked} of {total} buckets"
                    )));
                    break;
                }
            }
        }
        probe.latency = started.elapsed();
        probe
    }

    async fn probe_bucket(
        &self,
        name: &str,
        prefixes: &[String],
        sample: usize,
    ) -> Result<u64, AccessError> {
        let bucket = self.bucket(name)?;
        let first = prefixes.first().map(String::as_str);
        let page = bucket.list_page(first, None, sample).await?;
        if let Some(object) = page.objects.iter().find(|o| o.size > 0) {
            bucket.read_head(&object.key, 1024).await?;
        }
        Ok(page.objects.len() as u64)
    }
}

/// One bucket (Azure container) of a connector.
#[derive(Debug, Clone)]
pub struct Bucket {
    name: String,
    store: Arc<dyn Blobs>,
    writes: Arc<dyn Writes>,
    form: EtagForm,
    /// Whether a listing under a prefix includes an object whose key is the prefix itself.
    /// object_store's Azure listing drops it (it keeps only names longer than the prefix).
    lists_exact_prefix: bool,
}

impl Bucket {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One page of objects whose keys start with `prefix` (a raw prefix: `logs/2024` matches
    /// `logs/2024-01.txt`).
    pub async fn list_page(
        &self,
        prefix: Option<&str>,
        page_token: Option<String>,
        max_keys: usize,
    ) -> Result<ListPage, AccessError> {
        let first_page = page_token.is_none();
        let options = PaginatedListOptions {
            page_token,
            max_keys: Some(max_keys),
            ..Default::default()
        };
        let page = self
            .store
            .list_paginated(prefix.filter(|p| !p.is_empty()), options)
            .await
            .map_err(AccessError::storage)?;
        let mut objects = Vec::with_capacity(page.result.objects.len());
        let mut empty = 0;
        for meta in page.result.objects {
            // object_store drops a folder marker's trailing `/` (`dir/` lists as `dir`, and
            // reads as 404), so it cannot be told from an empty object: neither holds data.
            if meta.size == 0 {
                empty += 1;
                continue;
            }
            objects.push(self.object(meta));
        }
        // An object named exactly the prefix is in scope; where the listing leaves it out, it
        // is looked up, once, and comes first (it sorts before every longer name). Left out, it
        // would be neither scanned nor, once scanned before, kept: a complete listing without
        // it resolves its findings as deleted.
        if let Some(exact) = prefix.filter(|p| {
            first_page && !self.lists_exact_prefix && !p.is_empty() && !p.ends_with('/')
        }) && let Some(object) = self.head(exact).await?
            && object.size > 0
        {
            objects.insert(0, object);
        }
        Ok(ListPage {
            objects,
            empty,
            next: page.page_token,
        })
    }

    /// Streams an object's content. With `etag`, the read fails when the object changed since
    /// it was listed (so a scan never reads a different version than it enumerated).
    pub async fn read(
        &self,
        key: &str,
        etag: Option<&str>,
    ) -> Result<BoxStream<'static, Result<bytes::Bytes, AccessError>>, AccessError> {
        let options = GetOptions {
            if_match: etag.map(str::to_owned),
            ..Default::default()
        };
        Ok(self
            .get(key, options)
            .await?
            .into_stream()
            .map(|chunk| chunk.map_err(AccessError::storage))
            .boxed())
    }

    /// Reads at most the first `len` bytes of an object.
    pub async fn read_head(&self, key: &str, len: u64) -> Result<bytes::Bytes, AccessError> {
        let options = GetOptions {
            range: Some(GetRange::Bounded(0..len)),
            ..Default::default()
        };
        let result = self.get(key, options).await?;
        result.bytes().await.map_err(AccessError::storage)
    }

    /// An object's metadata as this crate hands it out.
    fn object(&self, meta: ObjectMeta) -> Object {
        Object {
            key: meta.location.to_string(),
            size: meta.size,
            etag: meta.e_tag.map(|e| self.form.spell(&e)),
            last_modified: OffsetDateTime::from_unix_timestamp_nanos(
                i128::from(meta.last_modified.timestamp_micros()) * 1000,
            )
            .unwrap_or(OffsetDateTime::UNIX_EPOCH),
        }
    }

    async fn get(
        &self,
        key: &str,
        options: GetOptions,
    ) -> Result<object_store::GetResult, AccessError> {
        self.store
            .get_opts(&object_path(key)?, options)
            .await
            .map_err(AccessError::storage)
    }
}

//! The dev stack's object store: an S3-compatible server in this process over a directory
//! (`<DPS_DEV_DIR>/storage`, each folder under it a bucket), which also answers STS
//! AssumeRole, so that an AWS connector reaches it exactly as it reaches AWS: the platform's
//! own key assumes the demo role with the tenant's external id, and the role's session key reads
//! the buckets.
//!
//! The objects are s3s-fs's (listing, reads, writes, copies, deletes, multipart), the protocol
//! and SigV4 are s3s's, and hyper serves it over HTTP/1.1 as object_store speaks it. Around
//! s3s-fs this module adds what the platform asks of a bucket that s3s-fs does not answer:
//! - ETags in listings, as S3 gives them (s3s-fs lists none), so that a scan records each
//!   object's version and remediation's conditional writes have one to name;
//! - the five posture reads: a bucket named public answers as readable by anyone (a public
//!   policy, an `AllUsers` READ grant, no public access block) and without default encryption;
//!   every other bucket as private (all four blocks on, the owner's grant only) and encrypted
//!   with SSE-S3; versioning was never enabled on any;
//! - who may do what: only the platform's key may call STS, and only with the demo role's ARN
//!   and the tenant's external id; only the role's session key may call S3.
//!
//! Both key pairs are made at random when the store starts, so nothing outside this process
//! holds them; the platform gets its own through the dev stack's defaults.

use std::collections::BTreeSet;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context as _;
use hyper_util::rt::TokioIo;
use s3s::access::{S3Access, S3AccessContext};
use s3s::auth::{SecretKey, SimpleAuth};
use s3s::dto::{self, ETag};
use s3s::route::S3Route;
use s3s::service::S3ServiceBuilder;
use s3s::{Body, S3, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, s3_error};

/// The largest STS form body read: an AssumeRole request is a few hundred bytes.
const STS_BODY_LIMIT: usize = 64 * 1024;

/// Lifetime of the role's session credentials when the request names none, as STS's default.
const SESSION_SECONDS: i64 = 3600;

/// The owner named in every bucket's ACL.
const OWNER_ID: &str = "devstack-demo-owner";

/// The ACL group that means "anyone".
const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";

/// An access key id and its secret. `Debug` shows the id only.
#[derive(Clone)]
pub struct KeyPair {
    pub id: String,
    pub secret: String,
}

impl fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyPair")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl KeyPair {
    /// A new pair: `prefix` and 16 random hex digits, and a 40-digit random secret.
    fn random(prefix: &str) -> anyhow::Result<Self> {
        Ok(KeyPair {
            id: format!("{prefix}{}", random_hex(8)?.to_ascii_uppercase()),
            secret: random_hex(20)?,
        })
    }
}

fn random_hex(bytes: usize) -> anyhow::Result<String> {
    use ring::rand::SecureRandom as _;
    let mut buf = vec![0u8; bytes];
    ring::rand::SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| anyhow::anyhow!("the system's random source failed"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The role the demo connector names, and the external id its trust policy requires.
#[derive(Debug, Clone)]
pub struct Trust {
    pub role_arn: String,
    pub external_id: String,
}

/// The store's address, bound before the services are configured (their defaults name it),
/// and the platform's key for it.
#[derive(Debug)]
pub struct Bound {
    listener: std::net::TcpListener,
    pub addr: SocketAddr,
    pub platform: KeyPair,
}

impl Bound {
    /// Binds `addr` (port 0 picks a free one).
    pub fn bind(addr: SocketAddr) -> anyhow::Result<Self> {
        let listener = std::net::TcpListener::bind(addr).with_context(|| {
            format!(
                "binding the demo store to {addr} (set STORAGE_BIND_ADDR, or start with \
                     --no-demo)"
            )
        })?;
        listener.set_nonblocking(true)?;
        Ok(Bound {
            addr: listener.local_addr()?,
            listener,
            platform: KeyPair::random("AKIADEVSTACK")?,
        })
    }

    /// `http://ADDR`: the endpoint of both S3 and STS.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves the buckets under `root` on a thread of its own, with a runtime of its own, so
    /// that the store answers whatever the services' runtime is busy with. It runs until the
    /// process ends.
    pub fn serve(self, root: &Path, public: BTreeSet<String>, trust: Trust) -> anyhow::Result<()> {
        let session = KeyPair::random("ASIADEVSTACK")?;
        let fs = s3s_fs::FileSystem::new(root)
            .map_err(|e| anyhow::anyhow!("opening the demo store at {}: {e:?}", root.display()))?;
        let mut auth = SimpleAuth::new();
        auth.register(
            self.platform.id.clone(),
            SecretKey::from(self.platform.secret.as_str()),
        );
        auth.register(session.id.clone(), SecretKey::from(session.secret.as_str()));
        let mut builder = S3ServiceBuilder::new(DemoS3 { fs, public });
        builder.set_auth(auth);
        builder.set_access(RoleOnly {
            session: session.id.clone(),
        });
        builder.set_route(Sts {
            platform: self.platform.id.clone(),
            trust,
            session,
        });
        let service = builder.build();
        // The store's own logs (s3s logs every error answer, a missing key or a bucket without
        // encryption included, at ERROR) would drown the services' in the terminal; they are
        // kept only when RUST_LOG asks for logs explicitly.
        let quiet = std::env::var("RUST_LOG").map_or(true, |v| v.trim().is_empty());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = self.listener;
        std::thread::Builder::new()
            .name("demo-store".into())
            .spawn(move || {
                let _silence = quiet.then(|| {
                    tracing::subscriber::set_default(tracing::subscriber::NoSubscriber::default())
                });
                runtime.block_on(accept(listener, service));
            })?;
        Ok(())
    }
}

/// Accepts connections until the process ends.
async fn accept(listener: std::net::TcpListener, service: s3s::service::S3Service) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("devstack: the demo store cannot listen: {e}");
            return;
        }
    };
    loop {
        // A failed accept (a connection reset before it was taken, no descriptors left) leaves
        // the listener usable; the pause keeps a lasting failure from spinning a core.
        let Ok((socket, _)) = listener.accept().await else {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let service = service.clone();
        tokio::spawn(async move {
            // A connection's error (a client gone mid-response) is the client's to see.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}

/// S3 for the role's session key only: the platform's own key may assume the role and nothing
/// else, as a platform identity whose only permission is `sts:AssumeRole`.
struct RoleOnly {
    session: String,
}

#[async_trait::async_trait]
impl S3Access for RoleOnly {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        match cx.credentials() {
            Some(c) if c.access_key == self.session => Ok(()),
            Some(_) => Err(s3_error!(
                AccessDenied,
                "only the demo role's session may read the demo buckets"
            )),
            None => Err(s3_error!(AccessDenied, "Signature is required")),
        }
    }
}

/// STS AssumeRole at `POST /`: the demo role, for the platform's key, with the tenant's external
/// id; anything else is refused as STS refuses it.
struct Sts {
    platform: String,
    trust: Trust,
    session: KeyPair,
}

#[async_trait::async_trait]
impl S3Route for Sts {
    fn is_match(
        &self,
        method: &http::Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
        _: &mut http::Extensions,
    ) -> bool {
        // S3 has no `POST /`; STS's query API is nothing else.
        method == http::Method::POST
            && uri.path() == "/"
            && headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
    }

    async fn check_access(&self, req: &mut S3Request<Body>) -> S3Result<()> {
        match &req.credentials {
            Some(c) if c.access_key == self.platform && req.service.as_deref() == Some("sts") => {
                Ok(())
            }
            Some(_) => Err(s3_error!(
                AccessDenied,
                "only the platform's key may assume the demo role"
            )),
            None => Err(s3_error!(AccessDenied, "Signature is required")),
        }
    }

    async fn call(&self, mut req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let body = req
            .input
            .store_all_limited(STS_BODY_LIMIT)
            .await
            .map_err(|_| s3_error!(InvalidRequest, "the form body is too large"))?;
        let form: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(&body).into_owned().collect();
        let field = |name: &str| form.get(name).map(String::as_str);
        if field("Action") != Some("AssumeRole") {
            return Err(sts_error(
                "InvalidAction",
                "this STS answers AssumeRole only",
                http::StatusCode::BAD_REQUEST,
            ));
        }
        // The role's trust policy: this role, and the external id the platform derives for the
        // dev tenant (`GET /connectors/external-id`), as a customer's role would require it.
        if field("RoleArn") != Some(self.trust.role_arn.as_str())
            || field("ExternalId") != Some(self.trust.external_id.as_str())
        {
            return Err(sts_error(
                "AccessDenied",
                "the role's trust policy does not allow this request: it trusts the demo role's ARN with the dev tenant's external id",
                http::StatusCode::FORBIDDEN,
            ));
        }
        // STS's own bounds for a role session: 15 minutes to 12 hours.
        let seconds = field("DurationSeconds")
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(SESSION_SECONDS)
            .clamp(900, 43_200);
        let expires = (time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds))
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|_| s3_error!(InternalError))?;
        let xml = format!(
            "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
             <AssumeRoleResult><Credentials><AccessKeyId>{}</AccessKeyId>\
             <SecretAccessKey>{}</SecretAccessKey><SessionToken>devstack-demo-session\
             </SessionToken><Expiration>{expires}</Expiration></Credentials>\
             <AssumedRoleUser><Arn>{}</Arn></AssumedRoleUser></AssumeRoleResult>\
             </AssumeRoleResponse>",
            self.session.id, self.session.secret, self.trust.role_arn
        );
        let mut response = S3Response::new(Body::from(xml));
        response.headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/xml"),
        );
        Ok(response)
    }
}

fn sts_error(code: &'static str, message: &'static str, status: http::StatusCode) -> S3Error {
    let mut error = S3Error::with_message(S3ErrorCode::Custom(code.into()), message);
    error.set_status_code(status);
    error
}

/// A bucket configuration S3 answers "not configured" for: a 404 with its own code.
fn not_configured(code: &'static str) -> S3Error {
    let mut error = S3Error::with_message(
        S3ErrorCode::Custom(code.into()),
        "The bucket has no such configuration",
    );
    error.set_status_code(http::StatusCode::NOT_FOUND);
    error
}

/// s3s-fs's buckets, with S3's ETags in listings and a posture for each bucket.
struct DemoS3 {
    fs: s3s_fs::FileSystem,
    /// The buckets that answer as readable by anyone.
    public: BTreeSet<String>,
}

impl DemoS3 {
    /// Whether `bucket` exists (NoSuchBucket otherwise), and whether it is a public one.
    async fn public(&self, bucket: &str) -> S3Result<bool> {
        self.fs
            .head_bucket(request(dto::HeadBucketInput {
                bucket: bucket.to_owned(),
                ..Default::default()
            }))
            .await?;
        Ok(self.public.contains(bucket))
    }
}

/// An internal request to s3s-fs, made by the store itself.
fn request<T>(input: T) -> S3Request<T> {
    S3Request {
        input,
        method: http::Method::GET,
        uri: http::Uri::from_static("/"),
        headers: http::HeaderMap::new(),
        extensions: http::Extensions::new(),
        credentials: None,
        region: None,
        service: None,
        trailing_headers: None,
    }
}

fn owner() -> dto::Owner {
    dto::Owner {
        display_name: None,
        id: Some(OWNER_ID.to_owned()),
    }
}

fn grant(grantee: dto::Grantee, permission: &'static str) -> dto::Grant {
    dto::Grant {
        grantee: Some(grantee),
        permission: Some(dto::Permission::from_static(permission)),
    }
}

/// Each operation the platform makes goes to s3s-fs as it is, except where the doc comment
/// says otherwise.
#[async_trait::async_trait]
impl S3 for DemoS3 {
    /// s3s-fs's listing, with each object's ETag (s3s-fs gives none) as a HeadObject answers it.
    async fn list_objects_v2(
        &self,
        req: S3Request<dto::ListObjectsV2Input>,
    ) -> S3Result<S3Response<dto::ListObjectsV2Output>> {
        let bucket = req.input.bucket.clone();
        let mut response = self.fs.list_objects_v2(req).await?;
        for object in response.output.contents.iter_mut().flatten() {
            let Some(key) = object.key.clone() else {
                continue;
            };
            let head = self
                .fs
                .head_object(request(dto::HeadObjectInput {
                    bucket: bucket.clone(),
                    key,
                    ..Default::default()
                }))
                .await;
            match head {
                Ok(head) => object.e_tag = head.output.e_tag,
                // Deleted between the listing and the head: listed without an ETag, which a
                // scan reads again, as S3's own listings race with deletes.
                Err(_) => continue,
            }
            object.storage_class = Some(dto::ObjectStorageClass::from_static(
                dto::ObjectStorageClass::STANDARD,
            ));
        }
        Ok(response)
    }

    async fn list_objects(
        &self,
        req: S3Request<dto::ListObjectsInput>,
    ) -> S3Result<S3Response<dto::ListObjectsOutput>> {
        self.fs.list_objects(req).await
    }

    async fn list_buckets(
        &self,
        req: S3Request<dto::ListBucketsInput>,
    ) -> S3Result<S3Response<dto::ListBucketsOutput>> {
        self.fs.list_buckets(req).await
    }

    async fn head_bucket(
        &self,
        req: S3Request<dto::HeadBucketInput>,
    ) -> S3Result<S3Response<dto::HeadBucketOutput>> {
        self.fs.head_bucket(req).await
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<dto::GetBucketLocationInput>,
    ) -> S3Result<S3Response<dto::GetBucketLocationOutput>> {
        self.fs.get_bucket_location(req).await
    }

    async fn create_bucket(
        &self,
        req: S3Request<dto::CreateBucketInput>,
    ) -> S3Result<S3Response<dto::CreateBucketOutput>> {
        self.fs.create_bucket(req).await
    }

    async fn get_object(
        &self,
        req: S3Request<dto::GetObjectInput>,
    ) -> S3Result<S3Response<dto::GetObjectOutput>> {
        // s3s-fs reads whatever is there; S3 refuses a read whose If-Match names another
        // version, which is how a scan or a remediation learns that an object changed.
        if let Some(dto::ETagCondition::ETag(wanted)) = &req.input.if_match {
            let head = self
                .fs
                .head_object(request(dto::HeadObjectInput {
                    bucket: req.input.bucket.clone(),
                    key: req.input.key.clone(),
                    ..Default::default()
                }))
                .await?;
            if head.output.e_tag.as_ref().map(ETag::value) != Some(wanted.value()) {
                return Err(s3_error!(PreconditionFailed));
            }
        }
        self.fs.get_object(req).await
    }

    async fn head_object(
        &self,
        req: S3Request<dto::HeadObjectInput>,
    ) -> S3Result<S3Response<dto::HeadObjectOutput>> {
        self.fs.head_object(req).await
    }

    async fn put_object(
        &self,
        req: S3Request<dto::PutObjectInput>,
    ) -> S3Result<S3Response<dto::PutObjectOutput>> {
        self.fs.put_object(req).await
    }

    async fn copy_object(
        &self,
        req: S3Request<dto::CopyObjectInput>,
    ) -> S3Result<S3Response<dto::CopyObjectOutput>> {
        self.fs.copy_object(req).await
    }

    async fn delete_object(
        &self,
        req: S3Request<dto::DeleteObjectInput>,
    ) -> S3Result<S3Response<dto::DeleteObjectOutput>> {
        self.fs.delete_object(req).await
    }

    async fn delete_objects(
        &self,
        req: S3Request<dto::DeleteObjectsInput>,
    ) -> S3Result<S3Response<dto::DeleteObjectsOutput>> {
        self.fs.delete_objects(req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<dto::CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<dto::CreateMultipartUploadOutput>> {
        self.fs.create_multipart_upload(req).await
    }

    async fn upload_part(
        &self,
        req: S3Request<dto::UploadPartInput>,
    ) -> S3Result<S3Response<dto::UploadPartOutput>> {
        self.fs.upload_part(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<dto::CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<dto::CompleteMultipartUploadOutput>> {
        self.fs.complete_multipart_upload(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<dto::AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<dto::AbortMultipartUploadOutput>> {
        self.fs.abort_multipart_upload(req).await
    }

    async fn list_parts(
        &self,
        req: S3Request<dto::ListPartsInput>,
    ) -> S3Result<S3Response<dto::ListPartsOutput>> {
        self.fs.list_parts(req).await
    }

    /// Public for a public bucket (its policy grants `s3:GetObject` to `*`); a private bucket
    /// has no policy at all.
    async fn get_bucket_policy_status(
        &self,
        req: S3Request<dto::GetBucketPolicyStatusInput>,
    ) -> S3Result<S3Response<dto::GetBucketPolicyStatusOutput>> {
        if !self.public(&req.input.bucket).await? {
            return Err(s3_error!(NoSuchBucketPolicy));
        }
        Ok(S3Response::new(dto::GetBucketPolicyStatusOutput {
            policy_status: Some(dto::PolicyStatus {
                is_public: Some(true),
            }),
        }))
    }

    /// The owner's FULL_CONTROL, and for a public bucket READ for `AllUsers`.
    async fn get_bucket_acl(
        &self,
        req: S3Request<dto::GetBucketAclInput>,
    ) -> S3Result<S3Response<dto::GetBucketAclOutput>> {
        let public = self.public(&req.input.bucket).await?;
        let mut grants = vec![grant(
            dto::Grantee {
                display_name: None,
                email_address: None,
                id: Some(OWNER_ID.to_owned()),
                type_: dto::Type::from_static(dto::Type::CANONICAL_USER),
                uri: None,
            },
            dto::Permission::FULL_CONTROL,
        )];
        if public {
            grants.push(grant(
                dto::Grantee {
                    display_name: None,
                    email_address: None,
                    id: None,
                    type_: dto::Type::from_static(dto::Type::GROUP),
                    uri: Some(ALL_USERS.to_owned()),
                },
                dto::Permission::READ,
            ));
        }
        Ok(S3Response::new(dto::GetBucketAclOutput {
            grants: Some(grants),
            owner: Some(owner()),
        }))
    }

    /// All four blocks on a private bucket; none on a public one.
    async fn get_public_access_block(
        &self,
        req: S3Request<dto::GetPublicAccessBlockInput>,
    ) -> S3Result<S3Response<dto::GetPublicAccessBlockOutput>> {
        if self.public(&req.input.bucket).await? {
            return Err(not_configured("NoSuchPublicAccessBlockConfiguration"));
        }
        Ok(S3Response::new(dto::GetPublicAccessBlockOutput {
            public_access_block_configuration: Some(dto::PublicAccessBlockConfiguration {
                block_public_acls: Some(true),
                block_public_policy: Some(true),
                ignore_public_acls: Some(true),
                restrict_public_buckets: Some(true),
            }),
        }))
    }

    /// SSE-S3 on a private bucket; no default encryption on a public one.
    async fn get_bucket_encryption(
        &self,
        req: S3Request<dto::GetBucketEncryptionInput>,
    ) -> S3Result<S3Response<dto::GetBucketEncryptionOutput>> {
        if self.public(&req.input.bucket).await? {
            return Err(not_configured(
                "ServerSideEncryptionConfigurationNotFoundError",
            ));
        }
        Ok(S3Response::new(dto::GetBucketEncryptionOutput {
            server_side_encryption_configuration: Some(dto::ServerSideEncryptionConfiguration {
                rules: vec![dto::ServerSideEncryptionRule {
                    apply_server_side_encryption_by_default: Some(
                        dto::ServerSideEncryptionByDefault {
                            kms_master_key_id: None,
                            sse_algorithm: dto::ServerSideEncryption::from_static(
                                dto::ServerSideEncryption::AES256,
                            ),
                        },
                    ),
                    bucket_key_enabled: None,
                }],
            }),
        }))
    }

    /// Never enabled, as S3 answers it: no status.
    async fn get_bucket_versioning(
        &self,
        req: S3Request<dto::GetBucketVersioningInput>,
    ) -> S3Result<S3Response<dto::GetBucketVersioningOutput>> {
        self.public(&req.input.bucket).await?;
        Ok(S3Response::new(dto::GetBucketVersioningOutput::default()))
    }
}

//! An S3 server in the bench's own process whose bucket holds objects it generates instead of
//! storing: a million objects cost no disk, no seeding and no memory beyond the objects that
//! [`SyntheticS3::change`] has changed.
//!
//! Object `n` (from 0) is `events/{n:07}.ndjson` ([`SyntheticS3::key`]), or another extension
//! than `ndjson` where the caller names one ([`SyntheticS3::start_with`]): the zero-padded index
//! makes the listing order the index order, so every ListObjectsV2 page is found by binary search
//! over the index (O(log n) keys formatted, then one entry per key answered) and never walks the
//! bucket, as s3s-fs (which reads the whole directory for every page) and moto (one Python core)
//! do. Its body is the caller's `body(n)`; a changed object is `body(n)` with one more NDJSON
//! line, `{"version":v}`, so its size, ETag and LastModified change with it.
//!
//! The protocol, SigV4 included, is the `s3s` crate's; hyper serves it over HTTP/1.1, which is
//! what object_store speaks to an `http://` endpoint. It answers what the AWS connector asks
//! during a connection test, a scan and a posture check:
//! - ListObjectsV2 (prefix, start-after, continuation-token, max-keys up to 1000, delimiter),
//!   GetObject (Range, If-Match, If-None-Match), HeadObject;
//! - ListBuckets, HeadBucket, GetBucketLocation;
//! - the five posture reads, answered as a private, encrypted bucket: GetBucketPolicyStatus (not
//!   public), GetBucketAcl (the owner only), GetPublicAccessBlock (all four blocks on),
//!   GetBucketEncryption (SSE-S3), GetBucketVersioning (never enabled).
//!
//! Everything else (writes among them) is s3s's `NotImplemented`. Another bucket is
//! `NoSuchBucket`, a key that is not one of the objects `NoSuchKey`.
//!
//! A listing says each object's exact size, which it learns by generating the body unless the
//! caller declares the sizes ([`SyntheticS3::sized`]): generating a million 1 KiB bodies costs
//! seconds of CPU that the bench's enumeration would otherwise be charged for.
#![allow(
    dead_code,
    reason = "each bench that includes this module uses the part of it that it needs"
)]

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytes::Bytes;
use hyper_util::rt::TokioIo;
use s3s::auth::SimpleAuth;
use s3s::dto::{
    Bucket, CommonPrefix, ETag, ETagCondition, GetBucketAclInput, GetBucketAclOutput,
    GetBucketEncryptionInput, GetBucketEncryptionOutput, GetBucketLocationInput,
    GetBucketLocationOutput, GetBucketPolicyStatusInput, GetBucketPolicyStatusOutput,
    GetBucketVersioningInput, GetBucketVersioningOutput, GetObjectInput, GetObjectOutput,
    GetPublicAccessBlockInput, GetPublicAccessBlockOutput, Grant, Grantee, HeadBucketInput,
    HeadBucketOutput, HeadObjectInput, HeadObjectOutput, ListBucketsInput, ListBucketsOutput,
    ListObjectsV2Input, ListObjectsV2Output, Object, ObjectStorageClass, Owner, Permission,
    PolicyStatus, PublicAccessBlockConfiguration, ServerSideEncryption,
    ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    StreamingBlob, Timestamp, Type,
};
use s3s::service::S3ServiceBuilder;
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};
use time::OffsetDateTime;

/// Keys per ListObjectsV2 page at most, as S3 caps `max-keys`.
const MAX_KEYS: usize = 1000;

/// Objects a bucket may hold: the seven digits of [`SyntheticS3::key`].
const MAX_OBJECTS: usize = 10_000_000;

/// When every object was last modified; version `v` of an object `v` minutes later.
const MODIFIED: OffsetDateTime = time::macros::datetime!(2024-05-01 00:00 UTC);

/// The owner named in the bucket's ACL.
const OWNER_ID: &str = "synthetic-owner";

/// A running server. Dropping it stops it, and the connections it holds.
#[derive(Debug)]
pub struct SyntheticS3 {
    url: String,
    bucket: Arc<Generated>,
    server: tokio::task::JoinHandle<()>,
}

impl SyntheticS3 {
    /// Serves the bucket `bucket` holding `objects` objects, object `n`'s content being
    /// `body(n)`, on 127.0.0.1 at a free port, to requests signed (SigV4) with `key_id` and
    /// `secret`. It runs on the caller's Tokio runtime, which must have threads to spare for
    /// it while the caller waits. Panics when the port cannot be bound or `objects` exceeds ten
    /// million.
    pub async fn start(
        bucket: &str,
        objects: usize,
        key_id: &str,
        secret: &str,
        body: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(bucket, objects, key_id, secret, "ndjson", body).await
    }

    /// [`SyntheticS3::start`], with keys ending in `.{extension}` instead of `.ndjson`: the
    /// extension tells detection how to read a body (`log`, `csv`, ...).
    pub async fn start_with(
        bucket: &str,
        objects: usize,
        key_id: &str,
        secret: &str,
        extension: &'static str,
        body: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static,
    ) -> Self {
        assert!(
            objects <= MAX_OBJECTS,
            "at most {MAX_OBJECTS} objects have seven-digit keys"
        );
        let generated = Arc::new(Generated {
            bucket: bucket.to_owned(),
            objects,
            extension,
            body: Box::new(body),
            size: OnceLock::new(),
            versions: Mutex::default(),
            gets: AtomicU64::new(0),
            lists: AtomicU64::new(0),
        });
        let mut builder = S3ServiceBuilder::new(Service(generated.clone()));
        builder.set_auth(SimpleAuth::from_single(key_id, secret));
        let service = builder.build();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap_or_else(|e| panic!("synthetic S3: bind: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("synthetic S3: local address: {e}"))
            .port();
        SyntheticS3 {
            url: format!("http://127.0.0.1:{port}"),
            bucket: generated,
            server: tokio::spawn(serve(listener, service)),
        }
    }

    /// Declares that `body(n)` is `size(n)` bytes long, so that a listing need not generate
    /// the bodies to say their sizes. A GetObject whose body turns out another length answers
    /// `InternalError`, which fails the read. Panics when sizes were declared already.
    pub fn sized(self, size: impl Fn(usize) -> usize + Send + Sync + 'static) -> Self {
        if self.bucket.size.set(Box::new(size)).is_err() {
            panic!("synthetic S3: sizes declared twice");
        }
        self
    }

    /// `http://127.0.0.1:PORT`, the endpoint to give the client (`AWS_ENDPOINT_URL`).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// GetObject requests answered so far, whatever the answer (a refused If-Match counts).
    pub fn gets(&self) -> u64 {
        self.bucket.gets.load(Ordering::Relaxed)
    }

    /// ListObjectsV2 requests answered so far, whatever the answer.
    pub fn lists(&self) -> u64 {
        self.bucket.lists.load(Ordering::Relaxed)
    }

    /// The key of object `n` in a bucket started with [`SyntheticS3::start`]. Keys sort as
    /// their indexes do.
    pub fn key(n: usize) -> String {
        key(n, "ndjson")
    }

    /// The key of object `n` in a bucket started with [`SyntheticS3::start_with`] and
    /// `extension`.
    pub fn key_with(n: usize, extension: &str) -> String {
        key(n, extension)
    }

    /// Object `n`'s content as it is now: `body(n)`, or, once changed, `body(n)` and one line
    /// `{"version":v}`.
    pub fn content(&self, n: usize) -> Vec<u8> {
        self.bucket.content(n, self.bucket.version(n))
    }

    /// Replaces object `n` with its next version: its content, size, ETag and LastModified
    /// change, as an overwrite in S3 changes them. Panics when there is no object `n`.
    pub fn change(&self, n: usize) {
        assert!(n < self.bucket.objects, "no object {n}");
        *self
            .bucket
            .versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(n)
            .or_insert(0) += 1;
    }
}

impl Drop for SyntheticS3 {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Accepts connections until aborted; aborting drops the set, which aborts every connection.
async fn serve(listener: tokio::net::TcpListener, service: s3s::service::S3Service) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                // A failed accept (out of file descriptors, a connection reset before it was
                // taken) leaves the listener usable; the client sees its own error. The pause
                // keeps a lasting one (no descriptors) from spinning a core.
                let Ok((socket, _)) = accepted else {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                let service = service.clone();
                connections.spawn(async move {
                    // A connection's error (a client gone mid-response) is the client's to see.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The bucket: what it holds, what changed, and what was asked of it.
struct Generated {
    bucket: String,
    objects: usize,
    /// What every key ends with, after a dot.
    extension: &'static str,
    body: Box<dyn Fn(usize) -> Vec<u8> + Send + Sync>,
    /// The length of `body(n)`, when the caller declared it ([`SyntheticS3::sized`]).
    size: OnceLock<Box<dyn Fn(usize) -> usize + Send + Sync>>,
    /// Version of each changed object; every other object is at version 0.
    versions: Mutex<HashMap<usize, u32>>,
    gets: AtomicU64,
    lists: AtomicU64,
}

impl fmt::Debug for Generated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generated")
            .field("bucket", &self.bucket)
            .field("objects", &self.objects)
            .field("sized", &self.size.get().is_some())
            .field("gets", &self.gets)
            .field("lists", &self.lists)
            .finish_non_exhaustive()
    }
}

impl Generated {
    fn version(&self, n: usize) -> u32 {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&n)
            .copied()
            .unwrap_or(0)
    }

    fn content(&self, n: usize, version: u32) -> Vec<u8> {
        let mut body = (self.body)(n);
        if version > 0 {
            if !body.is_empty() && !body.ends_with(b"\n") {
                body.push(b'\n');
            }
            body.extend_from_slice(format!("{{\"version\":{version}}}\n").as_bytes());
        }
        body
    }

    /// The length of [`Generated::content`]: declared, or generated and measured. A changed
    /// object is always generated: its marker line depends on how the body ends.
    fn size(&self, n: usize, version: u32) -> usize {
        match self.size.get() {
            Some(size) if version == 0 => size(n),
            _ => self.content(n, version).len(),
        }
    }

    /// The index of the object named `key`, when there is one.
    fn index(&self, key: &str) -> Option<usize> {
        let digits = key
            .strip_prefix("events/")?
            .strip_suffix(self.extension)?
            .strip_suffix('.')?;
        if digits.len() != 7 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().filter(|&n| n < self.objects)
    }

    fn check_bucket(&self, bucket: &str) -> S3Result<()> {
        if bucket == self.bucket {
            Ok(())
        } else {
            Err(s3_error!(NoSuchBucket))
        }
    }

    /// The object `key` of `bucket`: its index, version and current ETag.
    fn find(&self, bucket: &str, key: &str) -> S3Result<(usize, u32, String)> {
        self.check_bucket(bucket)?;
        let n = self.index(key).ok_or_else(|| s3_error!(NoSuchKey))?;
        let version = self.version(n);
        Ok((n, version, etag(n, version)))
    }
}

/// The key of object `n` among keys ending in `.{extension}`.
fn key(n: usize, extension: &str) -> String {
    format!("events/{n:07}.{extension}")
}

/// The first index in `lo..hi` whose key fails `before`, for a `before` that holds for a
/// leading run of the keys and fails for the rest (keys sort as their indexes do).
fn first_not(
    extension: &str,
    mut lo: usize,
    mut hi: usize,
    before: impl Fn(&str) -> bool,
) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(&key(mid, extension)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A stable ETag for version `version` of object `n`: 32 hex digits, like an MD5's.
fn etag(n: usize, version: u32) -> String {
    let seed = (n as u64) << 32 | u64::from(version);
    format!(
        "{:016x}{:016x}",
        mix(seed ^ 0x5eed_0001),
        mix(seed ^ 0x5eed_0002)
    )
}

/// SplitMix64's finalizer: every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn modified(version: u32) -> Timestamp {
    Timestamp::from(MODIFIED + time::Duration::minutes(i64::from(version)))
}

/// `Content-Range` for the inclusive `first..=last` of `size` bytes.
fn content_range(first: u64, last: u64, size: u64) -> String {
    format!("bytes {first}-{last}/{size}")
}

/// The bucket behind s3s's service (a type of this module, which s3s's trait may be
/// implemented for).
struct Service(Arc<Generated>);

#[async_trait::async_trait]
impl S3 for Service {
    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let bucket = &self.0;
        bucket.lists.fetch_add(1, Ordering::Relaxed);
        let input = req.input;
        bucket.check_bucket(&input.bucket)?;
        let max_keys = match input.max_keys {
            None => MAX_KEYS,
            Some(k) => usize::try_from(k)
                .map_err(|_| s3_error!(InvalidArgument, "max-keys must not be negative"))?
                .min(MAX_KEYS),
        };
        let prefix = input.prefix.as_deref().unwrap_or("");
        let delimiter = input.delimiter.as_deref().filter(|d| !d.is_empty());
        // The keys under the prefix are one run of indexes: `begin..end`.
        let begin = first_not(bucket.extension, 0, bucket.objects, |k| k < prefix);
        let end = first_not(bucket.extension, begin, bucket.objects, |k| {
            k.starts_with(prefix)
        });
        // A continuation token is the index to go on from; start-after is a key, which need
        // not exist. S3 ignores start-after once there is a token.
        let start_after = match &input.continuation_token {
            Some(_) => None,
            None => input.start_after.as_deref(),
        };
        let mut n = match (&input.continuation_token, start_after) {
            (Some(token), _) => token
                .parse::<usize>()
                .map_err(|_| {
                    s3_error!(
                        InvalidArgument,
                        "The continuation token provided is incorrect"
                    )
                })?
                .clamp(begin, end),
            (None, Some(after)) => first_not(bucket.extension, begin, end, |k| k <= after),
            (None, None) => begin,
        };
        let mut indexes = Vec::new();
        let mut common_prefixes = Vec::new();
        while n < end && indexes.len() + common_prefixes.len() < max_keys {
            // With a delimiter, the keys that share the part up to the first delimiter after
            // the prefix roll up into that common prefix, one entry for the whole run.
            if let Some(d) = delimiter {
                let key = key(n, bucket.extension);
                if let Some(at) = key[prefix.len()..].find(d) {
                    let common = key[..prefix.len() + at + d.len()].to_owned();
                    n = first_not(bucket.extension, n, end, |k| k.starts_with(&common));
                    // A start-after within the run comes after the common prefix itself.
                    if !start_after.is_some_and(|after| after.starts_with(&common)) {
                        common_prefixes.push(CommonPrefix {
                            prefix: Some(common),
                        });
                    }
                    continue;
                }
            }
            indexes.push(n);
            n += 1;
        }
        // Versions are read under the lock at once; bodies are generated after it is released.
        let versions: Vec<u32> = {
            let changed = bucket
                .versions
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            indexes
                .iter()
                .map(|i| changed.get(i).copied().unwrap_or(0))
                .collect()
        };
        let contents: Vec<Object> = indexes
            .into_iter()
            .zip(versions)
            .map(|(i, version)| Object {
                key: Some(key(i, bucket.extension)),
                size: Some(bucket.size(i, version) as i64),
                e_tag: Some(ETag::Strong(etag(i, version))),
                last_modified: Some(modified(version)),
                storage_class: Some(ObjectStorageClass::from_static(
                    ObjectStorageClass::STANDARD,
                )),
                ..Default::default()
            })
            .collect();
        let listed = contents.len() + common_prefixes.len();
        let truncated = max_keys > 0 && n < end;
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket),
            prefix: input.prefix,
            delimiter: input.delimiter,
            // Both at most MAX_KEYS.
            max_keys: Some(max_keys as i32),
            key_count: Some(listed as i32),
            is_truncated: Some(truncated),
            continuation_token: input.continuation_token,
            next_continuation_token: truncated.then(|| n.to_string()),
            start_after: input.start_after,
            encoding_type: input.encoding_type,
            contents: Some(contents),
            common_prefixes: (!common_prefixes.is_empty()).then_some(common_prefixes),
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let bucket = &self.0;
        bucket.gets.fetch_add(1, Ordering::Relaxed);
        let input = req.input;
        let (n, version, tag) = bucket.find(&input.bucket, &input.key)?;
        if let Some(ETagCondition::ETag(wanted)) = &input.if_match
            && wanted.value() != tag
        {
            return Err(s3_error!(PreconditionFailed));
        }
        match &input.if_none_match {
            Some(ETagCondition::Any) => return Err(s3_error!(NotModified)),
            Some(ETagCondition::ETag(seen)) if seen.value() == tag => {
                return Err(s3_error!(NotModified));
            }
            _ => {}
        }
        let content = Bytes::from(bucket.content(n, version));
        let size = content.len() as u64;
        if let Some(declared) = bucket.size.get().filter(|_| version == 0).map(|s| s(n))
            && declared != content.len()
        {
            return Err(s3_error!(
                InternalError,
                "object {n} was declared {declared} bytes long and is {size}"
            ));
        }
        let (content, range) = match input.range {
            None => (content, None),
            Some(range) => {
                let within = range.check(size)?;
                let range = content_range(within.start, within.end - 1, size);
                // `check` keeps the range within the content, whose length is a usize.
                let slice = content.slice(within.start as usize..within.end as usize);
                (slice, Some(range))
            }
        };
        Ok(S3Response::new(GetObjectOutput {
            content_length: Some(content.len() as i64),
            content_range: range,
            accept_ranges: Some("bytes".to_owned()),
            e_tag: Some(ETag::Strong(tag)),
            last_modified: Some(modified(version)),
            body: Some(StreamingBlob::from(s3s::Body::from(content))),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let bucket = &self.0;
        let input = req.input;
        let (n, version, tag) = bucket.find(&input.bucket, &input.key)?;
        let size = bucket.size(n, version);
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(size as i64),
            accept_ranges: Some("bytes".to_owned()),
            e_tag: Some(ETag::Strong(tag)),
            last_modified: Some(modified(version)),
            ..Default::default()
        }))
    }

    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(vec![Bucket {
                name: Some(self.0.bucket.clone()),
                creation_date: Some(modified(0)),
                bucket_region: None,
            }]),
            owner: Some(owner()),
            ..Default::default()
        }))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    /// us-east-1, which S3 spells as no location constraint.
    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn get_bucket_policy_status(
        &self,
        req: S3Request<GetBucketPolicyStatusInput>,
    ) -> S3Result<S3Response<GetBucketPolicyStatusOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketPolicyStatusOutput {
            policy_status: Some(PolicyStatus {
                is_public: Some(false),
            }),
        }))
    }

    async fn get_bucket_acl(
        &self,
        req: S3Request<GetBucketAclInput>,
    ) -> S3Result<S3Response<GetBucketAclOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketAclOutput {
            grants: Some(vec![Grant {
                grantee: Some(Grantee {
                    display_name: None,
                    email_address: None,
                    id: Some(OWNER_ID.to_owned()),
                    type_: Type::from_static(Type::CANONICAL_USER),
                    uri: None,
                }),
                permission: Some(Permission::from_static(Permission::FULL_CONTROL)),
            }]),
            owner: Some(owner()),
        }))
    }

    async fn get_public_access_block(
        &self,
        req: S3Request<GetPublicAccessBlockInput>,
    ) -> S3Result<S3Response<GetPublicAccessBlockOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetPublicAccessBlockOutput {
            public_access_block_configuration: Some(PublicAccessBlockConfiguration {
                block_public_acls: Some(true),
                block_public_policy: Some(true),
                ignore_public_acls: Some(true),
                restrict_public_buckets: Some(true),
            }),
        }))
    }

    async fn get_bucket_encryption(
        &self,
        req: S3Request<GetBucketEncryptionInput>,
    ) -> S3Result<S3Response<GetBucketEncryptionOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketEncryptionOutput {
            server_side_encryption_configuration: Some(ServerSideEncryptionConfiguration {
                rules: vec![ServerSideEncryptionRule {
                    apply_server_side_encryption_by_default: Some(ServerSideEncryptionByDefault {
                        kms_master_key_id: None,
                        sse_algorithm: ServerSideEncryption::from_static(
                            ServerSideEncryption::AES256,
                        ),
                    }),
                    bucket_key_enabled: None,
                }],
            }),
        }))
    }

    /// A bucket whose versioning was never enabled, as S3 answers it: no status.
    async fn get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> S3Result<S3Response<GetBucketVersioningOutput>> {
        self.0.check_bucket(&req.input.bucket)?;
        Ok(S3Response::new(GetBucketVersioningOutput::default()))
    }
}

fn owner() -> Owner {
    Owner {
        display_name: None,
        id: Some(OWNER_ID.to_owned()),
    }
}

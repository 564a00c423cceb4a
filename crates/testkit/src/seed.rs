//! Filling emulated buckets and containers with known objects, through the same storage
//! protocols the service reads with. GCS needs none of this: fake-gcs-server is seeded from a
//! directory (see `emulators::fake_gcs`).

use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, AwsAuthorizer, AwsCredential};
use object_store::azure::{
    AzureAccessKey, AzureAuthorizer, AzureCredential, MicrosoftAzureBuilder,
};
use object_store::client::HttpRequestBody;
use object_store::path::Path;
use object_store::{
    Attribute, AttributeValue, Attributes, ClientOptions, ObjectStore, ObjectStoreExt, PutOptions,
    PutPayload,
};

/// The keys moto accepts (any would do; moto records them).
pub const MOTO_KEY_ID: &str = "AKIATESTPLATFORM0001";
pub const MOTO_SECRET: &str = "platform-secret-key-for-moto";
/// Azurite's well-known account and key.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The platform's AWS identity and endpoint when moto at `endpoint` stands in for AWS: the
/// variables a service or worker reads (docs/configuration.md, "Cloud access").
pub fn moto_platform_env(endpoint: &str) -> [(&'static str, String); 3] {
    [
        ("AWS_ENDPOINT_URL", endpoint.to_owned()),
        ("AWS_ACCESS_KEY_ID", MOTO_KEY_ID.to_owned()),
        ("AWS_SECRET_ACCESS_KEY", MOTO_SECRET.to_owned()),
    ]
}

/// A cloud client configured by [`moto_platform_env`].
pub fn moto_cloud(endpoint: &str) -> connectors::Cloud {
    let vars = moto_platform_env(endpoint);
    let env = connectors::CloudEnv::from_vars(|name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    })
    .unwrap_or_else(|e| panic!("cloud env: {e}"));
    connectors::Cloud::new(env).unwrap_or_else(|e| panic!("cloud: {e}"))
}

fn client() -> reqwest::Client {
    boot::install_tls_provider();
    reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap_or_else(|e| panic!("client: {e}"))
}

/// Sends `request` after `sign` has authorized it.
async fn send(request: object_store::client::HttpRequest) -> u16 {
    send_text(request).await.0
}

/// Sends `request`; returns the status and the body.
async fn send_text(request: object_store::client::HttpRequest) -> (u16, String) {
    let client = client();
    let (parts, body) = request.into_parts();
    let mut outgoing = client
        .request(parts.method, parts.uri.to_string())
        .body(body.as_bytes().map(|b| b.to_vec()).unwrap_or_default());
    for (name, value) in &parts.headers {
        outgoing = outgoing.header(name, value);
    }
    let response = outgoing
        .send()
        .await
        .unwrap_or_else(|e| panic!("seed request: {e}"));
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

fn request(method: http::Method, url: &str) -> object_store::client::HttpRequest {
    http::Request::builder()
        .method(method)
        .uri(url)
        .body(HttpRequestBody::from(Vec::new()))
        .unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Calls moto's IAM query API (signed with the seed keys); returns the response body.
async fn iam(endpoint: &str, params: &[(&str, &str)]) -> String {
    let credential = moto_credential();
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("Version", "2010-05-08");
    for (k, v) in params {
        form.append_pair(k, v);
    }
    let mut call = http::Request::builder()
        .method(http::Method::POST)
        .uri(format!("{endpoint}/"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(HttpRequestBody::from(form.finish().into_bytes()))
        .unwrap_or_else(|e| panic!("iam request: {e}"));
    AwsAuthorizer::new(&credential, "iam", "us-east-1")
        .try_authorize(&mut call, None)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let (status, body) = send_text(call).await;
    assert_eq!(status, 200, "iam {params:?}: {body}");
    body
}

fn xml_text<'a>(body: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>");
    let start = body
        .find(&open)
        .unwrap_or_else(|| panic!("no {tag} in {body}"))
        + open.len();
    let end = body[start..]
        .find(&format!("</{tag}>"))
        .unwrap_or_else(|| panic!("no end of {tag} in {body}"));
    &body[start..start + end]
}

/// Sets up moto's IAM for a test with real permission checks: a platform user whose access key
/// may only assume roles, and `role` (in moto's account 123456789012) with `policy` as its only
/// permissions. Returns the user's key id and secret. Call [`moto_enforce_auth`] afterwards.
pub async fn moto_iam(endpoint: &str, role: &str, policy: &serde_json::Value) -> (String, String) {
    iam(
        endpoint,
        &[("Action", "CreateUser"), ("UserName", "dps-platform")],
    )
    .await;
    let assume = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}],
    })
    .to_string();
    iam(
        endpoint,
        &[
            ("Action", "PutUserPolicy"),
            ("UserName", "dps-platform"),
            ("PolicyName", "assume-roles"),
            ("PolicyDocument", &assume),
        ],
    )
    .await;
    let key = iam(
        endpoint,
        &[("Action", "CreateAccessKey"), ("UserName", "dps-platform")],
    )
    .await;
    let trust = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::123456789012:user/dps-platform"},
            "Action": "sts:AssumeRole",
        }],
    })
    .to_string();
    iam(
        endpoint,
        &[
            ("Action", "CreateRole"),
            ("RoleName", role),
            ("AssumeRolePolicyDocument", &trust),
        ],
    )
    .await;
    iam(
        endpoint,
        &[
            ("Action", "PutRolePolicy"),
            ("RoleName", role),
            ("PolicyName", "scan"),
            ("PolicyDocument", &policy.to_string()),
        ],
    )
    .await;
    (
        xml_text(&key, "AccessKeyId").to_owned(),
        xml_text(&key, "SecretAccessKey").to_owned(),
    )
}

/// From now on moto checks every request's signature and IAM permissions, as AWS does.
pub async fn moto_enforce_auth(endpoint: &str) {
    let response = client()
        .post(format!("{endpoint}/moto-api/reset-auth"))
        .body("0")
        .send()
        .await
        .unwrap_or_else(|e| panic!("reset-auth: {e}"));
    assert_eq!(response.status().as_u16(), 200, "reset-auth");
}

/// The keys every seed request to moto is signed with.
fn moto_credential() -> AwsCredential {
    AwsCredential {
        key_id: MOTO_KEY_ID.into(),
        secret_key: MOTO_SECRET.into(),
        token: None,
    }
}

/// Creates `bucket` in moto and returns a store that writes to it.
pub async fn s3_bucket(endpoint: &str, bucket: &str) -> Arc<dyn ObjectStore> {
    let credential = moto_credential();
    let mut create = request(http::Method::PUT, &format!("{endpoint}/{bucket}"));
    AwsAuthorizer::new(&credential, "s3", "us-east-1")
        .try_authorize(&mut create, None)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let status = send(create).await;
    assert!(
        status == 200 || status == 409,
        "create bucket {bucket}: {status}"
    );
    let store = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region("us-east-1")
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_access_key_id(MOTO_KEY_ID)
        .with_secret_access_key(MOTO_SECRET)
        .build()
        .unwrap_or_else(|e| panic!("s3 store: {e}"));
    Arc::new(store)
}

/// Turns versioning on for moto's `bucket`, so that every write and delete of an object leaves
/// a version (or a delete marker) that [`s3_versions`] counts.
pub async fn s3_versioning(endpoint: &str, bucket: &str) {
    let credential = moto_credential();
    let body = "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                <Status>Enabled</Status></VersioningConfiguration>";
    let mut call = http::Request::builder()
        .method(http::Method::PUT)
        .uri(format!("{endpoint}/{bucket}?versioning="))
        .body(HttpRequestBody::from(body.as_bytes().to_vec()))
        .unwrap_or_else(|e| panic!("versioning request: {e}"));
    AwsAuthorizer::new(&credential, "s3", "us-east-1")
        .try_authorize(&mut call, None)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let (status, text) = send_text(call).await;
    assert_eq!(status, 200, "versioning of {bucket}: {text}");
}

/// Writes `content` at moto's `bucket/key` encrypted under the KMS key `kms_key` (SSE-KMS), as
/// a customer's upload naming its own key would.
pub async fn s3_put_with_kms(
    endpoint: &str,
    bucket: &str,
    key: &str,
    content: &[u8],
    kms_key: &str,
) {
    let credential = moto_credential();
    let mut call = http::Request::builder()
        .method(http::Method::PUT)
        .uri(format!("{endpoint}/{bucket}/{key}"))
        .header("content-type", "text/csv")
        .header("x-amz-server-side-encryption", "aws:kms")
        .header("x-amz-server-side-encryption-aws-kms-key-id", kms_key)
        .body(HttpRequestBody::from(content.to_vec()))
        .unwrap_or_else(|e| panic!("put request: {e}"));
    AwsAuthorizer::new(&credential, "s3", "us-east-1")
        .try_authorize(&mut call, None)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let (status, text) = send_text(call).await;
    assert_eq!(status, 200, "put {bucket}/{key}: {text}");
}

/// How moto's `bucket/key` is encrypted at rest: its `x-amz-server-side-encryption` and
/// `x-amz-server-side-encryption-aws-kms-key-id`.
pub async fn s3_encryption(
    endpoint: &str,
    bucket: &str,
    key: &str,
) -> (Option<String>, Option<String>) {
    let credential = moto_credential();
    let mut call = request(http::Method::HEAD, &format!("{endpoint}/{bucket}/{key}"));
    AwsAuthorizer::new(&credential, "s3", "us-east-1")
        .try_authorize(&mut call, None)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let (parts, _) = call.into_parts();
    let mut outgoing = client().head(parts.uri.to_string());
    for (name, value) in &parts.headers {
        outgoing = outgoing.header(name, value);
    }
    let response = outgoing
        .send()
        .await
        .unwrap_or_else(|e| panic!("head {bucket}/{key}: {e}"));
    assert_eq!(response.status().as_u16(), 200, "head {bucket}/{key}");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    (
        header("x-amz-server-side-encryption"),
        header("x-amz-server-side-encryption-aws-kms-key-id"),
    )
}

/// How many versions and how many delete markers moto's versioned `bucket` holds for exactly
/// `key`: how many times it was written and deleted.
pub async fn s3_versions(endpoint: &str, bucket: &str, key: &str) -> (usize, usize) {
    let credential = moto_credential();
    let prefix: String = url::form_urlencoded::byte_serialize(key.as_bytes()).collect();
    let mut call = request(
        http::Method::GET,
        &format!("{endpoint}/{bucket}?prefix={prefix}&versions="),
    );
    AwsAuthorizer::new(&credential, "s3", "us-east-1")
        .try_authorize(&mut call, None)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let (status, text) = send_text(call).await;
    assert_eq!(status, 200, "versions of {bucket}/{key}: {text}");
    let count = |tag: &str| {
        text.split(&format!("<{tag}>"))
            .skip(1)
            .filter(|entry| entry.contains(&format!("<Key>{key}</Key>")))
            .count()
    };
    (count("Version"), count("DeleteMarker"))
}

/// Creates `container` in Azurite (served at `url`, HTTPS with `ca_pem`'s certificate) with the
/// well-known account key, and returns a store that writes to it.
pub async fn azure_container(url: &str, ca_pem: &[u8], container: &str) -> Arc<dyn ObjectStore> {
    let key = AzureAccessKey::try_new(AZURITE_KEY).unwrap_or_else(|e| panic!("key: {e}"));
    let credential = AzureCredential::AccessKey(key);
    let mut create = request(
        http::Method::PUT,
        &format!("{url}/{AZURITE_ACCOUNT}/{container}?restype=container"),
    );
    create
        .headers_mut()
        .insert("content-length", http::HeaderValue::from_static("0"));
    AzureAuthorizer::new(&credential, AZURITE_ACCOUNT)
        .try_authorize(&mut create)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let status = send(create).await;
    assert!(
        status == 201 || status == 409,
        "create container {container}: {status}"
    );
    let certificate =
        object_store::Certificate::from_pem(ca_pem).unwrap_or_else(|e| panic!("ca: {e}"));
    let store = MicrosoftAzureBuilder::new()
        .with_account(AZURITE_ACCOUNT)
        .with_access_key(AZURITE_KEY)
        .with_container_name(container)
        .with_endpoint(format!("{url}/{AZURITE_ACCOUNT}"))
        .with_client_options(ClientOptions::new().with_root_certificate(certificate))
        .build()
        .unwrap_or_else(|e| panic!("azure store: {e}"));
    Arc::new(store)
}

/// Writes `content` at `key` of Azurite's `container` as an append blob (Put Blob with
/// `x-ms-blob-type: AppendBlob`, then Append Block), as a logging pipeline would.
pub async fn azure_append_blob(url: &str, container: &str, key: &str, content: &[u8]) {
    let key_ = AzureAccessKey::try_new(AZURITE_KEY).unwrap_or_else(|e| panic!("key: {e}"));
    let credential = AzureCredential::AccessKey(key_);
    let blob = format!("{url}/{AZURITE_ACCOUNT}/{container}/{key}");
    let mut create = request(http::Method::PUT, &blob);
    for (name, value) in [("content-length", "0"), ("x-ms-blob-type", "AppendBlob")] {
        create
            .headers_mut()
            .insert(name, http::HeaderValue::from_static(value));
    }
    AzureAuthorizer::new(&credential, AZURITE_ACCOUNT)
        .try_authorize(&mut create)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let (status, text) = send_text(create).await;
    assert_eq!(status, 201, "create append blob {key}: {text}");
    let mut append = http::Request::builder()
        .method(http::Method::PUT)
        .uri(format!("{blob}?comp=appendblock"))
        .header("content-length", content.len().to_string())
        .body(HttpRequestBody::from(content.to_vec()))
        .unwrap_or_else(|e| panic!("append request: {e}"));
    AzureAuthorizer::new(&credential, AZURITE_ACCOUNT)
        .try_authorize(&mut append)
        .unwrap_or_else(|e| panic!("sign: {e}"));
    let (status, text) = send_text(append).await;
    assert_eq!(status, 201, "append block to {key}: {text}");
}

/// Writes `content` at `key` with `attributes` (served headers, user metadata), as a customer's
/// own tools would.
pub async fn put_with(store: &dyn ObjectStore, key: &str, content: &[u8], attributes: Attributes) {
    let options = PutOptions {
        attributes,
        ..Default::default()
    };
    store
        .put_opts(
            &Path::from(key),
            PutPayload::from(content.to_vec()),
            options,
        )
        .await
        .unwrap_or_else(|e| panic!("put {key}: {e}"));
}

/// The attributes (served headers, user metadata) an object is read with.
pub async fn attributes_of(store: &dyn ObjectStore, key: &str) -> Attributes {
    store
        .get(&Path::from(key))
        .await
        .unwrap_or_else(|e| panic!("get {key}: {e}"))
        .attributes
}

/// Writes each `(key, content)` to `store` as [`put_all`] does, `at_once` of them at a time:
/// how the benchmarks fill a bucket with thousands of objects.
pub async fn put_concurrently(
    store: &Arc<dyn ObjectStore>,
    objects: Vec<(String, Vec<u8>)>,
    at_once: usize,
) {
    let queue = Arc::new(std::sync::Mutex::new(objects));
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..at_once.max(1) {
        let (store, queue) = (store.clone(), queue.clone());
        writers.spawn(async move {
            loop {
                let next = queue
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .pop();
                let Some((key, body)) = next else { return };
                put_all(store.as_ref(), &[(key.as_str(), body.as_slice())]).await;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap_or_else(|e| panic!("seeding the bucket: {e}"));
    }
}

/// Writes each `(key, content)` to `store`, with a content type (moto stores an empty object
/// for a PUT without one).
pub async fn put_all(store: &dyn ObjectStore, objects: &[(&str, &[u8])]) {
    for (key, content) in objects {
        let attributes = Attributes::from_iter([(
            Attribute::ContentType,
            AttributeValue::from("application/octet-stream"),
        )]);
        let options = PutOptions {
            attributes,
            ..Default::default()
        };
        store
            .put_opts(
                &Path::from(*key),
                PutPayload::from(content.to_vec()),
                options,
            )
            .await
            .unwrap_or_else(|e| panic!("put {key}: {e}"));
    }
}

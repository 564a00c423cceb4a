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
    Attribute, AttributeValue, Attributes, ClientOptions, ObjectStore, PutOptions, PutPayload,
};

/// The keys moto accepts (any would do; moto records them).
pub const MOTO_KEY_ID: &str = "AKIATESTPLATFORM0001";
pub const MOTO_SECRET: &str = "platform-secret-key-for-moto";
/// Azurite's well-known account and key.
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn client() -> reqwest::Client {
    auth::install_tls_provider();
    reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap_or_else(|e| panic!("client: {e}"))
}

/// Sends `request` after `sign` has authorized it.
async fn send(request: object_store::client::HttpRequest) -> u16 {
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
    response.status().as_u16()
}

fn request(method: http::Method, url: &str) -> object_store::client::HttpRequest {
    http::Request::builder()
        .method(method)
        .uri(url)
        .body(HttpRequestBody::from(Vec::new()))
        .unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Creates `bucket` in moto and returns a store that writes to it.
pub async fn s3_bucket(endpoint: &str, bucket: &str) -> Arc<dyn ObjectStore> {
    let credential = AwsCredential {
        key_id: MOTO_KEY_ID.into(),
        secret_key: MOTO_SECRET.into(),
        token: None,
    };
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

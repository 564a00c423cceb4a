//! Each bucket's posture (who may read it, encryption at rest, versioning) as the storage
//! emulators report it: moto for S3 (with its IAM enforced where a read must be refused),
//! Azurite over HTTPS with an Entra token for Blob, fake-gcs-server behind Google's federation
//! for GCS. Each setting is changed through the provider's own API, then read back.

use std::collections::HashMap;

use connectors::{Cloud, CloudEnv, Failure, Posture, Provider, Storage};
use object_store::azure::{AzureAccessKey, AzureAuthorizer, AzureCredential};
use object_store::client::HttpRequestBody;
use serde_json::{Value, json};
use testkit::{emulators, identity, seed};

pub(crate) const ROLE: &str = "arn:aws:iam::123456789012:role/dps-scanner";

pub(crate) fn cloud(vars: &[(&str, String)]) -> Cloud {
    let vars: HashMap<&str, String> = vars.iter().cloned().collect();
    let env = CloudEnv::from_vars(|name| vars.get(name).cloned()).unwrap();
    Cloud::new(env).unwrap()
}

pub(crate) fn open(cloud: &Cloud, provider: Provider, config: Value) -> Storage {
    let config = connectors::validate(provider, &config).unwrap();
    cloud
        .open(&"acme".parse().unwrap(), ids::ConnectorId::new(), &config)
        .unwrap()
}

fn posture(public: Option<bool>, reasons: &[&str], encryption: &str, versioning: &str) -> Posture {
    Posture {
        public,
        public_reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
        encryption: Some(encryption.to_owned()),
        versioning: Some(versioning.to_owned()),
    }
}

pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dps-{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Changes one configuration of a moto bucket (`PUT`/`DELETE /{bucket}?{sub}`), as an owner
/// would; moto checks no signature until its IAM is enforced.
async fn s3(
    method: reqwest::Method,
    endpoint: &str,
    bucket: &str,
    sub: &str,
    headers: &[(&str, &str)],
    body: &str,
) {
    let mut request = reqwest::Client::new()
        .request(method.clone(), format!("{endpoint}/{bucket}?{sub}"))
        .header("content-type", "application/xml")
        // moto wants a length even for an empty body, which reqwest leaves out.
        .header("content-length", body.len())
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{method} ?{sub}: {status} {text}");
}

fn public_access_block(ignore_acls: bool, restrict_buckets: bool) -> String {
    format!(
        "<PublicAccessBlockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <BlockPublicAcls>false</BlockPublicAcls><IgnorePublicAcls>{ignore_acls}</IgnorePublicAcls>\
         <BlockPublicPolicy>false</BlockPublicPolicy>\
         <RestrictPublicBuckets>{restrict_buckets}</RestrictPublicBuckets>\
         </PublicAccessBlockConfiguration>"
    )
}

fn versioning(status: &str) -> String {
    format!(
        "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Status>{status}</Status></VersioningConfiguration>"
    )
}

fn encryption(algorithm: &str) -> String {
    format!(
        "<ServerSideEncryptionConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>{algorithm}</SSEAlgorithm>\
         </ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>"
    )
}

fn aws_config(bucket: &str) -> Value {
    json!({
        "role_arn": ROLE,
        "external_id": "tenant-acme-7731",
        "region": "us-east-1",
        "buckets": [bucket],
    })
}

#[tokio::test]
async fn s3_posture_follows_acls_policies_the_public_access_block_versioning_and_encryption() {
    use reqwest::Method;
    let moto = emulators::moto(&[]);
    let url = moto.url();
    let bucket = "posture-hr";
    seed::s3_bucket(&url, bucket).await;
    let storage = open(&seed::moto_cloud(&url), Provider::Aws, aws_config(bucket));

    // moto 5.2 gives a new bucket no default encryption (AWS has applied SSE-S3 since 2023),
    // so GetBucketEncryption answers ServerSideEncryptionConfigurationNotFoundError.
    let fresh = storage.posture(bucket).await.unwrap();
    assert_eq!(fresh, posture(Some(false), &[], "none", "disabled"));

    let put =
        |sub: &'static str, headers: &'static [(&'static str, &'static str)], body: String| {
            let url = url.clone();
            async move { s3(Method::PUT, &url, bucket, sub, headers, &body).await }
        };
    put("acl", &[("x-amz-acl", "public-read")], String::new()).await;
    let shared = storage.posture(bucket).await.unwrap();
    assert_eq!(
        shared,
        posture(Some(true), &["acl_all_users"], "none", "disabled")
    );

    // IgnorePublicAcls neutralises the grant, which stays in the ACL.
    put("publicAccessBlock", &[], public_access_block(true, false)).await;
    let ignored = storage.posture(bucket).await.unwrap();
    assert_eq!(ignored.public, Some(false), "{ignored:?}");
    assert!(ignored.public_reasons.is_empty());

    // A policy for Principal "*" is public (GetBucketPolicyStatus), unless RestrictPublicBuckets.
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": "*",
            "Action": "s3:GetObject",
            "Resource": format!("arn:aws:s3:::{bucket}/*"),
        }],
    });
    s3(
        Method::PUT,
        &url,
        bucket,
        "policy",
        &[("content-type", "application/json")],
        &policy.to_string(),
    )
    .await;
    let by_policy = storage.posture(bucket).await.unwrap();
    assert_eq!(by_policy.public, Some(true));
    assert_eq!(by_policy.public_reasons, ["policy_is_public"]);
    put("publicAccessBlock", &[], public_access_block(true, true)).await;
    assert_eq!(storage.posture(bucket).await.unwrap().public, Some(false));
    // Without the block, both sources count.
    s3(Method::DELETE, &url, bucket, "publicAccessBlock", &[], "").await;
    let exposed = storage.posture(bucket).await.unwrap();
    assert_eq!(exposed.public, Some(true));
    assert_eq!(
        exposed.public_reasons,
        ["policy_is_public", "acl_all_users"]
    );

    put("versioning", &[], versioning("Enabled")).await;
    assert_eq!(
        storage.posture(bucket).await.unwrap().versioning.as_deref(),
        Some("enabled")
    );
    put("versioning", &[], versioning("Suspended")).await;
    assert_eq!(
        storage.posture(bucket).await.unwrap().versioning.as_deref(),
        Some("suspended")
    );

    put("encryption", &[], encryption("AES256")).await;
    assert_eq!(
        storage.posture(bucket).await.unwrap().encryption.as_deref(),
        Some("AES256")
    );
    put("encryption", &[], encryption("aws:kms")).await;
    assert_eq!(
        storage.posture(bucket).await.unwrap().encryption.as_deref(),
        Some("aws:kms")
    );
    s3(Method::DELETE, &url, bucket, "encryption", &[], "").await;
    assert_eq!(
        storage.posture(bucket).await.unwrap().encryption.as_deref(),
        Some("none")
    );

    // A bucket that does not exist fails the posture, as it fails a listing.
    let missing = storage.posture("no-such-bucket").await.unwrap_err();
    assert_eq!(missing.failure, Failure::NotFound, "{missing:?}");
    assert!(missing.message.contains("NoSuchBucket"), "{missing:?}");
}

#[tokio::test]
async fn s3_reads_the_role_may_not_make_leave_their_fields_unknown() {
    let moto = emulators::moto(&[]);
    let url = moto.url();
    let bucket = "posture-restricted";
    seed::s3_bucket(&url, bucket).await;
    // The role may read the ACL and the versioning only: the policy status, the public access
    // block and the encryption are refused with AccessDenied once moto enforces IAM. (moto
    // authorizes the last two as s3:ListBucket, so the role must not have that either.)
    let (key_id, secret) = seed::moto_iam(
        &url,
        "dps-scanner",
        &json!({
            "Version": "2012-10-17",
            "Statement": [{
                "Effect": "Allow",
                "Action": ["s3:GetBucketAcl", "s3:GetBucketVersioning"],
                "Resource": format!("arn:aws:s3:::{bucket}"),
            }],
        }),
    )
    .await;
    seed::moto_enforce_auth(&url).await;
    let cloud = cloud(&[
        ("AWS_ENDPOINT_URL", url.clone()),
        ("AWS_ACCESS_KEY_ID", key_id),
        ("AWS_SECRET_ACCESS_KEY", secret),
    ]);
    let storage = open(&cloud, Provider::Aws, aws_config(bucket));
    let known = storage.posture(bucket).await.unwrap();
    assert_eq!(
        known,
        Posture {
            // The ACL is private but the policy could not be read: public is not known.
            public: None,
            public_reasons: Vec::new(),
            encryption: None,
            versioning: Some("disabled".into()),
        }
    );
}

pub(crate) const ENTRA_TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
pub(crate) const ENTRA_CLIENT: &str = "0b3f2c1e-1111-2222-3333-444455556666";
pub(crate) const ENTRA_SECRET: &str = "entra-client-secret-9d2b";

/// Sets a container's public access level with the account key, as its owner would (`None`
/// makes it private).
async fn set_container_access(blob_url: &str, ca_pem: &[u8], container: &str, level: Option<&str>) {
    let url = format!(
        "{blob_url}/{}/{container}?restype=container&comp=acl",
        seed::AZURITE_ACCOUNT
    );
    let mut request = http::Request::builder()
        .method(http::Method::PUT)
        .uri(&url)
        .header("content-length", "0");
    if let Some(level) = level {
        request = request.header("x-ms-blob-public-access", level);
    }
    let mut request = request.body(HttpRequestBody::from(Vec::new())).unwrap();
    let key = AzureCredential::AccessKey(AzureAccessKey::try_new(seed::AZURITE_KEY).unwrap());
    AzureAuthorizer::new(&key, seed::AZURITE_ACCOUNT)
        .try_authorize(&mut request)
        .unwrap();
    boot::install_tls_provider();
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem).unwrap())
        .build()
        .unwrap();
    let mut outgoing = client.put(&url);
    for (name, value) in request.headers() {
        outgoing = outgoing.header(name, value);
    }
    let response = outgoing.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "set ACL {level:?}: {status} {text}");
}

#[tokio::test]
async fn azure_posture_follows_the_container_public_access_level() {
    let certs = scratch("azurite-posture");
    let (cert, key) = identity::self_signed_certificate(&certs);
    let azurite = emulators::azurite(Some((&cert, &key)));
    let blob_url = format!("https://127.0.0.1:{}", azurite.port);
    let entra = identity::entra(ENTRA_TENANT, ENTRA_CLIENT, ENTRA_SECRET);
    let ca = std::fs::read(&cert).unwrap();
    seed::azure_container(&blob_url, &ca, "exports").await;
    let cloud = cloud(&[
        ("AZURE_AUTHORITY_HOST", entra.url()),
        ("AZURITE_BLOB_STORAGE_URL", blob_url.clone()),
        ("DPS_CLOUD_CA_FILE", cert.to_str().unwrap().to_owned()),
    ]);
    let storage = open(
        &cloud,
        Provider::Azure,
        json!({
            "tenant_id": ENTRA_TENANT,
            "client_id": ENTRA_CLIENT,
            "client_secret": ENTRA_SECRET,
            "storage_account": seed::AZURITE_ACCOUNT,
            "buckets": ["exports"],
        }),
    );
    // Versioning is an account setting of the management plane: never known here.
    let private = Posture {
        public: Some(false),
        public_reasons: Vec::new(),
        encryption: Some("microsoft-managed".into()),
        versioning: None,
    };
    assert_eq!(storage.posture("exports").await.unwrap(), private);

    set_container_access(&blob_url, &ca, "exports", Some("blob")).await;
    let blobs = storage.posture("exports").await.unwrap();
    assert_eq!(blobs.public, Some(true));
    assert_eq!(blobs.public_reasons, ["container_access_blob"]);
    set_container_access(&blob_url, &ca, "exports", Some("container")).await;
    let listed = storage.posture("exports").await.unwrap();
    assert_eq!(listed.public_reasons, ["container_access_container"]);
    set_container_access(&blob_url, &ca, "exports", None).await;
    assert_eq!(storage.posture("exports").await.unwrap(), private);

    let missing = storage.posture("no-such-container").await.unwrap_err();
    assert_eq!(missing.failure, Failure::NotFound, "{missing:?}");
    let _ = std::fs::remove_dir_all(certs);
}

pub(crate) const WIF: &str =
    "projects/123456789012/locations/global/workloadIdentityPools/dps-pool/providers/platform";
pub(crate) const SUBJECT_TOKEN: &str = "platform-oidc-subject-token";

#[tokio::test]
async fn gcs_posture_reads_versioning_and_encryption_and_leaves_iam_unknown_on_fake_gcs() {
    let seed_dir = scratch("gcs-posture-seed");
    std::fs::create_dir_all(seed_dir.join("hr-exports")).unwrap();
    std::fs::write(seed_dir.join("hr-exports/readme.txt"), "hello").unwrap();
    let gcs = emulators::fake_gcs(&seed_dir);
    let google = identity::google(SUBJECT_TOKEN, WIF);
    let creds = scratch("gcp-posture-creds");
    std::fs::write(creds.join("token"), SUBJECT_TOKEN).unwrap();
    let external_account = json!({
        "type": "external_account",
        "audience": format!("//iam.googleapis.com/{WIF}"),
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("{}/v1/token", google.url()),
        "service_account_impersonation_url": format!(
            "{}/v1/projects/-/serviceAccounts/unused@x.iam.gserviceaccount.com:generateAccessToken",
            google.url()
        ),
        "credential_source": {"file": creds.join("token"), "format": {"type": "text"}},
    });
    std::fs::write(creds.join("platform.json"), external_account.to_string()).unwrap();
    let cloud = cloud(&[
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            creds.join("platform.json").to_str().unwrap().to_owned(),
        ),
        // One identity for every connector: this crate's tests serve one tenant.
        ("DPS_GCP_SINGLE_IDENTITY", "true".to_owned()),
        ("STORAGE_EMULATOR_HOST", format!("127.0.0.1:{}", gcs.port)),
    ]);
    let storage = open(
        &cloud,
        Provider::Gcp,
        json!({
            "project_id": "acme-data-prod",
            "service_account_email": "dps-reader@acme-data-prod.iam.gserviceaccount.com",
            "wif_provider": WIF,
            "buckets": ["hr-exports"],
        }),
    );
    // fake-gcs-server has no getIamPolicy (`/iam` answers a plain 404), so who may read the
    // bucket is not known; it keeps no encryption settings, so the default key is Google's.
    assert_eq!(
        storage.posture("hr-exports").await.unwrap(),
        posture(None, &[], "google-managed", "disabled")
    );

    let response = reqwest::Client::new()
        .patch(format!("{}/storage/v1/b/hr-exports", gcs.url()))
        .json(&json!({"versioning": {"enabled": true}}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{response:?}");
    assert_eq!(
        storage.posture("hr-exports").await.unwrap(),
        posture(None, &[], "google-managed", "enabled")
    );

    let missing = storage.posture("no-such-bucket").await.unwrap_err();
    assert_eq!(missing.failure, Failure::NotFound, "{missing:?}");
    let _ = std::fs::remove_dir_all(seed_dir);
    let _ = std::fs::remove_dir_all(creds);
}

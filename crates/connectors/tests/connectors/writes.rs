//! Writes conditional on ETags, against the emulators: moto for S3, Azurite over HTTPS with an
//! Entra token for Blob, fake-gcs-server behind Google's federation for GCS. One scenario runs
//! on each: read whole, replace, refuse stale ETags, create only if absent, copy, delete. The
//! object is changed behind the connector's back through another client (the seed stores, or
//! fake-gcs-server's own upload), as a concurrent writer would.
//!
//! What an emulator cannot check (moto ignores `x-amz-copy-source-if-match`; fake-gcs-server
//! ignores `ifGenerationMatch` on delete and `ifSourceGenerationMatch` on rewrite) is pinned
//! request by request in `pinned`.

use std::sync::Arc;

use bytes::Bytes;
use connectors::cloud::{Bucket, Properties};
use connectors::{Cloud, Failure, Provider, Storage};
use object_store::ObjectStore;
use serde_json::{Value, json};
use testkit::{emulators, identity, seed};

use super::posture::{
    ENTRA_CLIENT, ENTRA_SECRET, ENTRA_TENANT, ROLE, SUBJECT_TOKEN, WIF, cloud, open, scratch,
};

const MAIN: &str = "hr-exports";
const OTHER: &str = "quarantine";
const KEY: &str = "docs/employees.csv";
/// Content with a NUL, invalid UTF-8 and CRLF: written and read back byte for byte.
const FIRST: &[u8] = b"name,ssn\r\nAnn,123-45-6789\r\n\x00\xff\xfe end";
const MAX: u64 = 1 << 20;

/// Changes objects behind the connector's back.
enum Outside {
    Store(Arc<dyn ObjectStore>),
    /// fake-gcs-server's own upload, at this base URL, into the main bucket.
    FakeGcs(String),
}

impl Outside {
    async fn put(&self, key: &str, content: &[u8]) {
        match self {
            Outside::Store(store) => seed::put_all(store.as_ref(), &[(key, content)]).await,
            Outside::FakeGcs(base) => {
                let response = reqwest::Client::new()
                    .post(format!("{base}/upload/storage/v1/b/{MAIN}/o"))
                    .query(&[("uploadType", "media"), ("name", key)])
                    .header("content-type", "application/octet-stream")
                    .body(content.to_vec())
                    .send()
                    .await
                    .unwrap();
                assert!(response.status().is_success(), "{response:?}");
            }
        }
    }
}

/// An object's served headers and metadata, as a customer might have set them.
fn served() -> Properties {
    Properties {
        content_type: Some("text/csv; charset=utf-8".into()),
        content_encoding: None,
        content_disposition: Some("attachment; filename=\"employees.csv\"".into()),
        content_language: Some("en-CA".into()),
        cache_control: Some("no-store".into()),
        metadata: [("owner", "hr-team"), ("retention_class", "7y")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        ..Properties::default()
    }
}

fn changed<T: std::fmt::Debug>(result: Result<T, connectors::AccessError>) {
    match result {
        Err(e) => assert_eq!(e.failure, Failure::Changed, "{e:?}"),
        Ok(v) => panic!("expected object_changed, got {v:?}"),
    }
}

async fn content(bucket: &Bucket, key: &str) -> Bytes {
    bucket.read_whole(key, None, MAX).await.unwrap().bytes
}

/// The ETag a fresh listing of `key`'s folder shows for it. (Azurite lists nothing when the
/// prefix is a whole blob name, so the prefix is the folder.)
async fn listed_etag(bucket: &Bucket, key: &str) -> String {
    let folder = key.rsplit_once('/').map(|(folder, _)| format!("{folder}/"));
    let page = bucket
        .list_page(folder.as_deref(), None, 100)
        .await
        .unwrap();
    let object = page
        .objects
        .iter()
        .find(|o| o.key == key)
        .unwrap_or_else(|| panic!("{key} is not in {page:?}"));
    object.etag.clone().unwrap()
}

/// The scenario every provider must pass. `atomic_copy` is false where the emulator ignores
/// the copy's source condition (moto), which `pinned` proves instead.
async fn conditional_writes(storage: &Storage, outside: &Outside, atomic_copy: bool) {
    outside.put(KEY, FIRST).await;
    let main = storage.bucket(MAIN).unwrap();
    let other = storage.bucket(OTHER).unwrap();
    // A prefix that is the whole name lists the object itself, first (object_store's Azure
    // listing leaves it out; it is looked up), as the folder's listing shows it.
    let exact = main.list_page(Some(KEY), None, 100).await.unwrap();
    assert_eq!(
        exact.objects.first().map(|o| o.key.as_str()),
        Some(KEY),
        "{exact:?}"
    );
    assert_eq!(
        exact.objects[0].etag.clone().unwrap(),
        listed_etag(&main, KEY).await
    );

    // Read whole: the exact bytes, and the listing's ETag, as text.
    let listed = listed_etag(&main, KEY).await;
    let whole = main.read_whole(KEY, Some(&listed), MAX).await.unwrap();
    assert_eq!(whole.bytes.as_ref(), FIRST);
    assert_eq!(whole.etag, listed);
    assert_eq!(main.read_whole(KEY, None, MAX).await.unwrap().etag, listed);
    let head = main.head(KEY).await.unwrap().unwrap();
    assert_eq!(
        (head.key.as_str(), head.size, head.etag.as_deref()),
        (KEY, FIRST.len() as u64, Some(listed.as_str()))
    );
    assert_eq!(main.head("docs/none.csv").await.unwrap(), None);
    let big = main.read_whole(KEY, None, 8).await.unwrap_err();
    assert_eq!(big.failure, Failure::TooLarge, "{big:?}");
    assert!(big.message.contains("more than the 8"), "{big:?}");

    // Replace with the current ETag: exactly the new bytes, and the ETag listing and head show.
    let masked = Bytes::from_static(b"name,ssn\r\nAnn,***-**-6789\r\n\x00\xff\xfe end");
    let replaced = main
        .put_if_match(KEY, masked.clone(), &listed, &Properties::default())
        .await
        .unwrap();
    assert_ne!(replaced, listed);
    assert_eq!(listed_etag(&main, KEY).await, replaced);
    assert_eq!(
        main.head(KEY).await.unwrap().unwrap().etag.as_deref(),
        Some(replaced.as_str())
    );
    assert_eq!(content(&main, KEY).await, masked);

    // A stale ETag changes nothing, wherever it is used.
    changed(
        main.put_if_match(
            KEY,
            Bytes::from_static(b"lost"),
            &listed,
            &Properties::default(),
        )
        .await,
    );
    changed(main.read_whole(KEY, Some(&listed), MAX).await);
    assert_eq!(content(&main, KEY).await, masked);
    // A concurrent writer's change is never overwritten.
    outside.put(KEY, b"theirs").await;
    changed(
        main.put_if_match(
            KEY,
            Bytes::from_static(b"lost"),
            &replaced,
            &Properties::default(),
        )
        .await,
    );
    assert_eq!(content(&main, KEY).await.as_ref(), b"theirs");
    // Nor is a missing object created by a replace.
    changed(
        main.put_if_match(
            "docs/none.csv",
            Bytes::from_static(b"x"),
            &replaced,
            &Properties::default(),
        )
        .await,
    );
    assert_eq!(main.head("docs/none.csv").await.unwrap(), None);

    // Create only if absent.
    changed(
        main.put_if_absent(KEY, Bytes::from_static(b"lost"), &Properties::default())
            .await,
    );
    assert_eq!(content(&main, KEY).await.as_ref(), b"theirs");
    let snapshot_key = ".dps-lkg/run-1/docs/employees.csv";
    let created = main
        .put_if_absent(
            snapshot_key,
            Bytes::from_static(FIRST),
            &Properties::default(),
        )
        .await
        .unwrap();
    assert_eq!(listed_etag(&main, snapshot_key).await, created);
    assert_eq!(content(&main, snapshot_key).await.as_ref(), FIRST);
    changed(
        main.put_if_absent(
            snapshot_key,
            Bytes::from_static(b"again"),
            &Properties::default(),
        )
        .await,
    );

    // An unconditional put overwrites, and says the ETag it made.
    let overwritten = main.put(KEY, masked.clone(), &served()).await.unwrap();
    assert_eq!(listed_etag(&main, KEY).await, overwritten);
    assert_eq!(content(&main, KEY).await, masked);
    // The headers and metadata written are the ones read back, so a rewrite keeps them.
    let read = main.read_whole(KEY, None, 1 << 20).await.unwrap();
    assert_eq!(read.properties, served());

    // Copy, byte for byte, to another bucket and under a prefix of the same one.
    let quarantined = storage
        .copy_if_match(MAIN, KEY, &overwritten, OTHER, "x/docs/employees.csv", None)
        .await
        .unwrap();
    assert_eq!(content(&other, "x/docs/employees.csv").await, masked);
    let copied = other
        .read_whole("x/docs/employees.csv", None, 1 << 20)
        .await
        .unwrap();
    assert_eq!(copied.properties, served(), "a copy keeps them");
    assert_eq!(
        listed_etag(&other, "x/docs/employees.csv").await,
        quarantined
    );
    let kept = storage
        .copy_if_match(
            MAIN,
            KEY,
            &overwritten,
            MAIN,
            ".dps-lkg/x/employees.csv",
            None,
        )
        .await
        .unwrap();
    assert_eq!(content(&main, ".dps-lkg/x/employees.csv").await, masked);
    assert_eq!(listed_etag(&main, ".dps-lkg/x/employees.csv").await, kept);
    // A gone source is refused, whatever the emulator checks.
    changed(
        storage
            .copy_if_match(
                MAIN,
                "docs/none.csv",
                &overwritten,
                OTHER,
                "x/none.csv",
                None,
            )
            .await,
    );
    assert_eq!(other.head("x/none.csv").await.unwrap(), None);
    if atomic_copy {
        changed(
            storage
                .copy_if_match(MAIN, KEY, &listed, OTHER, "x/stale.csv", None)
                .await,
        );
        assert_eq!(other.head("x/stale.csv").await.unwrap(), None);
    }

    // Delete only with the current ETag; a gone object is a changed one.
    changed(main.delete_if_match(KEY, &listed).await);
    assert_eq!(content(&main, KEY).await, masked);
    main.delete_if_match(KEY, &overwritten).await.unwrap();
    assert_eq!(main.head(KEY).await.unwrap(), None);
    changed(main.delete_if_match(KEY, &overwritten).await);

    // An unconditional delete is idempotent.
    main.delete(snapshot_key).await.unwrap();
    assert_eq!(main.head(snapshot_key).await.unwrap(), None);
    main.delete(snapshot_key).await.unwrap();
    main.delete("docs/never-was.csv").await.unwrap();
    // The copies are untouched by it all.
    assert_eq!(content(&other, "x/docs/employees.csv").await, masked);
}

#[tokio::test]
async fn s3_writes_are_conditional_on_the_etag_read() {
    let moto = emulators::moto(&[]);
    let url = moto.url();
    let store = seed::s3_bucket(&url, MAIN).await;
    seed::s3_bucket(&url, OTHER).await;
    let storage = open(
        &seed::moto_cloud(&url),
        Provider::Aws,
        json!({
            "role_arn": ROLE,
            "external_id": "tenant-acme-7731",
            "region": "us-east-1",
            "buckets": [MAIN, OTHER],
        }),
    );
    // moto 5.2.5 copies whatever x-amz-copy-source-if-match says (pinned::s3_copy_...).
    conditional_writes(&storage, &Outside::Store(store), false).await;
    // A copy of an object under the customer's KMS key stays under it: without naming it,
    // CopyObject encrypts the copy as the destination's default does (moto: AES256).
    let kms = "arn:aws:kms:us-east-1:123456789012:key/hr-exports";
    seed::s3_put_with_kms(&url, MAIN, "kms.csv", FIRST, kms).await;
    // The read says how the object is encrypted, and a copy made with it asks no more; a copy
    // made without asks the object first (HeadObject).
    let whole = storage
        .bucket(MAIN)
        .unwrap()
        .read_whole("kms.csv", None, MAX)
        .await
        .unwrap();
    for (to, encryption) in [
        ("x/kms.csv", Some(&whole.properties.encryption)),
        ("x/kms-asked.csv", None),
    ] {
        storage
            .copy_if_match(MAIN, "kms.csv", &whole.etag, OTHER, to, encryption)
            .await
            .unwrap();
        assert_eq!(
            seed::s3_encryption(&url, OTHER, to).await,
            (Some("aws:kms".to_owned()), Some(kms.to_owned())),
            "{to}"
        );
    }
    assert!(format!("{:?}", whole.properties.encryption).contains("aws:kms"));
    // A rewrite with the properties read keeps the key too (without them, the bucket's
    // default: none in moto).
    let main = storage.bucket(MAIN).unwrap();
    let rewritten = Bytes::from_static(b"name,ssn\r\nAnn,***-**-6789\r\n");
    main.put_if_match("kms.csv", rewritten.clone(), &whole.etag, &whole.properties)
        .await
        .unwrap();
    assert_eq!(content(&main, "kms.csv").await, rewritten);
    assert_eq!(
        seed::s3_encryption(&url, MAIN, "kms.csv").await,
        (Some("aws:kms".to_owned()), Some(kms.to_owned()))
    );
    main.put("plain.csv", rewritten, &Properties::default())
        .await
        .unwrap();
    assert_eq!(seed::s3_encryption(&url, MAIN, "plain.csv").await.1, None);
}

#[tokio::test]
async fn azure_writes_are_conditional_on_the_etag_read() {
    let certs = scratch("azurite-writes");
    let (cert, key) = identity::self_signed_certificate(&certs);
    let azurite = emulators::azurite(Some((&cert, &key)));
    let blob_url = format!("https://127.0.0.1:{}", azurite.port);
    let entra = identity::entra(ENTRA_TENANT, ENTRA_CLIENT, ENTRA_SECRET);
    let ca = std::fs::read(&cert).unwrap();
    let store = seed::azure_container(&blob_url, &ca, MAIN).await;
    seed::azure_container(&blob_url, &ca, OTHER).await;
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
            "buckets": [MAIN, OTHER],
        }),
    );
    conditional_writes(&storage, &Outside::Store(store), true).await;
    // Azure's listing gives ETags bare, and so does every write here.
    let etag = storage
        .bucket(MAIN)
        .unwrap()
        .put("bare.txt", Bytes::from_static(b"x"), &Properties::default())
        .await
        .unwrap();
    assert!(etag.starts_with("0x") && !etag.contains('"'), "{etag}");
    let _ = std::fs::remove_dir_all(certs);
}

/// A cloud whose GCS is at `storage_host` and whose platform identity is federated through
/// `google`; the directory holding its credentials file is returned to be removed.
pub(crate) fn gcs_cloud(
    storage_host: &str,
    google: &identity::FakeIdentity,
) -> (Cloud, std::path::PathBuf) {
    let creds = scratch("gcp-writes-creds");
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
        ("STORAGE_EMULATOR_HOST", storage_host.to_owned()),
    ]);
    (cloud, creds)
}

pub(crate) fn gcs_config() -> Value {
    json!({
        "project_id": "acme-data-prod",
        "service_account_email": "dps-writer@acme-data-prod.iam.gserviceaccount.com",
        "wif_provider": WIF,
        "buckets": [MAIN, OTHER],
    })
}

/// The scopes of the service account tokens `google` issued, in order.
pub(crate) fn impersonated_scopes(google: &identity::FakeIdentity) -> Vec<String> {
    google
        .requests()
        .iter()
        .filter(|r| r.path.ends_with(":generateAccessToken"))
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap();
            body["scope"][0].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn gcs_writes_are_conditional_on_the_etag_read() {
    let seed_dir = scratch("gcs-writes-seed");
    for bucket in [MAIN, OTHER] {
        std::fs::create_dir_all(seed_dir.join(bucket)).unwrap();
        std::fs::write(seed_dir.join(bucket).join("readme.txt"), "hello").unwrap();
    }
    let gcs = emulators::fake_gcs(&seed_dir);
    let google = identity::google(SUBJECT_TOKEN, WIF);
    let (cloud, creds) = gcs_cloud(&format!("127.0.0.1:{}", gcs.port), &google);
    let storage = open(&cloud, Provider::Gcp, gcs_config());
    conditional_writes(&storage, &Outside::FakeGcs(gcs.url()), true).await;
    // Reads hold a read-only token; only the writes asked for one that may write.
    let scopes = impersonated_scopes(&google);
    assert!(
        scopes.contains(&"https://www.googleapis.com/auth/devstorage.read_only".to_owned())
            && scopes.contains(&"https://www.googleapis.com/auth/devstorage.read_write".to_owned()),
        "{scopes:?}"
    );
    let _ = std::fs::remove_dir_all(seed_dir);
    let _ = std::fs::remove_dir_all(creds);
}

//! POST /connectors/:id/test, and scans of GCS and Blob, against real storage protocols: moto
//! for S3 and STS, fake-gcs-server for GCS, Azurite over HTTPS for Blob. Microsoft Entra ID and
//! Google STS have no emulator, so they are local stand-ins that speak the documented protocol
//! (`testkit::identity`).

use std::collections::HashMap;

use base64::Engine;
use integration_tests::{Service, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use testkit::{emulators, identity, seed};

use crate::Client;

const WIF: &str =
    "projects/123456789012/locations/global/workloadIdentityPools/dps-pool/providers/platform";
const SUBJECT_TOKEN: &str = "platform-oidc-subject-token";
pub(crate) const ENTRA_TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
pub(crate) const ENTRA_CLIENT: &str = "0b3f2c1e-1111-2222-3333-444455556666";
pub(crate) const ENTRA_SECRET: &str = "entra-client-secret-9d2b";

pub(crate) fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dps-{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn create(admin: &Client<'_>, name: &str, provider: &str, mut config: Value) -> String {
    if provider == "aws" {
        config["external_id"] = json!(admin.external_id().await);
    }
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": name, "provider": provider, "config": config})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

async fn test(admin: &Client<'_>, id: &str) -> Value {
    let (status, body) = admin
        .send(Method::POST, &format!("/connectors/{id}/test"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["data"]["latency_ms"].is_u64(), "{body}");
    body["data"].clone()
}

async fn status_of(admin: &Client<'_>, id: &str) -> (String, Option<String>) {
    let (status, body) = admin
        .send(Method::GET, &format!("/connectors/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    (
        data["status"].as_str().unwrap().to_owned(),
        data["status_message"].as_str().map(str::to_owned),
    )
}

/// Scans the connector through platform-api's worker tasks: `objects` objects are read and
/// the one SSN among them is found.
async fn scanned(admin: &Client<'_>, id: &str, objects: i64) {
    let (status, body) = admin
        .send(
            Method::POST,
            &format!("/connectors/{id}/scan"),
            Some(json!({"type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let done = crate::scans::finished(admin, body["data"]["scan_id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["coverage"]["total_enumerated"], objects, "{done}");
    assert_eq!(done["coverage"]["total_scanned"], objects, "{done}");
    assert_eq!(done["progress"]["findings_count"], 1, "{done}");
}

fn aws_config(buckets: Option<&[&str]>) -> Value {
    let mut config = json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": "set by create",
        "region": "us-east-1",
    });
    if let Some(buckets) = buckets {
        config["buckets"] = json!(buckets);
    }
    config
}

/// The bodies moto recorded, decoded.
fn recorded_bodies(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|entry| {
            let body = entry["body"].as_str()?.to_owned();
            if entry["body_encoded"] == true {
                base64::engine::general_purpose::STANDARD
                    .decode(body)
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            } else {
                Some(body)
            }
        })
        .collect()
}

#[tokio::test]
async fn aws_connection_test_assumes_the_role_with_the_external_id_then_lists_and_reads() {
    let recording = scratch("moto-rec").join("recording");
    let recording_path = recording.to_str().unwrap().to_owned();
    let moto = emulators::moto(&[("MOTO_RECORDER_FILEPATH", &recording_path)]);
    let exports = seed::s3_bucket(&moto.url(), "hr-exports").await;
    seed::put_all(
        exports.as_ref(),
        &[
            ("2024/people.csv", b"name,ssn\nAnn,123-45-6789\n"),
            ("2024/notes.txt", b"call back"),
        ],
    )
    .await;
    seed::s3_bucket(&moto.url(), "logs").await;
    let moto_url = moto.url();
    let app = TestApp::spawn_with(Service::Platform, |env| {
        env.insert("AWS_ENDPOINT_URL".into(), moto_url.clone());
        env.insert("AWS_ACCESS_KEY_ID".into(), seed::MOTO_KEY_ID.into());
        env.insert("AWS_SECRET_ACCESS_KEY".into(), seed::MOTO_SECRET.into());
        env.insert("AWS_REGION".into(), "us-east-1".into());
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let http = reqwest::Client::new();
    http.post(format!("{moto_url}/moto-api/recorder/start-recording"))
        .send()
        .await
        .unwrap();

    let id = create(
        &admin,
        "HR exports",
        "aws",
        aws_config(Some(&["hr-exports"])),
    )
    .await;
    assert_eq!(status_of(&admin, &id).await.0, "pending_test");
    let found = test(&admin, &id).await;
    assert_eq!(found["connected"], true, "{found}");
    assert_eq!(found["buckets_accessible"], json!(["hr-exports"]));
    assert_eq!(found["sample_objects"], 2);
    assert!(found.get("error").is_none(), "{found}");
    assert_eq!(status_of(&admin, &id).await, ("active".into(), None));

    // The role was assumed with the connector's external id, signed by the platform identity.
    let bodies = recorded_bodies(&recording);
    let external_id = format!("ExternalId={}", admin.external_id().await);
    assert!(
        bodies.iter().any(|b| b.contains("Action=AssumeRole")
            && b.contains(&external_id)
            && b.contains("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fdps-scanner")),
        "no AssumeRole with the external id in {bodies:?}"
    );

    // Without buckets, every bucket the role can list is covered.
    let all = create(&admin, "Everything", "aws", aws_config(None)).await;
    let found = test(&admin, &all).await;
    assert_eq!(found["connected"], true, "{found}");
    assert_eq!(found["buckets_accessible"], json!(["hr-exports", "logs"]));

    // A bucket that does not exist: not connected, explained, and the status says so.
    let missing = create(
        &admin,
        "Missing",
        "aws",
        aws_config(Some(&["no-such-bucket"])),
    )
    .await;
    let found = test(&admin, &missing).await;
    assert_eq!(found["connected"], false, "{found}");
    assert_eq!(found["error"]["reason"], "not_found", "{found}");
    assert!(
        found["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-bucket"),
        "{found}"
    );
    let (status, message) = status_of(&admin, &missing).await;
    assert_eq!(status, "error");
    assert!(message.unwrap().starts_with("not_found: "));

    // Testing starts no scan and leaves the objects alone.
    assert_eq!(found["buckets_accessible"], json!([]));
    let _ = std::fs::remove_dir_all(recording.parent().unwrap());
}

#[tokio::test]
async fn aws_without_a_platform_identity_says_so() {
    let moto = emulators::moto(&[]);
    let moto_url = moto.url();
    let app = TestApp::spawn_with(Service::Platform, |env| {
        env.insert("AWS_ENDPOINT_URL".into(), moto_url.clone());
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let id = create(
        &admin,
        "No identity",
        "aws",
        aws_config(Some(&["x-bucket"])),
    )
    .await;
    let found = test(&admin, &id).await;
    assert_eq!(found["connected"], false);
    assert_eq!(found["error"]["reason"], "identity", "{found}");
    assert!(
        found["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no AWS identity"),
        "{found}"
    );
    // Any user of the tenant tests connections (the spec's role model).
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let (status, body) = analyst
        .send(Method::POST, &format!("/connectors/{id}/test"), None)
        .await;
    assert_ne!(status, 403, "{body}");
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors/00000000-0000-0000-0000-000000000000/test",
            None,
        )
        .await;
    assert_eq!(status, 404);
    crate::area_b_error(&body, "CONNECTOR_NOT_FOUND");
}

#[tokio::test]
async fn gcp_federates_impersonates_then_tests_and_scans() {
    let seed_dir = scratch("gcs-seed");
    std::fs::create_dir_all(seed_dir.join("hr-exports/2024")).unwrap();
    std::fs::write(
        seed_dir.join("hr-exports/2024/people.csv"),
        "name,ssn\nAnn,219-09-9999\n",
    )
    .unwrap();
    std::fs::write(seed_dir.join("hr-exports/readme.txt"), "hello").unwrap();
    let gcs = emulators::fake_gcs(&seed_dir);
    let google = identity::google(SUBJECT_TOKEN, WIF);

    let creds = scratch("gcp-creds");
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
    let env: HashMap<&str, String> = HashMap::from([
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            creds.join("platform.json").to_str().unwrap().to_owned(),
        ),
        ("STORAGE_EMULATOR_HOST", format!("127.0.0.1:{}", gcs.port)),
    ]);
    let app = TestApp::spawn_with(Service::Platform, |vars| {
        for (k, v) in &env {
            vars.insert((*k).into(), v.clone());
        }
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let config = |wif: &str, buckets: Option<&[&str]>| {
        let mut c = json!({
            "project_id": "acme-data-prod",
            "service_account_email": "dps-reader@acme-data-prod.iam.gserviceaccount.com",
            "wif_provider": wif,
        });
        if let Some(b) = buckets {
            c["buckets"] = json!(b);
        }
        c
    };
    let id = create(&admin, "GCS", "gcp", config(WIF, Some(&["hr-exports"]))).await;
    let found = test(&admin, &id).await;
    assert_eq!(found["connected"], true, "{found}");
    assert_eq!(found["buckets_accessible"], json!(["hr-exports"]));
    assert_eq!(found["sample_objects"], 2);
    assert_eq!(status_of(&admin, &id).await.0, "active");

    // One exchange at STS for the connector's provider, then one impersonation of its account.
    let requests = google.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let exchange: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(exchange["audience"], format!("//iam.googleapis.com/{WIF}"));
    assert!(requests[1].path.contains(
        "/serviceAccounts/dps-reader@acme-data-prod.iam.gserviceaccount.com:generateAccessToken"
    ));
    scanned(&admin, &id, 2).await;

    // Every bucket of the project when none is named.
    let all = create(&admin, "GCS all", "gcp", config(WIF, None)).await;
    let found = test(&admin, &all).await;
    assert_eq!(
        found["buckets_accessible"],
        json!(["hr-exports"]),
        "{found}"
    );

    // STS refuses another provider's audience; the reason is Google's.
    let other = WIF.replace("providers/platform", "providers/other");
    let refused = create(
        &admin,
        "GCS wrong pool",
        "gcp",
        config(&other, Some(&["hr-exports"])),
    )
    .await;
    let found = test(&admin, &refused).await;
    assert_eq!(found["connected"], false);
    assert_eq!(found["error"]["reason"], "identity", "{found}");
    assert!(
        found["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid_target"),
        "{found}"
    );
    let _ = std::fs::remove_dir_all(seed_dir);
    let _ = std::fs::remove_dir_all(creds);
}

#[tokio::test]
async fn azure_gets_an_entra_token_then_tests_and_scans_over_https() {
    let certs = scratch("azurite-tls");
    let (cert, key) = identity::self_signed_certificate(&certs);
    let azurite = emulators::azurite(Some((&cert, &key)));
    let blob_url = format!("https://127.0.0.1:{}", azurite.port);
    let entra = identity::entra(ENTRA_TENANT, ENTRA_CLIENT, ENTRA_SECRET);
    let ca = std::fs::read(&cert).unwrap();
    let exports = seed::azure_container(&blob_url, &ca, "exports").await;
    seed::put_all(
        exports.as_ref(),
        &[("people.csv", b"name,ssn\nAnn,219-09-9999\n" as &[u8])],
    )
    .await;

    let (entra_url, cert_path) = (entra.url(), cert.to_str().unwrap().to_owned());
    let app = TestApp::spawn_with(Service::Platform, |env| {
        env.insert("AZURE_AUTHORITY_HOST".into(), entra_url.clone());
        env.insert("AZURITE_BLOB_STORAGE_URL".into(), blob_url.clone());
        env.insert("DPS_CLOUD_CA_FILE".into(), cert_path.clone());
    })
    .await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let config = |secret: &str, buckets: Option<&[&str]>| {
        let mut c = json!({
            "tenant_id": ENTRA_TENANT,
            "client_id": ENTRA_CLIENT,
            "client_secret": secret,
            "storage_account": seed::AZURITE_ACCOUNT,
        });
        if let Some(b) = buckets {
            c["buckets"] = json!(b);
        }
        c
    };
    let id = create(
        &admin,
        "Blob",
        "azure",
        config(ENTRA_SECRET, Some(&["exports"])),
    )
    .await;
    let found = test(&admin, &id).await;
    assert_eq!(found["connected"], true, "{found}");
    assert_eq!(found["buckets_accessible"], json!(["exports"]));
    assert_eq!(found["sample_objects"], 1);
    assert_eq!(status_of(&admin, &id).await.0, "active");
    let token_requests = entra.requests();
    assert_eq!(token_requests.len(), 1, "one token, then the cache");
    scanned(&admin, &id, 1).await;

    let all = create(&admin, "Blob all", "azure", config(ENTRA_SECRET, None)).await;
    let found = test(&admin, &all).await;
    assert_eq!(found["buckets_accessible"], json!(["exports"]), "{found}");

    // A wrong secret: Entra's explanation, and never the secret itself.
    let wrong = "not-the-right-secret-42";
    let refused = create(
        &admin,
        "Blob wrong",
        "azure",
        config(wrong, Some(&["exports"])),
    )
    .await;
    let found = test(&admin, &refused).await;
    assert_eq!(found["connected"], false);
    assert_eq!(found["error"]["reason"], "identity", "{found}");
    let message = found["error"]["message"].as_str().unwrap();
    assert!(message.contains("AADSTS7000215"), "{message}");
    assert!(!found.to_string().contains(wrong));
    let (status, stored) = status_of(&admin, &refused).await;
    assert_eq!(status, "error");
    assert!(!stored.unwrap().contains(wrong));
    let _ = std::fs::remove_dir_all(certs);
}

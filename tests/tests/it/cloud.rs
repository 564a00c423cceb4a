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
use crate::scans::scan_to_its_end;

const WIF: &str =
    "projects/123456789012/locations/global/workloadIdentityPools/dps-pool/providers/platform";
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
    let done = scan_to_its_end(admin, id).await;
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

/// Where the platform says its GCP issuer is: never fetched by the stand-in, which is given
/// the JWKS (as a customer may upload it to their provider).
const ISSUER: &str = "https://dps.example.test/api/v1/gcp-oidc";

/// The platform is an OpenID Connect issuer of its own: each tenant's GCP connectors present a
/// subject token whose `sub` is derived from the tenant, so a provider that admits only one
/// tenant's subject is reachable by that tenant's connectors alone. Another tenant that names
/// it is refused at the exchange, and nothing of the customer's storage is listed.
#[tokio::test]
async fn gcp_connectors_reach_only_providers_that_admit_their_own_tenants_subject() {
    let seed_dir = scratch("gcs-seed");
    std::fs::create_dir_all(seed_dir.join("hr-exports/2024")).unwrap();
    std::fs::write(
        seed_dir.join("hr-exports/2024/people.csv"),
        "name,ssn\nAnn,219-09-9999\n",
    )
    .unwrap();
    std::fs::write(seed_dir.join("hr-exports/readme.txt"), "hello").unwrap();
    let gcs = emulators::fake_gcs(&seed_dir);
    let (google, trust) = identity::google_federation();
    let env: HashMap<&str, String> = HashMap::from([
        ("DPS_GCP_OIDC_ISSUER", ISSUER.to_owned()),
        ("DPS_GCP_STS_URL", google.url()),
        ("DPS_GCP_IAM_CREDENTIALS_URL", google.url()),
        ("STORAGE_EMULATOR_HOST", format!("127.0.0.1:{}", gcs.port)),
    ]);
    let app = TestApp::spawn_with(Service::Platform, |vars| {
        for (k, v) in &env {
            vars.insert((*k).into(), v.clone());
        }
    })
    .await;

    // The issuer's documents are public, as a provider fetches them.
    let discovery: Value = app
        .http
        .get(app.url("/gcp-oidc/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(discovery["issuer"], ISSUER, "{discovery}");
    assert_eq!(discovery["jwks_uri"], format!("{ISSUER}/jwks"));
    assert_eq!(
        discovery["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let jwks: Value = app
        .http
        .get(app.url("/gcp-oidc/jwks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"][0]["kty"], "EC", "{jwks}");
    assert!(
        jwks["keys"][0].get("d").is_none(),
        "no private part: {jwks}"
    );

    // Each tenant learns its own subject, and the condition its provider needs.
    let acme = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let globex = Client {
        app: &app,
        token: app.token("globex", "gil", &["analyst"]),
    };
    let (acme_subject, globex_subject) = (gcp_subject(&acme).await, gcp_subject(&globex).await);
    assert_ne!(acme_subject, globex_subject);
    assert_eq!(acme_subject, gcp_subject(&acme).await, "stable");

    // Globex's project: a provider that admits globex's subject only.
    let globex_wif = WIF.replace("providers/platform", "providers/globex");
    let acme_wif = WIF.replace("providers/platform", "providers/acme");
    {
        let mut trust = trust.lock().unwrap();
        trust.issuer = ISSUER.to_owned();
        trust.jwks = jwks.clone();
        trust.providers = HashMap::from([
            (globex_wif.clone(), globex_subject.clone()),
            (acme_wif.clone(), acme_subject.clone()),
        ]);
    }
    let config = |wif: &str, buckets: Option<&[&str]>| {
        let mut c = json!({
            "project_id": "globex-data-prod",
            "service_account_email": "dps-reader@globex-data-prod.iam.gserviceaccount.com",
            "wif_provider": wif,
        });
        if let Some(b) = buckets {
            c["buckets"] = json!(b);
        }
        c
    };
    let own = create(
        &globex,
        "GCS",
        "gcp",
        config(&globex_wif, Some(&["hr-exports"])),
    )
    .await;
    let found = test(&globex, &own).await;
    assert_eq!(found["connected"], true, "{found}");
    assert_eq!(found["buckets_accessible"], json!(["hr-exports"]));
    assert_eq!(found["sample_objects"], 2);
    // One exchange of globex's token at STS for its provider, then one impersonation.
    let requests = google.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let exchange: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(
        exchange["audience"],
        format!("//iam.googleapis.com/{globex_wif}")
    );
    let claims = identity::verified_claims(exchange["subjectToken"].as_str().unwrap(), &jwks)
        .expect("signed by the served key");
    assert_eq!(claims["sub"], globex_subject.as_str());
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(
        claims["aud"],
        format!("https://iam.googleapis.com/{globex_wif}")
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap(),
        claims["exp"].as_i64().unwrap(),
    );
    assert!(exp > now && exp - iat == 300, "short-lived: {claims:?}");
    assert!(requests[1].path.contains(
        "/serviceAccounts/dps-reader@globex-data-prod.iam.gserviceaccount.com:generateAccessToken"
    ));
    scanned(&globex, &own, 2).await;
    // Every bucket of the project when none is named.
    let all = create(&globex, "GCS all", "gcp", config(&globex_wif, None)).await;
    let found = test(&globex, &all).await;
    assert_eq!(
        found["buckets_accessible"],
        json!(["hr-exports"]),
        "{found}"
    );

    // Acme names globex's provider and service account: its token carries acme's subject,
    // which globex's provider does not admit. Nothing is impersonated, nothing listed.
    let before = google.requests().len();
    let theirs = create(
        &acme,
        "Not ours",
        "gcp",
        config(&globex_wif, Some(&["hr-exports"])),
    )
    .await;
    let found = test(&acme, &theirs).await;
    assert_eq!(found["connected"], false, "{found}");
    assert_eq!(found["buckets_accessible"], json!([]), "{found}");
    assert_eq!(found["sample_objects"], 0, "{found}");
    assert_eq!(found["error"]["reason"], "identity", "{found}");
    let message = found["error"]["message"].as_str().unwrap();
    assert!(message.contains("attribute condition"), "{message}");
    // Globex's own connectors may be checked meanwhile (a bucket posture check after its
    // scan): each of their impersonations follows one of their exchanges. None follows acme's.
    let after = google.requests();
    let subject_of = |r: &identity::Seen| {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        let claims =
            identity::verified_claims(body["subjectToken"].as_str().unwrap(), &jwks).unwrap();
        claims["sub"].as_str().unwrap().to_owned()
    };
    let exchanges: Vec<String> = after[before..]
        .iter()
        .filter(|r| r.path == "/v1/token")
        .map(subject_of)
        .collect();
    let impersonations = after[before..]
        .iter()
        .filter(|r| r.path != "/v1/token")
        .count();
    assert!(
        exchanges.iter().any(|s| s == acme_subject.as_str()),
        "acme's exchange presents acme's own subject: {exchanges:?}"
    );
    assert_eq!(
        impersonations,
        exchanges
            .iter()
            .filter(|s| *s == globex_subject.as_str())
            .count(),
        "no impersonation after a refused exchange: {after:?}"
    );
    scan_refused(&acme, &theirs).await;

    // A provider that does not exist in the stand-in: STS refuses the audience.
    let unknown = WIF.replace("providers/platform", "providers/other");
    let refused = create(&acme, "GCS wrong pool", "gcp", config(&unknown, None)).await;
    let found = test(&acme, &refused).await;
    assert_eq!(found["connected"], false);
    assert!(
        found["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid_target"),
        "{found}"
    );
    let _ = std::fs::remove_dir_all(seed_dir);
}

/// The caller's tenant's GCP subject, and the condition a provider needs to admit it.
async fn gcp_subject(client: &Client<'_>) -> String {
    let (status, body) = client
        .send(Method::GET, "/connectors/gcp-subject", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let data = body["data"].clone();
    assert_eq!(data["mode"], "tenant_subject", "{data}");
    assert_eq!(data["issuer"], ISSUER);
    let subject = data["subject"].as_str().unwrap().to_owned();
    assert_eq!(
        data["attribute_condition"],
        format!("assertion.sub == '{subject}'")
    );
    subject
}

/// A full scan of a connector whose identity is refused reads nothing: every object it could
/// have listed is out of reach, and no finding is made.
async fn scan_refused(admin: &Client<'_>, id: &str) {
    let done = scan_to_its_end(admin, id).await;
    assert_ne!(done["status"], "completed", "{done}");
    assert_eq!(done["coverage"]["total_scanned"], 0, "{done}");
    assert_eq!(done["progress"]["findings_count"], 0, "{done}");
}

/// A deployment that would present one GCP identity for every tenant must say so by name: a
/// platform-api given `GOOGLE_APPLICATION_CREDENTIALS` without `DPS_GCP_SINGLE_IDENTITY=true`
/// does not start.
#[tokio::test]
async fn one_gcp_identity_for_every_tenant_is_refused_unless_asked_for_by_name() {
    let db = testkit::database().await;
    let creds = scratch("gcp-single");
    let external_account = json!({
        "type": "external_account",
        "audience": format!("//iam.googleapis.com/{WIF}"),
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": "https://sts.googleapis.com/v1/token",
        "credential_source": {"file": creds.join("token"), "format": {"type": "text"}},
    });
    std::fs::write(creds.join("platform.json"), external_account.to_string()).unwrap();
    let path = creds.join("platform.json").to_str().unwrap().to_owned();
    let config = |pairs: &[(&str, &str)]| {
        let mut env = integration_tests::default_env(&db);
        for (k, v) in pairs {
            env.insert((*k).into(), (*v).into());
        }
        platform_api::Config::from_lookup(&|k| env.get(k).cloned())
    };
    let refused = config(&[("GOOGLE_APPLICATION_CREDENTIALS", &path)]).unwrap_err();
    assert_eq!(refused.variable, "GOOGLE_APPLICATION_CREDENTIALS");
    assert!(
        refused.problem.contains("DPS_GCP_SINGLE_IDENTITY"),
        "{}",
        refused.problem
    );
    config(&[
        ("GOOGLE_APPLICATION_CREDENTIALS", &path),
        ("DPS_GCP_SINGLE_IDENTITY", "true"),
    ])
    .unwrap();
    let refused = config(&[("DPS_GCP_SINGLE_IDENTITY", "true")]).unwrap_err();
    assert_eq!(refused.variable, "DPS_GCP_SINGLE_IDENTITY");
    let refused = config(&[("DPS_GCP_OIDC_ISSUER", "http://dps.example.test/oidc")]).unwrap_err();
    assert_eq!(refused.variable, "DPS_GCP_OIDC_ISSUER");
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

    // Another tenant names the same application and account: its connector acts only with the
    // secret it supplied itself, never with acme's, which is sealed to acme's connector.
    let globex = Client {
        app: &app,
        token: app.token("globex", "gil", &["admin"]),
    };
    let before = entra.requests().len();
    let theirs = create(
        &globex,
        "Blob of acme",
        "azure",
        config("globex-guess-1", Some(&["exports"])),
    )
    .await;
    let found = test(&globex, &theirs).await;
    assert_eq!(found["connected"], false, "{found}");
    assert_eq!(found["buckets_accessible"], json!([]), "{found}");
    assert_eq!(found["error"]["reason"], "identity", "{found}");
    // Refused above: with acme's secret, which Entra accepts, it would have connected. The
    // token requests since then are globex's, with its own secret, and any that acme's own
    // connectors made meanwhile in the background (a bucket posture check after the scan),
    // with acme's secret for acme's connector: which of the two made a request is told by
    // the secret alone, so a request is globex's exactly when it carries globex's.
    let presented = entra.requests();
    let globex_requests = presented[before..]
        .iter()
        .filter(|r| r.body.contains("client_secret=globex-guess-1"))
        .count();
    assert!(globex_requests > 0, "globex's connector asked for a token");
    for request in &presented[before..] {
        assert!(
            request.body.contains("client_secret=globex-guess-1")
                != request
                    .body
                    .contains(&format!("client_secret={ENTRA_SECRET}")),
            "one tenant's own secret in each request: {}",
            request.body
        );
    }
    let _ = std::fs::remove_dir_all(certs);
}

//! Remediation on real objects in moto (S3): tokenize, mask and quarantine, each snapshotted
//! first, signed in a receipt that verifies offline, and undone byte for byte; a concurrent
//! writer is never overwritten; a denied safety class blocks; tokens written into objects
//! go back to their values through tokens-api.

use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl as _;
use integration_tests::{Service, TestApp, TestDatabase};
use object_store::ObjectStoreExt as _;
use object_store::path::Path as ObjectPath;
use reqwest::Method;
use serde_json::{Value, json};
use testkit::{emulators, seed};

use crate::Client;
use crate::tokenize::Tokens;

const YAML: &str = "application/yaml";
const SSNS: &[u8] = b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n";
pub(crate) const PEOPLE: &[u8] = b"name,ssn,email\nAnn Lee,219-09-9999,ann.lee@example.com\nBo Chan,078-05-1120,bo@example.com\n";

/// Served headers and user metadata as a customer's tools set them: remediation and undo keep
/// them all.
pub(crate) fn served() -> object_store::Attributes {
    use object_store::{Attribute, AttributeValue};
    object_store::Attributes::from_iter([
        (
            Attribute::ContentType,
            AttributeValue::from("text/csv; charset=utf-8"),
        ),
        (Attribute::CacheControl, AttributeValue::from("no-store")),
        (
            Attribute::ContentDisposition,
            AttributeValue::from("attachment; filename=\"people.csv\""),
        ),
        (Attribute::ContentLanguage, AttributeValue::from("en-CA")),
        (
            Attribute::Metadata("owner".into()),
            AttributeValue::from("hr-team"),
        ),
        (
            Attribute::Metadata("retention_class".into()),
            AttributeValue::from("7y"),
        ),
    ])
}

/// [`served`], and the metadata entry naming the remediation that rewrote the object.
pub(crate) fn served_by(remediation: &Value) -> object_store::Attributes {
    let mut attributes = served();
    attributes.insert(
        object_store::Attribute::Metadata("dps_remediation".into()),
        remediation["remediation_id"]
            .as_str()
            .unwrap()
            .to_owned()
            .into(),
    );
    attributes
}

/// A platform-api on moto and a tokens-api on the same database and master key, as deployed.
pub(crate) struct Stack {
    pub(crate) platform: TestApp,
    pub(crate) tokens: Tokens,
    pub(crate) moto: emulators::Emulator,
    /// Both services' `DPS_MASTER_KEY`.
    pub(crate) master: String,
}

impl Stack {
    pub(crate) async fn new(
        tweak: impl FnOnce(&mut std::collections::HashMap<String, String>),
    ) -> Self {
        let moto = emulators::moto(&[]);
        let master = {
            use base64::Engine as _;
            let mut key = [0u8; 32];
            key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
            key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
            base64::engine::general_purpose::STANDARD.encode(key)
        };
        let moto_url = moto.url();
        let (m, kept) = (master.clone(), master.clone());
        let platform = TestApp::spawn_with(Service::Platform, |env| {
            for (name, value) in seed::moto_platform_env(&moto_url) {
                env.insert(name.into(), value);
            }
            env.insert("DPS_SCAN_WORKERS".into(), "1".into());
            env.insert("DPS_MASTER_KEY".into(), m);
            tweak(env);
        })
        .await;
        let db = TestDatabase {
            name: platform.db.name.clone(),
            url: platform.db.url.clone(),
        };
        let app = TestApp::spawn_on(Service::Tokens, db, |env| {
            env.insert("DPS_MASTER_KEY".into(), master);
        })
        .await;
        let admin = app.token("acme", "alice", &["admin"]);
        let api_key = crate::tokenize::api_key(&app, "acme").await;
        Stack {
            platform,
            tokens: Tokens {
                app,
                admin,
                api_key,
            },
            moto,
            master: kept,
        }
    }

    /// An executor like platform-api's, on this stack's database and moto: for driving the
    /// snapshot sweeper without waiting for its minute.
    pub(crate) fn executor(&self) -> remediation::Executor {
        let master = std::sync::Arc::new(keys::MasterKey::from_base64(&self.master).unwrap());
        remediation::Executor::new(
            seed::moto_cloud(&self.moto.url()),
            std::sync::Arc::new(keys::KeyRing::new(master.clone())),
            std::sync::Arc::new(remediation::Receipts {
                signer: receipts::Signer::from_master(&master),
                cosigner: remediation::Cosigner::new(
                    None,
                    None,
                    egress::Egress {
                        allow_private: true,
                    },
                )
                .unwrap(),
            }),
        )
    }

    pub(crate) fn admin(&self) -> Client<'_> {
        Client {
            app: &self.platform,
            token: self.platform.token("acme", "ann", &["admin"]),
        }
    }
}

pub(crate) async fn policy(admin: &Client<'_>, yaml: &str) -> String {
    let (status, body) = admin
        .send_raw(Method::POST, "/governance/policies", YAML, yaml)
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

/// A policy with one condition and one action (`{ type: …, config: … }`), made over HTTP.
pub(crate) async fn policy_of(
    admin: &Client<'_>,
    name: &str,
    mode: &str,
    category: &str,
    min_confidence: f64,
    action: &str,
) -> String {
    policy(
        admin,
        &format!(
            "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: {name} }}
spec:
  mode: {mode}
  conditions: [{{ category: {category}, min_confidence: {min_confidence} }}]
  actions: [{action}]
"
        ),
    )
    .await
}

/// An enforced policy masking SSNs down to their last four digits; returns its id.
async fn ssn_mask_policy(admin: &Client<'_>) -> String {
    policy_of(
        admin,
        "ssn-mask",
        "enforced",
        "us_ssn",
        0.5,
        "{ type: mask, config: { keep_last: 4 } }",
    )
    .await
}

/// A bucket with people.csv holding `people`, a connector to it and an enforced mask policy; returns the
/// bucket and the connector id.
pub(crate) async fn masked_people(
    stack: &Stack,
    admin: &Client<'_>,
    people: &[u8],
) -> (std::sync::Arc<dyn object_store::ObjectStore>, String) {
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", people)]).await;
    let connector = crate::scans::connector(admin, "HR", "people-data").await;
    ssn_mask_policy(admin).await;
    (bucket, connector)
}

/// SSNs masked by a full scan: the bucket, the connector, the remediation (receipted) and its
/// snapshot's key, the snapshot holding the original.
async fn masked_with_snapshot(
    stack: &Stack,
    admin: &Client<'_>,
) -> (
    std::sync::Arc<dyn object_store::ObjectStore>,
    String,
    Value,
    String,
) {
    let (bucket, connector) = masked_people(stack, admin, SSNS).await;
    crate::scans::full_scan(admin, &connector).await;
    let r = ended(admin, 1).await.remove(0);
    assert_eq!(r["status"], "receipted", "{r}");
    let lkg = r["lkg_location"]["key"].as_str().unwrap().to_owned();
    assert_eq!(read(bucket.as_ref(), &lkg).await.unwrap(), SSNS);
    (bucket, connector, r, lkg)
}

/// POST /governance/remediations/:id/undo with `body`.
pub(crate) async fn undo(admin: &Client<'_>, id: &str, body: Option<Value>) -> (u16, Value) {
    admin
        .send(
            Method::POST,
            &format!("/governance/remediations/{id}/undo"),
            body,
        )
        .await
}

/// Waits until `n` remediations have ended (receipted, blocked, failed or undone).
pub(crate) async fn ended(admin: &Client<'_>, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = admin
            .send(Method::GET, "/governance/remediations?limit=100", None)
            .await;
        assert_eq!(status, 200, "{body}");
        let all = body["data"].as_array().unwrap().clone();
        let done = all
            .iter()
            .filter(|r| {
                ["receipted", "blocked", "failed", "undone"]
                    .contains(&r["status"].as_str().unwrap_or(""))
            })
            .count();
        if all.len() >= n && done == all.len() {
            return all;
        }
        assert!(Instant::now() < deadline, "remediations not done: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) async fn read(bucket: &dyn object_store::ObjectStore, key: &str) -> Option<Vec<u8>> {
    match bucket.get(&ObjectPath::from(key)).await {
        Ok(got) => Some(got.bytes().await.unwrap().to_vec()),
        Err(object_store::Error::NotFound { .. }) => None,
        Err(e) => panic!("{e}"),
    }
}

/// The tenant's audit entries of type `kind` (of its latest 100).
async fn audited(admin: &Client<'_>, kind: &str) -> Vec<Value> {
    let (status, log) = admin
        .send(Method::GET, "/governance/audit-log?limit=100", None)
        .await;
    assert_eq!(status, 200, "{log}");
    log["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == kind)
        .cloned()
        .collect()
}

/// The receipt verifies offline against the served keys, and names no value.
pub(crate) async fn verify_receipt(admin: &Client<'_>, remediation: &Value, kind: &str) {
    let receipt = remediation["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} receipt: {remediation}"));
    let (status, keys) = admin
        .send(Method::GET, "/governance/receipt-keys", None)
        .await;
    assert_eq!(status, 200, "{keys}");
    receipts::verify(&receipt["document"], &keys["data"])
        .unwrap_or_else(|e| panic!("receipt does not verify: {e}: {receipt}"));
    let mut tampered = receipt["document"].clone();
    tampered["receipt"]["resource"]["key"] = json!("other.csv");
    assert!(receipts::verify(&tampered, &keys["data"]).is_err());
    let text = receipt.to_string();
    for value in ["219-09-9999", "078-05-1120", "ann.lee@example.com"] {
        assert!(!text.contains(value), "{text}");
    }
}

#[derive(QueryableByName)]
struct TokenId {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    token_id: uuid::Uuid,
}

#[tokio::test]
async fn tokenize_rewrites_only_the_values_round_trips_and_undoes_byte_for_byte() {
    let stack = Stack::new(|_| {}).await;
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(
        bucket.as_ref(),
        &[("notes.txt", b"nothing to see".as_slice())],
    )
    .await;
    seed::put_with(bucket.as_ref(), "people.csv", PEOPLE, served()).await;
    let token_policy = ssn_token_policy(&stack).await;
    let admin = stack.admin();
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    let tokenize =
        format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}");
    let ssn_policy = policy_of(&admin, "ssn-tokenize", "enforced", "us_ssn", 0.5, &tokenize).await;
    // A dry-run policy on the same object simulates and changes nothing.
    policy_of(
        &admin,
        "contacts-dry",
        "dry-run",
        "contact",
        0.5,
        "{ type: quarantine, config: { destination: { bucket: people-data, prefix: 'q/' } } }",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done.len(), 1, "the dry run plans nothing: {done:?}");
    let r = &done[0];
    assert_eq!(r["status"], "receipted", "{r}");
    assert_eq!(r["action_type"], "tokenize");
    assert_eq!(r["safety_class"], "reversible");
    assert_eq!(r["gate"], "allowed");
    // Undo is possible for the tenant's rollback window (72 hours unless set) from execution.
    let at = |field: &str| {
        time::OffsetDateTime::parse(
            r[field].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap_or_else(|e| panic!("{field}: {e}: {r}"))
    };
    assert_eq!(
        at("undo_until") - at("executed_at"),
        time::Duration::hours(72),
        "{r}"
    );

    // Only the SSNs changed, each into a token of the same shape; every other byte is as it was.
    let after = read(bucket.as_ref(), "people.csv").await.unwrap();
    let text = String::from_utf8(after.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "name,ssn,email");
    let mut tokens = Vec::new();
    for (line, (name, ssn, email)) in lines[1..].iter().zip([
        ("Ann Lee", "219-09-9999", "ann.lee@example.com"),
        ("Bo Chan", "078-05-1120", "bo@example.com"),
    ]) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], name);
        assert_eq!(cells[2], email);
        assert_ne!(cells[1], ssn);
        assert_eq!(cells[1].len(), ssn.len(), "{line}");
        assert_eq!(&cells[1][3..4], "-");
        assert_eq!(&cells[1][6..7], "-");
        tokens.push(cells[1].to_owned());
    }
    assert_eq!(after.len(), PEOPLE.len());
    // The object keeps its served headers and its owner's metadata, and names the request
    // that rewrote it.
    assert_eq!(
        seed::attributes_of(bucket.as_ref(), "people.csv").await,
        served_by(r)
    );
    assert_eq!(r["sha256_after"], json!(hex::encode(sha256(&after))));
    assert_eq!(r["sha256_before"], json!(hex::encode(sha256(PEOPLE))));
    // The snapshot holds the original bytes.
    let lkg = r["lkg_location"]["key"].as_str().unwrap();
    assert!(lkg.starts_with(".dps-lkg/"), "{r}");
    assert_eq!(read(bucket.as_ref(), lkg).await.unwrap(), PEOPLE);
    assert_eq!(
        read(bucket.as_ref(), "notes.txt").await.unwrap(),
        b"nothing to see"
    );
    verify_receipt(&admin, r, "executed").await;

    // The tokens go back to the values through tokens-api: grant, then detokenize.
    assert_eq!(
        detokenized(&stack, &tokens).await,
        ["219099999", "078051120"]
    );

    // The ledger and the audit log say it was executed, once.
    let executed = audited(&admin, "action_executed").await;
    assert_eq!(executed.len(), 1, "{executed:?}");

    // Tokens are not new PII: a rescan finds the tokens, knows them from the vault, reports
    // them remediated and plans nothing.
    crate::scans::full_scan(&admin, &connector).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let ssns = loop {
        let (_, body) = admin
            .send(Method::GET, "/findings?pii_type=us_ssn&status=open", None)
            .await;
        // people.csv's two SSNs are one finding.
        let ssns = body["data"].as_array().unwrap().clone();
        if ssns.len() == 1
            && ssns[0]["occurrences"] == 2
            && ssns[0]["remediation_status"] == "completed"
        {
            break ssns;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        ssns.iter()
            .all(|f| f["matched_policies"] == json!(["ssn-tokenize"]))
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_, all) = admin
        .send(Method::GET, "/governance/remediations", None)
        .await;
    assert_eq!(all["data"].as_array().unwrap().len(), 1, "{all}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), after);

    // Undo restores the original bytes, once.
    let id = r["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "undone");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), PEOPLE);
    assert_eq!(
        seed::attributes_of(bucket.as_ref(), "people.csv").await,
        served()
    );
    verify_receipt(&admin, &body["data"], "undone").await;
    assert_eq!(
        read(bucket.as_ref(), lkg).await,
        None,
        "the spent snapshot goes"
    );
    let (status, body) = undo(&admin, id, Some(json!({}))).await;
    assert_eq!(status, 409, "{body}");
    crate::area_b_error(&body, "already_undone");
    let undone = audited(&admin, "remediation_undone").await;
    assert_eq!(undone.len(), 1, "{undone:?}");
    assert_eq!(undone[0]["actor"], "ann", "{undone:?}");
    assert_eq!(
        undone[0]["resource"], "people-data/people.csv",
        "{undone:?}"
    );

    // A rescan of the restored object does not tokenize it again under the same policy version.
    crate::scans::full_scan(&admin, &connector).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, all) = admin
        .send(Method::GET, "/governance/remediations", None)
        .await;
    assert_eq!(all["data"].as_array().unwrap().len(), 1, "{all}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), PEOPLE);

    // A new version of the policy applies it again, to the same tokens.
    let (status, body) = admin
        .send_raw(
            Method::PUT,
            &format!("/governance/policies/{ssn_policy}"),
            YAML,
            &format!(
                "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: ssn-tokenize }}
spec:
  mode: enforced
  conditions: [{{ category: us_ssn, min_confidence: 0.6 }}]
  actions: [{tokenize}]
"
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 2).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");
    assert_eq!(done[0]["policy_version"], 2, "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), after);

    // No value reached any table: not the receipts, the audit log, the idempotency answers the
    // vault kept for the remediation's tokens, nor the runs. (The vault holds them sealed.)
    let dump = testkit::pg_dump(&stack.platform.db);
    assert!(
        dump.contains("remediation_receipts"),
        "the dump covers the tables"
    );
    for value in [
        "219-09-9999",
        "219099999",
        "078-05-1120",
        "078051120",
        "ann.lee@example.com",
    ] {
        assert!(!dump.contains(value), "{value} is in the database");
    }
}

/// Waits until a rescan's open findings of `pii_type` are `n` (standing for `occurrences`
/// values, when given), each with its remediation completed: the tokens written are known as
/// the platform's. Then checks that the rescan planned no remediation beyond `remediations`.
pub(crate) async fn rescanned(
    admin: &Client<'_>,
    pii_type: &str,
    n: usize,
    occurrences: Option<i64>,
    remediations: usize,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin
            .send(
                Method::GET,
                &format!("/findings?pii_type={pii_type}&status=open"),
                None,
            )
            .await;
        let found = body["data"].as_array().unwrap().clone();
        let values: i64 = found.iter().filter_map(|f| f["occurrences"].as_i64()).sum();
        if found.len() == n
            && occurrences.is_none_or(|o| o == values)
            && found.iter().all(|f| f["remediation_status"] == "completed")
        {
            break;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_, all) = admin
        .send(Method::GET, "/governance/remediations", None)
        .await;
    assert_eq!(all["data"].as_array().unwrap().len(), remediations, "{all}");
}

/// A bucket `bucket` on the stack's moto holding `objects`, a connector on it, an enforced
/// policy tokenizing SSNs with a format-preserving tokenization policy, and one full scan:
/// the bucket, the connector and the first `n` remediations it planned, ended.
pub(crate) async fn tokenized_by_a_scan(
    stack: &Stack,
    admin: &Client<'_>,
    bucket: &str,
    objects: &[(&str, &[u8])],
    n: usize,
) -> (
    std::sync::Arc<dyn object_store::ObjectStore>,
    String,
    Vec<Value>,
) {
    let store = seed::s3_bucket(&stack.moto.url(), bucket).await;
    seed::put_all(store.as_ref(), objects).await;
    let token_policy = ssn_token_policy(stack).await;
    let connector = crate::scans::connector(admin, bucket, bucket).await;
    let tokenize =
        format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}");
    policy_of(admin, "ssn-tokenize", "enforced", "us_ssn", 0.5, &tokenize).await;
    crate::scans::full_scan(admin, &connector).await;
    let done = ended(admin, n).await;
    (store, connector, done)
}

/// The values of `tokens`, through tokens-api as a support user would get them: the token ids
/// (from the vault's entries), a grant, then detokenize.
pub(crate) async fn detokenized(stack: &Stack, tokens: &[String]) -> Vec<String> {
    let mut conn = stack.platform.conn().await;
    let mut ids = Vec::new();
    for token in tokens {
        let found: TokenId =
            diesel::sql_query("SELECT token_id FROM vault_entries WHERE token = $1")
                .bind::<Text, _>(token)
                .get_result(&mut conn)
                .await
                .unwrap();
        ids.push(found.token_id.to_string());
    }
    let app = &stack.tokens.app;
    let support = app.token("acme", "sam", &["support"]);
    let grant = app
        .http
        .post(app.url("/grant"))
        .bearer_auth(&support)
        .json(&json!({"token_ids": ids, "purpose": "fraud_review"}))
        .send()
        .await
        .unwrap();
    assert_eq!(grant.status(), 200);
    let grant: Value = grant.json().await.unwrap();
    let revealed: Value = app
        .http
        .post(app.url("/detokenize"))
        .bearer_auth(&support)
        .json(&json!({"tokens": ids, "grant_jwt": grant["grant_jwt"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    revealed["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_str().unwrap().to_owned())
        .collect()
}

/// A format-preserving tokenization policy for SSNs, on tokens-api; returns its id.
pub(crate) async fn ssn_token_policy(stack: &Stack) -> String {
    stack
        .tokens
        .policy(json!({
            "name": "ssn-fpe",
            "type_rules": { "us_ssn": { "mode": "format_preserving" } },
            "allowed_roles": ["support"],
            "allowed_purposes": ["fraud_review"],
        }))
        .await
}

pub(crate) fn sha256(bytes: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .to_vec()
}

#[tokio::test]
async fn mask_keeps_the_shape_quarantine_moves_and_undo_brings_it_back() {
    let stack = Stack::new(|_| {}).await;
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    let held = seed::s3_bucket(&stack.moto.url(), "held-away").await;
    seed::put_all(
        bucket.as_ref(),
        &[
            ("people.csv", SSNS),
            (
                "contacts.txt",
                b"write to ann.lee@example.com today".as_slice(),
            ),
        ],
    )
    .await;
    let snapshots = seed::s3_bucket(&stack.moto.url(), "lkg-snapshots").await;
    let admin = stack.admin();
    // Snapshots go to a bucket of their own.
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "HR", "provider": "aws", "config": {
                "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                "external_id": admin.external_id().await,
                "region": "us-east-1",
                "buckets": ["people-data"],
                "lkg_location": "lkg-snapshots",
            }})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let connector = body["data"]["id"].as_str().unwrap().to_owned();
    policy_of(
        &admin,
        "ssn-mask",
        "enforced",
        "us_ssn",
        0.5,
        "{ type: mask, config: { keep_last: 4, char: '#' } }",
    )
    .await;
    policy_of(
        &admin,
        "contacts-away",
        "enforced",
        "contact",
        0.5,
        "{ type: quarantine, config: { destination: { bucket: held-away, prefix: 'q/' } } }",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 2).await;
    let by = |action: &str, key: &str| {
        done.iter()
            .find(|r| r["action_type"] == action && r["object_key"] == key)
            .unwrap_or_else(|| panic!("no {action} of {key}: {done:?}"))
            .clone()
    };
    let masked = by("mask", "people.csv");
    let quarantined_txt = by("quarantine", "contacts.txt");
    assert_eq!(masked["status"], "receipted", "{masked}");
    assert_eq!(masked["safety_class"], "destructive");
    assert_eq!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        b"name,ssn\nAnn Lee,###-##-9999\nBo Chan,###-##-1120\n"
    );
    // The snapshot went to the connector's lkg_location bucket.
    assert_eq!(
        masked["lkg_location"]["bucket"], "lkg-snapshots",
        "{masked}"
    );
    let key = masked["lkg_location"]["key"].as_str().unwrap();
    assert!(key.starts_with(".dps-lkg/") && key.ends_with("/people-data/people.csv"));
    assert_eq!(read(snapshots.as_ref(), key).await.unwrap(), SSNS);
    verify_receipt(&admin, &masked, "executed").await;
    assert_eq!(quarantined_txt["status"], "receipted", "{quarantined_txt}");
    assert_eq!(read(bucket.as_ref(), "contacts.txt").await, None);
    let dest = quarantined_txt["lkg_location"]["key"].as_str().unwrap();
    assert_eq!(quarantined_txt["lkg_location"]["bucket"], "held-away");
    assert!(dest.starts_with("q/.dps-quarantine/"), "{dest}");
    assert_eq!(
        read(held.as_ref(), dest).await.unwrap(),
        b"write to ann.lee@example.com today"
    );
    verify_receipt(&admin, &quarantined_txt, "executed").await;
    // The findings and the risk follow at once: the email left with its object.
    let findings_of = |status: &'static str| {
        let admin = &admin;
        async move {
            let (_, body) = admin
                .send(
                    Method::GET,
                    &format!("/findings?resource=people-data/contacts.txt&status={status}"),
                    None,
                )
                .await;
            body["data"].as_array().unwrap().len()
        }
    };
    assert_eq!(
        (findings_of("open").await, findings_of("resolved").await),
        (0, 1)
    );
    // The object's risk is recomputed from the queue within a second or so.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, risk) = admin
            .send(Method::GET, "/governance/risk-scores?level=file", None)
            .await;
        let gone = risk["data"].as_array().unwrap().iter().all(|r| {
            !r["entity_id"].as_str().unwrap().ends_with("contacts.txt") || r["risk_score"] == 0
        });
        if gone {
            break;
        }
        assert!(Instant::now() < deadline, "{risk}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Undo moves the quarantined object back, byte for byte.
    let id = quarantined_txt["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        read(bucket.as_ref(), "contacts.txt").await.unwrap(),
        b"write to ann.lee@example.com today"
    );
    assert_eq!(read(held.as_ref(), dest).await, None);
    assert_eq!(
        (findings_of("open").await, findings_of("resolved").await),
        (1, 0)
    );

    // An undo cut short after it put the snapshot back left the original in place and the
    // remediation receipted (here the original is written back by hand): asked again, it ends
    // without `force`, since the object is exactly what the snapshot holds.
    seed::put_all(bucket.as_ref(), &[("people.csv", SSNS)]).await;
    let id = masked["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "undone", "{body}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), SSNS);
    assert_eq!(
        read(snapshots.as_ref(), key).await,
        None,
        "the spent snapshot goes"
    );
    // The counts the metrics read, kept by triggers as the requests moved from planned to
    // undone, are the table's own.
    #[derive(QueryableByName, Debug, PartialEq)]
    struct State {
        #[diesel(sql_type = Text)]
        status: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = stack.platform.conn().await;
    let table: Vec<State> = diesel::sql_query(
        "SELECT status, count(*) AS n FROM remediation_requests GROUP BY status ORDER BY status",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let kept: Vec<State> = diesel::sql_query(
        "SELECT status, sum(requests)::bigint AS n FROM remediation_status_counts \
          GROUP BY status HAVING sum(requests) <> 0 ORDER BY status",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert!(table.iter().any(|s| s.status == "undone"), "{table:?}");
    assert_eq!(kept, table);
}

/// people.csv holding [`PEOPLE`] and a connector to it, scanned before any policy exists, so
/// nothing runs yet; returns the bucket and the connector id.
async fn people_scanned_before_any_policy(
    stack: &Stack,
    admin: &Client<'_>,
) -> (std::sync::Arc<dyn object_store::ObjectStore>, String) {
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", PEOPLE)]).await;
    let connector = crate::scans::connector(admin, "HR", "people-data").await;
    crate::scans::full_scan(admin, &connector).await;
    (bucket, connector)
}

/// An enforced policy masking SSNs, then an enforced reconciliation acting on what the scans
/// found before it; returns the remediations once the one it plans has ended.
async fn masked_by_reconciliation(admin: &Client<'_>) -> Vec<Value> {
    ssn_mask_policy(admin).await;
    crate::reconcile::reconcile(admin, json!({"mode": "enforced"})).await;
    ended(admin, 1).await
}

#[tokio::test]
async fn a_concurrent_change_is_never_overwritten_and_undo_refuses_a_changed_object() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let (bucket, connector) = people_scanned_before_any_policy(&stack, &admin).await;
    // Someone changes the object after the scan: the plan is for a version that is gone.
    let changed = b"name,ssn\nZed,123-45-6789\n";
    bucket
        .put(&ObjectPath::from("people.csv"), changed.to_vec().into())
        .await
        .unwrap();
    let done = masked_by_reconciliation(&admin).await;
    assert_eq!(done[0]["status"], "failed", "{done:?}");
    assert_eq!(done[0]["reason"], "object_changed", "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), changed);
    assert_eq!(done[0]["lkg_available"], false, "{done:?}");

    // The next scan plans again for the new version, which is masked.
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 2).await;
    let masked = done.iter().find(|r| r["status"] == "receipted").unwrap();
    assert_eq!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        b"name,ssn\nZed,***-**-6789\n"
    );
    // A change after the remediation makes undo refuse, unless forced.
    bucket
        .put(
            &ObjectPath::from("people.csv"),
            b"edited later".to_vec().into(),
        )
        .await
        .unwrap();
    let id = masked["remediation_id"].as_str().unwrap();
    let path = format!("/governance/remediations/{id}/undo");
    let (status, body) = admin.send(Method::POST, &path, None).await;
    assert_eq!(status, 409, "{body}");
    crate::area_b_error(&body, "object_changed_since_remediation");
    assert_eq!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        b"edited later"
    );
    let (status, body) = admin
        .send(Method::POST, &path, Some(json!({"force": true})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), changed);
    // The version the forced undo wrote over was copied first, beside the snapshot.
    let lkg = masked["lkg_location"]["key"].as_str().unwrap();
    assert_eq!(
        read(bucket.as_ref(), &format!("{lkg}.displaced-by-undo"))
            .await
            .unwrap(),
        b"edited later"
    );
    let (status, body) = admin
        .send(Method::POST, &path, Some(json!({"force": "yes"})))
        .await;
    assert_eq!(status, 400, "{body}");
}

/// A finding whose value is not found again in the object (the detector or the tenant's
/// classifiers changed since the scan) fails the request `values_not_found`: nothing is
/// reported remediated while its value stays in the object, the object is untouched, and no
/// snapshot is taken of an object that cannot be rewritten.
#[tokio::test]
async fn a_value_not_found_again_fails_the_request_before_any_snapshot() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let (bucket, _connector) = people_scanned_before_any_policy(&stack, &admin).await;
    // One SSN finding's field stops naming where its values are, as when the detector reads
    // the object's columns differently than it did.
    let mut conn = stack.platform.conn().await;
    let changed = diesel::sql_query(
        "UPDATE findings SET field = field || ' (renamed)'
          WHERE finding_id = (SELECT finding_id FROM findings
                               WHERE pii_type = 'us_ssn' ORDER BY finding_id LIMIT 1)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(changed, 1);
    let done = masked_by_reconciliation(&admin).await;
    assert_eq!(done[0]["status"], "failed", "{done:?}");
    assert_eq!(done[0]["reason"], "values_not_found", "{done:?}");
    assert_eq!(done[0]["lkg_available"], false, "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), PEOPLE);
    let listed: Vec<String> = {
        use futures::TryStreamExt as _;
        bucket
            .list(None)
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .unwrap()
    };
    assert_eq!(listed, ["people.csv"], "no snapshot was taken");
    let failed = audited(&admin, "action_failed").await;
    assert_eq!(failed.len(), 1, "{failed:?}");
}

/// Bytes stored encoded for transfer (`Content-Encoding`) are not the content readers see, so
/// they are not rewritten in place, even when detection reads values in them (a brotli or
/// deflate stream may hold literal text): the request fails before any snapshot.
#[tokio::test]
async fn an_object_stored_with_a_content_encoding_is_not_rewritten() {
    use object_store::{Attribute, AttributeValue};
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    let encoded = object_store::Attributes::from_iter([
        (Attribute::ContentType, AttributeValue::from("text/csv")),
        (Attribute::ContentEncoding, AttributeValue::from("br")),
    ]);
    seed::put_with(bucket.as_ref(), "people.csv", SSNS, encoded).await;
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    ssn_mask_policy(&admin).await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "failed", "{done:?}");
    assert_eq!(
        done[0]["reason"], "unsupported_content:compressed",
        "{done:?}"
    );
    assert_eq!(done[0]["lkg_available"], false, "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), SSNS);
}

/// An archive's values are found member by member, but an archive is never rewritten in
/// place: a mask ends `failed` with `unsupported_format`, audited, the object untouched and no
/// snapshot taken. Quarantine is the action for archives.
#[tokio::test]
async fn a_mask_of_values_in_a_zip_fails_as_unsupported_format() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    let zip = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/formats/export.zip"),
    )
    .unwrap();
    seed::put_all(bucket.as_ref(), &[("export.zip", zip.as_slice())]).await;
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    ssn_mask_policy(&admin).await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "failed", "{done:?}");
    assert_eq!(done[0]["reason"], "unsupported_format", "{done:?}");
    assert_eq!(done[0]["lkg_available"], false, "{done:?}");
    assert_eq!(read(bucket.as_ref(), "export.zip").await.unwrap(), zip);
    let failed = audited(&admin, "action_failed").await;
    assert!(!failed.is_empty(), "the failure is audited");
}

/// A snapshot that no longer holds the original bytes is not restored: undo would write
/// something else and call it the original.
#[tokio::test]
async fn undo_refuses_a_snapshot_that_was_changed() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let (bucket, connector) = masked_people(&stack, &admin, SSNS).await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");
    let masked = read(bucket.as_ref(), "people.csv").await.unwrap();
    let lkg = done[0]["lkg_location"]["key"].as_str().unwrap();
    bucket
        .put(&ObjectPath::from(lkg), b"not the original".to_vec().into())
        .await
        .unwrap();
    let id = done[0]["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 409, "{body}");
    crate::area_b_error(&body, "snapshot_changed");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), masked);
}

#[tokio::test]
async fn a_gate_that_cannot_be_read_fails_open_and_says_so_and_only_admins_see_remediations() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let (bucket, connector) = masked_people(&stack, &admin, PEOPLE).await;
    // The tenant chose a 24-hour rollback window.
    let (status, body) = admin
        .send(
            Method::PUT,
            "/settings/lkg-retention",
            Some(serde_json::json!({ "retention_hours": 24 })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The tenant's remediation policy becomes unreadable: the gate fails open, as the spec
    // says, and every record of the action says the gate was unavailable.
    let mut conn = stack.platform.conn().await;
    diesel::sql_query("ALTER TABLE tenant_settings RENAME TO tenant_settings_away")
        .execute(&mut conn)
        .await
        .unwrap();
    crate::scans::full_scan(&admin, &connector).await;
    // The co-signing decision lives in the same row: the executor reads it from the audit log
    // instead (no change ever recorded: disabled), so the remediation proceeds.
    let done = ended(&admin, 1).await;
    let r = &done[0];
    assert_eq!(r["status"], "receipted", "{r}");
    assert_eq!(r["gate"], "gate_unavailable", "{r}");
    // The rollback window the tenant set, read from the audit log with the row away: not the
    // default, signed into the receipt.
    let at = |field: &str| {
        time::OffsetDateTime::parse(
            r[field].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap_or_else(|e| panic!("{field}: {e}: {r}"))
    };
    assert_eq!(
        at("undo_until") - at("executed_at"),
        time::Duration::hours(24),
        "{r}"
    );
    assert_eq!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        b"name,ssn,email\nAnn Lee,***-**-9999,ann.lee@example.com\nBo Chan,***-**-1120,bo@example.com\n"
    );
    let (_, log) = admin
        .send(Method::GET, "/governance/audit-log?limit=100", None)
        .await;
    let executed: Vec<&Value> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.to_string().contains("action_executed"))
        .collect();
    assert_eq!(executed.len(), 1, "{log}");
    assert!(
        executed[0].to_string().contains("gate_unavailable"),
        "{log}"
    );
    diesel::sql_query("ALTER TABLE tenant_settings_away RENAME TO tenant_settings")
        .execute(&mut conn)
        .await
        .unwrap();

    let analyst = Client {
        app: &stack.platform,
        token: stack.platform.token("acme", "al", &["analyst"]),
    };
    let (status, _) = analyst
        .send(Method::GET, "/governance/remediations", None)
        .await;
    assert_eq!(status, 403);
    let id = r["remediation_id"].as_str().unwrap();
    let other = Client {
        app: &stack.platform,
        token: stack.platform.token("globex", "gil", &["admin"]),
    };
    let (status, body) = other
        .send(Method::GET, &format!("/governance/remediations/{id}"), None)
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = undo(&other, id, None).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = admin
        .send(Method::GET, "/governance/remediations?status=done", None)
        .await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn after_the_rollback_window_undo_is_gone_and_the_sweeper_deletes_the_snapshot() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let (bucket, _connector, r, lkg) = masked_with_snapshot(&stack, &admin).await;
    let id = r["remediation_id"].as_str().unwrap();

    // Inside the window the sweeper leaves the snapshot alone.
    let exec = stack.executor();
    let mut conn = stack.platform.conn().await;
    remediation::sweep::run_once(&mut conn, &exec)
        .await
        .unwrap();
    assert_eq!(read(bucket.as_ref(), &lkg).await.unwrap(), SSNS);

    // The window passes: undo is gone (410), and the sweeper deletes the snapshot.
    diesel::sql_query("UPDATE remediation_runs SET undo_until = now() - interval '1 second'")
        .execute(&mut conn)
        .await
        .unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 410, "{body}");
    crate::area_b_error(&body, "lkg_expired");
    remediation::sweep::run_once(&mut conn, &exec)
        .await
        .unwrap();
    assert_eq!(read(bucket.as_ref(), &lkg).await, None);
    let (_, body) = admin
        .send(Method::GET, &format!("/governance/remediations/{id}"), None)
        .await;
    assert_eq!(body["data"]["lkg_available"], false, "{body}");
    assert_eq!(body["data"]["status"], "receipted", "{body}");
    let (status, body) = undo(&admin, id, Some(json!({"force": true}))).await;
    assert_eq!(status, 410, "{body}");
}

/// A class the tenant denies when the scan plans the action: a `blocked` remediation with a
/// signed receipt and one `action_blocked` entry, the object untouched. Allowing the class
/// later does not run it by itself (a scan of the same object does nothing again); an enforced
/// reconciliation plans it again, under the same action, and it runs.
#[tokio::test]
async fn a_class_denied_at_planning_is_blocked_with_a_receipt_until_an_enforced_reconciliation() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let deny = |classes: Value| {
        let admin = &admin;
        async move {
            let (status, body) = admin
                .send(
                    Method::PUT,
                    "/settings/remediation-policy",
                    Some(json!({ "denied_safety_classes": classes })),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    deny(json!(["destructive"])).await;
    let (bucket, connector) = masked_people(&stack, &admin, SSNS).await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done.len(), 1, "{done:?}");
    let blocked = &done[0];
    assert_eq!(blocked["status"], "blocked", "{blocked}");
    assert_eq!(blocked["gate"], "denied", "{blocked}");
    verify_receipt(&admin, blocked, "blocked").await;
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), SSNS);
    let (status, body) = admin
        .send(Method::GET, "/governance/remediations?status=blocked", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "{body}");
    let blocked = audited(&admin, "action_blocked").await;
    assert_eq!(blocked.len(), 1, "{blocked:?}");

    deny(json!([])).await;
    crate::scans::full_scan(&admin, &connector).await;
    let (_, body) = admin
        .send(Method::GET, "/governance/remediations?limit=100", None)
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "{body}");

    let id = crate::reconcile::reconcile(&admin, json!({"mode": "dry-run"})).await;
    let preview = crate::reconcile::ended(&admin, &id).await;
    assert_eq!(preview["changes_planned"], 1, "{preview}");
    let id = crate::reconcile::reconcile(&admin, json!({"mode": "enforced"})).await;
    let run = crate::reconcile::ended(&admin, &id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["actions_planned"], 1, "{run}");
    let done = ended(&admin, 2).await;
    let masked = done
        .iter()
        .find(|r| r["status"] == "receipted")
        .unwrap_or_else(|| panic!("not run: {done:?}"));
    assert_eq!(masked["gate"], "allowed", "{masked}");
    verify_receipt(&admin, masked, "executed").await;
    assert_eq!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        b"name,ssn\nAnn Lee,***-**-9999\nBo Chan,***-**-1120\n"
    );

    // The list's filters and pages, on the two requests of the one action.
    let policy = masked["policy_id"].as_str().unwrap();
    let count = |query: String| {
        let admin = &admin;
        async move {
            let (status, body) = admin
                .send(
                    Method::GET,
                    &format!("/governance/remediations?{query}"),
                    None,
                )
                .await;
            assert_eq!(status, 200, "{query}: {body}");
            body["data"].as_array().unwrap().len()
        }
    };
    let nil = uuid::Uuid::nil();
    for (query, n) in [
        (format!("policy={policy}"), 2),
        (format!("policy={nil}"), 0),
        (format!("connector={connector}"), 2),
        (format!("connector={nil}"), 0),
        ("action_type=mask".to_owned(), 2),
        ("action_type=tokenize".to_owned(), 0),
        ("status=receipted".to_owned(), 1),
        (
            format!("status=blocked&policy={policy}&action_type=mask"),
            1,
        ),
    ] {
        assert_eq!(count(query.clone()).await, n, "{query}");
    }
    let (_, first) = admin
        .send(Method::GET, "/governance/remediations?limit=1", None)
        .await;
    assert_eq!(first["pagination"]["has_more"], true, "{first}");
    let cursor = first["pagination"]["next_cursor"].as_str().unwrap();
    let (status, second) = admin
        .send(
            Method::GET,
            &format!("/governance/remediations?limit=1&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["pagination"]["has_more"], false, "{second}");
    // Newest first, each once.
    assert_eq!(first["data"][0]["status"], "receipted", "{first}");
    assert_eq!(second["data"][0]["status"], "blocked", "{second}");
}

/// Tokenizing a JSON object keeps it valid JSON of the same length: each SSN, in a field of its
/// own or inside a sentence, becomes a token of its shape, and every other byte is unchanged.
#[tokio::test]
async fn a_tokenized_json_object_stays_valid_json_with_only_the_values_changed() {
    let stack = Stack::new(|_| {}).await;
    let before: &[u8] = br#"{"people": [
  {"name": "Ann Lee", "ssn": "219-09-9999", "email": "ann.lee@example.com", "age": 41},
  {"name": "Bo Chan", "ssn": "078-05-1120", "tags": ["hr", "payroll"]}
], "note": "Ann's SSN 219-09-9999 was checked\ttwice", "count": 2}
"#;
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.json", before)]).await;
    let token_policy = ssn_token_policy(&stack).await;
    let admin = stack.admin();
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    policy_of(
        &admin,
        "ssn-tokenize",
        "enforced",
        "us_ssn",
        0.5,
        &format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}"),
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");

    let after = read(bucket.as_ref(), "people.json").await.unwrap();
    assert_eq!(after.len(), before.len());
    let text = std::str::from_utf8(before).unwrap();
    let spans: Vec<std::ops::Range<usize>> = ["219-09-9999", "078-05-1120"]
        .iter()
        .flat_map(|ssn| text.match_indices(ssn).map(|(at, s)| at..at + s.len()))
        .collect();
    assert_eq!(spans.len(), 3);
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        if spans.iter().any(|s| s.contains(&i)) {
            if [3, 6].contains(&(i - spans.iter().find(|s| s.contains(&i)).unwrap().start)) {
                assert_eq!(*a, b'-', "byte {i}");
            } else {
                assert!(a.is_ascii_digit(), "byte {i}");
            }
        } else {
            assert_eq!(a, b, "byte {i} outside the values changed");
        }
    }
    let parsed: Value = serde_json::from_slice(&after).expect("still JSON");
    let ann = parsed["people"][0]["ssn"].as_str().unwrap();
    assert_ne!(ann, "219-09-9999");
    assert_eq!(parsed["people"][1]["tags"], json!(["hr", "payroll"]));
    assert_eq!(parsed["count"], 2);
    // The same value gets the same token wherever it is in the object.
    assert!(parsed["note"].as_str().unwrap().contains(ann), "{parsed}");
}

/// Masking a JSON object keeps it JSON whatever the values sit in: a bare number becomes a
/// string of the mask, a value after an escape (`\t`) is found without the escape's letter, a
/// byte-order mark is kept and does not shift the values, and a value shorter than `keep_last`
/// is still masked.
#[tokio::test]
async fn masked_json_stays_json_around_numbers_escapes_and_a_byte_order_mark() {
    let stack = Stack::new(|_| {}).await;
    let before: &[u8] = b"\xEF\xBB\xBF{\"rows\": [{\"ssn\": 219099999, \"note\": \"line\\t078-05-1120\"}], \"id\": \"219-09-9999\"}\n";
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.json", before)]).await;
    let admin = stack.admin();
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    ssn_mask_policy(&admin).await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");

    let after = read(bucket.as_ref(), "people.json").await.unwrap();
    let expected: &[u8] = b"\xEF\xBB\xBF{\"rows\": [{\"ssn\": \"*****9999\", \"note\": \"line\\t***-**-1120\"}], \"id\": \"***-**-9999\"}\n";
    assert_eq!(
        String::from_utf8_lossy(&after),
        String::from_utf8_lossy(expected)
    );
    let parsed: Value = serde_json::from_slice(&after[3..]).expect("still JSON");
    assert_eq!(parsed["rows"][0]["ssn"], "*****9999");
}

/// A rewrite's snapshot is an exact copy of the values it protects, so it never goes into a
/// bucket the last posture check saw public: with no `lkg_location`, the object's own; or a
/// public `lkg_location` (posture checks cover it too). Such a request fails
/// `snapshot_would_be_public` before anything is read, copied or written; with a private
/// `lkg_location`, the same mask runs.
#[tokio::test]
async fn a_snapshot_never_goes_into_a_public_bucket() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let url = stack.moto.url();
    let bucket = seed::s3_bucket(&url, "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", SSNS)]).await;
    seed::s3_bucket(&url, "lkg-private").await;
    seed::s3_bucket(&url, "lkg-public").await;
    for public in ["people-data", "lkg-public"] {
        crate::reconcile::s3_put(&url, public, "acl", &[("x-amz-acl", "public-read")], "").await;
    }
    let mut connectors = Vec::new();
    for (name, lkg) in [
        ("in place", None),
        ("kept apart", Some("lkg-private")),
        ("kept in public", Some("lkg-public")),
    ] {
        let mut fields = json!({"buckets": ["people-data"]});
        if let Some(lkg) = lkg {
            fields["lkg_location"] = json!(lkg);
        }
        let id = crate::scans::connector_with(&admin, name, fields).await;
        crate::scans::full_scan(&admin, &id).await;
        connectors.push(id);
    }
    // The scans' posture checks see the object's bucket public for all three, and each
    // snapshot bucket as it is.
    posture_seen(&stack, "bucket = 'people-data' AND public", 3).await;
    posture_seen(&stack, "bucket = 'lkg-private' AND NOT public", 1).await;
    posture_seen(&stack, "bucket = 'lkg-public' AND public", 1).await;

    ssn_mask_policy(&admin).await;
    crate::reconcile::reconcile(&admin, json!({"mode": "enforced"})).await;
    let done = ended(&admin, 3).await;
    let of = |connector: &str| {
        done.iter()
            .find(|r| r["connector_id"] == connector)
            .unwrap_or_else(|| panic!("{connector}: {done:?}"))
            .clone()
    };
    for refused in [&connectors[0], &connectors[2]] {
        let r = of(refused);
        assert_eq!(r["status"], "failed", "{r}");
        assert_eq!(r["reason"], "snapshot_would_be_public", "{r}");
        assert_eq!(r["lkg_available"], false, "{r}");
    }
    let listed = |store: std::sync::Arc<dyn object_store::ObjectStore>| async move {
        use futures::TryStreamExt as _;
        store
            .list(None)
            .map_ok(|meta| meta.location.to_string())
            .try_collect::<Vec<String>>()
            .await
            .unwrap()
    };
    assert_eq!(
        listed(bucket.clone()).await,
        ["people.csv"],
        "no snapshot beside it"
    );
    let public_lkg = seed::s3_bucket(&url, "lkg-public").await;
    assert!(
        listed(public_lkg).await.is_empty(),
        "none in the public lkg bucket"
    );

    let masked = of(&connectors[1]);
    assert_eq!(masked["status"], "receipted", "{masked}");
    assert_eq!(masked["lkg_location"]["bucket"], "lkg-private", "{masked}");
    assert_eq!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        b"name,ssn\nAnn Lee,***-**-9999\nBo Chan,***-**-1120\n"
    );
}

/// A quarantined copy holds the whole object: it never goes into a public bucket, even one no
/// posture check covers (the destination is asked when the quarantine runs). The object stays
/// where it is.
#[tokio::test]
async fn a_quarantine_never_moves_an_object_into_a_public_bucket() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let url = stack.moto.url();
    let bucket = seed::s3_bucket(&url, "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", SSNS)]).await;
    let open = seed::s3_bucket(&url, "open-to-all").await;
    crate::reconcile::s3_put(
        &url,
        "open-to-all",
        "acl",
        &[("x-amz-acl", "public-read")],
        "",
    )
    .await;
    let connector =
        crate::scans::connector_with(&admin, "HR", json!({"buckets": ["people-data"]})).await;
    policy_of(
        &admin,
        "ssn-away",
        "enforced",
        "us_ssn",
        0.5,
        "{ type: quarantine, config: { destination: { bucket: open-to-all } } }",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "failed", "{done:?}");
    assert_eq!(
        done[0]["reason"], "quarantine_destination_is_public",
        "{done:?}"
    );
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), SSNS);
    use futures::TryStreamExt as _;
    let copied: Vec<_> = open.list(None).try_collect().await.unwrap();
    assert!(copied.is_empty(), "{copied:?}");
}

/// Polls until the posture check has seen `n` of the tenant's buckets that match `condition`
/// (SQL over `governance_buckets`).
async fn posture_seen(stack: &Stack, condition: &str, n: i64) {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = stack.platform.conn().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen: Count = diesel::sql_query(format!(
            "SELECT count(*) AS n FROM governance_buckets WHERE {condition}"
        ))
        .get_result(&mut conn)
        .await
        .unwrap();
        if seen.n == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the posture check never saw {condition}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A remediation says what the object's bucket keeps of the content it replaced: with
/// versioning on, the original stays readable as a noncurrent version (the service deletes no
/// version of the customer's), and the remediation says `kept`; S3 without versioning keeps
/// nothing.
#[tokio::test]
async fn a_remediation_says_whether_the_bucket_keeps_the_original_version() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let url = stack.moto.url();
    let versioned = seed::s3_bucket(&url, "people-versioned").await;
    seed::s3_versioning(&url, "people-versioned").await;
    let plain = seed::s3_bucket(&url, "people-plain").await;
    seed::put_all(versioned.as_ref(), &[("people.csv", SSNS)]).await;
    // Under the customer's own KMS key, which the snapshot of it keeps.
    let kms = "arn:aws:kms:us-east-1:123456789012:key/hr";
    seed::s3_put_with_kms(&url, "people-plain", "people.csv", SSNS, kms).await;
    let buckets = json!({"buckets": ["people-versioned", "people-plain"]});
    let connector = crate::scans::connector_with(&admin, "HR", buckets).await;
    crate::scans::full_scan(&admin, &connector).await;
    posture_seen(&stack, "versioning IS NOT NULL", 2).await;

    ssn_mask_policy(&admin).await;
    crate::reconcile::reconcile(&admin, json!({"mode": "enforced"})).await;
    let done = ended(&admin, 2).await;
    let of = |bucket: &str| {
        done.iter()
            .find(|r| r["bucket"] == bucket)
            .unwrap_or_else(|| panic!("{bucket}: {done:?}"))
            .clone()
    };
    let (kept, gone) = (of("people-versioned"), of("people-plain"));
    assert_eq!(kept["status"], "receipted", "{kept}");
    assert_eq!(kept["prior_versions"], "kept", "{kept}");
    assert_eq!(
        seed::s3_versions(&url, "people-versioned", "people.csv").await,
        (2, 0),
        "the original and the masked version"
    );
    assert_eq!(gone["status"], "receipted", "{gone}");
    assert_eq!(gone["prior_versions"], "not_kept", "{gone}");
    let snapshot = gone["lkg_location"]["key"].as_str().unwrap();
    assert_eq!(
        seed::s3_encryption(&url, "people-plain", snapshot).await,
        (Some("aws:kms".to_owned()), Some(kms.to_owned())),
        "the snapshot of the original stays under the customer's key"
    );
    assert_eq!(
        seed::s3_encryption(&url, "people-plain", "people.csv").await,
        (Some("aws:kms".to_owned()), Some(kms.to_owned())),
        "and so does the masked object"
    );
    let (status, body) = undo(&admin, gone["remediation_id"].as_str().unwrap(), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(plain.as_ref(), "people.csv").await.unwrap(), SSNS);
    assert_eq!(
        seed::s3_encryption(&url, "people-plain", "people.csv").await,
        (Some("aws:kms".to_owned()), Some(kms.to_owned())),
        "and the original restored by undo"
    );
    // Every written request says it.
    let (_, listed) = admin
        .send(
            Method::GET,
            "/governance/remediations?status=receipted",
            None,
        )
        .await;
    assert!(
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["prior_versions"].is_string()),
        "{listed}"
    );
}

/// Undo after the remediation's connector was deleted: the rollback window outlives the
/// connector, and undo restores through the configuration its deletion kept.
#[tokio::test]
async fn undo_still_works_after_the_connector_is_deleted() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let (bucket, connector, r, lkg) = masked_with_snapshot(&stack, &admin).await;
    let (status, body) = admin
        .send(Method::DELETE, &format!("/connectors/{connector}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let id = r["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "undone", "{body}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), SSNS);
    assert_eq!(
        read(bucket.as_ref(), &lkg).await,
        None,
        "the spent snapshot goes"
    );
    // Nothing is left to clean up: what the deletion kept goes at the sweeper's next pass.
    let mut conn = stack.platform.conn().await;
    remediation::sweep::run_once(&mut conn, &stack.executor())
        .await
        .unwrap();
    assert_eq!(kept(&mut conn).await, 0);
}

/// How many deleted connectors' storage configurations are kept for their copies.
async fn kept(conn: &mut diesel_async::AsyncPgConnection) -> i64 {
    count(
        conn,
        "SELECT count(*) AS n FROM remediation_retained_storage",
    )
    .await
}

/// A connector deleted right after a mask, by any user of the tenant (an analyst here): its
/// snapshot, the original's only copy, stays in the bucket until the rollback window ends,
/// sweep after sweep, and goes then, through the configuration the deletion kept, which goes
/// once nothing is left to delete.
#[tokio::test]
async fn a_deleted_connectors_snapshot_lives_until_its_window_ends() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let (bucket, connector, r, lkg) = masked_with_snapshot(&stack, &admin).await;
    let id = r["remediation_id"].as_str().unwrap();
    let analyst = Client {
        app: &stack.platform,
        token: stack.platform.token("acme", "ivy", &["analyst"]),
    };
    let (status, body) = analyst
        .send(Method::DELETE, &format!("/connectors/{connector}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let mut conn = stack.platform.conn().await;
    assert_eq!(
        kept(&mut conn).await,
        1,
        "the deletion kept the configuration"
    );

    // Well inside the window, every pass leaves the snapshot alone.
    let exec = stack.executor();
    for _ in 0..3 {
        remediation::sweep::run_once(&mut conn, &exec)
            .await
            .unwrap();
        assert_eq!(read(bucket.as_ref(), &lkg).await.unwrap(), SSNS, "kept");
    }
    let (_, body) = admin
        .send(Method::GET, &format!("/governance/remediations/{id}"), None)
        .await;
    assert_eq!(body["data"]["lkg_available"], true, "{body}");

    // The window passes: the snapshot goes, then what was kept for it.
    diesel::sql_query("UPDATE remediation_runs SET undo_until = now() - interval '1 second'")
        .execute(&mut conn)
        .await
        .unwrap();
    remediation::sweep::run_once(&mut conn, &exec)
        .await
        .unwrap();
    assert_eq!(read(bucket.as_ref(), &lkg).await, None, "deleted");
    assert_ne!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        SSNS,
        "the remediated object stays remediated"
    );
    assert_eq!(
        kept(&mut conn).await,
        0,
        "nothing is kept once nothing is left"
    );
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 410, "{body}");
}

/// Values a tenant's own classifier found are found again and masked, in every object of the
/// scan: the executor reads the classifiers the scan ran with (once per scan, then from its
/// cache) and masks exactly those values, keeping their separators.
#[tokio::test]
async fn a_custom_classifiers_values_are_masked_in_every_object_of_the_scan() {
    let stack = Stack::new(|_| {}).await;
    let bucket = seed::s3_bucket(&stack.moto.url(), "badges").await;
    let objects: [(&str, &[u8]); 2] = [
        ("staff.txt", b"badge EMP-204518 issued to Ann".as_slice()),
        ("visitors.txt", b"badge EMP-771203 returned".as_slice()),
    ];
    seed::put_all(bucket.as_ref(), &objects).await;
    let admin = stack.admin();
    crate::classifiers::employee_id(&admin).await;
    let connector = crate::scans::connector(&admin, "Badges", "badges").await;
    policy_of(
        &admin,
        "badge-mask",
        "enforced",
        "custom:employee_id",
        0.5,
        "{ type: mask, config: { keep_last: 2 } }",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 2).await;
    assert!(done.iter().all(|r| r["status"] == "receipted"), "{done:?}");
    assert_eq!(
        read(bucket.as_ref(), "staff.txt").await.unwrap(),
        b"badge ***-****18 issued to Ann"
    );
    assert_eq!(
        read(bucket.as_ref(), "visitors.txt").await.unwrap(),
        b"badge ***-****03 returned"
    );
}

/// A loopback proxy to the storage that holds every new connection until the test lets it
/// through: the test can look at the world while a storage call waits.
struct HoldingProxy {
    url: String,
    held: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    through: std::sync::Arc<tokio::sync::Semaphore>,
    /// Every connection's task, to close them all between two runs (`close_all`).
    connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl HoldingProxy {
    async fn start(upstream: &str) -> Self {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let held = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let through = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
        let connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>> =
            std::sync::Arc::default();
        let (h, t, c) = (
            held.clone(),
            through.clone(),
            std::sync::Arc::clone(&connections),
        );
        drop(tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let (held, through, upstream) = (h.clone(), t.clone(), upstream.clone());
                let task = tokio::spawn(async move {
                    held.fetch_add(1, Ordering::SeqCst);
                    through.acquire().await.unwrap().forget();
                    held.fetch_sub(1, Ordering::SeqCst);
                    let mut server = tokio::net::TcpStream::connect(upstream).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                c.lock().unwrap().push(task.abort_handle());
            }
        }));
        HoldingProxy {
            url,
            held,
            through,
            connections,
        }
    }

    /// Closes every connection, waiting or let through, and gives the client time to see it:
    /// one the client opened while reusing another (connections race) can sit idle in its pool,
    /// already let through, and a later run's request on it would never wait here.
    async fn close_all(&self) {
        for task in self.connections.lock().unwrap().drain(..) {
            task.abort();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        // A connection aborted while it waited never counted itself out, and no permit may
        // be left over for the next run: either would let a call pass without the check.
        self.held.store(0, std::sync::atomic::Ordering::SeqCst);
        self.through.forget_permits(usize::MAX);
    }

    fn held(&self) -> usize {
        std::sync::atomic::AtomicUsize::load(&self.held, std::sync::atomic::Ordering::SeqCst)
    }

    fn let_one_through(&self) {
        self.through.add_permits(1);
    }
}

/// Lets `run`'s storage calls through `proxy` one at a time, and proves before each that the
/// pool's only connection is free while the call waits; returns what `run` returned and how
/// many calls waited.
async fn free_during_storage_calls<T>(
    proxy: &HoldingProxy,
    pool: &db::Pool,
    run: tokio::task::JoinHandle<T>,
) -> (T, usize) {
    let mut calls = 0;
    loop {
        while proxy.held() == 0 && !run.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if run.is_finished() {
            return (run.await.unwrap(), calls);
        }
        testkit::assert_pool_free(pool, Duration::from_secs(5), "a run waiting on the storage")
            .await;
        proxy.let_one_through();
        calls += 1;
    }
}

/// The executor gives its database connection back while it waits on the storage: with a pool
/// of one connection, that connection is free during each of a remediation's storage calls
/// (the read, the snapshot's copy, the write), and the remediation still ends receipted. So
/// does the expiry sweeper during a snapshot's delete.
#[tokio::test]
async fn the_executor_holds_no_connection_while_it_waits_on_the_storage() {
    let stack = Stack::new(|env| {
        // The test runs the executor itself, on its own pool.
        env.insert("DPS_REMEDIATION_EXECUTOR".into(), "false".into());
    })
    .await;
    let admin = stack.admin();
    let (bucket, _) = people_scanned_before_any_policy(&stack, &admin).await;
    ssn_mask_policy(&admin).await;
    crate::reconcile::reconcile(&admin, json!({"mode": "enforced"})).await;
    let mut conn = stack.platform.conn().await;
    #[derive(QueryableByName)]
    struct Status {
        #[diesel(sql_type = Text)]
        status: String,
    }
    let status = async |conn: &mut db::AsyncPgConnection| -> Vec<String> {
        diesel::sql_query("SELECT status FROM remediation_requests")
            .load::<Status>(conn)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.status)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while status(&mut conn).await != ["planned"] {
        assert!(Instant::now() < deadline, "no request planned");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let proxy = HoldingProxy::start(&stack.moto.url()).await;
    let mut exec = stack.executor();
    exec.cloud = seed::moto_cloud(&proxy.url);
    let pool = testkit::pool_of_one(&stack.platform.db.url);
    let run = tokio::spawn({
        let (pool, exec) = (pool.clone(), exec.clone());
        async move { remediation::execute::run_once_pooled(&pool, &exec).await }
    });
    let (ran, calls) = free_during_storage_calls(&proxy, &pool, run).await;
    assert!(ran.unwrap());
    assert!(calls >= 3, "{calls} storage calls waited at the proxy");
    assert_eq!(status(&mut conn).await, ["receipted"]);

    // The expiry sweeper too: the snapshot's delete waits with the connection free.
    proxy.close_all().await;
    diesel::sql_query("UPDATE remediation_runs SET undo_until = now() - interval '1 second'")
        .execute(&mut conn)
        .await
        .unwrap();
    let sweep = tokio::spawn({
        let pool = pool.clone();
        async move { remediation::sweep::run_once_pooled(&pool, &exec).await }
    });
    let (swept, calls) = free_during_storage_calls(&proxy, &pool, sweep).await;
    assert_eq!(swept.unwrap(), 1);
    assert!(calls >= 1, "{calls} storage calls waited at the proxy");
    assert_eq!(
        read(bucket.as_ref(), "people.csv").await.unwrap(),
        b"name,ssn,email\nAnn Lee,***-**-9999,ann.lee@example.com\nBo Chan,***-**-1120,bo@example.com\n"
    );
}

/// Starts a full scan of `connector` and runs it to the end with a worker outside the
/// platform: only the deployment configuration and its own cloud identity, through the
/// coordinator API. Returns the scan as it ended.
async fn scanned_from_outside(stack: &Stack, admin: &Client<'_>, connector: &str) -> Value {
    let (scan, config) = crate::scans::enumerated(admin, connector, json!({})).await;
    let env = &config["environment"];
    let scan_id: ids::ScanId = scan.parse().unwrap();
    let mut coordinator = scan_worker::Remote::new(
        &egress::Egress {
            allow_private: true,
        },
        env["COORDINATOR_URL"].as_str().unwrap(),
        scan_id,
        env["AUTH_TOKEN"].as_str().unwrap().to_owned(),
        None,
    )
    .unwrap();
    let worker = scans::Worker::without_keys(
        "customer-k8s/job-0".into(),
        seed::moto_cloud(&stack.moto.url()),
    );
    let summary = scan_worker::work_through(&mut coordinator, &worker, scan_id)
        .await
        .unwrap();
    assert_eq!(summary.status, scans::Status::Completed);
    crate::scans::finished(admin, &scan).await
}

/// A worker outside the platform finds what one inside does, and the platform acts on it: its
/// findings' fields lead remediation to the values, and on a rescan the tokens written into the
/// object are known from the lookup keys the claim hands over (no value sent), not taken for
/// new PII.
#[tokio::test]
async fn a_worker_outside_the_platform_feeds_remediation_and_knows_the_tenants_tokens() {
    let stack = Stack::new(|env| {
        env.insert("DPS_SCAN_WORKERS".into(), "0".into());
    })
    .await;
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", PEOPLE)]).await;
    let token_policy = ssn_token_policy(&stack).await;
    let admin = stack.admin();
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    let tokenize =
        format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}");
    policy_of(&admin, "ssn-tokenize", "enforced", "us_ssn", 0.5, &tokenize).await;

    let done = scanned_from_outside(&stack, &admin, &connector).await;
    assert_eq!(
        done["progress"]["findings_count"], 4,
        "two SSNs, two emails: {done}"
    );
    let r = &ended(&admin, 1).await[0];
    assert_eq!(r["status"], "receipted", "{r}");
    let after = read(bucket.as_ref(), "people.csv").await.unwrap();
    let text = String::from_utf8(after).unwrap();
    assert!(
        !text.contains("219-09-9999") && !text.contains("078-05-1120"),
        "{text}"
    );

    // The rescan, from outside again: the tokens are the tenant's own, remediated.
    scanned_from_outside(&stack, &admin, &connector).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin
            .send(Method::GET, "/findings?pii_type=us_ssn&status=open", None)
            .await;
        // people.csv's two SSNs are one finding.
        let ssns = body["data"].as_array().unwrap().clone();
        if ssns.len() == 1
            && ssns[0]["occurrences"] == 2
            && ssns[0]["remediation_status"] == "completed"
        {
            break;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_, all) = admin
        .send(Method::GET, "/governance/remediations", None)
        .await;
    assert_eq!(
        all["data"].as_array().unwrap().len(),
        1,
        "nothing planned again: {all}"
    );
}

/// A storage that fails under a remediation: the request's reason, the API and the audit log
/// carry only a code from the closed list, never the provider's or the HTTP client's own text
/// (which names addresses, role ARNs and object keys). The text goes to the operator's log.
#[tokio::test]
async fn a_storage_failure_is_a_reason_code_never_the_providers_words() {
    let mut stack = Stack::new(|_| {}).await;
    // Borrows the service alone, so that the storage can be stopped below.
    let admin = Client {
        app: &stack.platform,
        token: stack.platform.token("acme", "ann", &["admin"]),
    };
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("people.csv", SSNS)]).await;
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    crate::scans::full_scan(&admin, &connector).await;
    // The storage goes away, then an enforced reconciliation plans a mask of what the scan
    // found: every call the executor makes to the storage fails.
    stack.moto.stop();
    ssn_mask_policy(&admin).await;
    crate::reconcile::reconcile(&admin, json!({"mode": "enforced"})).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let remediation = loop {
        let (status, body) = admin
            .send(Method::GET, "/governance/remediations", None)
            .await;
        assert_eq!(status, 200, "{body}");
        if let Some(r) = body["data"]
            .as_array()
            .and_then(|all| all.iter().find(|r| r["reason"].is_string()))
        {
            break r.clone();
        }
        assert!(Instant::now() < deadline, "no reason yet: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let reason = remediation["reason"].as_str().unwrap();
    assert!(
        ["identity", "network"].contains(&reason),
        "a bare code: {remediation}"
    );
    assert_eq!(remediation["status"], "planned", "retried: {remediation}");
    let (_, log) = admin
        .send(Method::GET, "/governance/audit-log?limit=100", None)
        .await;
    for shown in [remediation.to_string(), log.to_string()] {
        for words in ["127.0.0.1", "http://", "error sending request", "STS"] {
            assert!(!shown.contains(words), "{words} in {shown}");
        }
    }
}

/// A vault filled with format-preserving date tokens, one for every date of 1900 to 2099 in one
/// layout, hides no real date of birth: a value counts as a token only where a remediation wrote
/// it into that object. The real dates are open findings, alerted and matched by the enforced
/// policy; once a remediation tokenizes them, a rescan knows its tokens for what they are.
#[tokio::test]
async fn a_vault_full_of_date_tokens_hides_no_real_date_of_birth() {
    let stack = Stack::new(|_| {}).await;
    let admin = stack.admin();
    let token_policy = stack
        .tokens
        .policy(json!({
            "name": "dob-fpe",
            "type_rules": { "dob": { "mode": "format_preserving" } },
            "allowed_roles": ["support"],
            "allowed_purposes": ["fraud_review"],
        }))
        .await;
    // Every date of the layout, tokenized by a caller who may tokenize, choosing
    // format-preserving output per item.
    let first = time::macros::date!(1900 - 01 - 01);
    let days = (time::macros::date!(2099 - 12 - 31) - first).whole_days() + 1;
    let dates: Vec<String> = (0..days)
        .map(|d| (first + time::Duration::days(d)).to_string())
        .collect();
    for batch in dates.chunks(1000) {
        let items: Vec<Value> = batch
            .iter()
            .map(|d| json!({"value": d, "pii_type": "dob", "mode": "format_preserving"}))
            .collect();
        let (status, body) = stack
            .tokens
            .tokenize(json!({"policy_id": token_policy, "items": items}))
            .await;
        assert_eq!(status, 200, "{}", body["error"]);
        // Once every surrogate of the shape is taken, the rest cannot be tokenized: the vault
        // is full of them, which is the point.
        let failed: Vec<&Value> = body["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] != "TOKENIZED" && r["error"]["code"] != "SURROGATE_EXHAUSTED")
            .collect();
        assert!(failed.is_empty(), "{failed:?} of {:?}", &batch[..2]);
    }

    // Forty real dates of birth in that layout.
    let mut csv = String::from("name,dob\n");
    for i in 0..40 {
        let born = time::macros::date!(1951 - 02 - 03) + time::Duration::days(i * 397);
        csv.push_str(&format!("Employee {i},{born}\n"));
    }
    // Most of them equal a token in the vault: what used to hide them. Which dates the tokens
    // take depends on the tenant's random keys (33 to 40 of the 40 in runs so far), so the
    // check asks for half, which is as much the point.
    let mut conn = stack.platform.conn().await;
    let mut equal_to_a_token = 0;
    for line in csv.lines().skip(1) {
        let born = line.split(',').nth(1).unwrap();
        let key = tokenize_core::lookup("acme", "dob", born);
        equal_to_a_token += count(
            &mut conn,
            &format!("SELECT count(*) AS n FROM vault_entries WHERE lookup = '{key}'"),
        )
        .await;
    }
    assert!(equal_to_a_token >= 20, "{equal_to_a_token} of 40");
    let bucket = seed::s3_bucket(&stack.moto.url(), "people-data").await;
    seed::put_all(bucket.as_ref(), &[("hr.csv", csv.as_bytes())]).await;
    let connector = crate::scans::connector(&admin, "HR", "people-data").await;
    let receiver = testkit::identity::http_server(|_| (200, Value::Null));
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({"name": "security", "type": "webhook", "url": format!("{}/hook", receiver.url())})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let alert = policy_of(
        &admin,
        "dob-alert",
        "enforced",
        "dob",
        0.3,
        "{ type: alert, config: { channels: [security], severity: high } }",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;

    let found = dob_findings(&admin).await;
    // The column's forty dates of birth are one finding.
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["occurrences"], 40, "{found:?}");
    assert_eq!(found[0]["field"], "dob", "{found:?}");
    for f in &found {
        assert_eq!(f["status"], "open", "{f}");
        assert_ne!(f["remediation_status"], "completed", "not a token: {f}");
        assert_eq!(f["matched_policies"], json!(["dob-alert"]), "{f}");
    }
    // The policy's count of what it matched is recomputed in the background.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin
            .send(Method::GET, &format!("/governance/policies/{alert}"), None)
            .await;
        if body["data"]["findings_matched"] == 40 {
            break;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while receiver.requests().is_empty() {
        assert!(Instant::now() < deadline, "the alert was not delivered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let payload: Value = serde_json::from_str(&receiver.requests()[0].body).unwrap();
    assert_eq!(payload["resource"], "people-data/hr.csv", "{payload}");
    assert_eq!(payload["counts"]["findings"], 40, "{payload}");

    // A remediation tokenizes them; a rescan knows those tokens, there, for the platform's own.
    policy_of(
        &admin,
        "dob-tokenize",
        "enforced",
        "dob",
        0.3,
        &format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}"),
    )
    .await;
    crate::reconcile::reconcile(&admin, json!({"mode": "enforced"})).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");
    let after = String::from_utf8(read(bucket.as_ref(), "hr.csv").await.unwrap()).unwrap();
    assert_ne!(after, csv);
    crate::scans::full_scan(&admin, &connector).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = dob_findings(&admin).await;
        let open_now: Vec<&Value> = found.iter().filter(|f| f["status"] == "open").collect();
        if open_now.len() == 1
            && open_now[0]["occurrences"] == 40
            && open_now
                .iter()
                .all(|f| f["remediation_status"] == "completed")
        {
            break;
        }
        assert!(Instant::now() < deadline, "{found:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(ended(&admin, 1).await.len(), 1, "nothing planned again");
}

/// The tenant's date-of-birth findings, open or not (at most 100).
async fn dob_findings(admin: &Client<'_>) -> Vec<Value> {
    let (status, body) = admin
        .send(Method::GET, "/findings?pii_type=dob&limit=100", None)
        .await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().unwrap().clone()
}

async fn count(conn: &mut diesel_async::AsyncPgConnection, sql: &str) -> i64 {
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(sql)
        .get_result::<N>(conn)
        .await
        .unwrap()
        .n
}

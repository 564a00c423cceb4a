//! Remediation on Azure Blob (Azurite over HTTPS, with an Entra ID token): tokenize rewrites
//! only the values and the tokens go back to them through tokens-api; quarantine moves a blob
//! to another container and undo brings it back byte for byte; a dry-run policy changes no
//! byte; a blob changed after its scan is never overwritten.

use object_store::ObjectStoreExt as _;
use object_store::path::Path as ObjectPath;
use reqwest::Method;
use serde_json::json;
use testkit::{emulators, identity, seed};

use crate::cloud::{ENTRA_CLIENT, ENTRA_SECRET, ENTRA_TENANT, scratch};
use crate::remediation::{
    Stack, detokenized, ended, policy_of, read, served, served_by, ssn_token_policy, undo,
    verify_receipt,
};

const PEOPLE: &[u8] = b"name,ssn\nAnn Lee,219-09-9999\nBo Chan,078-05-1120\n";
const CONTACTS: &[u8] = b"write to ann.lee@example.com today";
const NOTES: &[u8] = b"case notes: born 1985-03-14, see file\n";
const LATER: &[u8] = b"id,ssn\n7,078-05-1120\n";
const SINS: &[u8] = b"employee SIN 130 692 544 on file\n";
const SSNS_LOG: &[u8] = b"2026-11-27 login ok for 219-09-9999\n";

#[tokio::test]
async fn azure_blobs_are_tokenized_quarantined_and_restored_and_dry_runs_change_nothing() {
    let certs = scratch("azurite-remediation");
    let (cert, key) = identity::self_signed_certificate(&certs);
    let azurite = emulators::azurite(Some((&cert, &key)));
    let blob_url = format!("https://127.0.0.1:{}", azurite.port);
    let entra = identity::entra(ENTRA_TENANT, ENTRA_CLIENT, ENTRA_SECRET);
    let ca = std::fs::read(&cert).unwrap();
    let exports = seed::azure_container(&blob_url, &ca, "exports").await;
    let held = seed::azure_container(&blob_url, &ca, "held").await;
    seed::put_all(
        exports.as_ref(),
        &[
            ("contacts.txt", CONTACTS),
            ("notes.txt", NOTES),
            ("later.csv", LATER),
            ("sins.txt", SINS),
        ],
    )
    .await;
    seed::put_with(exports.as_ref(), "people.csv", PEOPLE, served()).await;
    // A log being appended to: Put Blob would make it a block blob, so it is not rewritten.
    seed::azure_append_blob(&blob_url, "exports", "app.log", SSNS_LOG).await;
    let (entra_url, cert_path) = (entra.url(), cert.to_str().unwrap().to_owned());
    let stack = Stack::new(|env| {
        env.insert("AZURE_AUTHORITY_HOST".into(), entra_url);
        env.insert("AZURITE_BLOB_STORAGE_URL".into(), blob_url.clone());
        env.insert("DPS_CLOUD_CA_FILE".into(), cert_path);
    })
    .await;
    let admin = stack.admin();
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "Blob", "provider": "azure", "config": {
                "tenant_id": ENTRA_TENANT,
                "client_id": ENTRA_CLIENT,
                "client_secret": ENTRA_SECRET,
                "storage_account": seed::AZURITE_ACCOUNT,
                "buckets": ["exports"],
            }})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let connector = body["data"]["id"].as_str().unwrap().to_owned();
    // The first scan has no policy; the blob changed after it is then stale for the plan.
    crate::scans::full_scan(&admin, &connector).await;
    exports
        .put(
            &ObjectPath::from("later.csv"),
            b"id,ssn\n8,219-09-9999\n".to_vec().into(),
        )
        .await
        .unwrap();

    let token_policy = ssn_token_policy(&stack).await;
    policy_of(
        &admin,
        "ssn-tokenize",
        "enforced",
        "us_ssn",
        0.5,
        &format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}"),
    )
    .await;
    policy_of(
        &admin,
        "contacts-away",
        "enforced",
        "contact",
        0.5,
        "{ type: quarantine, config: { destination: { bucket: held } } }",
    )
    .await;
    policy_of(&admin, "dob-dry", "dry-run", "dob", 0.3, "{ type: mask }").await;
    policy_of(
        &admin,
        "sin-mask",
        "enforced",
        "ca_sin",
        0.5,
        "{ type: mask, config: { keep_last: 3, char: 'x' } }",
    )
    .await;
    // An enforced reconciliation acts on what the first scan found: people.csv, contacts.txt,
    // and later.csv, which changed since and must not be overwritten.
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({"mode": "enforced"})),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let done = ended(&admin, 5).await;
    let by_key = |key: &str| {
        done.iter()
            .find(|r| r["object_key"] == key)
            .unwrap_or_else(|| panic!("no remediation of {key}: {done:?}"))
            .clone()
    };

    // The append blob is left as it is, and says why.
    let log = by_key("app.log");
    assert_eq!(log["status"], "failed", "{log}");
    assert_eq!(log["reason"], "unsupported_content:append_blob", "{log}");
    assert_eq!(log["lkg_available"], false, "{log}");
    assert_eq!(read(exports.as_ref(), "app.log").await.unwrap(), SSNS_LOG);

    // Tokenize: only the SSNs changed, into tokens that go back to the values.
    let people = by_key("people.csv");
    assert_eq!(people["status"], "receipted", "{people}");
    verify_receipt(&admin, &people, "executed").await;
    let after = String::from_utf8(read(exports.as_ref(), "people.csv").await.unwrap()).unwrap();
    let lines: Vec<&str> = after.lines().collect();
    assert_eq!(lines[0], "name,ssn");
    let tokens: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(lines[1], format!("Ann Lee,{}", tokens[0]));
    assert_eq!(lines[2], format!("Bo Chan,{}", tokens[1]));
    assert_eq!(after.len(), PEOPLE.len());
    assert_eq!(
        seed::attributes_of(exports.as_ref(), "people.csv").await,
        served_by(&people)
    );
    assert!(
        tokens
            .iter()
            .all(|t| t.len() == 11 && t != "219-09-9999" && t != "078-05-1120")
    );
    assert_eq!(
        detokenized(&stack, &tokens).await,
        ["219099999", "078051120"]
    );
    let lkg = people["lkg_location"]["key"].as_str().unwrap();
    assert_eq!(read(exports.as_ref(), lkg).await.unwrap(), PEOPLE);

    // Mask: the SIN keeps its length and shape, and nothing else moved.
    let sins = by_key("sins.txt");
    assert_eq!(sins["status"], "receipted", "{sins}");
    assert_eq!(
        read(exports.as_ref(), "sins.txt").await.unwrap(),
        b"employee SIN xxx xxx 544 on file\n"
    );

    // The blob changed after the scan: never overwritten.
    let later = by_key("later.csv");
    assert_eq!(later["status"], "failed", "{later}");
    assert_eq!(later["reason"], "object_changed", "{later}");
    assert_eq!(
        read(exports.as_ref(), "later.csv").await.unwrap(),
        b"id,ssn\n8,219-09-9999\n"
    );

    // The dry run simulated its mask of notes.txt, and changed no byte.
    let (_, log) = admin
        .send(
            Method::GET,
            "/governance/audit-log?action_type=mask&limit=100",
            None,
        )
        .await;
    let simulated = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "action_simulated" && e["resource"] == "exports/notes.txt")
        .count();
    assert_eq!(simulated, 1, "{log}");
    assert_eq!(read(exports.as_ref(), "notes.txt").await.unwrap(), NOTES);

    // Quarantine moved the blob; undo brings it back byte for byte.
    let contacts = by_key("contacts.txt");
    assert_eq!(contacts["status"], "receipted", "{contacts}");
    assert_eq!(read(exports.as_ref(), "contacts.txt").await, None);
    let dest = contacts["lkg_location"]["key"].as_str().unwrap();
    assert_eq!(read(held.as_ref(), dest).await.unwrap(), CONTACTS);
    let id = contacts["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    verify_receipt(&admin, &body["data"], "undone").await;
    assert_eq!(
        read(exports.as_ref(), "contacts.txt").await.unwrap(),
        CONTACTS
    );
    assert_eq!(read(held.as_ref(), dest).await, None);

    // An undo cut short after it put the snapshot back leaves the original in place and the
    // remediation receipted (here the original is written back by hand). A blob's ETag says
    // nothing of its content, so the undo asked again reads it: it holds what the snapshot
    // holds, and the undo ends without `force`.
    seed::put_all(exports.as_ref(), &[("sins.txt", SINS)]).await;
    let id = sins["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "undone", "{body}");
    assert_eq!(read(exports.as_ref(), "sins.txt").await.unwrap(), SINS);

    // Undo of the tokenization restores the original bytes too.
    let id = people["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(exports.as_ref(), "people.csv").await.unwrap(), PEOPLE);
    assert_eq!(
        seed::attributes_of(exports.as_ref(), "people.csv").await,
        served()
    );
    let _ = std::fs::remove_dir_all(certs);
}

//! Co-signing of remediation receipts end to end: platform-api on moto, with its client
//! certificate and a test CA, and a tenant's co-signer served over mutual TLS on loopback
//! (testkit::cosigner). `optional` co-signs receipts after the fact and never holds a
//! remediation back; `required` runs an action only once its planned receipt is co-signed.

use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl as _;
use reqwest::Method;
use serde_json::{Value, json};
use testkit::cosigner::{Answer, CosignServer, Pki, free_port};

use crate::Client;
use crate::remediation::{PEOPLE, Stack, ended, masked_people, read, undo};

const MASKED: &[u8] = b"name,ssn,email\nAnn Lee,***-**-9999,ann.lee@example.com\nBo Chan,***-**-1120,bo@example.com\n";

/// A stack whose platform holds the test PKI's client certificate and trusts its CA.
async fn stack(pki: &Pki) -> Stack {
    let (cert, key, ca) = (
        pki.client_cert.to_string_lossy().into_owned(),
        pki.client_key.to_string_lossy().into_owned(),
        pki.ca_cert.to_string_lossy().into_owned(),
    );
    Stack::new(move |env| {
        env.insert("DPS_COSIGNING_CLIENT_CERT_FILE".into(), cert);
        env.insert("DPS_COSIGNING_CLIENT_KEY_FILE".into(), key);
        env.insert("DPS_COSIGNING_CA_FILE".into(), ca);
    })
    .await
}

async fn set_cosigning(admin: &Client<'_>, mode: &str, endpoint: &str) {
    let (status, body) = admin
        .send(
            Method::PUT,
            "/settings/cosigning",
            Some(json!({"mode": mode, "endpoint_url": endpoint})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

fn receipt<'a>(remediation: &'a Value, kind: &str) -> Option<&'a Value> {
    remediation["receipts"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["kind"] == kind))
}

/// Waits until the one remediation's `kind` receipt is co-signed; returns the remediation.
async fn cosigned(admin: &Client<'_>, kind: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = admin
            .send(Method::GET, "/governance/remediations", None)
            .await;
        let r = body["data"][0].clone();
        if receipt(&r, kind).is_some_and(|r| r["cosign_status"] == "cosigned") {
            return r;
        }
        assert!(Instant::now() < deadline, "not co-signed: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Both signatures of the `kind` receipt verify: the platform's with the served keys, the
/// co-signer's with its key.
async fn verify_both(admin: &Client<'_>, remediation: &Value, kind: &str, server: &CosignServer) {
    let document = &receipt(remediation, kind).unwrap()["document"];
    let (_, keys) = admin
        .send(Method::GET, "/governance/receipt-keys", None)
        .await;
    let verified = receipts::verify(document, &keys["data"]).unwrap();
    assert_eq!(
        verified.cosigner_kid.as_deref(),
        Some(testkit::cosigner::KID)
    );
    let key = receipts::PublicKey::from_jwk(&server.public_jwk()).unwrap();
    receipts::verify_cosignature(document, &key).unwrap();
}

async fn all_due_now(stack: &Stack, table: &str, column: &str) {
    let mut conn = stack.platform.conn().await;
    diesel::sql_query(format!("UPDATE {table} SET {column} = now()"))
        .execute(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn optional_cosigning_never_holds_a_remediation_back_and_cosigns_once_the_cosigner_is_up() {
    let pki = Pki::new();
    let stack = stack(&pki).await;
    let admin = stack.admin();
    let port = free_port();
    set_cosigning(
        &admin,
        "optional",
        &format!("https://127.0.0.1:{port}/v1/cosign"),
    )
    .await;
    let (bucket, connector) = masked_people(&stack, &admin, PEOPLE).await;
    crate::scans::full_scan(&admin, &connector).await;

    // The co-signer is down: the remediation stands, its receipt waits.
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), MASKED);
    let executed = receipt(&done[0], "executed").unwrap();
    assert_eq!(executed["cosign_status"], "pending", "{executed}");
    assert!(receipt(&done[0], "planned").is_none());

    // Up, and the receipt due again (rather than in 30 s): co-signed.
    let server = CosignServer::start_on(port, &pki, Answer::Sign).await;
    all_due_now(&stack, "remediation_receipts", "cosign_next_at").await;
    let r = cosigned(&admin, "executed").await;
    verify_both(&admin, &r, "executed", &server).await;
    let posts = server.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].body["receipt"]["kind"], "executed");
    assert_eq!(posts[0].body["signatures"].as_array().unwrap().len(), 1);

    // The undo's receipt is co-signed too.
    let id = r["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    let r = cosigned(&admin, "undone").await;
    verify_both(&admin, &r, "undone", &server).await;
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), PEOPLE);
}

#[tokio::test]
async fn required_cosigning_approves_the_planned_receipt_before_the_action_runs() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::Sign).await;
    let stack = stack(&pki).await;
    let admin = stack.admin();
    set_cosigning(&admin, "required", &server.url()).await;
    let (bucket, connector) = masked_people(&stack, &admin, PEOPLE).await;
    crate::scans::full_scan(&admin, &connector).await;

    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), MASKED);
    let planned = receipt(&done[0], "planned").unwrap();
    assert_eq!(planned["cosign_status"], "cosigned", "{planned}");
    verify_both(&admin, &done[0], "planned", &server).await;
    let r = cosigned(&admin, "executed").await;
    verify_both(&admin, &r, "executed", &server).await;

    // The planned receipt went first, once; the executed one after.
    let kinds: Vec<Value> = server
        .posts()
        .iter()
        .map(|p| p.body["receipt"]["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("planned"), json!("executed")]);
    let planned = &server.posts()[0].body["receipt"];
    assert_eq!(planned["etag_before"], r["etag_before"]);
    assert_eq!(planned["sha256_after"], Value::Null);
}

#[tokio::test]
async fn required_cosigning_with_a_bad_signature_leaves_the_object_alone_until_approved() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::WrongSignature).await;
    let stack = stack(&pki).await;
    let admin = stack.admin();
    set_cosigning(&admin, "required", &server.url()).await;
    let (bucket, connector) = masked_people(&stack, &admin, PEOPLE).await;
    crate::scans::full_scan(&admin, &connector).await;

    let deadline = Instant::now() + Duration::from_secs(30);
    let r = loop {
        let (_, body) = admin
            .send(Method::GET, "/governance/remediations", None)
            .await;
        let r = body["data"][0].clone();
        if r["reason"]
            .as_str()
            .is_some_and(|reason| reason.starts_with("cosign_failed:"))
        {
            break r;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(r["status"], "planned", "{r}");
    assert_eq!(r["reason"], "cosign_failed:bad_signature", "{r}");
    assert_eq!(r["receipts"], json!([]), "{r}");
    assert_eq!(r["lkg_available"], false);
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), PEOPLE);

    // The co-signer signs properly now; the request, retried, runs.
    server.answer(Answer::Sign);
    all_due_now(&stack, "remediation_requests", "next_attempt_at").await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "receipted", "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), MASKED);
    verify_both(&admin, &done[0], "planned", &server).await;
}

/// The deny-list is a brake a tenant may pull while a remediation is under way: denied while
/// its planned receipt is with the co-signer (past the gate it met when it started), the mask
/// is blocked before it writes, and the object keeps its values.
#[tokio::test]
async fn a_class_denied_while_a_remediation_runs_blocks_it_before_it_writes() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::SignAfterMs(2000)).await;
    let stack = stack(&pki).await;
    let admin = stack.admin();
    set_cosigning(&admin, "required", &server.url()).await;
    let (bucket, connector) = masked_people(&stack, &admin, PEOPLE).await;
    crate::scans::full_scan(&admin, &connector).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.posts().is_empty() {
        assert!(Instant::now() < deadline, "the co-signer was never asked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, body) = admin
        .send(
            Method::PUT,
            "/settings/remediation-policy",
            Some(json!({"denied_safety_classes": ["destructive"]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "blocked", "{done:?}");
    assert_eq!(read(bucket.as_ref(), "people.csv").await.unwrap(), PEOPLE);
}

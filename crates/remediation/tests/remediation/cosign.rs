//! Co-signing against a real mutual-TLS co-signer on loopback (testkit::cosigner: a test CA,
//! a server certificate and the platform's client certificate, made with openssl): what the
//! client accepts, the address rules, `required` mode stopping a request before it touches
//! anything, and `optional` mode retrying a receipt until the co-signer is up. (Executed
//! remediations co-signed end to end, over HTTP against moto: tests/tests/it/remediation_cosigning.rs.)

use std::time::Duration;

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Jsonb, Nullable, Text};
use diesel_async::RunQueryDsl as _;
use receipts::{PublicKey, SignedReceipt};
use remediation::{CosignError, Cosigner};
use serde_json::json;
use testkit::cosigner::{Answer, CosignServer, Pki, free_port};

use crate::{Env, acme, admin, executor_with, plan_one_mask};

const OPEN: egress::Egress = egress::Egress {
    allow_private: true,
};

fn cosigner(pki: &Pki, egress: egress::Egress) -> Cosigner {
    Cosigner::new(Some(&pki.client_identity()), Some(&pki.ca_pem()), egress)
        .unwrap()
        .with_timeout(Duration::from_secs(2))
}

fn document() -> SignedReceipt {
    let (master, _) = keys::MasterKey::generate().unwrap();
    receipts::Signer::from_master(&master)
        .sign_receipt(json!({"receipt_id": "r-1", "kind": "executed", "n": 1.5}))
        .unwrap()
}

fn key_of(server: &CosignServer) -> PublicKey {
    PublicKey::from_jwk(&server.public_jwk()).unwrap()
}

#[tokio::test]
async fn the_test_cosigner_refuses_a_client_without_the_certificate() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::Sign).await;
    boot::install_tls_provider();
    let roots = reqwest::Certificate::from_pem_bundle(&pki.ca_pem()).unwrap();
    let anonymous = reqwest::Client::builder()
        .tls_certs_merge(roots)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let document = document();
    let sent = anonymous
        .post(server.url())
        .json(&document.to_value())
        .send()
        .await;
    assert!(sent.is_err(), "{sent:?}");
    assert!(server.refused() >= 1);
    assert!(server.requests().is_empty());

    // With the platform's certificate the same call is co-signed, and the co-signature
    // verifies with the co-signer's key over the receipt's canonical bytes.
    let cosigned = cosigner(&pki, OPEN)
        .cosign(&server.url(), &document)
        .await
        .unwrap();
    receipts::verify_cosignature(&cosigned.to_value(), &key_of(&server)).unwrap();
    let cosignature = cosigned.signature(receipts::SignerRole::Cosigner).unwrap();
    assert_eq!(cosignature.kid, testkit::cosigner::KID);
    let posts = server.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].path, "/v1/cosign");
    assert_eq!(
        posts[0].body,
        document.to_value(),
        "the signed document is posted"
    );
    assert_eq!(
        server.requests().last().map(|r| r.path.clone()).as_deref(),
        Some("/.well-known/jwks.json")
    );
}

#[tokio::test]
async fn only_a_verified_cosignature_is_accepted() {
    let pki = Pki::new();
    let client = cosigner(&pki, OPEN);
    let server = CosignServer::start(&pki, Answer::WrongSignature).await;
    let cases = [
        (Answer::WrongSignature, CosignError::BadSignature),
        (Answer::UnknownKid, CosignError::UnknownKid),
        (Answer::Malformed, CosignError::Malformed("not JSON")),
        (Answer::Status(503), CosignError::Status(503)),
        (Answer::Never, CosignError::Timeout(2)),
    ];
    for (answer, expected) in cases {
        server.answer(answer);
        assert_eq!(
            client.cosign(&server.url(), &document()).await,
            Err(expected),
            "{answer:?}"
        );
    }
    // Down: nothing listens.
    let down = format!("https://127.0.0.1:{}/v1/cosign", free_port());
    let error = client.cosign(&down, &document()).await.unwrap_err();
    assert!(matches!(error, CosignError::Unreachable(_)), "{error}");
    // The messages never carry the URL.
    assert!(!error.to_string().contains("/v1/cosign"), "{error}");
    // http is refused even where private networks are allowed: mutual TLS needs TLS.
    assert_eq!(
        client
            .cosign(&format!("http://127.0.0.1:{}/", server.port), &document())
            .await,
        Err(CosignError::NotHttps)
    );
    // A deployment without the certificate fails; it never skips co-signing.
    let without = Cosigner::new(None, Some(&pki.ca_pem()), OPEN).unwrap();
    assert_eq!(
        without.cosign(&server.url(), &document()).await,
        Err(CosignError::NoCertificate)
    );
}

#[tokio::test]
async fn private_addresses_are_refused_unless_private_networks_are_allowed() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::Sign).await;
    let strict = cosigner(&pki, egress::Egress::default());
    assert_eq!(
        strict.cosign(&server.url(), &document()).await,
        Err(CosignError::Refused(egress::EgressError::Forbidden(
            "loopback"
        )))
    );
    // A name is checked on the addresses it resolves to, before connecting.
    let by_name = format!("https://localhost:{}/v1/cosign", server.port);
    // The tenant is told only that no connection was made (which address, and why, is for the
    // service's log: a name's addresses are not the tenant's to learn this way).
    let error = strict.cosign(&by_name, &document()).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("an address the service may not call"),
        "{error}"
    );
    assert!(!error.to_string().contains("loopback"), "{error}");
    assert!(server.requests().is_empty() && server.refused() == 0);
    assert!(
        cosigner(&pki, OPEN)
            .cosign(&by_name, &document())
            .await
            .is_ok()
    );
}

#[derive(QueryableByName)]
struct Request {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    reason: Option<String>,
}

async fn request(env: &mut Env) -> Request {
    diesel::sql_query(
        "SELECT r.status, u.reason FROM remediation_requests r
           JOIN remediation_runs u USING (tenant_id, request_id)",
    )
    .get_result(&mut env.conn)
    .await
    .unwrap()
}

#[derive(QueryableByName)]
struct StoredReceipt {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Jsonb)]
    document: serde_json::Value,
    #[diesel(sql_type = Text)]
    cosign_status: String,
    #[diesel(sql_type = Integer)]
    cosign_attempts: i32,
    #[diesel(sql_type = Nullable<Text>)]
    cosign_error: Option<String>,
}

async fn stored_receipts(env: &mut Env) -> Vec<StoredReceipt> {
    diesel::sql_query(
        "SELECT kind, document, cosign_status, cosign_attempts, cosign_error
           FROM remediation_receipts ORDER BY receipt_id",
    )
    .load(&mut env.conn)
    .await
    .unwrap()
}

async fn set_cosigning(env: &mut Env, mode: settings::CosigningMode, endpoint: &str) {
    settings::set_cosigning(
        &mut env.conn,
        &acme(),
        &admin(),
        &settings::CosigningUpdate {
            mode,
            endpoint_url: Some(endpoint.to_owned()),
        },
        settings::PlatformCertificate::Provisioned,
        |_| true,
    )
    .await
    .unwrap();
}

async fn due_now(env: &mut Env) {
    diesel::sql_query("UPDATE remediation_requests SET next_attempt_at = now()")
        .execute(&mut env.conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn required_cosigning_that_fails_leaves_the_request_planned_and_untouched() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::Sign).await;
    let down = format!("https://127.0.0.1:{}/v1/cosign", free_port());
    let cases: [(Option<Answer>, &str, bool); 5] = [
        (None, "cosign_failed:unreachable", true),
        (Some(Answer::Never), "cosign_failed:timeout", true),
        (
            Some(Answer::WrongSignature),
            "cosign_failed:bad_signature",
            true,
        ),
        (Some(Answer::UnknownKid), "cosign_failed:unknown_kid", true),
        // The certificate gone from the deployment after the tenant turned co-signing on.
        (Some(Answer::Sign), "cosign_failed:no_certificate", false),
    ];
    for (answer, why, with_certificate) in cases {
        let mut env = Env::new().await;
        plan_one_mask(&mut env).await;
        let endpoint = match answer {
            Some(answer) => {
                server.answer(answer);
                server.url()
            }
            None => down.clone(),
        };
        set_cosigning(&mut env, settings::CosigningMode::Required, &endpoint).await;
        let client = if with_certificate {
            cosigner(&pki, OPEN)
        } else {
            Cosigner::new(None, Some(&pki.ca_pem()), OPEN).unwrap()
        };
        let exec = executor_with(&env, client);
        let posts_before = server.posts().len();
        assert!(
            remediation::execute::run_once(&mut env.conn, &exec)
                .await
                .unwrap()
        );
        let r = request(&mut env).await;
        assert_eq!(r.status, "planned", "{why}");
        let reason = r.reason.unwrap_or_default();
        assert_eq!(reason, why);
        // The tenant reads this reason: it names the kind of failure, not the network's
        // answer (which would let an endpoint URL probe internal names and ports).
        for detail in ["os error", "tcp", "dns", "refused"] {
            assert!(!reason.to_lowercase().contains(detail), "{reason}");
        }
        assert!(stored_receipts(&mut env).await.is_empty(), "{why}");
        assert_eq!(
            env.count(
                "SELECT count(*) AS n FROM remediation_runs WHERE lkg_key IS NULL AND sha256_before IS NULL"
            )
            .await,
            1
        );
        // Retried later, not at once.
        assert!(
            !remediation::execute::run_once(&mut env.conn, &exec)
                .await
                .unwrap()
        );
        assert_eq!(
            env.count(
                "SELECT count(*) AS n FROM remediation_requests WHERE next_attempt_at > now() + interval '20 seconds'"
            )
            .await,
            1
        );
        let sent = server.posts().len() - posts_before;
        let expected = usize::from(answer.is_some() && with_certificate);
        assert_eq!(sent, expected, "{why}");
        if expected == 1 {
            let posted = &server.posts()[posts_before].body;
            assert_eq!(posted["receipt"]["kind"], "planned", "{posted}");
            assert_eq!(posted["receipt"]["sha256_after"], serde_json::Value::Null);
            receipts::verify(posted, &exec.receipts.jwks()).unwrap();
        }
    }
}

#[tokio::test]
async fn a_cosigned_planned_receipt_is_sent_once_and_lets_the_action_run() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::Sign).await;
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    set_cosigning(&mut env, settings::CosigningMode::Required, &server.url()).await;
    let mut exec = executor_with(&env, cosigner(&pki, OPEN));
    // Keys that cannot open the tenant's: the step after the approval (opening the storage)
    // stops for now, as a crash right after the approval would.
    let (other, _) = keys::MasterKey::generate().unwrap();
    exec.keyring = std::sync::Arc::new(keys::KeyRing::new(std::sync::Arc::new(other)));
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    let r = request(&mut env).await;
    assert_eq!(r.status, "planned");
    assert_eq!(
        r.reason.as_deref(),
        Some("tenant_keys_unreadable"),
        "the action went on past the co-signing"
    );
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].kind, "planned");
    assert_eq!(stored[0].cosign_status, "cosigned");
    assert_eq!(stored[0].cosign_attempts, 1);
    receipts::verify(&stored[0].document, &exec.receipts.jwks()).unwrap();
    receipts::verify_cosignature(&stored[0].document, &key_of(&server)).unwrap();
    assert_eq!(server.posts().len(), 1);

    // Resumed, the request does not ask again.
    due_now(&mut env).await;
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert_eq!(server.posts().len(), 1);
    assert_eq!(stored_receipts(&mut env).await.len(), 1);
}

/// A required co-signer that refused (here, a signature that does not verify, as a lost answer
/// would also leave it) is asked again about the same planned receipt, byte for byte, not
/// about a new one for the same action; the receipt it approves is the one stored.
#[tokio::test]
async fn a_retried_approval_sends_the_same_planned_receipt() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::WrongSignature).await;
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    set_cosigning(&mut env, settings::CosigningMode::Required, &server.url()).await;
    let mut exec = executor_with(&env, cosigner(&pki, OPEN));
    // As above: past the approval, the run stops at the tenant's keys.
    let (other, _) = keys::MasterKey::generate().unwrap();
    exec.keyring = std::sync::Arc::new(keys::KeyRing::new(std::sync::Arc::new(other)));
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    assert!(stored_receipts(&mut env).await.is_empty());
    server.answer(Answer::Sign);
    due_now(&mut env).await;
    assert!(
        remediation::execute::run_once(&mut env.conn, &exec)
            .await
            .unwrap()
    );
    let posts = server.posts();
    assert_eq!(posts.len(), 2);
    assert_eq!(
        posts[0].body, posts[1].body,
        "the same receipt, byte for byte"
    );
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].cosign_status, "cosigned");
    assert_eq!(
        stored[0].document["receipt"]["receipt_id"],
        posts[0].body["receipt"]["receipt_id"]
    );
}

/// The tenant denies the action's class: the request ends blocked, with a receipt that is
/// co-signed as the tenant's mode says.
async fn blocked_receipt(env: &mut Env, exec: &remediation::Executor) {
    settings::set_remediation_policy(
        &mut env.conn,
        &acme(),
        &admin(),
        &json!({"denied_safety_classes": ["destructive"]}),
    )
    .await
    .unwrap();
    assert!(
        remediation::execute::run_once(&mut env.conn, exec)
            .await
            .unwrap()
    );
    assert_eq!(request(env).await.status, "blocked");
}

#[tokio::test]
async fn optional_cosigning_retries_a_receipt_until_the_cosigner_is_up() {
    let pki = Pki::new();
    let port = free_port();
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    set_cosigning(
        &mut env,
        settings::CosigningMode::Optional,
        &format!("https://127.0.0.1:{port}/v1/cosign"),
    )
    .await;
    let exec = executor_with(&env, cosigner(&pki, OPEN));
    blocked_receipt(&mut env, &exec).await;
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored[0].cosign_status, "pending");

    // The co-signer is down: the receipt stays pending, with why, and is due in 30 s.
    assert_eq!(
        remediation::cosign::run_once(&mut env.conn, &exec.receipts)
            .await
            .unwrap(),
        1
    );
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored[0].cosign_status, "pending");
    assert_eq!(stored[0].cosign_attempts, 1);
    let error = stored[0].cosign_error.clone().unwrap_or_default();
    assert!(error.contains("could not be reached"), "{error}");
    assert_eq!(
        remediation::cosign::run_once(&mut env.conn, &exec.receipts)
            .await
            .unwrap(),
        0,
        "not due again before its backoff"
    );
    assert_eq!(
        env.count(
            "SELECT count(*) AS n FROM remediation_receipts
              WHERE cosign_next_at BETWEEN now() + interval '25 seconds' AND now() + interval '35 seconds'"
        )
        .await,
        1
    );

    // Up, and due: co-signed, and the stored document carries the co-signature.
    let server = CosignServer::start_on(port, &pki, Answer::Sign).await;
    diesel::sql_query("UPDATE remediation_receipts SET cosign_next_at = now()")
        .execute(&mut env.conn)
        .await
        .unwrap();
    assert_eq!(
        remediation::cosign::run_once(&mut env.conn, &exec.receipts)
            .await
            .unwrap(),
        1
    );
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored[0].cosign_status, "cosigned");
    assert_eq!(stored[0].cosign_attempts, 2);
    assert_eq!(stored[0].cosign_error, None);
    receipts::verify(&stored[0].document, &exec.receipts.jwks()).unwrap();
    receipts::verify_cosignature(&stored[0].document, &key_of(&server)).unwrap();
    assert_eq!(server.posts().len(), 1);
    assert_eq!(server.posts()[0].body["receipt"]["kind"], "blocked");
    assert_eq!(
        remediation::cosign::run_once(&mut env.conn, &exec.receipts)
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn a_receipt_not_cosigned_within_a_day_or_after_cosigning_is_turned_off_fails() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::Status(500)).await;
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    set_cosigning(&mut env, settings::CosigningMode::Optional, &server.url()).await;
    let exec = executor_with(&env, cosigner(&pki, OPEN));
    blocked_receipt(&mut env, &exec).await;
    diesel::sql_query("UPDATE remediation_receipts SET created_at = now() - interval '25 hours'")
        .execute(&mut env.conn)
        .await
        .unwrap();
    remediation::cosign::run_once(&mut env.conn, &exec.receipts)
        .await
        .unwrap();
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored[0].cosign_status, "failed");
    assert_eq!(
        stored[0].cosign_error.as_deref(),
        Some("the co-signer answered HTTP 500")
    );

    // Turned off while a receipt waits: it is never sent.
    diesel::sql_query(
        "UPDATE remediation_receipts
            SET cosign_status = 'pending', cosign_next_at = now(), created_at = now()",
    )
    .execute(&mut env.conn)
    .await
    .unwrap();
    set_cosigning(&mut env, settings::CosigningMode::Disabled, &server.url()).await;
    let posts = server.posts().len();
    remediation::cosign::run_once(&mut env.conn, &exec.receipts)
        .await
        .unwrap();
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored[0].cosign_status, "failed");
    assert!(
        stored[0]
            .cosign_error
            .as_deref()
            .is_some_and(|e| e.contains("turned off")),
    );
    assert_eq!(server.posts().len(), posts);
}

/// Waits until `run` has posted to `server` (which had `before` posts), which stays silent for
/// the co-signer's 2 s timeout, and proves the pool's only connection free meanwhile; returns
/// what `run` returned.
async fn free_while_the_cosigner_is_silent<T>(
    pool: &db::Pool,
    server: &CosignServer,
    before: usize,
    run: tokio::task::JoinHandle<T>,
) -> T {
    while server.posts().len() == before {
        assert!(!run.is_finished(), "the run ended before it posted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    testkit::assert_pool_free(
        pool,
        Duration::from_millis(1500),
        "a run waiting on a silent co-signer",
    )
    .await;
    run.await.unwrap()
}

/// The executor and the background co-signing give their pooled connection back while they
/// wait on the co-signer: with a pool of one connection, its silence leaves that connection
/// free for anyone else.
#[tokio::test]
async fn no_connection_is_held_while_a_cosigner_keeps_the_executor_or_the_cosigning_waiting() {
    let pki = Pki::new();
    let server = CosignServer::start(&pki, Answer::Never).await;
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    set_cosigning(&mut env, settings::CosigningMode::Required, &server.url()).await;
    let exec = executor_with(&env, cosigner(&pki, OPEN));
    let pool = testkit::pool_of_one(&env._db.url);
    let run = tokio::spawn({
        let (pool, exec) = (pool.clone(), exec.clone());
        async move { remediation::execute::run_once_pooled(&pool, &exec).await }
    });
    assert!(
        free_while_the_cosigner_is_silent(&pool, &server, 0, run)
            .await
            .unwrap()
    );
    // The run ended as a silent co-signer makes it end: retried, nothing touched.
    let r = request(&mut env).await;
    assert_eq!(r.status, "planned");
    assert_eq!(r.reason.as_deref(), Some("cosign_failed:timeout"));

    // The background co-signing of an executed (here: blocked) receipt, in optional mode.
    let mut env = Env::new().await;
    plan_one_mask(&mut env).await;
    set_cosigning(&mut env, settings::CosigningMode::Optional, &server.url()).await;
    let exec = executor_with(&env, cosigner(&pki, OPEN));
    blocked_receipt(&mut env, &exec).await;
    let posted_before = server.posts().len();
    let pool = testkit::pool_of_one(&env._db.url);
    let run = tokio::spawn({
        let (pool, receipts) = (pool.clone(), exec.receipts.clone());
        async move { remediation::cosign::run_once_pooled(&pool, &receipts).await }
    });
    assert_eq!(
        free_while_the_cosigner_is_silent(&pool, &server, posted_before, run)
            .await
            .unwrap(),
        1
    );
    let stored = stored_receipts(&mut env).await;
    assert_eq!(stored[0].cosign_status, "pending");
    let error = stored[0].cosign_error.clone().unwrap_or_default();
    assert!(error.contains("did not answer within 2 s"), "{error}");
}

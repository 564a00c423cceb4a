//! Grants and detokenization against a real Postgres and real keys: what a grant is refused
//! for, what it is bound to, that it is used once (even by fifty concurrent callers), and that
//! every attempt is audited without a value.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use grants::{
    AuditFilter, AuditRecord, DetokenizeRequest, Detokenized, GRANT_TTL, GrantError, GrantKeys,
    GrantRequest, TokenStatus,
};
use ids::{Principal, TenantId, TokenPolicyId};
use keys::{KeyRing, MasterKey};
use paging::{CursorKey, Limit, Page};
use testkit::TestDatabase;
use vault::policies::{Definition, RuleInput};
use vault::tokenize::{BatchMode, Item, ItemOutcome, Outcome, Request, Run};

/// The values [`Setup::new`] tokenizes, and what detokenization reveals of them.
const VALUES: [(&str, &str, &str); 3] = [
    ("123-45-6789", "us_ssn", "123456789"),
    ("Ann.Lee+x@Example.com", "email", "ann.lee@example.com"),
    ("1.234,50 €", "monetary", "1234.50"),
];

/// One test's database and keys, a policy that lets `support` detokenize for `fraud_review`
/// with a reason, and [`VALUES`] tokenized under it for acme.
struct Setup {
    db: TestDatabase,
    conn: AsyncPgConnection,
    master: Arc<MasterKey>,
    keyring: Arc<KeyRing>,
    grant_keys: Arc<GrantKeys>,
    cursors: CursorKey,
    policy: TokenPolicyId,
    /// The token ids of [`VALUES`], as a caller sends them.
    ids: Vec<String>,
}

fn rule(mode: &str) -> RuleInput {
    RuleInput {
        mode: mode.to_owned(),
        min_confidence: None,
        deterministic_scope: None,
    }
}

fn definition() -> Definition {
    Definition {
        name: "customer data".into(),
        type_rules: BTreeMap::from([
            ("us_ssn".to_owned(), rule("deterministic")),
            ("email".to_owned(), rule("randomized")),
            ("monetary".to_owned(), rule("randomized")),
        ]),
        allowed_roles: vec!["support".into()],
        allowed_purposes: vec!["fraud_review".into()],
        require_reason: true,
        failure_mode: None,
        token_ttl_seconds: None,
        default_region: None,
    }
}

fn acme() -> TenantId {
    "acme".parse().unwrap()
}

fn caller(tenant: &str, user: &str, roles: &[&str]) -> Principal {
    Principal {
        user_id: user.parse().unwrap(),
        tenant_id: tenant.parse().unwrap(),
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
    }
}

fn sam() -> Principal {
    caller("acme", "sam", &["support"])
}

fn grant_request<'a>(ids: &'a [String], reason: Option<&'a str>) -> GrantRequest<'a> {
    GrantRequest {
        token_ids: ids,
        purpose: "fraud_review",
        reason,
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

impl Setup {
    async fn new() -> Self {
        let db = testkit::database().await;
        let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
        let master = Arc::new(MasterKey::generate().unwrap().0);
        let keyring = Arc::new(KeyRing::new(master.clone()));
        let grant_keys = Arc::new(GrantKeys::new(&master, 1).unwrap());
        let cursors = CursorKey::new(&master.derive(b"cursor"));
        let policy =
            vault::policies::create(&mut conn, &acme(), &"alice".parse().unwrap(), &definition())
                .await
                .unwrap()
                .policy_id;
        let mut setup = Self {
            db,
            conn,
            master,
            keyring,
            grant_keys,
            cursors,
            policy,
            ids: Vec::new(),
        };
        let items = VALUES.iter().map(|(v, t, _)| (*v, *t)).collect::<Vec<_>>();
        setup.ids = setup.tokenize(&acme(), policy, &items).await;
        setup
    }

    /// Tokenizes `items` for `tenant` and returns their token ids.
    async fn tokenize(
        &mut self,
        tenant: &TenantId,
        policy: TokenPolicyId,
        items: &[(&str, &str)],
    ) -> Vec<String> {
        let request = Request {
            policy_id: policy,
            items: items
                .iter()
                .map(|(value, pii_type)| Item {
                    value: (*value).to_owned(),
                    pii_type: (*pii_type).to_owned(),
                    mode: None,
                })
                .collect(),
            batch_mode: BatchMode::AllOrNothing,
            idempotency_key: None,
            run: Run::Write,
        };
        let outcome =
            vault::tokenize::tokenize(&mut self.conn, &self.keyring, tenant, &request, &|_| {
                Vec::new()
            })
            .await
            .unwrap();
        let Outcome::Done { result, .. } = outcome else {
            panic!("{outcome:?}")
        };
        result
            .results
            .iter()
            .map(|r| match r.outcome {
                ItemOutcome::Tokenized {
                    token_id: Some(id), ..
                } => id.to_string(),
                ref other => panic!("{other:?}"),
            })
            .collect()
    }

    async fn issue(
        &mut self,
        caller: &Principal,
        request: &GrantRequest<'_>,
    ) -> Result<String, GrantError> {
        let grant = grants::issue(&mut self.conn, &self.grant_keys, caller, request).await?;
        assert_eq!(grant.expires_in, GRANT_TTL);
        Ok(grant.grant_jwt)
    }

    /// A grant for sam (support) on `ids`, for fraud_review, with a reason.
    async fn grant(&mut self, ids: &[String]) -> String {
        self.issue(&sam(), &grant_request(ids, Some("case 42")))
            .await
            .unwrap()
    }

    async fn detokenize(
        &mut self,
        caller: &Principal,
        tokens: &[String],
        grant_jwt: &str,
    ) -> Result<Detokenized, GrantError> {
        grants::detokenize(
            &mut self.conn,
            &self.grant_keys,
            &self.keyring,
            caller,
            &DetokenizeRequest { tokens, grant_jwt },
        )
        .await
    }

    async fn audit(&mut self, filter: &AuditFilter<'_>) -> Vec<AuditRecord> {
        self.audit_page(&acme(), 100, None, filter)
            .await
            .unwrap()
            .items
    }

    async fn audit_page(
        &mut self,
        tenant: &TenantId,
        limit: i64,
        cursor: Option<&str>,
        filter: &AuditFilter<'_>,
    ) -> Result<Page<AuditRecord>, GrantError> {
        grants::audit(
            &mut self.conn,
            tenant,
            filter,
            paging::PageRequest {
                cursors: &self.cursors,
                limit: Limit::parse(Some(limit), 50).unwrap(),
                cursor,
            },
        )
        .await
    }

    async fn count(&mut self, sql: &str) -> i64 {
        diesel::sql_query(sql)
            .get_result::<Count>(&mut self.conn)
            .await
            .unwrap()
            .n
    }
}

fn statuses(detokenized: &Detokenized) -> Vec<TokenStatus> {
    detokenized.results.iter().map(|r| r.status).collect()
}

#[tokio::test]
async fn a_grant_is_refused_for_a_role_a_purpose_or_a_missing_reason_the_policy_does_not_allow() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let analyst = caller("acme", "rita", &["analyst"]);
    let outcome = s.issue(&analyst, &grant_request(&ids, Some("x"))).await;
    assert!(
        matches!(outcome, Err(GrantError::RoleNotAllowed)),
        "{outcome:?}"
    );
    let curious = GrantRequest {
        purpose: "curiosity",
        ..grant_request(&ids, Some("x"))
    };
    let outcome = s.issue(&sam(), &curious).await;
    assert!(
        matches!(outcome, Err(GrantError::PurposeNotAllowed)),
        "{outcome:?}"
    );
    for reason in [None, Some(""), Some("   ")] {
        let outcome = s.issue(&sam(), &grant_request(&ids, reason)).await;
        assert!(
            matches!(outcome, Err(GrantError::ReasonRequired)),
            "{reason:?}: {outcome:?}"
        );
    }
    let hundred_one: Vec<String> = (0..101).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let long_reason = "x".repeat(1001);
    let long_purpose = "p".repeat(129);
    for request in [
        grant_request(&[], Some("x")),
        grant_request(&hundred_one, Some("x")),
        grant_request(&ids, Some(&long_reason)),
        GrantRequest {
            purpose: " ",
            ..grant_request(&ids, Some("x"))
        },
        GrantRequest {
            purpose: &long_purpose,
            ..grant_request(&ids, Some("x"))
        },
    ] {
        let outcome = s.issue(&sam(), &request).await;
        assert!(
            matches!(outcome, Err(GrantError::Invalid(_))),
            "{outcome:?}"
        );
    }
    assert_eq!(s.count("SELECT count(*) AS n FROM grants").await, 0);

    // Every token's policy is checked: one token under a stricter policy refuses the grant.
    let mut strict = definition();
    strict.allowed_roles = vec!["auditor".into()];
    let strict = vault::policies::create(&mut s.conn, &acme(), &"alice".parse().unwrap(), &strict)
        .await
        .unwrap()
        .policy_id;
    let other = s
        .tokenize(&acme(), strict, &[("234-56-7890", "us_ssn")])
        .await;
    let mixed = [ids[0].clone(), other[0].clone()];
    let outcome = s.issue(&sam(), &grant_request(&mixed, Some("x"))).await;
    assert!(
        matches!(outcome, Err(GrantError::RoleNotAllowed)),
        "{outcome:?}"
    );

    // A policy without require_reason issues without one; a revoked token gets no grant.
    let mut relaxed = definition();
    relaxed.require_reason = false;
    vault::policies::update(
        &mut s.conn,
        &acme(),
        &"alice".parse().unwrap(),
        s.policy,
        &relaxed,
    )
    .await
    .unwrap();
    s.issue(&sam(), &grant_request(&ids, None)).await.unwrap();
    vault::entries::revoke(&mut s.conn, &sam(), ids[0].parse().unwrap(), "erasure")
        .await
        .unwrap();
    let outcome = s.issue(&sam(), &grant_request(&ids, None)).await;
    assert!(
        matches!(outcome, Err(GrantError::TokenRevoked)),
        "{outcome:?}"
    );
    assert_eq!(s.count("SELECT count(*) AS n FROM grants").await, 1);
}

#[tokio::test]
async fn a_granted_detokenization_reveals_each_value_once() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    // The grant lives 300 seconds.
    let lifetime = s
        .count("SELECT extract(epoch FROM expires_at - issued_at)::bigint AS n FROM grants")
        .await;
    assert!((299..=300).contains(&lifetime), "{lifetime}");

    let revealed = s.detokenize(&sam(), &ids, &grant_jwt).await.unwrap();
    assert_eq!(revealed.success_count(), 3);
    for (result, (id, (_, _, value))) in revealed.results.iter().zip(ids.iter().zip(VALUES)) {
        assert_eq!(result.token_id, *id, "in the order asked for");
        assert_eq!(result.status, TokenStatus::Granted);
        assert_eq!(result.value.as_ref().unwrap().expose(), value);
        assert_eq!(result.revoked_at, None);
    }
    assert_eq!(revealed.results[0].currency, None);
    assert_eq!(revealed.results[2].currency.as_deref(), Some("EUR"));

    // Once only.
    let again = s.detokenize(&sam(), &ids, &grant_jwt).await;
    assert!(matches!(again, Err(GrantError::GrantReused)), "{again:?}");
    // A subset of the grant's tokens is covered, but the grant is spent.
    let again = s.detokenize(&sam(), &ids[..1], &grant_jwt).await;
    assert!(matches!(again, Err(GrantError::GrantReused)), "{again:?}");
    // A fresh grant for a subset reveals just that.
    let one = s.grant(&ids[2..]).await;
    let revealed = s.detokenize(&sam(), &ids[2..], &one).await.unwrap();
    assert_eq!(statuses(&revealed), [TokenStatus::Granted]);
    assert_eq!(
        revealed.results[0].value.as_ref().unwrap().expose(),
        "1234.50"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_detokenizations_with_one_grant_give_exactly_one_success() {
    let mut s = Setup::new().await;
    let ids = Arc::new(s.ids.clone());
    let grant_jwt = Arc::new(s.grant(&ids).await);
    let mut conns = Vec::new();
    for _ in 0..50 {
        conns.push(AsyncPgConnection::establish(&s.db.url).await.unwrap());
    }
    let start = Arc::new(tokio::sync::Barrier::new(conns.len()));
    let mut tasks = tokio::task::JoinSet::new();
    for mut conn in conns {
        let (grant_keys, keyring, ids, grant_jwt, start) = (
            s.grant_keys.clone(),
            s.keyring.clone(),
            ids.clone(),
            grant_jwt.clone(),
            start.clone(),
        );
        tasks.spawn(async move {
            start.wait().await;
            grants::detokenize(
                &mut conn,
                &grant_keys,
                &keyring,
                &sam(),
                &DetokenizeRequest {
                    tokens: &ids,
                    grant_jwt: &grant_jwt,
                },
            )
            .await
        });
    }
    let (mut granted, mut reused) = (0, 0);
    while let Some(outcome) = tasks.join_next().await {
        match outcome.unwrap() {
            Ok(revealed) => {
                assert_eq!(revealed.success_count(), 3);
                granted += 1;
            }
            Err(GrantError::GrantReused) => reused += 1,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!((granted, reused), (1, 49));

    // Each attempt is audited: one granted, forty-nine refused as reused.
    let audit = s.audit(&AuditFilter::default()).await;
    assert_eq!(audit.len(), 50);
    assert_eq!(audit.iter().filter(|r| r.outcome == "granted").count(), 1);
    assert!(
        audit
            .iter()
            .filter(|r| r.outcome == "denied")
            .all(|r| r.denial_code.as_deref() == Some("GRANT_NONCE_REUSED"))
    );
}

#[tokio::test]
async fn a_grant_is_bound_to_its_user_its_tenant_and_its_tokens() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;

    // Another user of the same tenant, and the same user name in another tenant.
    for stranger in [
        caller("acme", "sue", &["support"]),
        caller("globex", "sam", &["support"]),
    ] {
        let outcome = s.detokenize(&stranger, &ids, &grant_jwt).await;
        assert!(
            matches!(outcome, Err(GrantError::GrantInvalid)),
            "{}: {outcome:?}",
            stranger.user_id
        );
    }
    // A token outside the grant cannot ride along.
    let mut more = ids.clone();
    more.push(uuid::Uuid::new_v4().to_string());
    let outcome = s.detokenize(&sam(), &more, &grant_jwt).await;
    assert!(
        matches!(outcome, Err(GrantError::NotInGrant)),
        "{outcome:?}"
    );

    // Altered and forged grants, and grants of another master key.
    let mut parts: Vec<String> = grant_jwt.split('.').map(str::to_owned).collect();
    parts[1] = format!("{}A", &parts[1][..parts[1].len() - 1]);
    let altered = parts.join(".");
    let stranger_keys = GrantKeys::new(&MasterKey::generate().unwrap().0, 1).unwrap();
    let foreign = grants::issue(
        &mut s.conn,
        &stranger_keys,
        &sam(),
        &grant_request(&ids, Some("x")),
    )
    .await
    .unwrap()
    .grant_jwt;
    for forged in [altered, foreign, "not.a.jwt".to_owned(), String::new()] {
        let outcome = s.detokenize(&sam(), &ids, &forged).await;
        assert!(
            matches!(outcome, Err(GrantError::GrantInvalid)),
            "{forged}: {outcome:?}"
        );
    }
    // None of these used the grant up.
    let revealed = s.detokenize(&sam(), &ids, &grant_jwt).await.unwrap();
    assert_eq!(revealed.success_count(), 3);
}

#[derive(QueryableByName)]
struct Jti {
    #[diesel(sql_type = SqlUuid)]
    jti: uuid::Uuid,
}

#[tokio::test]
async fn an_unsigned_copy_of_a_real_grant_is_refused() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    s.grant(&ids).await;
    let jti = diesel::sql_query("SELECT jti FROM grants")
        .get_result::<Jti>(&mut s.conn)
        .await
        .unwrap()
        .jti;
    // Every claim a real grant has, naming the real grant, with `alg: none` and the kid of the
    // real signing key.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut claims = serde_json::Map::new();
    for (k, v) in [
        ("iss", serde_json::json!("dps-tokens-api")),
        ("aud", serde_json::json!("dps-detokenize")),
        ("jti", serde_json::json!(jti.to_string())),
        ("sub", serde_json::json!("sam")),
        ("tenant_id", serde_json::json!("acme")),
        ("token_ids", serde_json::json!(ids)),
        ("purpose", serde_json::json!("fraud_review")),
        ("iat", serde_json::json!(now)),
        ("exp", serde_json::json!(now + 300)),
    ] {
        claims.insert(k.to_owned(), v);
    }
    let mut header = josekit::jws::JwsHeader::new();
    header.set_token_type("JWT");
    header.set_key_id("grant-v1");
    let unsigned = josekit::jwt::encode_unsecured(
        &josekit::jwt::JwtPayload::from_map(claims).unwrap(),
        &header,
    )
    .unwrap();
    let outcome = s.detokenize(&sam(), &ids, &unsigned).await;
    assert!(
        matches!(outcome, Err(GrantError::GrantInvalid)),
        "{outcome:?}"
    );
    assert_eq!(
        s.count("SELECT count(*) AS n FROM grants WHERE used_at IS NOT NULL")
            .await,
        0
    );
}

#[tokio::test]
async fn a_grant_signed_under_the_previous_key_version_still_verifies_but_not_the_reverse() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let v1 = s.grant(&ids).await;
    let v2_keys = Arc::new(GrantKeys::new(&s.master, 2).unwrap());
    let v1_keys = std::mem::replace(&mut s.grant_keys, v2_keys);
    // Issued before the rotation, used after it.
    let revealed = s.detokenize(&sam(), &ids, &v1).await.unwrap();
    assert_eq!(revealed.success_count(), 3);
    // Issued by version 2, it does not verify where only version 1 is known.
    let v2 = s.grant(&ids).await;
    s.grant_keys = v1_keys;
    let outcome = s.detokenize(&sam(), &ids, &v2).await;
    assert!(
        matches!(outcome, Err(GrantError::GrantInvalid)),
        "{outcome:?}"
    );
    // Version 3 no longer trusts version 1.
    let v1_again = s.grant(&ids).await;
    s.grant_keys = Arc::new(GrantKeys::new(&s.master, 3).unwrap());
    let outcome = s.detokenize(&sam(), &ids, &v1_again).await;
    assert!(
        matches!(outcome, Err(GrantError::GrantInvalid)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn an_expired_grant_is_refused() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    diesel::sql_query("UPDATE grants SET expires_at = now() - interval '1 second'")
        .execute(&mut s.conn)
        .await
        .unwrap();
    let outcome = s.detokenize(&sam(), &ids, &grant_jwt).await;
    assert!(
        matches!(outcome, Err(GrantError::GrantExpired)),
        "{outcome:?}"
    );
    let audit = s.audit(&AuditFilter::default()).await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].denial_code.as_deref(), Some("GRANT_EXPIRED"));
}

#[tokio::test]
async fn each_token_reports_its_own_status() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    // Expire one; add an unknown id, another tenant's token and a malformed id; revoke one
    // after the grant; then stop trusting `support` for the third.
    diesel::sql_query(
        "UPDATE vault_entries SET expires_at = now() - interval '1 second' WHERE token_id = $1",
    )
    .bind::<SqlUuid, _>(uuid::Uuid::parse_str(&ids[1]).unwrap())
    .execute(&mut s.conn)
    .await
    .unwrap();
    let globex: TenantId = "globex".parse().unwrap();
    let theirs = vault::policies::create(
        &mut s.conn,
        &globex,
        &"gina".parse().unwrap(),
        &definition(),
    )
    .await
    .unwrap()
    .policy_id;
    let foreign = s
        .tokenize(&globex, theirs, &[("321-54-9876", "us_ssn")])
        .await;
    let mut wanted = ids.clone();
    wanted.push(uuid::Uuid::new_v4().to_string());
    wanted.push(foreign[0].clone());
    wanted.push("not-a-uuid".into());
    let grant_jwt = s.grant(&wanted).await;
    vault::entries::revoke(
        &mut s.conn,
        &caller("acme", "alice", &["admin"]),
        ids[0].parse().unwrap(),
        "erasure",
    )
    .await
    .unwrap();
    let mut changed = definition();
    changed.allowed_roles = vec!["auditor".into()];
    vault::policies::update(
        &mut s.conn,
        &acme(),
        &"alice".parse().unwrap(),
        s.policy,
        &changed,
    )
    .await
    .unwrap();

    let revealed = s.detokenize(&sam(), &wanted, &grant_jwt).await.unwrap();
    assert_eq!(
        statuses(&revealed),
        [
            TokenStatus::Revoked,
            TokenStatus::Expired,
            TokenStatus::Denied,
            TokenStatus::NotFound,
            TokenStatus::NotFound,
            TokenStatus::NotFound,
        ]
    );
    assert!(revealed.results[0].revoked_at.is_some());
    assert!(revealed.results.iter().all(|r| r.value.is_none()));
    assert_eq!(revealed.success_count(), 0);
    assert_eq!(revealed.results[5].token_id, "not-a-uuid");
    // The grant was accepted, so it is spent, and the audit says what each token came to.
    let audit = s.audit(&AuditFilter::default()).await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].outcome, "granted");
    let audited: Vec<&str> = audit[0].tokens.iter().map(|t| t.status.as_str()).collect();
    assert_eq!(
        audited,
        [
            "REVOKED",
            "EXPIRED",
            "DENIED",
            "NOT_FOUND",
            "NOT_FOUND",
            "NOT_FOUND"
        ]
    );
}

#[tokio::test]
async fn without_an_audit_record_nothing_is_revealed_and_the_grant_is_kept() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    diesel::sql_query(
        "ALTER TABLE detokenization_audit ADD CONSTRAINT test_refuse CHECK (outcome <> 'granted')",
    )
    .execute(&mut s.conn)
    .await
    .unwrap();
    let outcome = s.detokenize(&sam(), &ids, &grant_jwt).await;
    assert!(
        matches!(outcome, Err(GrantError::AuditUnavailable)),
        "{outcome:?}"
    );
    assert_eq!(
        s.count("SELECT count(*) AS n FROM grants WHERE used_at IS NOT NULL")
            .await,
        0
    );
    // The attempt is still on record: denied, for the service's failure, not the caller's.
    assert_eq!(
        s.count(
            "SELECT count(*) AS n FROM detokenization_audit \
             WHERE outcome = 'denied' AND denial_code = 'SERVICE_UNAVAILABLE'"
        )
        .await,
        1
    );
    diesel::sql_query("ALTER TABLE detokenization_audit DROP CONSTRAINT test_refuse")
        .execute(&mut s.conn)
        .await
        .unwrap();
    let revealed = s.detokenize(&sam(), &ids, &grant_jwt).await.unwrap();
    assert_eq!(revealed.success_count(), 3);
}

#[tokio::test]
async fn every_attempt_granted_or_denied_is_audited_without_a_value() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    let sue = caller("acme", "sue", &["support"]);

    // 1. granted; 2. reused; 3. another user; 4. outside the grant; 5. forged.
    s.detokenize(&sam(), &ids, &grant_jwt).await.unwrap();
    assert!(s.detokenize(&sam(), &ids, &grant_jwt).await.is_err());
    let second = s.grant(&ids[..1]).await;
    assert!(s.detokenize(&sue, &ids[..1], &second).await.is_err());
    assert!(s.detokenize(&sam(), &ids[1..2], &second).await.is_err());
    assert!(s.detokenize(&sam(), &ids[..1], "x.y.z").await.is_err());

    let audit = s.audit(&AuditFilter::default()).await;
    let summary: Vec<(&str, &str, Option<&str>)> = audit
        .iter()
        .map(|r| {
            (
                r.user_id.as_str(),
                r.outcome.as_str(),
                r.denial_code.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("sam", "granted", None),
            ("sam", "denied", Some("GRANT_NONCE_REUSED")),
            ("sue", "denied", Some("GRANT_INVALID")),
            ("sam", "denied", Some("TOKEN_NOT_IN_GRANT")),
            ("sam", "denied", Some("GRANT_INVALID")),
        ]
    );
    let granted = &audit[0];
    assert_eq!(granted.purpose.as_deref(), Some("fraud_review"));
    assert_eq!(granted.reason.as_deref(), Some("case 42"));
    assert_eq!(
        granted
            .tokens
            .iter()
            .map(|t| &t.token_id)
            .collect::<Vec<_>>(),
        ids.iter().collect::<Vec<_>>()
    );
    assert!(granted.tokens.iter().all(|t| t.status == "GRANTED"));
    assert!(granted.grant_id.is_some());
    assert_eq!(
        audit[1].grant_id, granted.grant_id,
        "the same grant, reused"
    );
    assert!(audit[1].tokens.iter().all(|t| t.status == "DENIED"));
    // Every refusal that names a real grant of the tenant carries its purpose and reason.
    for refused in &audit[1..4] {
        assert_eq!(
            refused.purpose.as_deref(),
            Some("fraud_review"),
            "{refused:?}"
        );
        assert_eq!(refused.reason.as_deref(), Some("case 42"), "{refused:?}");
        assert!(refused.grant_id.is_some());
    }
    assert_eq!(audit[4].grant_id, None, "a forged grant has no readable id");
    assert_eq!(audit[4].purpose, None);
    let traces: std::collections::BTreeSet<_> = audit.iter().map(|r| r.trace_id).collect();
    assert_eq!(traces.len(), 5);

    // Filters.
    let by_user = s
        .audit(&AuditFilter {
            user: Some("sue"),
            ..AuditFilter::default()
        })
        .await;
    assert_eq!(by_user.len(), 1);
    let by_token = s
        .audit(&AuditFilter {
            token_id: Some(&ids[2]),
            ..AuditFilter::default()
        })
        .await;
    assert_eq!(by_token.len(), 2, "the granted and the reused attempt");
    let future = s
        .audit(&AuditFilter {
            since: Some(time::OffsetDateTime::from_unix_timestamp(32_503_680_000).unwrap()),
            ..AuditFilter::default()
        })
        .await;
    assert!(future.is_empty());
    let recent = s
        .audit(&AuditFilter {
            since: Some(audit[2].occurred_at),
            ..AuditFilter::default()
        })
        .await;
    assert_eq!(recent, audit[2..]);
    // Pages, and a cursor that is this tenant's only.
    let first = s
        .audit_page(&acme(), 2, None, &AuditFilter::default())
        .await
        .unwrap();
    let mut paged = first.items.clone();
    let mut cursor = first.pagination.next_cursor.clone();
    while let Some(c) = cursor {
        let page = s
            .audit_page(&acme(), 2, Some(&c), &AuditFilter::default())
            .await
            .unwrap();
        paged.extend(page.items);
        cursor = page.pagination.next_cursor;
    }
    assert_eq!(paged, audit);
    let globex: TenantId = "globex".parse().unwrap();
    let theirs = s
        .audit_page(&globex, 10, None, &AuditFilter::default())
        .await
        .unwrap();
    assert!(theirs.items.is_empty());
    let stolen = first.pagination.next_cursor.unwrap();
    let outcome = s
        .audit_page(&globex, 2, Some(&stolen), &AuditFilter::default())
        .await;
    assert!(
        matches!(
            outcome,
            Err(GrantError::Vault(vault::VaultError::BadCursor))
        ),
        "{outcome:?}"
    );

    // No value reached any table, though the audit and the grants are there.
    let dump = testkit::pg_dump(&s.db);
    assert!(
        dump.contains("GRANT_NONCE_REUSED"),
        "the dump holds the audit"
    );
    assert!(dump.contains(&ids[0]), "the dump holds the token ids");
    for (raw, _, value) in VALUES {
        assert!(!dump.contains(raw), "{raw} is in the dump");
        assert!(!dump.contains(value), "{value} is in the dump");
    }
}

#[tokio::test]
async fn a_detokenization_that_reveals_nothing_creates_no_keys_for_its_tenant() {
    let mut s = Setup::new().await;
    // globex never tokenized anything: it has no key versions.
    let stranger = caller("globex", "gil", &["support"]);
    let unknown = vec![uuid::Uuid::now_v7().to_string()];
    let grant = s
        .issue(&stranger, &grant_request(&unknown, Some("case 7")))
        .await
        .unwrap();
    let result = s.detokenize(&stranger, &unknown, &grant).await.unwrap();
    assert_eq!(statuses(&result), [TokenStatus::NotFound]);
    assert_eq!(
        s.count("SELECT count(*) AS n FROM tenant_keys WHERE tenant_id = 'globex'")
            .await,
        0
    );
}

/// A grant used once stays used: presented again after its 300 seconds, it is a reuse
/// (GRANT_NONCE_REUSED), not an expiry. The refusal is audited with the grant's purpose.
#[tokio::test]
async fn a_used_grant_presented_after_its_time_is_a_reuse() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    s.detokenize(&sam(), &ids, &grant_jwt).await.unwrap();
    diesel::sql_query("UPDATE grants SET expires_at = now() - interval '1 second'")
        .execute(&mut s.conn)
        .await
        .unwrap();
    let outcome = s.detokenize(&sam(), &ids, &grant_jwt).await;
    assert!(
        matches!(outcome, Err(GrantError::GrantReused)),
        "{outcome:?}"
    );
    let audit = s.audit(&AuditFilter::default()).await;
    let refused = audit
        .iter()
        .find(|a| a.denial_code.as_deref() == Some("GRANT_NONCE_REUSED"))
        .unwrap_or_else(|| panic!("{audit:?}"));
    assert_eq!(refused.purpose.as_deref(), Some("fraud_review"));
}

/// The purpose is checked again at detokenize, like the roles: a policy that no longer allows
/// the grant's purpose reveals nothing.
#[tokio::test]
async fn a_purpose_the_policy_no_longer_allows_reveals_nothing() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    let mut changed = definition();
    changed.allowed_purposes = vec!["billing".into()];
    vault::policies::update(
        &mut s.conn,
        &acme(),
        &"alice".parse().unwrap(),
        s.policy,
        &changed,
    )
    .await
    .unwrap();
    let revealed = s.detokenize(&sam(), &ids, &grant_jwt).await.unwrap();
    assert!(
        revealed
            .results
            .iter()
            .all(|r| r.status == TokenStatus::Denied && r.value.is_none()),
        "{:?}",
        statuses(&revealed)
    );
    assert_eq!(revealed.success_count(), 0);
}

/// A grant issued without a reason under a policy that did not need one reveals nothing once
/// the policy requires a reason.
#[tokio::test]
async fn a_grant_without_a_reason_reveals_nothing_once_the_policy_requires_one() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let mut relaxed = definition();
    relaxed.require_reason = false;
    let alice = "alice".parse().unwrap();
    vault::policies::update(&mut s.conn, &acme(), &alice, s.policy, &relaxed)
        .await
        .unwrap();
    let grant_jwt = s.issue(&sam(), &grant_request(&ids, None)).await.unwrap();
    vault::policies::update(&mut s.conn, &acme(), &alice, s.policy, &definition())
        .await
        .unwrap();
    let revealed = s.detokenize(&sam(), &ids, &grant_jwt).await.unwrap();
    assert!(
        revealed
            .results
            .iter()
            .all(|r| r.status == TokenStatus::Denied && r.value.is_none()),
        "{:?}",
        statuses(&revealed)
    );
}

/// A detokenization refused for its token list (none, or over 100) is an attempt too, and is
/// audited as one, without the ids.
#[tokio::test]
async fn a_detokenization_with_a_bad_token_list_is_audited() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    let too_many: Vec<String> = (0..101).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    for tokens in [Vec::new(), too_many] {
        let outcome = s.detokenize(&sam(), &tokens, &grant_jwt).await;
        assert!(
            matches!(outcome, Err(GrantError::Invalid(_))),
            "{outcome:?}"
        );
    }
    let audit = s.audit(&AuditFilter::default()).await;
    assert_eq!(audit.len(), 2, "{audit:?}");
    assert!(
        audit.iter().all(|a| a.outcome == "denied"
            && a.denial_code.as_deref() == Some("INVALID_INPUT")
            && a.tokens.is_empty()),
        "{audit:?}"
    );
    // The grant is still good.
    assert_eq!(
        s.detokenize(&sam(), &ids, &grant_jwt)
            .await
            .unwrap()
            .success_count(),
        3
    );
}

/// A grant's row is deleted 40 days after it expired, the tenant's own only; a grant issued
/// now, or expired for less, stays, and a fresh grant still works.
#[tokio::test]
async fn grants_long_expired_are_forgotten_and_others_kept() {
    let mut s = Setup::new().await;
    let ids = s.ids.clone();
    let grant_jwt = s.grant(&ids).await;
    for (tenant, days) in [("acme", 41), ("acme", 39), ("globex", 41)] {
        diesel::sql_query(
            "INSERT INTO grants (tenant_id, jti, user_id, token_ids, purpose, issued_at, expires_at) \
             VALUES ($1, gen_random_uuid(), 'sam', '{}', 'fraud_review', \
                     now() - make_interval(days => $2), \
                     now() - make_interval(days => $2) + interval '5 minutes')",
        )
        .bind::<diesel::sql_types::Text, _>(tenant)
        .bind::<diesel::sql_types::Integer, _>(days)
        .execute(&mut s.conn)
        .await
        .unwrap();
    }
    let count = async |conn: &mut AsyncPgConnection| {
        diesel::sql_query("SELECT count(*) AS n FROM grants")
            .get_result::<Count>(conn)
            .await
            .unwrap()
            .n
    };
    assert_eq!(count(&mut s.conn).await, 4);
    assert_eq!(
        grants::forget_old_grants(&mut s.conn, &acme())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        grants::forget_old_grants(&mut s.conn, &acme())
            .await
            .unwrap(),
        0
    );
    assert_eq!(count(&mut s.conn).await, 3);
    assert_eq!(
        s.detokenize(&sam(), &ids, &grant_jwt)
            .await
            .unwrap()
            .success_count(),
        3
    );
}

//! The vault's public API against a real Postgres and real keys: tokenization (modes, batch
//! modes, dry runs, idempotency keys, quotas), policies, the entry list, revocation, rotation
//! and what is stored.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod entries;
mod idempotency;
mod plans;
mod policies;
mod rotation;
mod tokenize;

use std::collections::BTreeMap;
use std::sync::Arc;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Integer};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::{Principal, TenantId, TokenId, TokenPolicyId};
use keys::{KeyRing, MasterKey};
use paging::CursorKey;
use testkit::TestDatabase;
use vault::VaultError;
use vault::policies::{Definition, RuleInput};
use vault::tokenize::{BatchMode, Item, ItemOutcome, Outcome, Request, Run, Tokenized};

/// One test's database, keys and cursor key.
struct Vault {
    pub db: TestDatabase,
    pub conn: AsyncPgConnection,
    pub master: Arc<MasterKey>,
    pub keyring: Arc<KeyRing>,
    pub cursors: CursorKey,
}

impl Vault {
    pub async fn new() -> Self {
        let db = testkit::database().await;
        let conn = AsyncPgConnection::establish(&db.url).await.unwrap();
        let master = Arc::new(MasterKey::generate().unwrap().0);
        let keyring = Arc::new(KeyRing::new(master.clone()));
        let cursors = CursorKey::new(&master.derive(b"cursor"));
        Self {
            db,
            conn,
            master,
            keyring,
            cursors,
        }
    }

    /// Another connection to the same database.
    pub async fn connect(&self) -> AsyncPgConnection {
        AsyncPgConnection::establish(&self.db.url).await.unwrap()
    }

    /// Creates `definition` for `tenant` and returns its id.
    pub async fn policy(&mut self, tenant: &TenantId, definition: &Definition) -> TokenPolicyId {
        vault::policies::create(
            &mut self.conn,
            tenant,
            &"alice".parse().unwrap(),
            definition,
        )
        .await
        .unwrap()
        .policy_id
    }

    /// Tokenizes for `tenant`, answering with [`body`].
    pub async fn tokenize(
        &mut self,
        tenant: &TenantId,
        request: &Request,
    ) -> Result<Outcome, VaultError> {
        vault::tokenize::tokenize(&mut self.conn, &self.keyring, tenant, request, &body).await
    }

    /// Tokenizes for acme, expecting the batch to be processed.
    pub async fn done(&mut self, request: &Request) -> Tokenized {
        match self.tokenize(&acme(), request).await {
            Ok(Outcome::Done { result, body: sent }) => {
                assert_eq!(sent, body(&result), "the body is what respond made");
                result
            }
            other => panic!("expected a processed batch, got {other:?}"),
        }
    }

    pub async fn count(&mut self, sql: &str) -> i64 {
        count(&mut self.conn, sql).await
    }

    /// Every vault entry of every tenant.
    pub async fn entries(&mut self) -> i64 {
        self.count("SELECT count(*) AS n FROM vault_entries").await
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The `n` a counting query returns.
pub async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql)
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
}

#[derive(QueryableByName)]
struct Int {
    #[diesel(sql_type = Integer)]
    v: i32,
}

/// The column `v` of every row a query returns.
pub async fn ints(conn: &mut AsyncPgConnection, sql: &str) -> Vec<i32> {
    diesel::sql_query(sql)
        .load::<Int>(conn)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.v)
        .collect()
}

/// What the tests answer a tokenization with: its trace id (different on every call) and its
/// results, so that a replay can be told from a new run.
pub fn body(result: &Tokenized) -> Vec<u8> {
    format!("{}|{:?}", result.trace_id, result.results).into_bytes()
}

pub fn acme() -> TenantId {
    "acme".parse().unwrap()
}

pub fn globex() -> TenantId {
    "globex".parse().unwrap()
}

pub fn principal(tenant: &str, user: &str, roles: &[&str]) -> Principal {
    Principal {
        user_id: user.parse().unwrap(),
        tenant_id: tenant.parse().unwrap(),
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
    }
}

pub fn rule(mode: &str) -> RuleInput {
    RuleInput {
        mode: mode.to_owned(),
        min_confidence: None,
        deterministic_scope: None,
    }
}

/// A rule for each mode; `support` may detokenize for `fraud_review`, with a reason.
pub fn all_modes() -> Definition {
    Definition {
        name: "customer data".into(),
        type_rules: BTreeMap::from([
            ("us_ssn".to_owned(), rule("deterministic")),
            ("ca_sin".to_owned(), rule("format_preserving")),
            ("email".to_owned(), rule("randomized")),
            ("phone".to_owned(), rule("format_preserving")),
            ("dob".to_owned(), rule("format_preserving")),
            (
                "passport_ca".to_owned(),
                RuleInput {
                    deterministic_scope: Some("policy".into()),
                    ..rule("deterministic")
                },
            ),
        ]),
        allowed_roles: vec!["support".into()],
        allowed_purposes: vec!["fraud_review".into()],
        require_reason: true,
        failure_mode: None,
        token_ttl_seconds: None,
        default_region: None,
    }
}

pub fn item(value: &str, pii_type: &str) -> Item {
    Item {
        value: value.to_owned(),
        pii_type: pii_type.to_owned(),
        mode: None,
    }
}

/// A best-effort write of `items` under `policy`, without an idempotency key.
pub fn request(policy: TokenPolicyId, items: Vec<Item>) -> Request {
    Request {
        policy_id: policy,
        items,
        batch_mode: BatchMode::BestEffort,
        idempotency_key: None,
        run: Run::Write,
    }
}

/// Each item's outcome in order: TOKENIZED, SKIPPED or its failure code.
pub fn codes(result: &Tokenized) -> Vec<&'static str> {
    result
        .results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r.index, i, "results are in item order");
            match r.outcome {
                ItemOutcome::Tokenized { .. } => "TOKENIZED",
                ItemOutcome::Skipped => "SKIPPED",
                ItemOutcome::Failed(f) => f.code,
            }
        })
        .collect()
}

/// The token, token id and mode of a written item.
pub fn written(result: &Tokenized, index: usize) -> (String, TokenId, &'static str) {
    match &result.results[index].outcome {
        ItemOutcome::Tokenized {
            token: Some(token),
            token_id: Some(id),
            mode,
            ..
        } => (token.clone(), *id, mode.as_str()),
        other => panic!("item {index} was not written: {other:?}"),
    }
}

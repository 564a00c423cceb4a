//! Governance against a real Postgres: policy documents stored, replaced and deleted with their
//! audit entries; alert channels with sealed URLs and secrets; remediation and the co-signing of
//! its receipts.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod breaker;
mod channels;
mod cosign;
mod delivery;
mod evaluate;
mod plans;
mod policies;
mod remediate;
mod risk;

use std::collections::BTreeMap;
use std::sync::Arc;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::{ConnectorId, TenantId, TokenPolicyId, UserId};
use keys::KeyRing;

#[allow(missing_debug_implementations, reason = "a test fixture")]
pub struct Env {
    pub _db: testkit::TestDatabase,
    pub conn: AsyncPgConnection,
    pub keyring: Arc<KeyRing>,
    pub cursors: paging::CursorKey,
    pub egress: egress::Egress,
}

impl Env {
    pub async fn new() -> Self {
        let db = testkit::database().await;
        let conn = AsyncPgConnection::establish(&db.url).await.unwrap();
        let (master, _) = keys::MasterKey::generate().unwrap();
        Env {
            _db: db,
            conn,
            keyring: Arc::new(KeyRing::new(Arc::new(master))),
            cursors: paging::CursorKey::new(&[3; 32]),
            egress: egress::Egress {
                allow_private: true,
            },
        }
    }

    /// Another connection to the same database.
    pub async fn connect(&self) -> AsyncPgConnection {
        AsyncPgConnection::establish(&self._db.url).await.unwrap()
    }

    pub async fn connector(&mut self, tenant: &TenantId, name: &str) -> ConnectorId {
        let config = serde_json::json!({
            "role_arn": "arn:aws:iam::123456789012:role/scanner",
            "external_id": "ext-1",
            "region": "us-east-1",
            "buckets": ["exports"],
        });
        connectors::store::create(
            &mut self.conn,
            &self.keyring,
            tenant,
            &connectors::NewConnector {
                name,
                provider: "aws",
                config: &config,
                aws_external_id: config["external_id"].as_str().unwrap_or_default(),
            },
        )
        .await
        .unwrap()
        .id
    }

    pub async fn token_policy(&mut self, tenant: &TenantId) -> TokenPolicyId {
        let definition = vault::policies::Definition {
            name: "ssn".into(),
            type_rules: BTreeMap::from([(
                "us_ssn".to_owned(),
                vault::policies::RuleInput {
                    mode: "format_preserving".into(),
                    min_confidence: None,
                    deterministic_scope: None,
                },
            )]),
            allowed_roles: vec!["admin".into()],
            allowed_purposes: vec!["support".into()],
            require_reason: false,
            failure_mode: None,
            token_ttl_seconds: None,
            default_region: None,
        };
        vault::policies::create(&mut self.conn, tenant, &admin(), &definition)
            .await
            .unwrap()
            .policy_id
    }

    pub async fn channel(&mut self, tenant: &TenantId, name: &str) -> String {
        alerts::channels::create(
            &mut self.conn,
            &self.keyring,
            &self.egress,
            tenant,
            &admin(),
            alerts::channels::NewChannel {
                name,
                kind: "webhook",
                url: "https://hooks.example.com/services/T0/B0/tok3n",
            },
        )
        .await
        .unwrap()
        .secret
    }

    /// The tenant's audit entries' types, oldest first.
    pub async fn audit_kinds(&mut self, tenant: &TenantId) -> Vec<String> {
        #[derive(QueryableByName)]
        struct Kind {
            #[diesel(sql_type = Text)]
            kind: String,
        }
        diesel::sql_query("SELECT kind FROM audit_log WHERE tenant_id = $1 ORDER BY seq")
            .bind::<Text, _>(tenant.as_str())
            .load::<Kind>(&mut self.conn)
            .await
            .unwrap()
            .into_iter()
            .map(|k| k.kind)
            .collect()
    }

    pub async fn count(&mut self, sql: &str) -> i64 {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        diesel::sql_query(sql)
            .get_result::<Count>(&mut self.conn)
            .await
            .unwrap()
            .n
    }
}

pub fn acme() -> TenantId {
    "acme".parse().unwrap()
}

pub fn globex() -> TenantId {
    "globex".parse().unwrap()
}

pub fn admin() -> UserId {
    "alice".parse().unwrap()
}

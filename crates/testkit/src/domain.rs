//! What the domain crates' tests stand on: a fresh database with its connection, a key ring, a
//! cursor key and an egress policy that admits the loopback, plus a connector and the counts
//! tests read back. Area B's crates (`alerts`, `posture`, `remediation`, `governance`) each
//! test themselves on it.
#![allow(
    clippy::expect_used,
    reason = "a test fixture: a panic is how a test reports failure"
)]

use std::sync::Arc;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::{ConnectorId, TenantId, UserId};
use keys::KeyRing;

use crate::TestDatabase;

#[allow(missing_debug_implementations, reason = "a test fixture")]
pub struct Env {
    pub _db: TestDatabase,
    pub conn: AsyncPgConnection,
    pub keyring: Arc<KeyRing>,
    pub cursors: paging::CursorKey,
    pub egress: egress::Egress,
}

impl Env {
    pub async fn new() -> Self {
        let db = crate::database().await;
        let conn = AsyncPgConnection::establish(&db.url)
            .await
            .expect("connect to the test database");
        let (master, _) = keys::MasterKey::generate().expect("a master key");
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
        AsyncPgConnection::establish(&self._db.url)
            .await
            .expect("connect to the test database")
    }

    /// An AWS connector of `tenant` over the bucket `exports`.
    pub async fn connector(&mut self, tenant: &TenantId, name: &str) -> ConnectorId {
        connector(&mut self.conn, &self.keyring, tenant, name, "exports").await
    }

    /// A webhook channel of `tenant` named `name`; its signing secret.
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
        .expect("create the channel")
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
            .expect("read the audit log")
            .into_iter()
            .map(|k| k.kind)
            .collect()
    }

    /// The `n` that `sql` selects.
    pub async fn count(&mut self, sql: &str) -> i64 {
        count(&mut self.conn, sql).await
    }
}

/// An AWS connector of `tenant` named `name` over `bucket`, created as the API creates one.
pub async fn connector(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    name: &str,
    bucket: &str,
) -> ConnectorId {
    let config = serde_json::json!({
        "role_arn": "arn:aws:iam::123456789012:role/scanner",
        "external_id": "ext-1",
        "region": "us-east-1",
        "buckets": [bucket],
    });
    connectors::store::create(
        conn,
        keyring,
        tenant,
        &connectors::NewConnector {
            name,
            provider: "aws",
            config: &config,
            aws_external_id: config["external_id"].as_str().unwrap_or_default(),
        },
    )
    .await
    .expect("create the connector")
    .id
}

/// The `n` that `sql` (`SELECT count(*) AS n …`) selects.
pub async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    diesel::sql_query(sql)
        .get_result::<Count>(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .n
}

pub fn acme() -> TenantId {
    "acme".parse().expect("a tenant id")
}

pub fn globex() -> TenantId {
    "globex".parse().expect("a tenant id")
}

pub fn admin() -> UserId {
    "alice".parse().expect("a user id")
}

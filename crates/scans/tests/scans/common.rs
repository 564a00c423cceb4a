//! What the tests share: a database of their own, moto with known buckets, connectors and
//! scans set up as the coordinator would, and chunks worked through the lease protocol.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::{ConnectorId, ScanId, TenantId};
use keys::KeyRing;
use object_store::ObjectStore;
use scans::lease::{self, Claim, Held, Resource};
use scans::outbox::{self, Delivered, Position};
use scans::record::{self, NewFinding, Outcome};
use serde_json::{Value, json};
use testkit::{emulators, seed};

/// The server key worker tokens are derived from.
pub const TOKEN_KEY: [u8; 32] = [7; 32];
/// How long a claim holds, in seconds.
pub const LEASE: i64 = 30;

pub fn tenant(name: &str) -> TenantId {
    name.parse().unwrap()
}

/// A finding as a worker stores it: one value of a type in plain text, masked, never the value.
pub fn finding(pii_type: &str, category: &str) -> NewFinding {
    NewFinding {
        pii_type: pii_type.into(),
        category: category.into(),
        field: String::new(),
        confidence: 0.9,
        occurrences: 1,
        locations: vec![json!({ "line": 1, "column": 1 })],
        preview: "***-**-9999".into(),
        tokenized: false,
    }
}

pub fn keys_of(resources: &[Resource]) -> Vec<&str> {
    resources.iter().map(|r| r.object_key.as_str()).collect()
}

pub use testkit::domain::count;

/// Forces every running lease of the scan to have expired a second ago.
pub async fn expire_leases(conn: &mut AsyncPgConnection, scan: ScanId) {
    diesel::sql_query(format!(
        "UPDATE scan_chunks SET lease_until = now() - interval '1 second'
          WHERE scan_id = '{scan}' AND status = 'running'"
    ))
    .execute(conn)
    .await
    .unwrap();
}

/// Reads the outbox after `after` until it holds at least `want` events, or 30 s have
/// passed: the outbox holds back events while any transaction of the server that began
/// before them is still open, and other tests share this server.
pub async fn events(conn: &mut AsyncPgConnection, after: Position, want: usize) -> Vec<Delivered> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = outbox::read(conn, after, 1000).await.unwrap();
        if got.len() >= want || Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A test's world: its own database, and moto when it lists or reads objects.
pub struct World {
    pub db: testkit::TestDatabase,
    pub conn: AsyncPgConnection,
    pub keyring: Arc<KeyRing>,
    pub cursors: paging::CursorKey,
    pub moto: Option<emulators::Emulator>,
    pub cloud: Option<connectors::Cloud>,
    pub acme: TenantId,
}

impl World {
    /// Postgres only: scans can be created, listed and cancelled, not enumerated.
    pub async fn new() -> Self {
        let db = testkit::database().await;
        let conn = AsyncPgConnection::establish(&db.url).await.unwrap();
        let (master, _) = keys::MasterKey::generate().unwrap();
        let master = Arc::new(master);
        Self {
            db,
            conn,
            keyring: Arc::new(KeyRing::new(master.clone())),
            cursors: paging::CursorKey::new(&master.derive(b"cursor")),
            moto: None,
            cloud: None,
            acme: tenant("acme"),
        }
    }

    /// Postgres and moto.
    pub async fn with_storage() -> Self {
        let mut world = Self::new().await;
        let moto = emulators::moto(&[]);
        world.cloud = Some(seed::moto_cloud(&moto.url()));
        world.moto = Some(moto);
        world
    }

    /// Another connection to this test's database.
    pub async fn connect(&self) -> AsyncPgConnection {
        AsyncPgConnection::establish(&self.db.url).await.unwrap()
    }

    /// Creates `bucket` in moto (or finds it) holding `objects` (key, content) besides what it
    /// held, and returns a store that writes to it.
    pub async fn bucket(&self, bucket: &str, objects: &[(&str, &str)]) -> Arc<dyn ObjectStore> {
        let url = self.moto.as_ref().expect("a world with storage").url();
        let store = seed::s3_bucket(&url, bucket).await;
        let items: Vec<(&str, &[u8])> = objects.iter().map(|(k, v)| (*k, v.as_bytes())).collect();
        seed::put_all(store.as_ref(), &items).await;
        store
    }

    /// An aws connector of `tenant` over `bucket`.
    pub async fn connector(&mut self, tenant: &TenantId, name: &str, bucket: &str) -> ConnectorId {
        testkit::domain::connector(&mut self.conn, &self.keyring, tenant, name, bucket).await
    }

    /// Queues a full parallel scan of `connectors` with `options`.
    pub async fn scan(
        &mut self,
        tenant: &TenantId,
        connectors: &[ConnectorId],
        options: Value,
    ) -> ScanId {
        self.scan_of(tenant, connectors, "full", options).await
    }

    /// Queues a parallel scan of `kind` (full or incremental).
    pub async fn scan_of(
        &mut self,
        tenant: &TenantId,
        connectors: &[ConnectorId],
        kind: &str,
        options: Value,
    ) -> ScanId {
        let ids: Vec<String> = connectors.iter().map(ToString::to_string).collect();
        scans::store::create(
            &mut self.conn,
            tenant,
            &TOKEN_KEY,
            &scans::store::NewScan {
                connectors: &ids,
                kind: Some(kind),
                options: Some(&options),
                tier: scans::Tier::standard(),
                origin: scans::store::Origin::Parallel,
            },
        )
        .await
        .unwrap()
        .id
    }

    /// The coordinator's part: starts the oldest queued scan, which must be `scan`, and
    /// enumerates it into chunks.
    pub async fn start(&mut self, tenant: &TenantId, scan: ScanId) {
        let started = scans::lifecycle::start_next(&mut self.conn).await.unwrap();
        assert_eq!(started, Some((tenant.clone(), scan)));
        let cloud = self.cloud.as_ref().expect("a world with storage");
        scans::enumerate::enumerate(&mut self.conn, cloud, &self.keyring, tenant, scan)
            .await
            .unwrap();
    }

    /// Queues, starts and enumerates a scan.
    pub async fn started(
        &mut self,
        tenant: &TenantId,
        connectors: &[ConnectorId],
        options: Value,
    ) -> ScanId {
        let scan = self.scan(tenant, connectors, options).await;
        self.start(tenant, scan).await;
        scan
    }

    /// Claims the scan's next chunk as `worker`; there must be one.
    pub async fn claim(&mut self, tenant: &TenantId, scan: ScanId, worker: &str) -> Claim {
        lease::claim(&mut self.conn, worker, Some((tenant, scan)), LEASE)
            .await
            .unwrap()
            .expect("a chunk to claim")
    }

    /// Works every chunk of the scan through the lease protocol, each resource's outcome
    /// chosen by `outcome`, one batch per chunk. Returns the claims, in order.
    pub async fn run(
        &mut self,
        tenant: &TenantId,
        scan: ScanId,
        outcome: impl Fn(&Resource) -> Outcome,
    ) -> Vec<Claim> {
        let mut claims = Vec::new();
        while let Some(claim) = lease::claim(&mut self.conn, "runner", Some((tenant, scan)), LEASE)
            .await
            .unwrap()
        {
            let pending = lease::pending(&mut self.conn, &claim).await.unwrap();
            let batch = pending
                .into_iter()
                .map(|r| {
                    let o = outcome(&r);
                    (r, o)
                })
                .collect();
            let held = record::record(&mut self.conn, &claim, batch, LEASE)
                .await
                .unwrap();
            assert_eq!(held, Held::Yes);
            let held = scans::lifecycle::complete(&mut self.conn, &claim)
                .await
                .unwrap();
            assert_eq!(held, Held::Yes);
            claims.push(claim);
        }
        claims
    }
}

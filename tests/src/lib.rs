//! The end-to-end test harness: each [`TestApp`] is a real service (the same `configure` the
//! binary uses) on a real loopback port, over its own fresh Postgres database.

use std::collections::HashMap;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use base64::Engine as _;
pub use testkit::TestDatabase;

/// Which service to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    Tokens,
    Platform,
}

/// A running service and what a test needs to talk to it.
#[derive(Debug)]
pub struct TestApp {
    pub service: Service,
    /// `http://127.0.0.1:PORT`
    pub origin: String,
    pub http: reqwest::Client,
    pub db: TestDatabase,
    handle: ServerHandle,
}

/// The variables a test service starts with; tests may override any of them.
pub fn default_env(db: &TestDatabase) -> HashMap<String, String> {
    let master_key = base64::engine::general_purpose::STANDARD.encode(rand_bytes());
    HashMap::from([
        ("DATABASE_URL".to_owned(), db.url.clone()),
        ("DATABASE_POOL_SIZE".to_owned(), "4".to_owned()),
        // Two remediation tasks leave the small pool room for requests.
        ("DPS_REMEDIATION_TASKS".to_owned(), "2".to_owned()),
        ("DATABASE_WAIT_TIMEOUT_MS".to_owned(), "2000".to_owned()),
        ("DPS_MIGRATE_ON_START".to_owned(), "false".to_owned()),
        (
            "DPS_AUTH_JWKS".to_owned(),
            testkit::jwks_file().to_string_lossy().into_owned(),
        ),
        (
            "DPS_AUTH_ISSUER".to_owned(),
            testkit::TEST_ISSUER.to_owned(),
        ),
        (
            "DPS_AUTH_AUDIENCE".to_owned(),
            testkit::TEST_AUDIENCE.to_owned(),
        ),
        ("DPS_MASTER_KEY".to_owned(), master_key),
        ("BIND_ADDR".to_owned(), "127.0.0.1:0".to_owned()),
        ("HTTP_WORKERS".to_owned(), "1".to_owned()),
        // Webhooks in tests go to servers on loopback.
        ("DPS_ALLOW_PRIVATE_NETWORKS".to_owned(), "true".to_owned()),
        // Tests stay on loopback. An Azure connector's own secret is exchanged at Entra ID
        // without any platform credential, so a connector a test makes up would reach the
        // internet (and wait out its timeouts where there is none): its Entra ID is a closed
        // loopback port unless the test runs one.
        (
            "AZURE_AUTHORITY_HOST".to_owned(),
            "http://127.0.0.1:1".to_owned(),
        ),
    ])
}

fn rand_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes
}

/// Sets platform-api's console up as the dev stack does: cookies for plain HTTP, and the dev
/// sign-in of `tenant`'s users `admin` (roles admin and analyst) and `analyst` (analyst),
/// whose tokens the test identity provider signs. For [`TestApp::spawn_changed`].
pub fn dev_console(tenant: &str) -> impl FnOnce(&mut platform_api::Extra) + use<> {
    let tenant = tenant.to_owned();
    move |extra| {
        let minter = auth::TokenMinter::from_pem(
            testkit::minter().private_pem(),
            testkit::TEST_KID,
            testkit::TEST_ISSUER,
            testkit::TEST_AUDIENCE,
        )
        .unwrap_or_else(|e| panic!("dev minter: {e}"));
        extra.console.secure_cookies = false;
        extra.console.dev_sign_in = Some(platform_api::DevSignIn {
            minter: std::sync::Arc::new(minter),
            tenant,
            users: vec![
                platform_api::DevUser {
                    user: "admin".into(),
                    roles: vec!["admin".into(), "analyst".into()],
                },
                platform_api::DevUser {
                    user: "analyst".into(),
                    roles: vec!["analyst".into()],
                },
            ],
        });
    }
}

impl TestApp {
    pub async fn spawn(service: Service) -> Self {
        Self::spawn_with(service, |_| {}).await
    }

    /// Starts `service` on a fresh database with the default test environment, changed by
    /// `tweak` first.
    pub async fn spawn_with(
        service: Service,
        tweak: impl FnOnce(&mut HashMap<String, String>),
    ) -> Self {
        Self::spawn_on(service, testkit::database().await, tweak).await
    }

    /// Starts `service` on `db` (another app's database, to run both services over one
    /// Postgres as deployed; give both the same `DPS_MASTER_KEY` in `tweak`).
    pub async fn spawn_on(
        service: Service,
        db: TestDatabase,
        tweak: impl FnOnce(&mut HashMap<String, String>),
    ) -> Self {
        Self::spawn_changed(service, db, tweak, |_| {}).await
    }

    /// platform-api with its console set up as the dev stack sets it: cookies for plain
    /// HTTP, and the dev sign-in of `tenant`'s users `admin` (roles admin and analyst) and
    /// `analyst` (analyst), whose tokens the test identity provider signs.
    pub async fn spawn_console(tenant: &str) -> Self {
        Self::spawn_changed(
            Service::Platform,
            testkit::database().await,
            |_| {},
            dev_console(tenant),
        )
        .await
    }

    /// Starts `service` on `db`, its environment changed by `tweak` and (platform-api's)
    /// `Extra` by `change`.
    pub async fn spawn_changed(
        service: Service,
        db: TestDatabase,
        tweak: impl FnOnce(&mut HashMap<String, String>),
        change: impl FnOnce(&mut platform_api::Extra),
    ) -> Self {
        let mut env = default_env(&db);
        tweak(&mut env);
        let lookup = move |k: &str| env.get(k).cloned();
        let started = match service {
            Service::Tokens => {
                let config = tokens_api::Config::from_lookup(&lookup)
                    .unwrap_or_else(|e| panic!("test configuration: {e}"));
                dps_http::start::<tokens_api::TokensApi>(
                    &config.common,
                    tokens_api::Extra::from_config(&config)
                        .unwrap_or_else(|e| panic!("tokens-api extra: {e}")),
                )
                .await
            }
            Service::Platform => {
                let config = platform_api::Config::from_lookup(&lookup)
                    .unwrap_or_else(|e| panic!("test configuration: {e}"));
                let mut extra = platform_api::Extra::from_config(&config)
                    .unwrap_or_else(|e| panic!("platform-api extra: {e}"));
                change(&mut extra);
                dps_http::start::<platform_api::PlatformApi>(&config.common, extra).await
            }
        };
        let (server, addr) = started.unwrap_or_else(|e| panic!("cannot start {service:?}: {e}"));
        let handle = server.handle();
        tokio::spawn(server);
        boot::install_tls_provider();
        // A pooled connection idle past the server's keep-alive (actix's 5 s) may be closed by
        // the server just as the client reuses it: the request then fails with an incomplete
        // message. Dropping idle connections first makes that race impossible.
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .unwrap_or_else(|e| panic!("client: {e}"));
        Self {
            service,
            origin: format!("http://{addr}"),
            http,
            db,
            handle,
        }
    }

    /// The service's base path: `/api/v1/tokens` or `/api/v1`.
    pub fn base(&self) -> &'static str {
        match self.service {
            Service::Tokens => "/api/v1/tokens",
            Service::Platform => "/api/v1",
        }
    }

    /// An absolute URL for a path under the service's base path.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}{}", self.origin, self.base(), path)
    }

    /// An access token for `user` in `tenant` with `roles`, valid for an hour.
    pub fn token(&self, tenant: &str, user: &str, roles: &[&str]) -> String {
        testkit::minter()
            .mint(tenant, user, roles, Duration::from_secs(3600))
            .unwrap_or_else(|e| panic!("mint: {e}"))
    }

    /// A pooled connection to this test's database, for assertions on stored rows.
    pub async fn conn(&self) -> db::AsyncPgConnection {
        use diesel_async::AsyncConnection as _;
        db::AsyncPgConnection::establish(&self.db.url)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"))
    }

    pub async fn stop(self) {
        self.handle.stop(true).await;
    }
}

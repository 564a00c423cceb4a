//! The local development environment the dev stack (`devstack`) and `dpsctl` share: a Postgres
//! cluster, a signing key with its JWKS, and a master key, all under `target/dev/` so that they
//! persist across runs.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use auth::TokenMinter;
use pgcluster::{Cluster, Durability};

pub const DEV_ISSUER: &str = "dps-dev";
pub const DEV_AUDIENCE: &str = "dps";
pub const DEV_KID: &str = "dps-dev-1";
pub const DEV_TENANT: &str = "dev";

/// `DPS_DEV_DIR`, else (unset or empty) `target/dev` of this workspace.
pub fn dev_dir() -> PathBuf {
    std::env::var_os("DPS_DEV_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/dev"))
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    file.write_all(bytes)?;
    fs::rename(&tmp, path)?;
    Ok(())
}

/// The dev identity provider: loads the signing key, or makes one (and its JWKS) the first time.
pub fn dev_minter() -> anyhow::Result<(TokenMinter, PathBuf)> {
    let dir = dev_dir().join("identity");
    let key_path = dir.join("signing-key.pem");
    let jwks_path = dir.join("jwks.json");
    let minter = if key_path.is_file() {
        let pem = fs::read(&key_path).with_context(|| format!("reading {}", key_path.display()))?;
        TokenMinter::from_pem(&pem, DEV_KID, DEV_ISSUER, DEV_AUDIENCE)?
    } else {
        let minter = TokenMinter::generate(DEV_KID, DEV_ISSUER, DEV_AUDIENCE)?;
        write_private(&key_path, minter.private_pem())?;
        minter
    };
    if !jwks_path.is_file() {
        fs::create_dir_all(&dir)?;
        fs::write(&jwks_path, minter.jwks_json())?;
    }
    Ok((minter, jwks_path))
}

/// The dev master key file, made the first time.
pub fn dev_master_key_file() -> anyhow::Result<PathBuf> {
    let path = dev_dir().join("master.key");
    if !path.is_file() {
        let (_, text) = keys::MasterKey::generate()?;
        write_private(&path, text.as_bytes())?;
    }
    Ok(path)
}

/// Where the dev cluster lives: `target/dev/pg`, unless this runs as root and the `postgres`
/// account cannot reach that folder (a checkout inside a private directory), in which case a
/// folder under /var/tmp named after the checkout is used.
fn dev_cluster_root() -> anyhow::Result<PathBuf> {
    let preferred = dev_dir().join("pg");
    fs::create_dir_all(&preferred)?;
    if Cluster::service_account_can_reach(&preferred) {
        return Ok(preferred);
    }
    let canonical = fs::canonicalize(&preferred)?;
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        canonical.to_string_lossy().as_bytes(),
    );
    let tag: String = digest.as_ref()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let fallback = PathBuf::from(format!("/var/tmp/dps-dev-{tag}/pg"));
    eprintln!(
        "note: the postgres account cannot reach {}; the dev cluster lives in {} instead",
        preferred.display(),
        fallback.display()
    );
    Ok(fallback)
}

/// The database a command talks to. When the command had to start the dev cluster, dropping
/// this stops it again, so no command leaves a server behind that it started (a cluster that
/// was already running is left alone).
pub struct DevDatabase {
    pub url: String,
    started: Option<Cluster>,
}

impl std::fmt::Debug for DevDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevDatabase")
            .field("started_cluster", &self.started.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for DevDatabase {
    fn drop(&mut self) {
        if let Some(cluster) = self.started.take() {
            match cluster.stop() {
                Ok(()) => eprintln!(
                    "stopped the dev Postgres cluster (its data is kept for the next run)"
                ),
                Err(e) => eprintln!("could not stop the dev Postgres cluster: {e}"),
            }
        }
    }
}

/// A database to talk to: `DATABASE_URL` when set (it always wins), else the dev cluster,
/// started if needed.
pub async fn database() -> anyhow::Result<DevDatabase> {
    if let Some(url) = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    {
        return Ok(DevDatabase { url, started: None });
    }
    let mut cluster = Cluster::open_or_init(&dev_cluster_root()?, Durability::Durable)?;
    let was_running = cluster.is_running();
    cluster.start()?;
    let admin_url = cluster.url("postgres");
    let database = DevDatabase {
        url: cluster.url(DEV_DATABASE),
        started: (!was_running).then_some(cluster),
    };
    // On failure from here on, dropping `database` stops the cluster again.
    ensure_database(&admin_url, DEV_DATABASE).await?;
    Ok(database)
}

const DEV_DATABASE: &str = "dps";

async fn ensure_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    use diesel::sql_types::Text;
    use diesel_async::{
        AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _,
    };
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = Text)]
        #[expect(dead_code, reason = "only the row's existence matters")]
        datname: String,
    }
    let mut conn = AsyncPgConnection::establish(admin_url)
        .await
        .context("connecting to the dev cluster")?;
    let found: Vec<Found> =
        db::sql("SELECT datname::text AS datname FROM pg_database WHERE datname = $1")
            .bind::<Text, _>(name)
            .load(&mut conn)
            .await?;
    if found.is_empty() {
        conn.batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await?;
    }
    Ok(())
}

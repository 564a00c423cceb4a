//! `scan-worker`: works on one scan's chunks until the scan has no work left. Run any number
//! of them, on any number of machines (as Kubernetes Jobs, for example): they share the work
//! through leases and fencing, and produce the same result as one.
//!
//! **In the customer's infrastructure** it needs only the environment of
//! `GET /scans/:id/deployment-config` and its own cloud identity. It claims chunks from the
//! platform's coordinator API with the scan's worker token, reads the objects with its own
//! credentials, and reports findings without values: the values never leave it.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `SCAN_ID` | The scan to work on. |
//! | `AUTH_TOKEN` | The scan's worker token; a worker with another token is refused. |
//! | `COORDINATOR_URL` | The platform-api that issued the configuration. |
//! | cloud variables | The worker's own identity, as for platform-api (docs/configuration.md, "Cloud access"); `AZURE_CLIENT_SECRET` for Azure connectors that use a client secret, which the platform never hands out. For GCP, the worker presents its own `GOOGLE_APPLICATION_CREDENTIALS` identity (the customer's, serving this one scan). |
//! | `DPS_ALLOW_PRIVATE_NETWORKS` | `true` lets `COORDINATOR_URL` be `http` or a private address (as for the services' outbound URLs). |
//! | `LOG_FORMAT`, `RUST_LOG` | As for the services. |
//!
//! **On the operator's own machines** it may instead work through the platform's Postgres, as
//! platform-api's own workers do: set `DATABASE_URL` and `DPS_MASTER_KEY` (or
//! `DPS_MASTER_KEY_FILE`); then `COORDINATOR_URL` is only logged, GCP connectors present their
//! tenant's subject token as platform-api's do (`DPS_GCP_OIDC_ISSUER`), and
//! `DPS_SCAN_LEASE_SECONDS` (default 30) and `DATABASE_STATEMENT_TIMEOUT_MS` (default 30000)
//! apply.
//!
//! Exit status: 0 when the scan ended (whatever its status), 2 for a refused token or an
//! unknown scan, 1 for any other failure (a configuration problem included).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn required(name: &str) -> anyhow::Result<String> {
    var(name).with_context(|| format!("{name} must be set"))
}

fn main() -> std::process::ExitCode {
    // First, before any thread: a PDF-reading child of this program is served and exits here.
    extract::init_isolation();
    serve()
}

#[tokio::main]
async fn serve() -> std::process::ExitCode {
    boot::init_tracing(boot::LogFormat::from_env(&boot::Env::process()).unwrap_or_default());
    match run().await {
        Ok(summary) => {
            tracing::info!(
                chunks = summary.chunks,
                status = summary.status.as_str(),
                "scan-worker done"
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            let refused = e.downcast_ref::<scans::ScanError>().is_some_and(|s| {
                matches!(
                    s,
                    scans::ScanError::Unauthorized | scans::ScanError::NotFound
                )
            });
            tracing::error!(error = %format!("{e:#}"), "scan-worker failed");
            std::process::ExitCode::from(if refused { 2 } else { 1 })
        }
    }
}

async fn run() -> anyhow::Result<scans::coordinator::Summary> {
    let scan = ids::ScanId::parse(&required("SCAN_ID")?).context("SCAN_ID must be a scan id")?;
    let token = required("AUTH_TOKEN")?;
    let mut env = connectors::CloudEnv::from_env()?;
    let id = scans::coordinator::process_worker_id("scan-worker");
    if var("DATABASE_URL").is_none() {
        // In the customer's infrastructure the worker's GCP identity is the customer's own, and
        // it works for one scan of one tenant: that identity is the one it presents.
        env.gcp.single_identity = env.gcp.identity.is_some();
        let cloud = connectors::Cloud::new(env)?;
        return through_coordinator(scan, token, cloud, id).await;
    }
    let master = keys::MasterKey::from_env(&boot::Env::process())?;
    // On the operator's machines it is the platform, and presents the scan's tenant's subject.
    env.gcp.for_tenants(&master)?;
    let cloud = connectors::Cloud::new(env)?;
    let lease_seconds: i64 = match var("DPS_SCAN_LEASE_SECONDS") {
        None => scans::worker::LEASE_SECONDS,
        Some(v) => v
            .trim()
            .parse()
            .ok()
            .filter(|s| (1..=3600).contains(s))
            .context("DPS_SCAN_LEASE_SECONDS must be 1 to 3600")?,
    };
    let pool = db::build_pool(&db::PoolConfig {
        url: required("DATABASE_URL")?,
        max_size: 2,
        statement_timeout: Duration::from_millis(
            var("DATABASE_STATEMENT_TIMEOUT_MS")
                .map(|v| v.trim().parse())
                .transpose()
                .context("DATABASE_STATEMENT_TIMEOUT_MS must be milliseconds")?
                .unwrap_or(30_000),
        ),
        application_name: "scan-worker".into(),
        wait_timeout: Duration::from_secs(10),
    })?;
    let worker = scans::Worker::new(id, cloud, Arc::new(keys::KeyRing::new(Arc::new(master))))
        .with_lease_seconds(lease_seconds)
        .with_tokens(Arc::new(scans::tokens::Recorded));
    tracing::info!(
        %scan,
        worker = %worker.id,
        coordinator = var("COORDINATOR_URL").as_deref().unwrap_or("(not set)"),
        "scan-worker starting, through the platform's database"
    );
    Ok(scans::coordinator::work_on(&pool, &worker, scan, &token).await?)
}

/// Claims and runs chunks through the coordinator API until the scan has ended.
async fn through_coordinator(
    scan: ids::ScanId,
    token: String,
    cloud: connectors::Cloud,
    id: String,
) -> anyhow::Result<scans::coordinator::Summary> {
    boot::install_tls_provider();
    let egress = egress::Egress::from_env(&boot::Env::process())?;
    let mut coordinator = scan_worker::Remote::new(
        &egress,
        &required("COORDINATOR_URL")?,
        scan,
        token,
        var("AZURE_CLIENT_SECRET"),
    )?;
    let worker = scans::Worker::without_keys(id, cloud);
    tracing::info!(%scan, worker = %worker.id, "scan-worker starting, through the coordinator API");
    Ok(scan_worker::work_through(&mut coordinator, &worker, scan).await?)
}

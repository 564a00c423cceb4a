//! The in-process coordinator: starts queued scans and enumerates them, ends scans past their
//! deadline, gives up chunks whose workers keep dying, and runs a pool of worker tasks. Every
//! replica of platform-api runs one; they share the work through Postgres (SKIP LOCKED claims
//! and an advisory lock per enumeration), so any number of replicas behave as one.

use std::sync::Arc;
use std::time::Duration;

use diesel::sql_types::{Bool, Text};
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use db::schema::scans;
use ids::{ScanId, TenantId};

use crate::error::ScanError;
use crate::worker::Worker;
use crate::{enumerate, lease, lifecycle, rows};

/// How often the coordinator looks for work when idle.
const TICK: Duration = Duration::from_millis(500);
/// How often a coordinator prunes the outbox and ended scans' resources.
const PRUNE: Duration = Duration::from_secs(3600);
/// How long one round of resource pruning may run.
const RETENTION_BUDGET: Duration = Duration::from_secs(60);
/// How long an idle worker task waits before looking for a chunk again.
const IDLE: Duration = Duration::from_millis(250);

/// Wakes the coordinator and idle worker tasks of this process before their next tick: a new
/// scan is picked up, and its chunks claimed, at once rather than after up to a tick each.
/// Other processes still find the work on their own ticks.
#[derive(Debug, Clone, Default)]
pub struct Wake(Arc<Notify>);

impl Wake {
    /// Wakes every task waiting now.
    pub fn ring(&self) {
        self.0.notify_waiters();
    }

    /// Waits for a ring, or `at_most`.
    async fn wait(&self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.0.notified()).await;
    }
}

/// The coordinator and its worker tasks.
#[derive(Clone)]
pub struct Coordinator {
    pub pool: db::Pool,
    pub worker: Worker,
    /// Worker tasks in this process.
    pub tasks: usize,
    pub wake: Wake,
    /// Enumerations this process runs at once ([`Coordinator::enumerations`]). Each holds a
    /// pooled connection for as long as its listing runs (the connection carries its advisory
    /// lock), which may be minutes: unbounded, a few large scans would take the pool every
    /// request shares. A queued scan waits for a free one, and stays `queued` meanwhile.
    pub enumerations: Arc<Semaphore>,
    /// Days an ended scan keeps its resource rows (`crate::retention`); `None` keeps them.
    pub resource_retention_days: Option<u32>,
    /// Days a resolved finding is kept (`crate::retention`); `None` keeps them.
    pub resolved_findings_retention_days: Option<u32>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("worker", &self.worker.id)
            .field("tasks", &self.tasks)
            .finish_non_exhaustive()
    }
}

#[derive(diesel::QueryableByName)]
struct Locked {
    #[diesel(sql_type = Bool)]
    locked: bool,
}

/// Takes the session advisory lock that marks `scan` as being enumerated.
async fn try_lock(conn: &mut AsyncPgConnection, scan: ScanId) -> Result<bool, ScanError> {
    let rows: Vec<Locked> =
        db::sql("SELECT pg_try_advisory_lock(hashtext('dps-enumerate:' || $1)) AS locked")
            .bind::<Text, _>(scan.to_string())
            .load(conn)
            .await?;
    Ok(rows.into_iter().next().is_some_and(|r| r.locked))
}

async fn unlock(conn: &mut AsyncPgConnection, scan: ScanId) -> Result<(), ScanError> {
    db::sql("SELECT pg_advisory_unlock(hashtext('dps-enumerate:' || $1))")
        .bind::<Text, _>(scan.to_string())
        .execute(conn)
        .await?;
    Ok(())
}

impl Coordinator {
    /// Starts the coordinator loop and the worker tasks on the current runtime.
    pub fn spawn(self) {
        for task in 0..self.tasks {
            let me = self.clone();
            tokio::spawn(async move { me.work(task).await });
        }
        if self.resource_retention_days.is_some() || self.resolved_findings_retention_days.is_some()
        {
            let me = self.clone();
            tokio::spawn(async move { me.retain().await });
        }
        tokio::spawn(async move { self.coordinate().await });
    }

    /// Every [`PRUNE`], deletes the resource rows of scans that ended, and the findings that
    /// were resolved, longer ago than their retentions, for at most [`RETENTION_BUDGET`] each;
    /// the rest waits for the next round. Replicas may do this together: one deletes what the
    /// other then finds gone.
    async fn retain(self) {
        use crate::retention::{prune_resolved_findings, prune_resources};
        fn report(what: &str, days: u32, pruned: Result<u64, ScanError>) {
            match pruned {
                Ok(0) => {}
                Ok(rows) => tracing::info!(rows, days, "pruned {what}"),
                Err(e) => tracing::warn!(error = %e, "pruning {what} failed"),
            }
        }
        loop {
            match self.pool.get().await {
                Ok(mut conn) => {
                    if let Some(days) = self.resource_retention_days {
                        let pruned = prune_resources(&mut conn, days, RETENTION_BUDGET).await;
                        report("ended scans' resources", days, pruned);
                    }
                    if let Some(days) = self.resolved_findings_retention_days {
                        let pruned =
                            prune_resolved_findings(&mut conn, days, RETENTION_BUDGET).await;
                        report("resolved findings", days, pruned);
                    }
                }
                Err(_) => tracing::warn!("retention: no database connection"),
            }
            tokio::time::sleep(PRUNE).await;
        }
    }

    async fn coordinate(self) {
        let mut pruned: Option<std::time::Instant> = None;
        loop {
            if let Err(e) = self.tick().await {
                tracing::warn!(error = %e, "scan coordinator tick failed");
            }
            if pruned.is_none_or(|at| at.elapsed() >= PRUNE) {
                pruned = Some(std::time::Instant::now());
                if let Err(e) = self.prune().await {
                    tracing::warn!(error = %e, "pruning the scans outbox failed");
                }
            }
            self.wake.wait(TICK).await;
        }
    }

    /// Deletes outbox events past their retention, and folds the open findings counts of
    /// backends that have ended.
    async fn prune(&self) -> Result<(), ScanError> {
        let mut conn = self.pool.get().await.map_err(|_| pool_error())?;
        let pruned = crate::outbox::prune(&mut conn).await?;
        if pruned > 0 {
            tracing::info!(events = pruned, "pruned the scans outbox");
        }
        let folded = crate::open_counts::fold(&mut conn).await?;
        if folded > 0 {
            tracing::debug!(
                counts = folded,
                "folded ended backends' open findings counts"
            );
        }
        Ok(())
    }

    /// One round: timeouts, dead chunks, enumerations left behind, queued scans.
    pub async fn tick(&self) -> Result<(), ScanError> {
        let mut conn = self.pool.get().await.map_err(|_| pool_error())?;
        lifecycle::expire(&mut conn).await?;
        lifecycle::reap(&mut conn).await?;
        lifecycle::finalize_left_behind(&mut conn).await?;
        // Scans whose enumeration stopped with the process that ran it.
        let stuck: Vec<(String, Uuid)> = scans::table
            .filter(scans::status.eq("running"))
            .filter(scans::enumeration_status.eq("in_progress"))
            .select((scans::tenant_id, scans::scan_id))
            .load(&mut conn)
            .await?;
        drop(conn);
        for (tenant, scan) in stuck {
            let Ok(permit) = self.enumerations.clone().try_acquire_owned() else {
                return Ok(());
            };
            let tenant: TenantId = tenant.parse().map_err(|_| ScanError::CorruptRow)?;
            let scan = ScanId::from_uuid(scan);
            self.enumerate_if_free(tenant, scan, permit).await?;
        }
        // A scan is started only with an enumeration free to list it.
        while let Ok(permit) = self.enumerations.clone().try_acquire_owned() {
            let mut conn = self.pool.get().await.map_err(|_| pool_error())?;
            let Some((tenant, scan)) = lifecycle::start_next(&mut conn).await? else {
                break;
            };
            drop(conn);
            tracing::info!(%scan, "scan started");
            self.enumerate_if_free(tenant, scan, permit).await?;
        }
        Ok(())
    }

    /// A limit of `n` enumerations at once (at least one).
    pub fn enumerations(n: usize) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(n.max(1)))
    }

    /// Enumerates `scan` in the background unless another process already is; `permit` is
    /// held until the listing ends.
    async fn enumerate_if_free(
        &self,
        tenant: TenantId,
        scan: ScanId,
        permit: OwnedSemaphorePermit,
    ) -> Result<(), ScanError> {
        let mut conn = self.pool.get().await.map_err(|_| pool_error())?;
        if !try_lock(&mut conn, scan).await? {
            return Ok(());
        }
        let me = self.clone();
        tokio::spawn(async move {
            let _permit = permit;
            // Re-read under the lock: it may have finished since it was listed.
            let still = rows::row(&mut conn, &tenant, scan)
                .await
                .is_ok_and(|r| r.status == "running" && r.enumeration_status == "in_progress");
            // The platform's own worker always holds the keys (`Worker::new`).
            if still
                && let Some(keyring) = me.worker.keyring.as_deref()
                && let Err(e) =
                    enumerate::enumerate(&mut conn, &me.worker.cloud, keyring, &tenant, scan).await
            {
                tracing::warn!(%scan, error = %e, "enumeration failed");
            }
            // Its chunks exist now: idle workers need not wait for their tick.
            me.wake.ring();
            if let Err(e) = unlock(&mut conn, scan).await {
                tracing::warn!(%scan, error = %e, "could not release the enumeration lock");
            }
        });
        Ok(())
    }

    async fn work(self, task: usize) {
        let id = format!("{}/task-{task}", self.worker.id);
        loop {
            match self.work_once(&id).await {
                Ok(true) => {}
                Ok(false) => self.wake.wait(IDLE).await,
                Err(e) => {
                    tracing::warn!(worker = %id, error = %e, "scan worker error");
                    tokio::time::sleep(IDLE).await;
                }
            }
        }
    }

    /// Claims and runs one chunk; false when there was none.
    async fn work_once(&self, id: &str) -> Result<bool, ScanError> {
        let mut conn = self.pool.get().await.map_err(|_| pool_error())?;
        let Some(claim) = lease::claim(&mut conn, id, None, self.worker.lease_seconds).await?
        else {
            return Ok(false);
        };
        self.worker.run_chunk(&mut conn, &claim).await?;
        Ok(true)
    }
}

fn pool_error() -> ScanError {
    ScanError::Pool
}

/// The worker id a process uses: host name and process id.
pub fn process_worker_id(kind: &str) -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{kind}@{host}:{}", std::process::id())
}

/// How a `scan-worker` run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Chunks this process ran to the end.
    pub chunks: u32,
    /// The scan's status when the worker left.
    pub status: crate::Status,
}

/// The tenant of `scan` when `token` is its worker token (from the deployment config).
pub async fn authenticate(
    conn: &mut AsyncPgConnection,
    scan: ScanId,
    token: &str,
) -> Result<TenantId, ScanError> {
    use diesel::OptionalExtension;
    let found: Option<(String, Vec<u8>)> = scans::table
        .filter(scans::scan_id.eq(scan.as_uuid()))
        .select((scans::tenant_id, scans::worker_token_hash))
        .first(conn)
        .await
        .optional()?;
    let Some((tenant, hash)) = found else {
        return Err(ScanError::NotFound);
    };
    // Comparing SHA-256 digests of a 256-bit token: timing reveals nothing usable.
    if crate::store::token_hash(token) != hash {
        return Err(ScanError::Unauthorized);
    }
    tenant.parse().map_err(|_| ScanError::CorruptRow)
}

/// Works on one scan until it has no work left, through Postgres: what `scan-worker` runs with
/// the platform's database. The per-scan token from the deployment config must match the
/// scan's.
pub async fn work_on(
    pool: &db::Pool,
    worker: &Worker,
    scan: ScanId,
    token: &str,
) -> Result<Summary, ScanError> {
    let mut conn = pool.get().await.map_err(|_| pool_error())?;
    let tenant = authenticate(&mut conn, scan, token).await?;
    let mut chunks = 0;
    loop {
        let row = rows::row(&mut conn, &tenant, scan).await?;
        let status = row.status()?;
        if status.is_terminal() {
            return Ok(Summary { chunks, status });
        }
        if status == crate::Status::Running && row.enumeration_status != "in_progress" {
            match lease::claim(
                &mut conn,
                &worker.id,
                Some((&tenant, scan)),
                worker.lease_seconds,
            )
            .await?
            {
                Some(claim) => {
                    tracing::info!(%scan, chunk = claim.chunk_no, "chunk claimed");
                    if worker.run_chunk(&mut conn, &claim).await? == crate::worker::Stop::Done {
                        chunks += 1;
                    }
                    continue;
                }
                None => {
                    // Others hold the remaining chunks; their leases may yet expire.
                    lifecycle::try_finalize(&mut conn, &tenant, scan).await?;
                }
            }
        }
        tokio::time::sleep(IDLE).await;
    }
}

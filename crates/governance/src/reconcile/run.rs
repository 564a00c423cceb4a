//! Running queued reconciliations: a background task in platform-api takes the oldest one
//! (or one whose runner stopped renewing its lease), plans it, and runs or blocks it.

use std::time::Duration;

use diesel::QueryableByName;
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Integer, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{connectors as connector_rows, governance_reconciliations};

use super::preview::{self, Plan};
use super::{Counts, Mode, Scope, Status};
use crate::evaluate::{Batch, Finding, Gates, Origin, apply};
use policies::store::{Active, active};

/// Objects evaluated per transaction when an enforced reconciliation runs.
const OBJECTS_PER_STEP: i64 = 500;
/// How long a runner holds a reconciliation without renewing. It is renewed before and after
/// the plan (one statement that may take minutes at a million findings) and after every step.
const LEASE: &str = "10 minutes";

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    reconciliation_id: Uuid,
    #[diesel(sql_type = Text)]
    mode: Mode,
    #[diesel(sql_type = Jsonb)]
    scope: Value,
    #[diesel(sql_type = Integer)]
    max_actions: i32,
    #[diesel(sql_type = Timestamptz)]
    lease_until: OffsetDateTime,
}

/// A reconciliation this runner holds.
struct Job {
    tenant: TenantId,
    id: Uuid,
    mode: Mode,
    scope: Scope,
    max_actions: u64,
    /// The lease end this runner last wrote: its token. Every write of the run requires it
    /// unchanged, so a runner whose lease ran out (and whose reconciliation another runner took)
    /// writes nothing more.
    lease: std::sync::Mutex<OffsetDateTime>,
}

impl Job {
    fn lease(&self) -> OffsetDateTime {
        self.lease.lock().map_or(OffsetDateTime::UNIX_EPOCH, |l| *l)
    }

    fn renewed(&self, until: OffsetDateTime) {
        if let Ok(mut lease) = self.lease.lock() {
            *lease = until;
        }
    }
}

/// Why a run stopped before its end, in this crate's words rather than diesel's.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The runner lost its lease to another: it stops, writing nothing more.
    #[error("the reconciliation's lease passed to another runner")]
    LeaseLost,
    /// A step would take the run past `max_actions`: nothing of it stays.
    #[error("the step would pass the reconciliation's limit")]
    OverLimit,
    #[error("database error")]
    Database(#[from] DieselError),
}

/// Why a reconciliation whose stored scope cannot be read ends at once: run with no scope, it
/// would cover every connector and policy of the tenant.
pub const SCOPE_UNREADABLE: &str =
    "the reconciliation's stored scope cannot be read; start it again";

/// Takes and runs one reconciliation; returns whether there was one. `gates_conn` reads the
/// remediation gate apart from the run's transactions (the gate fails open).
pub async fn run_once(
    conn: &mut AsyncPgConnection,
    gates_conn: &mut AsyncPgConnection,
) -> Result<bool, RunError> {
    let claimed: Option<Claimed> = diesel::sql_query(format!(
        "UPDATE governance_reconciliations r
            SET status = 'running', started_at = coalesce(r.started_at, now()),
                lease_until = now() + interval '{LEASE}'
          WHERE (r.tenant_id, r.reconciliation_id) = (
                SELECT tenant_id, reconciliation_id FROM governance_reconciliations
                 WHERE status = 'queued' OR (status = 'running' AND lease_until < now())
                 ORDER BY created_at
                 LIMIT 1
                   FOR UPDATE SKIP LOCKED)
         RETURNING r.tenant_id, r.reconciliation_id, r.mode, r.scope, r.max_actions,
                   r.lease_until"
    ))
    .get_result(conn)
    .await
    .optional()?;
    let Some(claimed) = claimed else {
        return Ok(false);
    };
    let scope = Scope::from_value(&claimed.scope);
    let readable = scope.is_some();
    let job = Job {
        tenant: db::background::parse_column::<TenantId>(&claimed.tenant_id)?,
        id: claimed.reconciliation_id,
        mode: claimed.mode,
        // Unreadable, it is never run (below): an empty scope would mean all of the tenant's.
        scope: scope.unwrap_or_default(),
        max_actions: u64::try_from(claimed.max_actions).unwrap_or(0),
        lease: std::sync::Mutex::new(claimed.lease_until),
    };
    if !readable {
        tracing::error!(tenant = %job.tenant, reconciliation = %job.id, "a reconciliation's stored scope is unreadable");
        finish(
            conn,
            &job,
            Status::Failed,
            Counts::default(),
            Some(SCOPE_UNREADABLE),
        )
        .await?;
        return Ok(true);
    }
    if let Err(e) = run(conn, gates_conn, &job).await {
        if matches!(e, RunError::LeaseLost) {
            tracing::warn!(tenant = %job.tenant, reconciliation = %job.id, "a reconciliation's lease passed to another runner; this one stops");
        } else if holds(conn, &job).await? {
            tracing::error!(tenant = %job.tenant, reconciliation = %job.id, error = %e, "a reconciliation failed");
            let counts = current_counts(conn, &job).await.unwrap_or_default();
            finish(conn, &job, Status::Failed, counts, Some("database error")).await?;
        } else {
            tracing::warn!(tenant = %job.tenant, reconciliation = %job.id, error = %e, "a reconciliation's lease passed to another runner; this one stops");
        }
    }
    Ok(true)
}

async fn run(
    conn: &mut AsyncPgConnection,
    gates_conn: &mut AsyncPgConnection,
    job: &Job,
) -> Result<(), RunError> {
    let policies = in_scope_policies(conn, job).await?;
    let planned_under = versions(&policies);
    let gates = Gates::read(gates_conn, &job.tenant, &policies).await;
    renew(conn, job).await?;
    // One snapshot for the plan and for the record of what it saw: the ledger rows not in it
    // are what other paths planned while this reconciliation ran (`elsewhere`).
    let (plan, seen): (Plan, String) = conn
        .build_transaction()
        .repeatable_read()
        .read_only()
        .run(async |conn| {
            let seen = snapshot(conn).await?;
            // The plan groups per object: give its hash tables room rather than disk.
            db::sql("SET LOCAL work_mem = '256MB'")
                .execute(conn)
                .await?;
            let plan =
                preview::plan(conn, &job.tenant, &job.scope.connectors, &policies, &gates).await?;
            Ok::<_, DieselError>((plan, seen))
        })
        .await?;
    renew(conn, job).await?;
    let mut counts = plan.dry_run_counts();
    if job.mode == Mode::DryRun {
        save_plan(conn, job, &plan, &counts).await?;
        return finish(conn, job, Status::Completed, counts, None).await;
    }
    let ended = async |conn: &mut AsyncPgConnection, status, mut counts: Counts, error| {
        counts.changes_planned_elsewhere = elsewhere(conn, job, &planned_under, &seen).await?;
        finish(conn, job, status, counts, error).await
    };
    // Enforced: nothing is simulated unless a dry-run policy simulates it while running.
    counts.actions_simulated = 0;
    counts.actions_repeated = 0;
    save_plan(conn, job, &plan, &counts).await?;
    if counts.changes_planned > job.max_actions {
        return ended(conn, Status::BlockedByLimit, counts, None).await;
    }
    // The plan was within the limit, but a request that failed after the plan was made is
    // planned again by the run (the plan saw it running): the limit holds for what the run
    // actually plans too.
    let mut changes: u64 = 0;
    let connectors = in_scope(conn, job).await?;
    for connector in connectors {
        if !policies.iter().any(|p| p.covers(connector)) {
            continue;
        }
        let mut after: Option<(String, String)> = None;
        loop {
            let findings: Vec<Finding> = scans::findings::open_after(
                conn,
                &job.tenant,
                connector,
                after.as_ref().map(|(b, k)| (b.as_str(), k.as_str())),
                OBJECTS_PER_STEP,
            )
            .await?
            .into_iter()
            .map(Finding::from)
            .collect();
            let Some(last) = findings.last() else {
                break;
            };
            after = Some((last.bucket.clone(), last.object_key.clone()));
            let mut objects: Vec<(&str, &str)> = findings
                .iter()
                .map(|f| (f.bucket.as_str(), f.object_key.as_str()))
                .collect();
            objects.dedup();
            let batch = Batch {
                tenant: &job.tenant,
                connector,
                origin: Origin::Reconciliation(job.id),
                objects: objects.len(),
                findings: &findings,
                enforce: true,
            };
            let step = conn
                .transaction::<_, RunError, _>(async |conn| {
                    // The policies stay as the plan saw them while the step writes, or the run
                    // stops: a policy since switched to dry-run, edited or deleted must not
                    // have its old version's actions planned (scan evaluation holds the same
                    // lock).
                    policies::store::lock_for_reading(conn, &job.tenant).await?;
                    if versions(&in_scope_policies(conn, job).await?) != planned_under {
                        return Ok(Step::PoliciesChanged);
                    }
                    let tally = apply(conn, &batch, &policies, &gates).await?;
                    if changes + tally.changes > job.max_actions {
                        // Nothing of this step stays: the run stops at the limit.
                        return Err(RunError::OverLimit);
                    }
                    changes += tally.changes;
                    counts.actions_planned += tally.planned;
                    counts.actions_simulated += tally.simulated;
                    counts.actions_blocked += tally.blocked;
                    counts.actions_repeated += tally.repeated;
                    progress(conn, job, &counts).await?;
                    Ok(Step::WentOn)
                })
                .await;
            match step {
                Ok(Step::WentOn) => {}
                Ok(Step::PoliciesChanged) => {
                    return ended(conn, Status::Failed, counts, Some(POLICIES_CHANGED)).await;
                }
                Err(RunError::OverLimit) => {
                    return ended(
                        conn,
                        Status::BlockedByLimit,
                        counts,
                        Some(OVER_LIMIT_WHILE_RUNNING),
                    )
                    .await;
                }
                Err(e) => return Err(e),
            }
        }
    }
    ended(conn, Status::Completed, counts, None).await
}

/// The current transaction's snapshot, as text (`xmin:xmax:xip,…`).
async fn snapshot(conn: &mut AsyncPgConnection) -> Result<String, DieselError> {
    #[derive(QueryableByName)]
    struct Snapshot {
        #[diesel(sql_type = Text)]
        seen: String,
    }
    let row: Snapshot = db::sql("SELECT pg_current_snapshot()::text AS seen")
        .get_result(conn)
        .await?;
    Ok(row.seen)
}

/// The object-changing actions of the policy versions in scope that another path (a scan's
/// evaluation, mostly) claimed in the ledger after the plan's snapshot: changes this
/// reconciliation neither planned nor counted against its limit, reported so that its counts
/// say who changed what. Read through the ledger's `(tenant_id, txid)` index: only rows newer
/// than the snapshot's xmin.
async fn elsewhere(
    conn: &mut AsyncPgConnection,
    job: &Job,
    versions: &[(ids::PolicyId, i32)],
    seen: &str,
) -> Result<u64, DieselError> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let policies: Vec<Uuid> = versions.iter().map(|(p, _)| p.as_uuid()).collect();
    let numbers: Vec<i32> = versions.iter().map(|(_, v)| *v).collect();
    let connectors: Vec<Uuid> = job.scope.connectors.iter().map(|c| c.as_uuid()).collect();
    let found: Count = db::sql(
        "SELECT count(*) AS n FROM governance_actions a
          WHERE a.tenant_id = $1
            AND a.txid >= pg_snapshot_xmin($2::pg_snapshot)::text::bigint
            AND NOT pg_visible_in_snapshot(a.txid::text::xid8, $2::pg_snapshot)
            AND a.reconciliation_id IS DISTINCT FROM $3
            AND NOT a.simulated AND a.action_type <> 'alert'
            AND (a.policy_id, a.policy_version) IN
                (SELECT * FROM unnest($4::uuid[], $5::int[]))
            AND (cardinality($6::uuid[]) = 0 OR a.connector_id = ANY($6))",
    )
    .bind::<Text, _>(job.tenant.as_str())
    .bind::<Text, _>(seen)
    .bind::<SqlUuid, _>(job.id)
    .bind::<diesel::sql_types::Array<SqlUuid>, _>(&policies)
    .bind::<diesel::sql_types::Array<Integer>, _>(&numbers)
    .bind::<diesel::sql_types::Array<SqlUuid>, _>(&connectors)
    .get_result(conn)
    .await?;
    Ok(u64::try_from(found.n).unwrap_or(0))
}

/// How one step of an enforced run ended.
enum Step {
    WentOn,
    PoliciesChanged,
}

/// Why an enforced run stopped before its plan was done: it met more object-changing actions
/// than planned (requests that failed after the plan, planned again) and reached the limit.
pub const OVER_LIMIT_WHILE_RUNNING: &str = "the run met more object-changing actions than its plan (requests that failed since, planned again) and stopped at max_actions; what it planned before stands";

/// Why an enforced run stopped when a policy changed under it.
pub const POLICIES_CHANGED: &str = "the policies changed while the reconciliation ran; what it planned before stands, start it again";

/// The tenant's active policies the reconciliation covers.
async fn in_scope_policies(
    conn: &mut AsyncPgConnection,
    job: &Job,
) -> Result<Vec<Active>, DieselError> {
    Ok(active(conn, &job.tenant)
        .await?
        .into_iter()
        .filter(|p| job.scope.policies.is_empty() || job.scope.policies.contains(&p.id))
        .collect())
}

/// Each policy and its version: what a change to any of them changes.
fn versions(policies: &[Active]) -> Vec<(ids::PolicyId, i32)> {
    policies.iter().map(|p| (p.id, p.version)).collect()
}

/// The tenant's connectors the reconciliation covers.
async fn in_scope(
    conn: &mut AsyncPgConnection,
    job: &Job,
) -> Result<Vec<ConnectorId>, DieselError> {
    if !job.scope.connectors.is_empty() {
        return Ok(job.scope.connectors.clone());
    }
    let ids: Vec<Uuid> = connector_rows::table
        .filter(connector_rows::tenant_id.eq(job.tenant.as_str()))
        .select(connector_rows::connector_id)
        .order(connector_rows::connector_id)
        .load(conn)
        .await?;
    Ok(ids.into_iter().map(ConnectorId::from_uuid).collect())
}

async fn save_plan(
    conn: &mut AsyncPgConnection,
    job: &Job,
    plan: &Plan,
    counts: &Counts,
) -> Result<(), RunError> {
    let saved = diesel::update(governance_reconciliations::table)
        .filter(governance_reconciliations::tenant_id.eq(job.tenant.as_str()))
        .filter(governance_reconciliations::reconciliation_id.eq(job.id))
        .filter(governance_reconciliations::lease_until.eq(job.lease()))
        .set((
            governance_reconciliations::plan.eq(json!(plan.items)),
            governance_reconciliations::counts.eq(json!(counts)),
        ))
        .execute(conn)
        .await?;
    if saved == 0 {
        return Err(RunError::LeaseLost);
    }
    Ok(())
}

/// Renews the lease, which must still be this runner's.
async fn renew(conn: &mut AsyncPgConnection, job: &Job) -> Result<(), RunError> {
    let until: Option<OffsetDateTime> = diesel::sql_query(format!(
        "UPDATE governance_reconciliations SET lease_until = now() + interval '{LEASE}'
          WHERE tenant_id = $1 AND reconciliation_id = $2 AND lease_until = $3
            AND status = 'running'
         RETURNING lease_until"
    ))
    .bind::<Text, _>(job.tenant.as_str())
    .bind::<SqlUuid, _>(job.id)
    .bind::<Timestamptz, _>(job.lease())
    .get_result::<Lease>(conn)
    .await
    .optional()?
    .map(|l| l.lease_until);
    job.renewed(until.ok_or(RunError::LeaseLost)?);
    Ok(())
}

#[derive(QueryableByName)]
struct Lease {
    #[diesel(sql_type = Timestamptz)]
    lease_until: OffsetDateTime,
}

/// Whether this runner still holds the reconciliation.
async fn holds(conn: &mut AsyncPgConnection, job: &Job) -> Result<bool, DieselError> {
    let held: i64 = governance_reconciliations::table
        .filter(governance_reconciliations::tenant_id.eq(job.tenant.as_str()))
        .filter(governance_reconciliations::reconciliation_id.eq(job.id))
        .filter(governance_reconciliations::status.eq("running"))
        .filter(governance_reconciliations::lease_until.eq(job.lease()))
        .count()
        .get_result(conn)
        .await?;
    Ok(held > 0)
}

/// Saves the counts so far and renews the lease.
async fn progress(
    conn: &mut AsyncPgConnection,
    job: &Job,
    counts: &Counts,
) -> Result<(), RunError> {
    let until: Option<Lease> = diesel::sql_query(format!(
        "UPDATE governance_reconciliations
            SET counts = $3, lease_until = now() + interval '{LEASE}'
          WHERE tenant_id = $1 AND reconciliation_id = $2 AND lease_until = $4
            AND status = 'running'
         RETURNING lease_until"
    ))
    .bind::<Text, _>(job.tenant.as_str())
    .bind::<SqlUuid, _>(job.id)
    .bind::<Jsonb, _>(json!(counts))
    .bind::<Timestamptz, _>(job.lease())
    .get_result(conn)
    .await
    .optional()?;
    // Lost: the step's transaction rolls back, and the run stops.
    job.renewed(until.ok_or(RunError::LeaseLost)?.lease_until);
    Ok(())
}

async fn current_counts(conn: &mut AsyncPgConnection, job: &Job) -> Result<Counts, DieselError> {
    let value: Value = governance_reconciliations::table
        .filter(governance_reconciliations::tenant_id.eq(job.tenant.as_str()))
        .filter(governance_reconciliations::reconciliation_id.eq(job.id))
        .select(governance_reconciliations::counts)
        .first(conn)
        .await?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

/// Ends the reconciliation and audits how it ended, in one transaction.
async fn finish(
    conn: &mut AsyncPgConnection,
    job: &Job,
    status: Status,
    counts: Counts,
    error: Option<&str>,
) -> Result<(), RunError> {
    let now = OffsetDateTime::now_utc();
    conn.transaction::<_, RunError, _>(async |conn| {
        let ended = diesel::update(governance_reconciliations::table)
            .filter(governance_reconciliations::tenant_id.eq(job.tenant.as_str()))
            .filter(governance_reconciliations::reconciliation_id.eq(job.id))
            .filter(governance_reconciliations::status.eq("running"))
            .filter(governance_reconciliations::lease_until.eq(job.lease()))
            .set((
                governance_reconciliations::status.eq(status.as_str()),
                governance_reconciliations::counts.eq(json!(counts)),
                governance_reconciliations::error.eq(error),
                governance_reconciliations::ended_at.eq(now),
                governance_reconciliations::lease_until.eq(None::<OffsetDateTime>),
            ))
            .execute(conn)
            .await?;
        if ended == 0 {
            // Another runner holds it now: it ends the reconciliation, and audits it, once.
            return Err(RunError::LeaseLost);
        }
        let mut details = json!({
            "reconciliation_id": job.id.to_string(),
            "mode": job.mode.as_str(),
            "status": status.as_str(),
            "counts": counts,
            "max_actions": job.max_actions,
        });
        if let (Status::BlockedByLimit, Some(error)) = (status, error) {
            details["reason"] = json!(error);
        } else if status == Status::BlockedByLimit {
            details["reason"] = json!(format!(
                "the plan would newly take {} object-changing actions, over the limit of {}; this reconciliation planned none of them",
                counts.changes_planned, job.max_actions
            ));
        }
        if counts.changes_planned_elsewhere > 0 {
            details["elsewhere"] = json!(format!(
                "{} object-changing actions of these policies were planned by another path (a \
                 scan's evaluation of newly recorded findings) while this reconciliation ran; \
                 they are not this reconciliation's and its limit did not count them",
                counts.changes_planned_elsewhere
            ));
        }
        audit::append(
            conn,
            &job.tenant,
            &[
                audit::NewEntry::new(audit::Kind::ReconciliationEnded, audit::Actor::System)
                    .simulated(job.mode == Mode::DryRun)
                    .outcome(match status {
                        Status::BlockedByLimit => "blocked_by_limit",
                        Status::Failed => "failed",
                        _ => "success",
                    })
                    .details(details),
            ],
        )
        .await?;
        Ok(())
    })
    .await
}

/// Runs reconciliations until the process ends: one after another while any is queued, else
/// a look every second.
pub fn spawn(pool: db::Pool) {
    db::background::repeat("reconciliations", Duration::from_secs(1), move || {
        let pool = pool.clone();
        async move {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            let mut gates = pool.get().await.map_err(|e| e.to_string())?;
            run_once(&mut conn, &mut gates)
                .await
                .map_err(|e| e.to_string())
        }
    });
}

//! A scan's lifecycle over Postgres: starting the next queued scan, completing chunks, ending a
//! scan when its work is done (or its deadline passes, or it is cancelled), and giving up chunks
//! whose workers keep dying. Every way a scan ends goes through [`stop`], which writes the
//! outbox's `scan_ended` event in the same transaction.

use diesel::prelude::*;
use diesel::sql_types::{Array, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{scan_chunks, scan_resources};
use ids::{ScanId, TenantId};

use crate::error::ScanError;
use crate::lease::{Claim, Held, MAX_ATTEMPTS};
use crate::model::{Enumeration, Reasons, Status, final_status};
use crate::outbox::{self, Event};
use crate::rows::{self, chunk_reasons};

/// Marks the chunk done (under its fence) and ends the scan if that was the last work. Objects
/// of the chunk its worker never reported (a worker outside the platform that ends a chunk
/// early) fail `not_reported` in the same transaction: a completed chunk leaves nothing
/// pending, so the scan's counts add up and it can end.
pub async fn complete(conn: &mut AsyncPgConnection, claim: &Claim) -> Result<Held, ScanError> {
    let done = conn
        .transaction::<_, ScanError, _>(async |conn| {
            let range: Option<(i32, i32)> = diesel::update(
                scan_chunks::table
                    .filter(scan_chunks::tenant_id.eq(claim.tenant.as_str()))
                    .filter(scan_chunks::scan_id.eq(claim.scan.as_uuid()))
                    .filter(scan_chunks::chunk_no.eq(claim.chunk_no))
                    .filter(scan_chunks::fence.eq(claim.fence))
                    .filter(scan_chunks::status.eq("running")),
            )
            .set((
                scan_chunks::status.eq("completed"),
                scan_chunks::completed_at.eq(diesel::dsl::now),
                scan_chunks::lease_until.eq(None::<OffsetDateTime>),
            ))
            .returning((scan_chunks::start_index, scan_chunks::end_index))
            .get_result(conn)
            .await
            .optional()?;
            let Some((start, end)) = range else {
                return Ok(false);
            };
            fail_pending(
                conn,
                &claim.tenant,
                claim.scan,
                claim.chunk_no,
                (start, end),
                "not_reported",
            )
            .await?;
            Ok(true)
        })
        .await?;
    if !done {
        return Ok(Held::Lost);
    }
    try_finalize(conn, &claim.tenant, claim.scan).await?;
    Ok(Held::Yes)
}

/// Fails the chunk's resources still pending with `reason`, and counts them in the chunk's
/// progress and reasons, as a report of them would have. Returns how many.
async fn fail_pending(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
    chunk_no: i32,
    (start, end): (i32, i32),
    reason: &str,
) -> Result<i32, ScanError> {
    let failed = diesel::update(
        scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq(scan.as_uuid()))
            .filter(scan_resources::idx.between(start, end))
            .filter(scan_resources::state.eq("pending")),
    )
    .set((
        scan_resources::state.eq("failed"),
        scan_resources::reason.eq(reason),
    ))
    .execute(conn)
    .await? as i32;
    if failed > 0 {
        let mut more = Reasons::default();
        more.failed.insert(reason.into(), i64::from(failed));
        let reasons = chunk_reasons(conn, tenant, scan, chunk_no, &more).await?;
        diesel::update(
            scan_chunks::table
                .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
                .filter(scan_chunks::scan_id.eq(scan.as_uuid()))
                .filter(scan_chunks::chunk_no.eq(chunk_no)),
        )
        .set((
            scan_chunks::reasons.eq(reasons),
            scan_chunks::files_processed.eq(scan_chunks::files_processed + failed),
        ))
        .execute(conn)
        .await?;
    }
    Ok(failed)
}

/// Ends a running scan whose enumeration is over and whose chunks are all done. Safe to call
/// from anywhere, any number of times: the scan row is locked and only a running scan ends.
pub async fn try_finalize(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<bool, ScanError> {
    conn.transaction::<_, ScanError, _>(async |conn| {
        let Some(row) = rows::lock(conn, tenant, scan).await? else {
            return Ok(false);
        };
        let enumeration =
            Enumeration::parse(&row.enumeration_status).ok_or(ScanError::CorruptRow)?;
        if row.status()? != Status::Running || enumeration == Enumeration::InProgress {
            return Ok(false);
        }
        let open: i64 = scan_chunks::table
            .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
            .filter(scan_chunks::scan_id.eq(scan.as_uuid()))
            .filter(scan_chunks::status.eq_any(["pending", "running"]))
            .count()
            .get_result(conn)
            .await?;
        if open > 0 {
            return Ok(false);
        }
        let options = row.options()?;
        let counts = rows::counts(conn, tenant, scan).await?;
        let (status, reason) = final_status(
            options.coverage_strategy,
            options.coverage_target,
            &counts,
            enumeration,
            false,
        );
        // A partial listing ends with what its listing said (each source that failed, or the
        // max_files that stopped it), not only that it was partial.
        let reason = match (enumeration, status, row.status_reason) {
            (Enumeration::Partial, Status::Partial, Some(listing)) => Some(listing),
            _ => reason,
        };
        let ended = stop(conn, tenant, scan, Stop::Running, status, reason.as_deref()).await?;
        Ok(ended.is_some())
    })
    .await
}

/// Which scans [`stop`] may end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Only a running scan: its work is done, or its deadline passed.
    Running,
    /// A queued or running scan: a cancel.
    Active,
}

/// Ends `scan` with `status`, in the caller's transaction, if it is still one `from` names:
/// its open chunks close, so a worker still holding one can no longer write, and the outbox
/// says so. Returns when it ended, or None when it had already ended.
pub(crate) async fn stop(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
    from: Stop,
    status: Status,
    reason: Option<&str>,
) -> Result<Option<OffsetDateTime>, ScanError> {
    #[derive(QueryableByName)]
    struct Ended {
        #[diesel(sql_type = Timestamptz)]
        completed_at: OffsetDateTime,
    }
    let from: &[&str] = match from {
        Stop::Running => &["running"],
        Stop::Active => &["queued", "running"],
    };
    let ended: Option<Ended> = db::sql(
        "UPDATE scans SET status = $3, status_reason = $4, completed_at = now()
          WHERE tenant_id = $1 AND scan_id = $2 AND status = ANY($5)
      RETURNING completed_at",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(scan.as_uuid())
    .bind::<Text, _>(status.as_str())
    .bind::<diesel::sql_types::Nullable<Text>, _>(reason)
    .bind::<Array<Text>, _>(from)
    .get_result(conn)
    .await
    .optional()?;
    let Some(ended) = ended else {
        return Ok(None);
    };
    close_chunks(conn, tenant, scan).await?;
    let connectors = rows::connector_ids(conn, tenant, scan).await?;
    outbox::write(
        conn,
        tenant,
        scan,
        &Event::ScanEnded {
            status,
            reason: reason.map(str::to_owned),
            connectors,
        },
    )
    .await?;
    tracing::info!(%scan, status = status.as_str(), "scan ended");
    Ok(Some(ended.completed_at))
}

/// Ends running scans past their deadline: partial (timeout_minutes exceeded), or failed when
/// the scan is strict and short of its target. Their workers see it at their next heartbeat
/// and stop.
pub async fn expire(conn: &mut AsyncPgConnection) -> Result<usize, ScanError> {
    conn.transaction::<_, ScanError, _>(async |conn| {
        let late: Vec<(String, Uuid)> = db::schema::scans::table
            .filter(db::schema::scans::status.eq("running"))
            .filter(db::schema::scans::deadline.lt(diesel::dsl::now))
            .select((db::schema::scans::tenant_id, db::schema::scans::scan_id))
            .for_update()
            .skip_locked()
            .load(conn)
            .await?;
        let mut ended = 0;
        for (tenant, scan) in late {
            let tenant: TenantId = tenant.parse().map_err(|_| ScanError::CorruptRow)?;
            let scan = ScanId::from_uuid(scan);
            tracing::info!(%scan, "scan timed out");
            // Partial, unless the scan is strict and short of its target, or its enumeration
            // failed: then failed, as if its work had ended there.
            let row = rows::row(conn, &tenant, scan).await?;
            let enumeration =
                Enumeration::parse(&row.enumeration_status).ok_or(ScanError::CorruptRow)?;
            let options = row.options()?;
            let counts = rows::counts(conn, &tenant, scan).await?;
            let (status, reason) = final_status(
                options.coverage_strategy,
                options.coverage_target,
                &counts,
                enumeration,
                true,
            );
            if stop(
                conn,
                &tenant,
                scan,
                Stop::Running,
                status,
                reason.as_deref(),
            )
            .await?
            .is_some()
            {
                ended += 1;
            }
        }
        Ok(ended)
    })
    .await
}

/// What a cancel returns.
#[derive(Debug, Clone)]
pub struct Cancelled {
    pub id: ScanId,
    pub files_processed: i64,
    pub findings_count: i64,
    pub cancelled_at: OffsetDateTime,
}

/// Cancels a queued or running scan. Workers see it at their next heartbeat or object and
/// stop; what they found stays.
pub async fn cancel(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
) -> Result<Cancelled, ScanError> {
    let cancelled_at = conn
        .transaction::<_, ScanError, _>(async |conn| {
            let reason = Some("cancelled by request");
            stop(conn, tenant, id, Stop::Active, Status::Cancelled, reason).await
        })
        .await?;
    let Some(cancelled_at) = cancelled_at else {
        let row = rows::row(conn, tenant, id).await?;
        return Err(ScanError::Finished(row.status()?.as_str()));
    };
    let counts = rows::counts(conn, tenant, id).await?;
    Ok(Cancelled {
        id,
        files_processed: counts.processed(),
        findings_count: counts.findings,
        cancelled_at,
    })
}

/// Ends a stopped scan's open chunks.
async fn close_chunks(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<(), ScanError> {
    diesel::update(
        scan_chunks::table
            .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
            .filter(scan_chunks::scan_id.eq(scan.as_uuid()))
            .filter(scan_chunks::status.eq_any(["pending", "running"])),
    )
    .set((
        scan_chunks::status.eq("failed"),
        scan_chunks::completed_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await?;
    Ok(())
}

/// Gives up chunks whose lease expired `MAX_ATTEMPTS` times: their unrecorded resources fail
/// with `worker_lost`, and their scans end if nothing else is left.
pub async fn reap(conn: &mut AsyncPgConnection) -> Result<usize, ScanError> {
    // Giving a chunk up and failing its unrecorded resources are one transaction: a crash in
    // between would leave resources pending under a failed chunk, never counted.
    let dead = conn
        .transaction::<_, ScanError, _>(async |conn| {
            let dead: Vec<(String, Uuid, i32, i32, i32)> = diesel::update(
                scan_chunks::table
                    .filter(scan_chunks::status.eq("running"))
                    .filter(scan_chunks::lease_until.lt(diesel::dsl::now))
                    .filter(scan_chunks::attempts.ge(MAX_ATTEMPTS)),
            )
            .set((
                scan_chunks::status.eq("failed"),
                scan_chunks::completed_at.eq(diesel::dsl::now),
            ))
            .returning((
                scan_chunks::tenant_id,
                scan_chunks::scan_id,
                scan_chunks::chunk_no,
                scan_chunks::start_index,
                scan_chunks::end_index,
            ))
            .get_results(conn)
            .await?;
            for (tenant, scan, chunk_no, start, end) in &dead {
                let tenant: TenantId = tenant.parse().map_err(|_| ScanError::CorruptRow)?;
                let scan = ScanId::from_uuid(*scan);
                fail_pending(
                    conn,
                    &tenant,
                    scan,
                    *chunk_no,
                    (*start, *end),
                    "worker_lost",
                )
                .await?;
            }
            Ok(dead)
        })
        .await?;
    for (tenant, scan, ..) in &dead {
        let tenant: TenantId = tenant.parse().map_err(|_| ScanError::CorruptRow)?;
        try_finalize(conn, &tenant, ScanId::from_uuid(*scan)).await?;
    }
    Ok(dead.len())
}

/// Ends the running scans that have nothing left to run (enumeration over, no open chunk)
/// but were not ended: the process that completed their last chunk stopped, or its
/// finalizing transaction failed, between the two. Returns how many it ended.
pub async fn finalize_left_behind(conn: &mut AsyncPgConnection) -> Result<usize, ScanError> {
    use db::schema::scans;
    let open = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(scans::tenant_id))
        .filter(scan_chunks::scan_id.eq(scans::scan_id))
        .filter(scan_chunks::status.eq_any(["pending", "running"]));
    let done: Vec<(String, Uuid)> = scans::table
        .filter(scans::status.eq("running"))
        .filter(scans::enumeration_status.ne("in_progress"))
        .filter(diesel::dsl::not(diesel::dsl::exists(open)))
        .select((scans::tenant_id, scans::scan_id))
        .load(conn)
        .await?;
    let mut ended = 0;
    for (tenant, scan) in done {
        let tenant: TenantId = tenant.parse().map_err(|_| ScanError::CorruptRow)?;
        if try_finalize(conn, &tenant, ScanId::from_uuid(scan)).await? {
            ended += 1;
        }
    }
    Ok(ended)
}

/// Takes the oldest queued scan and marks it running: its deadline is now plus its
/// `timeout_minutes`, read from its typed options, in the transaction that claims it.
pub async fn start_next(
    conn: &mut AsyncPgConnection,
) -> Result<Option<(TenantId, ScanId)>, ScanError> {
    use db::schema::scans;
    conn.transaction::<_, ScanError, _>(async |conn| {
        let next: Option<rows::Row> = scans::table
            .filter(scans::status.eq("queued"))
            .order(scans::created_at)
            .select(rows::Row::as_select())
            .for_update()
            .skip_locked()
            .first(conn)
            .await
            .optional()?;
        let Some(row) = next else {
            return Ok(None);
        };
        let tenant: TenantId = row.tenant_id.parse().map_err(|_| ScanError::CorruptRow)?;
        let timeout = i32::try_from(row.options()?.timeout_minutes).unwrap_or(i32::MAX);
        db::sql(
            "UPDATE scans SET status = 'running', started_at = now(),
                    deadline = now() + make_interval(mins => $3)
              WHERE tenant_id = $1 AND scan_id = $2",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(row.scan_id)
        .bind::<diesel::sql_types::Integer, _>(timeout)
        .execute(conn)
        .await?;
        Ok(Some((tenant, row.id())))
    })
    .await
}

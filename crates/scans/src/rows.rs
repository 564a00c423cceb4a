//! The rows every part of the protocol reads: a scan's own row, its connectors, and its counts
//! as its chunks keep them. Nothing here depends on another module of the crate but the error
//! and the model.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{scan_chunks, scan_connectors, scan_resources, scans};
use ids::{ConnectorId, ScanId, TenantId};

use crate::error::ScanError;
use crate::model::{Counts, Reasons, Status, WorkerCounts};
use crate::options::Options;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = scans, check_for_backend(diesel::pg::Pg))]
pub(crate) struct Row {
    pub tenant_id: String,
    pub scan_id: Uuid,
    pub status: String,
    pub kind: String,
    pub origin: String,
    pub options: serde_json::Value,
    pub enumeration_status: String,
    pub sources_total: i32,
    pub sources_listed: i32,
    pub status_reason: Option<String>,
    pub created_at: OffsetDateTime,
    pub started_at: Option<OffsetDateTime>,
    pub completed_at: Option<OffsetDateTime>,
}

impl Row {
    pub(crate) fn id(&self) -> ScanId {
        ScanId::from_uuid(self.scan_id)
    }

    pub(crate) fn options(&self) -> Result<Options, ScanError> {
        serde_json::from_value(self.options.clone()).map_err(|_| ScanError::CorruptRow)
    }

    pub(crate) fn status(&self) -> Result<Status, ScanError> {
        Status::parse(&self.status).ok_or(ScanError::CorruptRow)
    }
}

/// The scan's row.
pub(crate) async fn row(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
) -> Result<Row, ScanError> {
    scans::table
        .filter(scans::tenant_id.eq(tenant.as_str()))
        .filter(scans::scan_id.eq(id.as_uuid()))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or(ScanError::NotFound)
}

/// Whether the scan is still `running` (false once it ended or is gone).
pub(crate) async fn running(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
) -> Result<bool, ScanError> {
    status_is_running(conn, tenant, id, false).await
}

/// Whether the scan is still `running`, its row shared until the transaction ends: a cancel,
/// a timeout or a connector's deletion (which update the row) waits for the transaction to
/// end, and one that committed first is seen.
pub(crate) async fn running_shared(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
) -> Result<bool, ScanError> {
    status_is_running(conn, tenant, id, true).await
}

async fn status_is_running(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
    shared: bool,
) -> Result<bool, ScanError> {
    let query = scans::table
        .filter(scans::tenant_id.eq(tenant.as_str()))
        .filter(scans::scan_id.eq(id.as_uuid()))
        .select(scans::status);
    let status: Option<String> = if shared {
        query.for_share().first(conn).await.optional()?
    } else {
        query.first(conn).await.optional()?
    };
    Ok(status.as_deref() == Some(Status::Running.as_str()))
}

/// The scan's row, locked until the transaction ends.
pub(crate) async fn lock(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
) -> Result<Option<Row>, ScanError> {
    Ok(scans::table
        .filter(scans::tenant_id.eq(tenant.as_str()))
        .filter(scans::scan_id.eq(id.as_uuid()))
        .select(Row::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()?)
}

/// The scan's connectors, in the order the request named them.
pub(crate) async fn connector_ids(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<Vec<ConnectorId>, ScanError> {
    let ids: Vec<Uuid> = scan_connectors::table
        .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::scan_id.eq(scan.as_uuid()))
        .order(scan_connectors::position)
        .select(scan_connectors::connector_id)
        .load(conn)
        .await?;
    Ok(ids.into_iter().map(ConnectorId::from_uuid).collect())
}

/// The connectors of each of `scans`, each in the order its request named them; one query
/// however many scans (a list page's).
pub(crate) async fn connectors_of(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scans: &[ScanId],
) -> Result<HashMap<ScanId, Vec<ConnectorId>>, ScanError> {
    let ids: Vec<Uuid> = scans.iter().map(ScanId::as_uuid).collect();
    let links: Vec<(Uuid, Uuid)> = scan_connectors::table
        .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::scan_id.eq_any(&ids))
        .order((scan_connectors::scan_id, scan_connectors::position))
        .select((scan_connectors::scan_id, scan_connectors::connector_id))
        .load(conn)
        .await?;
    let mut out: HashMap<ScanId, Vec<ConnectorId>> = HashMap::new();
    for (scan, connector) in links {
        out.entry(ScanId::from_uuid(scan))
            .or_default()
            .push(ConnectorId::from_uuid(connector));
    }
    Ok(out)
}

/// What a scan's chunks add up to.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub counts: Counts,
    pub reasons: Reasons,
    pub workers: WorkerCounts,
}

/// A scan's resource counts by state, and by reason for those skipped or failed: sums over
/// its chunks, which keep their resources' counts (a few rows, however many resources). Before
/// its chunks exist (while it is enumerated) every resource is pending, and only those are
/// counted.
pub(crate) async fn tally(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<(Counts, Reasons), ScanError> {
    let tally = tallies(conn, tenant, &[scan])
        .await?
        .remove(&scan)
        .unwrap_or_default();
    Ok((tally.counts, tally.reasons))
}

/// [`tally`] of each of `scans`, with their workers by state: one query for their chunks and
/// one for the resources of those not chunked yet, however many scans (a list page's).
pub(crate) async fn tallies(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scans: &[ScanId],
) -> Result<HashMap<ScanId, Tally>, ScanError> {
    let ids: Vec<Uuid> = scans.iter().map(ScanId::as_uuid).collect();
    type ChunkRow = (Uuid, String, i32, i32, i32, i32, serde_json::Value);
    let chunks: Vec<ChunkRow> = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq_any(&ids))
        .select((
            scan_chunks::scan_id,
            scan_chunks::status,
            scan_chunks::start_index,
            scan_chunks::end_index,
            scan_chunks::files_scanned,
            scan_chunks::findings_count,
            scan_chunks::reasons,
        ))
        .load(conn)
        .await?;
    let mut out: HashMap<ScanId, Tally> = HashMap::new();
    for (scan, status, start, end, scanned, findings, chunk_reasons) in chunks {
        let tally = out.entry(ScanId::from_uuid(scan)).or_default();
        tally.counts.enumerated += i64::from(end - start + 1);
        tally.counts.scanned += i64::from(scanned);
        tally.counts.findings += i64::from(findings);
        let chunk_reasons: Reasons =
            serde_json::from_value(chunk_reasons).map_err(|_| ScanError::CorruptRow)?;
        tally.reasons.add(&chunk_reasons);
        tally.workers.total += 1;
        match status.as_str() {
            "running" => tally.workers.active += 1,
            "completed" => tally.workers.completed += 1,
            "failed" => tally.workers.failed += 1,
            _ => {}
        }
    }
    for tally in out.values_mut() {
        tally.counts.skipped = tally.reasons.skipped.values().sum();
        tally.counts.failed = tally.reasons.failed.values().sum();
    }
    let unchunked: Vec<Uuid> = ids
        .iter()
        .filter(|id| !out.contains_key(&ScanId::from_uuid(**id)))
        .copied()
        .collect();
    if !unchunked.is_empty() {
        let pending: Vec<(Uuid, i64)> = scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq_any(&unchunked))
            .group_by(scan_resources::scan_id)
            .select((scan_resources::scan_id, diesel::dsl::count_star()))
            .load(conn)
            .await?;
        for (scan, n) in pending {
            out.entry(ScanId::from_uuid(scan))
                .or_default()
                .counts
                .enumerated = n;
        }
    }
    Ok(out)
}

/// A scan's resource counts, by state.
pub(crate) async fn counts(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<Counts, ScanError> {
    Ok(tally(conn, tenant, scan).await?.0)
}

/// The chunk's reason counts with `more` added, to write back in the same transaction: the
/// row stays locked from this read to that write.
pub(crate) async fn chunk_reasons(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
    chunk_no: i32,
    more: &Reasons,
) -> Result<serde_json::Value, ScanError> {
    let stored: serde_json::Value = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq(scan.as_uuid()))
        .filter(scan_chunks::chunk_no.eq(chunk_no))
        .select(scan_chunks::reasons)
        .for_update()
        .first(conn)
        .await?;
    let mut reasons: Reasons = serde_json::from_value(stored).map_err(|_| ScanError::CorruptRow)?;
    reasons.add(more);
    serde_json::to_value(&reasons).map_err(|_| ScanError::CorruptRow)
}

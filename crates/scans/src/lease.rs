//! The lease protocol: claiming a chunk, holding it with heartbeats, and the fence every write
//! checks.
//!
//! Fencing: every claim bumps the chunk's `fence`. Every write a worker makes locks the chunk
//! row and checks, in the same transaction, that the fence is still the one it claimed with and
//! that the scan is still running. A worker paused past its lease (whose chunk another worker
//! has since claimed) therefore writes nothing, and a resource already recorded is never
//! recorded again, so no count is doubled.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::scan_resources;
use ids::{ConnectorId, ScanId, TenantId};

use crate::error::ScanError;

/// A chunk whose lease expired this many times is given up: its remaining resources fail with
/// `worker_lost`.
pub const MAX_ATTEMPTS: i32 = 3;

/// A chunk a worker holds.
#[derive(Debug, Clone)]
pub struct Claim {
    pub tenant: TenantId,
    pub scan: ScanId,
    pub chunk_no: i32,
    pub fence: i64,
    pub start: i32,
    pub end: i32,
}

#[derive(QueryableByName)]
struct ClaimRow {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    scan_id: Uuid,
    #[diesel(sql_type = Integer)]
    chunk_no: i32,
    #[diesel(sql_type = BigInt)]
    fence: i64,
    #[diesel(sql_type = Integer)]
    start_index: i32,
    #[diesel(sql_type = Integer)]
    end_index: i32,
}

/// The chunks a worker may claim (`$1`: the most attempts a chunk may have had): pending, or
/// running on a lease that ran out, of a running scan whose live chunks are fewer than its
/// `max_workers`.
macro_rules! due_chunks {
    () => {
        "FROM scan_chunks k
           JOIN scans s ON s.tenant_id = k.tenant_id AND s.scan_id = k.scan_id
          WHERE s.status = 'running'
            AND (k.status = 'pending'
                 OR (k.status = 'running' AND k.lease_until < now() AND k.attempts < $1))
            AND (SELECT count(*) FROM scan_chunks r
                  WHERE r.tenant_id = k.tenant_id AND r.scan_id = k.scan_id
                    AND r.status = 'running' AND r.lease_until >= now())
                < s.max_workers"
    };
}

/// Claims the next chunk that is pending, or whose holder's lease expired, of a running scan
/// (of `only`, when given), respecting each scan's worker count. Concurrent claimers skip each
/// other's rows (SKIP LOCKED), so each chunk goes to one worker; claims of one scan are
/// serialized (a transaction-scoped advisory lock on the scan), so that each counts the
/// chunks the others claimed against `max_workers`: within one statement, a claim could not
/// see a concurrent one, and a scan woken with many idle workers ran more chunks at once than
/// its `max_workers`.
pub async fn claim(
    conn: &mut AsyncPgConnection,
    worker_id: &str,
    only: Option<(&TenantId, ScanId)>,
    lease_seconds: i64,
) -> Result<Option<Claim>, ScanError> {
    let (tenant, scan) = match only {
        Some((t, s)) => (t.as_str().to_owned(), s.as_uuid()),
        None => match due_scan(conn).await? {
            Some(due) => (due.tenant_id, due.scan_id),
            None => return Ok(None),
        },
    };
    let rows: Vec<ClaimRow> = conn
        .transaction::<_, ScanError, _>(async |conn| {
            db::sql("SELECT pg_advisory_xact_lock(hashtext('dps-claim:' || $1::text))")
                .bind::<SqlUuid, _>(scan)
                .execute(conn)
                .await?;
            Ok(claim_of(conn, worker_id, &tenant, scan, lease_seconds).await?)
        })
        .await?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some(Claim {
        tenant: row.tenant_id.parse().map_err(|_| ScanError::CorruptRow)?,
        scan: ScanId::from_uuid(row.scan_id),
        chunk_no: row.chunk_no,
        fence: row.fence,
        start: row.start_index,
        end: row.end_index,
    }))
}

#[derive(QueryableByName)]
struct DueScan {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    scan_id: Uuid,
}

/// The scan whose chunk is due first, among running scans with room for another worker.
async fn due_scan(conn: &mut AsyncPgConnection) -> Result<Option<DueScan>, ScanError> {
    Ok(db::sql(concat!(
        "SELECT k.tenant_id, k.scan_id ",
        due_chunks!(),
        " ORDER BY s.created_at, k.chunk_no LIMIT 1"
    ))
    .bind::<Integer, _>(MAX_ATTEMPTS)
    .get_result(conn)
    .await
    .optional()?)
}

/// Claims the due chunk of one scan, if it has room for another worker.
async fn claim_of(
    conn: &mut AsyncPgConnection,
    worker_id: &str,
    tenant: &str,
    scan: Uuid,
    lease_seconds: i64,
) -> Result<Vec<ClaimRow>, diesel::result::Error> {
    db::sql(concat!(
        "UPDATE scan_chunks c
            SET status = 'running', worker_id = $2,
                lease_until = now() + make_interval(secs => $3),
                fence = c.fence + 1, attempts = c.attempts + 1,
                started_at = coalesce(c.started_at, now())
           FROM (SELECT k.tenant_id, k.scan_id, k.chunk_no ",
        due_chunks!(),
        "           AND k.tenant_id = $4 AND k.scan_id = $5
                  ORDER BY k.chunk_no
                  LIMIT 1
                  FOR UPDATE OF k SKIP LOCKED) pick
          WHERE c.tenant_id = pick.tenant_id AND c.scan_id = pick.scan_id
            AND c.chunk_no = pick.chunk_no
      RETURNING c.tenant_id, c.scan_id, c.chunk_no, c.fence, c.start_index, c.end_index"
    ))
    .bind::<Integer, _>(MAX_ATTEMPTS)
    .bind::<Text, _>(worker_id)
    .bind::<BigInt, _>(lease_seconds)
    .bind::<Text, _>(tenant)
    .bind::<SqlUuid, _>(scan)
    .load(conn)
    .await
}

/// Whether the worker still holds its chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    Yes,
    /// The lease went to another worker, or the scan stopped running (cancelled, timed out):
    /// stop now, write nothing more.
    Lost,
}

/// Locks the claimed chunk and checks the fence and the scan's state. The scan row is
/// share-locked for the rest of the transaction, so a cancel, timeout or connector delete
/// (which update it) happens wholly before or wholly after a worker's write.
pub(crate) async fn check_fence(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
) -> Result<Held, ScanError> {
    #[derive(QueryableByName)]
    struct Fence {
        #[diesel(sql_type = BigInt)]
        fence: i64,
        #[diesel(sql_type = Text)]
        chunk: String,
        #[diesel(sql_type = Text)]
        scan: String,
    }
    let rows: Vec<Fence> = db::sql(
        "SELECT c.fence, c.status AS chunk, s.status AS scan
           FROM scan_chunks c
           JOIN scans s ON s.tenant_id = c.tenant_id AND s.scan_id = c.scan_id
          WHERE c.tenant_id = $1 AND c.scan_id = $2 AND c.chunk_no = $3
            FOR UPDATE OF c FOR SHARE OF s",
    )
    .bind::<Text, _>(claim.tenant.as_str())
    .bind::<SqlUuid, _>(claim.scan.as_uuid())
    .bind::<Integer, _>(claim.chunk_no)
    .load(conn)
    .await?;
    Ok(match rows.into_iter().next() {
        Some(f) if f.fence == claim.fence && f.chunk == "running" && f.scan == "running" => {
            Held::Yes
        }
        _ => Held::Lost,
    })
}

/// Extends the lease; tells the worker whether to go on.
pub async fn heartbeat(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
    lease_seconds: i64,
) -> Result<Held, ScanError> {
    let updated: usize = db::sql(
        "UPDATE scan_chunks c SET lease_until = now() + make_interval(secs => $5)
           FROM scans s
          WHERE c.tenant_id = $1 AND c.scan_id = $2 AND c.chunk_no = $3 AND c.fence = $4
            AND c.status = 'running'
            AND s.tenant_id = c.tenant_id AND s.scan_id = c.scan_id AND s.status = 'running'",
    )
    .bind::<Text, _>(claim.tenant.as_str())
    .bind::<SqlUuid, _>(claim.scan.as_uuid())
    .bind::<Integer, _>(claim.chunk_no)
    .bind::<BigInt, _>(claim.fence)
    .bind::<BigInt, _>(lease_seconds)
    .execute(conn)
    .await?;
    Ok(if updated == 1 { Held::Yes } else { Held::Lost })
}

/// One enumerated object.
#[derive(Debug, Clone)]
pub struct Resource {
    pub idx: i32,
    pub connector_id: ConnectorId,
    pub bucket: String,
    pub object_key: String,
    pub size: i64,
    pub etag: Option<String>,
    pub last_modified: OffsetDateTime,
}

/// The claim a worker holds on chunk `chunk_no` of `scan` under `fence`, as it names it when
/// it reports through the coordinator API: `None` when the scan has no such chunk. Whether the
/// fence still holds is checked by each write, as for a worker in the platform.
pub async fn claim_at(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
    chunk_no: i32,
    fence: i64,
) -> Result<Option<Claim>, ScanError> {
    use db::schema::scan_chunks;
    use diesel::OptionalExtension;
    let range: Option<(i32, i32)> = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq(scan.as_uuid()))
        .filter(scan_chunks::chunk_no.eq(chunk_no))
        .select((scan_chunks::start_index, scan_chunks::end_index))
        .first(conn)
        .await
        .optional()?;
    Ok(range.map(|(start, end)| Claim {
        tenant: tenant.clone(),
        scan,
        chunk_no,
        fence,
        start,
        end,
    }))
}

/// The chunk's resources not yet recorded (all of them on a first claim; the rest after a
/// worker was lost mid-chunk).
pub async fn pending(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
) -> Result<Vec<Resource>, ScanError> {
    pending_among(conn, claim, None).await
}

/// Those of `idx` among the chunk's resources not yet recorded (a remote worker's batch): read
/// by key, not the whole chunk for every batch.
pub async fn pending_of(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
    idx: &[i32],
) -> Result<Vec<Resource>, ScanError> {
    pending_among(conn, claim, Some(idx)).await
}

async fn pending_among(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
    among: Option<&[i32]>,
) -> Result<Vec<Resource>, ScanError> {
    type Found = (
        i32,
        Uuid,
        String,
        String,
        i64,
        Option<String>,
        OffsetDateTime,
    );
    let mut query = scan_resources::table
        .filter(scan_resources::tenant_id.eq(claim.tenant.as_str()))
        .filter(scan_resources::scan_id.eq(claim.scan.as_uuid()))
        .filter(scan_resources::idx.between(claim.start, claim.end))
        .filter(scan_resources::state.eq("pending"))
        .into_boxed();
    if let Some(idx) = among {
        query = query.filter(scan_resources::idx.eq_any(idx.to_vec()));
    }
    let rows: Vec<Found> = query
        .order(scan_resources::idx)
        .select((
            scan_resources::idx,
            scan_resources::connector_id,
            scan_resources::bucket,
            scan_resources::object_key,
            scan_resources::size,
            scan_resources::etag,
            scan_resources::last_modified,
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(
            |(idx, connector, bucket, object_key, size, etag, last_modified)| Resource {
                idx,
                connector_id: ConnectorId::from_uuid(connector),
                bucket,
                object_key,
                size,
                etag,
                last_modified,
            },
        )
        .collect())
}

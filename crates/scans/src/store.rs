//! Scans in Postgres: starting one, reading it with its progress, listing, cancelling, its
//! workers, and a connector's history.

use diesel::dsl::{count_star, sum};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ring::digest;
use time::OffsetDateTime;
use uuid::Uuid;

use connectors::FieldError;
use db::schema::{
    connectors as connectors_table, findings, scan_chunks, scan_connectors, scan_resources, scans,
};
use ids::TenantId;
use paging::{BadCursor, CursorKey, Keyset, Limit, Order, Page, Position};

use crate::model::{Counts, Enumeration, Reasons, Scan, Status, WorkerCounts};
use crate::options::{self, Kind, MAX_CONNECTORS, Options, Tier};

const LIST: &str = "scans";

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("scan not found")]
    NotFound,
    /// A connector named in the request is not the tenant's.
    #[error("connector not found")]
    ConnectorNotFound(String),
    #[error("the scan request is invalid")]
    Invalid(Vec<FieldError>),
    /// The scan already ended (cancel of a finished scan).
    #[error("the scan is already {0}")]
    Finished(&'static str),
    #[error("the cursor is not valid for this list")]
    BadCursor,
    #[error("a stored scan is unreadable")]
    CorruptRow,
    #[error("database error")]
    Database(#[source] diesel::result::Error),
    #[error("no database connection available")]
    Pool,
    /// A worker's token is not the scan's.
    #[error("the worker token does not match the scan")]
    Unauthorized,
}

impl From<diesel::result::Error> for ScanError {
    fn from(e: diesel::result::Error) -> Self {
        ScanError::Database(e)
    }
}

impl From<BadCursor> for ScanError {
    fn from(_: BadCursor) -> Self {
        ScanError::BadCursor
    }
}

/// A new scan as the API returns it on creation.
#[derive(Debug, Clone)]
pub struct Created {
    pub id: Uuid,
    pub status: Status,
    pub kind: Kind,
    pub connectors: Vec<Uuid>,
    pub workers_requested: u32,
    pub created_at: OffsetDateTime,
}

/// SHA-256 of a worker token, the only form in which it is stored.
pub fn token_hash(token: &str) -> Vec<u8> {
    digest::digest(&digest::SHA256, token.as_bytes())
        .as_ref()
        .to_vec()
}

/// The per-scan worker token: derived from a server key and the scan id, so it can be shown
/// again in the deployment config without being stored.
pub fn worker_token(key: &[u8; 32], tenant: &TenantId, scan: Uuid) -> String {
    let mac = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key),
        format!("dps-scan-worker-v1\0{}\0{scan}", tenant.as_str()).as_bytes(),
    );
    let hex: String = mac.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("dpsw_{hex}")
}

/// Validates and queues a scan of `connectors` (their order is kept).
#[allow(clippy::too_many_arguments)]
pub async fn create(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    token_key: &[u8; 32],
    connector_ids: &[String],
    kind: Option<&str>,
    options: Option<&serde_json::Value>,
    tier: Tier,
    parallel: bool,
) -> Result<Created, ScanError> {
    let mut errors = Vec::new();
    let kind = match kind.map(Kind::parse) {
        Some(Some(k)) => Some(k),
        Some(None) | None => {
            errors.push(FieldError {
                field: "type".into(),
                message: "must be full or incremental".into(),
            });
            None
        }
    };
    if parallel && (connector_ids.is_empty() || connector_ids.len() > MAX_CONNECTORS) {
        errors.push(FieldError {
            field: "connectors".into(),
            message: format!("must name 1 to {MAX_CONNECTORS} connectors"),
        });
    }
    let options = match options::validate(options, tier) {
        Ok(o) => Some(o),
        Err(mut more) => {
            errors.append(&mut more);
            None
        }
    };
    let (Some(kind), Some(options), true) = (kind, options, errors.is_empty()) else {
        return Err(ScanError::Invalid(errors));
    };
    // Each id must be one of the tenant's connectors; an id that is not a UUID names none.
    let mut ids = Vec::with_capacity(connector_ids.len());
    for raw in connector_ids {
        let id = Uuid::parse_str(raw).map_err(|_| ScanError::ConnectorNotFound(raw.clone()))?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let found: Vec<Uuid> = connectors_table::table
        .filter(connectors_table::tenant_id.eq(tenant.as_str()))
        .filter(connectors_table::connector_id.eq_any(&ids))
        .select(connectors_table::connector_id)
        .load(conn)
        .await?;
    if let Some(missing) = ids.iter().find(|id| !found.contains(id)) {
        return Err(ScanError::ConnectorNotFound(missing.to_string()));
    }
    let id = Uuid::now_v7();
    let workers = options.max_workers;
    let options_json = serde_json::to_value(&options).map_err(|_| ScanError::CorruptRow)?;
    let hash = token_hash(&worker_token(token_key, tenant, id));
    let linked = ids.clone();
    let created_at = conn
        .transaction::<_, ScanError, _>(async |conn| {
            let created_at: OffsetDateTime = diesel::insert_into(scans::table)
                .values((
                    scans::tenant_id.eq(tenant.as_str()),
                    scans::scan_id.eq(id),
                    scans::kind.eq(kind.as_str()),
                    scans::origin.eq(if parallel { "parallel" } else { "connector" }),
                    scans::options.eq(options_json),
                    scans::worker_token_hash.eq(hash),
                ))
                .returning(scans::created_at)
                .get_result(conn)
                .await?;
            let links: Vec<_> = linked
                .iter()
                .enumerate()
                .map(|(position, connector)| {
                    (
                        scan_connectors::tenant_id.eq(tenant.as_str()),
                        scan_connectors::scan_id.eq(id),
                        scan_connectors::connector_id.eq(*connector),
                        scan_connectors::position.eq(position as i32),
                    )
                })
                .collect();
            diesel::insert_into(scan_connectors::table)
                .values(links)
                .execute(conn)
                .await?;
            crate::classifiers::snapshot(conn, tenant, id).await?;
            Ok(created_at)
        })
        .await?;
    Ok(Created {
        id,
        status: Status::Queued,
        kind,
        connectors: ids,
        workers_requested: workers,
        created_at,
    })
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = scans, check_for_backend(diesel::pg::Pg))]
pub(crate) struct Row {
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
    pub cancelled_at: Option<OffsetDateTime>,
}

impl Row {
    pub(crate) fn options(&self) -> Result<Options, ScanError> {
        serde_json::from_value(self.options.clone()).map_err(|_| ScanError::CorruptRow)
    }

    pub(crate) fn status(&self) -> Result<Status, ScanError> {
        Status::parse(&self.status).ok_or(ScanError::CorruptRow)
    }
}

/// A scan's resource counts, by state.
pub(crate) async fn counts(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<Counts, ScanError> {
    Ok(tally(conn, tenant, scan).await?.0)
}

/// A scan's resource counts by state, and by reason for those skipped or failed: sums over
/// its chunks, which keep their resources' counts (a few rows, however many resources). Before
/// its chunks exist (while it is enumerated) every resource is pending, and only those are
/// counted.
pub(crate) async fn tally(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<(Counts, Reasons), ScanError> {
    let chunks: Vec<(i32, i32, i32, i32, serde_json::Value)> = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq(scan))
        .select((
            scan_chunks::start_index,
            scan_chunks::end_index,
            scan_chunks::files_scanned,
            scan_chunks::findings_count,
            scan_chunks::reasons,
        ))
        .load(conn)
        .await?;
    let mut counts = Counts::default();
    let mut reasons = Reasons::default();
    if chunks.is_empty() {
        counts.enumerated = scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq(scan))
            .count()
            .get_result(conn)
            .await?;
        return Ok((counts, reasons));
    }
    for (start, end, scanned, findings, chunk_reasons) in chunks {
        counts.enumerated += i64::from(end - start + 1);
        counts.scanned += i64::from(scanned);
        counts.findings += i64::from(findings);
        let chunk_reasons: Reasons =
            serde_json::from_value(chunk_reasons).map_err(|_| ScanError::CorruptRow)?;
        reasons.add(&chunk_reasons);
    }
    counts.skipped = reasons.skipped.values().sum();
    counts.failed = reasons.failed.values().sum();
    Ok((counts, reasons))
}

async fn worker_counts(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<WorkerCounts, ScanError> {
    let rows: Vec<(String, i64)> = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq(scan))
        .group_by(scan_chunks::status)
        .select((scan_chunks::status, count_star()))
        .load(conn)
        .await?;
    let mut w = WorkerCounts::default();
    for (status, n) in rows {
        w.total += n;
        match status.as_str() {
            "running" => w.active = n,
            "completed" => w.completed = n,
            "failed" => w.failed = n,
            _ => {}
        }
    }
    Ok(w)
}

async fn view(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    row: Row,
) -> Result<Scan, ScanError> {
    let connectors = connector_ids(conn, tenant, row.scan_id).await?;
    let (counts, reasons) = tally(conn, tenant, row.scan_id).await?;
    let workers = worker_counts(conn, tenant, row.scan_id).await?;
    Ok(Scan {
        id: row.scan_id,
        status: row.status()?,
        kind: Kind::parse(&row.kind).ok_or(ScanError::CorruptRow)?,
        parallel: row.origin == "parallel",
        connectors,
        options: row.options()?,
        enumeration: Enumeration::parse(&row.enumeration_status).ok_or(ScanError::CorruptRow)?,
        sources_total: row.sources_total,
        sources_listed: row.sources_listed,
        status_reason: row.status_reason,
        counts,
        reasons,
        workers,
        created_at: row.created_at,
        started_at: row.started_at,
        completed_at: row.completed_at,
        cancelled_at: row.cancelled_at,
    })
}

/// The scan's connectors, in the order the request named them.
pub(crate) async fn connector_ids(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<Vec<Uuid>, ScanError> {
    Ok(scan_connectors::table
        .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::scan_id.eq(scan))
        .order(scan_connectors::position)
        .select(scan_connectors::connector_id)
        .load(conn)
        .await?)
}

pub(crate) async fn row(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: Uuid,
) -> Result<Row, ScanError> {
    scans::table
        .filter(scans::tenant_id.eq(tenant.as_str()))
        .filter(scans::scan_id.eq(id))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or(ScanError::NotFound)
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: Uuid,
) -> Result<Scan, ScanError> {
    let row = row(conn, tenant, id).await?;
    view(conn, tenant, row).await
}

/// List filters.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub connector: Option<Uuid>,
    pub status: Option<Status>,
    pub since: Option<OffsetDateTime>,
}

/// The tenant's scans, newest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    cursors: &CursorKey,
    tenant: &TenantId,
    filter: &Filter,
    limit: Limit,
    cursor: Option<&str>,
) -> Result<Page<Scan>, ScanError> {
    let keyset = Keyset::new(cursors, tenant, LIST, limit, cursor, Order::Descending)?;
    let mut query = scans::table
        .filter(scans::tenant_id.eq(tenant.as_str()))
        .select(Row::as_select())
        .order((scans::created_at.desc(), scans::scan_id.desc()))
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(status) = filter.status {
        query = query.filter(scans::status.eq(status.as_str()));
    }
    if let Some(since) = filter.since {
        query = query.filter(scans::created_at.ge(since));
    }
    if let Some(connector) = filter.connector {
        query = query.filter(
            scans::scan_id.eq_any(
                scan_connectors::table
                    .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
                    .filter(scan_connectors::connector_id.eq(connector))
                    .select(scan_connectors::scan_id),
            ),
        );
    }
    if let Some(after) = keyset.after::<scans::created_at, scans::scan_id, _>()? {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    let page = keyset.page(rows, |r| Position::at(r.created_at, r.scan_id));
    let mut items = Vec::with_capacity(page.items.len());
    for row in page.items {
        items.push(view(conn, tenant, row).await?);
    }
    Ok(Page {
        items,
        pagination: page.pagination,
    })
}

/// What a cancel returns.
#[derive(Debug, Clone)]
pub struct Cancelled {
    pub id: Uuid,
    pub files_processed: i64,
    pub findings_count: i64,
    pub cancelled_at: OffsetDateTime,
}

/// Cancels a queued or running scan. Workers see it at their next heartbeat or object and
/// stop; what they found stays.
pub async fn cancel(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: Uuid,
) -> Result<Cancelled, ScanError> {
    let cancelled: Option<OffsetDateTime> = diesel::update(
        scans::table
            .filter(scans::tenant_id.eq(tenant.as_str()))
            .filter(scans::scan_id.eq(id))
            .filter(scans::status.eq_any(["queued", "running"])),
    )
    .set((
        scans::status.eq("cancelled"),
        scans::cancelled_at.eq(diesel::dsl::now),
        scans::completed_at.eq(diesel::dsl::now),
        scans::status_reason.eq("cancelled by request"),
    ))
    .returning(scans::cancelled_at.assume_not_null())
    .get_result(conn)
    .await
    .optional()?;
    let Some(cancelled_at) = cancelled else {
        let row = row(conn, tenant, id).await?;
        return Err(ScanError::Finished(row.status()?.as_str()));
    };
    // Running chunks end now; a worker still holding one can no longer write (its scan is
    // not running).
    crate::engine::close_chunks(conn, tenant, id).await?;
    let counts = counts(conn, tenant, id).await?;
    crate::engine::refresh_connectors(conn, tenant, id).await?;
    Ok(Cancelled {
        id,
        files_processed: counts.processed(),
        findings_count: counts.findings,
        cancelled_at,
    })
}

/// One worker (a chunk of the enumerated resources and who ran it).
#[derive(Debug, Clone, Queryable)]
pub struct Worker {
    pub chunk_no: i32,
    pub start_index: i32,
    pub end_index: i32,
    pub status: String,
    pub worker_id: Option<String>,
    pub files_processed: i32,
    pub findings_count: i32,
    pub started_at: Option<OffsetDateTime>,
    pub completed_at: Option<OffsetDateTime>,
}

impl Worker {
    pub fn file_count(&self) -> i64 {
        i64::from(self.end_index - self.start_index + 1)
    }
}

pub async fn workers(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: Uuid,
) -> Result<Vec<Worker>, ScanError> {
    row(conn, tenant, id).await?;
    Ok(scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq(id))
        .order(scan_chunks::chunk_no)
        .select((
            scan_chunks::chunk_no,
            scan_chunks::start_index,
            scan_chunks::end_index,
            scan_chunks::status,
            scan_chunks::worker_id,
            scan_chunks::files_processed,
            scan_chunks::findings_count,
            scan_chunks::started_at,
            scan_chunks::completed_at,
        ))
        .load(conn)
        .await?)
}

/// One chunk as a deployment in the customer's infrastructure sees it.
#[derive(Debug, Clone)]
pub struct DeployChunk {
    pub chunk_no: i32,
    pub connector_id: Uuid,
    /// `bucket/key` of every object in the chunk, in order.
    pub files: Vec<String>,
    /// The connector's provider and non-secret configuration.
    pub connector_config: serde_json::Map<String, serde_json::Value>,
}

/// What GET /scans/:id/deployment-config shows: the chunks, once enumeration has made them.
#[derive(Debug, Clone)]
pub struct Deployment {
    pub scan_id: Uuid,
    pub status: Status,
    pub enumeration_status: Enumeration,
    pub chunks: Vec<DeployChunk>,
}

/// The scan's chunks with their objects and each one's connector configuration (never a
/// secret). Empty until the scan has been enumerated.
pub async fn deployment(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: Uuid,
) -> Result<Deployment, ScanError> {
    let scan = row(conn, tenant, id).await?;
    let status = Status::parse(&scan.status).ok_or(ScanError::CorruptRow)?;
    let enumeration_status =
        Enumeration::parse(&scan.enumeration_status).ok_or(ScanError::CorruptRow)?;
    let ranges: Vec<(i32, i32, i32)> = workers(conn, tenant, id)
        .await?
        .into_iter()
        .map(|w| (w.chunk_no, w.start_index, w.end_index))
        .collect();
    let resources: Vec<(i32, Uuid, String, String)> = if ranges.is_empty() {
        Vec::new()
    } else {
        scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq(id))
            .order(scan_resources::idx)
            .select((
                scan_resources::idx,
                scan_resources::connector_id,
                scan_resources::bucket,
                scan_resources::object_key,
            ))
            .load(conn)
            .await?
    };
    let mut configs: Vec<(Uuid, serde_json::Map<String, serde_json::Value>)> = Vec::new();
    let mut chunks = Vec::with_capacity(ranges.len());
    let mut resources = resources.into_iter().peekable();
    for (chunk_no, start, end) in ranges {
        let mut files = Vec::new();
        let mut connector_id = None;
        while let Some((idx, connector, bucket, key)) = resources.next_if(|(idx, ..)| *idx <= end) {
            if idx < start {
                continue;
            }
            connector_id.get_or_insert(connector);
            files.push(format!("{bucket}/{key}"));
        }
        // A chunk whose resources are gone (its connector was deleted) has nothing to deploy.
        let Some(connector_id) = connector_id else {
            continue;
        };
        let connector_config = match configs.iter().find(|(c, _)| *c == connector_id) {
            Some((_, config)) => config.clone(),
            None => {
                let connector = connectors::store::get(conn, tenant, connector_id)
                    .await
                    .map_err(|_| ScanError::CorruptRow)?;
                let mut config = serde_json::Map::new();
                config.insert("connector_id".into(), connector_id.to_string().into());
                config.insert("provider".into(), connector.provider.as_str().into());
                config.extend(connector.config);
                configs.push((connector_id, config.clone()));
                config
            }
        };
        chunks.push(DeployChunk {
            chunk_no,
            connector_id,
            files,
            connector_config,
        });
    }
    Ok(Deployment {
        scan_id: id,
        status,
        enumeration_status,
        chunks,
    })
}

/// One entry of a connector's scan history.
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    pub scan_id: Uuid,
    pub status: String,
    pub started_at: Option<OffsetDateTime>,
    pub completed_at: Option<OffsetDateTime>,
    pub files_processed: i64,
    pub findings_count: i64,
}

/// A connector's latest scans, newest first, with what each processed of this connector.
pub async fn history(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: Uuid,
    limit: i64,
) -> Result<Vec<HistoryEntry>, ScanError> {
    let rows: Vec<(Uuid, String, Option<OffsetDateTime>, Option<OffsetDateTime>)> = scans::table
        .inner_join(
            scan_connectors::table.on(scan_connectors::tenant_id
                .eq(scans::tenant_id)
                .and(scan_connectors::scan_id.eq(scans::scan_id))),
        )
        .filter(scans::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::connector_id.eq(connector))
        .order((scans::created_at.desc(), scans::scan_id.desc()))
        .limit(limit)
        .select((
            scans::scan_id,
            scans::status,
            scans::started_at,
            scans::completed_at,
        ))
        .load(conn)
        .await?;
    // What each of these scans processed of this connector, in one grouped query.
    let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
    let done: Vec<(Uuid, i64, Option<i64>)> = scan_resources::table
        .filter(scan_resources::tenant_id.eq(tenant.as_str()))
        .filter(scan_resources::scan_id.eq_any(&ids))
        .filter(scan_resources::connector_id.eq(connector))
        .filter(scan_resources::state.ne("pending"))
        .group_by(scan_resources::scan_id)
        .select((
            scan_resources::scan_id,
            count_star(),
            sum(scan_resources::findings),
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(scan_id, status, started_at, completed_at)| {
            let (processed, findings) = done
                .iter()
                .find(|d| d.0 == scan_id)
                .map_or((0, 0), |d| (d.1, d.2.unwrap_or(0)));
            HistoryEntry {
                scan_id,
                status,
                started_at,
                completed_at,
                files_processed: processed,
                findings_count: findings,
            }
        })
        .collect())
}

/// Deletes a connector with its scan history and findings, in one transaction: its queued and
/// running scans are cancelled, scans of it alone are deleted (their resources, chunks and
/// findings cascade), and in scans shared with other connectors only its part goes.
pub async fn delete_connector(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: Uuid,
) -> Result<(), connectors::ConnectorError> {
    conn.transaction::<_, connectors::ConnectorError, _>(async |conn| {
        let scan_ids: Vec<Uuid> = scan_connectors::table
            .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
            .filter(scan_connectors::connector_id.eq(connector))
            .select(scan_connectors::scan_id)
            .load(conn)
            .await?;
        diesel::update(
            scans::table
                .filter(scans::tenant_id.eq(tenant.as_str()))
                .filter(scans::scan_id.eq_any(&scan_ids))
                .filter(scans::status.eq_any(["queued", "running"])),
        )
        .set((
            scans::status.eq("cancelled"),
            scans::cancelled_at.eq(diesel::dsl::now),
            scans::completed_at.eq(diesel::dsl::now),
            scans::status_reason.eq("a connector of the scan was deleted"),
        ))
        .execute(conn)
        .await?;
        let shared: Vec<Uuid> = scan_connectors::table
            .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
            .filter(scan_connectors::scan_id.eq_any(&scan_ids))
            .filter(scan_connectors::connector_id.ne(connector))
            .select(scan_connectors::scan_id)
            .distinct()
            .load(conn)
            .await?;
        let alone: Vec<&Uuid> = scan_ids.iter().filter(|s| !shared.contains(s)).collect();
        // Findings have no foreign keys (migration 000010): the connector's go explicitly,
        // those of the scans deleted below included.
        diesel::delete(
            findings::table
                .filter(findings::tenant_id.eq(tenant.as_str()))
                .filter(findings::connector_id.eq(connector)),
        )
        .execute(conn)
        .await?;
        diesel::delete(
            scans::table
                .filter(scans::tenant_id.eq(tenant.as_str()))
                .filter(scans::scan_id.eq_any(alone)),
        )
        .execute(conn)
        .await?;
        connectors::store::delete(conn, tenant, connector).await
    })
    .await
}

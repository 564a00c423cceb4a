//! Scans as the API shows them: creating one, reading it with its progress, listing, its
//! workers and its deployment configuration.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ring::digest;
use time::OffsetDateTime;
use uuid::Uuid;

use connectors::FieldError;
use db::schema::{
    connectors as connectors_table, scan_chunks, scan_connectors, scan_resources, scans,
};
use ids::{ConnectorId, ScanId, TenantId};
use paging::{Keyset, Order, Page, PageRequest, Position};

use crate::error::ScanError;
use crate::model::{Enumeration, Scan, Status};
use crate::options::{self, Kind, MAX_CONNECTORS, Tier};
use crate::rows::{self, Row};

const LIST: &str = "scans";
const WORKERS: &str = "scan_workers";

/// A new scan as the API returns it on creation.
#[derive(Debug, Clone)]
pub struct Created {
    pub id: ScanId,
    pub status: Status,
    pub kind: Kind,
    pub connectors: Vec<ConnectorId>,
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
pub fn worker_token(key: &[u8; 32], tenant: &TenantId, scan: ScanId) -> String {
    let mac = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key),
        format!("dps-scan-worker-v1\0{}\0{scan}", tenant.as_str()).as_bytes(),
    );
    let hex: String = mac.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("dpsw_{hex}")
}

/// How a scan was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `POST /scans/parallel`: one or several connectors.
    Parallel,
    /// `POST /connectors/:id/scan`: one connector.
    Connector,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Parallel => "parallel",
            Origin::Connector => "connector",
        }
    }
}

/// A scan request, as sent: every field is checked by [`create`].
#[derive(Debug, Clone, Copy)]
pub struct NewScan<'a> {
    /// Connector ids, in the order the scan lists them.
    pub connectors: &'a [String],
    /// full or incremental.
    pub kind: Option<&'a str>,
    pub options: Option<&'a serde_json::Value>,
    /// Defaults and ceilings of the options.
    pub tier: Tier,
    pub origin: Origin,
}

/// Validates and queues a scan of its connectors (their order is kept).
pub async fn create(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    token_key: &[u8; 32],
    request: &NewScan<'_>,
) -> Result<Created, ScanError> {
    let NewScan {
        connectors: connector_ids,
        kind,
        options,
        tier,
        origin,
    } = *request;
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
    match origin {
        Origin::Parallel if connector_ids.is_empty() || connector_ids.len() > MAX_CONNECTORS => {
            errors.push(FieldError {
                field: "connectors".into(),
                message: format!("must name 1 to {MAX_CONNECTORS} connectors"),
            });
        }
        Origin::Connector if connector_ids.len() != 1 => errors.push(FieldError {
            field: "connectors".into(),
            message: "a scan of one connector names exactly one".into(),
        }),
        _ => {}
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
    let mut ids: Vec<Uuid> = Vec::with_capacity(connector_ids.len());
    for raw in connector_ids {
        let id =
            ConnectorId::parse(raw).ok_or_else(|| ScanError::ConnectorNotFound(raw.clone()))?;
        if !ids.contains(&id.as_uuid()) {
            ids.push(id.as_uuid());
        }
    }
    let id = ScanId::new();
    let workers = options.max_workers;
    let options_json = serde_json::to_value(&options).map_err(|_| ScanError::CorruptRow)?;
    let hash = token_hash(&worker_token(token_key, tenant, id));
    let linked = ids.clone();
    let created_at = conn
        .transaction::<_, ScanError, _>(async |conn| {
            // Checked in the transaction, and kept from a concurrent delete until it commits
            // (a delete between the check and the links below broke their foreign key: 500).
            let found: Vec<Uuid> = connectors_table::table
                .filter(connectors_table::tenant_id.eq(tenant.as_str()))
                .filter(connectors_table::connector_id.eq_any(&linked))
                .select(connectors_table::connector_id)
                .for_key_share()
                .load(conn)
                .await?;
            if let Some(missing) = linked.iter().find(|id| !found.contains(id)) {
                return Err(ScanError::ConnectorNotFound(missing.to_string()));
            }
            let created_at: OffsetDateTime = diesel::insert_into(scans::table)
                .values((
                    scans::tenant_id.eq(tenant.as_str()),
                    scans::scan_id.eq(id.as_uuid()),
                    scans::kind.eq(kind.as_str()),
                    scans::origin.eq(origin.as_str()),
                    scans::options.eq(options_json),
                    scans::max_workers.eq(i32::try_from(options.max_workers).unwrap_or(i32::MAX)),
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
                        scan_connectors::scan_id.eq(id.as_uuid()),
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
        connectors: ids.into_iter().map(ConnectorId::from_uuid).collect(),
        workers_requested: workers,
        created_at,
    })
}

/// The API's views of `rows`, in their order: their connectors and tallies read for all of
/// them at once, so a page of scans costs three queries, not three per scan.
async fn views(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    rows: Vec<Row>,
) -> Result<Vec<Scan>, ScanError> {
    let ids: Vec<ScanId> = rows.iter().map(Row::id).collect();
    let mut connectors = rows::connectors_of(conn, tenant, &ids).await?;
    let mut tallies = rows::tallies(conn, tenant, &ids).await?;
    rows.into_iter()
        .map(|row| {
            let id = row.id();
            let tally = tallies.remove(&id).unwrap_or_default();
            Ok(Scan {
                id,
                status: row.status()?,
                kind: Kind::parse(&row.kind).ok_or(ScanError::CorruptRow)?,
                parallel: row.origin == "parallel",
                connectors: connectors.remove(&id).unwrap_or_default(),
                options: row.options()?,
                enumeration: Enumeration::parse(&row.enumeration_status)
                    .ok_or(ScanError::CorruptRow)?,
                sources_total: row.sources_total,
                sources_listed: row.sources_listed,
                status_reason: row.status_reason,
                counts: tally.counts,
                reasons: tally.reasons,
                workers: tally.workers,
                created_at: row.created_at,
                started_at: row.started_at,
                completed_at: row.completed_at,
            })
        })
        .collect()
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
) -> Result<Scan, ScanError> {
    let row = rows::row(conn, tenant, id).await?;
    let mut views = views(conn, tenant, vec![row]).await?;
    views.pop().ok_or(ScanError::CorruptRow)
}

/// List filters.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub connector: Option<ConnectorId>,
    pub status: Option<Status>,
    pub since: Option<OffsetDateTime>,
}

/// The tenant's scans, newest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &Filter,
    page: PageRequest<'_>,
) -> Result<Page<Scan>, ScanError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Descending)?;
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
                    .filter(scan_connectors::connector_id.eq(connector.as_uuid()))
                    .select(scan_connectors::scan_id),
            ),
        );
    }
    if let Some(after) = keyset.after::<scans::created_at, scans::scan_id, _>()? {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    let page = keyset.page(rows, |r| Position::at(r.created_at, r.scan_id));
    Ok(Page {
        items: views(conn, tenant, page.items).await?,
        pagination: page.pagination,
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

/// Every worker of the scan, in chunk order.
pub async fn workers(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
) -> Result<Vec<Worker>, ScanError> {
    rows::row(conn, tenant, id).await?;
    chunks_after(conn, tenant, id, None, None).await
}

/// One page of the scan's workers, in chunk order.
pub async fn workers_page(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
    page: PageRequest<'_>,
) -> Result<Page<Worker>, ScanError> {
    let keyset = Keyset::new(page, tenant, WORKERS, Order::Ascending)?;
    rows::row(conn, tenant, id).await?;
    // A chunk number past any i32 is past every chunk.
    let after = keyset
        .after_seq()
        .map(|n| i32::try_from(n).unwrap_or(i32::MAX));
    let rows = chunks_after(conn, tenant, id, after, Some(keyset.fetch())).await?;
    Ok(keyset.page(rows, |w| Position::seq(i64::from(w.chunk_no))))
}

/// The scan's chunks numbered after `after`, at most `limit` of them.
async fn chunks_after(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
    after: Option<i32>,
    limit: Option<i64>,
) -> Result<Vec<Worker>, ScanError> {
    let mut query = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq(id.as_uuid()))
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
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(scan_chunks::chunk_no.gt(after));
    }
    if let Some(limit) = limit {
        query = query.limit(limit);
    }
    Ok(query.load(conn).await?)
}

/// One chunk as a deployment in the customer's infrastructure sees it.
#[derive(Debug, Clone)]
pub struct DeployChunk {
    pub chunk_no: i32,
    pub connector_id: ConnectorId,
    /// `bucket/key` of every object in the chunk, in order.
    pub files: Vec<String>,
    /// The connector's provider and non-secret configuration.
    pub connector_config: serde_json::Map<String, serde_json::Value>,
}

/// What GET /scans/:id/deployment-config shows: the chunks, once enumeration has made them.
#[derive(Debug, Clone)]
pub struct Deployment {
    pub scan_id: ScanId,
    pub status: Status,
    pub enumeration_status: Enumeration,
    pub chunks: Vec<DeployChunk>,
}

/// The scan's chunks with their objects and each one's connector configuration (never a
/// secret), or only chunk `only` (a scan of a million objects is a response of a hundred
/// megabytes whole; a deployment may fetch its chunks one at a time). Empty until the scan
/// has been enumerated, and for a chunk the scan does not have.
pub async fn deployment(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ScanId,
    only: Option<i32>,
) -> Result<Deployment, ScanError> {
    let scan = rows::row(conn, tenant, id).await?;
    let status = Status::parse(&scan.status).ok_or(ScanError::CorruptRow)?;
    let enumeration_status =
        Enumeration::parse(&scan.enumeration_status).ok_or(ScanError::CorruptRow)?;
    let ranges: Vec<(i32, i32, i32)> = workers(conn, tenant, id)
        .await?
        .into_iter()
        .map(|w| (w.chunk_no, w.start_index, w.end_index))
        .filter(|(chunk_no, ..)| only.is_none_or(|n| n == *chunk_no))
        .collect();
    // The resources of the chunks shown, and no others.
    let (first, last) = (
        ranges.iter().map(|r| r.1).min().unwrap_or(0),
        ranges.iter().map(|r| r.2).max().unwrap_or(-1),
    );
    let resources: Vec<(i32, Uuid, String, String)> = if ranges.is_empty() {
        Vec::new()
    } else {
        scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq(id.as_uuid()))
            .filter(scan_resources::idx.between(first, last))
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
    let mut configs: Vec<(ConnectorId, serde_json::Map<String, serde_json::Value>)> = Vec::new();
    let mut chunks = Vec::with_capacity(ranges.len());
    let mut resources = resources.into_iter().peekable();
    for (chunk_no, start, end) in ranges {
        let mut files = Vec::new();
        let mut connector_id = None;
        while let Some((idx, connector, bucket, key)) = resources.next_if(|(idx, ..)| *idx <= end) {
            if idx < start {
                continue;
            }
            connector_id.get_or_insert(ConnectorId::from_uuid(connector));
            files.push(format!("{bucket}/{key}"));
        }
        // A chunk whose resources are gone (its connector was deleted) has nothing to deploy.
        let Some(connector_id) = connector_id else {
            continue;
        };
        let connector_config = match configs.iter().find(|(c, _)| *c == connector_id) {
            Some((_, config)) => config.clone(),
            None => {
                let connector = match connectors::store::get(conn, tenant, connector_id).await {
                    Ok(connector) => connector,
                    // Deleted since its resources were read: nothing to deploy, as above.
                    Err(connectors::store::ConnectorError::NotFound) => continue,
                    Err(connectors::store::ConnectorError::Database(e)) => return Err(e.into()),
                    Err(_) => return Err(ScanError::CorruptRow),
                };
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

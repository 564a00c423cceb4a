//! The scan protocol over Postgres, shared by the in-process workers and `scan-worker`:
//! enumeration into resources and chunks, claiming a chunk under a lease, recording each
//! resource under the chunk's fence, and ending the scan when its work is done.
//!
//! Fencing: every claim bumps the chunk's `fence`. Every write a worker makes locks the chunk
//! row and checks, in the same transaction, that the fence is still the one it claimed with and
//! that the scan is still running. A worker paused past its lease (whose chunk another worker
//! has since claimed) therefore writes nothing, and a resource already recorded is never
//! recorded again, so no count is doubled.

use std::collections::{HashMap, HashSet};

use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bytea, Float, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use connectors::cloud::{AccessError, Cloud, PAGE_SIZE};
use db::schema::{
    connectors as connectors_table, findings, scan_chunks, scan_resources, scanned_objects, scans,
};
use ids::TenantId;

use crate::model::{Enumeration, Reasons, Status, final_status};
use crate::options::{Kind, Options};
use crate::store::{self, ScanError};

/// Largest chunk, in resources.
pub const MAX_CHUNK: i64 = 1000;
/// A chunk whose lease expired this many times is given up: its remaining resources fail with
/// `worker_lost`.
pub const MAX_ATTEMPTS: i32 = 3;

/// A chunk a worker holds.
#[derive(Debug, Clone)]
pub struct Claim {
    pub tenant: TenantId,
    pub scan: Uuid,
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

/// Claims the next chunk that is pending, or whose holder's lease expired, of a running scan
/// (of `only`, when given), respecting each scan's worker count. Concurrent claimers skip each
/// other's rows (SKIP LOCKED), so each chunk goes to one worker.
pub async fn claim(
    conn: &mut AsyncPgConnection,
    worker_id: &str,
    only: Option<(&TenantId, Uuid)>,
    lease_seconds: i64,
) -> Result<Option<Claim>, ScanError> {
    let (tenant, scan) = match only {
        Some((t, s)) => (Some(t.as_str().to_owned()), Some(s)),
        None => (None, None),
    };
    let rows: Vec<ClaimRow> = diesel::sql_query(
        "UPDATE scan_chunks c
            SET status = 'running', worker_id = $1,
                lease_until = now() + make_interval(secs => $2),
                fence = c.fence + 1, attempts = c.attempts + 1,
                started_at = coalesce(c.started_at, now())
           FROM (SELECT k.tenant_id, k.scan_id, k.chunk_no
                   FROM scan_chunks k
                   JOIN scans s ON s.tenant_id = k.tenant_id AND s.scan_id = k.scan_id
                  WHERE s.status = 'running'
                    AND (k.status = 'pending'
                         OR (k.status = 'running' AND k.lease_until < now()
                             AND k.attempts < $5))
                    AND ($3::text IS NULL OR (k.tenant_id = $3 AND k.scan_id = $4))
                    AND (SELECT count(*) FROM scan_chunks r
                          WHERE r.tenant_id = k.tenant_id AND r.scan_id = k.scan_id
                            AND r.status = 'running' AND r.lease_until >= now())
                        < (s.options->>'max_workers')::int
                  ORDER BY s.created_at, k.chunk_no
                  LIMIT 1
                  FOR UPDATE OF k SKIP LOCKED) pick
          WHERE c.tenant_id = pick.tenant_id AND c.scan_id = pick.scan_id
            AND c.chunk_no = pick.chunk_no
      RETURNING c.tenant_id, c.scan_id, c.chunk_no, c.fence, c.start_index, c.end_index",
    )
    .bind::<Text, _>(worker_id)
    .bind::<BigInt, _>(lease_seconds)
    .bind::<Nullable<Text>, _>(tenant)
    .bind::<Nullable<SqlUuid>, _>(scan)
    .bind::<Integer, _>(MAX_ATTEMPTS)
    .load(conn)
    .await?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some(Claim {
        tenant: row.tenant_id.parse().map_err(|_| ScanError::CorruptRow)?,
        scan: row.scan_id,
        chunk_no: row.chunk_no,
        fence: row.fence,
        start: row.start_index,
        end: row.end_index,
    }))
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
async fn check_fence(conn: &mut AsyncPgConnection, claim: &Claim) -> Result<Held, ScanError> {
    #[derive(QueryableByName)]
    struct Fence {
        #[diesel(sql_type = BigInt)]
        fence: i64,
        #[diesel(sql_type = Text)]
        chunk: String,
        #[diesel(sql_type = Text)]
        scan: String,
    }
    let rows: Vec<Fence> = diesel::sql_query(
        "SELECT c.fence, c.status AS chunk, s.status AS scan
           FROM scan_chunks c
           JOIN scans s ON s.tenant_id = c.tenant_id AND s.scan_id = c.scan_id
          WHERE c.tenant_id = $1 AND c.scan_id = $2 AND c.chunk_no = $3
            FOR UPDATE OF c FOR SHARE OF s",
    )
    .bind::<Text, _>(claim.tenant.as_str())
    .bind::<SqlUuid, _>(claim.scan)
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
    let updated: usize = diesel::sql_query(
        "UPDATE scan_chunks c SET lease_until = now() + make_interval(secs => $5)
           FROM scans s
          WHERE c.tenant_id = $1 AND c.scan_id = $2 AND c.chunk_no = $3 AND c.fence = $4
            AND c.status = 'running'
            AND s.tenant_id = c.tenant_id AND s.scan_id = c.scan_id AND s.status = 'running'",
    )
    .bind::<Text, _>(claim.tenant.as_str())
    .bind::<SqlUuid, _>(claim.scan)
    .bind::<Integer, _>(claim.chunk_no)
    .bind::<BigInt, _>(claim.fence)
    .bind::<BigInt, _>(lease_seconds)
    .execute(conn)
    .await?;
    Ok(if updated == 1 { Held::Yes } else { Held::Lost })
}

/// One enumerated object.
#[derive(Debug, Clone, Queryable)]
pub struct Resource {
    pub idx: i32,
    pub connector_id: Uuid,
    pub bucket: String,
    pub object_key: String,
    pub size: i64,
    pub etag: Option<String>,
    pub last_modified: OffsetDateTime,
}

/// The chunk's resources not yet recorded (all of them on a first claim; the rest after a
/// worker was lost mid-chunk).
pub async fn pending(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
) -> Result<Vec<Resource>, ScanError> {
    Ok(scan_resources::table
        .filter(scan_resources::tenant_id.eq(claim.tenant.as_str()))
        .filter(scan_resources::scan_id.eq(claim.scan))
        .filter(scan_resources::idx.between(claim.start, claim.end))
        .filter(scan_resources::state.eq("pending"))
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
        .await?)
}

/// A finding ready to store: never the value.
#[derive(Debug, Clone)]
pub struct NewFinding {
    pub pii_type: String,
    pub category: String,
    pub confidence: f32,
    pub location: serde_json::Value,
    pub preview: String,
    pub fingerprint: Vec<u8>,
}

/// What became of one resource.
#[derive(Debug, Clone)]
pub enum Outcome {
    Scanned(Vec<NewFinding>),
    /// Excluded by policy: binary content, unsupported format, size limit.
    Skipped(String),
    /// Errored: network, permission, parse, ...
    Failed(String),
}

/// A batch's findings, column by column.
#[derive(Default)]
struct NewFindings<'a> {
    ids: Vec<Uuid>,
    buckets: Vec<&'a str>,
    keys: Vec<&'a str>,
    types: Vec<&'a str>,
    categories: Vec<&'a str>,
    confidences: Vec<f32>,
    locations: Vec<&'a serde_json::Value>,
    previews: Vec<&'a str>,
    fingerprints: Vec<&'a [u8]>,
}

impl<'a> NewFindings<'a> {
    fn push(&mut self, resource: &'a Resource, f: &'a NewFinding) {
        self.ids.push(Uuid::now_v7());
        self.buckets.push(&resource.bucket);
        self.keys.push(&resource.object_key);
        self.types.push(&f.pii_type);
        self.categories.push(&f.category);
        self.confidences.push(f.confidence);
        self.locations.push(&f.location);
        self.previews.push(&f.preview);
        self.fingerprints.push(&f.fingerprint);
    }
}

#[derive(QueryableByName)]
struct Recorded {
    #[diesel(sql_type = Integer)]
    idx: i32,
}

#[derive(QueryableByName)]
struct Fresh {
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
}

/// What a batch says of its objects, as the arrays the statements below take.
struct Objects<'a> {
    buckets: Vec<&'a str>,
    keys: Vec<&'a str>,
    sizes: Vec<i64>,
    etags: Vec<Option<&'a str>>,
    modified: Vec<OffsetDateTime>,
}

impl<'a> Objects<'a> {
    fn of(resources: &[&'a Resource]) -> Self {
        Self {
            buckets: resources.iter().map(|r| r.bucket.as_str()).collect(),
            keys: resources.iter().map(|r| r.object_key.as_str()).collect(),
            sizes: resources.iter().map(|r| r.size).collect(),
            etags: resources.iter().map(|r| r.etag.as_deref()).collect(),
            modified: resources.iter().map(|r| r.last_modified).collect(),
        }
    }

    /// `sql` with the tenant, connector and scan as $1..$3 and the arrays as $4..$8.
    fn bind(
        &'a self,
        sql: &'static str,
        claim: &'a Claim,
        connector: Uuid,
    ) -> diesel::query_builder::BoxedSqlQuery<'a, diesel::pg::Pg, diesel::query_builder::SqlQuery>
    {
        diesel::sql_query(sql)
            .into_boxed()
            .bind::<Text, _>(claim.tenant.as_str())
            .bind::<SqlUuid, _>(claim.scan)
            .bind::<SqlUuid, _>(connector)
            .bind::<Array<Text>, _>(&self.buckets)
            .bind::<Array<Text>, _>(&self.keys)
            .bind::<Array<BigInt>, _>(&self.sizes)
            .bind::<Array<Nullable<Text>>, _>(&self.etags)
            .bind::<Array<Timestamptz>, _>(&self.modified)
    }
}

/// Records what the scan saw of these objects and returns the ones a scan had seen before:
/// only those can hold findings to supersede. A first scan of a bucket therefore never looks
/// for old findings, and never depends on how Postgres plans that search.
async fn remember<'a>(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
    connector: Uuid,
    seen: &[&'a Resource],
) -> Result<Vec<&'a Resource>, ScanError> {
    if seen.is_empty() {
        return Ok(Vec::new());
    }
    let objects = Objects::of(seen);
    let fresh: Vec<Fresh> = objects
        .bind(
            "INSERT INTO scanned_objects (tenant_id, scan_id, connector_id, bucket, object_key,
                                          size, etag, last_modified)
             SELECT $1, $2, $3, o.* FROM unnest($4::text[], $5::text[], $6::int8[],
                    $7::text[], $8::timestamptz[]) AS o
             ON CONFLICT (tenant_id, connector_id, bucket, object_key) DO NOTHING
             RETURNING bucket, object_key",
            claim,
            connector,
        )
        .load(conn)
        .await?;
    let fresh: HashSet<(&str, &str)> = fresh
        .iter()
        .map(|f| (f.bucket.as_str(), f.object_key.as_str()))
        .collect();
    let known: Vec<&Resource> = seen
        .iter()
        .copied()
        .filter(|r| !fresh.contains(&(r.bucket.as_str(), r.object_key.as_str())))
        .collect();
    if known.is_empty() {
        return Ok(known);
    }
    Objects::of(&known)
        .bind(
            "UPDATE scanned_objects s
                SET scan_id = $2, size = o.size, etag = o.etag, last_modified = o.last_modified
               FROM unnest($4::text[], $5::text[], $6::int8[], $7::text[], $8::timestamptz[])
                    AS o(bucket, object_key, size, etag, last_modified)
              WHERE s.tenant_id = $1 AND s.connector_id = $3
                AND s.bucket = o.bucket AND s.object_key = o.object_key",
            claim,
            connector,
        )
        .execute(conn)
        .await?;
    Ok(known)
}

/// The chunk's reason counts with `more` added, to write back in the same transaction: the
/// row stays locked from this read to that write.
async fn chunk_reasons(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
    chunk_no: i32,
    more: &Reasons,
) -> Result<serde_json::Value, ScanError> {
    let stored: serde_json::Value = scan_chunks::table
        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
        .filter(scan_chunks::scan_id.eq(scan))
        .filter(scan_chunks::chunk_no.eq(chunk_no))
        .select(scan_chunks::reasons)
        .for_update()
        .first(conn)
        .await?;
    let mut reasons: Reasons = serde_json::from_value(stored).map_err(|_| ScanError::CorruptRow)?;
    reasons.add(more);
    serde_json::to_value(&reasons).map_err(|_| ScanError::CorruptRow)
}

/// Records resources' outcomes under the chunk's fence, with their findings, in one
/// transaction: a handful of statements for the whole batch, whatever its size. Resources no
/// longer pending (recorded by an earlier holder of the chunk) are left as they are, and only
/// the ones recorded now are counted. A chunk holds one connector's resources.
pub async fn record(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
    batch: Vec<(Resource, Outcome)>,
    lease_seconds: i64,
) -> Result<Held, ScanError> {
    if batch.is_empty() {
        return Ok(Held::Yes);
    }
    let claim = claim.clone();
    conn.transaction::<_, ScanError, _>(async |conn| {
        if check_fence(conn, &claim).await? == Held::Lost {
            return Ok(Held::Lost);
        }
        let tenant = claim.tenant.as_str();
        let mut idx = Vec::with_capacity(batch.len());
        let mut states = Vec::with_capacity(batch.len());
        let mut reasons: Vec<Option<String>> = Vec::with_capacity(batch.len());
        let mut counts = Vec::with_capacity(batch.len());
        for (resource, outcome) in &batch {
            let (state, reason, found) = match outcome {
                Outcome::Scanned(f) => ("scanned", None, f.len() as i32),
                Outcome::Skipped(r) => ("skipped", Some(r.clone()), 0),
                Outcome::Failed(r) => ("failed", Some(r.clone()), 0),
            };
            idx.push(resource.idx);
            states.push(state);
            reasons.push(reason);
            counts.push(found);
        }
        // The range keeps the plan to the batch's own rows even before the table has
        // statistics: a join alone may be planned as a walk over every resource of the scan.
        let lowest = idx.iter().copied().min().unwrap_or_default();
        let highest = idx.iter().copied().max().unwrap_or_default();
        let recorded: Vec<Recorded> = diesel::sql_query(
            "UPDATE scan_resources r
                SET state = v.state, reason = v.reason, findings = v.findings
               FROM unnest($3::int[], $4::text[], $5::text[], $6::int[])
                    AS v(idx, state, reason, findings)
              WHERE r.tenant_id = $1 AND r.scan_id = $2 AND r.idx BETWEEN $7 AND $8
                AND r.idx = v.idx AND r.state = 'pending'
          RETURNING r.idx",
        )
        .bind::<Text, _>(tenant)
        .bind::<SqlUuid, _>(claim.scan)
        .bind::<Array<Integer>, _>(&idx)
        .bind::<Array<Text>, _>(&states)
        .bind::<Array<Nullable<Text>>, _>(&reasons)
        .bind::<Array<Integer>, _>(&counts)
        .bind::<Integer, _>(lowest)
        .bind::<Integer, _>(highest)
        .load(conn)
        .await?;
        let recorded: HashSet<i32> = recorded.into_iter().map(|r| r.idx).collect();
        let batch: Vec<(Resource, Outcome)> = batch
            .into_iter()
            .filter(|(r, _)| recorded.contains(&r.idx))
            .collect();
        let Some(connector) = batch.iter().map(|(r, _)| r.connector_id).next() else {
            return Ok(Held::Yes);
        };
        let seen: Vec<&Resource> = batch
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Scanned(_) | Outcome::Skipped(_)))
            .map(|(r, _)| r)
            .collect();
        let known = remember(conn, &claim, connector, &seen).await?;
        if !known.is_empty() {
            // What these objects held before is superseded by what was found now.
            let buckets: Vec<&str> = known.iter().map(|r| r.bucket.as_str()).collect();
            let keys: Vec<&str> = known.iter().map(|r| r.object_key.as_str()).collect();
            diesel::sql_query(
                "UPDATE findings f SET status = 'resolved', resolved_at = now()
                   FROM unnest($4::text[], $5::text[]) AS o(bucket, object_key)
                  WHERE f.tenant_id = $1 AND f.connector_id = $2 AND f.status = 'open'
                    AND f.bucket = o.bucket AND f.object_key = o.object_key
                    AND f.scan_id <> $3",
            )
            .bind::<Text, _>(tenant)
            .bind::<SqlUuid, _>(connector)
            .bind::<SqlUuid, _>(claim.scan)
            .bind::<Array<Text>, _>(&buckets)
            .bind::<Array<Text>, _>(&keys)
            .execute(conn)
            .await?;
        }
        // Findings go in as arrays: one short statement whatever their number, instead of a
        // VALUES list Postgres would parse afresh for every batch.
        let mut new = NewFindings::default();
        for (resource, outcome) in &batch {
            if let Outcome::Scanned(found) = outcome {
                for f in found {
                    new.push(resource, f);
                }
            }
        }
        let found = new.ids.len() as i32;
        if found > 0 {
            diesel::sql_query(
                "INSERT INTO findings (tenant_id, scan_id, connector_id, finding_id, bucket,
                                       object_key, pii_type, category, confidence, location,
                                       preview, fingerprint)
                 SELECT $1, $2, $3, f.* FROM unnest($4::uuid[], $5::text[], $6::text[],
                        $7::text[], $8::text[], $9::real[], $10::jsonb[], $11::text[],
                        $12::bytea[]) AS f",
            )
            .bind::<Text, _>(tenant)
            .bind::<SqlUuid, _>(claim.scan)
            .bind::<SqlUuid, _>(connector)
            .bind::<Array<SqlUuid>, _>(&new.ids)
            .bind::<Array<Text>, _>(&new.buckets)
            .bind::<Array<Text>, _>(&new.keys)
            .bind::<Array<Text>, _>(&new.types)
            .bind::<Array<Text>, _>(&new.categories)
            .bind::<Array<Float>, _>(&new.confidences)
            .bind::<Array<Jsonb>, _>(&new.locations)
            .bind::<Array<Text>, _>(&new.previews)
            .bind::<Array<Bytea>, _>(&new.fingerprints)
            .execute(conn)
            .await?;
        }
        // The chunk's counts move with its resources, so progress never groups resources.
        let mut scanned = 0;
        let mut reasons = Reasons::default();
        for (_, outcome) in &batch {
            match outcome {
                Outcome::Scanned(_) => scanned += 1,
                Outcome::Skipped(r) => *reasons.skipped.entry(r.clone()).or_default() += 1,
                Outcome::Failed(r) => *reasons.failed.entry(r.clone()).or_default() += 1,
            }
        }
        let reasons = if reasons.is_empty() {
            None
        } else {
            Some(chunk_reasons(conn, &claim.tenant, claim.scan, claim.chunk_no, &reasons).await?)
        };
        diesel::sql_query(
            "UPDATE scan_chunks SET files_processed = files_processed + $4,
                        files_scanned = files_scanned + $5,
                        reasons = coalesce($6, reasons),
                        findings_count = findings_count + $7,
                        lease_until = now() + make_interval(secs => $8)
                  WHERE tenant_id = $1 AND scan_id = $2 AND chunk_no = $3",
        )
        .bind::<Text, _>(tenant)
        .bind::<SqlUuid, _>(claim.scan)
        .bind::<Integer, _>(claim.chunk_no)
        .bind::<Integer, _>(batch.len() as i32)
        .bind::<Integer, _>(scanned)
        .bind::<Nullable<Jsonb>, _>(reasons)
        .bind::<Integer, _>(found)
        .bind::<BigInt, _>(lease_seconds)
        .execute(conn)
        .await?;
        Ok(Held::Yes)
    })
    .await
}

/// Marks the chunk done (under its fence) and ends the scan if that was the last work.
pub async fn complete(conn: &mut AsyncPgConnection, claim: &Claim) -> Result<Held, ScanError> {
    let updated = diesel::update(
        scan_chunks::table
            .filter(scan_chunks::tenant_id.eq(claim.tenant.as_str()))
            .filter(scan_chunks::scan_id.eq(claim.scan))
            .filter(scan_chunks::chunk_no.eq(claim.chunk_no))
            .filter(scan_chunks::fence.eq(claim.fence))
            .filter(scan_chunks::status.eq("running")),
    )
    .set((
        scan_chunks::status.eq("completed"),
        scan_chunks::completed_at.eq(diesel::dsl::now),
        scan_chunks::lease_until.eq(None::<OffsetDateTime>),
    ))
    .execute(conn)
    .await?;
    if updated == 0 {
        return Ok(Held::Lost);
    }
    try_finalize(conn, &claim.tenant, claim.scan).await?;
    Ok(Held::Yes)
}

/// Ends a running scan whose enumeration is over and whose chunks are all done. Safe to call
/// from anywhere, any number of times: the scan row is locked and only a running scan ends.
pub async fn try_finalize(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<bool, ScanError> {
    let tenant_c = tenant.clone();
    let ended = conn
        .transaction::<_, ScanError, _>(async |conn| {
            let tenant = &tenant_c;
            let row: Option<store::Row> = scans::table
                .filter(scans::tenant_id.eq(tenant.as_str()))
                .filter(scans::scan_id.eq(scan))
                .select(store::Row::as_select())
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let Some(row) = row else { return Ok(false) };
            let enumeration =
                Enumeration::parse(&row.enumeration_status).ok_or(ScanError::CorruptRow)?;
            if row.status()? != Status::Running || enumeration == Enumeration::InProgress {
                return Ok(false);
            }
            let open: i64 = scan_chunks::table
                .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
                .filter(scan_chunks::scan_id.eq(scan))
                .filter(scan_chunks::status.eq_any(["pending", "running"]))
                .count()
                .get_result(conn)
                .await?;
            if open > 0 {
                return Ok(false);
            }
            let options = row.options()?;
            let counts = store::counts(conn, tenant, scan).await?;
            let (status, reason) = final_status(
                options.coverage_strategy,
                options.coverage_target,
                &counts,
                enumeration,
                false,
            );
            end(conn, tenant, scan, status, reason.as_deref()).await?;
            Ok(true)
        })
        .await?;
    if ended {
        refresh_connectors(conn, tenant, scan).await?;
    }
    Ok(ended)
}

async fn end(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
    status: Status,
    reason: Option<&str>,
) -> Result<(), ScanError> {
    diesel::update(
        scans::table
            .filter(scans::tenant_id.eq(tenant.as_str()))
            .filter(scans::scan_id.eq(scan))
            .filter(scans::status.eq("running")),
    )
    .set((
        scans::status.eq(status.as_str()),
        scans::status_reason.eq(reason),
        scans::completed_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await?;
    tracing::info!(%scan, status = status.as_str(), "scan ended");
    Ok(())
}

/// Ends running scans past their deadline as partial (timeout_minutes exceeded). Their
/// workers see it at their next heartbeat and stop.
pub async fn expire(conn: &mut AsyncPgConnection) -> Result<usize, ScanError> {
    let expired: Vec<(String, Uuid)> = diesel::update(
        scans::table
            .filter(scans::status.eq("running"))
            .filter(scans::deadline.lt(diesel::dsl::now)),
    )
    .set((
        scans::status.eq(Status::Partial.as_str()),
        scans::status_reason.eq("timeout_minutes was exceeded"),
        scans::completed_at.eq(diesel::dsl::now),
    ))
    .returning((scans::tenant_id, scans::scan_id))
    .get_results(conn)
    .await?;
    for (tenant, scan) in &expired {
        let tenant: TenantId = tenant.parse().map_err(|_| ScanError::CorruptRow)?;
        tracing::info!(%scan, "scan timed out");
        close_chunks(conn, &tenant, *scan).await?;
        refresh_connectors(conn, &tenant, *scan).await?;
    }
    Ok(expired.len())
}

/// Ends a stopped scan's open chunks.
pub(crate) async fn close_chunks(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<(), ScanError> {
    diesel::update(
        scan_chunks::table
            .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
            .filter(scan_chunks::scan_id.eq(scan))
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
        conn.transaction::<_, ScanError, _>(async |conn| {
            let lost = diesel::update(
                scan_resources::table
                    .filter(scan_resources::tenant_id.eq(tenant.as_str()))
                    .filter(scan_resources::scan_id.eq(scan))
                    .filter(scan_resources::idx.between(start, end))
                    .filter(scan_resources::state.eq("pending")),
            )
            .set((
                scan_resources::state.eq("failed"),
                scan_resources::reason.eq("worker_lost"),
            ))
            .execute(conn)
            .await? as i32;
            if lost > 0 {
                let mut more = Reasons::default();
                more.failed.insert("worker_lost".into(), i64::from(lost));
                let reasons = chunk_reasons(conn, &tenant, *scan, *chunk_no, &more).await?;
                diesel::update(
                    scan_chunks::table
                        .filter(scan_chunks::tenant_id.eq(tenant.as_str()))
                        .filter(scan_chunks::scan_id.eq(scan))
                        .filter(scan_chunks::chunk_no.eq(chunk_no)),
                )
                .set(scan_chunks::reasons.eq(reasons))
                .execute(conn)
                .await?;
            }
            Ok(())
        })
        .await?;
        try_finalize(conn, &tenant, *scan).await?;
    }
    Ok(dead.len())
}

/// Weight of one open finding in the risk stand-in, by category.
fn risk_weight(category: &str) -> f64 {
    match category {
        "government_id" => 10.0,
        "legal_medical" => 6.0,
        "financial" => 4.0,
        "personal" => 2.0,
        "contact" => 1.0,
        _ => 3.0,
    }
}

/// The risk stand-in until governance defines the model: open findings weighted by category
/// (government ids 10, legal and medical 6, financial 4, personal 2, contact 1, custom 3),
/// mapped onto 0-100 by `100 * (1 - e^(-weight / 100))`.
pub fn risk_score(weights_by_category: &[(String, i64)]) -> i32 {
    let total: f64 = weights_by_category
        .iter()
        .map(|(category, n)| risk_weight(category) * *n as f64)
        .sum();
    (100.0 * (1.0 - (-total / 100.0).exp())).round() as i32
}

/// Brings the scan's connectors' last_scan, findings_count and risk_score up to date.
pub async fn refresh_connectors(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<(), ScanError> {
    let ids = store::connector_ids(conn, tenant, scan).await?;
    for id in ids {
        let by_category: Vec<(String, i64)> = findings::table
            .filter(findings::tenant_id.eq(tenant.as_str()))
            .filter(findings::connector_id.eq(id))
            .filter(findings::status.eq("open"))
            .group_by(findings::category)
            .select((findings::category, diesel::dsl::count_star()))
            .load(conn)
            .await?;
        let open: i64 = by_category.iter().map(|(_, n)| n).sum();
        diesel::update(
            connectors_table::table
                .filter(connectors_table::tenant_id.eq(tenant.as_str()))
                .filter(connectors_table::connector_id.eq(id)),
        )
        .set((
            connectors_table::last_scan.eq(diesel::dsl::now),
            connectors_table::findings_count.eq(open),
            connectors_table::risk_score.eq(risk_score(&by_category)),
            connectors_table::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await?;
    }
    Ok(())
}

/// Takes the oldest queued scan and marks it running (its deadline starts now).
pub async fn start_next(
    conn: &mut AsyncPgConnection,
) -> Result<Option<(TenantId, Uuid)>, ScanError> {
    #[derive(QueryableByName)]
    struct Started {
        #[diesel(sql_type = Text)]
        tenant_id: String,
        #[diesel(sql_type = SqlUuid)]
        scan_id: Uuid,
    }
    let rows: Vec<Started> = diesel::sql_query(
        "UPDATE scans s SET status = 'running', started_at = now(),
                deadline = now() + make_interval(mins => (s.options->>'timeout_minutes')::int)
           FROM (SELECT tenant_id, scan_id FROM scans WHERE status = 'queued'
                  ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) pick
          WHERE s.tenant_id = pick.tenant_id AND s.scan_id = pick.scan_id
      RETURNING s.tenant_id, s.scan_id",
    )
    .load(conn)
    .await?;
    match rows.into_iter().next() {
        Some(r) => Ok(Some((
            r.tenant_id.parse().map_err(|_| ScanError::CorruptRow)?,
            r.scan_id,
        ))),
        None => Ok(None),
    }
}

/// Whether `key` is one of `types` (extensions without the dot). `people.csv.gz` is both `gz`
/// and `csv`.
pub fn has_file_type(key: &str, types: &[String]) -> bool {
    if types.is_empty() {
        return true;
    }
    let name = key.rsplit('/').next().unwrap_or(key).to_ascii_lowercase();
    let mut parts = name.rsplit('.');
    let last = parts.next();
    let before = parts.next();
    if name.matches('.').count() == 0 {
        return false;
    }
    let is = |ext: Option<&str>| ext.is_some_and(|e| types.iter().any(|t| t == e));
    is(last) || (last == Some("gz") && name.matches('.').count() >= 2 && is(before))
}

/// One listing source.
struct Source {
    connector: Uuid,
    bucket: String,
    prefix: Option<String>,
}

/// Enumerates a running scan's objects into resources, then splits them into chunks. Listing
/// failures make the enumeration partial (some sources listed) or failed (none).
pub async fn enumerate(
    conn: &mut AsyncPgConnection,
    cloud: &Cloud,
    keyring: &keys::KeyRing,
    tenant: &TenantId,
    scan: Uuid,
) -> Result<(), ScanError> {
    let row = store::row(conn, tenant, scan).await?;
    let options = row.options()?;
    let kind = Kind::parse(&row.kind).ok_or(ScanError::CorruptRow)?;
    let connector_ids = store::connector_ids(conn, tenant, scan).await?;
    // A restarted enumeration starts over.
    diesel::delete(
        scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq(scan)),
    )
    .execute(conn)
    .await?;
    let keys = keyring
        .tenant(conn, tenant)
        .await
        .map_err(|_| ScanError::CorruptRow)?;
    let mut enumerator = Enumerator {
        tenant,
        scan,
        options: &options,
        next_idx: 0,
        batch: Vec::new(),
        sources_total: 0,
        sources_listed: 0,
        problems: Vec::new(),
    };
    // Where each connector's resources begin: chunks never straddle two connectors, so each
    // has one connector's configuration (GET /scans/:id/deployment-config).
    let mut starts: Vec<i32> = Vec::new();
    for connector in connector_ids {
        starts.push(enumerator.next_idx);
        let config = match connectors::store::config(conn, &keys, tenant, connector).await {
            Ok(config) => config,
            Err(e) => {
                enumerator.sources_total += 1;
                enumerator
                    .problems
                    .push(format!("connector {connector}: {e}"));
                continue;
            }
        };
        let storage = match cloud.open(connector, &config) {
            Ok(s) => s,
            Err(e) => {
                enumerator.fail_source(connector, None, &e);
                continue;
            }
        };
        let buckets = match storage.buckets().await {
            Ok(b) => b,
            Err(e) => {
                enumerator.fail_source(connector, None, &e);
                continue;
            }
        };
        let prefixes: Vec<Option<String>> = if !options.prefixes.is_empty() {
            options.prefixes.iter().cloned().map(Some).collect()
        } else if !config.prefixes().is_empty() {
            config.prefixes().into_iter().map(Some).collect()
        } else {
            vec![None]
        };
        let types: Vec<String> = if options.file_types.is_empty() {
            config.file_types()
        } else {
            options.file_types.clone()
        };
        let baseline = if kind == Kind::Incremental {
            Some(baseline(conn, tenant, connector).await?)
        } else {
            None
        };
        for bucket_name in buckets {
            let bucket = match storage.bucket(&bucket_name) {
                Ok(b) => b,
                Err(e) => {
                    enumerator.fail_source(connector, Some(&bucket_name), &e);
                    continue;
                }
            };
            for prefix in &prefixes {
                let source = Source {
                    connector,
                    bucket: bucket_name.clone(),
                    prefix: prefix.clone(),
                };
                enumerator
                    .list(conn, &bucket, &source, &types, baseline.as_ref())
                    .await?;
            }
        }
    }
    enumerator.flush(conn).await?;
    let total = enumerator.next_idx;
    let status = if enumerator.sources_total > 0 && enumerator.sources_listed == 0 {
        Enumeration::Failed
    } else if enumerator.sources_listed < enumerator.sources_total {
        Enumeration::Partial
    } else {
        Enumeration::Complete
    };
    let reason = (!enumerator.problems.is_empty()).then(|| {
        let mut joined = enumerator.problems.join("; ");
        joined.truncate(joined.floor_char_boundary(1000));
        joined
    });
    let chunks: Vec<_> = plan_chunks(&starts, total, options.max_workers)
        .into_iter()
        .enumerate()
        .map(|(no, (start, end))| {
            (
                scan_chunks::tenant_id.eq(tenant.as_str()),
                scan_chunks::scan_id.eq(scan),
                scan_chunks::chunk_no.eq(no as i32),
                scan_chunks::start_index.eq(start),
                scan_chunks::end_index.eq(end),
            )
        })
        .collect();
    for batch in chunks.chunks(1000) {
        diesel::insert_into(scan_chunks::table)
            .values(batch.to_vec())
            .execute(conn)
            .await?;
    }
    diesel::update(
        scans::table
            .filter(scans::tenant_id.eq(tenant.as_str()))
            .filter(scans::scan_id.eq(scan)),
    )
    .set((
        scans::enumeration_status.eq(status.as_str()),
        scans::sources_total.eq(enumerator.sources_total),
        scans::sources_listed.eq(enumerator.sources_listed),
        scans::status_reason.eq(reason),
    ))
    .execute(conn)
    .await?;
    tracing::info!(
        %scan,
        resources = total,
        enumeration = status.as_str(),
        "scan enumerated"
    );
    try_finalize(conn, tenant, scan).await?;
    Ok(())
}

/// Splits resources `0..total` into inclusive ranges of at most `MAX_CHUNK` resources, never
/// across a connector boundary (`starts` holds where each connector's resources begin, in
/// order). Their number is a multiple of `workers` where sizes allow, so that every round of
/// chunks keeps every worker busy: 10,000 resources for 4 workers are 12 chunks of 834, not
/// 10 of 1,000 whose last round would run on 2 workers.
fn plan_chunks(starts: &[i32], total: i32, workers: u32) -> Vec<(i32, i32)> {
    let workers = i64::from(workers.max(1));
    let all = i64::from(total);
    let rounds = ((all + workers * MAX_CHUNK - 1) / (workers * MAX_CHUNK)).max(1);
    let count = rounds * workers;
    let size = ((all + count - 1) / count).clamp(1, MAX_CHUNK);
    let mut ends: Vec<i64> = starts.iter().skip(1).map(|&s| i64::from(s)).collect();
    ends.push(i64::from(total));
    let mut chunks = Vec::new();
    let mut start = 0i64;
    for end in ends {
        while start < end {
            let last = (start + size).min(end) - 1;
            chunks.push((start as i32, last as i32));
            start = last + 1;
        }
    }
    chunks
}

/// What the last scans saw of a connector's objects: (bucket, key) → (size, etag).
type Baseline = HashMap<(String, String), (i64, Option<String>)>;

async fn baseline(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: Uuid,
) -> Result<Baseline, ScanError> {
    let rows: Vec<(String, String, i64, Option<String>)> = scanned_objects::table
        .filter(scanned_objects::tenant_id.eq(tenant.as_str()))
        .filter(scanned_objects::connector_id.eq(connector))
        .select((
            scanned_objects::bucket,
            scanned_objects::object_key,
            scanned_objects::size,
            scanned_objects::etag,
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(b, k, s, e)| ((b, k), (s, e)))
        .collect())
}

type ResourceRow = (
    diesel::dsl::Eq<scan_resources::tenant_id, String>,
    diesel::dsl::Eq<scan_resources::scan_id, Uuid>,
    diesel::dsl::Eq<scan_resources::idx, i32>,
    diesel::dsl::Eq<scan_resources::connector_id, Uuid>,
    diesel::dsl::Eq<scan_resources::bucket, String>,
    diesel::dsl::Eq<scan_resources::object_key, String>,
    diesel::dsl::Eq<scan_resources::size, i64>,
    diesel::dsl::Eq<scan_resources::etag, Option<String>>,
    diesel::dsl::Eq<scan_resources::last_modified, OffsetDateTime>,
);

struct Enumerator<'a> {
    tenant: &'a TenantId,
    scan: Uuid,
    options: &'a Options,
    next_idx: i32,
    batch: Vec<ResourceRow>,
    sources_total: i32,
    sources_listed: i32,
    problems: Vec<String>,
}

impl Enumerator<'_> {
    fn fail_source(&mut self, connector: Uuid, bucket: Option<&str>, e: &AccessError) {
        self.sources_total += 1;
        let place = match bucket {
            Some(b) => format!("connector {connector} bucket {b}"),
            None => format!("connector {connector}"),
        };
        self.problems
            .push(format!("{place}: {}: {}", e.failure.as_str(), e.message));
    }

    fn full(&self) -> bool {
        self.next_idx as u32 >= self.options.max_files
    }

    async fn list(
        &mut self,
        conn: &mut AsyncPgConnection,
        bucket: &connectors::cloud::Bucket,
        source: &Source,
        types: &[String],
        baseline: Option<&Baseline>,
    ) -> Result<(), ScanError> {
        self.sources_total += 1;
        let mut token = None;
        let mut seen: HashSet<String> = HashSet::new();
        loop {
            if self.full() {
                // The cap is the caller's choice: the source counts as listed, but objects
                // past it were not seen, so nothing is judged deleted.
                self.sources_listed += 1;
                return Ok(());
            }
            let page = match bucket
                .list_page(source.prefix.as_deref(), token.take(), PAGE_SIZE)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    self.sources_total -= 1;
                    self.fail_source(source.connector, Some(&source.bucket), &e);
                    return Ok(());
                }
            };
            for object in page.objects {
                if !has_file_type(&object.key, types) {
                    continue;
                }
                if baseline.is_some() {
                    seen.insert(object.key.clone());
                }
                let unchanged = baseline
                    .and_then(|b| b.get(&(source.bucket.clone(), object.key.clone())))
                    .is_some_and(|(size, etag)| {
                        *size == object.size as i64 && *etag == object.etag
                    });
                if unchanged || self.full() {
                    continue;
                }
                self.batch.push((
                    scan_resources::tenant_id.eq(self.tenant.as_str().to_owned()),
                    scan_resources::scan_id.eq(self.scan),
                    scan_resources::idx.eq(self.next_idx),
                    scan_resources::connector_id.eq(source.connector),
                    scan_resources::bucket.eq(source.bucket.clone()),
                    scan_resources::object_key.eq(object.key),
                    scan_resources::size.eq(object.size as i64),
                    scan_resources::etag.eq(object.etag),
                    scan_resources::last_modified.eq(object.last_modified),
                ));
                self.next_idx += 1;
                if self.batch.len() >= 1000 {
                    self.flush(conn).await?;
                }
            }
            token = page.next;
            if token.is_none() {
                break;
            }
        }
        self.sources_listed += 1;
        if let Some(baseline) = baseline {
            self.resolve_deleted(conn, source, baseline, &seen).await?;
        }
        Ok(())
    }

    /// Objects scanned before, under this source, that the full listing no longer shows: their
    /// findings are resolved and they are forgotten.
    async fn resolve_deleted(
        &mut self,
        conn: &mut AsyncPgConnection,
        source: &Source,
        baseline: &Baseline,
        seen: &HashSet<String>,
    ) -> Result<(), ScanError> {
        let prefix = source.prefix.as_deref().unwrap_or("");
        let gone: Vec<&String> = baseline
            .keys()
            .filter(|(b, k)| *b == source.bucket && k.starts_with(prefix) && !seen.contains(k))
            .map(|(_, k)| k)
            .collect();
        for keys in gone.chunks(500) {
            diesel::update(
                findings::table
                    .filter(findings::tenant_id.eq(self.tenant.as_str()))
                    .filter(findings::connector_id.eq(source.connector))
                    .filter(findings::bucket.eq(&source.bucket))
                    .filter(findings::object_key.eq_any(keys))
                    .filter(findings::status.eq("open")),
            )
            .set((
                findings::status.eq("resolved"),
                findings::resolved_at.eq(diesel::dsl::now),
            ))
            .execute(conn)
            .await?;
            diesel::delete(
                scanned_objects::table
                    .filter(scanned_objects::tenant_id.eq(self.tenant.as_str()))
                    .filter(scanned_objects::connector_id.eq(source.connector))
                    .filter(scanned_objects::bucket.eq(&source.bucket))
                    .filter(scanned_objects::object_key.eq_any(keys)),
            )
            .execute(conn)
            .await?;
        }
        Ok(())
    }

    async fn flush(&mut self, conn: &mut AsyncPgConnection) -> Result<(), ScanError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        diesel::insert_into(scan_resources::table)
            .values(batch)
            .execute(conn)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_resource_once_and_never_straddle_connectors() {
        assert_eq!(plan_chunks(&[], 0, 4), vec![]);
        assert_eq!(plan_chunks(&[0], 0, 4), vec![]);
        assert_eq!(
            plan_chunks(&[0], 10, 4),
            vec![(0, 2), (3, 5), (6, 8), (9, 9)]
        );
        // Two connectors: 0..5 and 5..10; with 2 workers a chunk holds 5.
        assert_eq!(plan_chunks(&[0, 5], 10, 2), vec![(0, 4), (5, 9)]);
        // A boundary mid-chunk cuts it; an empty connector adds nothing.
        assert_eq!(
            plan_chunks(&[0, 3, 3, 7], 10, 2),
            vec![(0, 2), (3, 6), (7, 9)]
        );
        // Never more than MAX_CHUNK, and a multiple of the workers in number.
        let big = plan_chunks(&[0], 2500, 1);
        assert_eq!(big, vec![(0, 833), (834, 1667), (1668, 2499)]);
        let even = plan_chunks(&[0], 10_000, 4);
        assert_eq!(even.len(), 12);
        assert!(even.iter().all(|(a, b)| b - a < 834));
        assert_eq!(even.last(), Some(&(9174, 9999)));
    }

    #[test]
    fn file_types_match_the_extension_and_the_one_under_gz() {
        let types = vec!["csv".to_owned(), "txt".to_owned()];
        assert!(has_file_type("a/b/people.csv", &types));
        assert!(has_file_type("people.CSV.gz", &types));
        assert!(!has_file_type("people.json", &types));
        assert!(!has_file_type("csv", &types));
        assert!(!has_file_type("dir.csv/readme", &types));
        assert!(has_file_type("anything", &[]));
        assert!(has_file_type("x.gz", &["gz".to_owned()]));
    }

    #[test]
    fn risk_grows_with_weighted_findings_and_stays_below_100() {
        assert_eq!(risk_score(&[]), 0);
        let one_ssn = risk_score(&[("government_id".into(), 1)]);
        let ten_emails = risk_score(&[("contact".into(), 10)]);
        assert_eq!(one_ssn, ten_emails);
        assert!(risk_score(&[("government_id".into(), 1000)]) <= 100);
    }
}

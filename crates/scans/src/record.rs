//! Recording what a worker found: each batch of resources' outcomes, their findings, what the
//! scan now knows of each object, the chunk's counts, and the outbox event, in one transaction
//! under the chunk's fence.

use std::collections::HashSet;
use std::io::Write as _;

use diesel::QueryableByName;
use diesel::pg::Pg;
use diesel::serialize::{IsNull, Output, ToSql};
use diesel::sql_types::{
    Array, BigInt, Float, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use ids::{ConnectorId, FindingId};

use crate::error::ScanError;
use crate::lease::{Claim, Held, Resource, check_fence};
use crate::model::Reasons;
use crate::outbox::{self, Event, RecordedObject};
use crate::rows::chunk_reasons;

/// A finding ready to store: one PII type in one field of one object, with how many values it
/// holds (see [`crate::group`]). Never a value.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFinding {
    pub pii_type: String,
    pub category: String,
    /// Where the values sit: a CSV header, a JSON path with indices folded, or empty for text.
    pub field: String,
    /// The highest confidence of its values.
    pub confidence: f32,
    pub occurrences: u32,
    /// The first values' locations, at most [`crate::group::SAMPLES`]: the first value's first.
    pub locations: Vec<serde_json::Value>,
    /// The first value, masked.
    pub preview: String,
    /// The values are tokens the platform wrote into this object.
    pub tokenized: bool,
}

/// What an object that was read left unread inside it, by reason: members of an archive
/// skipped as a bomb, corrupt, encrypted or past a limit (`extract::Skip`), or as binary.
pub type Unread = std::collections::BTreeMap<String, i64>;

/// What became of one resource.
#[derive(Debug, Clone)]
pub enum Outcome {
    Scanned {
        findings: Vec<NewFinding>,
        unread: Unread,
    },
    /// Excluded by policy: binary content, unsupported format, size limit.
    Skipped(String),
    /// Errored: network, permission, parse, ...
    Failed(String),
}

impl Outcome {
    /// An object read whole: nothing inside it was left unread.
    pub fn scanned(findings: Vec<NewFinding>) -> Self {
        Outcome::Scanned {
            findings,
            unread: Unread::new(),
        }
    }
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
    previews: Vec<&'a str>,
    tokenized: Vec<bool>,
    fields: Vec<&'a str>,
    occurrences: Vec<i32>,
    locations: Vec<Samples<'a>>,
}

/// A finding's sample locations, bound as one `jsonb` array straight from the finding,
/// instead of copied into a new `serde_json::Value` first.
#[derive(Debug)]
struct Samples<'a>(&'a [serde_json::Value]);

impl ToSql<Jsonb, Pg> for Samples<'_> {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> diesel::serialize::Result {
        // jsonb's binary format: its version, then the JSON text.
        out.write_all(&[1])?;
        serde_json::to_writer(out, self.0)?;
        Ok(IsNull::No)
    }
}

impl<'a> NewFindings<'a> {
    fn push(&mut self, resource: &'a Resource, f: &'a NewFinding) {
        self.ids.push(FindingId::new().as_uuid());
        self.buckets.push(&resource.bucket);
        self.keys.push(&resource.object_key);
        self.types.push(&f.pii_type);
        self.categories.push(&f.category);
        self.confidences.push(f.confidence);
        self.previews.push(&f.preview);
        self.tokenized.push(f.tokenized);
        self.fields.push(&f.field);
        self.occurrences
            .push(i32::try_from(f.occurrences).unwrap_or(i32::MAX));
        self.locations.push(Samples(&f.locations));
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
        connector: ConnectorId,
    ) -> db::Sql<impl db::Binds + Send + 'a> {
        db::sql(sql)
            .bind::<Text, _>(claim.tenant.as_str())
            .bind::<SqlUuid, _>(claim.scan.as_uuid())
            .bind::<SqlUuid, _>(connector.as_uuid())
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
/// The skip reason of an object larger than the scan reads.
pub(crate) const SIZE_LIMIT: &str = "size_limit";

async fn remember<'a>(
    conn: &mut AsyncPgConnection,
    claim: &Claim,
    connector: ConnectorId,
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
            // An upsert finds each row by its key, where a join could be planned as a walk
            // over the connector's objects (docs/decisions.md, "Batches of keys are looked up
            // one key at a time").
            "INSERT INTO scanned_objects (tenant_id, scan_id, connector_id, bucket, object_key,
                                          size, etag, last_modified)
             SELECT $1, $2, $3, o.* FROM unnest($4::text[], $5::text[], $6::int8[],
                    $7::text[], $8::timestamptz[]) AS o
             ON CONFLICT (tenant_id, connector_id, bucket, object_key) DO UPDATE
                SET scan_id = EXCLUDED.scan_id, size = EXCLUDED.size, etag = EXCLUDED.etag,
                    last_modified = EXCLUDED.last_modified",
            claim,
            connector,
        )
        .execute(conn)
        .await?;
    Ok(known)
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
        // Nothing to write, but the caller still learns whether it holds the chunk.
        return conn
            .transaction::<_, ScanError, _>(async |conn| check_fence(conn, claim).await)
            .await;
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
                Outcome::Scanned { findings: f, .. } => ("scanned", None, found_values(f)),
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
        let recorded: Vec<Recorded> = db::sql(
            "UPDATE scan_resources r
                SET state = v.state, reason = v.reason, findings = v.findings
               FROM unnest($3::int[], $4::text[], $5::text[], $6::int[])
                    AS v(idx, state, reason, findings)
              WHERE r.tenant_id = $1 AND r.scan_id = $2 AND r.idx BETWEEN $7 AND $8
                AND r.idx = v.idx AND r.state = 'pending'
          RETURNING r.idx",
        )
        .bind::<Text, _>(tenant)
        .bind::<SqlUuid, _>(claim.scan.as_uuid())
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
        // What was read: an object skipped for its size was not, so what it held before is
        // neither superseded nor remembered (a later scan with room for it reads it again).
        let seen: Vec<&Resource> = batch
            .iter()
            .filter(|(_, o)| match o {
                Outcome::Scanned { .. } => true,
                Outcome::Skipped(reason) => reason != SIZE_LIMIT,
                _ => false,
            })
            .map(|(r, _)| r)
            .collect();
        let known = remember(conn, &claim, connector, &seen).await?;
        if !known.is_empty() {
            // What these objects held before is superseded by what was found now.
            let buckets: Vec<&str> = known.iter().map(|r| r.bucket.as_str()).collect();
            let keys: Vec<&str> = known.iter().map(|r| r.object_key.as_str()).collect();
            crate::findings::resolve_open(
                conn,
                &claim.tenant,
                connector,
                &buckets,
                &keys,
                Some(claim.scan),
            )
            .await?;
        }
        // Findings go in as arrays: one short statement whatever their number, instead of a
        // VALUES list Postgres would parse afresh for every batch.
        let mut new = NewFindings::default();
        for (resource, outcome) in &batch {
            if let Outcome::Scanned {
                findings: found, ..
            } = outcome
            {
                for f in found {
                    new.push(resource, f);
                }
            }
        }
        let found: i32 = new.occurrences.iter().fold(0, |n, o| n.saturating_add(*o));
        if !new.ids.is_empty() {
            db::sql(
                "INSERT INTO findings (tenant_id, scan_id, connector_id, finding_id, bucket,
                                       object_key, pii_type, category, confidence, preview,
                                       tokenized, field, occurrences, locations)
                 SELECT $1, $2, $3, f.* FROM unnest($4::uuid[], $5::text[], $6::text[],
                        $7::text[], $8::text[], $9::real[], $10::text[], $11::bool[],
                        $12::text[], $13::int[], $14::jsonb[]) AS f",
            )
            .bind::<Text, _>(tenant)
            .bind::<SqlUuid, _>(claim.scan.as_uuid())
            .bind::<SqlUuid, _>(connector.as_uuid())
            .bind::<Array<SqlUuid>, _>(&new.ids)
            .bind::<Array<Text>, _>(&new.buckets)
            .bind::<Array<Text>, _>(&new.keys)
            .bind::<Array<Text>, _>(&new.types)
            .bind::<Array<Text>, _>(&new.categories)
            .bind::<Array<Float>, _>(&new.confidences)
            .bind::<Array<Text>, _>(&new.previews)
            .bind::<Array<diesel::sql_types::Bool>, _>(&new.tokenized)
            .bind::<Array<Text>, _>(&new.fields)
            .bind::<Array<Integer>, _>(&new.occurrences)
            .bind::<Array<Jsonb>, _>(&new.locations)
            .execute(conn)
            .await?;
        }
        // The chunk's counts move with its resources, so progress never groups resources.
        let mut scanned = 0;
        let mut reasons = Reasons::default();
        for (_, outcome) in &batch {
            match outcome {
                Outcome::Scanned { unread, .. } => {
                    scanned += 1;
                    for (reason, n) in unread {
                        *reasons.unread.entry(reason.clone()).or_default() += n;
                    }
                }
                Outcome::Skipped(r) => *reasons.skipped.entry(r.clone()).or_default() += 1,
                Outcome::Failed(r) => *reasons.failed.entry(r.clone()).or_default() += 1,
            }
        }
        let reasons = if reasons.is_empty() {
            None
        } else {
            Some(chunk_reasons(conn, &claim.tenant, claim.scan, claim.chunk_no, &reasons).await?)
        };
        // What changed, for whoever acts on it, in the same transaction as the change.
        let objects = batch
            .iter()
            .map(|(r, o)| RecordedObject {
                bucket: r.bucket.clone(),
                object_key: r.object_key.clone(),
                state: match o {
                    Outcome::Scanned { .. } => "scanned",
                    Outcome::Skipped(_) => "skipped",
                    Outcome::Failed(_) => "failed",
                }
                .to_owned(),
                findings: match o {
                    Outcome::Scanned { findings: f, .. } => found_values(f),
                    _ => 0,
                },
            })
            .collect();
        outbox::write(
            conn,
            &claim.tenant,
            claim.scan,
            &Event::ObjectsRecorded { connector, objects },
        )
        .await?;
        db::sql(
            "UPDATE scan_chunks SET files_processed = files_processed + $4,
                        files_scanned = files_scanned + $5,
                        reasons = coalesce($6, reasons),
                        findings_count = findings_count + $7,
                        lease_until = now() + make_interval(secs => $8)
                  WHERE tenant_id = $1 AND scan_id = $2 AND chunk_no = $3",
        )
        .bind::<Text, _>(tenant)
        .bind::<SqlUuid, _>(claim.scan.as_uuid())
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

/// How many values some findings hold: what every `findings_count` counts.
pub fn values(findings: &[NewFinding]) -> i64 {
    findings.iter().map(|f| i64::from(f.occurrences)).sum()
}

/// How many values some findings hold, as a scan's counts take it.
fn found_values(found: &[NewFinding]) -> i32 {
    i32::try_from(values(found)).unwrap_or(i32::MAX)
}

//! Risk kept up to date batch by batch: each recorded batch sets its objects' file-level risk
//! and their findings' risk, and moves its connector's sums by the difference. Nothing here
//! reads all of a connector's findings.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{
    Array, BigInt, Bool, Double, Float4, Integer, Nullable, SmallInt, Text, Timestamptz,
    Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::model::{self, FILE_SATURATION, Factors};
use policies::document::Mode;
use policies::matching::{Finding, matches};
use policies::store::Active;

/// What a file's risk was before and is now.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectChange {
    pub bucket: String,
    pub object_key: String,
    /// (findings, score) before, when the object was evaluated before.
    pub previous: Option<(i32, i16)>,
    pub current: (i32, i16),
}

impl ObjectChange {
    /// Data drift: the findings count or the score moved, or a new object has findings.
    pub fn drifted(&self) -> bool {
        match self.previous {
            None => self.current.0 > 0,
            Some(previous) => previous != self.current,
        }
    }
}

#[derive(QueryableByName)]
struct Previous {
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Integer)]
    findings_count: i32,
    #[diesel(sql_type = Integer)]
    covered_count: i32,
    #[diesel(sql_type = Float4)]
    exposure: f32,
    #[diesel(sql_type = SmallInt)]
    risk_score: i16,
}

#[derive(QueryableByName)]
struct CategoryRow {
    #[diesel(sql_type = Text)]
    category: String,
    #[diesel(sql_type = Integer)]
    occurrences: i32,
}

#[derive(QueryableByName)]
struct BucketExposure {
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Nullable<Bool>)]
    public: Option<bool>,
}

/// A finding with its sensitivity, whether an enforced policy covers it, and its score.
type Scored<'a> = (&'a Finding, f64, bool, i16);

/// Whether an enforced policy in scope matches the finding.
fn covered(policies: &[Active], connector: ConnectorId, f: &Finding) -> bool {
    // A token in an object is remediated already: covered, whatever the policies say.
    f.tokenized
        || policies.iter().any(|p| {
            p.document.spec.mode == Mode::Enforced && p.covers(connector) && matches(&p.document, f)
        })
}

/// The exposure of each bucket, from its last check; unknown when never checked.
pub async fn exposures(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    buckets: &[&str],
) -> Result<HashMap<String, f64>, DieselError> {
    let rows: Vec<BucketExposure> = db::sql(
        "SELECT bucket, public FROM governance_buckets
          WHERE tenant_id = $1 AND connector_id = $2 AND bucket = ANY($3)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Array<Text>, _>(buckets)
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.bucket, model::exposure(r.public)))
        .collect())
}

/// Takes, until the transaction ends, the lock that makes changes to a connector's risk one at
/// a time: recording batches, and rescoring a bucket whose exposure changed (whose rows a
/// batch recorded under the old exposure would otherwise keep it).
pub(crate) async fn lock_connector(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<(), DieselError> {
    db::sql("SELECT pg_advisory_xact_lock(hashtext('dps-risk:' || $1 || '/' || $2::text))")
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .execute(conn)
        .await
        .map(drop)
}

/// Takes [`lock_connector`] for every connector of the tenant with risk recorded, in the order
/// of their ids.
pub(crate) async fn lock_connectors(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<(), DieselError> {
    #[derive(QueryableByName)]
    struct Connector {
        #[diesel(sql_type = SqlUuid)]
        connector_id: Uuid,
    }
    let connectors: Vec<Connector> = db::sql(
        "SELECT connector_id FROM governance_connector_risk WHERE tenant_id = $1
          ORDER BY connector_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .load(conn)
    .await?;
    for c in connectors {
        lock_connector(conn, tenant, ConnectorId::from_uuid(c.connector_id)).await?;
    }
    Ok(())
}

/// Records the risk of a batch's scanned objects (`objects`: bucket and key of each object the
/// scan read, with or without findings) from their open `findings`, and returns how each
/// object's risk moved. A finding of an object not in `objects` is not recorded.
pub async fn record_batch(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    objects: &[(&str, &str)],
    findings: &[Finding],
    policies: &[Active],
) -> Result<Vec<ObjectChange>, DieselError> {
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    // The scan's evaluation and the remediation rescore may record the same objects at once:
    // each must read what the other wrote as its `previous`, or both move the connector's sums
    // by the same findings. Holding the lock also means no other transaction inserts these
    // objects' finding risk while this one replaces it, so that insert needs no `ON CONFLICT`.
    lock_connector(conn, tenant, connector).await?;
    let now = OffsetDateTime::now_utc();
    let mut buckets: Vec<&str> = objects.iter().map(|(b, _)| *b).collect();
    buckets.sort_unstable();
    buckets.dedup();
    let exposure = exposures(conn, tenant, connector, &buckets).await?;
    let exposure_of = |bucket: &str| {
        exposure
            .get(bucket)
            .copied()
            .unwrap_or(model::EXPOSURE_UNKNOWN)
    };

    let all_buckets: Vec<&str> = objects.iter().map(|(b, _)| *b).collect();
    let all_keys: Vec<&str> = objects.iter().map(|(_, k)| *k).collect();
    let previous: Vec<Previous> = db::sql(
        // One index probe per object, whatever the statistics say (docs/decisions.md,
        // "Batches of keys are looked up one key at a time").
        "SELECT o.bucket, o.object_key, o.findings_count, o.covered_count, o.exposure, o.risk_score
           FROM unnest($3::text[], $4::text[]) AS b(bucket, object_key)
           CROSS JOIN LATERAL (
                SELECT o.bucket, o.object_key, o.findings_count, o.covered_count, o.exposure,
                       o.risk_score
                  FROM governance_objects o
                 WHERE o.tenant_id = $1 AND o.connector_id = $2 AND o.bucket = b.bucket
                   AND o.object_key = b.object_key
                OFFSET 0) o",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Array<Text>, _>(&all_buckets)
    .bind::<Array<Text>, _>(&all_keys)
    .load(conn)
    .await?;
    let previous: HashMap<(&str, &str), &Previous> = previous
        .iter()
        .map(|p| ((p.bucket.as_str(), p.object_key.as_str()), p))
        .collect();

    // Each object's findings, and each finding's own risk.
    let mut by_object: HashMap<(&str, &str), Vec<Scored<'_>>> = HashMap::new();
    for f in findings {
        let sensitivity = model::finding_sensitivity(&f.pii_type, &f.category, f.confidence);
        let is_covered = covered(policies, connector, f);
        let score = model::finding_score(sensitivity, exposure_of(&f.bucket), is_covered);
        by_object
            .entry((f.bucket.as_str(), f.object_key.as_str()))
            .or_default()
            .push((f, sensitivity, is_covered, score));
    }

    let mut changes = Vec::new();
    let mut rows = ObjectRows::default();
    // Only the findings of the objects recorded here: their old rows are deleted below, under
    // the connector's lock, so each of these rows is new.
    let mut finding_rows = FindingRows::default();
    let (mut d_findings, mut d_covered, mut d_weight) = (0i64, 0i64, 0f64);
    for &(bucket, key) in objects {
        let found = by_object
            .get(&(bucket, key))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let before = previous.get(&(bucket, key));
        if found.is_empty() && before.is_none() {
            // Never had findings, has none: nothing to keep.
            continue;
        }
        // Counts are of values: a finding stands for its occurrences.
        let values = |covered_only: bool| {
            found
                .iter()
                .filter(|(_, _, c, _)| *c || !covered_only)
                .map(|(f, ..)| i64::from(f.occurrences))
                .sum::<i64>()
                .min(i64::from(i32::MAX)) as i32
        };
        let count = values(false);
        let covered_count = values(true);
        let exposure = exposure_of(bucket);
        for &(f, sensitivity, is_covered, score) in found {
            finding_rows.push(f, sensitivity, exposure, is_covered, score);
        }
        let factors = Factors {
            sensitivity: found.iter().map(|(_, s, _, _)| *s).fold(0.0, f64::max),
            volume: model::volume(count as u64, FILE_SATURATION),
            exposure,
            policy_coverage: if count == 0 {
                0.0
            } else {
                f64::from(covered_count) / f64::from(count)
            },
        };
        let score = if count == 0 {
            0
        } else {
            model::score(&factors)
        };
        let etag = found.first().map(|(f, ..)| f.etag.as_str()).unwrap_or("");
        rows.push(bucket, key, etag, count, covered_count, &factors, score);
        d_findings += i64::from(count) - before.map_or(0, |p| i64::from(p.findings_count));
        d_covered += i64::from(covered_count) - before.map_or(0, |p| i64::from(p.covered_count));
        d_weight += f64::from(count) * exposure
            - before.map_or(0.0, |p| f64::from(p.findings_count) * f64::from(p.exposure));
        changes.push(ObjectChange {
            bucket: bucket.to_owned(),
            object_key: key.to_owned(),
            previous: before.map(|p| (p.findings_count, p.risk_score)),
            current: (count, score),
        });
    }

    rows.write(conn, tenant, connector, now).await?;
    // The objects' old findings' risk goes; their open findings' risk comes. The categories
    // of both move the connector's counts. Each object is probed through the index led by
    // (tenant, bucket, key); the connector is compared with IS NOT DISTINCT FROM, which no
    // index serves, so that the connector's index (tenant, connector, …) never looks as narrow
    // to a planner without statistics (migration 000050).
    // Finding risk is only ever written here, beside its object's row: when none of these
    // objects had a row (their first scan), none has finding risk to replace, and the
    // connector's lock keeps it so until this transaction ends.
    let gone: Vec<CategoryRow> = if previous.is_empty() {
        Vec::new()
    } else {
        db::sql(
            "DELETE FROM governance_finding_risk r
          WHERE r.tenant_id = $1 AND r.finding_id = ANY(ARRAY(
                SELECT x.finding_id
                  FROM unnest($3::text[], $4::text[]) AS b(bucket, object_key)
                 CROSS JOIN LATERAL (
                       SELECT x.finding_id FROM governance_finding_risk x
                        WHERE x.tenant_id = $1 AND x.bucket = b.bucket
                          AND x.object_key = b.object_key
                          AND x.connector_id IS NOT DISTINCT FROM $2
                       OFFSET 0) x))
         RETURNING r.category, r.occurrences",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Array<Text>, _>(&all_buckets)
        .bind::<Array<Text>, _>(&all_keys)
        .load(conn)
        .await?
    };
    finding_rows.write(conn, tenant, connector, now).await?;
    let mut by_category: HashMap<&str, i64> = HashMap::new();
    for row in &gone {
        *by_category.entry(row.category.as_str()).or_default() -= i64::from(row.occurrences);
    }
    for (category, n) in finding_rows
        .categories
        .iter()
        .zip(&finding_rows.occurrences)
    {
        *by_category.entry(category).or_default() += i64::from(*n);
    }
    by_category.retain(|_, n| *n != 0);
    if !by_category.is_empty() {
        let categories: Vec<&str> = by_category.keys().copied().collect();
        let deltas: Vec<i64> = categories.iter().map(|c| by_category[c]).collect();
        db::sql(
            "INSERT INTO governance_category_counts (tenant_id, connector_id, category, findings)
             SELECT $1, $2, d.category, d.delta
               FROM unnest($3::text[], $4::bigint[]) AS d(category, delta)
             ON CONFLICT (tenant_id, connector_id, category) DO UPDATE
                SET findings = governance_category_counts.findings + EXCLUDED.findings",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Array<Text>, _>(&categories)
        .bind::<Array<BigInt>, _>(&deltas)
        .execute(conn)
        .await?;
    }
    if d_findings != 0 || d_covered != 0 || d_weight != 0.0 {
        db::sql(
            "INSERT INTO governance_connector_risk
                 (tenant_id, connector_id, findings_count, covered_count, exposure_weight, computed_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tenant_id, connector_id) DO UPDATE SET
                 findings_count = governance_connector_risk.findings_count + EXCLUDED.findings_count,
                 covered_count = governance_connector_risk.covered_count + EXCLUDED.covered_count,
                 exposure_weight = governance_connector_risk.exposure_weight + EXCLUDED.exposure_weight,
                 computed_at = EXCLUDED.computed_at",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<BigInt, _>(d_findings)
        .bind::<BigInt, _>(d_covered)
        .bind::<Double, _>(d_weight)
        .bind::<Timestamptz, _>(now)
        .execute(conn)
        .await?;
    }
    Ok(changes)
}

/// Columns of `governance_objects` rows to upsert.
#[derive(Default)]
struct ObjectRows<'a> {
    buckets: Vec<&'a str>,
    keys: Vec<&'a str>,
    etags: Vec<&'a str>,
    counts: Vec<i32>,
    covered: Vec<i32>,
    sensitivity: Vec<f32>,
    volume: Vec<f32>,
    exposure: Vec<f32>,
    coverage: Vec<f32>,
    scores: Vec<i16>,
}

impl<'a> ObjectRows<'a> {
    #[allow(clippy::too_many_arguments, reason = "one row's columns")]
    fn push(
        &mut self,
        bucket: &'a str,
        key: &'a str,
        etag: &'a str,
        count: i32,
        covered: i32,
        factors: &Factors,
        score: i16,
    ) {
        self.buckets.push(bucket);
        self.keys.push(key);
        self.etags.push(etag);
        self.counts.push(count);
        self.covered.push(covered);
        self.sensitivity.push(factors.sensitivity as f32);
        self.volume.push(factors.volume as f32);
        self.exposure.push(factors.exposure as f32);
        self.coverage.push(factors.policy_coverage as f32);
        self.scores.push(score);
    }

    async fn write(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        connector: ConnectorId,
        now: OffsetDateTime,
    ) -> Result<(), DieselError> {
        if self.buckets.is_empty() {
            return Ok(());
        }
        db::sql(
            "INSERT INTO governance_objects (tenant_id, connector_id, bucket, object_key,
                    object_id, etag, findings_count, covered_count, sensitivity, volume,
                    exposure, coverage, risk_score, computed_at)
             SELECT $1, $2, r.bucket, r.object_key,
                    md5($2::text || '/' || r.bucket || '/' || r.object_key)::uuid, r.etag,
                    r.findings_count, r.covered_count, r.sensitivity, r.volume, r.exposure,
                    r.coverage, r.risk_score, $13
               FROM unnest($3::text[], $4::text[], $5::text[], $6::int[], $7::int[],
                           $8::real[], $9::real[], $10::real[], $11::real[], $12::smallint[])
                    AS r(bucket, object_key, etag, findings_count, covered_count, sensitivity,
                         volume, exposure, coverage, risk_score)
             ON CONFLICT (tenant_id, connector_id, bucket, object_key) DO UPDATE SET
                 etag = EXCLUDED.etag, findings_count = EXCLUDED.findings_count,
                 covered_count = EXCLUDED.covered_count, sensitivity = EXCLUDED.sensitivity,
                 volume = EXCLUDED.volume, exposure = EXCLUDED.exposure,
                 coverage = EXCLUDED.coverage, risk_score = EXCLUDED.risk_score,
                 computed_at = EXCLUDED.computed_at",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Array<Text>, _>(&self.buckets)
        .bind::<Array<Text>, _>(&self.keys)
        .bind::<Array<Text>, _>(&self.etags)
        .bind::<Array<Integer>, _>(&self.counts)
        .bind::<Array<Integer>, _>(&self.covered)
        .bind::<Array<Float4>, _>(&self.sensitivity)
        .bind::<Array<Float4>, _>(&self.volume)
        .bind::<Array<Float4>, _>(&self.exposure)
        .bind::<Array<Float4>, _>(&self.coverage)
        .bind::<Array<SmallInt>, _>(&self.scores)
        .bind::<Timestamptz, _>(now)
        .execute(conn)
        .await
        .map(drop)
    }
}

/// Columns of `governance_finding_risk` rows to insert. A plain insert: the batch deleted its
/// objects' rows under the connector's lock, and `ON CONFLICT`'s speculative insertion cost a
/// fifth of the statement (docs/decisions.md, "One recording of a connector's risk at a time").
#[derive(Default)]
struct FindingRows<'a> {
    ids: Vec<Uuid>,
    buckets: Vec<&'a str>,
    keys: Vec<&'a str>,
    categories: Vec<&'a str>,
    sensitivity: Vec<f32>,
    exposure: Vec<f32>,
    covered: Vec<bool>,
    scores: Vec<i16>,
    occurrences: Vec<i32>,
}

impl<'a> FindingRows<'a> {
    fn push(&mut self, f: &'a Finding, sensitivity: f64, exposure: f64, covered: bool, score: i16) {
        self.ids.push(f.id);
        self.buckets.push(&f.bucket);
        self.keys.push(&f.object_key);
        self.categories.push(&f.category);
        self.sensitivity.push(sensitivity as f32);
        self.exposure.push(exposure as f32);
        self.covered.push(covered);
        self.scores.push(score);
        self.occurrences
            .push(i32::try_from(f.occurrences).unwrap_or(i32::MAX));
    }

    async fn write(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        connector: ConnectorId,
        now: OffsetDateTime,
    ) -> Result<(), DieselError> {
        if self.ids.is_empty() {
            return Ok(());
        }
        db::sql(
            "INSERT INTO governance_finding_risk (tenant_id, finding_id, connector_id, bucket,
                    object_key, category, sensitivity, exposure, covered, risk_score, computed_at,
                    occurrences)
             SELECT $1, r.finding_id, $2, r.bucket, r.object_key, r.category, r.sensitivity,
                    r.exposure, r.covered, r.risk_score, $10, r.occurrences
               FROM unnest($3::uuid[], $4::text[], $5::text[], $6::real[], $7::real[],
                           $8::bool[], $9::smallint[], $11::text[], $12::int[])
                    AS r(finding_id, bucket, object_key, sensitivity, exposure, covered,
                         risk_score, category, occurrences)",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Array<SqlUuid>, _>(&self.ids)
        .bind::<Array<Text>, _>(&self.buckets)
        .bind::<Array<Text>, _>(&self.keys)
        .bind::<Array<Float4>, _>(&self.sensitivity)
        .bind::<Array<Float4>, _>(&self.exposure)
        .bind::<Array<Bool>, _>(&self.covered)
        .bind::<Array<SmallInt>, _>(&self.scores)
        .bind::<Timestamptz, _>(now)
        .bind::<Array<Text>, _>(&self.categories)
        .bind::<Array<Integer>, _>(&self.occurrences)
        .execute(conn)
        .await
        .map(drop)
    }
}

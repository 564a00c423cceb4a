//! Policy coverage kept true when policies change: which findings an enforced policy matches
//! is recomputed for the tenant in the background, set-based, and only the findings whose
//! coverage flipped (and their files and connectors) are rescored.
//!
//! A policy created, replaced or deleted queues the tenant
//! ([`policies::changes::request`], in the policy's transaction); a task in platform-api
//! drains the queue ([`run_once`]).

use std::collections::HashMap;
use std::time::Duration;

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, Bool, Float4, Integer, Nullable, SmallInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use uuid::Uuid;

use super::model::{self, Factors};
use policies::document::Mode;
use policies::store::active;
use policies::thresholds::lowest_thresholds;

#[derive(QueryableByName)]
struct Flipped {
    #[diesel(sql_type = SqlUuid)]
    finding_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Float4)]
    sensitivity: f32,
    #[diesel(sql_type = Float4)]
    exposure: f32,
    #[diesel(sql_type = Bool)]
    covered: bool,
    #[diesel(sql_type = Integer)]
    occurrences: i32,
}

#[derive(QueryableByName)]
struct ObjectRow {
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Integer)]
    findings_count: i32,
    #[diesel(sql_type = Integer)]
    covered_count: i32,
    #[diesel(sql_type = Float4)]
    sensitivity: f32,
    #[diesel(sql_type = Float4)]
    volume: f32,
    #[diesel(sql_type = Float4)]
    exposure: f32,
}

/// Recomputes the tenant's coverage under its current enforced policies; returns how many
/// findings changed. Call it in a transaction.
pub async fn refresh(conn: &mut AsyncPgConnection, tenant: &TenantId) -> Result<u64, DieselError> {
    policies::store::lock_for_reading(conn, tenant).await?;
    // After any batch being recorded in the tenant's connectors has committed, and before any
    // other records them: the counts moved below are deltas from the rows read here.
    super::state::lock_connectors(conn, tenant).await?;
    let enforced: Vec<_> = active(conn, tenant)
        .await?
        .into_iter()
        .filter(|p| p.document.spec.mode == Mode::Enforced)
        .collect();
    let pairs = scans::findings::type_counts(conn, tenant, &[]).await?;
    let lowest = lowest_thresholds(&enforced, &pairs, &[]);
    let mut connectors: Vec<Option<Uuid>> = Vec::new();
    let mut types: Vec<&str> = Vec::new();
    let mut categories: Vec<&str> = Vec::new();
    let mut mins: Vec<f32> = Vec::new();
    for ((connector, t, c), min) in &lowest {
        connectors.push(*connector);
        types.push(t);
        categories.push(c);
        mins.push(*min);
    }
    // The findings whose coverage is not what the policies say now, with their new flag.
    let flipped: Vec<Flipped> = db::sql(
        "WITH a AS (
             SELECT * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::real[])
                 AS a(connector_id, pii_type, category, min)),
         everywhere AS (SELECT * FROM a WHERE connector_id IS NULL),
         here AS (SELECT * FROM a WHERE connector_id IS NOT NULL),
         fresh AS (
             SELECT r.finding_id, r.connector_id, r.bucket, r.object_key, r.sensitivity,
                    r.exposure, r.covered AS was, r.occurrences,
                    -- A token in an object is remediated already: covered, whatever the
                    -- policies say (as `state::covered` scores it).
                    f.tokenized OR coalesce(f.confidence >= least(e.min, h.min), false)
                        AS covered
               FROM governance_finding_risk r
               JOIN findings f ON f.tenant_id = r.tenant_id AND f.finding_id = r.finding_id
               LEFT JOIN everywhere e ON e.pii_type = f.pii_type AND e.category = f.category
               LEFT JOIN here h ON h.connector_id = f.connector_id
                AND h.pii_type = f.pii_type AND h.category = f.category
              WHERE r.tenant_id = $1)
         SELECT finding_id, connector_id, bucket, object_key, sensitivity, exposure, covered,
                occurrences
           FROM fresh WHERE covered <> was",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<Nullable<SqlUuid>>, _>(&connectors)
    .bind::<Array<Text>, _>(&types)
    .bind::<Array<Text>, _>(&categories)
    .bind::<Array<Float4>, _>(&mins)
    .load(conn)
    .await?;
    if flipped.is_empty() {
        return Ok(0);
    }
    // Each finding's own score, and the change of each object's covered count.
    let mut by_object: HashMap<(Uuid, &str, &str), i32> = HashMap::new();
    for chunk in flipped.chunks(10_000) {
        let ids: Vec<Uuid> = chunk.iter().map(|f| f.finding_id).collect();
        let covered: Vec<bool> = chunk.iter().map(|f| f.covered).collect();
        let scores: Vec<i16> = chunk
            .iter()
            .map(|f| {
                model::finding_score(f64::from(f.sensitivity), f64::from(f.exposure), f.covered)
            })
            .collect();
        db::sql(
            "UPDATE governance_finding_risk r SET covered = n.covered, risk_score = n.score
               FROM unnest($2::uuid[], $3::bool[], $4::smallint[]) AS n(finding_id, covered, score)
              WHERE r.tenant_id = $1 AND r.finding_id = n.finding_id",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<Array<Bool>, _>(&covered)
        .bind::<Array<SmallInt>, _>(&scores)
        .execute(conn)
        .await?;
        for f in chunk {
            *by_object
                .entry((f.connector_id, f.bucket.as_str(), f.object_key.as_str()))
                .or_default() += if f.covered {
                f.occurrences
            } else {
                -f.occurrences
            };
        }
    }
    let objects: Vec<(Uuid, &str, &str)> = by_object.keys().copied().collect();
    let mut per_connector: HashMap<Uuid, i64> = HashMap::new();
    for chunk in objects.chunks(10_000) {
        let chunk_connectors: Vec<Uuid> = chunk.iter().map(|o| o.0).collect();
        let buckets: Vec<&str> = chunk.iter().map(|o| o.1).collect();
        let keys: Vec<&str> = chunk.iter().map(|o| o.2).collect();
        let rows: Vec<ObjectRow> = db::sql(
            "SELECT o.connector_id, o.bucket, o.object_key, o.findings_count, o.covered_count,
                    o.sensitivity, o.volume, o.exposure
               FROM unnest($2::uuid[], $3::text[], $4::text[]) AS k(connector_id, bucket, object_key)
               JOIN governance_objects o
                 ON o.tenant_id = $1 AND o.connector_id = k.connector_id
                AND o.bucket = k.bucket AND o.object_key = k.object_key",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Array<SqlUuid>, _>(&chunk_connectors)
        .bind::<Array<Text>, _>(&buckets)
        .bind::<Array<Text>, _>(&keys)
        .load(conn)
        .await?;
        let mut counts = Vec::with_capacity(rows.len());
        let mut coverages = Vec::with_capacity(rows.len());
        let mut scores = Vec::with_capacity(rows.len());
        for row in &rows {
            let delta = by_object
                .get(&(
                    row.connector_id,
                    row.bucket.as_str(),
                    row.object_key.as_str(),
                ))
                .copied()
                .unwrap_or(0);
            let covered = (row.covered_count + delta).clamp(0, row.findings_count.max(0));
            let coverage = if row.findings_count > 0 {
                f64::from(covered) / f64::from(row.findings_count)
            } else {
                0.0
            };
            *per_connector.entry(row.connector_id).or_default() +=
                i64::from(covered - row.covered_count);
            counts.push(covered);
            coverages.push(coverage as f32);
            scores.push(if row.findings_count > 0 {
                model::score(&Factors {
                    sensitivity: f64::from(row.sensitivity),
                    volume: f64::from(row.volume),
                    exposure: f64::from(row.exposure),
                    policy_coverage: coverage,
                })
            } else {
                0
            });
        }
        let row_connectors: Vec<Uuid> = rows.iter().map(|r| r.connector_id).collect();
        let row_buckets: Vec<&str> = rows.iter().map(|r| r.bucket.as_str()).collect();
        let row_keys: Vec<&str> = rows.iter().map(|r| r.object_key.as_str()).collect();
        db::sql(
            "UPDATE governance_objects o
                SET covered_count = n.covered, coverage = n.coverage, risk_score = n.score
               FROM unnest($2::uuid[], $3::text[], $4::text[], $5::int[], $6::real[], $7::smallint[])
                    AS n(connector_id, bucket, object_key, covered, coverage, score)
              WHERE o.tenant_id = $1 AND o.connector_id = n.connector_id
                AND o.bucket = n.bucket AND o.object_key = n.object_key",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Array<SqlUuid>, _>(&row_connectors)
        .bind::<Array<Text>, _>(&row_buckets)
        .bind::<Array<Text>, _>(&row_keys)
        .bind::<Array<Integer>, _>(&counts)
        .bind::<Array<Float4>, _>(&coverages)
        .bind::<Array<SmallInt>, _>(&scores)
        .execute(conn)
        .await?;
    }
    for (connector, delta) in per_connector {
        if delta != 0 {
            db::sql(
                "UPDATE governance_connector_risk
                    SET covered_count = covered_count + $3, computed_at = now()
                  WHERE tenant_id = $1 AND connector_id = $2",
            )
            .bind::<Text, _>(tenant.as_str())
            .bind::<SqlUuid, _>(connector)
            .bind::<diesel::sql_types::BigInt, _>(delta)
            .execute(conn)
            .await?;
        }
    }
    Ok(flipped.len() as u64)
}

/// Takes one queued tenant and recomputes its coverage; returns whether there was one.
pub async fn run_once(conn: &mut AsyncPgConnection) -> Result<bool, DieselError> {
    let Some(claimed) = policies::changes::claim(conn).await? else {
        return Ok(false);
    };
    conn.transaction(async |conn| {
        let changed = refresh(conn, &claimed.tenant).await?;
        tracing::debug!(tenant = %claimed.tenant, findings = changed, "policy coverage recomputed");
        policies::changes::done(conn, &claimed).await
    })
    .await?;
    Ok(true)
}

/// Recomputes coverage until the process ends: at once while tenants are queued, else a look
/// every second.
pub fn spawn(pool: db::Pool) {
    db::background::repeat("policy coverage", Duration::from_secs(1), move || {
        let pool = pool.clone();
        async move {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            run_once(&mut conn).await.map_err(|e| e.to_string())
        }
    });
}

//! Reading risk scores: finding and file scores straight from their indexes, highest first;
//! connector and workspace scores from the sums each batch keeps. No read recomputes over
//! findings.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{
    Array, BigInt, Bool, Double, Float4, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};
use time::OffsetDateTime;
use uuid::Uuid;

use super::model::{self, CONNECTOR_SATURATION, FILE_SATURATION, Factors, WORKSPACE_SATURATION};
use policies::document::Severity;

/// The aggregation level of a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Finding,
    File,
    Connector,
    Workspace,
}

impl Level {
    pub const ALL: [Level; 4] = [
        Level::Finding,
        Level::File,
        Level::Connector,
        Level::Workspace,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Finding => "finding",
            Level::File => "file",
            Level::Connector => "connector",
            Level::Workspace => "workspace",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Level::ALL.into_iter().find(|l| l.as_str() == raw)
    }

    fn list_name(self) -> &'static str {
        match self {
            Level::Finding => "risk-findings",
            Level::File => "risk-files",
            Level::Connector => "risk-connectors",
            Level::Workspace => "risk-workspace",
        }
    }
}

/// One score.
#[derive(Debug, Clone, PartialEq)]
pub struct RiskScore {
    /// A finding id, `bucket/key` for a file, a connector id, or the tenant id.
    pub entity_id: String,
    pub entity_type: Level,
    /// The connector of a finding, file or connector.
    pub connector_id: Option<ConnectorId>,
    pub risk_score: i16,
    pub severity: Severity,
    pub factors: Factors,
    pub computed_at: OffsetDateTime,
}

/// What to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    pub level: Level,
    pub connector: Option<ConnectorId>,
    pub min_score: Option<i16>,
}

#[derive(Debug, thiserror::Error)]
pub enum RiskError {
    #[error("the cursor is not valid for this list")]
    BadCursor,
    #[error("database error")]
    Database(#[from] DieselError),
}

impl From<BadCursor> for RiskError {
    fn from(_: BadCursor) -> Self {
        RiskError::BadCursor
    }
}

#[derive(QueryableByName)]
struct FindingRow {
    #[diesel(sql_type = SqlUuid)]
    finding_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Float4)]
    sensitivity: f32,
    #[diesel(sql_type = Float4)]
    exposure: f32,
    #[diesel(sql_type = Bool)]
    covered: bool,
    #[diesel(sql_type = SmallInt)]
    risk_score: i16,
    #[diesel(sql_type = Timestamptz)]
    computed_at: OffsetDateTime,
}

#[derive(QueryableByName)]
struct FileRow {
    #[diesel(sql_type = SqlUuid)]
    object_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Float4)]
    sensitivity: f32,
    #[diesel(sql_type = Float4)]
    volume: f32,
    #[diesel(sql_type = Float4)]
    exposure: f32,
    #[diesel(sql_type = Float4)]
    coverage: f32,
    #[diesel(sql_type = SmallInt)]
    risk_score: i16,
    #[diesel(sql_type = Timestamptz)]
    computed_at: OffsetDateTime,
}

#[derive(QueryableByName)]
struct ConnectorRow {
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = BigInt)]
    findings_count: i64,
    #[diesel(sql_type = BigInt)]
    covered_count: i64,
    #[diesel(sql_type = Double)]
    exposure_weight: f64,
    #[diesel(sql_type = Timestamptz)]
    computed_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Float4>)]
    sensitivity: Option<f32>,
}

/// Sums over a set of objects, as a score.
fn aggregate(
    findings: i64,
    covered: i64,
    exposure_weight: f64,
    sensitivity: f64,
    saturation: u64,
) -> (i16, Factors) {
    if findings <= 0 {
        let factors = Factors {
            sensitivity: 0.0,
            volume: 0.0,
            exposure: 0.0,
            policy_coverage: 0.0,
        };
        return (0, factors);
    }
    let factors = Factors {
        sensitivity,
        volume: model::volume(findings as u64, saturation),
        exposure: (exposure_weight / findings as f64).clamp(0.0, 1.0),
        policy_coverage: (covered as f64 / findings as f64).clamp(0.0, 1.0),
    };
    (model::score(&factors), factors)
}

fn round(x: f32) -> f64 {
    (f64::from(x) * 1000.0).round() / 1000.0
}

async fn connector_rows(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    only: Option<&[ConnectorId]>,
) -> Result<Vec<ConnectorRow>, DieselError> {
    let ids: Vec<Uuid> = only
        .unwrap_or_default()
        .iter()
        .map(ConnectorId::as_uuid)
        .collect();
    db::sql(
        "SELECT c.connector_id, c.findings_count, c.covered_count, c.exposure_weight,
                c.computed_at,
                (SELECT o.sensitivity FROM governance_objects o
                  WHERE o.tenant_id = c.tenant_id AND o.connector_id = c.connector_id
                    AND o.findings_count > 0
                  ORDER BY o.sensitivity DESC LIMIT 1) AS sensitivity
           FROM governance_connector_risk c
          WHERE c.tenant_id = $1 AND ($2 OR c.connector_id = ANY($3))",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Bool, _>(only.is_none())
    .bind::<Array<SqlUuid>, _>(&ids)
    .load(conn)
    .await
}

fn connector_score(row: &ConnectorRow) -> RiskScore {
    let (risk_score, factors) = aggregate(
        row.findings_count,
        row.covered_count,
        row.exposure_weight,
        row.sensitivity.map_or(0.0, f64::from),
        CONNECTOR_SATURATION,
    );
    RiskScore {
        entity_id: row.connector_id.to_string(),
        entity_type: Level::Connector,
        connector_id: Some(ConnectorId::from_uuid(row.connector_id)),
        risk_score,
        severity: model::severity(risk_score),
        factors,
        computed_at: row.computed_at,
    }
}

/// The scores of these connectors; a connector whose objects never had findings scores 0.
pub async fn connectors(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    ids: &[ConnectorId],
) -> Result<HashMap<ConnectorId, RiskScore>, DieselError> {
    Ok(connector_rows(conn, tenant, Some(ids))
        .await?
        .iter()
        .map(|r| (ConnectorId::from_uuid(r.connector_id), connector_score(r)))
        .collect())
}

/// The tenant's workspace score: its connectors' sums together, the most sensitive file.
pub async fn workspace(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<RiskScore, DieselError> {
    let rows = connector_rows(conn, tenant, None).await?;
    let findings: i64 = rows.iter().map(|r| r.findings_count).sum();
    let covered: i64 = rows.iter().map(|r| r.covered_count).sum();
    let weight: f64 = rows.iter().map(|r| r.exposure_weight).sum();
    let sensitivity = rows
        .iter()
        .filter_map(|r| r.sensitivity)
        .map(f64::from)
        .fold(0.0, f64::max);
    let (risk_score, factors) =
        aggregate(findings, covered, weight, sensitivity, WORKSPACE_SATURATION);
    Ok(RiskScore {
        entity_id: tenant.as_str().to_owned(),
        entity_type: Level::Workspace,
        connector_id: None,
        risk_score,
        severity: model::severity(risk_score),
        factors,
        computed_at: rows
            .iter()
            .map(|r| r.computed_at)
            .max()
            .unwrap_or_else(OffsetDateTime::now_utc),
    })
}

/// One page of scores at one level, highest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    query: &Query,
    page: PageRequest<'_>,
) -> Result<Page<RiskScore>, RiskError> {
    let keyset = Keyset::new(page, tenant, query.level.list_name(), Order::Descending)?;
    // The cursor is (score, id) of the last row shown; a first page starts above 100.
    let (after_score, after_id) = match keyset.position() {
        Some(p) => (
            i16::try_from(p.micros).map_err(|_| RiskError::BadCursor)?,
            p.id,
        ),
        None => (i16::MAX, Uuid::max()),
    };
    let min = query.min_score.unwrap_or(0);
    let connector = query.connector.map(|c| c.as_uuid());
    let rows: Vec<(Uuid, RiskScore)> = match query.level {
        Level::Finding => {
            // Planned on every call (not `db::sql`): the optional filter must be planned with its
            // value, or a generic plan ignores the index it needs (docs/decisions.md, "Static SQL is
            // prepared once per connection").
            let rows: Vec<FindingRow> = diesel::sql_query(
                "SELECT finding_id, connector_id, sensitivity, exposure, covered, risk_score,
                        computed_at
                   FROM governance_finding_risk
                  WHERE tenant_id = $1 AND ($2::uuid IS NULL OR connector_id = $2)
                    AND risk_score >= $3 AND (risk_score, finding_id) < ($4, $5)
                  ORDER BY risk_score DESC, finding_id DESC
                  LIMIT $6",
            )
            .bind::<Text, _>(tenant.as_str())
            .bind::<Nullable<SqlUuid>, _>(connector)
            .bind::<SmallInt, _>(min)
            .bind::<SmallInt, _>(after_score)
            .bind::<SqlUuid, _>(after_id)
            .bind::<BigInt, _>(keyset.fetch())
            .load(conn)
            .await?;
            rows.into_iter()
                .map(|r| {
                    let factors = Factors {
                        sensitivity: round(r.sensitivity),
                        volume: round(model::volume(1, FILE_SATURATION) as f32),
                        exposure: round(r.exposure),
                        policy_coverage: if r.covered { 1.0 } else { 0.0 },
                    };
                    (
                        r.finding_id,
                        RiskScore {
                            entity_id: r.finding_id.to_string(),
                            entity_type: Level::Finding,
                            connector_id: Some(ConnectorId::from_uuid(r.connector_id)),
                            risk_score: r.risk_score,
                            severity: model::severity(r.risk_score),
                            factors,
                            computed_at: r.computed_at,
                        },
                    )
                })
                .collect()
        }
        Level::File => {
            // Planned on every call (not `db::sql`): the optional filter must be planned with its
            // value, or a generic plan ignores the index it needs (docs/decisions.md, "Static SQL is
            // prepared once per connection").
            let rows: Vec<FileRow> = diesel::sql_query(
                "SELECT object_id, connector_id, bucket, object_key, sensitivity, volume,
                        exposure, coverage, risk_score, computed_at
                   FROM governance_objects
                  WHERE tenant_id = $1 AND findings_count > 0
                    AND ($2::uuid IS NULL OR connector_id = $2)
                    AND risk_score >= $3 AND (risk_score, object_id) < ($4, $5)
                  ORDER BY risk_score DESC, object_id DESC
                  LIMIT $6",
            )
            .bind::<Text, _>(tenant.as_str())
            .bind::<Nullable<SqlUuid>, _>(connector)
            .bind::<SmallInt, _>(min)
            .bind::<SmallInt, _>(after_score)
            .bind::<SqlUuid, _>(after_id)
            .bind::<BigInt, _>(keyset.fetch())
            .load(conn)
            .await?;
            rows.into_iter()
                .map(|r| {
                    let factors = Factors {
                        sensitivity: round(r.sensitivity),
                        volume: round(r.volume),
                        exposure: round(r.exposure),
                        policy_coverage: round(r.coverage),
                    };
                    (
                        r.object_id,
                        RiskScore {
                            entity_id: format!("{}/{}", r.bucket, r.object_key),
                            entity_type: Level::File,
                            connector_id: Some(ConnectorId::from_uuid(r.connector_id)),
                            risk_score: r.risk_score,
                            severity: model::severity(r.risk_score),
                            factors,
                            computed_at: r.computed_at,
                        },
                    )
                })
                .collect()
        }
        Level::Connector => {
            let only = query.connector.map(|c| vec![c]);
            let mut scores: Vec<(Uuid, RiskScore)> = connector_rows(conn, tenant, only.as_deref())
                .await?
                .iter()
                .map(|r| (r.connector_id, connector_score(r)))
                .filter(|(id, s)| {
                    s.risk_score >= min && (s.risk_score, *id) < (after_score, after_id)
                })
                .collect();
            scores.sort_by_key(|(id, s)| std::cmp::Reverse((s.risk_score, *id)));
            scores.truncate(keyset.fetch() as usize);
            scores
        }
        Level::Workspace => {
            let score = workspace(conn, tenant).await?;
            let id = Uuid::nil();
            if score.risk_score >= min
                && query.connector.is_none()
                && (score.risk_score, id) < (after_score, after_id)
            {
                vec![(id, score)]
            } else {
                Vec::new()
            }
        }
    };
    Ok(keyset
        .page(rows, |(id, s)| Position {
            micros: i64::from(s.risk_score),
            id: *id,
        })
        .map(|(_, s)| s))
}

/// Forgets a deleted connector's risk: its objects, findings and sums, and its buckets'
/// posture with any check still queued.
pub async fn forget_connector(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<(), DieselError> {
    for table in [
        "governance_category_counts",
        "governance_finding_risk",
        "governance_objects",
        "governance_connector_risk",
        "governance_buckets",
        "governance_posture_checks",
    ] {
        diesel::sql_query(format!(
            "DELETE FROM {table} WHERE tenant_id = $1 AND connector_id = $2"
        ))
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .execute(conn)
        .await?;
    }
    Ok(())
}

/// Open findings by category, from the counts each batch moves.
pub async fn findings_by_category(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<std::collections::BTreeMap<String, i64>, DieselError> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = Text)]
        category: String,
        #[diesel(sql_type = BigInt)]
        findings: i64,
    }
    let rows: Vec<Count> = db::sql(
        "SELECT category, sum(findings)::bigint AS findings FROM governance_category_counts
          WHERE tenant_id = $1 GROUP BY category HAVING sum(findings) > 0 ORDER BY category",
    )
    .bind::<Text, _>(tenant.as_str())
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|c| (c.category, c.findings)).collect())
}

//! What a security team looks at first (the console's overview and data map): the buckets
//! that are both sensitive and exposed, open findings and drift by severity, remediations
//! waiting, failed or still undoable, coverage gaps, and a 30-day trend. Counts come from the
//! tables kept as scans record and governance evaluates (`governance_category_counts`,
//! `governance_severity_counts`, `governance_bucket_scores`, `governance_drift_counts`,
//! `remediation_status_counts`, `governance_buckets`) and are read, never written, here: no
//! read walks the findings, the objects or the drift events.

use std::collections::BTreeMap;

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{BigInt, Bool, Date, Nullable, SmallInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

/// A bucket and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    pub connector_id: ConnectorId,
    pub connector_name: String,
    pub provider: String,
    pub bucket: String,
    /// Whether anyone can read it: `None` when its check could not say.
    pub public: Option<bool>,
    /// Its default encryption (`none` when it has none), `None` when unknown.
    pub encryption: Option<String>,
    /// Whether the platform could read its posture at all.
    pub accessible: bool,
    /// Open findings in its objects.
    pub findings: i64,
    /// Its riskiest object's score, 0 to 100.
    pub risk_score: i16,
}

impl Bucket {
    /// Public, or without default encryption.
    pub fn exposed(&self) -> bool {
        self.public == Some(true) || self.encryption.as_deref() == Some("none")
    }
}

/// One day of the trend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Day {
    pub date: time::Date,
    /// Findings recorded that day.
    pub findings: i64,
    /// Drift events that occurred that day.
    pub drift: i64,
}

/// The overview's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// Buckets that are exposed and hold open findings, riskiest first.
    pub sensitive_and_exposed: Vec<Bucket>,
    /// Open findings by the severity of their risk score (`critical` … `low`), counted as
    /// the governance summary counts them by category: each value found.
    pub findings_by_severity: BTreeMap<String, i64>,
    /// Open findings by category.
    pub findings_by_category: BTreeMap<String, i64>,
    /// Open drift events by severity.
    pub drift_by_severity: BTreeMap<String, i64>,
    /// Remediation requests by state (`planned`, `failed`, …).
    pub remediations_by_state: BTreeMap<String, i64>,
    /// Remediations whose undo window is still open.
    pub undoable: i64,
    /// Connectors whose status is `error`, with their message.
    pub connectors_in_error: Vec<(ConnectorId, String, Option<String>)>,
    /// The last 30 days, oldest first.
    pub trend: Vec<Day>,
}

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn counted(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    query: &'static str,
) -> Result<BTreeMap<String, i64>, DieselError> {
    let rows: Vec<Counted> = db::sql(query)
        .bind::<Text, _>(tenant.as_str())
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| (r.key, r.n)).collect())
}

#[derive(QueryableByName)]
struct BucketRow {
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    connector_name: String,
    #[diesel(sql_type = Text)]
    provider: String,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Nullable<Bool>)]
    public: Option<bool>,
    #[diesel(sql_type = Nullable<Text>)]
    encryption: Option<String>,
    #[diesel(sql_type = Bool)]
    accessible: bool,
    #[diesel(sql_type = BigInt)]
    findings: i64,
    #[diesel(sql_type = SmallInt)]
    risk_score: i16,
}

impl From<BucketRow> for Bucket {
    fn from(r: BucketRow) -> Self {
        Self {
            connector_id: ConnectorId::from_uuid(r.connector_id),
            connector_name: r.connector_name,
            provider: r.provider,
            bucket: r.bucket,
            public: r.public,
            encryption: r.encryption,
            accessible: r.accessible,
            findings: r.findings,
            risk_score: r.risk_score,
        }
    }
}

/// Every bucket of the tenant's connectors whose posture was checked, with its open
/// findings and riskiest object, riskiest first; `connector` narrows it to one connector.
pub async fn buckets(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: Option<ConnectorId>,
) -> Result<Vec<Bucket>, DieselError> {
    let rows: Vec<BucketRow> = db::sql(
        "SELECT b.connector_id, c.name AS connector_name, c.provider, b.bucket, b.public,
                b.encryption, b.accessible,
                coalesce(o.findings, 0)::bigint AS findings,
                coalesce(o.risk_score, 0)::smallint AS risk_score
           FROM governance_buckets b
           JOIN connectors c ON c.tenant_id = b.tenant_id AND c.connector_id = b.connector_id
           LEFT JOIN LATERAL (
                SELECT sum(s.findings) AS findings, max(s.risk_score) AS risk_score
                  FROM (SELECT g.risk_score, sum(g.findings) AS findings
                          FROM governance_bucket_scores g
                         WHERE g.tenant_id = b.tenant_id AND g.connector_id = b.connector_id
                           AND g.bucket = b.bucket
                         GROUP BY g.risk_score
                        HAVING sum(g.objects) > 0) s) o ON true
          WHERE b.tenant_id = $1 AND ($2::uuid IS NULL OR b.connector_id = $2)
          ORDER BY risk_score DESC, findings DESC, c.name, b.bucket",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Nullable<SqlUuid>, _>(connector.map(|c| c.as_uuid()))
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(Bucket::from).collect())
}

#[derive(QueryableByName)]
struct ErrorRow {
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Nullable<Text>)]
    status_message: Option<String>,
}

#[derive(QueryableByName)]
struct DayRow {
    #[diesel(sql_type = Date)]
    day: time::Date,
    #[diesel(sql_type = BigInt)]
    findings: i64,
    #[diesel(sql_type = BigInt)]
    drift: i64,
}

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The overview of the tenant's data, as of now.
pub async fn overview(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<Overview, DieselError> {
    let sensitive_and_exposed = buckets(conn, tenant, None)
        .await?
        .into_iter()
        .filter(|b| b.exposed() && b.findings > 0)
        .take(20)
        .collect();
    let findings_by_severity = counted(
        conn,
        tenant,
        "SELECT severity AS key, sum(findings)::bigint AS n FROM governance_severity_counts
          WHERE tenant_id = $1 GROUP BY severity HAVING sum(findings) <> 0",
    )
    .await?;
    let findings_by_category = counted(
        conn,
        tenant,
        "SELECT category AS key, sum(findings)::bigint AS n FROM governance_category_counts
          WHERE tenant_id = $1 GROUP BY category HAVING sum(findings) > 0",
    )
    .await?;
    let drift_by_severity = posture::drift::open_by_severity(conn, tenant)
        .await?
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(severity, n)| (severity.as_str().to_owned(), n))
        .collect();
    let remediations_by_state = counted(
        conn,
        tenant,
        "SELECT status AS key, sum(requests)::bigint AS n FROM remediation_status_counts
          WHERE tenant_id = $1 GROUP BY status HAVING sum(requests) > 0",
    )
    .await?;
    let undoable: One = db::sql(
        "SELECT count(*)::bigint AS n FROM remediation_runs
          WHERE tenant_id = $1 AND undone_at IS NULL AND undo_until > now()",
    )
    .bind::<Text, _>(tenant.as_str())
    .get_result(conn)
    .await?;
    let errors: Vec<ErrorRow> = db::sql(
        "SELECT connector_id, name, status_message FROM connectors
          WHERE tenant_id = $1 AND status = 'error' ORDER BY name",
    )
    .bind::<Text, _>(tenant.as_str())
    .load(conn)
    .await?;
    // Findings per day as the scans recorded them: each chunk's count, on the UTC day it
    // ended, rather than a count over every finding of the month; drift events per UTC day
    // from their kept counts.
    let days: Vec<DayRow> = db::sql(
        "WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS day),
              days AS (
              SELECT d::date AS day
                FROM today, generate_series(today.day - 29, today.day, interval '1 day') d),
              chunks AS (
              SELECT (completed_at AT TIME ZONE 'UTC')::date AS day,
                     sum(findings_count)::bigint AS findings
                FROM scan_chunks, today
               WHERE tenant_id = $1
                 AND completed_at >= (today.day - 29)::timestamp AT TIME ZONE 'UTC'
               GROUP BY 1),
              drift AS (
              SELECT c.day, sum(c.events)::bigint AS drift
                FROM governance_drift_counts c, today
               WHERE c.tenant_id = $1 AND c.day >= today.day - 29
               GROUP BY 1)
         SELECT days.day, coalesce(chunks.findings, 0)::bigint AS findings,
                coalesce(drift.drift, 0)::bigint AS drift
           FROM days LEFT JOIN chunks USING (day) LEFT JOIN drift USING (day)
          ORDER BY days.day",
    )
    .bind::<Text, _>(tenant.as_str())
    .load(conn)
    .await?;
    Ok(Overview {
        sensitive_and_exposed,
        findings_by_severity,
        findings_by_category,
        drift_by_severity,
        remediations_by_state,
        undoable: undoable.n,
        connectors_in_error: errors
            .into_iter()
            .map(|e| {
                (
                    ConnectorId::from_uuid(e.connector_id),
                    e.name,
                    e.status_message,
                )
            })
            .collect(),
        trend: days
            .into_iter()
            .map(|d| Day {
                date: d.day,
                findings: d.findings,
                drift: d.drift,
            })
            .collect(),
    })
}

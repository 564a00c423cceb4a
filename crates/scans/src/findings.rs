//! Reading findings for those who act on them (governance). A finding is one PII type in one
//! field of one object version ([`crate::group`]) and holds no value: a type, a category, how
//! many values, the highest confidence, sample locations, a masked preview.

use diesel::QueryableByName;
use diesel::sql_types::{Array, Float4, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use ids::{ConnectorId, FindingId, ScanId, TenantId};

use crate::error::ScanError;

/// An open finding, with the ETag its object had when it was scanned.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub struct OpenFinding {
    #[diesel(sql_type = SqlUuid)]
    pub finding_id: Uuid,
    #[diesel(sql_type = Text)]
    pub bucket: String,
    #[diesel(sql_type = Text)]
    pub object_key: String,
    /// Empty when the provider gave none.
    #[diesel(sql_type = Text)]
    pub etag: String,
    #[diesel(sql_type = Text)]
    pub pii_type: String,
    #[diesel(sql_type = Text)]
    pub category: String,
    #[diesel(sql_type = Float4)]
    pub confidence: f32,
    /// How many values.
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub occurrences: i32,
    /// The value is a token the platform wrote into this object: remediated, never acted on
    /// again.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub tokenized: bool,
}

impl OpenFinding {
    pub fn id(&self) -> FindingId {
        FindingId::from_uuid(self.finding_id)
    }
}

/// The open findings `scan` stored for the given objects of one connector (a recorded batch).
/// Findings a later scan has already replaced are not open and not returned.
pub async fn open_in_batch(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
    connector: ConnectorId,
    objects: &[(String, String)],
) -> Result<Vec<OpenFinding>, ScanError> {
    Ok(open_findings(conn, tenant, connector, Some(scan), objects).await?)
}

/// The open findings of `objects` of one connector, of one scan or of any, with the ETag each
/// object had when last scanned.
async fn open_findings(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    scan: Option<ScanId>,
    objects: &[(String, String)],
) -> Result<Vec<OpenFinding>, diesel::result::Error> {
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    let buckets: Vec<&str> = objects.iter().map(|(b, _)| b.as_str()).collect();
    let keys: Vec<&str> = objects.iter().map(|(_, k)| k.as_str()).collect();
    db::sql(
        // One index probe per object, whatever the statistics say (docs/decisions.md, "Batches
        // of keys are looked up one key at a time").
        "SELECT f.finding_id, b.bucket, b.object_key, coalesce(o.etag, '') AS etag,
                f.pii_type, f.category, f.confidence, f.occurrences, f.tokenized
           FROM unnest($4::text[], $5::text[]) AS b(bucket, object_key)
           LEFT JOIN LATERAL (
                SELECT o.etag FROM scanned_objects o
                 WHERE o.tenant_id = $1 AND o.connector_id = $2 AND o.bucket = b.bucket
                   AND o.object_key = b.object_key
                OFFSET 0) o ON true
           CROSS JOIN LATERAL (
                SELECT f.finding_id, f.pii_type, f.category, f.confidence, f.occurrences, f.tokenized
                  FROM findings f
                 WHERE f.tenant_id = $1 AND f.connector_id = $2 AND f.bucket = b.bucket
                   AND f.object_key = b.object_key AND f.status = 'open'
                   AND ($3::uuid IS NULL OR f.scan_id = $3)
                OFFSET 0) f
          ORDER BY b.bucket, b.object_key, f.finding_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Nullable<SqlUuid>, _>(scan.map(|s| s.as_uuid()))
    .bind::<Array<Text>, _>(&buckets)
    .bind::<Array<Text>, _>(&keys)
    .load(conn)
    .await
}

/// What remediation needs to find some findings' values again: each finding's scan (whose
/// classifiers detected it), type, category and field. Findings of other tenants are not
/// returned.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct Sought {
    #[diesel(sql_type = SqlUuid)]
    pub finding_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub scan_id: Uuid,
    #[diesel(sql_type = Text)]
    pub pii_type: String,
    #[diesel(sql_type = Text)]
    pub category: String,
    #[diesel(sql_type = Text)]
    pub field: String,
}

/// Resolves the open findings of some objects of one connector (`buckets[i]`, `keys[i]`),
/// except those that scan `except` recorded. One index probe per object, and one per finding
/// to update it, in any plan (docs/decisions.md, "Batches of keys are looked up one key at a
/// time"): matched to an array of ids instead, the update was planned, before Postgres had
/// statistics, as a walk of every open finding of the tenant through the open findings'
/// partial index. That is also why the update re-checks `status <> 'resolved'` (the same, by
/// the table's check) rather than `status = 'open'`: the latter lets the planner take the
/// partial index, whose row count it guesses at one without statistics, over the primary key.
pub(crate) async fn resolve_open(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    buckets: &[&str],
    keys: &[&str],
    except: Option<ScanId>,
) -> Result<(), ScanError> {
    if keys.is_empty() {
        return Ok(());
    }
    db::sql(
        "UPDATE findings f SET status = 'resolved', resolved_at = now()
           FROM (SELECT x.finding_id
                   FROM unnest($4::text[], $5::text[]) AS o(bucket, object_key)
                  CROSS JOIN LATERAL (
                        SELECT x.finding_id FROM findings x
                         WHERE x.tenant_id = $1 AND x.connector_id = $2 AND x.bucket = o.bucket
                           AND x.object_key = o.object_key AND x.status = 'open'
                           AND x.scan_id IS DISTINCT FROM $3
                        OFFSET 0) x) g
          WHERE f.tenant_id = $1 AND f.finding_id = g.finding_id AND f.status <> 'resolved'",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Nullable<SqlUuid>, _>(except.map(|s| s.as_uuid()))
    .bind::<Array<Text>, _>(buckets)
    .bind::<Array<Text>, _>(keys)
    .execute(conn)
    .await?;
    Ok(())
}

/// Objects of one bucket that are gone from the storage: their open findings are resolved
/// and what the last scans saw of them is forgotten.
pub async fn forget_objects(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    bucket: &str,
    keys: &[&String],
) -> Result<(), ScanError> {
    let buckets = vec![bucket; keys.len()];
    let keys: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    resolve_open(conn, tenant, connector, &buckets, &keys, None).await?;
    db::sql(
        "DELETE FROM scanned_objects
          WHERE tenant_id = $1 AND connector_id = $2 AND bucket = $3 AND object_key = ANY($4)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Text, _>(bucket)
    .bind::<Array<Text>, _>(&keys)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn sought(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    ids: &[Uuid],
) -> Result<Vec<Sought>, ScanError> {
    // One index probe per id (docs/decisions.md, "Batches of keys are looked up one key at a
    // time"): planned generically as `finding_id = ANY($2)`, a table without statistics was
    // read whole for the tenant on every call.
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    Ok(db::sql(
        "SELECT f.* FROM unnest($2::uuid[]) AS k(finding_id)
          CROSS JOIN LATERAL (
                SELECT finding_id, scan_id, pii_type, category, field FROM findings
                 WHERE tenant_id = $1 AND finding_id = k.finding_id
                OFFSET 0) f
          ORDER BY f.finding_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&ids)
    .load(conn)
    .await?)
}

/// The open findings of the next `objects` objects of one connector with open findings, in
/// (bucket, key) order after `after`: a reconciliation walks every open finding this way.
pub async fn open_after(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    after: Option<(&str, &str)>,
    objects: i64,
) -> Result<Vec<OpenFinding>, diesel::result::Error> {
    let (bucket, key) = after.unwrap_or(("", ""));
    db::sql(
        "WITH o AS (
             SELECT DISTINCT bucket, object_key
               FROM findings
              WHERE tenant_id = $1 AND connector_id = $2 AND status = 'open'
                AND (bucket, object_key) > ($3, $4)
              ORDER BY bucket, object_key
              LIMIT $5)
         SELECT f.finding_id, f.bucket, f.object_key, coalesce(s.etag, '') AS etag,
                f.pii_type, f.category, f.confidence, f.occurrences, f.tokenized
           FROM o
           JOIN findings f
             ON f.tenant_id = $1 AND f.connector_id = $2 AND f.bucket = o.bucket
            AND f.object_key = o.object_key AND f.status = 'open'
           LEFT JOIN scanned_objects s
             ON s.tenant_id = $1 AND s.connector_id = $2 AND s.bucket = f.bucket
            AND s.object_key = f.object_key
          ORDER BY f.bucket, f.object_key, f.finding_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Text, _>(bucket)
    .bind::<Text, _>(key)
    .bind::<diesel::sql_types::BigInt, _>(objects)
    .load(conn)
    .await
}

/// A finding as the findings list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFinding {
    pub row: FindingRow,
    /// How many values.
    pub occurrences: i32,
}

impl std::ops::Deref for StoredFinding {
    type Target = FindingRow;

    fn deref(&self) -> &FindingRow {
        &self.row
    }
}

/// A stored finding's columns as diesel's table has them (all but `occurrences`).
#[derive(Debug, Clone, PartialEq, diesel::Queryable, diesel::Selectable)]
#[diesel(table_name = db::schema::findings, check_for_backend(diesel::pg::Pg))]
pub struct FindingRow {
    pub finding_id: Uuid,
    pub scan_id: Uuid,
    pub connector_id: Uuid,
    pub bucket: String,
    pub object_key: String,
    pub pii_type: String,
    pub category: String,
    /// The highest of its values'.
    pub confidence: f32,
    /// Where its first values are, at most [`crate::group::SAMPLES`]: each a line and column,
    /// a CSV row and column, or a JSON path.
    pub locations: serde_json::Value,
    /// Its first value masked (`***-**-6789`): never a value.
    pub preview: String,
    /// open or resolved.
    pub status: String,
    pub created_at: time::OffsetDateTime,
    pub resolved_at: Option<time::OffsetDateTime>,
    /// The values are tokens the platform wrote into this object (see [`crate::tokens`]).
    pub tokenized: bool,
    /// Where its values sit: a CSV header, a JSON path with indices folded, or empty for text.
    pub field: String,
}

/// `findings.occurrences`, which diesel's table leaves out.
fn occurrences() -> diesel::expression::SqlLiteral<diesel::sql_types::Integer> {
    diesel::dsl::sql("findings.occurrences")
}

/// Filters of the findings list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub connector: Option<ConnectorId>,
    pub scan: Option<ScanId>,
    pub pii_type: Option<String>,
    pub category: Option<String>,
    /// open or resolved.
    pub status: Option<String>,
    pub min_confidence: Option<f32>,
    /// Findings in objects whose `bucket/key` starts with this.
    pub resource_prefix: Option<String>,
    /// Findings whose first sample location is of this kind.
    pub location_kind: Option<LocationKind>,
}

/// The kinds of location a finding's samples have, by their shape (`group::location`): every
/// sample of a finding is one field's, so the first says for all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationKind {
    /// `{line, column}`: plain text.
    Text,
    /// `{row, column, header}`.
    Csv,
    /// `{line, path}`.
    Json,
    /// `{column, row}`: a Parquet column.
    Table,
    /// `{field, record}`: an Avro field.
    Record,
    /// `{sheet, cell, header}`: a spreadsheet's cell.
    Sheet,
    /// `{part, paragraph}`, `{slide, paragraph}` or `{page, line}`: a document's or a slide's
    /// paragraph, or a line of a PDF's page.
    Document,
    /// Any of them, with `archive`: in a member of an archive.
    Archive,
}

impl LocationKind {
    pub fn parse(kind: &str) -> Option<Self> {
        Some(match kind {
            "text" => LocationKind::Text,
            "csv" => LocationKind::Csv,
            "json" => LocationKind::Json,
            "table" => LocationKind::Table,
            "record" => LocationKind::Record,
            "sheet" => LocationKind::Sheet,
            "document" => LocationKind::Document,
            "archive" => LocationKind::Archive,
            _ => return None,
        })
    }

    /// The condition on `findings.locations` that selects this kind: the keys of the first
    /// sample, which only this kind's shape has together.
    fn condition(self) -> &'static str {
        match self {
            LocationKind::Text => {
                "jsonb_exists(findings.locations->0, 'line') \
                 AND jsonb_exists(findings.locations->0, 'column')"
            }
            LocationKind::Csv => {
                "jsonb_exists(findings.locations->0, 'header') \
                 AND jsonb_exists(findings.locations->0, 'row')"
            }
            LocationKind::Json => "jsonb_exists(findings.locations->0, 'path')",
            LocationKind::Table => {
                "jsonb_exists(findings.locations->0, 'row') \
                 AND NOT jsonb_exists(findings.locations->0, 'header')"
            }
            LocationKind::Record => "jsonb_exists(findings.locations->0, 'record')",
            LocationKind::Sheet => "jsonb_exists(findings.locations->0, 'sheet')",
            LocationKind::Document => {
                "(jsonb_exists(findings.locations->0, 'paragraph') \
                 OR jsonb_exists(findings.locations->0, 'page'))"
            }
            LocationKind::Archive => "jsonb_exists(findings.locations->0, 'archive')",
        }
    }
}

/// The cursor list name.
const LIST: &str = "findings";

/// Escapes `%`, `_` and `\` for a LIKE pattern.
fn like_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// One page of the tenant's findings, in the order their batches were written.
///
/// Finding ids are minted by scan workers before their batch commits, on their own clocks, so
/// id order is not commit order: a batch that commits late can hold ids below a cursor already
/// handed out, and a client resuming from that cursor would never see it. The list pages by
/// `(txid, finding_id)` instead, the writing transaction first, and never hands out a cursor
/// past the watermark `pg_snapshot_xmin`: every transaction that could still commit a finding
/// has a txid at or above it, so nothing can appear behind such a cursor. Rows above the
/// watermark are shown on a last page (no cursor follows it); when more rows follow, the page
/// ends at the watermark, and may then be empty with a cursor to come back with.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &Filter,
    page: paging::PageRequest<'_>,
) -> Result<paging::Page<StoredFinding>, ScanError> {
    use db::schema::findings::dsl as f;
    use diesel::TextExpressionMethods as _;
    use diesel::dsl::sql;
    use diesel::expression_methods::EscapeExpressionMethods as _;
    use diesel::sql_types::{BigInt, Bool, Text, Uuid as SqlUuid};
    use diesel::{ExpressionMethods as _, QueryDsl as _, SelectableHelper as _};
    let keyset = paging::Keyset::new(page, tenant, LIST, paging::Order::Ascending)
        .map_err(|_| ScanError::BadCursor)?;
    // A connector or scan that is no id (the nil id stands for it) matches nothing: answered
    // at once, after the cursor is checked, not by reading every finding of the tenant.
    if filter.connector.is_some_and(|c| c.as_uuid().is_nil())
        || filter.scan.is_some_and(|s| s.as_uuid().is_nil())
    {
        let none: Vec<StoredFinding> = Vec::new();
        return Ok(keyset.page(none, |r| paging::Position {
            micros: 0,
            id: r.finding_id,
        }));
    }
    let mut query = f::findings
        .filter(f::tenant_id.eq(tenant.as_str()))
        .select((
            FindingRow::as_select(),
            occurrences(),
            sql::<BigInt>("findings.txid::text::bigint"),
            sql::<BigInt>("pg_snapshot_xmin(pg_current_snapshot())::text::bigint"),
        ))
        .order((sql::<BigInt>("findings.txid"), f::finding_id))
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(connector) = filter.connector {
        query = query.filter(f::connector_id.eq(connector.as_uuid()));
    }
    if let Some(scan) = filter.scan {
        query = query.filter(f::scan_id.eq(scan.as_uuid()));
    }
    if let Some(pii_type) = &filter.pii_type {
        query = query.filter(f::pii_type.eq(pii_type.clone()));
    }
    if let Some(category) = &filter.category {
        query = query.filter(f::category.eq(category.clone()));
    }
    if let Some(status) = &filter.status {
        query = query.filter(f::status.eq(status.clone()));
    }
    if let Some(min) = filter.min_confidence {
        query = query.filter(f::confidence.ge(min));
    }
    if let Some(prefix) = &filter.resource_prefix {
        // `bucket/key` starts with the prefix: the bucket part must match whole when the
        // prefix goes past it.
        match prefix.split_once('/') {
            Some((bucket, key)) => {
                query = query
                    .filter(f::bucket.eq(bucket.to_owned()))
                    .filter(f::object_key.like(like_prefix(key)).escape('\\'));
            }
            None => query = query.filter(f::bucket.like(like_prefix(prefix)).escape('\\')),
        }
    }
    if let Some(kind) = filter.location_kind {
        query = query.filter(sql::<Bool>(kind.condition()));
    }
    // The cursor holds the last row's (txid, finding_id). One issued before findings carried a
    // txid holds 0 and an id: the rows written then have txid 0, so it resumes among them.
    if let Some(after) = keyset.position() {
        query = query.filter(
            sql::<Bool>("(findings.txid, findings.finding_id) > (")
                .bind::<Text, _>(after.micros.to_string())
                .sql("::xid8, ")
                .bind::<SqlUuid, _>(after.id)
                .sql(")"),
        );
    }
    let rows: Vec<(FindingRow, i32, i64, i64)> = query.load(conn).await?;
    // Rows are in txid order, so those below the watermark come first.
    let settled = rows
        .iter()
        .take_while(|(_, _, txid, watermark)| txid < watermark)
        .count();
    Ok(keyset
        .page_settled(rows, settled, |(r, _, txid, _)| paging::Position {
            micros: *txid,
            id: r.finding_id,
        })
        .map(|(row, occurrences, _, _)| StoredFinding { row, occurrences }))
}

/// How many values open findings (not tokenized) of one (pii type, category) hold.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct TypeCount {
    #[diesel(sql_type = Text)]
    pub pii_type: String,
    #[diesel(sql_type = Text)]
    pub category: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub n: i64,
}

/// The (pii type, category) pairs present in the tenant's open, untokenized findings of
/// `connectors` (empty: every connector), with their values' counts.
pub async fn type_counts(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connectors: &[Uuid],
) -> Result<Vec<TypeCount>, diesel::result::Error> {
    // Planned on every call (not `db::sql`): the optional filter must be planned with its
    // value, or a generic plan ignores the index it needs (docs/decisions.md, "Static SQL is
    // prepared once per connection").
    diesel::sql_query(
        "SELECT pii_type, category, sum(occurrences)::bigint AS n
           FROM findings
          WHERE tenant_id = $1 AND status = 'open' AND NOT tokenized
            AND (cardinality($2::uuid[]) = 0 OR connector_id = ANY($2))
          GROUP BY pii_type, category",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(connectors)
    .load(conn)
    .await
}

/// One finding of the tenant.
pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: FindingId,
) -> Result<StoredFinding, ScanError> {
    use db::schema::findings::dsl as f;
    use diesel::SelectableHelper as _;
    use diesel::{ExpressionMethods as _, OptionalExtension as _, QueryDsl as _};
    f::findings
        .filter(f::tenant_id.eq(tenant.as_str()))
        .filter(f::finding_id.eq(id.as_uuid()))
        .select((FindingRow::as_select(), occurrences()))
        .first(conn)
        .await
        .optional()?
        .map(|(row, occurrences)| StoredFinding { row, occurrences })
        .ok_or(ScanError::FindingNotFound)
}

#[derive(QueryableByName)]
struct EtagRow {
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Text)]
    etag: String,
}

/// The ETag each object had when last scanned (empty when the provider gave none), for the
/// objects of these findings.
pub async fn etags(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    findings: &[StoredFinding],
) -> Result<std::collections::HashMap<(Uuid, String, String), String>, ScanError> {
    if findings.is_empty() {
        return Ok(Default::default());
    }
    let connectors: Vec<Uuid> = findings.iter().map(|f| f.connector_id).collect();
    let buckets: Vec<&str> = findings.iter().map(|f| f.bucket.as_str()).collect();
    let keys: Vec<&str> = findings.iter().map(|f| f.object_key.as_str()).collect();
    let rows: Vec<EtagRow> = db::sql(
        "SELECT o.connector_id, o.bucket, o.object_key, coalesce(o.etag, '') AS etag
           FROM (SELECT DISTINCT * FROM unnest($2::uuid[], $3::text[], $4::text[]))
                AS b(connector_id, bucket, object_key)
           CROSS JOIN LATERAL (
                SELECT o.connector_id, o.bucket, o.object_key, o.etag FROM scanned_objects o
                 WHERE o.tenant_id = $1 AND o.connector_id = b.connector_id
                   AND o.bucket = b.bucket AND o.object_key = b.object_key
                OFFSET 0) o",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&connectors)
    .bind::<Array<Text>, _>(&buckets)
    .bind::<Array<Text>, _>(&keys)
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| ((r.connector_id, r.bucket, r.object_key), r.etag))
        .collect())
}

/// What a remediation did to the values of some findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remediated {
    /// Each value became a token of the tenant's vault.
    Tokenized,
    /// The values are gone from the object (masked, or the object quarantined).
    Resolved,
    /// An undo put the values back.
    Restored,
}

/// Records what a remediation did to `ids` (findings of one object), so that the findings list
/// and risk follow at once rather than at the next scan. Returns how many findings changed.
///
/// An undo (`Restored`) puts values back: the object's open findings are no longer tokens, and
/// the request's findings that the remediation resolved are open again, unless a later scan of
/// the object has recorded newer findings since (those then describe the object).
pub async fn remediated(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    object: (ConnectorId, &str, &str),
    ids: &[Uuid],
    change: Remediated,
) -> Result<usize, diesel::result::Error> {
    let (connector, bucket, key) = object;
    let run = |sql: &'static str| {
        db::sql(sql)
            .bind::<Text, _>(tenant.as_str())
            .bind::<Array<SqlUuid>, _>(ids)
            .bind::<SqlUuid, _>(connector.as_uuid())
            .bind::<Text, _>(bucket)
            .bind::<Text, _>(key)
    };
    Ok(match change {
        Remediated::Tokenized => {
            run("UPDATE findings SET tokenized = true
                  WHERE tenant_id = $1 AND finding_id = ANY($2) AND status = 'open'
                    AND connector_id = $3 AND bucket = $4 AND object_key = $5")
            .execute(conn)
            .await?
        }
        Remediated::Resolved => {
            run(
                "UPDATE findings SET status = 'resolved', resolved_at = now()
                  WHERE tenant_id = $1 AND finding_id = ANY($2) AND status = 'open'
                    AND connector_id = $3 AND bucket = $4 AND object_key = $5",
            )
            .execute(conn)
            .await?
        }
        Remediated::Restored => {
            run("WITH detokenized AS (
                     UPDATE findings SET tokenized = false
                      WHERE tenant_id = $1 AND connector_id = $3 AND bucket = $4
                        AND object_key = $5 AND status = 'open' AND tokenized
                     RETURNING finding_id)
                 UPDATE findings f SET status = 'open', resolved_at = NULL
                  WHERE f.tenant_id = $1 AND f.finding_id = ANY($2) AND f.status = 'resolved'
                    AND f.connector_id = $3 AND f.bucket = $4 AND f.object_key = $5
                    AND NOT EXISTS (
                        SELECT 1 FROM findings g
                         WHERE g.tenant_id = $1 AND g.connector_id = $3 AND g.bucket = $4
                           AND g.object_key = $5 AND g.scan_id <> f.scan_id
                           AND g.created_at > f.created_at)")
            .execute(conn)
            .await?
        }
    })
}

/// The open findings of some objects of one connector, with the ETag each had when last
/// scanned.
pub async fn open_in_objects(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    objects: &[(String, String)],
) -> Result<Vec<OpenFinding>, diesel::result::Error> {
    open_findings(conn, tenant, connector, None, objects).await
}

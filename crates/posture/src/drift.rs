//! Drift events: what changed between scans.
//!
//! - **data_drift**: an object's findings count or risk score differs from the last time it
//!   was scanned; a new object with findings counts, and so does one whose findings went.
//!   Severity: the new score's severity when findings or score rose, `low` when they fell.
//! - **exposure_drift**: a bucket became readable by anyone (`critical` when it holds
//!   findings, `high` when not), or stopped being so (`low`).
//! - **config_drift**: what a connector can reach changed (a bucket became reachable or
//!   unreachable: `medium`), default encryption was turned off (`high`) or changed (`low`),
//!   versioning was suspended (`medium`) or changed (`low`).
//!
//! An event stays in the timeline once acknowledged; a recurrence is a new event.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, DriftEventId, TenantId, UserId};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::governance_drift_events;

use crate::findings::RemediationStatus;
use crate::risk::model;
use crate::risk::state::ObjectChange;
use policies::document::Severity;

/// The cursor list name.
const LIST: &str = "drift-events";

/// The longest acknowledgement note.
pub const MAX_NOTE_CHARS: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Data,
    Config,
    Exposure,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Data, Kind::Config, Kind::Exposure];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Data => "data_drift",
            Kind::Config => "config_drift",
            Kind::Exposure => "exposure_drift",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Kind::ALL.into_iter().find(|k| k.as_str() == raw)
    }
}

// An unknown kind read back is an error, never a default.
db::text_enum!(Kind);

/// Whether an event still asks for attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Open,
    Acknowledged,
}

impl Status {
    pub const ALL: [Status; 2] = [Status::Open, Status::Acknowledged];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Acknowledged => "acknowledged",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Status::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

/// A drift event.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftEvent {
    pub event_id: Uuid,
    pub kind: Kind,
    pub severity: Severity,
    pub timestamp: OffsetDateTime,
    pub connector_id: ConnectorId,
    pub resource: String,
    pub description: String,
    pub previous_state: Value,
    pub current_state: Value,
    pub policies_triggered: Vec<String>,
    /// none, pending, completed, failed or dry_run.
    pub remediation_status: String,
    /// open or acknowledged.
    pub status: String,
    pub acknowledged_at: Option<OffsetDateTime>,
    pub acknowledged_by: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    #[error("no drift event with this id in the tenant")]
    NotFound,
    #[error("note must be at most 1000 characters without NUL")]
    InvalidNote,
    #[error("the cursor is not valid for this list")]
    BadCursor,
    #[error("database error")]
    Database(#[from] DieselError),
}

impl From<BadCursor> for DriftError {
    fn from(_: BadCursor) -> Self {
        DriftError::BadCursor
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = governance_drift_events, check_for_backend(diesel::pg::Pg))]
struct Row {
    event_id: Uuid,
    kind: Kind,
    severity: Severity,
    occurred_at: OffsetDateTime,
    connector_id: Uuid,
    resource: String,
    description: String,
    previous_state: Value,
    current_state: Value,
    policies_triggered: Vec<Option<String>>,
    remediation_status: String,
    status: String,
    acknowledged_at: Option<OffsetDateTime>,
    acknowledged_by: Option<String>,
    note: Option<String>,
}

fn event(row: Row) -> DriftEvent {
    DriftEvent {
        event_id: row.event_id,
        kind: row.kind,
        severity: row.severity,
        timestamp: row.occurred_at,
        connector_id: ConnectorId::from_uuid(row.connector_id),
        resource: row.resource,
        description: row.description,
        previous_state: row.previous_state,
        current_state: row.current_state,
        policies_triggered: row.policies_triggered.into_iter().flatten().collect(),
        remediation_status: row.remediation_status,
        status: row.status,
        acknowledged_at: row.acknowledged_at,
        acknowledged_by: row.acknowledged_by,
        note: row.note,
    }
}

/// A new event to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: Kind,
    pub severity: Severity,
    pub connector: ConnectorId,
    pub resource: String,
    pub description: String,
    pub previous: Value,
    pub current: Value,
    pub policies: Vec<String>,
    pub remediation: RemediationStatus,
}

/// Writes events in the caller's transaction.
pub async fn record(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    events: &[NewEvent],
) -> Result<(), DieselError> {
    if events.is_empty() {
        return Ok(());
    }
    let now = OffsetDateTime::now_utc();
    for chunk in events.chunks(1_000) {
        let rows: Vec<_> = chunk
            .iter()
            .map(|e| {
                (
                    governance_drift_events::tenant_id.eq(tenant.as_str()),
                    governance_drift_events::event_id.eq(Uuid::now_v7()),
                    governance_drift_events::kind.eq(e.kind.as_str()),
                    governance_drift_events::severity.eq(e.severity.as_str()),
                    governance_drift_events::occurred_at.eq(now),
                    governance_drift_events::connector_id.eq(e.connector.as_uuid()),
                    governance_drift_events::resource.eq(&e.resource),
                    governance_drift_events::description.eq(&e.description),
                    governance_drift_events::previous_state.eq(&e.previous),
                    governance_drift_events::current_state.eq(&e.current),
                    governance_drift_events::policies_triggered.eq(&e.policies),
                    governance_drift_events::remediation_status.eq(e.remediation.as_str()),
                )
            })
            .collect();
        diesel::insert_into(governance_drift_events::table)
            .values(rows)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// What governance decided for each object of a batch, by (bucket, key): the policies its
/// findings matched and the remediation that follows.
pub type Decisions = HashMap<(String, String), (Vec<String>, RemediationStatus)>;

/// Data drift events for the objects whose findings or score moved.
pub fn data_drift(
    connector: ConnectorId,
    changes: &[ObjectChange],
    decisions: &Decisions,
) -> Vec<NewEvent> {
    changes
        .iter()
        .filter(|c| c.drifted())
        .map(|c| {
            let (before_count, before_score) = c.previous.unwrap_or((0, 0));
            let (count, score) = c.current;
            let rose = count > before_count || score > before_score;
            let (policies, remediation) = decisions
                .get(&(c.bucket.clone(), c.object_key.clone()))
                .cloned()
                .unwrap_or((Vec::new(), RemediationStatus::None));
            let description = match (c.previous, count) {
                (None, _) => format!("a new object with {count} finding(s), risk {score}"),
                (Some(_), 0) => format!(
                    "the object's {before_count} finding(s) are gone; risk {before_score} to 0"
                ),
                (Some(_), _) => {
                    format!("findings {before_count} to {count}; risk {before_score} to {score}")
                }
            };
            NewEvent {
                kind: Kind::Data,
                severity: if rose {
                    model::severity(score)
                } else {
                    Severity::Low
                },
                connector,
                resource: format!("{}/{}", c.bucket, c.object_key),
                description,
                previous: json!({ "findings_count": before_count, "risk_score": before_score }),
                current: json!({ "findings_count": count, "risk_score": score }),
                policies,
                remediation,
            }
        })
        .collect()
}

/// Filters of the list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub since: Option<OffsetDateTime>,
    pub severity: Option<Severity>,
    pub kind: Option<Kind>,
    pub connector: Option<ConnectorId>,
    pub status: Option<Status>,
}

/// One page of the tenant's drift events, newest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &Filter,
    page: PageRequest<'_>,
) -> Result<Page<DriftEvent>, DriftError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Descending)?;
    let mut query = governance_drift_events::table
        .filter(governance_drift_events::tenant_id.eq(tenant.as_str()))
        .select(Row::as_select())
        .order((
            governance_drift_events::occurred_at.desc(),
            governance_drift_events::event_id.desc(),
        ))
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(since) = filter.since {
        query = query.filter(governance_drift_events::occurred_at.ge(since));
    }
    if let Some(severity) = filter.severity {
        query = query.filter(governance_drift_events::severity.eq(severity.as_str()));
    }
    if let Some(kind) = filter.kind {
        query = query.filter(governance_drift_events::kind.eq(kind.as_str()));
    }
    if let Some(connector) = filter.connector {
        query = query.filter(governance_drift_events::connector_id.eq(connector.as_uuid()));
    }
    if let Some(status) = filter.status {
        query = query.filter(governance_drift_events::status.eq(status.as_str()));
    }
    if let Some(after) = keyset
        .after::<governance_drift_events::occurred_at, governance_drift_events::event_id, _>()?
    {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    Ok(keyset
        .page(rows, |r| Position::at(r.occurred_at, r.event_id))
        .map(event))
}

/// Acknowledges an event with a note. Acknowledging it again changes nothing.
pub async fn acknowledge(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    id: DriftEventId,
    note: Option<&str>,
) -> Result<DriftEvent, DriftError> {
    let id = id.as_uuid();
    if note.is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS || n.contains('\0')) {
        return Err(DriftError::InvalidNote);
    }
    conn.transaction(async |conn| {
        let row: Row = governance_drift_events::table
            .filter(governance_drift_events::tenant_id.eq(tenant.as_str()))
            .filter(governance_drift_events::event_id.eq(id))
            .select(Row::as_select())
            .for_update()
            .first(conn)
            .await
            .optional()?
            .ok_or(DriftError::NotFound)?;
        if row.status == "acknowledged" {
            return Ok(event(row));
        }
        let row: Row = diesel::update(governance_drift_events::table)
            .filter(governance_drift_events::tenant_id.eq(tenant.as_str()))
            .filter(governance_drift_events::event_id.eq(id))
            .set((
                governance_drift_events::status.eq("acknowledged"),
                governance_drift_events::acknowledged_at.eq(OffsetDateTime::now_utc()),
                governance_drift_events::acknowledged_by.eq(actor.as_str()),
                governance_drift_events::note.eq(note),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        audit::append(
            conn,
            tenant,
            &[audit::NewEntry::new(
                audit::Kind::DriftAcknowledged,
                audit::Actor::User(actor.clone()),
            )
            .connector(ConnectorId::from_uuid(row.connector_id))
            .resource(row.resource.clone())
            .outcome("success")
            .details(json!({
                "event_id": id.to_string(),
                "type": row.kind.as_str(),
                "severity": row.severity.as_str(),
                "noted": note.is_some_and(|n| !n.is_empty()),
            }))],
        )
        .await?;
        Ok(event(row))
    })
    .await
}

/// Open events by severity (acknowledged ones excluded), from their kept counts
/// (`governance_drift_counts`, moved by triggers as events are recorded, acknowledged and
/// forgotten): a read of a few rows per day of history, not of the events.
pub async fn open_by_severity(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<HashMap<Severity, i64>, DieselError> {
    #[derive(QueryableByName)]
    struct Open {
        #[diesel(sql_type = diesel::sql_types::Text)]
        severity: Severity,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let rows: Vec<Open> = db::sql(
        "SELECT severity, sum(open)::bigint AS n FROM governance_drift_counts
          WHERE tenant_id = $1 GROUP BY severity HAVING sum(open) <> 0",
    )
    .bind::<diesel::sql_types::Text, _>(tenant.as_str())
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.severity, r.n)).collect())
}

/// Forgets a deleted connector's drift events.
pub async fn forget_connector(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<(), DieselError> {
    diesel::delete(governance_drift_events::table)
        .filter(governance_drift_events::tenant_id.eq(tenant.as_str()))
        .filter(governance_drift_events::connector_id.eq(connector.as_uuid()))
        .execute(conn)
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(previous: Option<(i32, i16)>, current: (i32, i16)) -> ObjectChange {
        ObjectChange {
            bucket: "b".into(),
            object_key: "k".into(),
            previous,
            current,
        }
    }

    #[test]
    fn data_drift_follows_the_documented_severities() {
        let connector = ConnectorId::new();
        let mut decisions = Decisions::new();
        decisions.insert(
            ("b".into(), "k".into()),
            (vec!["ssn".into()], RemediationStatus::Pending),
        );
        let changes = [
            change(None, (3, 85)),
            change(Some((3, 85)), (3, 85)),
            change(Some((3, 85)), (0, 0)),
            change(Some((1, 20)), (2, 65)),
            change(None, (0, 0)),
        ];
        let events = data_drift(connector, &changes, &decisions);
        let severities: Vec<Severity> = events.iter().map(|e| e.severity).collect();
        assert_eq!(
            severities,
            [Severity::Critical, Severity::Low, Severity::High],
            "unchanged objects and new clean objects do not drift"
        );
        assert_eq!(
            events[0].previous,
            json!({"findings_count": 0, "risk_score": 0})
        );
        assert_eq!(events[0].policies, ["ssn"]);
        assert_eq!(events[0].remediation, RemediationStatus::Pending);
        assert_eq!(
            events[1].current,
            json!({"findings_count": 0, "risk_score": 0})
        );
        assert_eq!(events[0].resource, "b/k");
    }
}

//! The scans outbox: what happened to scans, for whoever acts on it (governance evaluates
//! policies over new findings and recomputes risk when a scan ends).
//!
//! Events are written by this crate only, in the same transaction as the change they report,
//! so an event exists exactly when its change committed. Consumers read them in commit order
//! with [`read`] and keep their own positions; this crate never calls a consumer. Reading is
//! at-least-once from a consumer's point of view (it may crash after acting and before saving
//! its position), so consumers act idempotently.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use ids::{ConnectorId, ScanId, TenantId};

use crate::error::ScanError;
use crate::model::Status;

/// How long events are kept. A consumer that falls further behind than this misses events; the
/// in-process consumers read continuously, so a week leaves room for any outage worth surviving.
pub const RETENTION_DAYS: i32 = 7;

/// One object of a recorded batch, and what its scan found in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedObject {
    pub bucket: String,
    pub object_key: String,
    /// scanned, skipped or failed; or deleted, when a full listing no longer shows an object
    /// scanned before (its findings were resolved).
    pub state: String,
    /// Findings stored for it now; they replace the ones it held before.
    pub findings: i32,
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A batch of one connector's objects was recorded: each object's open findings are now
    /// those this scan found, and any it held before are resolved.
    ObjectsRecorded {
        connector: ConnectorId,
        objects: Vec<RecordedObject>,
    },
    /// The scan ended: completed, partial or failed when its work was done or its deadline
    /// passed, cancelled by request or because a connector of it was deleted.
    ScanEnded {
        status: Status,
        reason: Option<String>,
        connectors: Vec<ConnectorId>,
    },
}

/// The stored form of an event.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Payload {
    ObjectsRecorded {
        connector_id: Uuid,
        objects: Vec<RecordedObject>,
    },
    ScanEnded {
        status: Status,
        reason: Option<String>,
        connectors: Vec<Uuid>,
    },
}

impl Payload {
    fn of(event: &Event) -> (&'static str, Self) {
        match event {
            Event::ObjectsRecorded { connector, objects } => (
                "objects_recorded",
                Payload::ObjectsRecorded {
                    connector_id: connector.as_uuid(),
                    objects: objects.clone(),
                },
            ),
            Event::ScanEnded {
                status,
                reason,
                connectors,
            } => (
                "scan_ended",
                Payload::ScanEnded {
                    status: *status,
                    reason: reason.clone(),
                    connectors: connectors.iter().map(ConnectorId::as_uuid).collect(),
                },
            ),
        }
    }

    fn event(self) -> Event {
        match self {
            Payload::ObjectsRecorded {
                connector_id,
                objects,
            } => Event::ObjectsRecorded {
                connector: ConnectorId::from_uuid(connector_id),
                objects,
            },
            Payload::ScanEnded {
                status,
                reason,
                connectors,
            } => Event::ScanEnded {
                status,
                reason,
                connectors: connectors.into_iter().map(ConnectorId::from_uuid).collect(),
            },
        }
    }
}

/// Writes an event in the caller's transaction: it commits, or disappears, with the change.
pub(crate) async fn write(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scan: ScanId,
    event: &Event,
) -> Result<(), ScanError> {
    let (kind, payload) = Payload::of(event);
    let payload = serde_json::to_value(payload).map_err(|_| ScanError::CorruptRow)?;
    db::sql("INSERT INTO scan_events (tenant_id, scan_id, kind, payload) VALUES ($1, $2, $3, $4)")
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(scan.as_uuid())
        .bind::<Text, _>(kind)
        .bind::<Jsonb, _>(payload)
        .execute(conn)
        .await?;
    Ok(())
}

/// Where a consumer is in the outbox: after the event at this position. The default is the
/// beginning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// The writing transaction's id (Postgres `xid8`).
    pub txid: i64,
    pub event_id: i64,
}

/// An event as a consumer reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivered {
    pub position: Position,
    pub tenant: TenantId,
    pub scan: ScanId,
    pub event: Event,
    pub at: OffsetDateTime,
}

#[derive(QueryableByName)]
struct EventRow {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = BigInt)]
    event_id: i64,
    #[diesel(sql_type = BigInt)]
    txid: i64,
    #[diesel(sql_type = SqlUuid)]
    scan_id: Uuid,
    #[diesel(sql_type = Jsonb)]
    payload: serde_json::Value,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
}

/// Up to `limit` events after `after`, of every tenant, in commit order.
///
/// Only events of transactions older than every transaction still running are returned: one
/// still open may commit an event with a smaller id later, and reading past it would skip it.
/// Ordering by the writing transaction, then the event, makes a position a watermark: nothing
/// can appear behind it.
pub async fn read(
    conn: &mut AsyncPgConnection,
    after: Position,
    limit: i64,
) -> Result<Vec<Delivered>, ScanError> {
    let rows: Vec<EventRow> = db::sql(
        "SELECT tenant_id, event_id, txid::text::bigint AS txid, scan_id, payload, created_at
           FROM scan_events
          WHERE txid < pg_snapshot_xmin(pg_current_snapshot())
            AND (txid, event_id) > ($1::text::xid8, $2)
          ORDER BY txid, event_id
          LIMIT $3",
    )
    .bind::<Text, _>(after.txid.to_string())
    .bind::<BigInt, _>(after.event_id)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await?;
    rows.into_iter()
        .map(|r| {
            let payload: Payload =
                serde_json::from_value(r.payload).map_err(|_| ScanError::CorruptRow)?;
            Ok(Delivered {
                position: Position {
                    txid: r.txid,
                    event_id: r.event_id,
                },
                tenant: r.tenant_id.parse().map_err(|_| ScanError::CorruptRow)?,
                scan: ScanId::from_uuid(r.scan_id),
                event: payload.event(),
                at: r.created_at,
            })
        })
        .collect()
}

/// Deletes events older than [`RETENTION_DAYS`]. Returns how many went.
pub async fn prune(conn: &mut AsyncPgConnection) -> Result<usize, ScanError> {
    Ok(
        db::sql("DELETE FROM scan_events WHERE created_at < now() - make_interval(days => $1)")
            .bind::<diesel::sql_types::Integer, _>(RETENTION_DAYS)
            .execute(conn)
            .await?,
    )
}

/// Events after `after` (readable or not yet), and when the oldest of them was written: how
/// far a consumer at `after` is behind.
pub async fn backlog(
    conn: &mut AsyncPgConnection,
    after: Position,
) -> Result<(i64, Option<OffsetDateTime>), ScanError> {
    #[derive(QueryableByName)]
    struct Backlog {
        #[diesel(sql_type = BigInt)]
        n: i64,
        #[diesel(sql_type = diesel::sql_types::Nullable<Timestamptz>)]
        oldest: Option<OffsetDateTime>,
    }
    let backlog: Backlog = db::sql(
        "SELECT count(*) AS n, min(created_at) AS oldest
           FROM scan_events
          WHERE (txid, event_id) > ($1::text::xid8, $2)",
    )
    .bind::<Text, _>(after.txid.to_string())
    .bind::<BigInt, _>(after.event_id)
    .get_result(conn)
    .await?;
    Ok((backlog.n, backlog.oldest))
}

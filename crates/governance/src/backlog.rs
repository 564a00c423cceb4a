//! What is waiting, for the metrics: the scan events evaluation has not read, the alert
//! deliveries not yet delivered, and remediation requests by state. Read when `/metrics` is
//! scraped; each is one indexed query or a read of kept counts.

use db::AsyncPgConnection;
use db::schema::{governance_consumers, governance_deliveries};
use diesel::dsl::{count_star, min};
use diesel::{ExpressionMethods as _, OptionalExtension as _, QueryDsl as _};
use diesel_async::RunQueryDsl as _;
use scans::outbox::Position;
use time::OffsetDateTime;

use crate::evaluate::CONSUMER;

/// A snapshot of the backlogs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Backlog {
    /// Scan events after evaluation's position, and when the oldest was written.
    pub scan_events: (i64, Option<OffsetDateTime>),
    /// Pending alert deliveries, and when the oldest was created.
    pub deliveries: (i64, Option<OffsetDateTime>),
    /// Remediation requests by status.
    pub remediations: Vec<(String, i64)>,
}

/// Reads every backlog.
pub async fn sample(
    conn: &mut AsyncPgConnection,
) -> Result<Backlog, Box<dyn std::error::Error + Send + Sync>> {
    let position: Option<(i64, i64)> = governance_consumers::table
        .find(CONSUMER)
        .select((governance_consumers::txid, governance_consumers::event_id))
        .first(conn)
        .await
        .optional()?;
    let (txid, event_id) = position.unwrap_or_default();
    let scan_events = scans::outbox::backlog(conn, Position { txid, event_id }).await?;
    let deliveries: (i64, Option<OffsetDateTime>) = governance_deliveries::table
        .filter(governance_deliveries::status.eq("pending"))
        .select((count_star(), min(governance_deliveries::created_at)))
        .first(conn)
        .await?;
    // Kept by triggers as requests move (migration 042): a few rows per tenant and state,
    // however many requests there have been.
    #[derive(diesel::QueryableByName)]
    struct State {
        #[diesel(sql_type = diesel::sql_types::Text)]
        status: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        requests: i64,
    }
    let remediations: Vec<(String, i64)> = db::sql(
        "SELECT status, sum(requests)::bigint AS requests FROM remediation_status_counts
          GROUP BY status",
    )
    .load::<State>(conn)
    .await?
    .into_iter()
    .map(|s| (s.status, s.requests))
    .collect();
    Ok(Backlog {
        scan_events,
        deliveries,
        remediations,
    })
}

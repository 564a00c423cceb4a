//! What became of a tenant's latest alerts, for the console's alerts page: each delivery's
//! channel, the policy and object it is about, its state and attempts. Read from the
//! `governance_deliveries` outbox; its payload names types and counts, never a value.

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use time::OffsetDateTime;

/// One alert to one channel.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct Delivery {
    #[diesel(sql_type = Text)]
    pub channel: String,
    /// The policy's name when the alert was queued.
    #[diesel(sql_type = Nullable<Text>)]
    pub policy: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub severity: Option<String>,
    /// `bucket/key` of the object the alert is about.
    #[diesel(sql_type = Nullable<Text>)]
    pub resource: Option<String>,
    /// `pending`, `delivered`, `failed` or `blocked`.
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    /// Why the last attempt failed (an HTTP status or a refusal of the platform's outbound
    /// rules; never the channel's URL).
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: OffsetDateTime,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub delivered_at: Option<OffsetDateTime>,
}

/// The tenant's latest `limit` deliveries, newest first (the outbox's primary key is the
/// tenant and a time-ordered id).
pub async fn recent(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    limit: i64,
) -> Result<Vec<Delivery>, DieselError> {
    db::sql(
        "SELECT channel, payload->'policy'->>'name' AS policy, payload->>'severity' AS severity,
                payload->>'resource' AS resource, status, attempts, last_error, created_at,
                delivered_at
           FROM governance_deliveries
          WHERE tenant_id = $1
          ORDER BY delivery_id DESC
          LIMIT $2",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

//! Queuing alerts: evaluation's side of the `governance_deliveries` outbox, which the
//! [`delivery`](crate::delivery) worker drains.

use std::collections::HashMap;

use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

/// One alert to one channel.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub delivery_id: Uuid,
    pub channel: String,
    /// The ledger's id of the alert action.
    pub action_id: Uuid,
    /// The JSON body the receiver gets.
    pub payload: Value,
}

/// Queues `deliveries`, due at once, in one statement. Call it in the evaluation's
/// transaction, with its ledger rows.
pub async fn queue(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    deliveries: &[NewDelivery],
    now: OffsetDateTime,
) -> Result<(), DieselError> {
    if deliveries.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = deliveries.iter().map(|d| d.delivery_id).collect();
    let channels: Vec<&str> = deliveries.iter().map(|d| d.channel.as_str()).collect();
    let actions: Vec<Uuid> = deliveries.iter().map(|d| d.action_id).collect();
    let payloads: Vec<&Value> = deliveries.iter().map(|d| &d.payload).collect();
    db::sql(
        "INSERT INTO governance_deliveries (tenant_id, delivery_id, channel, action_id, payload,
                next_attempt_at, created_at)
         SELECT $1, d.id, d.channel, d.action_id, d.payload, $5, $5
           FROM unnest($2::uuid[], $3::text[], $4::uuid[], $6::jsonb[])
                AS d(id, channel, action_id, payload)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&ids)
    .bind::<Array<Text>, _>(&channels)
    .bind::<Array<SqlUuid>, _>(&actions)
    .bind::<Timestamptz, _>(now)
    .bind::<Array<Jsonb>, _>(&payloads)
    .execute(conn)
    .await
    .map(drop)
}

/// Per alert action of `actions`, the channels it has reached or is on its way to
/// (`delivered` or `pending`), in one query: an alert queued again goes only to the others.
pub async fn reached(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actions: &[Uuid],
) -> Result<HashMap<Uuid, Vec<String>>, DieselError> {
    use db::schema::governance_deliveries as d;
    use diesel::{ExpressionMethods as _, QueryDsl as _};
    if actions.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(Uuid, String)> = d::table
        .filter(d::tenant_id.eq(tenant.as_str()))
        .filter(d::action_id.eq_any(actions))
        .filter(d::status.eq_any(["delivered", "pending"]))
        .select((d::action_id, d::channel))
        .load(conn)
        .await?;
    let mut reached: HashMap<Uuid, Vec<String>> = HashMap::new();
    for (action, channel) in rows {
        reached.entry(action).or_default().push(channel);
    }
    Ok(reached)
}

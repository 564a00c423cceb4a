//! Appending entries: under the tenant's head row, inside the caller's transaction.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{audit_heads, audit_log};

use crate::entry::{Entry, GENESIS, NewEntry, to_micros};

/// What was appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub seq: i64,
    pub entry_id: Uuid,
}

#[derive(Insertable)]
#[diesel(table_name = audit_log)]
struct Row<'a> {
    tenant_id: &'a str,
    seq: i64,
    entry_id: Uuid,
    recorded_at: OffsetDateTime,
    kind: &'a str,
    actor: &'a str,
    policy_id: Option<Uuid>,
    policy_version: Option<i32>,
    action_type: Option<&'a str>,
    connector_id: Option<Uuid>,
    resource: Option<&'a str>,
    simulated: bool,
    outcome: Option<&'a str>,
    details: &'a serde_json::Value,
    prev_hash: &'a [u8],
    hash: &'a [u8],
}

/// Postgres text cannot hold NUL; a resource name that does is stored with U+FFFD instead, so
/// that recording it never fails.
fn storable(text: &str) -> String {
    text.replace('\0', "\u{fffd}")
}

/// The tenant's head (its last sequence number, hash and time), locked until the transaction
/// ends; None when the tenant has no entry yet.
async fn lock_head(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> QueryResult<Option<(i64, Vec<u8>, OffsetDateTime)>> {
    audit_heads::table
        .find(tenant.as_str())
        .select((
            audit_heads::seq,
            audit_heads::hash,
            audit_heads::recorded_at,
        ))
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Appends `entries`, in order, to the tenant's log. Call it inside the transaction that makes
/// the change the entries record: the head row it locks serializes the tenant's appends until
/// that transaction ends, and an entry exists exactly when its change does.
pub async fn append(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    entries: &[NewEntry],
) -> QueryResult<Vec<Appended>> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    // Every append locks the tenant's head; the first append of a tenant creates it first.
    let (mut seq, mut prev_hash, last_at) = match lock_head(conn, tenant).await? {
        Some(head) => head,
        None => {
            diesel::insert_into(audit_heads::table)
                .values((
                    audit_heads::tenant_id.eq(tenant.as_str()),
                    audit_heads::seq.eq(0_i64),
                    audit_heads::hash.eq(&GENESIS[..]),
                    audit_heads::recorded_at.eq(OffsetDateTime::UNIX_EPOCH),
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
            lock_head(conn, tenant)
                .await?
                .ok_or(diesel::result::Error::NotFound)?
        }
    };
    // Time never goes backwards within a log, so `since` can find its place by time.
    let recorded_at = to_micros(OffsetDateTime::now_utc().max(last_at));

    let mut stored = Vec::with_capacity(entries.len());
    for new in entries {
        seq += 1;
        let mut entry = Entry {
            tenant_id: tenant.clone(),
            seq,
            entry_id: Uuid::now_v7(),
            recorded_at,
            kind: new.kind.to_owned(),
            actor: new.actor.as_str().to_owned(),
            policy_id: new.policy.map(|(id, _)| id.as_uuid()),
            policy_version: new.policy.map(|(_, v)| v),
            action_type: new.action_type.map(str::to_owned),
            connector_id: new.connector_id.map(|id| id.as_uuid()),
            resource: new.resource.as_deref().map(storable),
            simulated: new.simulated,
            outcome: new.outcome.map(str::to_owned),
            details: new.details.clone(),
            prev_hash: prev_hash.clone(),
            hash: Vec::new(),
        };
        entry.hash = entry.compute_hash(&prev_hash).to_vec();
        prev_hash.clone_from(&entry.hash);
        stored.push(entry);
    }

    if let [e] = stored.as_slice() {
        // One entry, the common case: the row and the new head in one statement, one round
        // trip fewer.
        use diesel::sql_types::{
            Bool, Bytea, Int4, Int8, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
        };
        db::sql(
            "WITH head AS (
                 UPDATE audit_heads SET seq = $2, hash = $16, recorded_at = $4
                  WHERE tenant_id = $1)
             INSERT INTO audit_log (tenant_id, seq, entry_id, recorded_at, kind, actor,
                                    policy_id, policy_version, action_type, connector_id,
                                    resource, simulated, outcome, details, prev_hash, hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind::<Text, _>(e.tenant_id.as_str())
        .bind::<Int8, _>(e.seq)
        .bind::<SqlUuid, _>(e.entry_id)
        .bind::<Timestamptz, _>(e.recorded_at)
        .bind::<Text, _>(&e.kind)
        .bind::<Text, _>(&e.actor)
        .bind::<Nullable<SqlUuid>, _>(e.policy_id)
        .bind::<Nullable<Int4>, _>(e.policy_version)
        .bind::<Nullable<Text>, _>(e.action_type.as_deref())
        .bind::<Nullable<SqlUuid>, _>(e.connector_id)
        .bind::<Nullable<Text>, _>(e.resource.as_deref())
        .bind::<Bool, _>(e.simulated)
        .bind::<Nullable<Text>, _>(e.outcome.as_deref())
        .bind::<Jsonb, _>(&e.details)
        .bind::<Bytea, _>(&e.prev_hash)
        .bind::<Bytea, _>(&e.hash)
        .execute(conn)
        .await?;
        return Ok(vec![Appended {
            seq: e.seq,
            entry_id: e.entry_id,
        }]);
    }
    // Postgres binds at most 65,535 parameters; 16 per row.
    for chunk in stored.chunks(2_000) {
        let rows: Vec<Row<'_>> = chunk
            .iter()
            .map(|e| Row {
                tenant_id: e.tenant_id.as_str(),
                seq: e.seq,
                entry_id: e.entry_id,
                recorded_at: e.recorded_at,
                kind: &e.kind,
                actor: &e.actor,
                policy_id: e.policy_id,
                policy_version: e.policy_version,
                action_type: e.action_type.as_deref(),
                connector_id: e.connector_id,
                resource: e.resource.as_deref(),
                simulated: e.simulated,
                outcome: e.outcome.as_deref(),
                details: &e.details,
                prev_hash: &e.prev_hash,
                hash: &e.hash,
            })
            .collect();
        diesel::insert_into(audit_log::table)
            .values(&rows)
            .execute(conn)
            .await?;
    }
    diesel::update(audit_heads::table.find(tenant.as_str()))
        .set((
            audit_heads::seq.eq(seq),
            audit_heads::hash.eq(&prev_hash),
            audit_heads::recorded_at.eq(recorded_at),
        ))
        .execute(conn)
        .await?;
    Ok(stored
        .into_iter()
        .map(|e| Appended {
            seq: e.seq,
            entry_id: e.entry_id,
        })
        .collect())
}

//! Appending entries: under the tenant's head row, inside the caller's transaction.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::audit_heads;

use crate::entry::{Entry, GENESIS, NewEntry, to_micros};

/// What was appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    pub seq: i64,
    pub entry_id: Uuid,
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
            kind: new.kind,
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

    // The entries and the new head in one statement, whatever their number: the entries go as
    // column arrays, which no parameter limit bounds.
    use diesel::sql_types::{
        Array, Bool, Bytea, Int4, Int8, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
    };
    fn column<'a, T>(stored: &'a [Entry], f: impl Fn(&'a Entry) -> T) -> Vec<T> {
        stored.iter().map(f).collect()
    }
    db::sql(
        "WITH head AS (
             UPDATE audit_heads SET seq = $3, hash = $4, recorded_at = $2 WHERE tenant_id = $1)
         INSERT INTO audit_log (tenant_id, seq, entry_id, recorded_at, kind, actor, policy_id,
                                policy_version, action_type, connector_id, resource, simulated,
                                outcome, details, prev_hash, hash)
         SELECT $1, e.seq, e.entry_id, $2, e.kind, e.actor, e.policy_id, e.policy_version,
                e.action_type, e.connector_id, e.resource, e.simulated, e.outcome, e.details,
                e.prev_hash, e.hash
           FROM unnest($5::bigint[], $6::uuid[], $7::text[], $8::text[], $9::uuid[],
                       $10::int[], $11::text[], $12::uuid[], $13::text[], $14::bool[],
                       $15::text[], $16::jsonb[], $17::bytea[], $18::bytea[])
                AS e(seq, entry_id, kind, actor, policy_id, policy_version, action_type,
                     connector_id, resource, simulated, outcome, details, prev_hash, hash)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Timestamptz, _>(recorded_at)
    .bind::<Int8, _>(seq)
    .bind::<Bytea, _>(&prev_hash)
    .bind::<Array<Int8>, _>(column(&stored, |e| e.seq))
    .bind::<Array<SqlUuid>, _>(column(&stored, |e| e.entry_id))
    .bind::<Array<Text>, _>(column(&stored, |e| e.kind.as_str()))
    .bind::<Array<Text>, _>(column(&stored, |e| e.actor.as_str()))
    .bind::<Array<Nullable<SqlUuid>>, _>(column(&stored, |e| e.policy_id))
    .bind::<Array<Nullable<Int4>>, _>(column(&stored, |e| e.policy_version))
    .bind::<Array<Nullable<Text>>, _>(column(&stored, |e| e.action_type.as_deref()))
    .bind::<Array<Nullable<SqlUuid>>, _>(column(&stored, |e| e.connector_id))
    .bind::<Array<Nullable<Text>>, _>(column(&stored, |e| e.resource.as_deref()))
    .bind::<Array<Bool>, _>(column(&stored, |e| e.simulated))
    .bind::<Array<Nullable<Text>>, _>(column(&stored, |e| e.outcome.as_deref()))
    .bind::<Array<Jsonb>, _>(column(&stored, |e| &e.details))
    .bind::<Array<Bytea>, _>(column(&stored, |e| e.prev_hash.as_slice()))
    .bind::<Array<Bytea>, _>(column(&stored, |e| e.hash.as_slice()))
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

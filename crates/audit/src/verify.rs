//! Checking a tenant's log end to end.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;

use db::schema::{audit_heads, audit_log};

use crate::checkpoint::{Checkpoint, PublicKey, checkpoints};
use crate::entry::{Entry, GENESIS};
use crate::list::{Row, select};

/// Entries read per query while verifying.
const CHUNK: i64 = 20_000;

/// An intact log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub entries: i64,
    pub checkpoints: usize,
}

/// The first place the log is not what was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub seq: i64,
    pub reason: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "seq {}: {}", self.seq, self.reason)
    }
}

fn broken(seq: i64, reason: impl Into<String>) -> Result<Verified, Broken> {
    Err(Broken {
        seq,
        reason: reason.into(),
    })
}

/// Walks the tenant's log from seq 1: each entry must follow the one before (no gap), carry
/// its predecessor's hash, hash to what it says, and match every signed checkpoint at its seq;
/// and no checkpoint or head may lie past the last entry. Checkpoints must verify under `key`.
pub async fn verify(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    key: &PublicKey,
) -> QueryResult<Result<Verified, Broken>> {
    let signed = checkpoints(conn, tenant).await?;
    for checkpoint in &signed {
        if !key.verifies(checkpoint) {
            return Ok(broken(
                checkpoint.seq,
                "the checkpoint's signature does not verify with this key",
            ));
        }
    }
    let at: BTreeMap<i64, &Checkpoint> = signed.iter().map(|c| (c.seq, c)).collect();

    let mut expected = 1_i64;
    let mut prev: Vec<u8> = GENESIS.to_vec();
    loop {
        let rows: Vec<Row> = select()
            .filter(audit_log::tenant_id.eq(tenant.as_str()))
            .filter(audit_log::seq.ge(expected))
            .order(audit_log::seq)
            .limit(CHUNK)
            .load(conn)
            .await?;
        let done = rows.len() < CHUNK as usize;
        for row in rows {
            let entry: Entry = row.into_entry(tenant);
            if entry.seq != expected {
                return Ok(broken(expected, "the entry is missing"));
            }
            if entry.prev_hash != prev {
                return Ok(broken(
                    entry.seq,
                    "prev_hash is not the previous entry's hash",
                ));
            }
            if entry.compute_hash(&prev)[..] != entry.hash[..] {
                return Ok(broken(
                    entry.seq,
                    "the entry does not hash to its stored hash: it was changed",
                ));
            }
            if let Some(checkpoint) = at.get(&entry.seq)
                && checkpoint.hash != entry.hash
            {
                return Ok(broken(
                    entry.seq,
                    "the entry's hash differs from the signed checkpoint",
                ));
            }
            prev = entry.hash;
            expected += 1;
        }
        if done {
            break;
        }
    }
    let last = expected - 1;
    if let Some(checkpoint) = signed.last()
        && checkpoint.seq > last
    {
        return Ok(broken(
            last + 1,
            format!(
                "the log ends at seq {last}, before the checkpoint signed at seq {}: it was cut",
                checkpoint.seq
            ),
        ));
    }
    let head: Option<i64> = audit_heads::table
        .find(tenant.as_str())
        .select(audit_heads::seq)
        .first(conn)
        .await
        .optional()?;
    if let Some(head) = head
        && head > last
    {
        return Ok(broken(
            last + 1,
            format!("the log ends at seq {last}, before its head at seq {head}: it was cut"),
        ));
    }
    Ok(Ok(Verified {
        entries: last,
        checkpoints: signed.len(),
    }))
}

//! Checking a tenant's log end to end.

use std::collections::BTreeMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{audit_heads, audit_log};

use crate::checkpoint::{PublicKey, checkpoints};
use crate::entry::{Entry, GENESIS};

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
    let at: Arc<BTreeMap<i64, Vec<u8>>> =
        Arc::new(signed.iter().map(|c| (c.seq, c.hash.clone())).collect());

    // Each chunk is checked on blocking threads while the next one is read: the database and
    // the hashing overlap. Every entry carries its predecessor's hash, so an entry's own hash
    // can be checked apart from the others; the links between them are checked in order.
    let mut expected = 1_i64;
    let mut prev: Vec<u8> = GENESIS.to_vec();
    let mut rows = fetch(conn, tenant, expected, CHUNK).await?;
    loop {
        let done = rows.len() < CHUNK as usize;
        let first = expected;
        let count = rows.len() as i64;
        let check = {
            let (tenant, at, prev) = (tenant.clone(), at.clone(), prev.clone());
            tokio::task::spawn_blocking(move || check_chunk(rows, &tenant, first, prev, &at))
        };
        let next = if done {
            Vec::new()
        } else {
            fetch(conn, tenant, first + count, CHUNK).await?
        };
        match check.await {
            Ok(Ok(last_hash)) => {
                if let Some(hash) = last_hash {
                    prev = hash;
                }
            }
            Ok(Err(broken)) => return Ok(Err(broken)),
            Err(_) => return Ok(broken(first, "the verifier's worker thread failed")),
        }
        expected = first + count;
        if done {
            break;
        }
        rows = next;
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

/// An entry as the verifier reads it: `details` as text, parsed on the checking threads so
/// that reading the next chunk does not wait for it.
pub(crate) type RawRow = (
    i64,
    Uuid,
    OffsetDateTime,
    String,
    String,
    Option<Uuid>,
    Option<i32>,
    Option<String>,
    Option<Uuid>,
    Option<String>,
    bool,
    Option<String>,
    String,
    Vec<u8>,
    Vec<u8>,
);

/// Up to `limit` entries from seq `from` on, in seq order.
pub(crate) async fn fetch(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    from: i64,
    limit: i64,
) -> QueryResult<Vec<RawRow>> {
    audit_log::table
        .filter(audit_log::tenant_id.eq(tenant.as_str()))
        .filter(audit_log::seq.ge(from))
        .order(audit_log::seq)
        .limit(limit)
        .select((
            audit_log::seq,
            audit_log::entry_id,
            audit_log::recorded_at,
            audit_log::kind,
            audit_log::actor,
            audit_log::policy_id,
            audit_log::policy_version,
            audit_log::action_type,
            audit_log::connector_id,
            audit_log::resource,
            audit_log::simulated,
            audit_log::outcome,
            diesel::dsl::sql::<diesel::sql_types::Text>("details::text"),
            audit_log::prev_hash,
            audit_log::hash,
        ))
        .load(conn)
        .await
}

fn entry(row: RawRow, tenant: &TenantId) -> Result<Entry, Broken> {
    let (seq, entry_id, recorded_at, kind, actor, policy_id, policy_version, action_type) =
        (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7);
    let details = serde_json::from_str(&row.12).map_err(|_| Broken {
        seq,
        reason: "the entry's details are not JSON".into(),
    })?;
    let kind = crate::Kind::parse(&kind).ok_or_else(|| Broken {
        seq,
        reason: "the entry's type is not one this service writes".into(),
    })?;
    Ok(Entry {
        tenant_id: tenant.clone(),
        seq,
        entry_id,
        recorded_at,
        kind,
        actor,
        policy_id,
        policy_version,
        action_type,
        connector_id: row.8,
        resource: row.9,
        simulated: row.10,
        outcome: row.11,
        details,
        prev_hash: row.13,
        hash: row.14,
    })
}

/// Checks a chunk of consecutive entries starting at `first`, after the entry whose hash is
/// `prev`: numbering, links, each entry's hash (on two threads, one per half) and the signed
/// checkpoints. Returns the last entry's hash, or where the chunk first breaks.
pub(crate) fn check_chunk(
    rows: Vec<RawRow>,
    tenant: &TenantId,
    first: i64,
    prev: Vec<u8>,
    at: &BTreeMap<i64, Vec<u8>>,
) -> Result<Option<Vec<u8>>, Broken> {
    // Numbering and links, in order: where the first one breaks, if any.
    let mut link: &[u8] = &prev;
    let mut link_break: Option<(usize, Broken)> = None;
    for (i, row) in rows.iter().enumerate() {
        let expected = first + i as i64;
        let reason = if row.0 != expected {
            Some("the entry is missing")
        } else if row.13 != link {
            Some("prev_hash is not the previous entry's hash")
        } else {
            None
        };
        if let Some(reason) = reason {
            link_break = Some((
                i,
                Broken {
                    seq: expected,
                    reason: reason.into(),
                },
            ));
            break;
        }
        link = &row.14;
    }
    let last_hash = rows.last().map(|r| r.14.clone());
    // Only the entries before a broken link are checked further: the first bad seq wins.
    let checked = link_break.as_ref().map_or(rows.len(), |(i, _)| *i);
    let mut rows = rows;
    rows.truncate(checked);
    let high_rows = rows.split_off(checked / 2);
    // Each entry's own hash and its checkpoint, two halves at once; the lower failure wins.
    let own = |part: Vec<RawRow>| -> Option<Broken> {
        for row in part {
            let entry = match entry(row, tenant) {
                Ok(entry) => entry,
                Err(b) => return Some(b),
            };
            if entry.compute_hash(&entry.prev_hash)[..] != entry.hash[..] {
                return Some(Broken {
                    seq: entry.seq,
                    reason: "the entry does not hash to its stored hash: it was changed".into(),
                });
            }
            if let Some(signed) = at.get(&entry.seq)
                && *signed != entry.hash
            {
                return Some(Broken {
                    seq: entry.seq,
                    reason: "the entry's hash differs from the signed checkpoint".into(),
                });
            }
        }
        None
    };
    let (low, high) = std::thread::scope(|scope| {
        let high = scope.spawn(|| own(high_rows));
        (own(rows), high.join())
    });
    if let Some(b) = low {
        return Err(b);
    }
    match high {
        Ok(Some(b)) => Err(b),
        Ok(None) => match link_break {
            Some((_, b)) => Err(b),
            None => Ok(last_hash),
        },
        Err(_) => Err(Broken {
            seq: first,
            reason: "the verifier's worker thread failed".into(),
        }),
    }
}

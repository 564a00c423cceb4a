//! Checking the newest part of a tenant's log in bounded time, for a page to show.
//!
//! [`crate::verify`] walks the whole log: with a million entries that is seconds of reading
//! and hashing, too long for a page. [`verify_recent`] checks the newest entries only, from
//! the signed checkpoint just before them, so its cost does not grow with the log: at most
//! `entries` + [`ANCHOR_REACH`] entries are read and hashed, and a few checkpoints checked.
//! What it proves is stated on [`RecentVerified`]; the whole log is `dpsctl audit verify`'s.

use std::collections::BTreeMap;

use diesel::dsl::max;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use time::OffsetDateTime;

use db::schema::{audit_checkpoints, audit_heads, audit_log};

use crate::checkpoint::{Checkpoint, PublicKey};
use crate::entry::GENESIS;
use crate::verify::{Broken, check_chunk, fetch};

/// How many of the newest entries a page checks.
pub const RECENT_ENTRIES: i64 = 1_000;

/// How far before the checked entries a signed checkpoint is looked for. The checkpointer
/// signs every 1,000th entry, so one is normally within 1,000; a log whose checkpointer fell
/// behind further is checked from the window's first entry, unanchored.
pub const ANCHOR_REACH: i64 = 5_000;

/// Where the checked entries' chain starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// At the log's first entry, which must follow the genesis hash.
    Genesis,
    /// Just after a signed checkpoint whose signature verified: the first entry checked must
    /// carry the checkpoint's hash as its predecessor's.
    Checkpoint { seq: i64, signed_at: OffsetDateTime },
    /// No signed checkpoint lies within reach before the entries: the first one's link to its
    /// predecessor is taken as stored.
    Unanchored,
}

/// The newest entries, intact. For seqs `from..=to`: each entry follows the one before with
/// no gap, carries its predecessor's hash and hashes to its stored hash; the chain starts at
/// `anchor`; every checkpoint signed within the range verifies under the key and matches its
/// entry's hash; and no checkpoint nor the log's head lies past `to` (the log was not cut).
/// Entries before `from` are not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentVerified {
    /// 0 and 0 for an empty log.
    pub from: i64,
    pub to: i64,
    pub anchor: Anchor,
    /// Signed checkpoints within `from..=to` (the anchor aside), each checked.
    pub checkpoints: usize,
    /// The key the checkpoints were checked with.
    pub key_id: String,
}

fn broken(seq: i64, reason: impl Into<String>) -> Result<RecentVerified, Broken> {
    Err(Broken {
        seq,
        reason: reason.into(),
    })
}

/// Checks the tenant's newest `entries` entries (at least one), back to the signed checkpoint
/// just before them. Checkpoints must verify under `key`.
pub async fn verify_recent(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    key: &PublicKey,
    entries: i64,
) -> QueryResult<Result<RecentVerified, Broken>> {
    let last: Option<i64> = audit_log::table
        .filter(audit_log::tenant_id.eq(tenant.as_str()))
        .select(max(audit_log::seq))
        .first(conn)
        .await?;
    let last = last.unwrap_or(0);
    // The log must reach its head and its newest checkpoint: otherwise its tail was cut.
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
    let newest: Option<i64> = audit_checkpoints::table
        .filter(audit_checkpoints::tenant_id.eq(tenant.as_str()))
        .select(max(audit_checkpoints::seq))
        .first(conn)
        .await?;
    if let Some(newest) = newest
        && newest > last
    {
        return Ok(broken(
            last + 1,
            format!(
                "the log ends at seq {last}, before the checkpoint signed at seq {newest}: it was cut"
            ),
        ));
    }
    let key_id = key.key_id.clone();
    if last == 0 {
        return Ok(Ok(RecentVerified {
            from: 0,
            to: 0,
            anchor: Anchor::Genesis,
            checkpoints: 0,
            key_id,
        }));
    }
    let wanted = (last - entries.max(1) + 1).max(1);
    let anchor: Option<Checkpoint> = if wanted == 1 {
        None
    } else {
        audit_checkpoints::table
            .filter(audit_checkpoints::tenant_id.eq(tenant.as_str()))
            .filter(audit_checkpoints::seq.lt(wanted))
            .filter(audit_checkpoints::seq.ge(wanted - ANCHOR_REACH))
            .order(audit_checkpoints::seq.desc())
            .select(Checkpoint::as_select())
            .first(conn)
            .await
            .optional()?
    };
    if let Some(anchor) = &anchor
        && !key.verifies(anchor)
    {
        return Ok(broken(
            anchor.seq,
            "the checkpoint's signature does not verify with this key",
        ));
    }
    let from = anchor.as_ref().map_or(wanted, |a| a.seq + 1);
    let within: Vec<Checkpoint> = audit_checkpoints::table
        .filter(audit_checkpoints::tenant_id.eq(tenant.as_str()))
        .filter(audit_checkpoints::seq.ge(from))
        .order(audit_checkpoints::seq)
        .select(Checkpoint::as_select())
        .load(conn)
        .await?;
    if let Some(bad) = within.iter().find(|c| !key.verifies(c)) {
        return Ok(broken(
            bad.seq,
            "the checkpoint's signature does not verify with this key",
        ));
    }
    let at: BTreeMap<i64, Vec<u8>> = within.iter().map(|c| (c.seq, c.hash.clone())).collect();
    let rows = fetch(conn, tenant, from, last - from + 1).await?;
    let (prev, anchored) = match (&anchor, wanted) {
        (Some(a), _) => (
            a.hash.clone(),
            Anchor::Checkpoint {
                seq: a.seq,
                signed_at: a.signed_at,
            },
        ),
        (None, 1) => (GENESIS.to_vec(), Anchor::Genesis),
        // Unanchored: the first entry's own link is the start; a missing first entry is
        // still found, as the numbering starts at `from`.
        (None, _) => (
            <[_]>::first(&rows)
                .map(|r| r.13.clone())
                .unwrap_or_default(),
            Anchor::Unanchored,
        ),
    };
    let count = rows.len() as i64;
    let tenant_owned = tenant.clone();
    let checked =
        tokio::task::spawn_blocking(move || check_chunk(rows, &tenant_owned, from, prev, &at))
            .await;
    match checked {
        Ok(Ok(_)) => {}
        Ok(Err(b)) => return Ok(Err(b)),
        Err(_) => return Ok(broken(from, "the verifier's worker thread failed")),
    }
    if count < last - from + 1 {
        return Ok(broken(from + count, "the entry is missing"));
    }
    Ok(Ok(RecentVerified {
        from,
        to: last,
        anchor: anchored,
        checkpoints: within.len(),
        key_id,
    }))
}

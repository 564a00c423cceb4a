//! Signed checkpoints: Ed25519 over (tenant, seq, hash, time).
//!
//! The hash chain shows a changed or removed entry, but not a log whose last entries were cut
//! off together with the head. A checkpoint fixes a (seq, hash) pair under a key the database
//! does not hold: the signing key is derived from the master key, so whoever can rewrite the
//! tables still cannot sign a shorter log.
//!
//! [`Checkpointer::run_once`] signs each tenant's every 1,000th entry, and its head when the
//! log moved and the last checkpoint is at least 60 seconds old. It reads committed rows only
//! and takes no lock that appends wait on.

use std::time::Duration;

use diesel::prelude::*;
use diesel::sql_types::{Bytea, Int8, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use keys::MasterKey;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use time::OffsetDateTime;

use db::schema::{audit_checkpoints, audit_log};

use crate::entry::{timestamp, to_micros};

/// A checkpoint at every this many entries.
pub const EVERY_ENTRIES: i64 = 1_000;

/// And at the head, when the log moved, at least this often.
pub const EVERY: Duration = Duration::from_secs(60);

/// The signing key. Its `Debug` shows the key id only.
pub struct CheckpointKey {
    pair: Ed25519KeyPair,
    public: PublicKey,
}

impl std::fmt::Debug for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CheckpointKey({})", self.public.key_id)
    }
}

/// The key that checks checkpoints: derived from the master key, or given by an auditor as
/// hex (`dpsctl audit public-key` prints it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    bytes: [u8; 32],
    /// The first 8 bytes of SHA-256 over the key, in hex.
    pub key_id: String,
}

impl PublicKey {
    fn new(bytes: [u8; 32]) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
        PublicKey {
            bytes,
            key_id: hex::encode(&digest.as_ref()[..8]),
        }
    }

    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes: [u8; 32] = hex::decode(text.trim()).ok()?.try_into().ok()?;
        Some(PublicKey::new(bytes))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.bytes)
    }

    /// Whether `signature` is this key's over the checkpoint.
    pub fn verifies(&self, checkpoint: &Checkpoint) -> bool {
        UnparsedPublicKey::new(&ED25519, &self.bytes)
            .verify(&checkpoint.message(), &checkpoint.signature)
            .is_ok()
    }
}

impl CheckpointKey {
    /// The service's checkpoint key, derived from the master key.
    pub fn from_master(master: &MasterKey) -> Self {
        let seed = master.derive(b"audit-checkpoint-ed25519");
        // A 32-byte seed is always a valid Ed25519 private key.
        #[expect(clippy::expect_used, reason = "any 32 bytes are an Ed25519 seed")]
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).expect("32-byte seed");
        let mut public = [0u8; 32];
        public.copy_from_slice(pair.public_key().as_ref());
        CheckpointKey {
            pair,
            public: PublicKey::new(public),
        }
    }

    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    fn sign(&self, tenant: &TenantId, seq: i64, hash: Vec<u8>, at: OffsetDateTime) -> Checkpoint {
        let mut checkpoint = Checkpoint {
            tenant_id: tenant.as_str().to_owned(),
            seq,
            hash,
            signed_at: to_micros(at),
            key_id: self.public.key_id.clone(),
            signature: Vec::new(),
        };
        checkpoint.signature = self.pair.sign(&checkpoint.message()).as_ref().to_vec();
        checkpoint
    }
}

/// A signed (seq, hash) of one tenant's log.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = audit_checkpoints)]
pub struct Checkpoint {
    pub tenant_id: String,
    pub seq: i64,
    pub hash: Vec<u8>,
    pub signed_at: OffsetDateTime,
    pub key_id: String,
    pub signature: Vec<u8>,
}

impl Checkpoint {
    /// What is signed: a versioned line per field, so no field can run into the next.
    fn message(&self) -> Vec<u8> {
        format!(
            "dps-audit-checkpoint/v1\ntenant:{}\nseq:{}\nhash:{}\ntime:{}\n",
            self.tenant_id,
            self.seq,
            hex::encode(&self.hash),
            timestamp(self.signed_at)
        )
        .into_bytes()
    }
}

/// A tenant whose log moved past its last checkpoint.
#[derive(QueryableByName)]
struct Due {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = Int8)]
    seq: i64,
    #[diesel(sql_type = Bytea)]
    hash: Vec<u8>,
    #[diesel(sql_type = Nullable<Int8>)]
    checkpoint_seq: Option<i64>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    checkpoint_at: Option<OffsetDateTime>,
}

const DUE_SQL: &str = "
SELECT h.tenant_id, h.seq, h.hash, c.seq AS checkpoint_seq, c.signed_at AS checkpoint_at
FROM audit_heads h
LEFT JOIN LATERAL (
    SELECT seq, signed_at FROM audit_checkpoints c
    WHERE c.tenant_id = h.tenant_id ORDER BY seq DESC LIMIT 1
) c ON true
WHERE h.seq > COALESCE(c.seq, 0)";

/// Signs what is due.
#[derive(Debug)]
pub struct Checkpointer {
    pub key: std::sync::Arc<CheckpointKey>,
}

impl Checkpointer {
    /// Signs every tenant's due checkpoints once; returns how many were written. Replicas may
    /// run this at the same time: a checkpoint already written by another is kept.
    pub async fn run_once(&self, conn: &mut AsyncPgConnection) -> QueryResult<usize> {
        let now = OffsetDateTime::now_utc();
        let due: Vec<Due> = diesel::sql_query(DUE_SQL).load(conn).await?;
        let mut written = 0;
        for tenant in due {
            let Ok(id) = tenant.tenant_id.parse::<TenantId>() else {
                continue;
            };
            let after = tenant.checkpoint_seq.unwrap_or(0);
            // Every 1,000th entry since the last checkpoint, from the stored hashes.
            let first = after / EVERY_ENTRIES + 1;
            let last = tenant.seq / EVERY_ENTRIES;
            let wanted: Vec<i64> = (first..=last).map(|k| k * EVERY_ENTRIES).collect();
            let mut checkpoints = Vec::new();
            for chunk in wanted.chunks(10_000) {
                let rows: Vec<(i64, Vec<u8>)> = audit_log::table
                    .filter(audit_log::tenant_id.eq(id.as_str()))
                    .filter(audit_log::seq.eq_any(chunk))
                    .select((audit_log::seq, audit_log::hash))
                    .order(audit_log::seq)
                    .load(conn)
                    .await?;
                checkpoints.extend(
                    rows.into_iter()
                        .map(|(seq, hash)| self.key.sign(&id, seq, hash, now)),
                );
            }
            let stale = tenant.checkpoint_at.is_none_or(|at| now - at >= EVERY);
            let head_covered = checkpoints.last().is_some_and(|c| c.seq == tenant.seq);
            if stale && !head_covered {
                checkpoints.push(self.key.sign(&id, tenant.seq, tenant.hash, now));
            }
            for chunk in checkpoints.chunks(5_000) {
                written += diesel::insert_into(audit_checkpoints::table)
                    .values(
                        chunk
                            .iter()
                            .map(|c| {
                                (
                                    audit_checkpoints::tenant_id.eq(&c.tenant_id),
                                    audit_checkpoints::seq.eq(c.seq),
                                    audit_checkpoints::hash.eq(&c.hash),
                                    audit_checkpoints::signed_at.eq(c.signed_at),
                                    audit_checkpoints::key_id.eq(&c.key_id),
                                    audit_checkpoints::signature.eq(&c.signature),
                                )
                            })
                            .collect::<Vec<_>>(),
                    )
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
            }
        }
        Ok(written)
    }

    /// Runs [`run_once`](Self::run_once) every second until the process ends.
    pub fn spawn(self, pool: db::Pool) {
        drop(tokio::spawn(async move {
            loop {
                match pool.get().await {
                    Ok(mut conn) => {
                        if let Err(e) = self.run_once(&mut conn).await {
                            tracing::warn!(error = %e, "audit checkpoints could not be written");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "audit checkpointer has no connection"),
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }));
    }
}

/// A tenant's checkpoints, in seq order.
pub async fn checkpoints(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> QueryResult<Vec<Checkpoint>> {
    audit_checkpoints::table
        .filter(audit_checkpoints::tenant_id.eq(tenant.as_str()))
        .order(audit_checkpoints::seq)
        .select(Checkpoint::as_select())
        .load(conn)
        .await
}

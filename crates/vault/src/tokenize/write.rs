//! Writing a prepared batch: one set-based insert, then, only for what collided, lookups of the
//! existing entries (by lookup key, or by fingerprint for surrogates) and fresh surrogates; and
//! the dry run's preview, which writes nothing.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::sql_types::{Array, Bytea, Int4, Int8, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use keys::{KeyRing, NONCE_LEN, TenantKeys};
use ring::rand::{SecureRandom as _, SystemRandom};
use time::OffsetDateTime;
use tokenize_core::Mode;
use uuid::Uuid;

use super::prepare::Pending;
use crate::VaultError;
use crate::policies::StoredPolicy;
use crate::value::{ValueAad, value_aad};

/// Random bytes each written row takes: a nonce and the random part of its token id.
const RANDOM_PER_ROW: usize = NONCE_LEN + 10;

/// How many times a surrogate that collided with an existing token is drawn again.
const SURROGATE_ATTEMPTS: usize = 8;

/// From this many rows a first round inserts plainly in a savepoint (see `write`). Below it the
/// savepoint's two round trips cost more than speculative insertion's extra probes, and the
/// rows go straight to `ON CONFLICT DO NOTHING`.
const PLAIN_INSERT_MIN_ROWS: usize = 32;

/// What happened to one prepared item.
#[derive(Debug, Clone)]
pub(super) enum Written {
    /// Written or found. On a dry run `token` is null when it cannot be known, and
    /// `token_id` null unless the entry exists.
    Token {
        token: Option<String>,
        token_id: Option<Uuid>,
    },
    /// The value's deterministic or format-preserving entry is revoked.
    Revoked,
    /// Every surrogate drawn collided with an existing token.
    NoSurrogate,
}

/// What happened to each item, by its index in the request: a vector, not a map, since
/// the indexes are the request's positions.
#[derive(Debug, Default)]
pub(super) struct Outcomes(Vec<Option<Written>>);

impl Outcomes {
    fn set(&mut self, index: usize, written: Written) {
        if self.0.len() <= index {
            self.0.resize(index + 1, None);
        }
        self.0[index] = Some(written);
    }

    pub(super) fn get(&self, index: usize) -> Option<&Written> {
        self.0.get(index).and_then(Option::as_ref)
    }

    /// The outcome of item `index`, taken out.
    pub(super) fn take(&mut self, index: usize) -> Option<Written> {
        self.0.get_mut(index).and_then(Option::take)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Written> {
        self.0.iter().flatten()
    }
}

impl FromIterator<(usize, Written)> for Outcomes {
    fn from_iter<I: IntoIterator<Item = (usize, Written)>>(outcomes: I) -> Self {
        let mut out = Outcomes::default();
        for (index, written) in outcomes {
            out.set(index, written);
        }
        out
    }
}

#[derive(QueryableByName)]
struct Existing {
    #[diesel(sql_type = SqlUuid)]
    token_id: Uuid,
    #[diesel(sql_type = Text)]
    token: String,
    #[diesel(sql_type = Nullable<Bytea>)]
    fingerprint: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    lookup: Option<Uuid>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    revoked_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    expires_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Int4)]
    key_version: i32,
    #[diesel(sql_type = Bytea)]
    ciphertext: Vec<u8>,
}

impl Existing {
    /// Whether the entry holds `value` (a payload as [`crate::value::payload`] frames it).
    fn holds(
        &self,
        keys: &TenantKeys,
        tenant: &TenantId,
        value: &tokenize_core::Secret,
    ) -> Result<bool, VaultError> {
        // Another person's value, possibly: wiped once compared.
        let plain = zeroize::Zeroizing::new(
            keys.data_key(self.key_version)?
                .open(&value_aad(tenant, self.token_id), &self.ciphertext)?,
        );
        Ok(plain.as_slice() == value.expose().as_bytes())
    }
}

/// The keys that open every entry of `found`: `keys`, unless one was sealed under a version
/// newer than theirs (another process rotated, and these were cached before it), then the
/// tenant's keys loaded again.
async fn opening_keys(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    keys: &TenantKeys,
    found: &HashMap<Key, Existing>,
) -> Result<Option<std::sync::Arc<TenantKeys>>, VaultError> {
    let newest = found.values().map(|e| e.key_version).max().unwrap_or(0);
    if newest <= keys.current_version() {
        return Ok(None);
    }
    Ok(Some(keyring.tenant_at_least(conn, tenant, newest).await?))
}

/// Whether `p` may take entry `e` as its own. An enciphered format-preserving token names one
/// value only within its shape, and a phone's shape depends on how it parsed
/// ([`tokenize_core::surrogate_for`]), so the entry its token found is opened and compared;
/// when it holds another value, `p` becomes a surrogate of its own shape, found by its
/// fingerprint like every surrogate. Every other key names one value.
fn claim_or_divert(
    p: &mut Pending,
    e: &Existing,
    keys: &TenantKeys,
    tenant: &TenantId,
) -> Result<bool, VaultError> {
    if p.enciphered.is_none() || e.holds(keys, tenant, &p.value)? {
        return Ok(true);
    }
    divert(p, keys);
    Ok(false)
}

/// Makes an enciphered format-preserving item whose token names another value a surrogate of
/// its own shape.
fn divert(p: &mut Pending, keys: &TenantKeys) {
    let Some(normalized) = p.enciphered.take() else {
        return;
    };
    // Of the value as read, not only as written: two numbers written alike whose tokens
    // coincide must not meet again at one surrogate (see `fingerprint_as_read`).
    p.fingerprint = Some(tokenize_core::fingerprint_as_read(
        &keys.fingerprint,
        &normalized,
    ));
    p.surrogate = Some(tokenize_core::surrogate_for(&normalized));
    p.token = None;
    p.lookup = None;
}

/// What keeps one entry per value: the token's lookup key where the token is a function of the
/// value (deterministic, enciphered), the value's fingerprint where it is drawn (surrogates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Lookup(Uuid),
    Fingerprint([u8; 32]),
}

fn key_of(p: &Pending) -> Option<Key> {
    match (p.fingerprint, p.lookup) {
        (Some(f), _) => Some(Key::Fingerprint(f)),
        (None, Some(l)) => Some(Key::Lookup(l)),
        (None, None) => None,
    }
}

/// The existing entries of `keys`, found through the lookup and fingerprint indexes.
async fn existing(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    wanted: &[Key],
) -> Result<HashMap<Key, Existing>, VaultError> {
    let wanted: std::collections::HashSet<Key> = wanted.iter().copied().collect();
    let mut lookups = Vec::new();
    let mut fingerprints = Vec::new();
    for key in &wanted {
        match key {
            Key::Lookup(l) => lookups.push(*l),
            Key::Fingerprint(f) => fingerprints.push(f.to_vec()),
        }
    }
    if lookups.is_empty() && fingerprints.is_empty() {
        return Ok(HashMap::new());
    }
    // One index probe per key, whatever the statistics say (docs/decisions.md, "Batches of keys
    // are looked up one key at a time"): planned generically as `lookup = ANY($2) OR …`, a
    // table without statistics was read whole for every batch.
    let rows: Vec<Existing> = db::sql(
        "SELECT e.* FROM unnest($2::uuid[]) AS k(lookup)
          CROSS JOIN LATERAL (
                SELECT token_id, token, fingerprint, lookup, revoked_at, expires_at,
                       key_version, ciphertext
                  FROM vault_entries
                 WHERE lookup = k.lookup AND tenant_id = $1
                OFFSET 0) e
         UNION ALL
         SELECT e.* FROM unnest($3::bytea[]) AS k(fingerprint)
          CROSS JOIN LATERAL (
                SELECT token_id, token, fingerprint, lookup, revoked_at, expires_at,
                       key_version, ciphertext
                  FROM vault_entries
                 WHERE tenant_id = $1 AND fingerprint = k.fingerprint
                OFFSET 0) e",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&lookups)
    .bind::<Array<Bytea>, _>(&fingerprints)
    .load(conn)
    .await?;
    let mut found = HashMap::with_capacity(rows.len());
    for row in rows {
        let by_fingerprint = row
            .fingerprint
            .as_deref()
            .and_then(|f| <[u8; 32]>::try_from(f).ok())
            .map(Key::Fingerprint)
            .filter(|k| wanted.contains(k));
        let by_lookup = row.lookup.map(Key::Lookup).filter(|k| wanted.contains(k));
        if let Some(key) = by_fingerprint.or(by_lookup) {
            found.insert(key, row);
        }
    }
    Ok(found)
}

/// A dry run: the token a real call would give where it can be known (deterministic and
/// enciphered format-preserving tokens, and existing entries), and nothing written.
pub(super) async fn preview(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    keys: &TenantKeys,
    pending: &mut [Pending],
) -> Result<Outcomes, VaultError> {
    let wanted: Vec<Key> = pending.iter().filter_map(key_of).collect();
    let mut found = existing(conn, tenant, &wanted).await?;
    let fresh = opening_keys(conn, keyring, tenant, keys, &found).await?;
    let opening = fresh.as_deref().unwrap_or(keys);
    // A token that names another value: the item would take a surrogate, found by its
    // fingerprint if it has one already. So would the later of two items of the batch whose
    // enciphered tokens coincide.
    let mut diverted = Vec::new();
    let mut first_of: HashMap<Key, usize> = HashMap::new();
    for i in 0..pending.len() {
        let twin = key_of(&pending[i])
            .and_then(|k| first_of.get(&k).copied())
            .filter(|&at| {
                pending[i].enciphered.is_some()
                    && pending[at].value.expose() != pending[i].value.expose()
            });
        let p = &mut pending[i];
        let other = match key_of(p).and_then(|k| found.get(&k)) {
            Some(e) => !claim_or_divert(p, e, opening, tenant)?,
            None if twin.is_some() => {
                divert(p, keys);
                true
            }
            None => false,
        };
        match key_of(p) {
            Some(k) if other => diverted.push(k),
            Some(k) => {
                first_of.entry(k).or_insert(i);
            }
            None => {}
        }
    }
    if !diverted.is_empty() {
        found.extend(existing(conn, tenant, &diverted).await?);
    }
    Ok(pending
        .iter()
        .map(|p| {
            let known = key_of(p).and_then(|k| found.get(&k));
            let written = match known {
                Some(e) if e.revoked_at.is_some() => Written::Revoked,
                Some(e) => Written::Token {
                    token: Some(e.token.clone()),
                    token_id: Some(e.token_id),
                },
                None => Written::Token {
                    token: p
                        .token
                        .clone()
                        .filter(|_| p.mode != Mode::Randomized && p.surrogate.is_none()),
                    token_id: None,
                },
            };
            (p.index, written)
        })
        .collect())
}

#[derive(QueryableByName)]
struct Inserted {
    #[diesel(sql_type = SqlUuid)]
    token_id: Uuid,
}

/// Writes the batch: inserts it in one statement, then, for what conflicted, reuses the
/// existing entries found by fingerprint and draws surrogates again. Returns each item's
/// outcome and how many entries were inserted.
pub(super) async fn write(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    keys: &TenantKeys,
    stored: &StoredPolicy,
    rng: &SystemRandom,
    pending: &mut [Pending],
) -> Result<(Outcomes, usize), VaultError> {
    let mut out = Outcomes::default();
    // Entries inserted: what the monthly quota meters.
    let mut created = 0;
    let (key_version, data_key) = keys.current()?;
    let ttl = stored
        .policy
        .token_ttl_seconds
        .and_then(|t| i64::try_from(t).ok());
    let mut todo: Vec<usize> = (0..pending.len()).collect();
    for round in 0..=SURROGATE_ATTEMPTS {
        if todo.is_empty() {
            break;
        }
        // Entries that already exist for these values. The first round skips the lookup and
        // lets the insert find conflicts (new values are the common case, and the unique
        // index checks them anyway); later rounds look up only what conflicted.
        let found = if round == 0 {
            HashMap::new()
        } else {
            let wanted: Vec<Key> = todo.iter().filter_map(|i| key_of(&pending[*i])).collect();
            existing(conn, tenant, &wanted).await?
        };
        let fresh = opening_keys(conn, keyring, tenant, keys, &found).await?;
        let opening = fresh.as_deref().unwrap_or(keys);
        // Items sent to the next round unwritten: see the first check below.
        let mut deferred = Vec::new();
        let mut rows = Rows::with_capacity(todo.len());
        // Each key written this round: its entry's token id, and the item that claimed it.
        let mut claimed: HashMap<Key, (Uuid, usize)> = HashMap::with_capacity(todo.len());
        let mut waiting = Vec::new();
        // Existing entries whose token's time ran out: the value's token is theirs (it is a
        // function of the value, or its surrogate), so the tokenize makes them active again.
        let mut expired: Vec<Uuid> = Vec::new();
        let now = OffsetDateTime::now_utc();
        // One draw from the system generator for the round's nonces and token-id randomness,
        // instead of two system calls per item.
        let mut random = vec![0u8; todo.len() * RANDOM_PER_ROW];
        rng.fill(&mut random).map_err(|_| VaultError::Crypto)?;
        let mut random = random.chunks_exact(RANDOM_PER_ROW);
        let millis = u64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000)
            .unwrap_or(0);
        let mut aad = ValueAad::new(tenant);
        for &i in &todo {
            if let Some(k) = key_of(&pending[i])
                && let Some(&(_, at)) = claimed.get(&k)
                && pending[i].enciphered.is_some()
                && pending[at].value.expose() != pending[i].value.expose()
            {
                // Two values of one batch whose enciphered tokens coincide. The earlier one's
                // claim is not checked against the table yet (an entry of either value may
                // exist), so this one waits for the next round, which compares it with
                // whatever entry then holds the token (see `claim_or_divert`).
                deferred.push(i);
                continue;
            }
            let p = &mut pending[i];
            if let Some(e) = key_of(p).and_then(|k| found.get(&k))
                && claim_or_divert(p, e, opening, tenant)?
            {
                // A revoked token stays revoked: the value does not get it back.
                let written = if e.revoked_at.is_some() {
                    Written::Revoked
                } else {
                    if e.expires_at.is_some_and(|at| at <= now) {
                        expired.push(e.token_id);
                    }
                    Written::Token {
                        token: Some(e.token.clone()),
                        token_id: Some(e.token_id),
                    }
                };
                out.set(p.index, written);
                continue;
            }
            if let Some(k) = key_of(p)
                && let Some(&(first, _)) = claimed.get(&k)
            {
                // The same value twice in one batch: one entry.
                waiting.push((i, first));
                continue;
            }
            if let Some(s) = &p.surrogate {
                let token = s.draw(rng).map_err(|_| VaultError::Crypto)?;
                p.lookup = Some(tokenize_core::lookup(
                    tenant.as_str(),
                    p.pii_type.as_str(),
                    &token,
                ));
                p.token = Some(token);
            }
            let Some(draw) = random.next() else {
                return Err(VaultError::Crypto);
            };
            let (nonce, id_bits) = draw.split_at(NONCE_LEN);
            let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| VaultError::Crypto)?;
            let mut id_bits: [u8; 10] = id_bits.try_into().map_err(|_| VaultError::Crypto)?;
            // UUIDv7's 12-bit counter field holds the item's position, so that a batch's ids
            // sort in item order within their millisecond; 62 random bits follow.
            let seq = u16::try_from(rows.token_ids.len()).unwrap_or(u16::MAX);
            id_bits[0] = (seq >> 8) as u8 & 0x0F;
            id_bits[1] = (seq & 0xFF) as u8;
            let token_id = uuid::Builder::from_unix_timestamp_millis(millis, &id_bits).into_uuid();
            if p.mode == Mode::Randomized {
                // Derived from the id, so the primary key finds it (see `TokenIdCipher`).
                p.token = Some(keys.randomized.token(token_id.as_bytes()));
            }
            // Moved into the row, and back out of it after the insert (see below).
            let Some(token) = p.token.take() else {
                continue;
            };
            if let Some(k) = key_of(p) {
                claimed.insert(k, (token_id, i));
            }
            let sealed =
                data_key.seal_with_nonce(nonce, aad.of(token_id), p.value.expose().as_bytes())?;
            rows.push(i, token_id, token, p, sealed);
        }
        if !expired.is_empty() {
            renew(conn, tenant, stored, ttl, &expired).await?;
        }
        let batch: Vec<(usize, Uuid)> = rows
            .pending_index
            .iter()
            .copied()
            .zip(rows.token_ids.iter().copied())
            .collect();
        // New values are the common case: a plain insert in a savepoint costs Postgres less
        // than ON CONFLICT's speculative insertion. Any conflict undoes it, and the batch goes
        // the careful way.
        let all_inserted = round == 0
            && batch.len() >= PLAIN_INSERT_MIN_ROWS
            && match conn
                .transaction(async |conn| {
                    rows.insert(conn, tenant, stored, key_version, ttl, false)
                        .await
                })
                .await
            {
                Ok(_) => true,
                Err(VaultError::Database(diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::UniqueViolation,
                    _,
                ))) => false,
                Err(e) => return Err(e),
            };
        // The ids this round inserted; `None` when it inserted every row.
        let inserted: Option<std::collections::HashSet<Uuid>> = if batch.is_empty() || all_inserted
        {
            None
        } else {
            Some(
                rows.insert(conn, tenant, stored, key_version, ttl, true)
                    .await?
                    .into_iter()
                    .map(|r| r.token_id)
                    .collect(),
            )
        };
        created += inserted.as_ref().map_or(batch.len(), |set| set.len());
        let was_inserted = |id: &Uuid| inserted.as_ref().is_none_or(|set| set.contains(id));
        let mut retry = deferred;
        for ((i, token_id), token) in batch.into_iter().zip(std::mem::take(&mut rows.tokens)) {
            if was_inserted(&token_id) {
                out.set(
                    pending[i].index,
                    Written::Token {
                        token: Some(token),
                        token_id: Some(token_id),
                    },
                );
            } else {
                // A concurrent writer stored the same value first (found by fingerprint next
                // round), or a surrogate collided with an existing token (drawn again). The
                // item keeps its token for the next round.
                pending[i].token = Some(token);
                retry.push(i);
            }
        }
        for (i, first) in waiting {
            if was_inserted(&first) {
                let token = pending[i].token.clone().or_else(|| {
                    out.iter().find_map(|w| match w {
                        Written::Token { token, token_id } if *token_id == Some(first) => {
                            token.clone()
                        }
                        _ => None,
                    })
                });
                out.set(
                    pending[i].index,
                    Written::Token {
                        token,
                        token_id: Some(first),
                    },
                );
            } else {
                retry.push(i);
            }
        }
        todo = retry;
    }
    for i in todo {
        out.set(pending[i].index, Written::NoSurrogate);
    }
    Ok((out, created))
}

/// Makes expired entries active again under the policy's TTL now (none: they stay active), as
/// if the value were tokenized for the first time. A revoked entry is never renewed.
async fn renew(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    stored: &StoredPolicy,
    ttl: Option<i64>,
    token_ids: &[Uuid],
) -> Result<(), VaultError> {
    db::sql(
        "UPDATE vault_entries v
            SET expires_at = CASE WHEN $3::bigint IS NULL THEN NULL
                                  ELSE now() + make_interval(secs => $3::bigint) END,
                policy_id = $4, policy_version = $5
           FROM unnest($2::uuid[]) AS k(token_id)
          WHERE v.tenant_id = $1 AND v.token_id = k.token_id
            AND v.revoked_at IS NULL AND v.expires_at <= now()",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(token_ids)
    .bind::<Nullable<Int8>, _>(ttl)
    .bind::<SqlUuid, _>(stored.policy_id.as_uuid())
    .bind::<Int4, _>(stored.version)
    .execute(conn)
    .await?;
    Ok(())
}

macro_rules! insert_rows {
    () => {
        "INSERT INTO vault_entries (tenant_id, token_id, token, pii_type, \
         mode, policy_id, policy_version, fingerprint, key_version, ciphertext, expires_at, \
         lookup) \
         SELECT $1, u.token_id, u.token, u.pii_type, u.mode, $2, $3, u.fingerprint, $4, \
         u.ciphertext, CASE WHEN $5::bigint IS NULL THEN NULL \
         ELSE now() + make_interval(secs => $5::bigint) END, u.lookup \
         FROM unnest($6::uuid[], $7::text[], $8::text[], $9::text[], $10::bytea[], \
         $11::bytea[], $12::uuid[]) \
         AS u(token_id, token, pii_type, mode, fingerprint, ciphertext, lookup)"
    };
}

/// The statement a batch's new entries are written with: `$1` the tenant, `$2` and `$3` the
/// policy and its version, `$4` the key version, `$5` the TTL in seconds (or null), `$6` to
/// `$12` the arrays of token ids, tokens, types, modes, fingerprints, ciphertexts and lookup
/// keys. A first round sends it as it is, in a savepoint; later rounds add `ON CONFLICT DO
/// NOTHING RETURNING token_id`. Public so that the tokenize benchmark replays this very
/// statement without the service.
pub const INSERT_ROWS: &str = insert_rows!();

/// Column arrays for one `INSERT ... SELECT FROM unnest(...)`.
struct Rows {
    pending_index: Vec<usize>,
    token_ids: Vec<Uuid>,
    tokens: Vec<String>,
    pii_types: Vec<&'static str>,
    modes: Vec<&'static str>,
    fingerprints: Vec<Option<Vec<u8>>>,
    lookups: Vec<Option<Uuid>>,
    ciphertexts: Vec<Vec<u8>>,
}

impl Rows {
    /// Room for `n` rows, so that a batch's arrays never grow by copying.
    fn with_capacity(n: usize) -> Self {
        Self {
            pending_index: Vec::with_capacity(n),
            token_ids: Vec::with_capacity(n),
            tokens: Vec::with_capacity(n),
            pii_types: Vec::with_capacity(n),
            modes: Vec::with_capacity(n),
            fingerprints: Vec::with_capacity(n),
            lookups: Vec::with_capacity(n),
            ciphertexts: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, at: usize, token_id: Uuid, token: String, p: &Pending, sealed: Vec<u8>) {
        self.pending_index.push(at);
        self.token_ids.push(token_id);
        self.tokens.push(token);
        self.pii_types.push(p.pii_type.as_str());
        self.modes.push(p.mode.as_str());
        self.fingerprints.push(p.fingerprint.map(|f| f.to_vec()));
        self.lookups.push(p.lookup);
        self.ciphertexts.push(sealed);
    }

    /// Inserts the rows. With `on_conflict`, rows that collide are skipped and the ids of the
    /// inserted ones come back; without, a collision fails the whole statement.
    async fn insert(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        stored: &StoredPolicy,
        key_version: i32,
        ttl: Option<i64>,
        on_conflict: bool,
    ) -> Result<Vec<Inserted>, VaultError> {
        let sql: &'static str = if on_conflict {
            concat!(insert_rows!(), " ON CONFLICT DO NOTHING RETURNING token_id")
        } else {
            INSERT_ROWS
        };
        let query = db::sql(sql)
            .bind::<Text, _>(tenant.as_str())
            .bind::<SqlUuid, _>(stored.policy_id.as_uuid())
            .bind::<Int4, _>(stored.version)
            .bind::<Int4, _>(key_version)
            .bind::<Nullable<Int8>, _>(ttl)
            .bind::<Array<SqlUuid>, _>(&self.token_ids)
            .bind::<Array<Text>, _>(&self.tokens)
            .bind::<Array<Text>, _>(&self.pii_types)
            .bind::<Array<Text>, _>(&self.modes)
            .bind::<Array<Nullable<Bytea>>, _>(&self.fingerprints)
            .bind::<Array<Bytea>, _>(&self.ciphertexts)
            .bind::<Array<Nullable<SqlUuid>>, _>(&self.lookups);
        if on_conflict {
            Ok(query.load(conn).await?)
        } else {
            query.execute(conn).await?;
            Ok(Vec::new())
        }
    }
}

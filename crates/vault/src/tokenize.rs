//! `POST /tokenize`: a batch of values becomes tokens and encrypted vault entries.
//!
//! The batch is prepared in memory first (parse, normalize, compute tokens and fingerprints,
//! seal values), then written in one transaction with set-based statements: one lookup of
//! existing entries by fingerprint, one multi-row `INSERT ... SELECT FROM unnest(...)`, and,
//! only when something collided, a few rounds of re-lookup and re-insert.

use std::collections::HashMap;

use api_types::tokens::{
    FailedItem, Fallback, ItemError, TokenizeItem, TokenizeRequest, TokenizeResponse,
    TokenizeResult, TokenizedItem,
};
use diesel::QueryableByName;
use diesel::sql_types::{Array, Bytea, Int4, Int8, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use ring::rand::{SecureRandom as _, SystemRandom};
use time::OffsetDateTime;
use tokenize_core::{
    FailureMode, FormatPreserving, ItemCode, Mode, Normalized, PiiType, Policy, Secret, Surrogate,
    ValueError, deterministic_token, fingerprint, fingerprint_as_written, format_preserving,
    normalize, randomized_token,
};
use uuid::Uuid;

use ids::TenantId;

use crate::VaultError;
use crate::policies::{self, StoredPolicy};
use crate::value::{payload, value_aad};
use keys::{KeyRing, NONCE_LEN, TenantKeys};

/// The most items one request may carry.
pub const MAX_ITEMS: usize = 1000;

/// Random bytes each written row takes: a nonce and the random part of its token id.
const RANDOM_PER_ROW: usize = NONCE_LEN + 10;

/// How many times a surrogate that collided with an existing token is drawn again.
const SURROGATE_ATTEMPTS: usize = 8;

/// How a batch treats failed items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    /// Write the items that succeed; report the others.
    BestEffort,
    /// Write nothing when any item fails.
    AllOrNothing,
}

impl BatchMode {
    fn parse(raw: Option<&str>) -> Result<Self, VaultError> {
        match raw {
            None | Some("BEST_EFFORT") => Ok(BatchMode::BestEffort),
            Some("ALL_OR_NOTHING") => Ok(BatchMode::AllOrNothing),
            Some(_) => Err(VaultError::InvalidRequest(
                "batch_mode must be BEST_EFFORT or ALL_OR_NOTHING",
            )),
        }
    }
}

/// What a tokenize call produced.
#[derive(Debug)]
pub enum Outcome {
    /// Processed now. `body` is the serialized response, as sent and as stored for an
    /// idempotency key.
    Done {
        response: TokenizeResponse,
        body: Vec<u8>,
    },
    /// An ALL_OR_NOTHING batch had a failed item: nothing was written, and the caller answers
    /// 400 with the first failure's code and every result.
    Rejected {
        first: ItemError,
        response: TokenizeResponse,
    },
    /// The first response to this idempotency key, byte for byte.
    Replayed { body: Vec<u8> },
}

/// How long a response is kept for its idempotency key.
const IDEMPOTENCY_HOURS: i32 = 24;

/// Tokenizes a batch for `tenant`, honouring its idempotency key.
///
/// With a key (and not a dry run), the key is claimed by inserting its row in the transaction
/// that writes the batch. A concurrent request with the same key waits on that row and then
/// replays what the first stored; a retry after an error or a rejected batch finds no row and
/// runs again. The same key with a different body is refused.
pub async fn tokenize(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    request: &TokenizeRequest,
    dry_run: bool,
) -> Result<Outcome, VaultError> {
    let key = match (&request.idempotency_key, dry_run) {
        (Some(key), false) => key,
        _ => return run(conn, keyring, tenant, request, dry_run).await,
    };
    if key.is_empty() || key.chars().count() > 256 {
        return Err(VaultError::InvalidRequest(
            "idempotency_key must be 1 to 256 characters",
        ));
    }
    let canonical = serde_json::to_vec(request)
        .map_err(|_| VaultError::InvalidRequest("unreadable request"))?;
    let hash = ring::digest::digest(&ring::digest::SHA256, &canonical)
        .as_ref()
        .to_vec();
    let attempt = conn
        .transaction(async |conn| {
            diesel::sql_query(
                "DELETE FROM idempotency_keys WHERE tenant_id = $1 AND key = $2 \
                 AND created_at < now() - make_interval(hours => $3)",
            )
            .bind::<Text, _>(tenant.as_str())
            .bind::<Text, _>(key)
            .bind::<Int4, _>(IDEMPOTENCY_HOURS)
            .execute(conn)
            .await?;
            let claimed = diesel::sql_query(
                "INSERT INTO idempotency_keys (tenant_id, key, request_hash, status, response) \
                 VALUES ($1, $2, $3, 0, '') ON CONFLICT DO NOTHING",
            )
            .bind::<Text, _>(tenant.as_str())
            .bind::<Text, _>(key)
            .bind::<Bytea, _>(&hash)
            .execute(conn)
            .await?;
            if claimed == 0 {
                let stored: Stored = diesel::sql_query(
                    "SELECT request_hash, response FROM idempotency_keys \
                     WHERE tenant_id = $1 AND key = $2",
                )
                .bind::<Text, _>(tenant.as_str())
                .bind::<Text, _>(key)
                .get_result(conn)
                .await?;
                if stored.request_hash != hash {
                    return Err(Rollback::Vault(VaultError::IdempotencyKeyReused));
                }
                return Ok(Outcome::Replayed {
                    body: stored.response,
                });
            }
            match run(conn, keyring, tenant, request, dry_run).await? {
                Outcome::Done { response, body } => {
                    diesel::sql_query(
                        "UPDATE idempotency_keys SET status = 200, response = $3 \
                         WHERE tenant_id = $1 AND key = $2",
                    )
                    .bind::<Text, _>(tenant.as_str())
                    .bind::<Text, _>(key)
                    .bind::<Bytea, _>(&body)
                    .execute(conn)
                    .await?;
                    Ok(Outcome::Done { response, body })
                }
                // Not kept: the key is released with the rollback, and a retry runs again.
                rejected => Err(Rollback::With(rejected)),
            }
        })
        .await;
    match attempt {
        Ok(outcome) | Err(Rollback::With(outcome)) => Ok(outcome),
        Err(Rollback::Vault(e)) => Err(e),
    }
}

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Bytea)]
    request_hash: Vec<u8>,
    #[diesel(sql_type = Bytea)]
    response: Vec<u8>,
}

/// An item ready to be written.
struct Pending {
    index: usize,
    pii_type: PiiType,
    mode: Mode,
    token: Option<String>,
    fingerprint: Option<[u8; 32]>,
    surrogate: Option<Surrogate>,
    value: Secret,
    fallback: Option<Fallback>,
}

fn failed(index: usize, code: &str, message: &str) -> TokenizeResult {
    TokenizeResult::Failed(FailedItem {
        index,
        status: "FAILED".into(),
        error: ItemError {
            code: code.into(),
            message: message.into(),
        },
    })
}

/// Why an item cannot be handled under its rule; fail_open turns these into a fallback.
struct RuleFailure {
    code: ItemCode,
    reason: &'static str,
}

impl From<ValueError> for RuleFailure {
    fn from(e: ValueError) -> Self {
        Self {
            code: e.code,
            reason: e.reason,
        }
    }
}

enum Prepared {
    Ready(Pending),
    Failed(TokenizeResult),
}

fn prepare(
    index: usize,
    item: &TokenizeItem,
    stored: &StoredPolicy,
    keys: &TenantKeys,
    rng: &SystemRandom,
) -> Result<Prepared, VaultError> {
    let policy: &Policy = &stored.policy;
    let pii_type = match item.pii_type.parse::<PiiType>() {
        Ok(t) => t,
        Err(e) => return Ok(Prepared::Failed(failed(index, e.code.as_str(), e.reason))),
    };
    if item.value.trim().is_empty() {
        return Ok(Prepared::Failed(failed(
            index,
            ItemCode::EmptyValue.as_str(),
            "the value is empty",
        )));
    }
    let requested_mode = match item.mode.as_deref().map(str::parse::<Mode>) {
        None => None,
        Some(Ok(mode)) => Some(mode),
        Some(Err(())) => {
            return Ok(Prepared::Failed(failed(
                index,
                "INVALID_MODE",
                "mode must be deterministic, randomized or format_preserving",
            )));
        }
    };
    let attempt = (|| -> Result<Pending, RuleFailure> {
        let rule = policy.type_rules.get(&pii_type).ok_or(RuleFailure {
            code: ItemCode::NoRuleForType,
            reason: "the policy has no rule for this pii_type",
        })?;
        let value: Normalized = normalize(pii_type, &item.value, &policy.normalize_options())?;
        let mode = requested_mode.unwrap_or(rule.mode);
        let scope = Policy::scope_key(rule, &stored.policy_id.to_string());
        let mut pending = Pending {
            index,
            pii_type,
            mode,
            token: None,
            fingerprint: None,
            surrogate: None,
            value: payload(value.value.expose(), value.currency.as_deref()),
            fallback: None,
        };
        match mode {
            Mode::Deterministic => {
                pending.token = Some(deterministic_token(&keys.mac, &scope, &value));
                pending.fingerprint = Some(fingerprint(&keys.fingerprint, mode, &scope, &value));
            }
            Mode::Randomized => {}
            Mode::FormatPreserving => {
                pending.fingerprint = Some(fingerprint_as_written(&keys.fingerprint, &value));
                match format_preserving(&keys.fpe, &value) {
                    FormatPreserving::Enciphered(token) => pending.token = Some(token),
                    FormatPreserving::Surrogate(s) => {
                        if s.space() <= 1 {
                            return Err(RuleFailure {
                                code: ItemCode::SurrogateExhausted,
                                reason: "the value's shape leaves no room for a surrogate",
                            });
                        }
                        pending.surrogate = Some(s);
                    }
                }
            }
        }
        Ok(pending)
    })();
    match attempt {
        Ok(pending) => Ok(Prepared::Ready(pending)),
        Err(failure) if failure.code == ItemCode::EmptyValue => Ok(Prepared::Failed(failed(
            index,
            failure.code.as_str(),
            failure.reason,
        ))),
        Err(failure) => match policy.failure_mode {
            FailureMode::FailClosed => Ok(Prepared::Failed(failed(
                index,
                failure.code.as_str(),
                failure.reason,
            ))),
            // Still protected: the raw value, randomized, with the fallback stated.
            FailureMode::FailOpen => Ok(Prepared::Ready(Pending {
                index,
                pii_type,
                mode: Mode::Randomized,
                token: Some(randomized_token(rng).map_err(|_| VaultError::Crypto)?),
                fingerprint: None,
                surrogate: None,
                value: payload(item.value.trim(), None),
                fallback: Some(Fallback {
                    mode: Mode::Randomized.as_str().into(),
                    reason_code: failure.code.as_str().into(),
                    reason: failure.reason.into(),
                }),
            })),
        },
    }
}

/// Tokenizes a batch, without regard to its idempotency key.
async fn run(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    request: &TokenizeRequest,
    dry_run: bool,
) -> Result<Outcome, VaultError> {
    if request.items.is_empty() || request.items.len() > MAX_ITEMS {
        return Err(VaultError::InvalidRequest(
            "items must hold 1 to 1000 entries",
        ));
    }
    if request
        .idempotency_key
        .as_deref()
        .is_some_and(|k| k.is_empty() || k.chars().count() > 256)
    {
        return Err(VaultError::InvalidRequest(
            "idempotency_key must be 1 to 256 characters",
        ));
    }
    let batch_mode = BatchMode::parse(request.batch_mode.as_deref())?;
    let stored = policies::get(conn, tenant, &request.policy_id).await?;
    let keys = keyring.tenant(conn, tenant).await?;
    let rng = SystemRandom::new();

    let mut results: Vec<Option<TokenizeResult>> = vec![None; request.items.len()];
    let mut pending = Vec::with_capacity(request.items.len());
    for (index, item) in request.items.iter().enumerate() {
        match prepare(index, item, &stored, &keys, &rng)? {
            Prepared::Ready(p) => pending.push(p),
            Prepared::Failed(result) => results[index] = Some(result),
        }
    }
    let first_failure = first_failure_of(results.iter().flatten());
    let written = if first_failure.is_some() && batch_mode == BatchMode::AllOrNothing {
        HashMap::new()
    } else if dry_run {
        preview(conn, tenant, &pending).await?
    } else {
        let attempt = conn
            .transaction(async |conn| {
                let quota = limits::lock_monthly_quota(conn, tenant).await?;
                let written = write(conn, tenant, &keys, &stored, &rng, &mut pending).await?;
                if let Some(quota) = quota
                    && limits::tokens_created_this_month(conn, tenant).await? > quota
                {
                    // Over the quota with this batch: none of it is written.
                    return Err(Rollback::Vault(VaultError::QuotaExceeded));
                }
                let complete = pending
                    .iter()
                    .all(|p| matches!(written.get(&p.index), Some(Written::Token { .. })));
                if batch_mode == BatchMode::AllOrNothing && !complete {
                    // Roll back what this batch wrote, and report why.
                    return Err(Rollback::With(written));
                }
                Ok(written)
            })
            .await;
        match attempt {
            Ok(written) | Err(Rollback::With(written)) => written,
            Err(Rollback::Vault(e)) => return Err(e),
        }
    };
    for p in &pending {
        results[p.index] = Some(match written.get(&p.index) {
            Some(Written::Token { token, token_id }) => {
                tokenized(p, token.clone(), *token_id, dry_run)
            }
            Some(Written::Revoked) => failed(
                p.index,
                "TOKEN_REVOKED",
                "this value's token was revoked and is not issued again",
            ),
            Some(Written::NoSurrogate) => failed(
                p.index,
                ItemCode::SurrogateExhausted.as_str(),
                "no unused surrogate of the value's shape could be found",
            ),
            None => skipped(p.index),
        });
    }
    let mut results: Vec<TokenizeResult> = results.into_iter().flatten().collect();
    let rejected = match batch_mode {
        BatchMode::AllOrNothing => first_failure_of(results.iter()),
        BatchMode::BestEffort => None,
    };
    if rejected.is_some() {
        // Nothing was written: no item may look tokenized.
        for r in &mut results {
            if let TokenizeResult::Tokenized(t) = r {
                *r = skipped(t.index);
            }
        }
    }
    let success_count = results
        .iter()
        .filter(|r| matches!(r, TokenizeResult::Tokenized(_)))
        .count();
    if !dry_run && success_count > 0 {
        // Metering must not fail a tokenization that is already committed.
        if let Err(e) =
            limits::record_tokenize(conn, tenant, i64::try_from(success_count).unwrap_or(0)).await
        {
            tracing::warn!(error = %e, "cannot record tokenize usage");
        }
    }
    let response = TokenizeResponse {
        failure_count: results.len() - success_count,
        success_count,
        results,
        batch_policy_version: stored.version,
        trace_id: Uuid::new_v4().to_string(),
    };
    Ok(match rejected {
        Some(first) => Outcome::Rejected { first, response },
        None => {
            let body = serde_json::to_vec(&response).map_err(|_| VaultError::Crypto)?;
            Outcome::Done { response, body }
        }
    })
}

fn first_failure_of<'a>(results: impl Iterator<Item = &'a TokenizeResult>) -> Option<ItemError> {
    results
        .filter_map(|r| match r {
            TokenizeResult::Failed(f) if f.status == "FAILED" => Some(f.error.clone()),
            _ => None,
        })
        .next()
}

/// An item of a rejected ALL_OR_NOTHING batch that did not fail itself.
fn skipped(index: usize) -> TokenizeResult {
    TokenizeResult::Failed(FailedItem {
        index,
        status: "SKIPPED".into(),
        error: ItemError {
            code: "BATCH_REJECTED".into(),
            message: "not written: another item of this ALL_OR_NOTHING batch failed".into(),
        },
    })
}

/// What happened to one prepared item.
#[derive(Debug, Clone)]
enum Written {
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

/// Why a transaction rolled back: an error, or on purpose with a result to answer (an
/// ALL_OR_NOTHING batch that could not be written whole; a rejected batch under an
/// idempotency key, whose key the rollback releases).
enum Rollback<T> {
    Vault(VaultError),
    With(T),
}

impl<T> From<diesel::result::Error> for Rollback<T> {
    fn from(e: diesel::result::Error) -> Self {
        Rollback::Vault(e.into())
    }
}

impl<T> From<VaultError> for Rollback<T> {
    fn from(e: VaultError) -> Self {
        Rollback::Vault(e)
    }
}

fn tokenized(
    p: &Pending,
    token: Option<String>,
    token_id: Option<Uuid>,
    dry_run: bool,
) -> TokenizeResult {
    TokenizeResult::Tokenized(TokenizedItem {
        index: p.index,
        token,
        token_id: if dry_run {
            None
        } else {
            token_id.map(|id| id.to_string())
        },
        status: "TOKENIZED".into(),
        mode: p.mode.as_str().into(),
        fallback: p.fallback.clone(),
    })
}

#[derive(QueryableByName)]
struct Existing {
    #[diesel(sql_type = SqlUuid)]
    token_id: Uuid,
    #[diesel(sql_type = Text)]
    token: String,
    #[diesel(sql_type = Bytea)]
    fingerprint: Vec<u8>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    revoked_at: Option<OffsetDateTime>,
}

async fn existing(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    fingerprints: Vec<Vec<u8>>,
) -> Result<HashMap<Vec<u8>, Existing>, VaultError> {
    if fingerprints.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<Existing> = diesel::sql_query(
        "SELECT token_id, token, fingerprint, revoked_at FROM vault_entries \
         WHERE tenant_id = $1 AND fingerprint = ANY($2)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<Bytea>, _>(fingerprints)
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.fingerprint.clone(), r))
        .collect())
}

/// A dry run: the token a real call would give where it can be known (deterministic and
/// enciphered format-preserving tokens, and existing entries), and nothing written.
async fn preview(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    pending: &[Pending],
) -> Result<HashMap<usize, Written>, VaultError> {
    let found = existing(
        conn,
        tenant,
        pending
            .iter()
            .filter_map(|p| p.fingerprint.map(|f| f.to_vec()))
            .collect(),
    )
    .await?;
    Ok(pending
        .iter()
        .map(|p| {
            let known = p.fingerprint.and_then(|f| found.get(f.as_slice()));
            let written = match known {
                Some(e) if e.revoked_at.is_some() => Written::Revoked,
                Some(e) => Written::Token {
                    token: Some(e.token.clone()),
                    token_id: Some(e.token_id),
                },
                None => Written::Token {
                    token: p.token.clone().filter(|_| p.mode != Mode::Randomized),
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
/// existing entries found by fingerprint and draws surrogates again.
async fn write(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    keys: &TenantKeys,
    stored: &StoredPolicy,
    rng: &SystemRandom,
    pending: &mut [Pending],
) -> Result<HashMap<usize, Written>, VaultError> {
    let mut out = HashMap::with_capacity(pending.len());
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
            existing(
                conn,
                tenant,
                todo.iter()
                    .filter_map(|i| pending[*i].fingerprint.map(|f| f.to_vec()))
                    .collect(),
            )
            .await?
        };
        let mut rows = Rows::default();
        let mut claimed: HashMap<[u8; 32], Uuid> = HashMap::new();
        let mut waiting = Vec::new();
        // One draw from the system generator for the round's nonces and token-id randomness,
        // instead of two system calls per item.
        let mut random = vec![0u8; todo.len() * RANDOM_PER_ROW];
        rng.fill(&mut random).map_err(|_| VaultError::Crypto)?;
        let mut random = random.chunks_exact(RANDOM_PER_ROW);
        let millis = u64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000)
            .unwrap_or(0);
        for &i in &todo {
            let p = &mut pending[i];
            if let Some(e) = p.fingerprint.and_then(|f| found.get(f.as_slice())) {
                // A revoked token stays revoked: the value does not get it back.
                let written = if e.revoked_at.is_some() {
                    Written::Revoked
                } else {
                    Written::Token {
                        token: Some(e.token.clone()),
                        token_id: Some(e.token_id),
                    }
                };
                out.insert(p.index, written);
                continue;
            }
            if let Some(f) = p.fingerprint
                && let Some(first) = claimed.get(&f)
            {
                // The same value twice in one batch: one entry.
                waiting.push((i, *first));
                continue;
            }
            if let Some(s) = &p.surrogate {
                p.token = Some(s.draw(rng).map_err(|_| VaultError::Crypto)?);
            } else if p.mode == Mode::Randomized && p.token.is_none() {
                p.token = Some(randomized_token(rng).map_err(|_| VaultError::Crypto)?);
            }
            let Some(token) = p.token.clone() else {
                continue;
            };
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
            if let Some(f) = p.fingerprint {
                claimed.insert(f, token_id);
            }
            let sealed = data_key.seal_with_nonce(
                nonce,
                &value_aad(tenant, token_id),
                p.value.expose().as_bytes(),
            )?;
            rows.push(i, token_id, token, p, sealed);
        }
        let batch: Vec<(usize, Uuid)> = rows
            .pending_index
            .iter()
            .copied()
            .zip(rows.token_ids.iter().copied())
            .collect();
        let inserted: std::collections::HashSet<Uuid> = if batch.is_empty() {
            Default::default()
        } else if round == 0 {
            // New values are the common case: a plain insert in a savepoint costs Postgres
            // less than ON CONFLICT's speculative insertion. Any conflict undoes it, and the
            // batch goes the careful way.
            let fast = conn
                .transaction(async |conn| {
                    rows.insert(conn, tenant, stored, key_version, ttl, false)
                        .await
                })
                .await;
            match fast {
                Ok(_) => batch.iter().map(|(_, id)| *id).collect(),
                Err(VaultError::Database(diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::UniqueViolation,
                    _,
                ))) => rows
                    .insert(conn, tenant, stored, key_version, ttl, true)
                    .await?
                    .into_iter()
                    .map(|r| r.token_id)
                    .collect(),
                Err(e) => return Err(e),
            }
        } else {
            rows.insert(conn, tenant, stored, key_version, ttl, true)
                .await?
                .into_iter()
                .map(|r| r.token_id)
                .collect()
        };
        let mut retry = Vec::new();
        for (i, token_id) in batch {
            if inserted.contains(&token_id) {
                let token = pending[i].token.clone();
                out.insert(
                    pending[i].index,
                    Written::Token {
                        token,
                        token_id: Some(token_id),
                    },
                );
            } else {
                // A concurrent writer stored the same value first (found by fingerprint next
                // round), or a surrogate collided with an existing token (drawn again).
                retry.push(i);
            }
        }
        for (i, first) in waiting {
            if inserted.contains(&first) {
                let token = pending[i].token.clone().or_else(|| {
                    out.values().find_map(|w| match w {
                        Written::Token { token, token_id } if *token_id == Some(first) => {
                            token.clone()
                        }
                        _ => None,
                    })
                });
                out.insert(
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
        out.insert(pending[i].index, Written::NoSurrogate);
    }
    Ok(out)
}

/// Column arrays for one `INSERT ... SELECT FROM unnest(...)`.
#[derive(Default)]
struct Rows {
    pending_index: Vec<usize>,
    token_ids: Vec<Uuid>,
    tokens: Vec<String>,
    pii_types: Vec<String>,
    modes: Vec<String>,
    fingerprints: Vec<Option<Vec<u8>>>,
    ciphertexts: Vec<Vec<u8>>,
}

impl Rows {
    fn push(&mut self, at: usize, token_id: Uuid, token: String, p: &Pending, sealed: Vec<u8>) {
        self.pending_index.push(at);
        self.token_ids.push(token_id);
        self.tokens.push(token);
        self.pii_types.push(p.pii_type.as_str().to_owned());
        self.modes.push(p.mode.as_str().to_owned());
        self.fingerprints.push(p.fingerprint.map(|f| f.to_vec()));
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
        const INSERT: &str = "INSERT INTO vault_entries (tenant_id, token_id, token, pii_type, \
             mode, policy_id, policy_version, fingerprint, key_version, ciphertext, expires_at) \
             SELECT $1, u.token_id, u.token, u.pii_type, u.mode, $2, $3, u.fingerprint, $4, \
             u.ciphertext, CASE WHEN $5::bigint IS NULL THEN NULL \
             ELSE now() + make_interval(secs => $5::bigint) END \
             FROM unnest($6::uuid[], $7::text[], $8::text[], $9::text[], $10::bytea[], \
             $11::bytea[]) AS u(token_id, token, pii_type, mode, fingerprint, ciphertext)";
        let sql = if on_conflict {
            format!("{INSERT} ON CONFLICT DO NOTHING RETURNING token_id")
        } else {
            INSERT.to_owned()
        };
        let query = diesel::sql_query(sql)
            .bind::<Text, _>(tenant.as_str())
            .bind::<SqlUuid, _>(stored.policy_id)
            .bind::<Int4, _>(stored.version)
            .bind::<Int4, _>(key_version)
            .bind::<Nullable<Int8>, _>(ttl)
            .bind::<Array<SqlUuid>, _>(&self.token_ids)
            .bind::<Array<Text>, _>(&self.tokens)
            .bind::<Array<Text>, _>(&self.pii_types)
            .bind::<Array<Text>, _>(&self.modes)
            .bind::<Array<Nullable<Bytea>>, _>(&self.fingerprints)
            .bind::<Array<Bytea>, _>(&self.ciphertexts);
        if on_conflict {
            Ok(query.load(conn).await?)
        } else {
            query.execute(conn).await?;
            Ok(Vec::new())
        }
    }
}

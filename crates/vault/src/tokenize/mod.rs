//! `POST /tokenize`: a batch of values becomes tokens and encrypted vault entries.
//!
//! The batch is prepared in memory first (parse, normalize, compute tokens and fingerprints,
//! seal values: [`prepare`]), then written in one transaction with set-based statements
//! ([`write`]): one multi-row `INSERT ... SELECT FROM unnest(...)`, and, only when something
//! collided, a few rounds of lookup by fingerprint and re-insert.

mod prepare;
mod write;

use diesel::QueryableByName;
use diesel::sql_types::{Bytea, Int4, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use ids::{TenantId, TokenId, TokenPolicyId};
use keys::KeyRing;
use ring::rand::SystemRandom;
use tokenize_core::{ItemCode, MacKey, Mode};
use uuid::Uuid;

use crate::VaultError;
use crate::policies;
use prepare::{prepare, rules};
pub use write::INSERT_ROWS;
use write::{Outcomes, Written, preview, write};

/// The most items one request may carry.
pub const MAX_ITEMS: usize = 1000;

/// The longest idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY: usize = 256;

/// How long a response is kept for its idempotency key.
const IDEMPOTENCY_HOURS: i32 = 24;

/// How a batch treats failed items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchMode {
    /// Write the items that succeed; report the others.
    #[default]
    BestEffort,
    /// Write nothing when any item fails.
    AllOrNothing,
}

impl std::str::FromStr for BatchMode {
    type Err = VaultError;
    fn from_str(raw: &str) -> Result<Self, VaultError> {
        match raw {
            "BEST_EFFORT" => Ok(BatchMode::BestEffort),
            "ALL_OR_NOTHING" => Ok(BatchMode::AllOrNothing),
            _ => Err(VaultError::InvalidRequest(
                "batch_mode must be BEST_EFFORT or ALL_OR_NOTHING",
            )),
        }
    }
}

/// Whether a call writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    Write,
    /// Validate and preview; write nothing and consume no quota.
    DryRun,
}

/// One value to tokenize, as the caller sent it.
#[derive(Clone)]
pub struct Item {
    /// The raw value. Never logged, never echoed in an error.
    pub value: String,
    /// A PII type code; an unknown one fails the item, not the batch.
    pub pii_type: String,
    /// A mode overriding the policy's rule for the type; an unknown one fails the item.
    pub mode: Option<String>,
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Item")
            .field("value", &"<redacted>")
            .field("pii_type", &self.pii_type)
            .field("mode", &self.mode)
            .finish()
    }
}

/// A tokenize call.
#[derive(Debug, Clone)]
pub struct Request {
    /// An id that names no policy of the tenant (the nil id included) is POLICY_NOT_FOUND.
    pub policy_id: TokenPolicyId,
    pub items: Vec<Item>,
    pub batch_mode: BatchMode,
    pub idempotency_key: Option<String>,
    pub run: Run,
}

impl Request {
    /// `label`, then every field the request asks for, in order: the same idempotency key with
    /// another request is refused.
    fn fields(&self, label: &'static [u8]) -> Vec<&[u8]> {
        let mut fields: Vec<&[u8]> = Vec::with_capacity(4 + 3 * self.items.len());
        fields.push(label);
        fields.push(self.policy_id.as_bytes());
        fields.push(match self.batch_mode {
            BatchMode::BestEffort => b"BEST_EFFORT",
            BatchMode::AllOrNothing => b"ALL_OR_NOTHING",
        });
        fields.push(self.idempotency_key.as_deref().unwrap_or("").as_bytes());
        for item in &self.items {
            fields.push(item.value.as_bytes());
            fields.push(item.pii_type.as_bytes());
            fields.push(item.mode.as_deref().map_or(b"\0" as &[u8], str::as_bytes));
        }
        fields
    }

    /// The request's digest as stored with its idempotency key: an HMAC under the tenant's
    /// fingerprint key, so that the stored digest of a one-value batch cannot be searched
    /// offline for the value (a nine-digit SSN is a billion guesses). Each field is
    /// length-prefixed, so no two requests share an encoding.
    fn digest(&self, key: &MacKey) -> Vec<u8> {
        key.mac(&self.fields(b"dps-tokenize-request-v2")).to_vec()
    }

    /// The unkeyed digest that releases before v2 stored. A key claimed by one of them is
    /// still live for up to `IDEMPOTENCY_HOURS` after an upgrade, and its retry must replay,
    /// not be refused; migration 30 deleted the expired rows that held such digests.
    fn legacy_digest(&self) -> Vec<u8> {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        let mut field = |bytes: &[u8]| {
            ctx.update(&(bytes.len() as u64).to_be_bytes());
            ctx.update(bytes);
        };
        for f in self.fields(b"dps-tokenize-request-v1") {
            field(f);
        }
        ctx.finish().as_ref().to_vec()
    }
}

/// Why an item was not tokenized. Neither part holds the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemFailure {
    /// EMPTY_VALUE, UNSUPPORTED_PII_TYPE, INVALID_VALUE, INVALID_MODE, NO_RULE_FOR_TYPE,
    /// SURROGATE_EXHAUSTED or TOKEN_REVOKED.
    pub code: &'static str,
    pub message: &'static str,
}

/// Why a fail-open policy protected an item in randomized mode instead of its rule's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback {
    pub mode: Mode,
    /// The code the item would have failed with under fail-closed.
    pub reason_code: &'static str,
    pub reason: &'static str,
}

/// What became of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemOutcome {
    Tokenized {
        /// None only on a dry run, where a randomized token (or a surrogate not yet drawn)
        /// cannot be known in advance.
        token: Option<String>,
        /// None on a dry run.
        token_id: Option<TokenId>,
        /// The mode actually used.
        mode: Mode,
        fallback: Option<Fallback>,
    },
    Failed(ItemFailure),
    /// Not written because another item of an ALL_OR_NOTHING batch failed.
    Skipped,
}

/// One item's result, at its position in the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemResult {
    pub index: usize,
    pub outcome: ItemOutcome,
}

/// What a batch came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokenized {
    pub results: Vec<ItemResult>,
    pub batch_policy_version: i32,
    /// Identifies this call in the logs and audit.
    pub trace_id: Uuid,
}

impl Tokenized {
    pub fn success_count(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, ItemOutcome::Tokenized { .. }))
            .count()
    }

    pub fn failure_count(&self) -> usize {
        self.results.len() - self.success_count()
    }
}

/// What a tokenize call produced.
#[derive(Debug)]
pub enum Outcome {
    /// Processed now. `body` is what the caller's `respond` made of it: sent, and stored for
    /// an idempotency key.
    Done { result: Tokenized, body: Vec<u8> },
    /// An ALL_OR_NOTHING batch had a failed item: nothing was written, and the caller answers
    /// with the first failure and every result.
    Rejected {
        first: ItemFailure,
        result: Tokenized,
    },
    /// The first response to this idempotency key, byte for byte as `respond` made it.
    Replayed { body: Vec<u8> },
}

/// Tokenizes a batch for `tenant`, honouring its idempotency key. `respond` turns the result
/// into the response body: the vault keeps that body for the key and replays it byte for byte,
/// without knowing its shape.
///
/// With a key (and not a dry run), the key is claimed by inserting its row in the transaction
/// that writes the batch. A concurrent request with the same key waits on that row and then
/// replays what the first stored; a retry after an error or a rejected batch finds no row and
/// runs again. The same key with a different request is refused.
pub async fn tokenize(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    request: &Request,
    respond: &(dyn Fn(&Tokenized) -> Vec<u8> + Sync),
) -> Result<Outcome, VaultError> {
    check(request)?;
    let key = match (&request.idempotency_key, request.run) {
        (Some(key), Run::Write) => key,
        _ => return run(conn, keyring, tenant, request, respond, Scope::Own).await,
    };
    let fingerprint = &keyring.tenant(conn, tenant).await?.fingerprint;
    let hash = request.digest(fingerprint);
    let raw = key;
    let key = &stored_key(fingerprint, raw);
    // A key stored in clear by an earlier release stays live for up to IDEMPOTENCY_HOURS after
    // an upgrade, and its retry must replay; a raw key shaped like a stored one is never
    // looked up that way.
    let legacy = if raw.starts_with(STORED_KEY_PREFIX) {
        ""
    } else {
        raw.as_str()
    };
    let attempt = conn
        .transaction(async |conn| {
            // Claimed when new, or when the row left by an earlier request has expired (then
            // taken over in place); a live row is not touched, and the request replays it.
            let claimed = db::sql(
                "INSERT INTO idempotency_keys AS k (tenant_id, key, request_hash, status, response)
                 SELECT $1, $2, $3, 0, ''
                  WHERE NOT EXISTS (
                        SELECT 1 FROM idempotency_keys
                         WHERE tenant_id = $1 AND key = $5
                           AND created_at >= now() - make_interval(hours => $4))
                 ON CONFLICT (tenant_id, key) DO UPDATE
                    SET request_hash = EXCLUDED.request_hash, status = 0, response = '',
                        created_at = now()
                  WHERE k.created_at < now() - make_interval(hours => $4)",
            )
            .bind::<Text, _>(tenant.as_str())
            .bind::<Text, _>(key)
            .bind::<Bytea, _>(&hash)
            .bind::<Int4, _>(IDEMPOTENCY_HOURS)
            .bind::<Text, _>(legacy)
            .execute(conn)
            .await?;
            if claimed == 0 {
                let stored: Stored = db::sql(
                    "SELECT request_hash, response FROM idempotency_keys \
                     WHERE tenant_id = $1 AND key IN ($2, $3) \
                     ORDER BY created_at DESC LIMIT 1",
                )
                .bind::<Text, _>(tenant.as_str())
                .bind::<Text, _>(key)
                .bind::<Text, _>(legacy)
                .get_result(conn)
                .await?;
                if stored.request_hash != hash && stored.request_hash != request.legacy_digest() {
                    return Err(Rollback::Vault(VaultError::IdempotencyKeyReused));
                }
                return Ok(Outcome::Replayed {
                    body: stored.response,
                });
            }
            match run(conn, keyring, tenant, request, respond, Scope::Caller).await? {
                Outcome::Done { result, body } => {
                    db::sql(
                        "UPDATE idempotency_keys SET status = 200, response = $3 \
                         WHERE tenant_id = $1 AND key = $2",
                    )
                    .bind::<Text, _>(tenant.as_str())
                    .bind::<Text, _>(key)
                    .bind::<Bytea, _>(&body)
                    .execute(conn)
                    .await?;
                    Ok(Outcome::Done { result, body })
                }
                // Not kept: the key is released with the rollback, and a retry runs again.
                rejected => Err(Rollback::With(rejected)),
            }
        })
        .await;
    if matches!(attempt, Ok(Outcome::Done { .. })) && limits::housekeeping_due() {
        // After the commit and outside it: the answer is durable whatever this does.
        if let Err(e) = forget_expired_keys(conn, tenant).await {
            tracing::warn!(error = %e, "expired idempotency keys were not deleted");
        }
    }
    match attempt {
        Ok(outcome) | Err(Rollback::With(outcome)) => Ok(outcome),
        Err(Rollback::Vault(e)) => Err(e),
    }
}

/// How a stored idempotency key begins: the rest is an HMAC of the client's key.
const STORED_KEY_PREFIX: &str = "h1:";

/// The idempotency key as stored: `h1:` and an HMAC of the client's key under the tenant's
/// fingerprint key, in base64url. Clients often build keys from the record they send
/// (`ssn-123-45-6789`), and no table holds a value in clear.
fn stored_key(fingerprint: &MacKey, key: &str) -> String {
    use base64::Engine as _;
    let mac = fingerprint.mac(&[b"dps-idempotency-key-v1", key.as_bytes()]);
    format!(
        "{STORED_KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac)
    )
}

/// The most expired keys one sweep deletes: a sweep runs for about one keyed batch in 85, and
/// each batch adds one key, so this keeps up with any rate and bounds the statement.
const SWEEP_ROWS: i64 = 1000;

/// Deletes up to [`SWEEP_ROWS`] of the tenant's expired idempotency keys, oldest first, and
/// says how many. Keyed tokenize calls run it now and then; an expired key is never replayed
/// (it is taken over in place when reused), so this only keeps the table to a day of keys. The
/// age is checked again on the row deleted, so a key taken over meanwhile is kept.
pub async fn forget_expired_keys(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<usize, VaultError> {
    Ok(db::sql(
        "DELETE FROM idempotency_keys
          WHERE tenant_id = $1 AND key IN (
                SELECT key FROM idempotency_keys
                 WHERE tenant_id = $1 AND created_at < now() - make_interval(hours => $2)
                 ORDER BY created_at
                 LIMIT $3)
            AND created_at < now() - make_interval(hours => $2)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Int4, _>(IDEMPOTENCY_HOURS)
    .bind::<diesel::sql_types::Int8, _>(SWEEP_ROWS)
    .execute(conn)
    .await?)
}

/// The request's own limits, checked before anything is read.
fn check(request: &Request) -> Result<(), VaultError> {
    if request.items.is_empty() || request.items.len() > MAX_ITEMS {
        return Err(VaultError::InvalidRequest(
            "items must hold 1 to 1000 entries",
        ));
    }
    if request
        .idempotency_key
        .as_deref()
        .is_some_and(|k| k.is_empty() || k.chars().count() > MAX_IDEMPOTENCY_KEY)
    {
        return Err(VaultError::InvalidRequest(
            "idempotency_key must be 1 to 256 characters",
        ));
    }
    Ok(())
}

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Bytea)]
    request_hash: Vec<u8>,
    #[diesel(sql_type = Bytea)]
    response: Vec<u8>,
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

/// Whose transaction a batch is written in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Its own.
    Own,
    /// The caller's, which rolls back whole whenever the batch would roll back (the
    /// idempotency key's): a savepoint of its own would only cost two more round trips.
    Caller,
}

/// Tokenizes a batch, without regard to its idempotency key.
async fn run(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    request: &Request,
    respond: &(dyn Fn(&Tokenized) -> Vec<u8> + Sync),
    scope: Scope,
) -> Result<Outcome, VaultError> {
    let dry_run = request.run == Run::DryRun;
    let batch_mode = request.batch_mode;
    let stored = policies::get(conn, tenant, request.policy_id).await?;
    let keys = keyring.tenant(conn, tenant).await?;
    let rng = SystemRandom::new();

    let mut results: Vec<Option<ItemOutcome>> = vec![None; request.items.len()];
    let mut pending = Vec::with_capacity(request.items.len());
    let rules = rules(&stored);
    for (index, item) in request.items.iter().enumerate() {
        match prepare(index, item, &stored, &rules, &keys, tenant)? {
            Ok(p) => pending.push(p),
            Err(failure) => results[index] = Some(ItemOutcome::Failed(failure)),
        }
    }
    let any_failed = results.iter().flatten().next().is_some();
    let mut written = if any_failed && batch_mode == BatchMode::AllOrNothing {
        Outcomes::default()
    } else if dry_run {
        preview(conn, keyring, tenant, &keys, &mut pending).await?
    } else {
        let mut batch = async |conn: &mut AsyncPgConnection| {
            // Under the lock, the month's count is every committed batch's: this one's own
            // entries are added to it below.
            let used = match limits::lock_monthly_quota(conn, tenant).await? {
                Some(quota) => Some((
                    quota,
                    limits::tokens_created_this_month(conn, tenant).await?,
                )),
                None => None,
            };
            let (written, created) =
                write(conn, keyring, tenant, &keys, &stored, &rng, &mut pending).await?;
            let created = i64::try_from(created).unwrap_or(i64::MAX);
            if let Some((quota, used)) = used
                && used.saturating_add(created) > quota
            {
                // Over the quota with this batch: none of it is written.
                return Err(Rollback::Vault(VaultError::QuotaExceeded));
            }
            let complete = pending
                .iter()
                .all(|p| matches!(written.get(p.index), Some(Written::Token { .. })));
            if batch_mode == BatchMode::AllOrNothing && !complete {
                // Roll back what this batch wrote, and report why.
                return Err(Rollback::With(written));
            }
            // Metered in the batch's own transaction: counted exactly when the tokens are
            // kept, with one commit. A metering failure must not fail the tokenization,
            // so it stays inside a savepoint.
            let items = written
                .iter()
                .filter(|w| matches!(w, Written::Token { .. }))
                .count();
            if items > 0 {
                let items = i64::try_from(items).unwrap_or(i64::MAX);
                let metered = conn
                    .transaction(async |conn| {
                        limits::record_tokenize(conn, tenant, items, created).await
                    })
                    .await;
                if let Err(e) = metered {
                    tracing::warn!(error = %e, "cannot record tokenize usage");
                }
            }
            Ok(written)
        };
        let attempt = match scope {
            Scope::Own => conn.transaction(batch).await,
            Scope::Caller => batch(conn).await,
        };
        match attempt {
            Ok(written) | Err(Rollback::With(written)) => written,
            Err(Rollback::Vault(e)) => return Err(e),
        }
    };
    for p in &pending {
        results[p.index] = Some(match written.take(p.index) {
            Some(Written::Token { token, token_id }) => ItemOutcome::Tokenized {
                token,
                token_id: token_id.filter(|_| !dry_run).map(TokenId::from_uuid),
                mode: p.mode,
                fallback: p.fallback,
            },
            Some(Written::Revoked) => ItemOutcome::Failed(ItemFailure {
                code: "TOKEN_REVOKED",
                message: "this value's token was revoked and is not issued again",
            }),
            Some(Written::NoSurrogate) => ItemOutcome::Failed(ItemFailure {
                code: ItemCode::SurrogateExhausted.as_str(),
                message: "no unused surrogate of the value's shape could be found",
            }),
            None => ItemOutcome::Skipped,
        });
    }
    let mut results: Vec<ItemResult> = results
        .into_iter()
        .enumerate()
        .filter_map(|(index, outcome)| outcome.map(|outcome| ItemResult { index, outcome }))
        .collect();
    let rejected = match batch_mode {
        BatchMode::AllOrNothing => results.iter().find_map(|r| match r.outcome {
            ItemOutcome::Failed(failure) => Some(failure),
            _ => None,
        }),
        BatchMode::BestEffort => None,
    };
    if rejected.is_some() {
        // Nothing was written: no item may look tokenized.
        for r in &mut results {
            if matches!(r.outcome, ItemOutcome::Tokenized { .. }) {
                r.outcome = ItemOutcome::Skipped;
            }
        }
    }
    let result = Tokenized {
        results,
        batch_policy_version: stored.version,
        trace_id: Uuid::new_v4(),
    };
    Ok(match rejected {
        Some(first) => Outcome::Rejected { first, result },
        None => {
            let body = respond(&result);
            Outcome::Done { result, body }
        }
    })
}

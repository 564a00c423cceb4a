#![doc = include_str!("../README.md")]

mod error;
#[cfg(test)]
mod properties;
mod signing;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use diesel::prelude::*;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use josekit::jws::JwsHeader;
use josekit::jwt::JwtPayload;
use ring::digest::{SHA256, digest};
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{detokenization_audit, grants};
use ids::{Principal, TenantId, TokenId, TokenPolicyId};
use keys::KeyRing;
use paging::{Page, PageRequest};
use vault::VaultError;

pub use error::GrantError;
pub use signing::GrantKeys;

/// A grant's lifetime. The spec fixes it; it is also the replay window a stolen grant_jwt
/// would have if it were not single use.
pub const GRANT_TTL: Duration = Duration::from_secs(300);

/// The most token ids one grant or one detokenize call may name.
pub const MAX_TOKENS: usize = 100;

/// The issuer and the only audience of grant JWTs: an access token can never pass for a
/// grant, nor a grant for an access token (those have the identity provider's audience).
const GRANT_ISSUER: &str = "dps-tokens-api";
const GRANT_AUDIENCE: &str = "dps-detokenize";

/// A grant request: the tokens, why they are needed, and (where a policy asks) the reason.
#[derive(Debug, Clone, Copy)]
pub struct GrantRequest<'a> {
    /// 1 to 100 token ids, as sent.
    pub token_ids: &'a [String],
    pub purpose: &'a str,
    pub reason: Option<&'a str>,
}

/// An issued grant.
#[derive(Clone)]
pub struct Grant {
    /// Single use, bound to the caller, the tenant and the token ids.
    pub grant_jwt: String,
    /// Always [`GRANT_TTL`].
    pub expires_in: Duration,
    pub trace_id: Uuid,
}

/// The grant itself is a credential: never in a debug line.
impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("grant_jwt", &"<redacted>")
            .field("expires_in", &self.expires_in)
            .field("trace_id", &self.trace_id)
            .finish()
    }
}

/// A detokenize request: token ids, all within the grant.
#[derive(Clone, Copy)]
pub struct DetokenizeRequest<'a> {
    pub tokens: &'a [String],
    pub grant_jwt: &'a str,
}

impl std::fmt::Debug for DetokenizeRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DetokenizeRequest")
            .field("tokens", &self.tokens)
            .field("grant_jwt", &"<redacted>")
            .finish()
    }
}

/// What became of one requested token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus {
    Granted,
    NotFound,
    Revoked,
    Expired,
    Denied,
}

impl TokenStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStatus::Granted => "GRANTED",
            TokenStatus::NotFound => "NOT_FOUND",
            TokenStatus::Revoked => "REVOKED",
            TokenStatus::Expired => "EXPIRED",
            TokenStatus::Denied => "DENIED",
        }
    }
}

/// One requested token's outcome. Only a granted one holds its value.
#[derive(Debug)]
pub struct TokenResult {
    /// The id as the caller sent it.
    pub token_id: String,
    pub status: TokenStatus,
    pub value: Option<tokenize_core::Secret>,
    pub revoked_at: Option<OffsetDateTime>,
    /// The ISO 4217 code a monetary value was tokenized with.
    pub currency: Option<String>,
}

/// A detokenization's results, in the order the tokens were asked for.
#[derive(Debug)]
pub struct Detokenized {
    pub results: Vec<TokenResult>,
    pub trace_id: Uuid,
}

impl Detokenized {
    pub fn success_count(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.status == TokenStatus::Granted)
            .count()
    }
}

pub use token_records::detokenizations::{AuditFilter, AuditRecord, AuditedToken};

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn parse_ids(raw: &[String], field: &'static str) -> Result<Vec<Uuid>, GrantError> {
    if raw.is_empty() || raw.len() > MAX_TOKENS {
        return Err(GrantError::Invalid(match field {
            "token_ids" => "token_ids must hold 1 to 100 token ids",
            _ => "tokens must hold 1 to 100 token ids",
        }));
    }
    // An id that is not a UUID cannot name an entry; it is kept as the nil UUID so that the
    // caller still gets a NOT_FOUND for it rather than a refusal that tells ids apart.
    Ok(raw
        .iter()
        .map(|id| TokenId::parse_or_nil(id).as_uuid())
        .collect())
}

fn reason_hash(reason: Option<&str>) -> Value {
    reason.map_or(Value::Null, |r| {
        let d = digest(&SHA256, r.as_bytes());
        json!(
            d.as_ref()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        )
    })
}

/// Issues a grant after checking every referenced token's policy: the caller's roles, the
/// purpose and, where required, the reason. A revoked token is refused (403 TOKEN_REVOKED). Token ids that name no entry of the tenant are
/// allowed (detokenization reports them NOT_FOUND): refusing them would tell the caller which
/// ids exist elsewhere.
pub async fn issue(
    conn: &mut AsyncPgConnection,
    keys: &GrantKeys,
    caller: &Principal,
    request: &GrantRequest<'_>,
) -> Result<Grant, GrantError> {
    let ids = parse_ids(request.token_ids, "token_ids")?;
    let purpose = request.purpose.trim();
    if purpose.is_empty() || purpose.chars().count() > 128 {
        return Err(GrantError::Invalid("purpose must be 1 to 128 characters"));
    }
    let reason = request.reason.map(str::trim).filter(|r| !r.is_empty());
    if reason.is_some_and(|r| r.chars().count() > 1000) {
        return Err(GrantError::Invalid(
            "reason must be at most 1000 characters",
        ));
    }
    let tenant = &caller.tenant_id;
    let entries = vault::entries::sealed(conn, tenant, &ids).await?;
    if entries.iter().any(|e| e.revoked_at.is_some()) {
        return Err(GrantError::TokenRevoked);
    }
    let policy_ids: HashSet<Uuid> = entries.iter().map(|e| e.policy_id).collect();
    for policy_id in policy_ids {
        let stored =
            vault::policies::get(conn, tenant, TokenPolicyId::from_uuid(policy_id)).await?;
        let policy = &stored.policy;
        if !policy.allowed_roles.iter().any(|r| caller.has_role(r)) {
            return Err(GrantError::RoleNotAllowed);
        }
        if !policy.allowed_purposes.iter().any(|p| p == purpose) {
            return Err(GrantError::PurposeNotAllowed);
        }
        if policy.require_reason && reason.is_none() {
            return Err(GrantError::ReasonRequired);
        }
    }

    let jti = Uuid::new_v4();
    let iat = now_secs();
    let exp = iat + GRANT_TTL.as_secs();
    diesel::insert_into(grants::table)
        .values((
            grants::tenant_id.eq(tenant.as_str()),
            grants::jti.eq(jti),
            grants::user_id.eq(caller.user_id.as_str()),
            grants::token_ids.eq(&ids),
            grants::purpose.eq(purpose),
            grants::reason.eq(reason),
            grants::expires_at.eq(OffsetDateTime::from_unix_timestamp(exp as i64)
                .unwrap_or(OffsetDateTime::UNIX_EPOCH)),
        ))
        .execute(conn)
        .await?;
    if limits::housekeeping_due()
        && let Err(e) = forget_old_grants(conn, tenant).await
    {
        tracing::warn!(error = %e, "old grants were not deleted");
    }

    let mut header = JwsHeader::new();
    header.set_token_type("JWT");
    let mut claims = serde_json::Map::new();
    claims.insert("iss".into(), json!(GRANT_ISSUER));
    claims.insert("aud".into(), json!(GRANT_AUDIENCE));
    claims.insert("jti".into(), json!(jti.to_string()));
    claims.insert("sub".into(), json!(caller.user_id.as_str()));
    claims.insert("tenant_id".into(), json!(tenant.as_str()));
    claims.insert(
        "token_ids".into(),
        json!(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()),
    );
    claims.insert("purpose".into(), json!(purpose));
    claims.insert("reason_sha256".into(), reason_hash(reason));
    claims.insert("iat".into(), json!(iat));
    claims.insert("exp".into(), json!(exp));
    let payload = JwtPayload::from_map(claims).map_err(|_| GrantError::Key)?;
    let grant_jwt = josekit::jwt::encode_with_signer(&payload, &header, keys.signer())
        .map_err(|_| GrantError::Key)?;
    Ok(Grant {
        grant_jwt,
        expires_in: GRANT_TTL,
        trace_id: Uuid::new_v4(),
    })
}

/// Days a grant's row is kept after it expired. A grant is refused by its own `exp` once
/// expired, so its row serves only two things then: the purpose and reason a refusal of it
/// records in the detokenization audit, and the month's `grants_issued` in `GET /usage`. Forty
/// days is more than a month.
pub const GRANT_RETENTION_DAYS: i32 = 40;

/// The most old grants one sweep deletes: a sweep runs for about one grant in 85 and each adds
/// one grant, so this keeps up with any rate and bounds the statement.
const SWEEP_ROWS: i64 = 1000;

/// Deletes up to [`SWEEP_ROWS`] of the tenant's grants that expired more than
/// [`GRANT_RETENTION_DAYS`] ago, oldest first, and says how many. Grant issuance runs it now and
/// then; without it the table kept every grant ever issued.
pub async fn forget_old_grants(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<usize, GrantError> {
    Ok(db::sql(
        "DELETE FROM grants
          WHERE tenant_id = $1 AND jti = ANY(ARRAY(
                SELECT jti FROM grants
                 WHERE tenant_id = $1 AND expires_at < now() - make_interval(days => $2)
                 ORDER BY expires_at
                 LIMIT $3))",
    )
    .bind::<diesel::sql_types::Text, _>(tenant.as_str())
    .bind::<diesel::sql_types::Integer, _>(GRANT_RETENTION_DAYS)
    .bind::<diesel::sql_types::BigInt, _>(SWEEP_ROWS)
    .execute(conn)
    .await?)
}

/// What a verified grant says. Its fields stay inside this crate: a caller learns only that a
/// grant verified, and `detokenize` decides what it allows.
#[derive(Debug)]
pub struct Claims {
    jti: Uuid,
    user: String,
    tenant: String,
    token_ids: HashSet<Uuid>,
    exp: u64,
}

/// Checks a grant's signature, issuer, audience and shape. Expiry is checked by the caller,
/// with no leeway: a grant's 300 seconds are exact. Public so that the fuzz targets reach the
/// same parser `detokenize` uses.
pub fn verify(keys: &GrantKeys, grant_jwt: &str) -> Result<Claims, GrantError> {
    let (payload, _) = josekit::jwt::decode_with_verifier_selector(grant_jwt, |header| {
        Ok(header.key_id().and_then(|kid| keys.verifier(kid)))
    })
    .map_err(|_| GrantError::GrantInvalid)?;
    let claims = payload.claims_set();
    let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_owned);
    if text("iss").as_deref() != Some(GRANT_ISSUER)
        || text("aud").as_deref() != Some(GRANT_AUDIENCE)
    {
        return Err(GrantError::GrantInvalid);
    }
    let jti = text("jti")
        .and_then(|j| Uuid::parse_str(&j).ok())
        .ok_or(GrantError::GrantInvalid)?;
    let token_ids = claims
        .get("token_ids")
        .and_then(Value::as_array)
        .ok_or(GrantError::GrantInvalid)?
        .iter()
        .map(|v| v.as_str().and_then(|s| Uuid::parse_str(s).ok()))
        .collect::<Option<HashSet<Uuid>>>()
        .ok_or(GrantError::GrantInvalid)?;
    Ok(Claims {
        jti,
        user: text("sub").ok_or(GrantError::GrantInvalid)?,
        tenant: text("tenant_id").ok_or(GrantError::GrantInvalid)?,
        token_ids,
        exp: claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or(GrantError::GrantInvalid)?,
    })
}

/// Context of one detokenization attempt, for its audit record.
#[derive(Clone)]
struct Attempt<'a> {
    trace_id: Uuid,
    caller: &'a Principal,
    token_ids: &'a [Uuid],
    grant_jti: Option<Uuid>,
    purpose: Option<String>,
    reason: Option<String>,
}

async fn record(
    conn: &mut AsyncPgConnection,
    attempt: &Attempt<'_>,
    outcome: &str,
    denial_code: Option<&str>,
    statuses: Value,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(detokenization_audit::table)
        .values((
            detokenization_audit::tenant_id.eq(attempt.caller.tenant_id.as_str()),
            detokenization_audit::audit_id.eq(Uuid::now_v7()),
            detokenization_audit::trace_id.eq(attempt.trace_id),
            detokenization_audit::user_id.eq(attempt.caller.user_id.as_str()),
            detokenization_audit::grant_jti.eq(attempt.grant_jti),
            detokenization_audit::purpose.eq(attempt.purpose.as_deref()),
            detokenization_audit::reason.eq(attempt.reason.as_deref()),
            detokenization_audit::token_ids.eq(attempt.token_ids),
            detokenization_audit::outcome.eq(outcome),
            detokenization_audit::denial_code.eq(denial_code),
            detokenization_audit::statuses.eq(statuses),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Records a refused attempt, then returns the refusal. When even that record cannot be
/// written, the refusal still stands (nothing is revealed either way) and the failure is
/// logged.
async fn refuse(
    conn: &mut AsyncPgConnection,
    attempt: &Attempt<'_>,
    error: GrantError,
) -> GrantError {
    let statuses: Vec<Value> = attempt
        .token_ids
        .iter()
        .map(|id| json!({ "token_id": id.to_string(), "status": "DENIED" }))
        .collect();
    if let Err(e) = record(
        conn,
        attempt,
        "denied",
        Some(error.audit_code()),
        json!(statuses),
    )
    .await
    {
        tracing::error!(error = %e, trace_id = %attempt.trace_id, "cannot audit a refused detokenization");
    }
    error
}

/// Records a detokenization attempt whose request could not be read (not JSON, an unknown
/// field, a wrong type, too large), as denied with `code`, without token ids: none of them can
/// be trusted. Every attempt an authenticated caller makes is audited, this one too. A failure
/// to record is logged; the refusal stands either way.
pub async fn refuse_unreadable(conn: &mut AsyncPgConnection, caller: &Principal, code: &str) {
    let attempt = Attempt {
        trace_id: Uuid::new_v4(),
        caller,
        token_ids: &[],
        grant_jti: None,
        purpose: None,
        reason: None,
    };
    if let Err(e) = record(conn, &attempt, "denied", Some(code), json!([])).await {
        tracing::error!(error = %e, trace_id = %attempt.trace_id, "cannot audit a refused detokenization");
    }
}

/// Detokenizes `request.tokens` under `request.grant_jwt` for `caller`.
///
/// The grant must verify, belong to the caller's user and tenant, cover every requested token,
/// and not have been used or expired. It is consumed by one conditional UPDATE in the same
/// transaction that writes the audit record and reads the entries; if the audit cannot be
/// written, the transaction rolls back and no value is returned.
pub async fn detokenize(
    conn: &mut AsyncPgConnection,
    keys: &GrantKeys,
    keyring: &KeyRing,
    caller: &Principal,
    request: &DetokenizeRequest<'_>,
) -> Result<Detokenized, GrantError> {
    let trace_id = Uuid::new_v4();
    let ids = match parse_ids(request.tokens, "tokens") {
        Ok(ids) => ids,
        Err(e) => {
            // Every attempt is audited, this one too, without its ids (there may be thousands).
            let attempt = Attempt {
                trace_id,
                caller,
                token_ids: &[],
                grant_jti: None,
                purpose: None,
                reason: None,
            };
            return Err(refuse(conn, &attempt, e).await);
        }
    };
    let mut attempt = Attempt {
        trace_id,
        caller,
        token_ids: &ids,
        grant_jti: None,
        purpose: None,
        reason: None,
    };
    let claims = match verify(keys, request.grant_jwt) {
        Ok(c) => c,
        Err(e) => return Err(refuse(conn, &attempt, e).await),
    };
    attempt.grant_jti = Some(claims.jti);
    if claims.tenant != caller.tenant_id.as_str() {
        // Another tenant's grant: its purpose and reason are that tenant's, not for this
        // tenant's audit.
        return Err(refuse(conn, &attempt, GrantError::GrantInvalid).await);
    }
    if claims.user != caller.user_id.as_str() {
        with_grant_purpose(conn, &caller.tenant_id, claims.jti, &mut attempt).await;
        return Err(refuse(conn, &attempt, GrantError::GrantInvalid).await);
    }
    // Past its time by the grant's own `exp`: not consumed, and the refusal below says why (a
    // grant used once stays used, so a second use is a reuse whenever it comes).
    let expired = claims.exp <= now_secs();
    if !expired && !ids.iter().all(|id| claims.token_ids.contains(id)) {
        with_grant_purpose(conn, &caller.tenant_id, claims.jti, &mut attempt).await;
        return Err(refuse(conn, &attempt, GrantError::NotInGrant).await);
    }
    let tenant = &caller.tenant_id;

    let outcome = if expired {
        Ok(Err(()))
    } else {
        conn.transaction(async |conn| {
            let consumed: Option<(String, Option<String>)> = diesel::update(
                grants::table
                    .filter(grants::tenant_id.eq(tenant.as_str()))
                    .filter(grants::jti.eq(claims.jti))
                    .filter(grants::user_id.eq(caller.user_id.as_str()))
                    .filter(grants::used_at.is_null())
                    .filter(grants::expires_at.gt(diesel::dsl::now)),
            )
            .set(grants::used_at.eq(diesel::dsl::now))
            .returning((grants::purpose, grants::reason))
            .get_result(conn)
            .await
            .optional()?;
            let Some((purpose, reason)) = consumed else {
                return Ok(Err(()));
            };
            let entries = vault::entries::sealed(conn, tenant, &ids).await?;
            let newest = entries.iter().map(|e| e.key_version).max().unwrap_or(1);
            // Loaded on the first value revealed: a call that reveals nothing (unknown ids,
            // revoked or expired tokens) must not make a tenant without keys create some.
            let mut tenant_keys = None;
            let by_id: HashMap<Uuid, &vault::entries::Sealed> =
                entries.iter().map(|e| (e.token_id, e)).collect();
            let mut allowed_by_policy: BTreeMap<Uuid, bool> = BTreeMap::new();
            let now = OffsetDateTime::now_utc();
            let mut results = Vec::with_capacity(ids.len());
            for (raw, id) in request.tokens.iter().zip(&ids) {
                let mut result = TokenResult {
                    token_id: raw.clone(),
                    status: TokenStatus::NotFound,
                    value: None,
                    revoked_at: None,
                    currency: None,
                };
                if let Some(entry) = by_id.get(id) {
                    if let Some(at) = entry.revoked_at {
                        result.status = TokenStatus::Revoked;
                        result.revoked_at = Some(at);
                    } else if entry.expires_at.is_some_and(|at| at <= now) {
                        result.status = TokenStatus::Expired;
                    } else {
                        // Roles, the purpose and the need for a reason are checked again: the
                        // policy may have changed since the grant.
                        let allowed = match allowed_by_policy.get(&entry.policy_id) {
                            Some(a) => *a,
                            None => {
                                let a = match vault::policies::get(conn, tenant, TokenPolicyId::from_uuid(entry.policy_id)).await {
                                    Ok(stored) => {
                                        stored.policy.allowed_roles.iter().any(|r| caller.has_role(r))
                                            && stored.policy.allowed_purposes.contains(&purpose)
                                            && (!stored.policy.require_reason || reason.is_some())
                                    }
                                    Err(VaultError::PolicyNotFound) => false,
                                    Err(e) => return Err(GrantError::from(e)),
                                };
                                allowed_by_policy.insert(entry.policy_id, a);
                                a
                            }
                        };
                        if allowed {
                            let keys = match &tenant_keys {
                                Some(keys) => std::sync::Arc::clone(keys),
                                None => {
                                    let keys = keyring
                                        .tenant_at_least(conn, tenant, newest)
                                        .await
                                        .map_err(VaultError::from)?;
                                    tenant_keys = Some(std::sync::Arc::clone(&keys));
                                    keys
                                }
                            };
                            let revealed = vault::entries::reveal(&keys, tenant, entry)?;
                            result.status = TokenStatus::Granted;
                            result.value = Some(revealed.value);
                            result.currency = revealed.currency;
                        } else {
                            result.status = TokenStatus::Denied;
                        }
                    }
                }
                results.push(result);
            }
            let statuses: Vec<Value> = results
                .iter()
                .zip(&ids)
                .map(|(r, id)| json!({ "token_id": id.to_string(), "status": r.status.as_str() }))
                .collect();
            let audited = Attempt {
                purpose: Some(purpose),
                reason,
                ..attempt.clone()
            };
            if let Err(e) = record(conn, &audited, "granted", None, json!(statuses)).await {
                tracing::error!(error = %e, trace_id = %trace_id, "cannot audit a detokenization; nothing is revealed");
                return Err(GrantError::AuditUnavailable);
            }
            Ok(Ok(results))
        })
        .await
    };
    let results = match outcome {
        Ok(Ok(results)) => results,
        Ok(Err(())) => {
            // Not consumed: find out why, and record the refusal with the grant's purpose.
            let row = match grant_row(conn, tenant, claims.jti).await {
                Ok(row) => row,
                Err(e) => return Err(refuse(conn, &attempt, e).await),
            };
            let error = match row {
                Some(row) => {
                    (attempt.purpose, attempt.reason) = (Some(row.purpose), row.reason);
                    if row.used_at.is_some() {
                        GrantError::GrantReused
                    } else {
                        GrantError::GrantExpired
                    }
                }
                None => GrantError::GrantInvalid,
            };
            return Err(refuse(conn, &attempt, error).await);
        }
        // The transaction rolled back (a value that would not open, a policy that no longer
        // reads, a lock wait cut short): the grant was not consumed and nothing was revealed,
        // and the attempt is still recorded, as every attempt is.
        Err(e) => return Err(refuse(conn, &attempt, e).await),
    };
    Ok(Detokenized { results, trace_id })
}

/// Puts the purpose and reason of the tenant's grant `jti` on a refused attempt's record. A
/// row that cannot be read leaves them empty: the refusal is recorded either way.
async fn with_grant_purpose(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    jti: Uuid,
    attempt: &mut Attempt<'_>,
) {
    if let Ok(Some(row)) = grant_row(conn, tenant, jti).await {
        (attempt.purpose, attempt.reason) = (Some(row.purpose), row.reason);
    }
}

/// What a refusal needs of the grant's row: whether it was used, and its purpose and reason
/// for the audit record.
#[derive(Debug, Queryable)]
struct GrantRow {
    used_at: Option<OffsetDateTime>,
    purpose: String,
    reason: Option<String>,
}

async fn grant_row(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    jti: Uuid,
) -> Result<Option<GrantRow>, GrantError> {
    Ok(grants::table
        .filter(grants::tenant_id.eq(tenant.as_str()))
        .filter(grants::jti.eq(jti))
        .select((grants::used_at, grants::purpose, grants::reason))
        .first(conn)
        .await
        .optional()?)
}

/// One page of the tenant's detokenization attempts, oldest first.
pub async fn audit(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &AuditFilter<'_>,
    page: PageRequest<'_>,
) -> Result<Page<AuditRecord>, GrantError> {
    token_records::detokenizations::list(conn, tenant, filter, page)
        .await
        .map_err(|e| GrantError::Vault(e.into()))
}

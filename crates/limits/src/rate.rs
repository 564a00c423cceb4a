//! Rate limits: fixed one-minute windows per user and per tenant, counted in Postgres.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use ids::TenantId;

use crate::error::LimitsError;

/// The rate-limited operations of the Tokenization API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Tokenize,
    Detokenize,
    Grant,
    VaultList,
    Revoke,
    Policies,
    Usage,
    Audit,
}

impl Endpoint {
    pub const ALL: [Endpoint; 8] = [
        Endpoint::Tokenize,
        Endpoint::Detokenize,
        Endpoint::Grant,
        Endpoint::VaultList,
        Endpoint::Revoke,
        Endpoint::Policies,
        Endpoint::Usage,
        Endpoint::Audit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Tokenize => "tokenize",
            Endpoint::Detokenize => "detokenize",
            Endpoint::Grant => "grant",
            Endpoint::VaultList => "vault_list",
            Endpoint::Revoke => "revoke",
            Endpoint::Policies => "policies",
            Endpoint::Usage => "usage",
            Endpoint::Audit => "audit",
        }
    }

    /// The spec's limits (per user, per tenant, per minute); policies, usage and audit, which
    /// the spec leaves open, get the vault list's.
    fn default_limits(self) -> (u32, u32) {
        match self {
            Endpoint::Tokenize => (1_000, 10_000),
            Endpoint::Detokenize | Endpoint::Grant | Endpoint::Revoke => (10, 100),
            Endpoint::VaultList | Endpoint::Policies | Endpoint::Usage | Endpoint::Audit => {
                (60, 600)
            }
        }
    }
}

/// Requests per minute per user and per tenant, for each endpoint.
#[derive(Debug, Clone)]
pub struct RateLimits {
    limits: HashMap<Endpoint, (u32, u32)>,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            limits: Endpoint::ALL
                .into_iter()
                .map(|e| (e, e.default_limits()))
                .collect(),
        }
    }
}

impl RateLimits {
    /// Parses `endpoint=USER/TENANT` pairs separated by commas (`DPS_RATE_LIMITS`), over the
    /// defaults: `tokenize=2000/20000,detokenize=20/200`.
    pub fn parse(spec: &str) -> Result<Self, LimitsError> {
        let mut limits = Self::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || LimitsError::Config(format!("`{part}` is not endpoint=USER/TENANT"));
            let (name, numbers) = part.split_once('=').ok_or_else(bad)?;
            let endpoint = Endpoint::ALL
                .into_iter()
                .find(|e| e.as_str() == name.trim())
                .ok_or_else(|| {
                    LimitsError::Config(format!("unknown endpoint `{}`", name.trim()))
                })?;
            let (user, tenant) = numbers.split_once('/').ok_or_else(bad)?;
            let user: u32 = user.trim().parse().map_err(|_| bad())?;
            let tenant: u32 = tenant.trim().parse().map_err(|_| bad())?;
            if user == 0 || tenant == 0 {
                return Err(bad());
            }
            limits.limits.insert(endpoint, (user, tenant));
        }
        Ok(limits)
    }

    pub fn of(&self, endpoint: Endpoint) -> (u32, u32) {
        self.limits
            .get(&endpoint)
            .copied()
            .unwrap_or_else(|| endpoint.default_limits())
    }
}

/// The outcome of one request's check: what the `X-RateLimit-*` headers say, and whether it
/// went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The caller's per-minute limit.
    pub limit: u32,
    /// Requests left in this window, for the caller and the tenant alike.
    pub remaining: u32,
    /// When the window ends, in Unix seconds.
    pub reset: i64,
    /// Seconds until the window ends.
    pub retry_after: u64,
    pub exceeded: bool,
}

#[derive(QueryableByName)]
struct Counted {
    #[diesel(sql_type = Integer)]
    user_count: i32,
    #[diesel(sql_type = Integer)]
    tenant_count: i32,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    reset: i64,
}

/// The statement that counts a request: the subject's row, then the tenant's (the order every
/// request takes, so two requests never wait on each other's rows in a cycle). When the
/// tenant's row is not counted, the last SELECT reads it as it was before the statement, which
/// is as it is. `$first` and `$from` add a CTE and its use.
macro_rules! count {
    ($first:literal, $from:literal) => {
        concat!(
            "WITH ",
            $first,
            "u AS ( \
               INSERT INTO rate_limit_counters AS c (tenant_id, endpoint, subject, window_start, count) \
               VALUES ($1, $2, $3, date_trunc('minute', now()), 1) \
               ON CONFLICT (tenant_id, endpoint, subject, window_start) \
               DO UPDATE SET count = c.count + 1 \
               RETURNING count, window_start \
             ), t AS ( \
               INSERT INTO rate_limit_counters AS c (tenant_id, endpoint, subject, window_start, count) \
               SELECT $1, $2, '', u.window_start, 1 FROM u WHERE u.count <= $4 \
               ON CONFLICT (tenant_id, endpoint, subject, window_start) \
               DO UPDATE SET count = c.count + 1 \
               RETURNING count \
             ) \
             SELECT u.count AS user_count, \
               COALESCE((SELECT count FROM t), \
                        (SELECT r.count FROM rate_limit_counters r WHERE r.tenant_id = $1 \
                           AND r.endpoint = $2 AND r.subject = '' AND r.window_start = u.window_start), \
                        0) AS tenant_count, \
               extract(epoch FROM u.window_start + interval '1 minute')::bigint AS reset \
             FROM u",
            $from
        )
    };
}

/// Counts a request in a transaction of its own that commits without waiting for its WAL to
/// reach the disk (`synchronous_commit` off for that transaction alone). Every request of a
/// tenant updates the tenant's row: committed durably, each request held that row for a whole
/// disk flush, and the tenant's requests went through it one flush at a time. A crash loses
/// at most the last fraction of a second of counts, so a few more requests pass in that
/// minute; nothing else is lost (docs/decisions.md, "Rate-limit counts commit without waiting
/// for the disk").
const COUNT_ALONE: &str = count!(
    "a AS (SELECT set_config('synchronous_commit', 'off', true)), ",
    " CROSS JOIN a"
);

/// Counts a request in the caller's transaction, whose commit keeps its own durability.
const COUNT_IN_TRANSACTION: &str = count!("", "");

/// Counts one request of `subject` (a user or an API key) in `tenant` against `endpoint`'s
/// limits. The request is counted against its subject even when it goes over, as fixed
/// windows do. It is counted against the tenant only while its subject is within its own
/// limit: otherwise one user sending past their limit would spend the whole tenant's budget
/// and lock every other user of the tenant out. The empty subject is the tenant's own
/// counter, so a subject must not be empty.
pub async fn check(
    conn: &mut AsyncPgConnection,
    limits: &RateLimits,
    tenant: &TenantId,
    subject: &str,
    endpoint: Endpoint,
) -> Result<Decision, LimitsError> {
    if subject.is_empty() {
        return Err(LimitsError::Config(
            "a rate-limit subject must not be empty".into(),
        ));
    }
    let (per_user, per_tenant) = limits.of(endpoint);
    // Outside a transaction of the caller's, the count commits without waiting for the disk:
    // see `COUNT_ALONE`.
    let alone = <diesel_async::AnsiTransactionManager as diesel_async::TransactionManager<
        AsyncPgConnection,
    >>::transaction_manager_status_mut(conn)
    .transaction_depth()
    .is_ok_and(|depth| depth.is_none());
    let counted: Counted = db::sql(if alone {
        COUNT_ALONE
    } else {
        COUNT_IN_TRANSACTION
    })
    .bind::<Text, _>(tenant.as_str())
    .bind::<Text, _>(endpoint.as_str())
    .bind::<Text, _>(subject)
    .bind::<Integer, _>(i32::try_from(per_user).unwrap_or(i32::MAX))
    .get_result(conn)
    .await?;
    let user_count = counted.user_count.max(0) as u32;
    let tenant_count = counted.tenant_count.max(0) as u32;
    let reset = counted.reset;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    // Old windows are dropped now and then; one request in a hundred is enough to keep the
    // table to the last couple of minutes.
    if housekeeping_due() {
        db::sql(
            "DELETE FROM rate_limit_counters WHERE tenant_id = $1 \
             AND window_start < now() - interval '2 minutes'",
        )
        .bind::<Text, _>(tenant.as_str())
        .execute(conn)
        .await?;
    }
    Ok(Decision {
        limit: per_user,
        remaining: per_user
            .saturating_sub(user_count)
            .min(per_tenant.saturating_sub(tenant_count)),
        reset,
        retry_after: u64::try_from((reset - now).max(1)).unwrap_or(1),
        exceeded: user_count > per_user || tenant_count > per_tenant,
    })
}

/// True for about one call in 85 (3 in 256): when a hot path also does its table's
/// housekeeping (dropping old rate windows, expired idempotency keys), so that it runs often
/// enough to keep up and seldom enough to cost nothing measurable.
pub fn housekeeping_due() -> bool {
    use ring::rand::SecureRandom as _;
    let mut b = [0u8; 1];
    ring::rand::SystemRandom::new().fill(&mut b).is_ok() && b[0] < 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_over_the_defaults() {
        let limits = RateLimits::parse("tokenize=5/50, detokenize = 2/3").unwrap();
        assert_eq!(limits.of(Endpoint::Tokenize), (5, 50));
        assert_eq!(limits.of(Endpoint::Detokenize), (2, 3));
        assert_eq!(limits.of(Endpoint::Grant), (10, 100));
        for bad in ["tokenize=5", "nope=1/2", "tokenize=0/5", "tokenize=a/b"] {
            assert!(RateLimits::parse(bad).is_err(), "{bad}");
        }
    }
}

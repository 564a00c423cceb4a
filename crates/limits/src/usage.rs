//! Usage of the current calendar month (UTC), for billing.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Date, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;

use ids::TenantId;

use crate::period::{month_start, next_month};
use crate::quota::monthly_quota;

/// The tenant's usage of one calendar month (UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    pub period_start: OffsetDateTime,
    pub period_end: OffsetDateTime,
    pub tokens: TokenCounts,
    pub tokenize_requests: i64,
    pub tokenize_items: i64,
    pub detokenize_requests: i64,
    /// Tokens named by detokenize requests whose grant was accepted.
    pub detokenize_items: i64,
    pub grants_issued: i64,
    pub revocations: i64,
    pub quota: Quota,
}

/// Vault entries: created this month, and the current state of all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCounts {
    pub created: i64,
    pub active: i64,
    pub revoked: i64,
    pub expired: i64,
}

/// The monthly token quota; `limit` and `remaining` are None when the tenant is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub limit: Option<i64>,
    pub used: i64,
    pub remaining: Option<i64>,
}

/// Counts one tokenize request of `items` items (after it wrote something), `created` of which
/// made new vault entries: the count the monthly quota and the usage's `tokens.created` read
/// ([`crate::tokens_created_this_month`]).
pub async fn record_tokenize(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    items: i64,
    created: i64,
) -> Result<(), diesel::result::Error> {
    db::sql(
        "INSERT INTO usage_counters AS u (tenant_id, month, metric, value, shard) \
         SELECT $1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, m, v, \
                pg_backend_pid() % 16 \
         FROM unnest(ARRAY['tokenize_requests', 'tokenize_items', 'tokens_created'], \
                     ARRAY[1, $2, $3]::bigint[]) AS x(m, v) \
         ON CONFLICT (tenant_id, month, metric, shard) DO UPDATE SET value = u.value + EXCLUDED.value",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<BigInt, _>(items)
    .bind::<BigInt, _>(created)
    .execute(conn)
    .await
    .map(drop)
}

#[derive(QueryableByName)]
struct Counts {
    #[diesel(sql_type = BigInt)]
    created: i64,
    #[diesel(sql_type = BigInt)]
    total: i64,
    #[diesel(sql_type = BigInt)]
    revoked: i64,
    #[diesel(sql_type = BigInt)]
    expired: i64,
    #[diesel(sql_type = BigInt)]
    revocations: i64,
    #[diesel(sql_type = BigInt)]
    tokenize_requests: i64,
    #[diesel(sql_type = BigInt)]
    tokenize_items: i64,
    #[diesel(sql_type = BigInt)]
    detokenize_requests: i64,
    #[diesel(sql_type = BigInt)]
    detokenize_items: i64,
    #[diesel(sql_type = BigInt)]
    grants_issued: i64,
}

/// The tenant's usage this month, with its quota.
pub async fn usage(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<Usage, diesel::result::Error> {
    let start = month_start(OffsetDateTime::now_utc());
    // A grant expires after it is issued, so `expires_at >= $2` removes no grant of the month
    // from the count, and lets the grants' (tenant_id, expires_at) index find them.
    // Nothing here walks the tenant's vault (migration 041): entries are counted by the
    // tokens_created counters (every month's sum is every entry, as entries are never deleted),
    // revoked and expired ones through partial indexes that hold only those, and the active
    // are the rest.
    let counts: Counts = db::sql(
        "SELECT \
           COALESCE((SELECT sum(value) FROM usage_counters WHERE tenant_id = $1 AND month = $3 \
              AND metric = 'tokens_created'), 0)::bigint AS created, \
           COALESCE((SELECT sum(value) FROM usage_counters WHERE tenant_id = $1 \
              AND metric = 'tokens_created'), 0)::bigint AS total, \
           (SELECT count(*) FROM vault_entries WHERE tenant_id = $1 AND revoked_at IS NOT NULL) AS revoked, \
           (SELECT count(*) FROM vault_entries WHERE tenant_id = $1 AND revoked_at IS NULL \
              AND expires_at IS NOT NULL AND expires_at <= now()) AS expired, \
           (SELECT count(*) FROM vault_entries WHERE tenant_id = $1 AND revoked_at IS NOT NULL \
              AND revoked_at >= $2) AS revocations, \
           COALESCE((SELECT sum(value) FROM usage_counters WHERE tenant_id = $1 AND month = $3 \
              AND metric = 'tokenize_requests'), 0)::bigint AS tokenize_requests, \
           COALESCE((SELECT sum(value) FROM usage_counters WHERE tenant_id = $1 AND month = $3 \
              AND metric = 'tokenize_items'), 0)::bigint AS tokenize_items, \
           (SELECT count(*) FROM detokenization_audit WHERE tenant_id = $1 AND occurred_at >= $2) \
              AS detokenize_requests, \
           COALESCE((SELECT sum(cardinality(token_ids)) FROM detokenization_audit \
              WHERE tenant_id = $1 AND occurred_at >= $2 AND outcome = 'granted'), 0)::bigint \
              AS detokenize_items, \
           (SELECT count(*) FROM grants WHERE tenant_id = $1 AND expires_at >= $2 \
              AND issued_at >= $2) AS grants_issued",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Timestamptz, _>(start)
    .bind::<Date, _>(start.date())
    .get_result(conn)
    .await?;
    let limit = monthly_quota(conn, tenant).await?;
    Ok(Usage {
        period_start: start,
        period_end: next_month(start),
        tokens: TokenCounts {
            created: counts.created,
            // Never below zero, should a counter have missed a batch (its metering failed).
            active: (counts.total - counts.revoked - counts.expired).max(0),
            revoked: counts.revoked,
            expired: counts.expired,
        },
        tokenize_requests: counts.tokenize_requests,
        tokenize_items: counts.tokenize_items,
        detokenize_requests: counts.detokenize_requests,
        detokenize_items: counts.detokenize_items,
        grants_issued: counts.grants_issued,
        revocations: counts.revocations,
        quota: Quota {
            limit,
            used: counts.created,
            remaining: limit.map(|l| (l - counts.created).max(0)),
        },
    })
}

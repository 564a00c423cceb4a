//! Monthly token quotas. A tenant without a quota is unlimited.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use db::schema::tenant_quotas;
use ids::TenantId;

use crate::period::month_start;

/// The tenant's monthly token quota, `None` when unlimited.
pub async fn monthly_quota(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<Option<i64>, diesel::result::Error> {
    tenant_quotas::table
        .find(tenant.as_str())
        .select(tenant_quotas::monthly_tokens)
        .first(conn)
        .await
        .optional()
}

/// Sets the quota; `None` makes the tenant unlimited again.
pub async fn set_monthly_quota(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    tokens: Option<i64>,
) -> Result<(), diesel::result::Error> {
    match tokens {
        None => diesel::delete(tenant_quotas::table.find(tenant.as_str()))
            .execute(conn)
            .await
            .map(drop),
        Some(tokens) => diesel::insert_into(tenant_quotas::table)
            .values((
                tenant_quotas::tenant_id.eq(tenant.as_str()),
                tenant_quotas::monthly_tokens.eq(tokens),
            ))
            .on_conflict(tenant_quotas::tenant_id)
            .do_update()
            .set((
                tenant_quotas::monthly_tokens.eq(tokens),
                tenant_quotas::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)
            .await
            .map(drop),
    }
}

/// The tenant's quota, locked until the transaction ends, so that concurrent writers of the
/// tenant check it one after the other. `None` (and no lock) when unlimited.
pub async fn lock_monthly_quota(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<Option<i64>, diesel::result::Error> {
    tenant_quotas::table
        .find(tenant.as_str())
        .select(tenant_quotas::monthly_tokens)
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Vault entries the tenant created this calendar month (UTC): the sum of the month's
/// `tokens_created` counters, which tokenize adds to in the transaction that writes the entries
/// ([`crate::record_tokenize`]). A sum of at most 16 rows however large the vault: counting the
/// entries themselves cost a range of the vault's primary key on every batch, under the quota
/// lock. Entries deleted later still count, as the quota meters creation.
pub async fn tokens_created_this_month(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<i64, diesel::result::Error> {
    #[derive(diesel::QueryableByName)]
    struct Created {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        created: i64,
    }
    let start = month_start(time::OffsetDateTime::now_utc());
    let row: Created = db::sql(
        "SELECT COALESCE(sum(value), 0)::bigint AS created FROM usage_counters \
          WHERE tenant_id = $1 AND month = $2 AND metric = 'tokens_created'",
    )
    .bind::<diesel::sql_types::Text, _>(tenant.as_str())
    .bind::<diesel::sql_types::Date, _>(start.date())
    .get_result(conn)
    .await?;
    Ok(row.created)
}

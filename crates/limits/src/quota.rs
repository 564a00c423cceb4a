//! Monthly token quotas. A tenant without a quota is unlimited.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use db::schema::tenant_quotas;
use ids::TenantId;

use crate::period::{first_id_at, month_start};

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

/// Vault entries the tenant created this calendar month (UTC).
pub async fn tokens_created_this_month(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<i64, diesel::result::Error> {
    use db::schema::vault_entries;
    let start = month_start(time::OffsetDateTime::now_utc());
    vault_entries::table
        .filter(vault_entries::tenant_id.eq(tenant.as_str()))
        .filter(vault_entries::token_id.ge(first_id_at(start)))
        .count()
        .get_result(conn)
        .await
}

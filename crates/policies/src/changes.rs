//! The queue of tenants whose policy coverage must be recomputed: written by every policy
//! change, in its transaction; drained by governance's coverage task (`risk::coverage`), which
//! claims a tenant under a lease and says when it is done. Apart from the recomputation so
//! that storing a policy needs nothing of it.

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use time::OffsetDateTime;

use db::schema::governance_coverage_refresh;

/// Queues a recomputation of the tenant's coverage. Call it in the policy change's
/// transaction.
pub async fn request(conn: &mut AsyncPgConnection, tenant: &TenantId) -> Result<(), DieselError> {
    diesel::insert_into(governance_coverage_refresh::table)
        .values((
            governance_coverage_refresh::tenant_id.eq(tenant.as_str()),
            governance_coverage_refresh::requested_at.eq(OffsetDateTime::now_utc()),
        ))
        .on_conflict(governance_coverage_refresh::tenant_id)
        .do_update()
        .set(governance_coverage_refresh::requested_at.eq(OffsetDateTime::now_utc()))
        .execute(conn)
        .await
        .map(drop)
}

/// A tenant taken off the queue, under a lease of five minutes.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub tenant: TenantId,
    /// When the change it answers was requested: a later request keeps the row.
    requested_at: OffsetDateTime,
}

#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = Timestamptz)]
    requested_at: OffsetDateTime,
}

/// Takes the tenant queued first whose lease is free, if any. Its own statement: the lease is
/// what keeps other replicas off it while the recomputation runs.
pub async fn claim(conn: &mut AsyncPgConnection) -> Result<Option<Claimed>, DieselError> {
    let row: Option<ClaimedRow> = db::sql(
        "UPDATE governance_coverage_refresh c SET lease_until = now() + interval '5 minutes'
          WHERE c.tenant_id = (
                SELECT tenant_id FROM governance_coverage_refresh
                 WHERE lease_until IS NULL OR lease_until < now()
                 ORDER BY requested_at
                 LIMIT 1
                   FOR UPDATE SKIP LOCKED)
         RETURNING c.tenant_id, c.requested_at",
    )
    .get_result(conn)
    .await
    .optional()?;
    row.map(|r| {
        Ok(Claimed {
            tenant: db::background::parse_column(&r.tenant_id)?,
            requested_at: r.requested_at,
        })
    })
    .transpose()
}

/// Ends a claim, in the transaction of the recomputation: the row goes, unless a change was
/// requested meanwhile, which keeps it (lease freed) for another pass.
pub async fn done(conn: &mut AsyncPgConnection, claimed: &Claimed) -> Result<(), DieselError> {
    let tenant = claimed.tenant.as_str();
    diesel::delete(
        governance_coverage_refresh::table
            .filter(governance_coverage_refresh::tenant_id.eq(tenant))
            .filter(governance_coverage_refresh::requested_at.eq(claimed.requested_at)),
    )
    .execute(conn)
    .await?;
    diesel::update(
        governance_coverage_refresh::table
            .filter(governance_coverage_refresh::tenant_id.eq(tenant)),
    )
    .set(governance_coverage_refresh::lease_until.eq(None::<OffsetDateTime>))
    .execute(conn)
    .await
    .map(drop)
}

//! The queue of tenants whose policy coverage must be recomputed: written by policy changes,
//! drained by [`super::coverage`]. Apart from it so that policies need nothing of the
//! recomputation.

use diesel::prelude::*;
use diesel::result::Error as DieselError;
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

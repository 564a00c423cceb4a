//! Queries over `tenant_settings`, and the settings' entries in the audit log. Each takes a connection; the functions
//! in the crate root own the transactions.

use crate::model::{CosigningMode, LkgRetentionChange, SafetyClass};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{TenantId, UserId};
use serde_json::Value;
use time::OffsetDateTime;

use db::schema::tenant_settings;

/// How many changes of the rollback window its `change_log` shows.
const CHANGE_LOG_LIMIT: i64 = 100;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = tenant_settings, check_for_backend(diesel::pg::Pg))]
pub(crate) struct Row {
    pub lkg_retention_hours: Option<i32>,
    pub lkg_updated_at: Option<OffsetDateTime>,
    pub lkg_updated_by: Option<String>,
    pub denied_safety_classes: Vec<Option<SafetyClass>>,
    pub remediation_updated_at: Option<OffsetDateTime>,
    pub remediation_updated_by: Option<String>,
    pub cosigning_mode: String,
    pub cosigning_endpoint_url: Option<String>,
    pub cosigning_updated_at: Option<OffsetDateTime>,
    pub cosigning_updated_by: Option<String>,
}

pub(crate) async fn find(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> QueryResult<Option<Row>> {
    tenant_settings::table
        .find(tenant.as_str())
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()
}

/// The tenant's row, created with defaults when missing, locked until the transaction ends so
/// that concurrent changes see each other's results (and audit the right "before").
pub(crate) async fn lock(conn: &mut AsyncPgConnection, tenant: &TenantId) -> QueryResult<Row> {
    diesel::insert_into(tenant_settings::table)
        .values(tenant_settings::tenant_id.eq(tenant.as_str()))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    tenant_settings::table
        .find(tenant.as_str())
        .select(Row::as_select())
        .for_update()
        .first(conn)
        .await
}

pub(crate) async fn set_lkg(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    hours: u32,
) -> QueryResult<()> {
    // `hours` is one of 24, 72 and 168, so the conversion cannot fail; a CHECK constraint
    // guards the column as well.
    let hours = i32::try_from(hours).unwrap_or(i32::MAX);
    diesel::update(tenant_settings::table.find(tenant.as_str()))
        .set((
            tenant_settings::lkg_retention_hours.eq(hours),
            tenant_settings::lkg_updated_at.eq(diesel::dsl::now),
            tenant_settings::lkg_updated_by.eq(actor.as_str()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

pub(crate) async fn set_denied(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    denied: &[SafetyClass],
) -> QueryResult<()> {
    let denied: Vec<Option<&str>> = denied.iter().map(|c| Some(c.as_str())).collect();
    diesel::update(tenant_settings::table.find(tenant.as_str()))
        .set((
            tenant_settings::denied_safety_classes.eq(denied),
            tenant_settings::remediation_updated_at.eq(diesel::dsl::now),
            tenant_settings::remediation_updated_by.eq(actor.as_str()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

pub(crate) async fn set_cosigning(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    mode: CosigningMode,
    endpoint_url: Option<&str>,
) -> QueryResult<()> {
    diesel::update(tenant_settings::table.find(tenant.as_str()))
        .set((
            tenant_settings::cosigning_mode.eq(mode.as_str()),
            tenant_settings::cosigning_endpoint_url.eq(endpoint_url),
            tenant_settings::cosigning_updated_at.eq(diesel::dsl::now),
            tenant_settings::cosigning_updated_by.eq(actor.as_str()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Appends an audit entry to the tenant's audit log, in the caller's transaction. `details`
/// holds setting values only, never personal data.
pub(crate) async fn audit(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    event: audit::Kind,
    details: Value,
) -> QueryResult<()> {
    let entry = audit::NewEntry::new(event, audit::Actor::User(actor.clone())).details(details);
    audit::append(conn, tenant, &[entry]).await.map(drop)
}

/// The most recent changes of the rollback window, newest first.
pub(crate) async fn lkg_changes(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> QueryResult<Vec<LkgRetentionChange>> {
    let entries = audit::latest(
        conn,
        tenant,
        crate::model::events::LKG_RETENTION_CHANGED,
        CHANGE_LOG_LIMIT,
    )
    .await?;
    let hours = |details: &Value, key: &str| {
        details
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|h| u32::try_from(h).ok())
    };
    Ok(entries
        .into_iter()
        .filter_map(|entry| {
            Some(LkgRetentionChange {
                from_hours: hours(&entry.details, "from_hours")?,
                to_hours: hours(&entry.details, "to_hours")?,
                changed_at: entry.recorded_at,
                changed_by: entry.actor,
            })
        })
        .collect())
}

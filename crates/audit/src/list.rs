//! Reading the log: pages in seq order, and the newest entries of one kind.

use diesel::dsl::{AsSelect, Select};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{PolicyId, TenantId};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::audit_log;

use crate::entry::Entry;

/// The cursor list name.
const LIST: &str = "audit-log";

/// The default page size of the audit log.
pub const DEFAULT_LIMIT: u32 = 50;

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = audit_log)]
pub(crate) struct Row {
    seq: i64,
    entry_id: Uuid,
    recorded_at: OffsetDateTime,
    kind: crate::Kind,
    actor: String,
    policy_id: Option<Uuid>,
    policy_version: Option<i32>,
    action_type: Option<String>,
    connector_id: Option<Uuid>,
    resource: Option<String>,
    simulated: bool,
    outcome: Option<String>,
    details: serde_json::Value,
    prev_hash: Vec<u8>,
    hash: Vec<u8>,
}

impl Row {
    pub(crate) fn into_entry(self, tenant: &TenantId) -> Entry {
        Entry {
            tenant_id: tenant.clone(),
            seq: self.seq,
            entry_id: self.entry_id,
            recorded_at: self.recorded_at,
            kind: self.kind,
            actor: self.actor,
            policy_id: self.policy_id,
            policy_version: self.policy_version,
            action_type: self.action_type,
            connector_id: self.connector_id,
            resource: self.resource,
            simulated: self.simulated,
            outcome: self.outcome,
            details: self.details,
            prev_hash: self.prev_hash,
            hash: self.hash,
        }
    }
}

pub(crate) fn select() -> Select<audit_log::table, AsSelect<Row, diesel::pg::Pg>> {
    audit_log::table.select(Row::as_select())
}

/// What the list keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Entries at or after this time.
    pub since: Option<OffsetDateTime>,
    pub policy: Option<PolicyId>,
    /// alert, tokenize, mask or quarantine.
    pub action_type: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("the cursor is not valid for this list")]
    BadCursor,
    #[error("database error")]
    Database(#[from] diesel::result::Error),
}

impl From<BadCursor> for ListError {
    fn from(_: BadCursor) -> Self {
        ListError::BadCursor
    }
}

/// One page of the tenant's log, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &Filter,
    page: PageRequest<'_>,
) -> Result<Page<Entry>, ListError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Ascending)?;
    // Times never go backwards within a log, so `since` becomes the first seq at or after it,
    // found through the time index. Entries written together share their time; `seq` breaks
    // the tie, so none of them is skipped.
    let mut from = keyset.after_seq().map_or(1, |seq| seq + 1);
    if let Some(since) = filter.since {
        let first: Option<i64> = audit_log::table
            .filter(audit_log::tenant_id.eq(tenant.as_str()))
            .filter(audit_log::recorded_at.ge(since))
            .order((audit_log::recorded_at, audit_log::seq))
            .select(audit_log::seq)
            .first(conn)
            .await
            .optional()?;
        match first {
            Some(first) => from = from.max(first),
            None => return Ok(keyset.page(Vec::new(), |e: &Entry| Position::seq(e.seq))),
        }
    }
    let mut query = select()
        .filter(audit_log::tenant_id.eq(tenant.as_str()))
        .filter(audit_log::seq.ge(from))
        .into_boxed();
    if let Some(policy) = filter.policy {
        query = query.filter(audit_log::policy_id.eq(policy.as_uuid()));
    }
    if let Some(action_type) = &filter.action_type {
        query = query.filter(audit_log::action_type.eq(action_type.clone()));
    }
    let rows: Vec<Row> = query
        .order(audit_log::seq)
        .limit(keyset.fetch())
        .load(conn)
        .await?;
    let entries = rows.into_iter().map(|r| r.into_entry(tenant)).collect();
    Ok(keyset.page(entries, |e: &Entry| Position::seq(e.seq)))
}

/// The newest `limit` entries of one kind, newest first (the settings' change logs).
pub async fn latest(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    kind: crate::Kind,
    limit: i64,
) -> QueryResult<Vec<Entry>> {
    let rows: Vec<Row> = select()
        .filter(audit_log::tenant_id.eq(tenant.as_str()))
        .filter(audit_log::kind.eq(kind.as_str()))
        .order(audit_log::seq.desc())
        .limit(limit)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.into_entry(tenant)).collect())
}

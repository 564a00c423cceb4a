//! The detokenization audit, read: who asked to see which tokens, when, why, and what they
//! were shown (never a value). `grants` writes it, in the transaction that reveals; this
//! crate reads it without depending on `grants` (which reveals values), so that its reader
//! (the console) cannot.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::detokenization_audit;
use ids::{TenantId, TokenId};
use paging::{Keyset, Order, Page, PageRequest, Position};

use crate::RecordsError;

/// One token of an audited attempt, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AuditedToken {
    pub token_id: String,
    pub status: String,
}

/// One detokenization attempt as the audit keeps it. Never holds a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    pub audit_id: Uuid,
    pub trace_id: Uuid,
    pub user_id: String,
    /// The grant's id (jti), when the grant could be read.
    pub grant_id: Option<Uuid>,
    pub purpose: Option<String>,
    pub reason: Option<String>,
    /// granted (the grant was accepted; see each token's status) or denied.
    pub outcome: String,
    /// Why the whole attempt was denied.
    pub denial_code: Option<String>,
    pub tokens: Vec<AuditedToken>,
    pub occurred_at: OffsetDateTime,
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = detokenization_audit, check_for_backend(diesel::pg::Pg))]
struct AuditRow {
    audit_id: Uuid,
    trace_id: Uuid,
    user_id: String,
    grant_jti: Option<Uuid>,
    purpose: Option<String>,
    reason: Option<String>,
    outcome: String,
    denial_code: Option<String>,
    statuses: Value,
    occurred_at: OffsetDateTime,
}

/// Filters of the detokenization audit list.
#[derive(Debug, Default)]
pub struct AuditFilter<'a> {
    pub user: Option<&'a str>,
    pub token_id: Option<&'a str>,
    /// Only attempts at or after this time.
    pub since: Option<OffsetDateTime>,
}

const AUDIT_LIST: &str = "detokenization-audit";

/// One page of the tenant's detokenization attempts, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &AuditFilter<'_>,
    page: PageRequest<'_>,
) -> Result<Page<AuditRecord>, RecordsError> {
    let keyset = Keyset::new(page, tenant, AUDIT_LIST, Order::Ascending)?;
    let mut query = detokenization_audit::table
        .filter(detokenization_audit::tenant_id.eq(tenant.as_str()))
        .select(AuditRow::as_select())
        .order((
            detokenization_audit::occurred_at,
            detokenization_audit::audit_id,
        ))
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(user) = filter.user {
        query = query.filter(detokenization_audit::user_id.eq(user.to_owned()));
    }
    if let Some(token_id) = filter.token_id {
        let id = TokenId::parse_or_nil(token_id).as_uuid();
        query = query.filter(
            diesel::dsl::sql::<diesel::sql_types::Bool>("")
                .bind::<diesel::sql_types::Uuid, _>(id)
                .sql(" = ANY(token_ids)"),
        );
    }
    if let Some(at) = filter.since {
        query = query.filter(detokenization_audit::occurred_at.ge(at));
    }
    if let Some(after) =
        keyset.after::<detokenization_audit::occurred_at, detokenization_audit::audit_id, _>()?
    {
        query = query.filter(after);
    }
    let rows: Vec<AuditRow> = query.load(conn).await?;
    let page = keyset.page(rows, |r| Position::at(r.occurred_at, r.audit_id));
    Ok(page.map(|r| AuditRecord {
        audit_id: r.audit_id,
        trace_id: r.trace_id,
        user_id: r.user_id,
        grant_id: r.grant_jti,
        purpose: r.purpose,
        reason: r.reason,
        outcome: r.outcome,
        denial_code: r.denial_code,
        tokens: serde_json::from_value::<Vec<AuditedToken>>(r.statuses).unwrap_or_default(),
        occurred_at: r.occurred_at,
    }))
}

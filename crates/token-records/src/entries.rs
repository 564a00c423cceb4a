//! The vault's list: each entry's metadata, never its value. This crate reads
//! `vault_entries`, which the vault owns and writes, without depending on it, so that a
//! reader of this list (the console) cannot reach a value or a key.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use tokenize_core::PiiType;
use uuid::Uuid;

use db::schema::vault_entries;
use ids::{TenantId, TokenId, TokenPolicyId};

use crate::RecordsError;
use paging::{Keyset, Order, Page, PageRequest, Position};

const LIST: &str = "vault";

/// The status filter of the vault list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Active,
    Revoked,
    Expired,
}

impl Status {
    pub fn parse(raw: &str) -> Result<Self, RecordsError> {
        match raw {
            "active" => Ok(Status::Active),
            "revoked" => Ok(Status::Revoked),
            "expired" => Ok(Status::Expired),
            _ => Err(RecordsError::InvalidRequest(
                "status must be active, revoked or expired",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Revoked => "revoked",
            Status::Expired => "expired",
        }
    }

    fn of(
        revoked_at: Option<OffsetDateTime>,
        expires_at: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Self {
        if revoked_at.is_some() {
            Status::Revoked
        } else if expires_at.is_some_and(|at| at <= now) {
            Status::Expired
        } else {
            Status::Active
        }
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = vault_entries, check_for_backend(diesel::pg::Pg))]
struct Row {
    token_id: Uuid,
    token: String,
    pii_type: String,
    mode: String,
    policy_id: Uuid,
    policy_version: i32,
    created_at: OffsetDateTime,
    expires_at: Option<OffsetDateTime>,
    revoked_at: Option<OffsetDateTime>,
}

/// A vault entry as listed: everything but the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub token_id: TokenId,
    pub token: String,
    pub pii_type: String,
    pub mode: String,
    pub status: Status,
    pub policy_id: TokenPolicyId,
    pub policy_version: i32,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
}

/// What the vault list is asked for; the filters are checked here.
#[derive(Debug, Clone, Copy)]
pub struct ListRequest<'a> {
    /// A PII type code.
    pub pii_type: Option<&'a str>,
    /// active, revoked or expired.
    pub status: Option<&'a str>,
}

/// One page of the tenant's entries, oldest first (in token id order, which is creation order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    request: ListRequest<'_>,
    page: PageRequest<'_>,
) -> Result<Page<Entry>, RecordsError> {
    let ListRequest { pii_type, status } = request;
    let pii_type = pii_type
        .map(|t| {
            t.parse::<PiiType>()
                .map_err(|_| RecordsError::UnsupportedPiiType)
        })
        .transpose()?;
    let status = status.map(Status::parse).transpose()?;
    let keyset = Keyset::new(page, tenant, LIST, Order::Ascending)?;
    let now = OffsetDateTime::now_utc();
    let mut query = vault_entries::table
        .filter(vault_entries::tenant_id.eq(tenant.as_str()))
        .select(Row::as_select())
        // Token ids are UUIDv7: their order is creation order, and the primary key serves it.
        .order(vault_entries::token_id)
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(t) = pii_type {
        query = query.filter(vault_entries::pii_type.eq(t.as_str()));
    }
    query = match status {
        None => query,
        Some(Status::Revoked) => query.filter(vault_entries::revoked_at.is_not_null()),
        Some(Status::Expired) => query
            .filter(vault_entries::revoked_at.is_null())
            .filter(vault_entries::expires_at.le(now)),
        Some(Status::Active) => query.filter(vault_entries::revoked_at.is_null()).filter(
            vault_entries::expires_at
                .is_null()
                .or(vault_entries::expires_at.gt(now)),
        ),
    };
    if let Some(after) = keyset.after_id::<vault_entries::token_id, _>() {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    Ok(keyset
        .page(rows, |r| Position::id(r.token_id))
        .map(|r| Entry {
            status: Status::of(r.revoked_at, r.expires_at, now),
            token_id: TokenId::from_uuid(r.token_id),
            token: r.token,
            pii_type: r.pii_type,
            mode: r.mode,
            policy_id: TokenPolicyId::from_uuid(r.policy_id),
            policy_version: r.policy_version,
            created_at: r.created_at,
            expires_at: r.expires_at,
            revoked_at: r.revoked_at,
        }))
}

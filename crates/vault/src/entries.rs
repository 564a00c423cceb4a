//! Listing and revoking vault entries. Nothing here reads a value.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use tokenize_core::PiiType;
use uuid::Uuid;

use db::schema::vault_entries;
use ids::{Principal, Role, TenantId, TokenId, TokenPolicyId};

use crate::{VaultError, policies};
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
    pub fn parse(raw: &str) -> Result<Self, VaultError> {
        match raw {
            "active" => Ok(Status::Active),
            "revoked" => Ok(Status::Revoked),
            "expired" => Ok(Status::Expired),
            _ => Err(VaultError::InvalidRequest(
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
) -> Result<Page<Entry>, VaultError> {
    let ListRequest { pii_type, status } = request;
    let pii_type = pii_type
        .map(|t| {
            t.parse::<PiiType>()
                .map_err(|_| VaultError::UnsupportedPiiType)
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

/// A revocation: the first one's time, whoever revoked again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Revoked {
    pub token_id: TokenId,
    pub revoked_at: OffsetDateTime,
}

/// Revokes an entry. The caller must be an admin or hold a role the entry's policy allows to
/// detokenize: whoever may see a value may also withdraw it. Revoking again keeps the first
/// time, reason and actor.
pub async fn revoke(
    conn: &mut AsyncPgConnection,
    caller: &Principal,
    token_id: TokenId,
    reason: &str,
) -> Result<Revoked, VaultError> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > 1000 {
        return Err(VaultError::InvalidRequest(
            "reason must be 1 to 1000 characters",
        ));
    }
    let token_id = token_id.as_uuid();
    let tenant = &caller.tenant_id;
    let policy_id: Uuid = vault_entries::table
        .filter(vault_entries::tenant_id.eq(tenant.as_str()))
        .filter(vault_entries::token_id.eq(token_id))
        .select(vault_entries::policy_id)
        .first(conn)
        .await
        .optional()?
        .ok_or(VaultError::TokenNotFound)?;
    if !caller.is(Role::Admin) {
        let allowed = match policies::get(conn, tenant, TokenPolicyId::from_uuid(policy_id)).await {
            Ok(stored) => stored
                .policy
                .allowed_roles
                .iter()
                .any(|r| caller.has_role(r)),
            Err(VaultError::PolicyNotFound) => false,
            Err(e) => return Err(e),
        };
        if !allowed {
            return Err(VaultError::Forbidden(
                "revoking a token needs the admin role or a role its policy allows",
            ));
        }
    }
    let revoked_at: Option<OffsetDateTime> = diesel::update(
        vault_entries::table
            .filter(vault_entries::tenant_id.eq(tenant.as_str()))
            .filter(vault_entries::token_id.eq(token_id)),
    )
    .set((
        vault_entries::revoked_at.eq(diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
        >("COALESCE(revoked_at, now())")),
        vault_entries::revoked_by.eq(diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Text>,
        >("COALESCE(revoked_by, ")
        .bind::<diesel::sql_types::Text, _>(caller.user_id.as_str())
        .sql(")")),
        vault_entries::revoke_reason.eq(diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Text>,
        >("COALESCE(revoke_reason, ")
        .bind::<diesel::sql_types::Text, _>(reason)
        .sql(")")),
    ))
    .returning(vault_entries::revoked_at)
    .get_result(conn)
    .await
    .optional()?
    .flatten();
    let revoked_at = revoked_at.ok_or(VaultError::TokenNotFound)?;
    Ok(Revoked {
        token_id: TokenId::from_uuid(token_id),
        revoked_at,
    })
}

/// What detokenization reads of an entry.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = vault_entries, check_for_backend(diesel::pg::Pg))]
pub struct Sealed {
    pub token_id: Uuid,
    pub policy_id: Uuid,
    pub key_version: i32,
    pub ciphertext: Vec<u8>,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
}

/// The entries of `tenant` among `ids`, in no particular order.
pub async fn sealed(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    ids: &[Uuid],
) -> Result<Vec<Sealed>, VaultError> {
    Ok(vault_entries::table
        .filter(vault_entries::tenant_id.eq(tenant.as_str()))
        .filter(vault_entries::token_id.eq_any(ids))
        .select(Sealed::as_select())
        .load(conn)
        .await?)
}

pub use crate::value::Revealed;

/// Opens an entry's ciphertext. Only detokenization, after a grant was consumed, calls this.
pub fn reveal(
    keys: &keys::TenantKeys,
    tenant: &TenantId,
    entry: &Sealed,
) -> Result<Revealed, VaultError> {
    let plain = keys.data_key(entry.key_version)?.open(
        &crate::value::value_aad(tenant, entry.token_id),
        &entry.ciphertext,
    )?;
    crate::value::decode(plain)
}

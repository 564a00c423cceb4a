//! Vault entries: the list (in `token_records`, which reads no value), revocation, and
//! `reveal`, which only detokenization calls.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::vault_entries;
use ids::{Principal, Role, TenantId, TokenId, TokenPolicyId};
use paging::{Page, PageRequest};

pub use token_records::entries::{Entry, ListRequest, Status};

use crate::{VaultError, policies};

/// One page of the tenant's entries, oldest first (in token id order, which is creation order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    request: ListRequest<'_>,
    page: PageRequest<'_>,
) -> Result<Page<Entry>, VaultError> {
    Ok(token_records::entries::list(conn, tenant, request, page).await?)
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

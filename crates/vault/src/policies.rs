//! Tokenization policies, kept by `token_records` (a policy holds no value and needs no key,
//! so the console can show and edit them without the vault); the vault tokenizes under them.
//! These are the same functions, answering the vault's error.

use diesel_async::AsyncPgConnection;
use ids::{TenantId, TokenPolicyId, UserId};
use paging::{Page, PageRequest};

pub use token_records::policies::{Definition, PolicyRecord, RuleInput, StoredPolicy, validate};

use crate::VaultError;

/// Creates a policy at version 1.
pub async fn create(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    input: &Definition,
) -> Result<PolicyRecord, VaultError> {
    Ok(token_records::policies::create(conn, tenant, actor, input).await?)
}

/// Replaces a policy's whole definition after validating it, and bumps its version.
pub async fn update(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    policy_id: TokenPolicyId,
    input: &Definition,
) -> Result<PolicyRecord, VaultError> {
    Ok(token_records::policies::update(conn, tenant, actor, policy_id, input).await?)
}

/// The policy tokenization runs under.
pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: TokenPolicyId,
) -> Result<StoredPolicy, VaultError> {
    Ok(token_records::policies::get(conn, tenant, id).await?)
}

/// One page of the tenant's policies, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    page: PageRequest<'_>,
) -> Result<Page<PolicyRecord>, VaultError> {
    Ok(token_records::policies::list(conn, tenant, page).await?)
}

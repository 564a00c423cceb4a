//! The vault's answer to "is this a token we issued?", for the scans crate (which does not
//! depend on the vault): what makes a rescan of a remediated object see tokens, not new PII.

use diesel::result::Error as DieselError;
use diesel_async::AsyncPgConnection;
use ids::TenantId;

/// Looks candidates up among the tenant's vault entries.
#[derive(Debug, Clone, Copy, Default)]
pub struct VaultTokens;

#[async_trait::async_trait]
impl scans::tokens::IssuedTokens for VaultTokens {
    async fn issued(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        candidates: &[(&str, &str)],
    ) -> Result<Vec<bool>, DieselError> {
        vault::entries::issued(conn, tenant, candidates).await
    }

    async fn issued_lookups(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        lookups: &[uuid::Uuid],
    ) -> Result<Vec<bool>, DieselError> {
        vault::entries::issued_lookups(conn, tenant, lookups).await
    }
}

//! The tokens remediation wrote into customers' objects: what makes a rescan of a tokenized
//! object see the platform's own tokens, not new PII. Remediation writes these rows
//! (`store::written` inserts them in the statement that records the write) and forgets them;
//! the scans crate reads them ([`scans::tokens::Recorded`]), so that a scan worker recognizes
//! the platform's tokens without depending on remediation.
//!
//! **Security invariant:** a value is recognized as a token only where the platform wrote that
//! token into that object, by a remediation whose write was recorded. An equal token in the
//! vault is not enough: anyone who may tokenize can fill the vault with valid-looking
//! format-preserving tokens. The rows hold the vault's lookup key of each token (an unkeyed
//! digest of the token, which is itself stored in the clear in the vault) and a digest of the
//! object's name ([`scans::tokens::object_ref`]), never a value.

use diesel::result::Error as DieselError;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

/// Forgets the tokens `request` wrote: an undo put the original content back.
pub(crate) async fn forget_request(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    request: Uuid,
) -> Result<(), DieselError> {
    db::sql("DELETE FROM remediation_written_tokens WHERE tenant_id = $1 AND request_id = $2")
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(request)
        .execute(conn)
        .await?;
    Ok(())
}

/// Forgets the tokens written into a connector's objects, in the transaction that deletes it: no
/// scan can reach those objects through it again.
pub async fn forget_connector(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<(), DieselError> {
    db::sql("DELETE FROM remediation_written_tokens WHERE tenant_id = $1 AND connector_id = $2")
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .execute(conn)
        .await?;
    Ok(())
}

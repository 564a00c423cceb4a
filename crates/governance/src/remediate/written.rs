//! The tokens remediation wrote into customers' objects: what makes a rescan of a tokenized
//! object see the platform's own tokens, not new PII (the scans crate asks through
//! [`scans::tokens::WrittenTokens`], since it does not depend on governance).
//!
//! **Security invariant:** a value is recognized as a token only where the platform wrote that
//! token into that object, by a remediation whose write was recorded (`store::written` inserts
//! these rows in the statement that records the write). An equal token in the vault is not
//! enough: anyone who may tokenize can fill the vault with valid-looking format-preserving
//! tokens. The rows hold the vault's lookup key of each token (an unkeyed digest of the token,
//! which is itself stored in the clear in the vault) and a digest of the object's name, never a
//! value.

use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use scans::tokens::Place;
use uuid::Uuid;

/// Answers the scans crate's question from what remediation recorded.
#[derive(Debug, Clone, Copy, Default)]
pub struct WrittenTokens;

/// An object's name as these rows keep it: the first 16 bytes of SHA-256 over its bucket and
/// key, each written `<byte length>:<text>` after `dps-object-v1|`. Keys run to 1,024 bytes;
/// the digest keeps the index small.
pub(crate) fn object_ref(bucket: &str, object_key: &str) -> Uuid {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"dps-object-v1|");
    for field in [bucket, object_key] {
        ctx.update(field.len().to_string().as_bytes());
        ctx.update(b":");
        ctx.update(field.as_bytes());
    }
    let digest = ctx.finish();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    Uuid::from_bytes(bytes)
}

#[async_trait::async_trait]
impl scans::tokens::WrittenTokens for WrittenTokens {
    async fn written(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        candidates: &[(Place<'_>, &str, &str)],
    ) -> Result<Vec<bool>, DieselError> {
        let lookups: Vec<(Place<'_>, Uuid)> = candidates
            .iter()
            .map(|(place, pii_type, value)| {
                (*place, vault::lookup(tenant.as_str(), pii_type, value))
            })
            .collect();
        self.written_lookups(conn, tenant, &lookups).await
    }

    async fn written_lookups(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        lookups: &[(Place<'_>, Uuid)],
    ) -> Result<Vec<bool>, DieselError> {
        #[derive(diesel::QueryableByName)]
        struct Ordinal {
            #[diesel(sql_type = BigInt)]
            i: i64,
        }
        if lookups.is_empty() {
            return Ok(Vec::new());
        }
        let connectors: Vec<Uuid> = lookups.iter().map(|(p, _)| p.connector.as_uuid()).collect();
        let objects: Vec<Uuid> = lookups
            .iter()
            .map(|(p, _)| object_ref(p.bucket, p.object_key))
            .collect();
        let keys: Vec<Uuid> = lookups.iter().map(|(_, k)| *k).collect();
        // One probe of the primary key per candidate.
        let found: Vec<Ordinal> = db::sql(
            "SELECT c.i FROM unnest($2::uuid[], $3::uuid[], $4::uuid[])
                             WITH ORDINALITY AS c(connector_id, object_ref, lookup, i)
              WHERE EXISTS (SELECT 1 FROM remediation_written_tokens w
                             WHERE w.tenant_id = $1 AND w.connector_id = c.connector_id
                               AND w.object_ref = c.object_ref AND w.lookup = c.lookup)",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Array<SqlUuid>, _>(&connectors)
        .bind::<Array<SqlUuid>, _>(&objects)
        .bind::<Array<SqlUuid>, _>(&keys)
        .load(conn)
        .await?;
        let mut answers = vec![false; lookups.len()];
        for Ordinal { i } in found {
            if let Some(slot) = usize::try_from(i - 1).ok().and_then(|i| answers.get_mut(i)) {
                *slot = true;
            }
        }
        Ok(answers)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_name_is_told_apart_by_bucket_and_key() {
        let a = object_ref("hr", "people.csv");
        assert_eq!(a, object_ref("hr", "people.csv"));
        assert_ne!(a, object_ref("hr", "people.csv.bak"));
        assert_ne!(a, object_ref("hr2", "people.csv"));
        // The lengths keep a split at another place apart.
        assert_ne!(object_ref("ab", "c"), object_ref("a", "bc"));
    }
}

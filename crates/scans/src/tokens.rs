//! Tokens are not new PII. A format-preserving token looks like the value it replaced (an SSN
//! token is shaped like an SSN), so a remediated object scanned again would show "findings" that
//! are the tenant's own tokens, and tokenizing them again would loop. Before a batch is recorded,
//! each finding's value is looked up among the tokens the platform itself wrote into that
//! object; those found are recorded `tokenized`. The values go no further than this lookup.
//!
//! **Security invariant:** a value counts as a token only where the platform wrote that token
//! into that object. The vault holding an equal token is not enough: format-preserving tokens
//! are valid-looking values by design, and anyone who may tokenize can fill the vault with them
//! (every date of a layout, in a few dozen batches), which would otherwise hide every real value
//! of that shape from governance.
//!
//! A worker is handed, with each chunk, the lookup keys of the tokens written into each of its
//! objects, and tells tokens apart as it groups the object's findings ([`crate::group`]); an
//! object nothing was written into (nearly all) costs nothing per value. A worker outside the
//! platform reports groups `tokenized`; the platform refuses such a group in an object it wrote
//! no token into.

use std::fmt;

use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

use crate::lease::Resource;

/// The object a candidate was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place<'a> {
    pub connector: ConnectorId,
    pub bucket: &'a str,
    pub object_key: &'a str,
}

impl<'a> From<&'a Resource> for Place<'a> {
    fn from(r: &'a Resource) -> Self {
        Place {
            connector: r.connector_id,
            bucket: &r.bucket,
            object_key: &r.object_key,
        }
    }
}

/// Says which tokens the platform's remediation wrote into objects: [`Recorded`] in the
/// services and workers, none where a test scans without it.
#[async_trait::async_trait]
pub trait WrittenTokens: Send + Sync + fmt::Debug {
    /// For each object, in order, the vault's lookup keys of the tokens written into it.
    async fn written_in(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        objects: &[Place<'_>],
    ) -> Result<Vec<Vec<Uuid>>, DieselError>;
}

/// Answers [`WrittenTokens`] from the rows remediation records as it writes tokens into objects
/// (`remediation_written_tokens`, which remediation owns and writes; scans only reads it).
#[derive(Debug, Clone, Copy, Default)]
pub struct Recorded;

/// An object's name as these rows keep it: the first 16 bytes of SHA-256 over its bucket and
/// key, each written `<byte length>:<text>` after `dps-object-v1|`. Keys run to 1,024 bytes;
/// the digest keeps the index small.
pub fn object_ref(bucket: &str, object_key: &str) -> Uuid {
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
impl WrittenTokens for Recorded {
    async fn written_in(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        objects: &[Place<'_>],
    ) -> Result<Vec<Vec<Uuid>>, DieselError> {
        #[derive(diesel::QueryableByName)]
        struct Lookup {
            #[diesel(sql_type = BigInt)]
            i: i64,
            #[diesel(sql_type = SqlUuid)]
            lookup: Uuid,
        }
        let mut written = vec![Vec::new(); objects.len()];
        if objects.is_empty() {
            return Ok(written);
        }
        let connectors: Vec<Uuid> = objects.iter().map(|p| p.connector.as_uuid()).collect();
        let refs: Vec<Uuid> = objects
            .iter()
            .map(|p| object_ref(p.bucket, p.object_key))
            .collect();
        // One probe of the primary key's prefix per object.
        let found: Vec<Lookup> = db::sql(
            "SELECT o.i, w.lookup FROM unnest($2::uuid[], $3::uuid[])
                    WITH ORDINALITY AS o(connector_id, object_ref, i)
              CROSS JOIN LATERAL (
                    SELECT DISTINCT w.lookup FROM remediation_written_tokens w
                     WHERE w.tenant_id = $1 AND w.connector_id = o.connector_id
                       AND w.object_ref = o.object_ref
                    OFFSET 0) w",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Array<SqlUuid>, _>(&connectors)
        .bind::<Array<SqlUuid>, _>(&refs)
        .load(conn)
        .await?;
        for Lookup { i, lookup } in found {
            if let Some(slot) = usize::try_from(i - 1).ok().and_then(|i| written.get_mut(i)) {
                slot.push(lookup);
            }
        }
        Ok(written)
    }
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

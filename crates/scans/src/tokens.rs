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

use std::fmt;

use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

use crate::lease::Resource;
use crate::record::Outcome;

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

/// Says which values found in an object are tokens the platform's remediation wrote into that
/// object: [`Recorded`] in the services and workers, none where a test scans without it.
#[async_trait::async_trait]
pub trait WrittenTokens: Send + Sync + fmt::Debug {
    /// One answer per candidate (where, PII type, text), in order.
    async fn written(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        candidates: &[(Place<'_>, &str, &str)],
    ) -> Result<Vec<bool>, DieselError>;

    /// The same question asked by the vault's lookup keys of the candidates (what a worker
    /// outside the platform sends instead of values). One answer per key, in order.
    async fn written_lookups(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        lookups: &[(Place<'_>, Uuid)],
    ) -> Result<Vec<bool>, DieselError>;
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
    async fn written(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        candidates: &[(Place<'_>, &str, &str)],
    ) -> Result<Vec<bool>, DieselError> {
        let lookups: Vec<(Place<'_>, Uuid)> = candidates
            .iter()
            .map(|(place, pii_type, value)| {
                (
                    *place,
                    tokenize_core::lookup(tenant.as_str(), pii_type, value),
                )
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

/// Marks the batch's findings whose values are tokens the platform wrote into their objects,
/// and drops every value.
pub(crate) async fn recognize(
    conn: &mut AsyncPgConnection,
    lookup: Option<&dyn WrittenTokens>,
    tenant: &TenantId,
    batch: &mut [(Resource, Outcome)],
) -> Result<(), DieselError> {
    if let Some(lookup) = lookup {
        let candidates: Vec<(Place<'_>, &str, &str)> = batch
            .iter()
            .filter_map(|(resource, o)| match o {
                Outcome::Scanned(found) => Some((resource, found)),
                _ => None,
            })
            .flat_map(|(resource, found)| {
                found.iter().filter_map(move |f| {
                    f.candidate
                        .as_ref()
                        .map(|c| (Place::from(resource), f.pii_type.as_str(), c.0.as_str()))
                })
            })
            .collect();
        if !candidates.is_empty() {
            let answers = lookup.written(conn, tenant, &candidates).await?;
            let mut answers = answers.into_iter();
            for (_, outcome) in batch.iter_mut() {
                if let Outcome::Scanned(found) = outcome {
                    for f in found.iter_mut().filter(|f| f.candidate.is_some()) {
                        f.tokenized = answers.next().unwrap_or(false);
                    }
                }
            }
        }
    }
    for (_, outcome) in batch.iter_mut() {
        if let Outcome::Scanned(found) = outcome {
            for f in found.iter_mut() {
                f.candidate = None;
            }
        }
    }
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

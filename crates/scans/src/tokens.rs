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
use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, TenantId};

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
/// object. Remediation owns that record; the scans crate does not depend on it, so the service
/// wires it in.
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
        lookups: &[(Place<'_>, uuid::Uuid)],
    ) -> Result<Vec<bool>, DieselError>;
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

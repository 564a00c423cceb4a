//! Tokens are not new PII. A format-preserving token looks like the value it replaced (an SSN
//! token is shaped like an SSN), so a remediated object scanned again would show "findings" that
//! are the tenant's own tokens, and tokenizing them again would loop forever. Before a batch is
//! recorded, each finding's value is looked up, exactly, among the tokens the tenant's vault
//! issued; those found are recorded `tokenized`. The values go no further than this lookup.

use std::fmt;

use diesel::result::Error as DieselError;
use diesel_async::AsyncPgConnection;
use ids::TenantId;

use crate::record::Outcome;

/// Says which (type, value) pairs are tokens the tenant's vault issued. The vault owns that
/// knowledge; the scans crate does not depend on it, so the service wires it in.
#[async_trait::async_trait]
pub trait IssuedTokens: Send + Sync + fmt::Debug {
    /// One answer per candidate, in order.
    async fn issued(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        candidates: &[(&str, &str)],
    ) -> Result<Vec<bool>, DieselError>;

    /// The same question asked by the vault's lookup keys of the candidates (what a worker
    /// outside the platform sends instead of values). One answer per key, in order.
    async fn issued_lookups(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        lookups: &[uuid::Uuid],
    ) -> Result<Vec<bool>, DieselError>;
}

/// Marks the batch's findings whose values are issued tokens, and drops every value.
pub(crate) async fn recognize<R>(
    conn: &mut AsyncPgConnection,
    lookup: Option<&dyn IssuedTokens>,
    tenant: &TenantId,
    batch: &mut [(R, Outcome)],
) -> Result<(), DieselError> {
    if let Some(lookup) = lookup {
        let candidates: Vec<(&str, &str)> = batch
            .iter()
            .filter_map(|(_, o)| match o {
                Outcome::Scanned(found) => Some(found),
                _ => None,
            })
            .flatten()
            .filter_map(|f| {
                f.candidate
                    .as_ref()
                    .map(|c| (f.pii_type.as_str(), c.0.as_str()))
            })
            .collect();
        if !candidates.is_empty() {
            let answers = lookup.issued(conn, tenant, &candidates).await?;
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

//! Tokens for the tokenize action, issued by the vault in-process under the action's
//! tokenization policy: counted in usage and the monthly quota like any other tokenization.
//!
//! Each batch carries an idempotency key made of the request id and the batch's position, so a
//! request resumed after a crash gets the very tokens it got before (the vault replays its
//! stored answer), and the content it writes is byte for byte the same.

use std::collections::{BTreeMap, HashMap};

use diesel_async::AsyncPgConnection;
use ids::{TenantId, TokenPolicyId};
use keys::KeyRing;
use uuid::Uuid;
use vault::VaultError;
use vault::tokenize::{BatchMode, Item, ItemOutcome, Outcome, Request, Run, Tokenized};

use crate::content::Span;
use crate::stop::{Reason, Stop};

/// Each distinct (type, value) of the spans, with its token.
pub(crate) type Tokens = HashMap<(String, String), String>;

/// What a batch answered, as the vault keeps it for the idempotency key: the tokens in item
/// order. Tokens only, never a value.
#[derive(serde::Serialize, serde::Deserialize)]
struct Answer {
    tokens: Vec<Option<String>>,
}

fn answer(result: &Tokenized) -> Vec<u8> {
    let mut tokens = vec![None; result.results.len()];
    for r in &result.results {
        if let (Some(slot), ItemOutcome::Tokenized { token, .. }) =
            (tokens.get_mut(r.index), &r.outcome)
        {
            slot.clone_from(token);
        }
    }
    serde_json::to_vec(&Answer { tokens }).unwrap_or_default()
}

pub(crate) async fn issue(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    policy: TokenPolicyId,
    request: Uuid,
    spans: &[Span],
) -> Result<Tokens, Stop> {
    // Distinct values in a fixed order, so the batches (and their keys) are the same each run.
    let distinct: BTreeMap<(String, String), ()> = spans
        .iter()
        .map(|s| ((s.pii_type.clone(), s.value.clone()), ()))
        .collect();
    let distinct: Vec<(String, String)> = distinct.into_keys().collect();
    let mut tokens = Tokens::with_capacity(distinct.len());
    for (batch, values) in distinct.chunks(vault::tokenize::MAX_ITEMS).enumerate() {
        let call = Request {
            policy_id: policy,
            items: values
                .iter()
                .map(|(pii_type, value)| Item {
                    value: value.clone(),
                    pii_type: pii_type.clone(),
                    mode: None,
                })
                .collect(),
            batch_mode: BatchMode::AllOrNothing,
            idempotency_key: Some(format!("remediation:{request}:{batch}")),
            run: Run::Write,
        };
        let body = match vault::tokenize::tokenize(conn, keyring, tenant, &call, &answer).await {
            Ok(Outcome::Done { body, .. } | Outcome::Replayed { body }) => body,
            Ok(Outcome::Rejected { first, .. }) => {
                return Err(Stop::fail(Reason::TokenizeRefused(first.code)));
            }
            Err(VaultError::QuotaExceeded) => return Err(Stop::fail(Reason::QuotaExceeded)),
            Err(VaultError::PolicyNotFound) => {
                return Err(Stop::fail(Reason::TokenizationPolicyNotFound));
            }
            Err(VaultError::Database(e)) => return Err(Stop::Database(e)),
            Err(e) => return Err(Stop::retry_with(Reason::VaultUnavailable, e)),
        };
        let answered: Answer = serde_json::from_slice(&body)
            .map_err(|_| Stop::fail(Reason::TokenizeAnswerUnreadable))?;
        if answered.tokens.len() != values.len() {
            return Err(Stop::fail(Reason::TokenizeAnswerUnreadable));
        }
        for (key, token) in values.iter().zip(answered.tokens) {
            let token = token.ok_or_else(|| Stop::fail(Reason::TokenizeIncomplete))?;
            tokens.insert(key.clone(), token);
        }
    }
    Ok(tokens)
}

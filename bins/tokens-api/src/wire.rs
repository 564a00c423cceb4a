//! The one place tokens-api turns requests into domain calls and domain results into the wire
//! shapes of `api-types`. Domain crates know nothing of these shapes.

use api_types::tokens as wire;
use vault::VaultError;
use vault::tokenize::{ItemOutcome, Tokenized};

/// A page's pagination as the list responses show it.
pub fn pagination(p: paging::Pagination) -> api_types::Pagination {
    api_types::Pagination {
        limit: p.limit,
        has_more: p.has_more,
        next_cursor: p.next_cursor,
    }
}

pub fn tokenize_request(
    body: wire::TokenizeRequest,
    dry_run: bool,
) -> Result<vault::tokenize::Request, VaultError> {
    Ok(vault::tokenize::Request {
        policy_id: ids::TokenPolicyId::parse_or_nil(&body.policy_id),
        items: body
            .items
            .into_iter()
            .map(|i| vault::tokenize::Item {
                value: i.value,
                pii_type: i.pii_type,
                mode: i.mode,
            })
            .collect(),
        batch_mode: body
            .batch_mode
            .as_deref()
            .map(str::parse)
            .transpose()?
            .unwrap_or_default(),
        idempotency_key: body.idempotency_key,
        run: if dry_run {
            vault::tokenize::Run::DryRun
        } else {
            vault::tokenize::Run::Write
        },
    })
}

/// An item not written because another item of its ALL_OR_NOTHING batch failed.
const SKIPPED_CODE: &str = "BATCH_REJECTED";
const SKIPPED_MESSAGE: &str = "not written: another item of this ALL_OR_NOTHING batch failed";

pub fn item_error(failure: vault::tokenize::ItemFailure) -> wire::ItemError {
    wire::ItemError {
        code: failure.code.into(),
        message: failure.message.into(),
    }
}

pub fn tokenize_response(result: &Tokenized) -> wire::TokenizeResponse {
    let results = result
        .results
        .iter()
        .map(|r| match &r.outcome {
            ItemOutcome::Tokenized {
                token,
                token_id,
                mode,
                fallback,
            } => wire::TokenizeResult::Tokenized(wire::TokenizedItem {
                index: r.index,
                token: token.clone(),
                token_id: token_id.map(|id| id.to_string()),
                status: "TOKENIZED".into(),
                mode: mode.as_str().into(),
                fallback: fallback.map(|f| wire::Fallback {
                    mode: f.mode.as_str().into(),
                    reason_code: f.reason_code.into(),
                    reason: f.reason.into(),
                }),
            }),
            ItemOutcome::Failed(failure) => wire::TokenizeResult::Failed(wire::FailedItem {
                index: r.index,
                status: "FAILED".into(),
                error: item_error(*failure),
            }),
            ItemOutcome::Skipped => wire::TokenizeResult::Failed(wire::FailedItem {
                index: r.index,
                status: "SKIPPED".into(),
                error: wire::ItemError {
                    code: SKIPPED_CODE.into(),
                    message: SKIPPED_MESSAGE.into(),
                },
            }),
        })
        .collect();
    wire::TokenizeResponse {
        results,
        success_count: result.success_count(),
        failure_count: result.failure_count(),
        batch_policy_version: result.batch_policy_version,
        trace_id: result.trace_id.to_string(),
    }
}

/// The response body of a tokenize call: what is sent, and what an idempotency key replays.
/// The bytes `tokenize_response` would serialize to (a test holds the two together), written
/// from the result directly: a batch of 1000 items would otherwise copy every token, id and
/// label into `api-types`' owned strings only to serialize and drop them.
pub fn tokenize_body(result: &Tokenized) -> Vec<u8> {
    // A tokenized item's result takes about 150 bytes: sized once instead of doubling the
    // buffer a dozen times, copying what it held each time.
    let mut out = Vec::with_capacity(256 + 160 * result.results.len());
    // Serializing strings and numbers into memory cannot fail.
    match serde_json::to_writer(&mut out, &body::Response(result)) {
        Ok(()) => out,
        Err(_) => Vec::new(),
    }
}

/// [`wire::TokenizeResponse`]'s shape, field for field, borrowed from a [`Tokenized`].
mod body {
    use serde::ser::{Serialize, SerializeSeq as _, SerializeStruct as _, Serializer};
    use vault::tokenize::{ItemOutcome, ItemResult, Tokenized};

    use super::{SKIPPED_CODE, SKIPPED_MESSAGE};

    pub(super) struct Response<'a>(pub &'a Tokenized);

    impl Serialize for Response<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let result = self.0;
            let mut s = serializer.serialize_struct("TokenizeResponse", 5)?;
            s.serialize_field("results", &Results(&result.results))?;
            s.serialize_field("success_count", &result.success_count())?;
            s.serialize_field("failure_count", &result.failure_count())?;
            s.serialize_field("batch_policy_version", &result.batch_policy_version)?;
            s.serialize_field("trace_id", &Shown(result.trace_id))?;
            s.end()
        }
    }

    struct Results<'a>(&'a [ItemResult]);

    impl Serialize for Results<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
            for item in self.0 {
                seq.serialize_element(&Item(item))?;
            }
            seq.end()
        }
    }

    struct Item<'a>(&'a ItemResult);

    impl Serialize for Item<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let index = self.0.index;
            let failed = |serializer: S, status: &str, code: &str, message: &str| {
                let mut s = serializer.serialize_struct("FailedItem", 3)?;
                s.serialize_field("index", &index)?;
                s.serialize_field("status", status)?;
                s.serialize_field("error", &Error { code, message })?;
                s.end()
            };
            match &self.0.outcome {
                ItemOutcome::Tokenized {
                    token,
                    token_id,
                    mode,
                    fallback,
                } => {
                    let fields = if fallback.is_some() { 6 } else { 5 };
                    let mut s = serializer.serialize_struct("TokenizedItem", fields)?;
                    s.serialize_field("index", &index)?;
                    s.serialize_field("token", token)?;
                    s.serialize_field("token_id", &token_id.map(Shown))?;
                    s.serialize_field("status", "TOKENIZED")?;
                    s.serialize_field("mode", mode.as_str())?;
                    match fallback {
                        Some(f) => s.serialize_field(
                            "fallback",
                            &Fallback {
                                mode: f.mode.as_str(),
                                reason_code: f.reason_code,
                                reason: f.reason,
                            },
                        )?,
                        None => s.skip_field("fallback")?,
                    }
                    s.end()
                }
                ItemOutcome::Failed(failure) => {
                    failed(serializer, "FAILED", failure.code, failure.message)
                }
                ItemOutcome::Skipped => {
                    failed(serializer, "SKIPPED", SKIPPED_CODE, SKIPPED_MESSAGE)
                }
            }
        }
    }

    #[derive(serde::Serialize)]
    struct Error<'a> {
        code: &'a str,
        message: &'a str,
    }

    #[derive(serde::Serialize)]
    struct Fallback<'a> {
        mode: &'a str,
        reason_code: &'a str,
        reason: &'a str,
    }

    /// A value written as its `Display` text (an id), without a `String` of its own.
    struct Shown<T>(T);

    impl<T: std::fmt::Display> Serialize for Shown<T> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_str(&self.0)
        }
    }
}

pub fn definition(input: wire::PolicyInput) -> vault::policies::Definition {
    vault::policies::Definition {
        name: input.name,
        type_rules: input
            .type_rules
            .into_iter()
            .map(|(code, rule)| {
                (
                    code,
                    vault::policies::RuleInput {
                        mode: rule.mode,
                        min_confidence: rule.min_confidence,
                        deterministic_scope: rule.deterministic_scope,
                    },
                )
            })
            .collect(),
        allowed_roles: input.allowed_roles,
        allowed_purposes: input.allowed_purposes,
        require_reason: input.require_reason,
        failure_mode: input.failure_mode,
        token_ttl_seconds: input.token_ttl_seconds,
        default_region: input.default_region,
    }
}

pub fn policy(record: vault::policies::PolicyRecord) -> wire::Policy {
    let d = record.definition;
    wire::Policy {
        policy_id: record.policy_id.to_string(),
        version: record.version,
        name: d.name,
        type_rules: d
            .type_rules
            .into_iter()
            .map(|(code, rule)| {
                (
                    code,
                    wire::TypeRule {
                        mode: rule.mode,
                        min_confidence: rule.min_confidence,
                        deterministic_scope: rule.deterministic_scope,
                    },
                )
            })
            .collect(),
        allowed_roles: d.allowed_roles,
        allowed_purposes: d.allowed_purposes,
        require_reason: d.require_reason,
        failure_mode: d.failure_mode.unwrap_or_default(),
        token_ttl_seconds: d.token_ttl_seconds,
        default_region: d.default_region.unwrap_or_default(),
        created_at: record.created_at,
        updated_at: record.updated_at,
    }
}

pub fn policy_list(page: paging::Page<vault::policies::PolicyRecord>) -> wire::PolicyList {
    wire::PolicyList {
        items: page.items.into_iter().map(policy).collect(),
        pagination: pagination(page.pagination),
    }
}

pub fn vault_list(page: paging::Page<vault::entries::Entry>) -> wire::VaultList {
    wire::VaultList {
        items: page
            .items
            .into_iter()
            .map(|e| wire::VaultEntry {
                token_id: e.token_id.to_string(),
                token: e.token,
                pii_type: e.pii_type,
                mode: e.mode,
                status: e.status.as_str().into(),
                policy_id: e.policy_id.to_string(),
                policy_version: e.policy_version,
                created_at: e.created_at,
                expires_at: e.expires_at,
                revoked_at: e.revoked_at,
            })
            .collect(),
        pagination: pagination(page.pagination),
    }
}

pub fn revoked(r: vault::entries::Revoked) -> wire::Revoked {
    wire::Revoked {
        token_id: r.token_id.to_string(),
        status: "revoked".into(),
        revoked_at: r.revoked_at,
    }
}

pub fn grant(g: grants::Grant) -> wire::GrantResponse {
    wire::GrantResponse {
        grant_jwt: g.grant_jwt,
        expires_in_seconds: g.expires_in.as_secs(),
        trace_id: g.trace_id.to_string(),
    }
}

/// The one place a revealed value becomes response text.
pub fn detokenized(d: grants::Detokenized) -> wire::DetokenizeResponse {
    let success_count = d.success_count();
    let results: Vec<wire::DetokenizeResult> = d
        .results
        .into_iter()
        .map(|r| wire::DetokenizeResult {
            token_id: r.token_id,
            status: r.status.as_str().into(),
            value: r.value.map(|v| v.expose().to_owned()),
            revoked_at: r.revoked_at,
            currency: r.currency,
        })
        .collect();
    wire::DetokenizeResponse {
        failure_count: results.len() - success_count,
        success_count,
        results,
        trace_id: d.trace_id.to_string(),
    }
}

pub fn audit(page: paging::Page<grants::AuditRecord>) -> wire::DetokenizationAudit {
    wire::DetokenizationAudit {
        items: page
            .items
            .into_iter()
            .map(|r| wire::DetokenizationRecord {
                audit_id: r.audit_id.to_string(),
                trace_id: r.trace_id.to_string(),
                user_id: r.user_id,
                grant_id: r.grant_id.map(|j| j.to_string()),
                purpose: r.purpose,
                reason: r.reason,
                outcome: r.outcome,
                denial_code: r.denial_code,
                tokens: r
                    .tokens
                    .into_iter()
                    .map(|t| wire::AuditedToken {
                        token_id: t.token_id,
                        status: t.status,
                    })
                    .collect(),
                occurred_at: r.occurred_at,
            })
            .collect(),
        pagination: pagination(page.pagination),
    }
}

pub fn usage(u: limits::Usage) -> wire::Usage {
    wire::Usage {
        period_start: u.period_start,
        period_end: u.period_end,
        tokens: wire::UsageCounts {
            created: u.tokens.created,
            active: u.tokens.active,
            revoked: u.tokens.revoked,
            expired: u.tokens.expired,
        },
        tokenize_requests: u.tokenize_requests,
        tokenize_items: u.tokenize_items,
        detokenize_requests: u.detokenize_requests,
        detokenize_items: u.detokenize_items,
        grants_issued: u.grants_issued,
        revocations: u.revocations,
        quota: wire::Quota {
            limit: u.quota.limit,
            used: u.quota.used,
            remaining: u.quota.remaining,
        },
    }
}

#[cfg(test)]
mod tests {
    use ids::TokenId;
    use tokenize_core::Mode;
    use vault::tokenize::{Fallback, ItemFailure, ItemOutcome, ItemResult, Tokenized};

    use super::*;

    #[test]
    fn the_body_is_the_wire_response_byte_for_byte() {
        let tokenized = |index, token: Option<&str>, token_id, fallback| ItemResult {
            index,
            outcome: ItemOutcome::Tokenized {
                token: token.map(str::to_owned),
                token_id,
                mode: Mode::Deterministic,
                fallback,
            },
        };
        let result = Tokenized {
            results: vec![
                tokenized(0, Some("dtk_a\"b\\c\u{1}"), Some(TokenId::new()), None),
                tokenized(1, None, None, None),
                tokenized(
                    2,
                    Some("rtk_x"),
                    Some(TokenId::new()),
                    Some(Fallback {
                        mode: Mode::Randomized,
                        reason_code: "INVALID_VALUE",
                        reason: "not a \"valid\" value",
                    }),
                ),
                ItemResult {
                    index: 3,
                    outcome: ItemOutcome::Failed(ItemFailure {
                        code: "EMPTY_VALUE",
                        message: "the value is empty",
                    }),
                },
                ItemResult {
                    index: 4,
                    outcome: ItemOutcome::Skipped,
                },
            ],
            batch_policy_version: 7,
            trace_id: TokenId::new().as_uuid(),
        };
        let body = tokenize_body(&result);
        assert_eq!(
            String::from_utf8(body.clone()).unwrap(),
            serde_json::to_string(&tokenize_response(&result)).unwrap()
        );
        let empty = Tokenized {
            results: Vec::new(),
            ..result
        };
        assert_eq!(
            tokenize_body(&empty),
            serde_json::to_vec(&tokenize_response(&empty)).unwrap()
        );
    }
}

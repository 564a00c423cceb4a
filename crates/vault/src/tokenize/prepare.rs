//! Preparing one item in memory: its type, its rule, its normalized value, its token or
//! surrogate, its lookup key or fingerprint, and its sealed payload. Nothing here touches the
//! database.

use std::collections::BTreeMap;

use ids::TenantId;
use keys::TenantKeys;
use tokenize_core::{
    FailureMode, FormatPreserving, ItemCode, Mode, Normalized, PiiType, Policy, Secret, Surrogate,
    TypeRule, ValueError, deterministic_token, fingerprint_as_read, fingerprint_as_written,
    format_preserving, normalize,
};

use super::{Fallback, Item, ItemFailure};
use crate::VaultError;
use crate::policies::StoredPolicy;
use crate::value::payload;

/// An item ready to be written.
pub(super) struct Pending {
    pub index: usize,
    pub pii_type: PiiType,
    pub mode: Mode,
    /// Known here for deterministic and enciphered format-preserving tokens; drawn when
    /// written for surrogates; derived from the token id when written for randomized ones.
    pub token: Option<String>,
    /// The lookup key of the token ([`tokenize_core::lookup`]), which also keeps one entry per value
    /// for deterministic and enciphered tokens. Set with the token, except for randomized
    /// tokens, which their token ids find.
    pub lookup: Option<uuid::Uuid>,
    /// The keyed MAC of the value as written: what finds the entry of a surrogate's value,
    /// whose token says nothing about it. Surrogates only.
    pub fingerprint: Option<[u8; 32]>,
    pub surrogate: Option<Surrogate>,
    /// The normalized value of an enciphered format-preserving token: if the token turns out
    /// to name another value already, the item takes a surrogate of this value's shape
    /// instead (see [`tokenize_core::surrogate_for`]).
    pub enciphered: Option<Box<Normalized>>,
    pub value: Secret,
    pub fallback: Option<Fallback>,
}

/// Why an item cannot be handled under its rule; fail-open turns these into a fallback.
struct RuleFailure {
    code: ItemCode,
    reason: &'static str,
}

impl From<ValueError> for RuleFailure {
    fn from(e: ValueError) -> Self {
        Self {
            code: e.code,
            reason: e.reason,
        }
    }
}

/// An item ready to be written, or why it cannot be: a plain result, so that a batch's
/// thousand items are moved into place, not each boxed and unboxed on the way.
pub(super) type Prepared = Result<Pending, ItemFailure>;

fn failed(code: &'static str, message: &'static str) -> Prepared {
    Err(ItemFailure { code, message })
}

/// The policy's rule for each type, with its deterministic scope ([`Policy::scope_key`]),
/// computed once per batch rather than once per item.
pub(super) fn rules(stored: &StoredPolicy) -> Rules<'_> {
    let policy_id = stored.policy_id.to_string();
    stored
        .policy
        .type_rules
        .iter()
        .map(|(pii_type, rule)| (*pii_type, (rule, Policy::scope_key(rule, &policy_id))))
        .collect()
}

/// A policy's rules by type, each with its deterministic scope.
pub(super) type Rules<'a> = BTreeMap<PiiType, (&'a TypeRule, String)>;

pub(super) fn prepare(
    index: usize,
    item: &Item,
    stored: &StoredPolicy,
    rules: &Rules<'_>,
    keys: &TenantKeys,
    tenant: &TenantId,
) -> Result<Prepared, VaultError> {
    let policy: &Policy = &stored.policy;
    let pii_type = match item.pii_type.parse::<PiiType>() {
        Ok(t) => t,
        Err(e) => return Ok(failed(e.code.as_str(), e.reason)),
    };
    if item.value.trim().is_empty() {
        return Ok(failed(ItemCode::EmptyValue.as_str(), "the value is empty"));
    }
    let requested_mode = match item.mode.as_deref().map(str::parse::<Mode>) {
        None => None,
        Some(Ok(mode)) => Some(mode),
        Some(Err(())) => {
            return Ok(failed(
                "INVALID_MODE",
                "mode must be deterministic, randomized or format_preserving",
            ));
        }
    };
    let attempt = (|| -> Result<Pending, RuleFailure> {
        let (rule, scope) = rules.get(&pii_type).ok_or(RuleFailure {
            code: ItemCode::NoRuleForType,
            reason: "the policy has no rule for this pii_type",
        })?;
        let value: Normalized = normalize(pii_type, &item.value, &policy.normalize_options())?;
        let mode = requested_mode.unwrap_or(rule.mode);
        let mut pending = Pending {
            index,
            pii_type,
            mode,
            token: None,
            lookup: None,
            fingerprint: None,
            surrogate: None,
            enciphered: None,
            value: payload(value.value.expose(), value.currency.as_deref()),
            fallback: None,
        };
        let tenant = tenant.as_str();
        match mode {
            Mode::Deterministic => {
                let token = deterministic_token(&keys.mac, scope, &value);
                pending.lookup = Some(tokenize_core::lookup(tenant, pii_type.as_str(), &token));
                pending.token = Some(token);
            }
            Mode::Randomized => {}
            Mode::FormatPreserving => match format_preserving(&keys.fpe, &value) {
                FormatPreserving::Enciphered(token) => {
                    pending.lookup = Some(tokenize_core::lookup(tenant, pii_type.as_str(), &token));
                    pending.token = Some(token);
                    pending.enciphered = Some(Box::new(value));
                }
                FormatPreserving::Surrogate(s) => {
                    if s.space() <= 1 {
                        return Err(RuleFailure {
                            code: ItemCode::SurrogateExhausted,
                            reason: "the value's shape leaves no room for a surrogate",
                        });
                    }
                    // A phone's written form does not settle its value (it reads by region).
                    pending.fingerprint = Some(if pii_type == PiiType::Phone {
                        fingerprint_as_read(&keys.fingerprint, &value)
                    } else {
                        fingerprint_as_written(&keys.fingerprint, &value)
                    });
                    pending.surrogate = Some(s);
                }
                FormatPreserving::Unshapeable => {
                    return Err(RuleFailure {
                        code: ItemCode::InvalidValue,
                        reason: "a format-preserving token needs the value's letters and digits \
                                 in ASCII; this value has others it would copy",
                    });
                }
            },
        }
        Ok(pending)
    })();
    match attempt {
        Ok(pending) => Ok(Ok(pending)),
        Err(failure) if failure.code == ItemCode::EmptyValue => {
            Ok(failed(failure.code.as_str(), failure.reason))
        }
        Err(failure) => match policy.failure_mode {
            FailureMode::FailClosed => Ok(failed(failure.code.as_str(), failure.reason)),
            // Still protected: the raw value, randomized, with the fallback stated.
            FailureMode::FailOpen => Ok(Ok(Pending {
                index,
                pii_type,
                mode: Mode::Randomized,
                token: None,
                lookup: None,
                fingerprint: None,
                surrogate: None,
                enciphered: None,
                value: payload(item.value.trim(), None),
                fallback: Some(Fallback {
                    mode: Mode::Randomized,
                    reason_code: failure.code.as_str(),
                    reason: failure.reason,
                }),
            })),
        },
    }
}

//! Why a remediation step stopped: for good, for now, or on the database. At the bottom of the
//! module graph, so every step can say it.
//!
//! **Security invariant:** what a tenant sees of a stop (a request's `reason`, its
//! `action_failed` audit entry, an undo's error) is a [`Reason`], a code from a closed list.
//! A storage provider's own text can name role ARNs, principals and other systems' object keys;
//! it goes to the operator's log, once, where the stop is handled ([`Cause::detail`]), and
//! nowhere else. The `remediation_runs.reason` column refuses anything not shaped like a code.

use std::fmt;

use connectors::cloud::{AccessError, Failure};
use diesel::result::Error as DieselError;

use crate::content::Unsupported;

/// Why a step stopped.
#[derive(Debug)]
pub enum Stop {
    /// For good: the request ends `failed` with this reason.
    Fail(Cause),
    /// For now: taken again after a backoff.
    Retry(Cause),
    Database(DieselError),
}

/// A stop's reason, and the text behind it for the operator's log only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub reason: Reason,
    /// The provider's or a library's explanation: logged once with the request's ids, never
    /// stored, never shown to the tenant.
    pub detail: Option<String>,
}

impl From<Reason> for Cause {
    fn from(reason: Reason) -> Self {
        Cause {
            reason,
            detail: None,
        }
    }
}

impl Cause {
    /// Logs the detail, if any, once, for the operator.
    pub(crate) fn log(&self, tenant: &str, request: &uuid::Uuid) {
        if let Some(detail) = &self.detail {
            tracing::warn!(tenant, %request, reason = %self.reason, %detail, "a remediation step stopped");
        }
    }
}

impl From<DieselError> for Stop {
    fn from(e: DieselError) -> Self {
        Stop::Database(e)
    }
}

impl Stop {
    pub(crate) fn fail(reason: Reason) -> Self {
        Stop::Fail(reason.into())
    }

    pub(crate) fn retry(reason: Reason) -> Self {
        Stop::Retry(reason.into())
    }

    /// A retry whose cause has a text the operator should see.
    pub(crate) fn retry_with(reason: Reason, detail: impl fmt::Display) -> Self {
        Stop::Retry(Cause {
            reason,
            detail: Some(detail.to_string()),
        })
    }

    /// A storage failure: a changed object fails the request; a missing one or refused access
    /// too (nothing will change by waiting); the rest is retried. The provider's message is
    /// kept for the operator's log only.
    pub(crate) fn storage(e: AccessError) -> Self {
        let reason = Reason::storage(e.failure);
        let cause = Cause {
            reason,
            detail: Some(e.message),
        };
        match e.failure {
            Failure::Changed
            | Failure::NotFound
            // The same size tomorrow: retrying would only delay the answer.
            | Failure::TooLarge
            | Failure::Permission
            // Archived, immutable or leased: until its owner acts, asking again is refused too.
            | Failure::Refused => Stop::Fail(cause),
            Failure::Identity | Failure::Network | Failure::Provider => Stop::Retry(cause),
        }
    }
}

/// Every reason a remediation can stop for: the closed list of what a tenant may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    // The storage's answers.
    /// 401 or 403: the connector's identity may not do this.
    AccessDenied,
    ObjectNotFound,
    /// A write's precondition failed: the object is not what the request was planned on.
    ObjectChanged,
    ObjectTooLarge,
    /// Archived, immutable, under a hold or a retention policy.
    StorageRefused,
    /// The storage could not be reached, or timed out.
    Network,
    /// The platform's identity, or the exchange for the connector's credentials, failed.
    Identity,
    /// The storage answered something unusable, or failed on its side.
    ProviderError,

    // What the object holds.
    Unsupported(Unsupported),
    AppendBlob,
    PageBlob,
    ValuesNotFound,
    NotARewrite,
    NotARemediation,
    ClassifiersUnreadable,

    // Where copies go.
    SnapshotWouldBePublic,
    QuarantineWouldBePublic,
    SnapshotMissing,
    SnapshotMismatch,

    // The vault.
    QuotaExceeded,
    TokenizationPolicyNotFound,
    /// The vault refused an item, with its Area A error code.
    TokenizeRefused(&'static str),
    TokenizeAnswerUnreadable,
    TokenizeIncomplete,
    VaultUnavailable,

    // The platform's own state.
    TenantKeysUnreadable,
    SettingsUnreadable,
    ReceiptUnsigned,
    FindingsUnreadable,
    PolicyVersionMissing,
    ConnectorUnreadable,
    StorageUnopened,
    /// The storage could not say whether a denied request's object is untouched.
    ObjectStateUnknown,
    /// Another taker holds the request now.
    MovedOn,
    AttemptsExhausted,

    // The tenant's decisions.
    ConnectorDeleted,
    PolicyDeleted,
    PolicyWithdrawn,
    SafetyClassDenied,
    /// The tenant's co-signer did not approve, with why.
    CosignFailed(&'static str),
}

impl Reason {
    /// What a storage failure is, to the tenant.
    pub(crate) fn storage(failure: Failure) -> Self {
        match failure {
            Failure::Permission => Reason::AccessDenied,
            Failure::NotFound => Reason::ObjectNotFound,
            Failure::Changed => Reason::ObjectChanged,
            Failure::TooLarge => Reason::ObjectTooLarge,
            Failure::Refused => Reason::StorageRefused,
            Failure::Network => Reason::Network,
            Failure::Identity => Reason::Identity,
            Failure::Provider => Reason::ProviderError,
        }
    }

    fn code(self) -> (&'static str, Option<&'static str>) {
        match self {
            Reason::AccessDenied => ("access_denied", None),
            Reason::ObjectNotFound => ("object_not_found", None),
            Reason::ObjectChanged => ("object_changed", None),
            Reason::ObjectTooLarge => ("object_too_large", None),
            Reason::StorageRefused => ("storage_refused", None),
            Reason::Network => ("network", None),
            Reason::Identity => ("identity", None),
            Reason::ProviderError => ("provider_error", None),
            // The issue that made archives readable names this one on its own: the object's
            // format, not something in its content, is what no rewrite supports.
            Reason::Unsupported(Unsupported::Format) => ("unsupported_format", None),
            Reason::Unsupported(u) => ("unsupported_content", Some(u.code())),
            Reason::AppendBlob => ("unsupported_content", Some("append_blob")),
            Reason::PageBlob => ("unsupported_content", Some("page_blob")),
            Reason::ValuesNotFound => ("values_not_found", None),
            Reason::NotARewrite => ("not_a_rewrite", None),
            Reason::NotARemediation => ("not_a_remediation", None),
            Reason::ClassifiersUnreadable => ("classifiers_unreadable", None),
            Reason::SnapshotWouldBePublic => ("snapshot_would_be_public", None),
            Reason::QuarantineWouldBePublic => ("quarantine_destination_is_public", None),
            Reason::SnapshotMissing => ("snapshot_missing", None),
            Reason::SnapshotMismatch => ("snapshot_mismatch", None),
            Reason::QuotaExceeded => ("quota_exceeded", None),
            Reason::TokenizationPolicyNotFound => ("tokenization_policy_not_found", None),
            Reason::TokenizeRefused(code) => ("tokenize_refused", Some(code)),
            Reason::TokenizeAnswerUnreadable => ("tokenize_answer_unreadable", None),
            Reason::TokenizeIncomplete => ("tokenize_incomplete", None),
            Reason::VaultUnavailable => ("vault_unavailable", None),
            Reason::TenantKeysUnreadable => ("tenant_keys_unreadable", None),
            Reason::SettingsUnreadable => ("settings_unreadable", None),
            Reason::ReceiptUnsigned => ("receipt_unsigned", None),
            Reason::FindingsUnreadable => ("findings_unreadable", None),
            Reason::PolicyVersionMissing => ("policy_version_missing", None),
            Reason::ConnectorUnreadable => ("connector_unreadable", None),
            Reason::StorageUnopened => ("storage_unopened", None),
            Reason::ObjectStateUnknown => ("object_state_unknown", None),
            Reason::MovedOn => ("moved_on", None),
            Reason::AttemptsExhausted => ("attempts_exhausted", None),
            Reason::ConnectorDeleted => ("connector_deleted", None),
            Reason::PolicyDeleted => ("policy_deleted", None),
            Reason::PolicyWithdrawn => ("policy_no_longer_enforces_the_action", None),
            Reason::SafetyClassDenied => ("safety_class_denied", None),
            Reason::CosignFailed(why) => ("cosign_failed", Some(why)),
        }
    }
}

/// `code`, or `code:qualifier` (`unsupported_content:compressed`): the only text of a reason.
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code() {
            (code, None) => f.write_str(code),
            (code, Some(qualifier)) => write!(f, "{code}:{}", qualifier.to_ascii_lowercase()),
        }
    }
}

/// The shape the `remediation_runs.reason` column's CHECK constraint allows, tested here so the
/// two cannot drift: lower-case words joined by underscores, with at most one qualifier.
#[cfg(test)]
pub(crate) fn is_code(text: &str) -> bool {
    let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    match text.split_once(':') {
        None => word(text),
        Some((code, qualifier)) => word(code) && word(qualifier),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storage_failure_keeps_the_provider_text_out_of_the_reason() {
        let e = AccessError {
            failure: Failure::Permission,
            message: "403 AccessDenied: User: arn:aws:sts::111122223333:assumed-role/dps/x is not \
                      authorized to perform: s3:PutObject on resource: \
                      arn:aws:s3:::payroll/2024/q3.csv"
                .into(),
        };
        let Stop::Fail(cause) = Stop::storage(e) else {
            panic!("a permission failure is for good")
        };
        assert_eq!(cause.reason.to_string(), "access_denied");
        assert!(cause.detail.as_deref().unwrap().contains("arn:aws"));
        let Stop::Retry(cause) = Stop::storage(AccessError {
            failure: Failure::Network,
            message: "timed out".into(),
        }) else {
            panic!("a network failure is retried")
        };
        assert_eq!(cause.reason, Reason::Network);
    }

    #[test]
    fn every_reason_is_a_code_the_column_accepts() {
        let mut all = vec![
            Reason::AccessDenied,
            Reason::ObjectNotFound,
            Reason::ObjectChanged,
            Reason::ObjectTooLarge,
            Reason::StorageRefused,
            Reason::Network,
            Reason::Identity,
            Reason::ProviderError,
            Reason::AppendBlob,
            Reason::PageBlob,
            Reason::ValuesNotFound,
            Reason::NotARewrite,
            Reason::NotARemediation,
            Reason::ClassifiersUnreadable,
            Reason::SnapshotWouldBePublic,
            Reason::QuarantineWouldBePublic,
            Reason::SnapshotMissing,
            Reason::SnapshotMismatch,
            Reason::QuotaExceeded,
            Reason::TokenizationPolicyNotFound,
            Reason::TokenizeRefused("EMPTY_VALUE"),
            Reason::TokenizeAnswerUnreadable,
            Reason::TokenizeIncomplete,
            Reason::VaultUnavailable,
            Reason::TenantKeysUnreadable,
            Reason::SettingsUnreadable,
            Reason::ReceiptUnsigned,
            Reason::FindingsUnreadable,
            Reason::PolicyVersionMissing,
            Reason::ConnectorUnreadable,
            Reason::StorageUnopened,
            Reason::ObjectStateUnknown,
            Reason::MovedOn,
            Reason::AttemptsExhausted,
            Reason::ConnectorDeleted,
            Reason::PolicyDeleted,
            Reason::PolicyWithdrawn,
            Reason::SafetyClassDenied,
        ];
        all.extend(Unsupported::ALL.map(Reason::Unsupported));
        all.extend(
            crate::cosigner::CosignError::CODES
                .iter()
                .map(|c| Reason::CosignFailed(c)),
        );
        for reason in all {
            let text = reason.to_string();
            assert!(is_code(&text), "{text}");
        }
        assert_eq!(
            Reason::TokenizeRefused("EMPTY_VALUE").to_string(),
            "tokenize_refused:empty_value"
        );
        for bad in [
            "",
            "permission: 403",
            "a:b:c",
            "Upper",
            "x:",
            "network timed out",
        ] {
            assert!(!is_code(bad), "{bad}");
        }
    }
}

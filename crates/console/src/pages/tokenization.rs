//! Tokenization (Area A's data, read here without the vault): the tokenization policies
//! (`GET /tokens/policies`), the vault's entries, their metadata only (`GET /tokens/vault`),
//! and this month's usage (`GET /tokens/usage`), each from the same domain read as
//! tokens-api's handler.

use askama::Template;
use diesel_async::AsyncPgConnection;
use paging::{CursorKey, Limit, PageRequest};
use token_records::RecordsError;
use token_records::entries::ListRequest;
use token_records::policies::PolicyRecord;

use super::{Failure, count, encode, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// The page's query: the vault list's filters and the two lists' cursors.
#[derive(Debug, Default, Clone)]
pub struct TokenizationQuery {
    pub pii_type: String,
    pub status: String,
    pub cursor: Option<String>,
    pub policies_cursor: Option<String>,
    /// `policy` after a policy was saved.
    pub saved: String,
}

pub struct PolicyRow {
    pub id: String,
    pub name: String,
    pub version: i32,
    pub types: String,
    pub roles: String,
    pub purposes: String,
    pub reason: bool,
    pub updated: String,
}

pub struct EntryRow {
    pub token_id: String,
    pub pii_type: String,
    pub mode: String,
    pub status: &'static str,
    pub policy: String,
    pub created: String,
    pub expires: String,
}

pub struct UsageView {
    pub period: String,
    pub rows: Vec<(&'static str, String)>,
    pub quota: String,
}

pub struct Choice {
    pub value: &'static str,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "tokenization.html")]
struct TokenizationPage {
    layout: Layout,
    saved: bool,
    may_write: bool,
    may_audit: bool,
    usage: Option<UsageView>,
    policies: Vec<PolicyRow>,
    policies_next: Option<String>,
    problem: Option<String>,
    entries: Vec<EntryRow>,
    next: Option<String>,
    types: Vec<Choice>,
    statuses: Vec<Choice>,
}

pub(crate) fn policy_row(p: PolicyRecord) -> PolicyRow {
    let d = p.definition;
    PolicyRow {
        id: p.policy_id.to_string(),
        name: d.name,
        version: p.version,
        types: d
            .type_rules
            .iter()
            .map(|(t, r)| format!("{t} ({})", r.mode))
            .collect::<Vec<_>>()
            .join(", "),
        roles: d.allowed_roles.join(", "),
        purposes: d.allowed_purposes.join(", "),
        reason: d.require_reason,
        updated: when(p.updated_at),
    }
}

pub(crate) fn page_of<'a>(
    cursors: &'a CursorKey,
    cursor: Option<&'a str>,
    size: u32,
) -> Result<PageRequest<'a>, Failure> {
    Ok(PageRequest {
        cursors,
        limit: Limit::parse(None, size).map_err(|e| Failure::Internal(e.to_string()))?,
        cursor,
    })
}

fn usage(u: limits::Usage) -> UsageView {
    UsageView {
        period: format!("{} to {}", when(u.period_start), when(u.period_end)),
        rows: vec![
            ("Tokens created this month", count(u.tokens.created)),
            ("Active tokens", count(u.tokens.active)),
            ("Revoked tokens", count(u.tokens.revoked)),
            ("Expired tokens", count(u.tokens.expired)),
            ("Tokenize requests", count(u.tokenize_requests)),
            ("Values tokenized", count(u.tokenize_items)),
            ("Detokenize requests", count(u.detokenize_requests)),
            ("Tokens detokenized", count(u.detokenize_items)),
            ("Grants issued", count(u.grants_issued)),
            ("Revocations", count(u.revocations)),
        ],
        quota: match (u.quota.limit, u.quota.remaining) {
            (Some(limit), Some(remaining)) => format!(
                "{} of {} tokens used, {} left",
                count(u.quota.used),
                count(limit),
                count(remaining)
            ),
            _ => format!("{} tokens used; no monthly quota", count(u.quota.used)),
        },
    }
}

/// The tokenization page: usage (when the viewer's roles allow it), policies and the vault.
pub async fn tokenization(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    cursors: &CursorKey,
    query: &TokenizationQuery,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let usage = if viewer.may.usage {
        Some(usage(
            limits::usage(conn, tenant)
                .await
                .map_err(|e| Failure::Internal(format!("usage: {e}")))?,
        ))
    } else {
        None
    };
    let policies = match token_records::policies::list(
        conn,
        tenant,
        page_of(cursors, query.policies_cursor.as_deref(), 20)?,
    )
    .await
    {
        Ok(page) => Some(page),
        Err(RecordsError::BadCursor) => None,
        Err(e) => return Err(Failure::Internal(format!("policies: {e}"))),
    };
    let keep = |name: &str, value: &str| {
        if value.is_empty() {
            String::new()
        } else {
            format!("&{name}={}", encode(value))
        }
    };
    let filters = format!(
        "{}{}",
        keep("pii_type", &query.pii_type),
        keep("status", &query.status)
    );
    let (policies, policies_next) = match policies {
        Some(page) => {
            let next = page.pagination.next_cursor.map(|c| {
                format!(
                    "/console/tokenization?policies_cursor={}{filters}#policies",
                    encode(&c)
                )
            });
            (page.items.into_iter().map(policy_row).collect(), next)
        }
        None => (Vec::new(), None),
    };
    let request = ListRequest {
        pii_type: Some(query.pii_type.as_str()).filter(|s| !s.is_empty()),
        status: Some(query.status.as_str()).filter(|s| !s.is_empty()),
    };
    let listed = token_records::entries::list(
        conn,
        tenant,
        request,
        page_of(cursors, query.cursor.as_deref(), 50)?,
    )
    .await;
    let (problem, entries, next) = match listed {
        Ok(page) => {
            let next = page
                .pagination
                .next_cursor
                .map(|c| format!("/console/tokenization?cursor={}{filters}#vault", encode(&c)));
            let rows = page
                .items
                .into_iter()
                .map(|e| EntryRow {
                    token_id: e.token_id.to_string(),
                    pii_type: e.pii_type,
                    mode: e.mode,
                    status: e.status.as_str(),
                    policy: format!("{} v{}", e.policy_id, e.policy_version),
                    created: when(e.created_at),
                    expires: e.expires_at.map(when).unwrap_or_default(),
                })
                .collect();
            (None, rows, next)
        }
        Err(RecordsError::BadCursor) => (
            Some("That page is no longer available: start again.".to_owned()),
            Vec::new(),
            None,
        ),
        Err(e @ (RecordsError::UnsupportedPiiType | RecordsError::InvalidRequest(_))) => {
            (Some(e.to_string()), Vec::new(), None)
        }
        Err(e) => return Err(Failure::Internal(format!("vault: {e}"))),
    };
    let page = TokenizationPage {
        layout: Layout::new(viewer, Section::Tokenization, "Tokenization"),
        saved: query.saved == "policy",
        may_write: viewer.may.tokenization_policies,
        may_audit: viewer.may.detokenization_audit,
        usage,
        policies,
        policies_next,
        problem,
        entries,
        next,
        types: tokenize_core::PiiType::ALL
            .iter()
            .map(|t| Choice {
                value: t.as_str(),
                selected: t.as_str() == query.pii_type,
            })
            .collect(),
        statuses: ["active", "revoked", "expired"]
            .iter()
            .map(|s| Choice {
                value: s,
                selected: *s == query.status,
            })
            .collect(),
    };
    Ok(page.render()?)
}

//! The detokenization audit (the API's `detokenization_audit` group, admin by default): who
//! asked to see which tokens, when, why, and what each was shown (never a value), by token
//! ("who saw this person's data") and by user, as `GET /tokens/audit/detokenizations` lists it.

use askama::Template;
use diesel_async::AsyncPgConnection;
use paging::CursorKey;
use time::OffsetDateTime;
use token_records::RecordsError;
use token_records::detokenizations::{AuditFilter, AuditRecord};

use super::tokenization::page_of;
use super::{Failure, encode, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// The page's query. `since` is parsed by the caller as the API parses it; a refusal is said
/// beside the form.
#[derive(Debug, Clone)]
pub struct DetokenizationQuery {
    pub token_id: String,
    pub user: String,
    pub since_text: String,
    pub since: Result<Option<OffsetDateTime>, String>,
    pub cursor: Option<String>,
}

pub struct TokenShown {
    pub token_id: String,
    pub status: String,
    /// The token looked up.
    pub sought: bool,
}

pub struct Attempt {
    pub at: String,
    pub user: String,
    pub user_link: String,
    pub outcome: String,
    pub denial: String,
    pub purpose: String,
    pub reason: String,
    pub tokens: Vec<TokenShown>,
    /// Whether this attempt revealed the token looked up.
    pub revealed: bool,
}

#[derive(Template)]
#[template(path = "detokenizations.html")]
struct DetokenizationsPage {
    layout: Layout,
    token_id: String,
    user: String,
    since: String,
    problem: Option<String>,
    searched: bool,
    attempts: Vec<Attempt>,
    /// For a token looked up: the users it was revealed to on this page.
    saw: Vec<String>,
    next: Option<String>,
}

fn attempt(r: AuditRecord, sought: &str) -> Attempt {
    let tokens: Vec<TokenShown> = r
        .tokens
        .into_iter()
        .map(|t| TokenShown {
            sought: t.token_id == sought,
            token_id: t.token_id,
            status: t.status,
        })
        .collect();
    let revealed = r.outcome == "granted"
        && tokens
            .iter()
            .any(|t| t.sought && t.status.eq_ignore_ascii_case("granted"));
    Attempt {
        at: when(r.occurred_at),
        user_link: format!(
            "/console/tokenization/detokenizations?user={}",
            encode(&r.user_id)
        ),
        user: r.user_id,
        outcome: r.outcome,
        denial: r.denial_code.unwrap_or_default(),
        purpose: r.purpose.unwrap_or_default(),
        reason: r.reason.unwrap_or_default(),
        tokens,
        revealed,
    }
}

/// The detokenization audit page, filtered by token, user and time.
pub async fn detokenizations(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    cursors: &CursorKey,
    query: &DetokenizationQuery,
) -> Result<String, Failure> {
    if !viewer.may.detokenization_audit {
        return Err(Failure::Forbidden);
    }
    let tenant = &viewer.principal.tenant_id;
    let token_id = query.token_id.trim();
    let user = query.user.trim();
    let (problem, attempts, next) = match &query.since {
        Err(problem) => (Some(problem.clone()), Vec::new(), None),
        Ok(since) => {
            let filter = AuditFilter {
                user: Some(user).filter(|u| !u.is_empty()),
                token_id: Some(token_id).filter(|t| !t.is_empty()),
                since: *since,
            };
            let page = page_of(cursors, query.cursor.as_deref(), 50)?;
            match token_records::detokenizations::list(conn, tenant, &filter, page).await {
                Ok(page) => {
                    let keep = [
                        ("token_id", token_id),
                        ("user", user),
                        ("since", query.since_text.trim()),
                    ]
                    .iter()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(n, v)| format!("{n}={}&", encode(v)))
                    .collect::<String>();
                    let next = page.pagination.next_cursor.map(|c| {
                        format!(
                            "/console/tokenization/detokenizations?{keep}cursor={}",
                            encode(&c)
                        )
                    });
                    let rows = page
                        .items
                        .into_iter()
                        .map(|r| attempt(r, token_id))
                        .collect();
                    (None, rows, next)
                }
                Err(RecordsError::BadCursor) => (
                    Some("That page is no longer available: start again.".to_owned()),
                    Vec::new(),
                    None,
                ),
                Err(e) => return Err(Failure::Internal(format!("detokenization audit: {e}"))),
            }
        }
    };
    let mut saw: Vec<String> = Vec::new();
    if !token_id.is_empty() {
        for a in attempts.iter().filter(|a| a.revealed) {
            if !saw.contains(&a.user) {
                saw.push(a.user.clone());
            }
        }
    }
    let page = DetokenizationsPage {
        layout: Layout::new(viewer, Section::Tokenization, "Detokenization audit"),
        token_id: token_id.to_owned(),
        user: user.to_owned(),
        since: query.since_text.clone(),
        searched: !token_id.is_empty() || !user.is_empty(),
        problem,
        attempts,
        saw,
        next,
    };
    Ok(page.render()?)
}

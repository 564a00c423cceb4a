//! The audit log: the API's list (`GET /governance/audit-log`), oldest first with its filters,
//! a page at a time, and the result of checking the newest part of the tenant's hash chain.

use askama::Template;
use audit::{Anchor, Broken, PublicKey, RecentVerified};
use diesel_async::AsyncPgConnection;

use super::{Failure, Listing, count, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

pub struct Shown {
    pub seq: i64,
    pub recorded: String,
    pub kind: String,
    pub actor: String,
    pub policy: String,
    pub action: String,
    pub resource: String,
    pub outcome: String,
    pub simulated: bool,
    pub details: String,
}

/// What the chain check found, as the page says it.
pub struct Chain {
    pub intact: bool,
    /// One sentence: the range checked and where it starts, or where it breaks.
    pub headline: String,
    pub detail: String,
}

/// A `<select>`'s option.
pub struct Choice {
    pub value: &'static str,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    layout: Layout,
    chain: Chain,
    problem: Option<String>,
    rows: Vec<Shown>,
    next: Option<String>,
    since: String,
    policy: String,
    actions: Vec<Choice>,
}

/// The action types `GET /governance/audit-log` filters by.
const ACTION_TYPES: [&str; 4] = ["alert", "tokenize", "mask", "quarantine"];

fn shown(e: audit::Entry) -> Shown {
    Shown {
        seq: e.seq,
        recorded: when(e.recorded_at),
        kind: e.kind.as_str().to_owned(),
        actor: e.actor,
        policy: match (e.policy_id, e.policy_version) {
            (Some(id), Some(v)) => format!("{id} v{v}"),
            (Some(id), None) => id.to_string(),
            _ => String::new(),
        },
        action: e.action_type.unwrap_or_default(),
        resource: e.resource.unwrap_or_default(),
        outcome: e.outcome.unwrap_or_default(),
        simulated: e.simulated,
        details: if e.details.as_object().is_some_and(|o| o.is_empty()) {
            String::new()
        } else {
            e.details.to_string()
        },
    }
}

pub(crate) fn chain(checked: Result<RecentVerified, Broken>) -> Chain {
    match checked {
        Ok(v) if v.to == 0 => Chain {
            intact: true,
            headline: "The log is empty: nothing to verify yet.".into(),
            detail: String::new(),
        },
        Ok(v) => {
            let start = match v.anchor {
                Anchor::Genesis => {
                    "from the log's first entry, which follows the genesis hash".to_owned()
                }
                Anchor::Checkpoint { seq, signed_at } => format!(
                    "linked to the checkpoint at seq {} signed {} (signature verified)",
                    count(seq),
                    when(signed_at)
                ),
                Anchor::Unanchored => {
                    "from the first entry's stored link: no signed checkpoint lies close before it"
                        .to_owned()
                }
            };
            Chain {
                intact: true,
                headline: format!(
                    "Hash chain verified: entries {} to {}, {start}.",
                    count(v.from),
                    count(v.to)
                ),
                detail: format!(
                    "{} signed checkpoint{} in that range matched, checked with key {}. No entry is missing, each carries its predecessor's hash and hashes to its own, and the log reaches its head and newest checkpoint.{}",
                    v.checkpoints,
                    if v.checkpoints == 1 { "" } else { "s" },
                    v.key_id,
                    if v.from > 1 {
                        " Older entries are not read here: dpsctl audit verify checks the whole log."
                    } else {
                        ""
                    }
                ),
            }
        }
        Err(b) => Chain {
            intact: false,
            headline: format!("Hash chain broken at seq {}.", count(b.seq)),
            detail: b.reason,
        },
    }
}

/// The audit log page for `listing`, parsed from the query string as the API parses
/// `GET /governance/audit-log`; the chain checked under `key`.
pub async fn audit(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    listing: Listing<'_, audit::Filter>,
    key: &PublicKey,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let checked = audit::verify_recent(conn, tenant, key, audit::RECENT_ENTRIES).await?;
    let (problem, rows, next) = match &listing.filter {
        Ok(filter) => match audit::list(conn, tenant, filter, listing.page).await {
            Ok(page) => (
                None,
                page.items.into_iter().map(shown).collect(),
                page.pagination
                    .next_cursor
                    .map(|c| format!("/console/audit?{}", listing.next(&c))),
            ),
            Err(audit::ListError::BadCursor) => (
                Some("That page is no longer available: start again.".to_owned()),
                Vec::new(),
                None,
            ),
            Err(audit::ListError::Database(e)) => return Err(e.into()),
        },
        Err(problem) => (Some(problem.clone()), Vec::new(), None),
    };
    let action = listing.param("action_type");
    let page = AuditPage {
        layout: Layout::new(viewer, Section::Audit, "Audit log"),
        chain: chain(checked),
        problem,
        rows,
        next,
        since: listing.param("since"),
        policy: listing.param("policy"),
        actions: ACTION_TYPES
            .iter()
            .map(|a| Choice {
                value: a,
                selected: *a == action,
            })
            .collect(),
    };
    Ok(page.render()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_chain_names_its_seq_and_reason() {
        let shown = chain(Err(Broken {
            seq: 1234,
            reason: "the entry does not hash to its stored hash: it was changed".into(),
        }));
        assert!(!shown.intact);
        assert_eq!(shown.headline, "Hash chain broken at seq 1,234.");
        assert!(shown.detail.contains("changed"));
    }
}

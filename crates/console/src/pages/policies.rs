//! Governance policies: the list with the API's filters, the YAML editor (create and replace)
//! showing each problem at its field and line, the mode form, delete (confirmed), and a
//! policy's dry-run preview, which queues a reconciliation ([`super::reconciliation`]).
//!
//! Every write goes through the same `policies::store` functions as the API's handlers, so a
//! document is checked exactly as `POST /governance/policies` checks it.

use askama::Template;
use diesel_async::AsyncPgConnection;
use governance::reconcile::{self, ReconcileError};
use ids::PolicyId;
use policies::document::{self, Mode, Problem, Syntax};
use policies::store::{self, Filter, Policy, PolicyError, PolicySummary};

use super::findings::Choice;
use super::posted::{Posted, options};
use super::{Failure, Listing, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// What a new policy's editor starts with: a valid dry-run policy to change.
const STARTER: &str = "apiVersion: governance.dps/v1
kind: Policy
metadata:
  name: ssn-in-exports
  description: SSNs must not sit in clear text in export buckets
  tags: [pci]
spec:
  mode: dry-run
  conditions:
    - category: us_ssn
      min_confidence: 0.8
  actions:
    - type: mask
      config: { keep_last: 4 }
";

/// The longest line of the document shown beside a problem.
const MAX_LINE_SHOWN: usize = 160;

pub struct Row {
    pub id: String,
    pub name: String,
    pub description: String,
    pub mode: &'static str,
    pub tags: String,
    pub version: i32,
    pub conditions: i32,
    pub actions: i32,
    pub matched: i64,
    pub last_triggered: String,
    pub updated: String,
}

fn row(p: PolicySummary) -> Row {
    Row {
        id: p.id.to_string(),
        name: p.name,
        description: p.description.unwrap_or_default(),
        mode: p.mode.as_str(),
        tags: p.tags.join(", "),
        version: p.version,
        conditions: p.conditions_count,
        actions: p.actions_count,
        matched: p.findings_matched,
        last_triggered: p.last_triggered.map(when).unwrap_or_default(),
        updated: when(p.updated_at),
    }
}

#[derive(Template)]
#[template(path = "policies.html")]
struct PoliciesPage {
    layout: Layout,
    problem: Option<String>,
    rows: Vec<Row>,
    next: Option<String>,
    modes: Vec<Choice>,
    tag: String,
    may_edit: bool,
}

/// The policy list, filtered as `GET /governance/policies` filters it.
pub async fn policies(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    listing: Listing<'_, Filter>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let (problem, rows, next) = match &listing.filter {
        Ok(filter) => match store::list(conn, tenant, filter, listing.page).await {
            Ok(page) => (
                None,
                page.items.into_iter().map(row).collect(),
                page.pagination
                    .next_cursor
                    .map(|c| format!("/console/policies?{}", listing.next(&c))),
            ),
            Err(PolicyError::BadCursor) => (
                Some("That page is no longer available: start again.".to_owned()),
                Vec::new(),
                None,
            ),
            Err(e) => return Err(internal(e)),
        },
        Err(problem) => (Some(problem.clone()), Vec::new(), None),
    };
    let modes: Vec<&str> = Mode::ALL.iter().map(|m| m.as_str()).collect();
    PoliciesPage {
        layout: Layout::new(viewer, Section::Policies, "Policies"),
        problem,
        rows,
        next,
        modes: options("Any mode", &modes, &listing.param("mode")),
        tag: listing.param("tag"),
        may_edit: viewer.may.governance_policies,
    }
    .render()
    .map_err(Failure::from)
}

/// A problem as the editor lists it: the field's pointer, the line of the text it points at
/// (and that line, as typed), and the reason.
pub struct Shown {
    pub field: String,
    pub line: Option<usize>,
    pub text: String,
    pub reason: String,
}

fn shown(yaml: &str, problems: &[Problem]) -> Vec<Shown> {
    problems
        .iter()
        .map(|p| {
            let line = docread::yaml_line(yaml, &p.pointer);
            let text = line
                .and_then(|n| yaml.lines().nth(n - 1))
                .map(|l| l.trim_end().chars().take(MAX_LINE_SHOWN).collect())
                .unwrap_or_default();
            Shown {
                field: if p.pointer.is_empty() {
                    "(the document)".to_owned()
                } else {
                    p.pointer.clone()
                },
                line,
                text,
                reason: p.reason.to_string(),
            }
        })
        .collect()
}

/// What the editor shows of a stored policy.
pub struct About {
    pub id: String,
    pub name: String,
    pub mode: &'static str,
    pub version: i32,
    pub matched: i64,
    pub last_triggered: String,
    pub created: String,
    pub updated: String,
}

fn about(p: &PolicySummary) -> About {
    About {
        id: p.id.to_string(),
        name: p.name.clone(),
        mode: p.mode.as_str(),
        version: p.version,
        matched: p.findings_matched,
        last_triggered: p.last_triggered.map(when).unwrap_or_default(),
        created: when(p.created_at),
        updated: when(p.updated_at),
    }
}

#[derive(Template)]
#[template(path = "policy.html")]
struct PolicyPage {
    layout: Layout,
    /// None for a new policy.
    about: Option<About>,
    yaml: String,
    problems: Vec<Shown>,
    /// A problem that is not the document's (a reconciliation already running), and where
    /// to see more.
    notice: Option<(String, Option<String>)>,
    modes: Vec<Choice>,
    may_edit: bool,
    may_preview: bool,
}

impl PolicyPage {
    fn new(viewer: &Viewer, policy: Option<&Policy>, yaml: String) -> Self {
        let title = match policy {
            Some(p) => format!("Policy {}", p.summary.name),
            None => "New policy".to_owned(),
        };
        let mode = policy.map_or("", |p| p.summary.mode.as_str());
        let modes = Mode::ALL
            .iter()
            .map(|m| Choice {
                value: m.as_str().to_owned(),
                label: m.as_str().to_owned(),
                selected: m.as_str() == mode,
            })
            .collect();
        PolicyPage {
            layout: Layout::new(viewer, Section::Policies, title),
            about: policy.map(|p| about(&p.summary)),
            yaml,
            problems: Vec::new(),
            notice: None,
            modes,
            may_edit: viewer.may.governance_policies,
            may_preview: viewer.may.reconcile,
        }
    }

    /// The form again, with its problems.
    fn again(mut self, problems: &[Problem]) -> Result<Posted, Failure> {
        self.problems = shown(&self.yaml, problems);
        Ok(Posted::Again(self.render()?))
    }
}

fn internal(e: PolicyError) -> Failure {
    match e {
        PolicyError::NotFound => Failure::NotFound("policy"),
        other => Failure::Internal(format!("policies: {other}")),
    }
}

/// One policy: its YAML, read-only unless the viewer may change policies.
pub async fn policy(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: PolicyId,
) -> Result<String, Failure> {
    let found = store::get(conn, &viewer.principal.tenant_id, id)
        .await
        .map_err(internal)?;
    let yaml = found.yaml();
    Ok(PolicyPage::new(viewer, Some(&found), yaml).render()?)
}

/// The editor of a new policy.
pub fn new_policy(viewer: &Viewer) -> Result<String, Failure> {
    if !viewer.may.governance_policies {
        return Err(Failure::Forbidden);
    }
    Ok(PolicyPage::new(viewer, None, STARTER.to_owned()).render()?)
}

/// Creates (`id` None) or replaces a policy from the editor's YAML, checked as the API checks
/// it. An invalid document is the editor again with every problem, the text as typed.
pub async fn save_policy(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: Option<PolicyId>,
    yaml: &str,
) -> Result<Posted, Failure> {
    if !viewer.may.governance_policies {
        return Err(Failure::Forbidden);
    }
    let tenant = &viewer.principal.tenant_id;
    let actor = &viewer.principal.user_id;
    let saved = match id {
        None => store::create(conn, tenant, actor, yaml.as_bytes(), Syntax::Yaml).await,
        Some(id) => store::update(conn, tenant, actor, id, yaml.as_bytes(), Syntax::Yaml).await,
    };
    match saved {
        Ok(policy) => Ok(Posted::Done(format!(
            "/console/policies/{}",
            policy.summary.id
        ))),
        Err(e) => {
            let current = match id {
                Some(id) => Some(store::get(conn, tenant, id).await.map_err(internal)?),
                None => None,
            };
            let page = PolicyPage::new(viewer, current.as_ref(), yaml.to_owned());
            match e {
                PolicyError::Invalid(problems) => page.again(&problems),
                PolicyError::DuplicateName => page.again(&[Problem {
                    pointer: "/metadata/name".into(),
                    reason: "the tenant already has a governance policy with this name".into(),
                }]),
                other => Err(internal(other)),
            }
        }
    }
}

/// The policy's text with its mode changed: the text as written with only the mode's value
/// replaced (its comments and layout kept) when that reads back as the same document in the
/// new mode, else the canonical document in the new mode.
fn with_mode(policy: &Policy, mode: Mode) -> String {
    let mut wanted = policy.document.clone();
    wanted.spec.mode = mode;
    let yaml = policy.yaml();
    if let Some(at) = docread::yaml_line(&yaml, "/spec/mode") {
        let edited: String = yaml
            .split_inclusive('\n')
            .enumerate()
            .map(|(i, line)| {
                if i + 1 != at {
                    return line.to_owned();
                }
                let Some(key) = line.find("mode:") else {
                    return line.to_owned();
                };
                let rest = &line[key + "mode:".len()..];
                let comment = rest.find(" #").map_or("", |c| rest[c..].trim_end());
                let end = if line.ends_with("\r\n") {
                    "\r\n"
                } else if line.ends_with('\n') {
                    "\n"
                } else {
                    ""
                };
                format!("{}mode: {}{comment}{end}", &line[..key], mode.as_str())
            })
            .collect();
        if document::parse(edited.as_bytes(), Syntax::Yaml).ok() == Some(wanted.clone()) {
            return edited;
        }
    }
    wanted.to_yaml()
}

/// Sets a policy's mode: the same document in the new mode, stored as its next version.
pub async fn set_mode(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: PolicyId,
    mode: &str,
) -> Result<Posted, Failure> {
    if !viewer.may.governance_policies {
        return Err(Failure::Forbidden);
    }
    let tenant = &viewer.principal.tenant_id;
    let found = store::get(conn, tenant, id).await.map_err(internal)?;
    let Some(mode) = Mode::parse(mode) else {
        let page = PolicyPage::new(viewer, Some(&found), found.yaml());
        return page.again(&[Problem {
            pointer: "/spec/mode".into(),
            reason: "must be enforced or dry-run".into(),
        }]);
    };
    let back = format!("/console/policies/{id}");
    if found.summary.mode == mode {
        return Ok(Posted::Done(back));
    }
    let yaml = with_mode(&found, mode);
    match store::update(
        conn,
        tenant,
        &viewer.principal.user_id,
        id,
        yaml.as_bytes(),
        Syntax::Yaml,
    )
    .await
    {
        Ok(_) => Ok(Posted::Done(back)),
        // What the policy refers to changed since it was stored (a channel was deleted): the
        // editor says what, with the text that would have been stored.
        Err(PolicyError::Invalid(problems)) => {
            PolicyPage::new(viewer, Some(&found), yaml).again(&problems)
        }
        Err(e) => Err(internal(e)),
    }
}

#[derive(Template)]
#[template(path = "policy_delete.html")]
struct DeletePage {
    layout: Layout,
    about: About,
}

/// The question before a policy is deleted.
pub async fn delete_policy_page(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: PolicyId,
) -> Result<String, Failure> {
    if !viewer.may.governance_policies {
        return Err(Failure::Forbidden);
    }
    let found = store::get(conn, &viewer.principal.tenant_id, id)
        .await
        .map_err(internal)?;
    Ok(DeletePage {
        layout: Layout::new(
            viewer,
            Section::Policies,
            format!("Delete policy {}?", found.summary.name),
        ),
        about: about(&found.summary),
    }
    .render()?)
}

/// Deletes a policy, as `DELETE /governance/policies/:id` does.
pub async fn delete_policy(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: PolicyId,
) -> Result<Posted, Failure> {
    if !viewer.may.governance_policies {
        return Err(Failure::Forbidden);
    }
    store::delete(
        conn,
        &viewer.principal.tenant_id,
        &viewer.principal.user_id,
        id,
    )
    .await
    .map_err(internal)?;
    Ok(Posted::Done("/console/policies".into()))
}

/// Queues a dry-run reconciliation of this one policy, as `POST /governance/reconcile` with
/// `{"mode": "dry-run", "scope": {"policies": [id]}}` does, and goes to its page. One runs per
/// tenant at a time: when another is queued or running, the policy's page says so.
pub async fn preview_policy(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: PolicyId,
    max_actions: u32,
) -> Result<Posted, Failure> {
    if !viewer.may.reconcile {
        return Err(Failure::Forbidden);
    }
    let tenant = &viewer.principal.tenant_id;
    let found = store::get(conn, tenant, id).await.map_err(internal)?;
    let request = reconcile::Request {
        mode: reconcile::Mode::DryRun,
        scope: reconcile::Scope {
            connectors: Vec::new(),
            policies: vec![id],
        },
        max_actions,
    };
    match reconcile::request(conn, tenant, &viewer.principal.user_id, &request).await {
        Ok(queued) => Ok(Posted::Done(format!(
            "/console/reconciliations/{}",
            queued.id
        ))),
        Err(ReconcileError::Busy(running)) => {
            let mut page = PolicyPage::new(viewer, Some(&found), found.yaml());
            page.notice = Some((
                "A reconciliation is already queued or running for this tenant: wait for it to end, then preview again.".to_owned(),
                Some(format!("/console/reconciliations/{running}")),
            ));
            Ok(Posted::Again(page.render()?))
        }
        // The scope names only this policy, which was just read: it was deleted meanwhile.
        Err(ReconcileError::Invalid(_)) => Err(Failure::NotFound("policy")),
        Err(e) => Err(Failure::Internal(format!("reconcile: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_shown_at_their_line_with_the_text_typed() {
        let yaml = "apiVersion: governance.dps/v1\nkind: Policy\nmetadata: { name: x }\nspec:\n  mode: loud\n";
        let shown = shown(
            yaml,
            &[
                Problem {
                    pointer: "/spec/mode".into(),
                    reason: "must be enforced or dry-run".into(),
                },
                Problem {
                    pointer: String::new(),
                    reason: "the document is not valid YAML (line 9, column 1)".into(),
                },
            ],
        );
        assert_eq!(shown[0].line, Some(5));
        assert_eq!(shown[0].text, "  mode: loud");
        assert_eq!(shown[1].field, "(the document)");
        assert_eq!(shown[1].line, None);
    }

    #[test]
    fn the_starter_is_a_valid_policy() {
        let parsed = document::parse(STARTER.as_bytes(), Syntax::Yaml);
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}

//! One reconciliation: its counts and its plan (per policy and action: what it would do, to
//! how many objects and findings), refreshing itself while it is queued or running. A
//! policy's dry-run preview lands here.

use askama::Template;
use diesel_async::AsyncPgConnection;
use governance::reconcile::{self, ReconcileError, Status};
use ids::ReconciliationId;

use super::{Failure, count, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

pub struct Item {
    pub policy_link: String,
    pub policy: String,
    pub version: i32,
    pub action: String,
    pub outcome: String,
    pub objects: String,
    pub findings: String,
    pub repeated: String,
}

#[derive(Template)]
#[template(path = "reconciliation.html")]
struct ReconciliationPage {
    layout: Layout,
    running: bool,
    status: &'static str,
    mode: &'static str,
    requested_by: String,
    created: String,
    ended: String,
    error: Option<String>,
    /// Each count's label and value.
    counts: Vec<(&'static str, String)>,
    plan: Vec<Item>,
}

/// A reconciliation of the viewer's tenant, as `GET /governance/reconciliations/:id` reads it.
pub async fn reconciliation(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ReconciliationId,
) -> Result<String, Failure> {
    let found = reconcile::get(conn, &viewer.principal.tenant_id, id)
        .await
        .map_err(|e| match e {
            ReconcileError::NotFound => Failure::NotFound("reconciliation"),
            other => Failure::Internal(format!("reconciliation: {other}")),
        })?;
    let running = matches!(found.status, Status::Queued | Status::Running);
    let c = &found.counts;
    let n = |v: u64| count(i64::try_from(v).unwrap_or(i64::MAX));
    let title = match found.mode {
        reconcile::Mode::DryRun => "Dry-run preview",
        reconcile::Mode::Enforced => "Reconciliation",
    };
    ReconciliationPage {
        layout: Layout::new(viewer, Section::Policies, title),
        running,
        status: found.status.as_str(),
        mode: found.mode.as_str(),
        requested_by: found.requested_by.clone(),
        created: when(found.created_at),
        ended: found.ended_at.map(when).unwrap_or_default(),
        error: found.error.clone(),
        counts: vec![
            ("Open findings in scope", n(c.findings_evaluated)),
            ("Findings a policy matches", n(c.findings_matched)),
            ("Actions planned", n(c.actions_planned)),
            ("Actions simulated", n(c.actions_simulated)),
            ("Actions blocked", n(c.actions_blocked)),
            ("Actions already taken", n(c.actions_repeated)),
            ("Object changes it would newly make", n(c.changes_planned)),
        ],
        plan: found
            .plan
            .iter()
            .map(|i| Item {
                policy_link: format!("/console/policies/{}", i.policy_id),
                policy: i.policy_name.clone(),
                version: i.policy_version,
                action: i.action_type.clone(),
                outcome: i.outcome.clone(),
                objects: n(i.objects),
                findings: n(i.findings),
                repeated: n(i.repeated),
            })
            .collect(),
    }
    .render()
    .map_err(Failure::from)
}

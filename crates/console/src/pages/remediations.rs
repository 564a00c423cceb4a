//! Remediations: the list with the API's filters, one remediation with its receipts (each
//! signature checked here, against the platform's receipt keys) and its undo deadline, and
//! undo, confirmed first.

use askama::Template;
use diesel_async::AsyncPgConnection;
use ids::RemediationId;
use remediation::read::{self, ReadError};
use remediation::{Executor, Receipt, Remediation, State, UndoError};
use serde_json::Value;
use time::OffsetDateTime;

use super::findings::Choice;
use super::posted::{Posted, options};
use super::{Failure, Listing, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

const STATES: [&str; 7] = [
    "planned",
    "snapshotted",
    "written",
    "receipted",
    "blocked",
    "failed",
    "undone",
];

const ACTIONS: [&str; 3] = ["tokenize", "mask", "quarantine"];

pub struct Row {
    pub id: String,
    pub created: String,
    pub action: &'static str,
    pub resource: String,
    pub status: &'static str,
    pub reason: String,
    pub undo_until: String,
    pub receipts: usize,
}

fn row(r: &Remediation) -> Row {
    let row = &r.row;
    Row {
        id: row.request_id.to_string(),
        created: when(row.created_at),
        action: row.action_type.as_str(),
        resource: row.resource(),
        status: row.status.as_str(),
        reason: row.reason.clone().unwrap_or_default(),
        undo_until: row.undo_until.map(when).unwrap_or_default(),
        receipts: r.receipts.len(),
    }
}

#[derive(Template)]
#[template(path = "remediations.html")]
struct RemediationsPage {
    layout: Layout,
    problem: Option<String>,
    rows: Vec<Row>,
    next: Option<String>,
    statuses: Vec<Choice>,
    actions: Vec<Choice>,
}

/// The remediation list, filtered as `GET /governance/remediations` filters it.
pub async fn remediations(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    listing: Listing<'_, remediation::Filter>,
) -> Result<String, Failure> {
    if !viewer.may.remediations {
        return Err(Failure::Forbidden);
    }
    let tenant = &viewer.principal.tenant_id;
    let (problem, rows, next) = match &listing.filter {
        Ok(filter) => match read::list(conn, tenant, filter, listing.page).await {
            Ok(page) => (
                None,
                page.items.iter().map(row).collect(),
                page.pagination
                    .next_cursor
                    .map(|c| format!("/console/remediations?{}", listing.next(&c))),
            ),
            Err(ReadError::BadCursor) => (
                Some("That page is no longer available: start again.".to_owned()),
                Vec::new(),
                None,
            ),
            Err(ReadError::Database(e)) => return Err(e.into()),
        },
        Err(problem) => (Some(problem.clone()), Vec::new(), None),
    };
    RemediationsPage {
        layout: Layout::new(viewer, Section::Remediations, "Remediations"),
        problem,
        rows,
        next,
        statuses: options("Any state", &STATES, &listing.param("status")),
        actions: options("Any action", &ACTIONS, &listing.param("action_type")),
    }
    .render()
    .map_err(Failure::from)
}

/// A receipt, its signatures checked.
pub struct Checked {
    pub id: String,
    pub kind: String,
    /// Whether the platform's signature verifies against the platform's receipt keys.
    pub valid: bool,
    /// The verifying key's id, or why it does not verify.
    pub verdict: String,
    /// The co-signature, when the receipt carries one: its key id.
    pub cosigner: Option<String>,
    pub cosign_status: String,
    pub document: String,
}

/// Checks a receipt's platform signature against `jwks` (`receipts::verify`, as a customer
/// checks one offline). The co-signature was checked with the co-signer's key before it was
/// stored (`cosign_status` cosigned); its key lives at the tenant's co-signing service, which a
/// page does not call.
fn checked(receipt: &Receipt, jwks: &Value) -> Checked {
    let verified = receipts::verify(&receipt.document, jwks);
    let cosigner = receipt.document["signatures"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["signer"] == "cosigner")
        .map(|s| s["kid"].as_str().unwrap_or_default().to_owned());
    Checked {
        id: receipt.receipt_id.to_string(),
        kind: receipt.kind.clone(),
        valid: verified.is_ok(),
        verdict: match &verified {
            Ok(v) => format!("valid (platform key {})", v.kid),
            Err(e) => format!("invalid: {e}"),
        },
        cosigner,
        cosign_status: receipt.cosign_status.clone(),
        document: serde_json::to_string_pretty(&receipt.document).unwrap_or_default(),
    }
}

/// What the detail and undo pages show of a remediation.
pub struct About {
    pub id: String,
    pub status: &'static str,
    pub action: &'static str,
    pub resource: String,
    pub policy_link: String,
    pub policy_version: i32,
    pub gate: &'static str,
    pub reason: String,
    pub findings: usize,
    pub created: String,
    pub executed: String,
    pub undo_until: String,
    pub undone: String,
    pub snapshot: String,
    /// Whether undo is still possible: receipted, not undone, its window open.
    pub undoable: bool,
}

fn about(r: &Remediation, now: OffsetDateTime) -> About {
    let row = &r.row;
    let snapshot = match (&row.lkg_bucket, &row.lkg_key, row.lkg_deleted_at) {
        (Some(b), Some(k), None) => format!("{b}/{k}"),
        (Some(_), Some(_), Some(at)) => format!("deleted at {}", when(at)),
        _ => String::new(),
    };
    About {
        id: row.request_id.to_string(),
        status: row.status.as_str(),
        action: row.action_type.as_str(),
        resource: row.resource(),
        policy_link: format!("/console/policies/{}", row.policy_id),
        policy_version: row.policy_version,
        gate: row.gate.as_str(),
        reason: row.reason.clone().unwrap_or_default(),
        findings: row.finding_ids.len(),
        created: when(row.created_at),
        executed: row.executed_at.map(when).unwrap_or_default(),
        undo_until: row.undo_until.map(when).unwrap_or_default(),
        undone: match (&row.undone_by, row.undone_at) {
            (Some(by), Some(at)) => format!("by {by} at {}", when(at)),
            (None, Some(at)) => when(at),
            _ => String::new(),
        },
        snapshot,
        undoable: row.status == State::Receipted
            && row.undone_at.is_none()
            && row.undo_until.is_some_and(|until| until > now),
    }
}

async fn found(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: RemediationId,
) -> Result<Remediation, Failure> {
    if !viewer.may.remediations {
        return Err(Failure::Forbidden);
    }
    read::get(conn, &viewer.principal.tenant_id, id)
        .await?
        .ok_or(Failure::NotFound("remediation"))
}

#[derive(Template)]
#[template(path = "remediation.html")]
struct RemediationPage {
    layout: Layout,
    about: About,
    receipts: Vec<Checked>,
}

/// One remediation with its receipts, each platform signature checked against `jwks` (the
/// keys `GET /governance/receipt-keys` serves).
pub async fn remediation(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: RemediationId,
    jwks: &Value,
) -> Result<String, Failure> {
    let r = found(conn, viewer, id).await?;
    RemediationPage {
        layout: Layout::new(viewer, Section::Remediations, "Remediation"),
        about: about(&r, OffsetDateTime::now_utc()),
        receipts: r.receipts.iter().map(|x| checked(x, jwks)).collect(),
    }
    .render()
    .map_err(Failure::from)
}

#[derive(Template)]
#[template(path = "remediation_undo.html")]
struct UndoPage {
    layout: Layout,
    about: About,
    problem: Option<String>,
    force: bool,
}

fn undo_page(
    viewer: &Viewer,
    r: &Remediation,
    problem: Option<String>,
    force: bool,
) -> Result<String, Failure> {
    Ok(UndoPage {
        layout: Layout::new(viewer, Section::Remediations, "Undo this remediation?"),
        about: about(r, OffsetDateTime::now_utc()),
        problem,
        force,
    }
    .render()?)
}

/// The question before a remediation is undone.
pub async fn undo_question(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: RemediationId,
) -> Result<String, Failure> {
    let r = found(conn, viewer, id).await?;
    undo_page(viewer, &r, None, false)
}

/// Undoes a remediation, as `POST /governance/remediations/:id/undo` does (`force` restores
/// over a change made since), and goes back to it. A refusal is the question again, saying
/// why, with the API's status.
pub async fn undo(
    conn: &mut AsyncPgConnection,
    exec: &Executor,
    viewer: &Viewer,
    id: RemediationId,
    force: bool,
) -> Result<Posted, Failure> {
    found(conn, viewer, id).await?;
    let undone = remediation::undo(
        conn,
        exec,
        &viewer.principal.tenant_id,
        id,
        &viewer.principal.user_id,
        force,
    )
    .await;
    match &undone {
        Ok(_) => return Ok(Posted::Done(format!("/console/remediations/{id}"))),
        Err(UndoError::NotFound) => return Err(Failure::NotFound("remediation")),
        Err(UndoError::Database(e)) => return Err(Failure::Internal(format!("undo: {e}"))),
        // Each refusal the API answers 409, 410 or 503 is said on the question's page.
        Err(
            UndoError::NotUndoable(_)
            | UndoError::AlreadyUndone
            | UndoError::ObjectChanged
            | UndoError::Busy
            | UndoError::SnapshotChanged
            | UndoError::Refused(_)
            | UndoError::Expired
            | UndoError::ConnectorDeleted
            | UndoError::Storage(_),
        ) => {}
    }
    let changed = matches!(undone, Err(UndoError::ObjectChanged));
    let mut problem = undone.err().map(|e| e.to_string()).unwrap_or_default();
    if changed {
        problem.push_str(": tick “Restore over the change” to restore the original anyway");
    }
    let again = found(conn, viewer, id).await?;
    Ok(Posted::Again(undo_page(
        viewer,
        &again,
        Some(problem),
        force,
    )?))
}

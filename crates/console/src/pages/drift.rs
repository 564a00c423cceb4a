//! Drift: the timeline, newest first and grouped by day, with the API's filters, and a form
//! per open event that acknowledges it with a note.

use std::collections::HashMap;

use askama::Template;
use diesel_async::AsyncPgConnection;
use ids::DriftEventId;
use posture::drift::{self, DriftError, DriftEvent, Filter, Kind, MAX_NOTE_CHARS};
use serde_json::Value;

use super::findings::Choice;
use super::posted::{Posted, kept_query, options};
use super::{Failure, Listing, SEVERITIES, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// The list's parameters a form sends back so that the timeline comes back as it was.
const FILTERS: [&str; 6] = ["severity", "type", "connector", "since", "status", "cursor"];

pub struct Event {
    pub id: String,
    pub time: String,
    pub kind: &'static str,
    pub severity: &'static str,
    pub connector: String,
    pub resource: String,
    pub description: String,
    /// What changed: each field, before and after.
    pub changes: Vec<(String, String, String)>,
    pub policies: String,
    pub remediation: String,
    pub open: bool,
    pub acknowledged: String,
    pub note: String,
}

pub struct Day {
    pub date: String,
    pub events: Vec<Event>,
}

#[derive(Template)]
#[template(path = "drift.html")]
struct DriftPage {
    layout: Layout,
    problem: Option<String>,
    days: Vec<Day>,
    next: Option<String>,
    severities: Vec<Choice>,
    kinds: Vec<Choice>,
    statuses: Vec<Choice>,
    connectors: Vec<Choice>,
    since: String,
    /// The query string the acknowledge forms send back.
    then: String,
    max_note: usize,
}

/// A state's value as one short line.
fn shown(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "—".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The fields whose values differ between the two states, in the current state's order.
fn changes(previous: &Value, current: &Value) -> Vec<(String, String, String)> {
    let empty = serde_json::Map::new();
    let before = previous.as_object().unwrap_or(&empty);
    let after = current.as_object().unwrap_or(&empty);
    let mut fields: Vec<&String> = after.keys().collect();
    fields.extend(before.keys().filter(|k| !after.contains_key(*k)));
    fields
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| (k.clone(), shown(before.get(k)), shown(after.get(k))))
        .collect()
}

fn event(e: DriftEvent, names: &HashMap<String, String>) -> Event {
    let connector = e.connector_id.to_string();
    Event {
        id: e.event_id.to_string(),
        time: when(e.timestamp),
        kind: e.kind.as_str(),
        severity: e.severity.as_str(),
        connector: names.get(&connector).cloned().unwrap_or(connector),
        resource: e.resource,
        description: e.description,
        changes: changes(&e.previous_state, &e.current_state),
        policies: e.policies_triggered.join(", "),
        remediation: e.remediation_status,
        open: e.status == "open",
        acknowledged: match (&e.acknowledged_by, e.acknowledged_at) {
            (Some(by), Some(at)) => format!("by {by} at {}", when(at)),
            _ => String::new(),
        },
        note: e.note.unwrap_or_default(),
    }
}

/// Events, newest first, into days (their UTC date).
fn by_day(events: Vec<Event>) -> Vec<Day> {
    let mut days: Vec<Day> = Vec::new();
    for e in events {
        let date = e.time.split(' ').next().unwrap_or_default().to_owned();
        match days.last_mut() {
            Some(day) if day.date == date => day.events.push(e),
            _ => days.push(Day {
                date,
                events: vec![e],
            }),
        }
    }
    days
}

/// The drift timeline, filtered as `GET /governance/drift-events` filters it.
pub async fn drift(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    listing: Listing<'_, Filter>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let (problem, events, next) = match &listing.filter {
        Ok(filter) => match drift::list(conn, tenant, filter, listing.page).await {
            Ok(page) => (
                None,
                page.items,
                page.pagination
                    .next_cursor
                    .map(|c| format!("/console/drift?{}", listing.next(&c))),
            ),
            Err(DriftError::BadCursor) => (
                Some("That page is no longer available: start again.".to_owned()),
                Vec::new(),
                None,
            ),
            Err(e) => return Err(Failure::Internal(format!("drift: {e}"))),
        },
        Err(problem) => (Some(problem.clone()), Vec::new(), None),
    };
    // The connectors' names, for the filter and the events: the first hundred, as the
    // findings page reads them.
    let all = super::connector_names(conn, tenant, listing.page.cursors).await?;
    let names: HashMap<String, String> = all
        .iter()
        .map(|c| (c.id.to_string(), c.name.clone()))
        .collect();
    let connector = listing.param("connector");
    let mut connectors = options("Any connector", &[], &connector);
    connectors.extend(all.iter().map(|c| {
        let id = c.id.to_string();
        Choice {
            selected: id == connector,
            value: id,
            label: c.name.clone(),
        }
    }));
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    let statuses: Vec<&str> = drift::Status::ALL.iter().map(|s| s.as_str()).collect();
    let then = kept_query(&super::url_query(&listing.params), &FILTERS);
    DriftPage {
        layout: Layout::new(viewer, Section::Drift, "Drift"),
        problem,
        days: by_day(events.into_iter().map(|e| event(e, &names)).collect()),
        next,
        severities: options("Any severity", &SEVERITIES, &listing.param("severity")),
        kinds: options("Any type", &kinds, &listing.param("type")),
        statuses: options("Open and acknowledged", &statuses, &listing.param("status")),
        connectors,
        since: listing.param("since"),
        then,
        max_note: MAX_NOTE_CHARS,
    }
    .render()
    .map_err(Failure::from)
}

#[derive(Template)]
#[template(path = "drift_acknowledge.html")]
struct AcknowledgePage {
    layout: Layout,
    id: String,
    note: String,
    problem: String,
    then: String,
    max_note: usize,
}

/// Acknowledges a drift event with a note, as `POST /governance/drift-events/:id/acknowledge`
/// does, and goes back to the timeline as it was (`then`, the list's query). A note the API
/// refuses is the form again, the note as typed.
pub async fn acknowledge(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: DriftEventId,
    note: &str,
    then: &str,
) -> Result<Posted, Failure> {
    let then = kept_query(then, &FILTERS);
    let note_given = Some(note).filter(|n| !n.trim().is_empty());
    match drift::acknowledge(
        conn,
        &viewer.principal.tenant_id,
        &viewer.principal.user_id,
        id,
        note_given,
    )
    .await
    {
        Ok(_) => Ok(Posted::Done(if then.is_empty() {
            format!("/console/drift#event-{id}")
        } else {
            format!("/console/drift?{then}#event-{id}")
        })),
        Err(DriftError::InvalidNote) => Ok(Posted::Again(
            AcknowledgePage {
                layout: Layout::new(viewer, Section::Drift, "Acknowledge a drift event"),
                id: id.to_string(),
                note: note.replace('\0', ""),
                problem: format!(
                    "The note must be at most {MAX_NOTE_CHARS} characters, without NUL."
                ),
                then,
                max_note: MAX_NOTE_CHARS,
            }
            .render()?,
        )),
        Err(DriftError::NotFound) => Err(Failure::NotFound("drift event")),
        Err(e) => Err(Failure::Internal(format!("drift: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_changed_fields_are_shown() {
        let before = json!({"public": false, "encryption": "aes256", "risk_score": 40});
        let after =
            json!({"public": true, "encryption": "aes256", "risk_score": 72, "findings_count": 1});
        assert_eq!(
            changes(&before, &after),
            vec![
                ("public".into(), "false".into(), "true".into()),
                ("risk_score".into(), "40".into(), "72".into()),
                ("findings_count".into(), "—".into(), "1".into()),
            ]
        );
    }
}

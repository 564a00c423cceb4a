//! Findings: the API's filters, masked previews, where each value is, the policies each
//! matches and where its remediation stands, a page at a time.

use askama::Template;
use diesel_async::AsyncPgConnection;
use platform::findings::FindingView;
use scans::findings::Filter;
use serde_json::Value;

use super::{Failure, Listing, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

pub struct Shown {
    pub id: String,
    pub resource: String,
    pub pii_type: String,
    pub category: String,
    pub field: String,
    pub location: String,
    pub preview: String,
    pub occurrences: i32,
    pub confidence: String,
    pub status: String,
    pub policies: String,
    pub remediation: &'static str,
    pub created: String,
}

/// A `<select>`'s option.
pub struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "findings.html")]
struct FindingsPage {
    layout: Layout,
    problem: Option<String>,
    rows: Vec<Shown>,
    next: Option<String>,
    connectors: Vec<Choice>,
    categories: Vec<Choice>,
    statuses: Vec<Choice>,
    kinds: Vec<Choice>,
    pii_type: String,
    min_confidence: String,
    resource_prefix: String,
}

const CATEGORIES: [&str; 5] = [
    "government_id",
    "financial",
    "contact",
    "personal",
    "legal_medical",
];

/// The location kinds `GET /findings` filters by.
const LOCATION_KINDS: [&str; 8] = [
    "text", "csv", "json", "table", "record", "sheet", "document", "archive",
];

/// A location as a line of text: `row 3, column 2, header SSN`.
pub(crate) fn location(value: &Value) -> String {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k} {s}"),
                Value::Array(items) => format!(
                    "{k} {}",
                    items
                        .iter()
                        .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(" › ")
                ),
                other => format!("{k} {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn shown(view: FindingView) -> Shown {
    let f = &view.finding;
    let first = match &f.locations {
        Value::Array(all) => all.first().cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    Shown {
        id: f.finding_id.to_string(),
        resource: format!("{}/{}", f.bucket, f.object_key),
        pii_type: f.pii_type.clone(),
        category: f.category.clone(),
        field: f.field.clone(),
        location: location(&first),
        preview: f.preview.clone(),
        occurrences: view.finding.occurrences,
        confidence: format!("{:.2}", f.confidence),
        status: f.status.clone(),
        policies: view.matched_policies.join(", "),
        remediation: view.remediation_status.as_str(),
        created: when(f.created_at),
    }
}

fn choices(values: &[&str], selected: &str) -> Vec<Choice> {
    values
        .iter()
        .map(|v| Choice {
            value: (*v).to_owned(),
            label: (*v).to_owned(),
            selected: *v == selected,
        })
        .collect()
}

/// The findings page for `listing`, parsed from the query string as the API parses
/// `GET /findings`.
pub async fn findings(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    listing: Listing<'_, Filter>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let (problem, rows, next) = match &listing.filter {
        Ok(filter) => {
            let page = platform::findings::list(conn, tenant, filter, listing.page)
                .await
                .map_err(|e| Failure::Internal(format!("findings: {e}")));
            match page {
                Ok(page) => (
                    None,
                    page.items.into_iter().map(shown).collect(),
                    page.pagination
                        .next_cursor
                        .map(|c| format!("/console/findings?{}", listing.next(&c))),
                ),
                Err(Failure::Internal(cause)) if cause.contains("cursor") => (
                    Some("That page is no longer available: start again.".to_owned()),
                    Vec::new(),
                    None,
                ),
                Err(e) => return Err(e),
            }
        }
        Err(problem) => (Some(problem.clone()), Vec::new(), None),
    };
    let connector = listing.param("connector");
    let all = super::connector_names(conn, tenant, listing.page.cursors).await?;
    let mut connectors = vec![Choice {
        value: String::new(),
        label: "Any connector".into(),
        selected: connector.is_empty(),
    }];
    connectors.extend(all.iter().map(|c| {
        let id = c.id.to_string();
        Choice {
            selected: id == connector,
            value: id,
            label: c.name.clone(),
        }
    }));
    let with_any = |label: &str, mut rest: Vec<Choice>, param: &str| {
        let mut all = vec![Choice {
            value: String::new(),
            label: label.to_owned(),
            selected: listing.param(param).is_empty(),
        }];
        all.append(&mut rest);
        all
    };
    let page = FindingsPage {
        layout: Layout::new(viewer, Section::Findings, "Findings"),
        problem,
        rows,
        next,
        connectors,
        categories: with_any(
            "Any category",
            choices(&CATEGORIES, &listing.param("category")),
            "category",
        ),
        statuses: with_any(
            "Open and resolved",
            choices(&["open", "resolved"], &listing.param("status")),
            "status",
        ),
        kinds: with_any(
            "Any kind",
            choices(&LOCATION_KINDS, &listing.param("location_kind")),
            "location_kind",
        ),
        pii_type: listing.param("pii_type"),
        min_confidence: listing.param("min_confidence"),
        resource_prefix: listing.param("resource_prefix"),
    };
    Ok(page.render()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_reads_as_a_line() {
        let csv = serde_json::json!({"row": 3, "column": 2, "header": "SSN"});
        assert_eq!(location(&csv), "row 3, column 2, header SSN");
        let member = serde_json::json!({"archive": ["a.zip", "b.csv"], "line": 4});
        assert_eq!(location(&member), "archive a.zip › b.csv, line 4");
        assert_eq!(location(&Value::Null), "");
    }
}

//! The overview: what is sensitive and exposed first, then open findings, drift,
//! remediations and coverage gaps, and the last 30 days.

use std::collections::BTreeMap;

use askama::Template;
use diesel_async::AsyncPgConnection;
use paging::{CursorKey, Limit, PageRequest};
use platform::overview::Bucket;

use super::{Failure, SEVERITIES, count, encode};
use crate::chart::{Series, lines};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// A row of a count table: its label, its count and where it links.
pub struct Row {
    pub label: String,
    pub count: String,
    pub link: Option<String>,
    /// A CSS class for a severity's badge.
    pub class: &'static str,
}

pub struct Exposed {
    pub connector: String,
    pub bucket: String,
    pub why: String,
    pub findings: String,
    pub risk: i16,
    pub severity: &'static str,
    pub link: String,
}

#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage {
    layout: Layout,
    risk: i16,
    risk_severity: &'static str,
    exposed: Vec<Exposed>,
    by_severity: Vec<Row>,
    by_category: Vec<Row>,
    drift: Vec<Row>,
    remediations: Vec<Row>,
    undoable: String,
    show_remediations: bool,
    connectors_in_error: Vec<(String, String, String)>,
    skipped: Vec<Row>,
    findings_chart: String,
    drift_chart: String,
    days: Vec<(String, i64, i64)>,
}

/// The severity's name for a score, as the API's risk scores have it.
pub(crate) fn severity_of(score: i16) -> &'static str {
    posture::risk::model::severity(score).as_str()
}

fn why(b: &Bucket) -> String {
    let mut why = Vec::new();
    if b.public == Some(true) {
        why.push("public");
    }
    if b.encryption.as_deref() == Some("none") {
        why.push("unencrypted");
    }
    why.join(", ")
}

fn severity_rows(
    counts: &BTreeMap<String, i64>,
    link: impl Fn(&str) -> Option<String>,
) -> Vec<Row> {
    SEVERITIES
        .iter()
        .map(|s| Row {
            label: (*s).to_owned(),
            count: count(counts.get(*s).copied().unwrap_or(0)),
            link: link(s),
            class: s,
        })
        .collect()
}

/// The overview page of the viewer's tenant.
pub async fn overview(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    cursors: &CursorKey,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let numbers = platform::overview::overview(conn, tenant).await?;
    let workspace = posture::risk::read::workspace(conn, tenant).await?;
    // Coverage gaps: what the latest ended scan of each connector could not read.
    let recent = scans::store::list(
        conn,
        tenant,
        &scans::store::Filter::default(),
        PageRequest::first(
            cursors,
            Limit::parse(None, 50).map_err(|e| Failure::Internal(e.to_string()))?,
        ),
    )
    .await
    .map_err(|e| Failure::Internal(format!("scans: {e}")))?;
    let mut seen = std::collections::HashSet::new();
    let mut skipped: BTreeMap<String, i64> = BTreeMap::new();
    for scan in recent.items.iter().filter(|s| s.completed_at.is_some()) {
        if !scan.connectors.iter().any(|c| seen.insert(*c)) {
            continue;
        }
        for (reason, n) in scan
            .reasons
            .skipped
            .iter()
            .chain(&scan.reasons.failed)
            .chain(&scan.reasons.unread)
        {
            *skipped.entry(reason.clone()).or_default() += n;
        }
    }
    let mut skipped: Vec<(String, i64)> = skipped.into_iter().collect();
    skipped.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));

    let first = numbers
        .trend
        .first()
        .map(|d| d.date.to_string())
        .unwrap_or_default();
    let last = numbers
        .trend
        .last()
        .map(|d| d.date.to_string())
        .unwrap_or_default();
    // Each on its own scale: a day of thousands of findings would flatten a few drift events.
    let findings_chart = lines(
        "Findings recorded by scans, per day, the last 30 days",
        &[Series {
            label: "Findings recorded",
            class: "series-findings",
            points: numbers.trend.iter().map(|d| d.findings).collect(),
        }],
        &first,
        &last,
    );
    let drift_chart = lines(
        "Drift events, per day, the last 30 days",
        &[Series {
            label: "Drift events",
            class: "series-drift",
            points: numbers.trend.iter().map(|d| d.drift).collect(),
        }],
        &first,
        &last,
    );
    let mut remediations: Vec<Row> = numbers
        .remediations_by_state
        .iter()
        .map(|(state, n)| Row {
            label: state.clone(),
            count: count(*n),
            link: Some(format!("/console/remediations?status={}", encode(state))),
            class: "",
        })
        .collect();
    remediations.sort_by_key(|r| match r.label.as_str() {
        "failed" => 0,
        "blocked" => 1,
        "planned" | "snapshotted" | "written" => 2,
        _ => 3,
    });
    let page = OverviewPage {
        layout: Layout::new(viewer, Section::Overview, "Overview"),
        risk: workspace.risk_score,
        risk_severity: workspace.severity.as_str(),
        exposed: numbers
            .sensitive_and_exposed
            .iter()
            .map(|b| Exposed {
                connector: b.connector_name.clone(),
                bucket: b.bucket.clone(),
                why: why(b),
                findings: count(b.findings),
                risk: b.risk_score,
                severity: severity_of(b.risk_score),
                link: format!(
                    "/console/findings?status=open&connector={}&resource_prefix={}",
                    encode(&b.connector_id.to_string()),
                    encode(&format!("{}/", b.bucket))
                ),
            })
            .collect(),
        by_severity: severity_rows(&numbers.findings_by_severity, |_| None),
        by_category: numbers
            .findings_by_category
            .iter()
            .map(|(category, n)| Row {
                label: category.clone(),
                count: count(*n),
                link: Some(format!(
                    "/console/findings?status=open&category={}",
                    encode(category)
                )),
                class: "",
            })
            .collect(),
        drift: severity_rows(&numbers.drift_by_severity, |s| {
            Some(format!("/console/drift?severity={s}&status=open"))
        }),
        remediations,
        undoable: count(numbers.undoable),
        show_remediations: viewer.may.remediations,
        connectors_in_error: numbers
            .connectors_in_error
            .iter()
            .map(|(id, name, message)| {
                (
                    format!("/console/connectors/{id}"),
                    name.clone(),
                    message.clone().unwrap_or_default(),
                )
            })
            .collect(),
        skipped: skipped
            .into_iter()
            .map(|(reason, n)| Row {
                label: reason,
                count: count(n),
                link: None,
                class: "",
            })
            .collect(),
        findings_chart,
        drift_chart,
        days: numbers
            .trend
            .iter()
            .map(|d| (d.date.to_string(), d.findings, d.drift))
            .collect(),
    };
    Ok(page.render()?)
}

//! Scans: the list, and one scan's live view (progress, workers, coverage and why resources
//! were skipped) that refreshes itself while the scan runs, with its (confirmed) cancel.

use std::collections::HashMap;

use askama::Template;
use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, ScanId};
use paging::PageRequest;
use scans::{Scan, ScanError};
use time::OffsetDateTime;

use super::posted::Posted;
use super::{Failure, Listing, count, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

pub struct Row {
    pub link: String,
    pub status: &'static str,
    pub kind: &'static str,
    pub connectors: String,
    pub percent: i64,
    pub files: String,
    pub findings: String,
    pub created: String,
    pub ended: String,
}

#[derive(Template)]
#[template(path = "scans.html")]
struct ListPage {
    layout: Layout,
    problem: Option<String>,
    statuses: Vec<(&'static str, bool)>,
    rows: Vec<Row>,
    next: Option<String>,
}

/// The names of the tenant's connectors (the first hundred, as the findings filter has them);
/// a scan of another shows its id.
async fn names(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    cursors: &paging::CursorKey,
) -> Result<HashMap<ConnectorId, String>, Failure> {
    let all = super::connector_names(conn, &viewer.principal.tenant_id, cursors).await?;
    Ok(all.into_iter().map(|c| (c.id, c.name)).collect())
}

fn connector_names(scan: &Scan, names: &HashMap<ConnectorId, String>) -> String {
    scan.connectors
        .iter()
        .map(|c| names.get(c).cloned().unwrap_or_else(|| c.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tenant's scans, newest first, as `GET /scans` lists them.
pub async fn scans(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    listing: Listing<'_, scans::store::Filter>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let names = names(conn, viewer, listing.page.cursors).await?;
    let now = OffsetDateTime::now_utc();
    let (problem, rows, next) = match &listing.filter {
        Ok(filter) => match scans::store::list(conn, tenant, filter, listing.page).await {
            Ok(page) => (
                None,
                page.items
                    .iter()
                    .map(|s| {
                        let progress = s.progress(now);
                        Row {
                            link: format!("/console/scans/{}", s.id),
                            status: s.status.as_str(),
                            kind: s.kind.as_str(),
                            connectors: connector_names(s, &names),
                            percent: progress.percent_complete,
                            files: format!(
                                "{} of {}",
                                count(progress.files_processed),
                                count(progress.files_total)
                            ),
                            findings: count(progress.findings_count),
                            created: when(s.created_at),
                            ended: s.completed_at.map(when).unwrap_or_default(),
                        }
                    })
                    .collect(),
                page.pagination
                    .next_cursor
                    .map(|c| format!("/console/scans?{}", listing.next(&c))),
            ),
            Err(ScanError::BadCursor) => (
                Some("That page is no longer available: start again.".to_owned()),
                Vec::new(),
                None,
            ),
            Err(e) => return Err(Failure::Internal(format!("scans: {e}"))),
        },
        Err(problem) => (Some(problem.clone()), Vec::new(), None),
    };
    let status = listing.param("status");
    let page = ListPage {
        layout: Layout::new(viewer, Section::Scans, "Scans"),
        problem,
        statuses: scans::Status::ALL
            .iter()
            .map(|s| (s.as_str(), s.as_str() == status))
            .collect(),
        rows,
        next,
    };
    Ok(page.render()?)
}

pub struct WorkerRow {
    pub chunk: i32,
    pub status: String,
    pub worker: String,
    pub files: String,
    pub findings: String,
    pub started: String,
    pub ended: String,
}

#[derive(Template)]
#[template(path = "scans_detail.html")]
struct DetailPage {
    layout: Layout,
    problem: Option<String>,
    id: String,
    running: bool,
    may_cancel: bool,
    status: &'static str,
    status_reason: String,
    kind: &'static str,
    connectors: Vec<(String, String)>,
    percent: i64,
    processed: String,
    total: String,
    failed: String,
    findings: String,
    elapsed: i64,
    remaining: i64,
    coverage: scans::Coverage,
    coverage_pct: String,
    target: String,
    completeness: String,
    workers: (i64, i64, i64, i64),
    worker_rows: Vec<WorkerRow>,
    workers_next: Option<String>,
    reasons: Vec<(&'static str, String, String)>,
    created: String,
    started: String,
    ended: String,
}

fn percent(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

async fn get(conn: &mut AsyncPgConnection, viewer: &Viewer, id: ScanId) -> Result<Scan, Failure> {
    match scans::store::get(conn, &viewer.principal.tenant_id, id).await {
        Ok(scan) => Ok(scan),
        Err(ScanError::NotFound) => Err(Failure::NotFound("scan")),
        Err(e) => Err(Failure::Internal(format!("scans: {e}"))),
    }
}

/// One scan as `GET /scans/:id` and `GET /scans/:id/workers` show it, a page of workers at a
/// time (`workers` is that page's request); `problem` is why a cancel was refused.
pub async fn scan(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ScanId,
    workers: PageRequest<'_>,
    problem: Option<String>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let scan = get(conn, viewer, id).await?;
    let names = names(conn, viewer, workers.cursors).await?;
    let (worker_rows, workers_next) =
        match scans::store::workers_page(conn, tenant, id, workers).await {
            Ok(page) => (
                page.items
                    .iter()
                    .map(|w| WorkerRow {
                        chunk: w.chunk_no,
                        status: w.status.clone(),
                        worker: w.worker_id.clone().unwrap_or_default(),
                        files: format!(
                            "{} of {}",
                            count(i64::from(w.files_processed)),
                            count(w.file_count())
                        ),
                        findings: count(i64::from(w.findings_count)),
                        started: w.started_at.map(when).unwrap_or_default(),
                        ended: w.completed_at.map(when).unwrap_or_default(),
                    })
                    .collect(),
                page.pagination
                    .next_cursor
                    .map(|c| format!("/console/scans/{id}?cursor={}", super::encode(&c))),
            ),
            Err(ScanError::BadCursor) => (Vec::new(), None),
            Err(e) => return Err(Failure::Internal(format!("scan workers: {e}"))),
        };
    let progress = scan.progress(OffsetDateTime::now_utc());
    let coverage = scan.coverage();
    let mut reasons = Vec::new();
    for (what, all) in [
        ("skipped", &scan.reasons.skipped),
        ("failed", &scan.reasons.failed),
        ("left unread inside archives", &scan.reasons.unread),
    ] {
        for (reason, n) in all {
            reasons.push((what, reason.clone(), count(*n)));
        }
    }
    let running = !scan.status.is_terminal();
    let page = DetailPage {
        layout: Layout::new(viewer, Section::Scans, "Scan"),
        problem,
        id: scan.id.to_string(),
        running,
        may_cancel: running && viewer.may.scans,
        status: scan.status.as_str(),
        status_reason: scan.status_reason.clone().unwrap_or_default(),
        kind: scan.kind.as_str(),
        connectors: scan
            .connectors
            .iter()
            .map(|c| {
                (
                    format!("/console/connectors/{c}"),
                    names.get(c).cloned().unwrap_or_else(|| c.to_string()),
                )
            })
            .collect(),
        percent: progress.percent_complete,
        processed: count(progress.files_processed),
        total: count(progress.files_total),
        failed: count(progress.files_failed),
        findings: count(progress.findings_count),
        elapsed: progress.elapsed_seconds,
        remaining: progress.estimated_remaining_seconds,
        coverage_pct: percent(coverage.coverage_pct),
        target: percent(coverage.coverage_target),
        completeness: format!("{:.4}", coverage.completeness_score),
        coverage,
        workers: (
            scan.workers.total,
            scan.workers.active,
            scan.workers.completed,
            scan.workers.failed,
        ),
        worker_rows,
        workers_next,
        reasons,
        created: when(scan.created_at),
        started: scan.started_at.map(when).unwrap_or_default(),
        ended: scan.completed_at.map(when).unwrap_or_default(),
    };
    Ok(page.render()?)
}

#[derive(Template)]
#[template(path = "scans_cancel.html")]
struct CancelPage {
    layout: Layout,
    problem: Option<String>,
    id: String,
    processed: String,
    findings: String,
}

async fn cancel_page(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ScanId,
    problem: Option<String>,
) -> Result<String, Failure> {
    if !viewer.may.scans {
        return Err(Failure::Forbidden);
    }
    let scan = get(conn, viewer, id).await?;
    let progress = scan.progress(OffsetDateTime::now_utc());
    let page = CancelPage {
        layout: Layout::new(viewer, Section::Scans, "Cancel scan"),
        problem,
        id: scan.id.to_string(),
        processed: count(progress.files_processed),
        findings: count(progress.findings_count),
    };
    Ok(page.render()?)
}

/// The confirmation a cancel asks for.
pub async fn confirm_cancel(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ScanId,
) -> Result<String, Failure> {
    cancel_page(conn, viewer, id, None).await
}

/// Cancels the scan as `POST /scans/:id/cancel` does; a scan that already ended is said on
/// the confirmation page.
pub async fn cancel_scan(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ScanId,
) -> Result<Posted, Failure> {
    if !viewer.may.scans {
        return Err(Failure::Forbidden);
    }
    let problem = match scans::lifecycle::cancel(conn, &viewer.principal.tenant_id, id).await {
        Ok(_) => return Ok(Posted::Done(format!("/console/scans/{id}"))),
        Err(ScanError::NotFound) => return Err(Failure::NotFound("scan")),
        Err(ScanError::Finished(status)) => format!("The scan already ended: it is {status}."),
        Err(e) => return Err(Failure::Internal(format!("cancel scan: {e}"))),
    };
    Ok(Posted::Again(
        cancel_page(conn, viewer, id, Some(problem)).await?,
    ))
}

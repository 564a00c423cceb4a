//! The coordinator API: what a scan worker outside the platform calls (`scan-worker` with only
//! its deployment configuration: `SCAN_ID`, `COORDINATOR_URL`, `AUTH_TOKEN`). The scan's
//! worker token is the credential (`Authorization: Bearer <AUTH_TOKEN>`); it is good for that
//! scan alone. The worker claims a chunk and is given what it needs to scan it (objects,
//! the tokens written into them, classifiers, connectors' public configuration), then reports outcomes
//! and findings without values, under the claim's fence, as an in-platform worker writes them.

use actix_web::{HttpRequest, web};
use api_types::scans::{
    WorkChunk, WorkClaimRequest, WorkClaimed, WorkFinding, WorkHeld, WorkOutcome, WorkRecord,
};
use dps_http::{ApiError, Body, Enveloped, ServiceState};
use ids::ScanId;
use scans::record::{NewFinding, Outcome};
use scans::remote::{Refused, Reported};
use serde_json::json;

use crate::{Extra, errors, wire};

/// The scan's id, or the 401 every refusal of this API is: a caller without the scan's token
/// learns nothing, not even whether the scan exists.
fn scan_of(id: &str) -> Result<ScanId, ApiError> {
    ScanId::parse(id).ok_or_else(refused)
}

fn refused() -> ApiError {
    ApiError::unauthorized("a scan worker token for this scan is required")
}

/// The worker token the request carries as its Bearer credential.
fn token(request: &HttpRequest) -> Result<&str, ApiError> {
    request
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(refused)
}

fn field(name: &str, message: &str) -> ApiError {
    ApiError::invalid(message.to_owned()).with_details(json!({ "field": name }))
}

fn refusal(refused_because: Refused) -> ApiError {
    match refused_because {
        Refused::Token => refused(),
        Refused::NoChunk => field("chunk_no", "the scan has no such chunk"),
        Refused::NotInChunk(idx) => {
            field("outcomes", "an outcome names an object outside the chunk")
                .with_details(json!({ "field": "outcomes", "idx": idx }))
        }
        Refused::Tokenized(idx) => field(
            "outcomes",
            "a finding is reported tokenized where the platform wrote no token",
        )
        .with_details(json!({ "field": "outcomes", "idx": idx })),
        Refused::FindingType(idx) => field(
            "outcomes",
            "a finding's type is not one the scan finds, or its category is not its type's",
        )
        .with_details(json!({ "field": "outcomes", "idx": idx })),
        Refused::Scan(e) => errors::scans(e),
    }
}

/// Claims a chunk of the scan for the worker.
#[utoipa::path(
    post,
    path = "/api/v1/scans/{id}/work/claim",
    tag = "scan workers",
    security(("worker_token" = [])),
    params(("id" = String, Path, description = "Scan id")),
    request_body = WorkClaimRequest,
    responses(
        (status = 200, description = "A chunk with what scanning it needs, or none: `scan_status` says whether to wait or stop", body = WorkClaimed),
        (status = 400, description = "VALIDATION_FAILED: a bad worker_id", body = api_types::ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: not this scan's worker token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn claim(
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    request: HttpRequest,
    id: web::Path<String>,
    body: Body<WorkClaimRequest>,
) -> Result<Enveloped<WorkClaimed>, ApiError> {
    let scan = scan_of(&id)?;
    let token = token(&request)?;
    let worker_id = body.0.worker_id.trim();
    if worker_id.is_empty()
        || worker_id.chars().count() > 200
        || worker_id.chars().any(char::is_control)
    {
        return Err(field(
            "worker_id",
            "worker_id must be 1 to 200 printable characters",
        ));
    }
    let mut conn = state.conn().await?;
    let claimed = scans::remote::claim(
        &mut conn,
        &extra.keyring,
        &scans::tokens::Recorded,
        scan,
        token,
        worker_id,
        extra.scan_lease_seconds,
    )
    .await
    .map_err(refusal)?;
    Ok(Enveloped::ok(wire::work_claimed(
        claimed,
        extra.scan_lease_seconds,
    )))
}

/// Renews the lease of a claimed chunk.
#[utoipa::path(
    post,
    path = "/api/v1/scans/{id}/work/heartbeat",
    tag = "scan workers",
    security(("worker_token" = [])),
    params(("id" = String, Path, description = "Scan id")),
    request_body = WorkChunk,
    responses(
        (status = 200, description = "Whether the worker still holds the chunk", body = WorkHeld),
        (status = 400, description = "VALIDATION_FAILED: no such chunk", body = api_types::ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: not this scan's worker token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn heartbeat(
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    request: HttpRequest,
    id: web::Path<String>,
    body: Body<WorkChunk>,
) -> Result<Enveloped<WorkHeld>, ApiError> {
    let scan = scan_of(&id)?;
    let token = token(&request)?;
    let mut conn = state.conn().await?;
    scans::remote::heartbeat(
        &mut conn,
        scan,
        token,
        body.chunk_no,
        body.fence,
        extra.scan_lease_seconds,
    )
    .await
    .map(|held| Enveloped::ok(wire::work_held(held)))
    .map_err(refusal)
}

/// Records the outcomes of a batch of the chunk's objects.
#[utoipa::path(
    post,
    path = "/api/v1/scans/{id}/work/record",
    tag = "scan workers",
    security(("worker_token" = [])),
    params(("id" = String, Path, description = "Scan id")),
    request_body = WorkRecord,
    responses(
        (status = 200, description = "Recorded (objects recorded before are skipped), or `held: false` and nothing written", body = WorkHeld),
        (status = 400, description = "VALIDATION_FAILED: an object outside the chunk, or a malformed outcome or finding", body = api_types::ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: not this scan's worker token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn record(
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    request: HttpRequest,
    id: web::Path<String>,
    payload: web::Payload,
) -> Result<Enveloped<WorkHeld>, ApiError> {
    let scan = scan_of(&id)?;
    let token = token(&request)?;
    // The token is checked before a body of up to 64 MiB is read, and no connection is held
    // while it arrives.
    let authorized = {
        let mut conn = state.conn().await?;
        scans::remote::authorize(&mut conn, scan, token)
            .await
            .map_err(refusal)?
    };
    let WorkRecord {
        chunk_no,
        fence,
        outcomes,
    } = dps_http::large_json(&request, payload).await?;
    let reported = outcomes
        .into_iter()
        .enumerate()
        .map(|(i, o)| reported(i, o))
        .collect::<Result<Vec<_>, _>>()?;
    let mut conn = state.conn().await?;
    scans::remote::record(
        &mut conn,
        &scans::tokens::Recorded,
        &authorized,
        chunk_no,
        fence,
        reported,
        extra.scan_lease_seconds,
    )
    .await
    .map(|held| Enveloped::ok(wire::work_held(held)))
    .map_err(refusal)
}

/// Ends a claimed chunk whose objects are all recorded.
#[utoipa::path(
    post,
    path = "/api/v1/scans/{id}/work/complete",
    tag = "scan workers",
    security(("worker_token" = [])),
    params(("id" = String, Path, description = "Scan id")),
    request_body = WorkChunk,
    responses(
        (status = 200, description = "Whether the worker still held the chunk it ended", body = WorkHeld),
        (status = 400, description = "VALIDATION_FAILED: no such chunk", body = api_types::ErrorEnvelope),
        (status = 401, description = "UNAUTHORIZED: not this scan's worker token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn complete(
    state: web::Data<ServiceState>,
    request: HttpRequest,
    id: web::Path<String>,
    body: Body<WorkChunk>,
) -> Result<Enveloped<WorkHeld>, ApiError> {
    let scan = scan_of(&id)?;
    let token = token(&request)?;
    let mut conn = state.conn().await?;
    scans::remote::complete(&mut conn, scan, token, body.chunk_no, body.fence)
        .await
        .map(|held| Enveloped::ok(wire::work_held(held)))
        .map_err(refusal)
}

/// The domain form of one reported outcome, checked: `outcomes[i]` names what is wrong, never
/// a value.
fn reported(i: usize, o: WorkOutcome) -> Result<Reported, ApiError> {
    let at = |name: &str| format!("outcomes[{i}].{name}");
    let reason = |o: &WorkOutcome| {
        o.reason
            .clone()
            .filter(|r| reason_like(r))
            .ok_or_else(|| field(&at("reason"), "a reason is 1 to 64 of a-z, 0-9, _ : . -"))
    };
    if o.outcome != "scanned" && !o.findings.is_empty() {
        return Err(field(&at("findings"), "only a scanned object has findings"));
    }
    if o.outcome != "scanned" && !o.unread.is_empty() {
        return Err(field(
            &at("unread"),
            "only a scanned object has unread contents",
        ));
    }
    if o.unread.len() > MAX_UNREAD_REASONS
        || o.unread.iter().any(|(r, n)| !reason_like(r) || *n == 0)
    {
        return Err(field(
            &at("unread"),
            "at most 64 reasons, each 1 to 64 of a-z, 0-9, _ : . - with a count of at least 1",
        ));
    }
    let outcome = match o.outcome.as_str() {
        "skipped" => Outcome::Skipped(reason(&o)?),
        "failed" => Outcome::Failed(reason(&o)?),
        "scanned" => {
            let mut found = Vec::with_capacity(o.findings.len());
            for (j, f) in o.findings.into_iter().enumerate() {
                found.push(finding(f).map_err(|name| {
                    field(
                        &format!("outcomes[{i}].findings[{j}].{name}"),
                        "is not valid",
                    )
                })?);
            }
            Outcome::Scanned {
                findings: found,
                unread: o
                    .unread
                    .iter()
                    .map(|(r, n)| (r.clone(), i64::from(*n)))
                    .collect(),
            }
        }
        _ => {
            return Err(field(
                &at("outcome"),
                "outcome must be scanned, skipped or failed",
            ));
        }
    };
    Ok(Reported {
        idx: o.idx,
        outcome,
    })
}

/// The most reasons of unread contents one outcome may report: `extract::Skip` has
/// twenty-seven, and detection's skips add `binary:<kind>` for each binary kind it knows.
const MAX_UNREAD_REASONS: usize = 64;

fn reason_like(r: &str) -> bool {
    (1..=64).contains(&r.len())
        && r.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_:.-".contains(&b))
}

/// One of the locations a detector makes (`detect::Location`), and nothing else: a line and
/// column, a CSV row, column and header, a JSON line and path, a table's column path and row,
/// a record file's field path and record, a sheet's cell and header, a document's part or
/// slide and paragraph, or a PDF's page and line; in a member of an archive, with the member's path from the object down (`archive`).
fn location_shaped(location: &serde_json::Value) -> bool {
    let Some(fields) = location.as_object() else {
        return false;
    };
    let named = |n: &serde_json::Value| {
        n.as_str().is_some_and(|t| {
            t.len() <= scans::group::MAX_MEMBER_NAME && !t.chars().any(char::is_control)
        })
    };
    let inner = match fields.get("archive") {
        None => fields.len(),
        Some(serde_json::Value::Array(names))
            if (2..=scans::group::MAX_ARCHIVE_PATH).contains(&names.len())
                && names.iter().all(named) =>
        {
            fields.len() - 1
        }
        Some(_) => return false,
    };
    let count = |k: &str| fields.get(k).is_some_and(serde_json::Value::is_u64);
    let text = |k: &str, nullable: bool| match fields.get(k) {
        Some(serde_json::Value::String(t)) => t.chars().count() <= 1024,
        Some(serde_json::Value::Null) => nullable,
        _ => false,
    };
    match inner {
        2 if fields.contains_key("path") => count("line") && text("path", false),
        2 if fields.contains_key("row") => count("row") && text("column", false),
        2 if fields.contains_key("record") => count("record") && text("field", false),
        2 if fields.contains_key("part") => count("paragraph") && text("part", false),
        2 if fields.contains_key("slide") => count("paragraph") && count("slide"),
        2 if fields.contains_key("page") => count("line") && count("page"),
        2 => count("line") && count("column"),
        3 if fields.contains_key("sheet") => {
            text("sheet", false)
                && text("header", true)
                && fields
                    .get("cell")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(cell_like)
        }
        3 => count("row") && count("column") && text("header", true),
        _ => false,
    }
}

/// A spreadsheet cell's reference: column letters, then a row number (`B7`, `AA1048576`).
fn cell_like(cell: &str) -> bool {
    let letters = cell.bytes().take_while(u8::is_ascii_uppercase).count();
    let digits = &cell[letters..];
    (1..=3).contains(&letters)
        && (1..=7).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
}

/// A reported finding, or the name of its first bad field.
fn finding(f: WorkFinding) -> Result<NewFinding, &'static str> {
    let name_like = |s: &str| {
        (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b))
    };
    if !name_like(&f.pii_type) {
        return Err("pii_type");
    }
    if !name_like(&f.category) {
        return Err("category");
    }
    if !(f.confidence.is_finite() && (0.0..=1.0).contains(&f.confidence)) {
        return Err("confidence");
    }
    // A worker's detector bounds these (a field and a JSONPath to 256 characters, a preview
    // to MAX_PREVIEW, the samples to SAMPLES), so a longer one is not a finding a worker made.
    if f.field.chars().count() > detect::MAX_FIELD || f.field.chars().any(char::is_control) {
        return Err("field");
    }
    if f.occurrences == 0 {
        return Err("occurrences");
    }
    if f.locations.is_empty()
        || f.locations.len() > scans::group::SAMPLES
        || f.locations.len() as u64 > u64::from(f.occurrences)
        || f.locations
            .iter()
            .any(|l| !location_shaped(l) || l.to_string().len() > 4096)
    {
        return Err("locations");
    }
    if f.preview.chars().count() > scans::preview::MAX_PREVIEW {
        return Err("preview");
    }
    Ok(NewFinding {
        pii_type: f.pii_type,
        category: f.category,
        field: f.field,
        confidence: f.confidence,
        occurrences: f.occurrences,
        locations: f.locations,
        preview: f.preview,
        tokenized: f.tokenized,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::location_shaped;

    #[test]
    fn a_location_is_one_of_the_shapes_detection_makes() {
        for good in [
            json!({"line": 3, "column": 14}),
            json!({"row": 2, "column": 3, "header": "ssn"}),
            json!({"row": 2, "column": 3, "header": null}),
            json!({"line": 1, "path": "$.people[0].ssn"}),
            json!({"archive": ["export.zip", "nested/inner.zip", "deep/notes.txt"], "line": 2, "column": 9}),
            json!({"archive": ["logs.tar.gz", "people.json"], "line": 1, "path": "$.ssn"}),
            json!({"column": "customer.ssn", "row": 7}),
            json!({"archive": ["lake.zip", "part-0.parquet"], "column": "ssn", "row": 1}),
            json!({"field": "contact.email", "record": 3}),
            json!({"sheet": "Payroll", "cell": "B7", "header": "SSN"}),
            json!({"sheet": "Export", "cell": "AA10", "header": null}),
            json!({"part": "word/document.xml", "paragraph": 4}),
            json!({"slide": 2, "paragraph": 1}),
            json!({"page": 3, "line": 12}),
        ] {
            assert!(location_shaped(&good), "{good}");
        }
        for bad in [
            json!({"line": 3, "column": 14, "value": "219-09-9999"}),
            json!({"line": "219-09-9999", "column": 1}),
            json!({"row": 2, "column": -3, "header": "ssn"}),
            json!({"line": 1, "path": null}),
            json!({"line": 1, "path": "x".repeat(1025)}),
            json!({"note": "219-09-9999"}),
            json!({"archive": "export.zip", "line": 2, "column": 9}),
            json!({"archive": ["export.zip"], "line": 2, "column": 9}),
            json!({"archive": ["export.zip", "x".repeat(257)], "line": 2, "column": 9}),
            json!({"archive": ["export.zip", "a\nb"], "line": 2, "column": 9}),
            json!({"archive": ["export.zip", "a.txt"], "line": 2}),
            json!({"column": 3, "row": 7}),
            json!({"column": "ssn", "row": "219-09-9999"}),
            json!({"field": "email", "record": -1}),
            json!({"sheet": "Payroll", "cell": "536-22-4100", "header": "SSN"}),
            json!({"sheet": "Payroll", "cell": "B0", "header": null}),
            json!({"part": 3, "paragraph": 4}),
            json!({"slide": "2", "paragraph": 1}),
            json!({"page": 3, "line": "12"}),
            json!([1, 2]),
        ] {
            assert!(!location_shaped(&bad), "{bad}");
        }
    }
}

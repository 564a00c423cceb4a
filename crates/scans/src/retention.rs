//! Retention of what ended scans keep per object, and of resolved findings.
//!
//! - **Resources.** A scan writes one resource row per object it enumerates (a daily scan of a
//!   million objects adds a million rows a day). Once the scan has ended they serve nothing its
//!   chunks do not: progress, coverage and the connector's scan history are the chunks' counts,
//!   and what was last seen of each object is in `scanned_objects`. So the coordinator deletes
//!   the resources of scans that ended more than `DPS_SCAN_RESOURCE_RETENTION_DAYS` days ago.
//!   The scan and its chunks (counts, reasons) stay; the object lists of
//!   `GET /scans/:id/deployment-config` go, and it then names no chunks (there is nothing left
//!   to deploy).
//! - **Resolved findings.** Every rescan of a changed object resolves its old findings and
//!   records new ones. Findings resolved more than `DPS_RESOLVED_FINDINGS_RETENTION_DAYS` days
//!   ago (never fewer than the rollback window allows an undo to open them again) are deleted.
//!   Open findings are never deleted here.

use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::error::ScanError;

/// Days an ended scan keeps its resource rows, unless configured.
pub const DEFAULT_DAYS: u32 = 30;

/// Days a resolved finding is kept, unless configured: the 90 days cloud data-protection
/// services commonly keep findings for.
pub const DEFAULT_RESOLVED_FINDINGS_DAYS: u32 = 90;

/// The fewest days a resolved finding may be kept: more than the longest rollback window
/// (168 hours), within which an undo opens the findings its remediation resolved again.
pub const MIN_RESOLVED_FINDINGS_DAYS: u32 = 8;

/// Rows (resources or findings) deleted per statement: each is a short transaction.
const SLICE: i32 = 10_000;

#[derive(QueryableByName)]
struct Ended {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    scan_id: Uuid,
}

/// Deletes, a slice at a time, the resource rows of scans that ended more than `days` days ago,
/// until none is left or `budget` has passed. Returns how many rows went.
///
/// Only scans with chunks are pruned: a scan that ended before it was split into chunks counts
/// its objects from its resources.
pub async fn prune_resources(
    conn: &mut AsyncPgConnection,
    days: u32,
    budget: Duration,
) -> Result<u64, ScanError> {
    let started = Instant::now();
    let days = i32::try_from(days).unwrap_or(i32::MAX);
    let mut pruned = 0u64;
    while started.elapsed() < budget {
        let ended: Vec<Ended> = db::sql(
            "SELECT s.tenant_id, s.scan_id FROM scans s
              WHERE s.status IN ('completed', 'partial', 'failed', 'cancelled')
                AND s.enumeration_status <> 'in_progress'
                AND s.completed_at < now() - make_interval(days => $1)
                AND EXISTS (SELECT 1 FROM scan_chunks c
                             WHERE c.tenant_id = s.tenant_id AND c.scan_id = s.scan_id)
                AND EXISTS (SELECT 1 FROM scan_resources r
                             WHERE r.tenant_id = s.tenant_id AND r.scan_id = s.scan_id)
              LIMIT 16",
        )
        .bind::<Integer, _>(days)
        .load(conn)
        .await?;
        if ended.is_empty() {
            break;
        }
        for scan in ended {
            loop {
                let gone = db::sql(
                    "DELETE FROM scan_resources
                      WHERE tenant_id = $1 AND scan_id = $2
                        AND idx IN (SELECT idx FROM scan_resources
                                     WHERE tenant_id = $1 AND scan_id = $2
                                     ORDER BY idx LIMIT $3)",
                )
                .bind::<Text, _>(&scan.tenant_id)
                .bind::<SqlUuid, _>(scan.scan_id)
                .bind::<Integer, _>(SLICE)
                .execute(conn)
                .await?;
                pruned += gone as u64;
                if gone < SLICE as usize || started.elapsed() >= budget {
                    break;
                }
            }
            if started.elapsed() >= budget {
                break;
            }
        }
    }
    Ok(pruned)
}

/// Deletes, a slice at a time, findings resolved more than `days` days ago, until none is left
/// or `budget` has passed. Returns how many went. `days` must be at least
/// [`MIN_RESOLVED_FINDINGS_DAYS`] (smaller values are raised to it), so that no finding an undo
/// may still open again is deleted.
pub async fn prune_resolved_findings(
    conn: &mut AsyncPgConnection,
    days: u32,
    budget: Duration,
) -> Result<u64, ScanError> {
    let started = Instant::now();
    let days = i32::try_from(days.max(MIN_RESOLVED_FINDINGS_DAYS)).unwrap_or(i32::MAX);
    let mut pruned = 0u64;
    while started.elapsed() < budget {
        let gone = db::sql(
            "DELETE FROM findings f
              USING (SELECT tenant_id, finding_id FROM findings
                      WHERE status = 'resolved'
                        AND resolved_at < now() - make_interval(days => $1)
                      LIMIT $2) old
              WHERE f.tenant_id = old.tenant_id AND f.finding_id = old.finding_id
                AND f.status = 'resolved'",
        )
        .bind::<Integer, _>(days)
        .bind::<Integer, _>(SLICE)
        .execute(conn)
        .await?;
        pruned += gone as u64;
        if gone < SLICE as usize {
            break;
        }
    }
    Ok(pruned)
}

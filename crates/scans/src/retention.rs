//! Retention of what ended scans keep per object. A scan writes one resource row per object it
//! enumerates (a daily scan of a million objects adds a million rows a day). Once the scan has
//! ended they serve nothing its chunks do not: progress, coverage and the connector's scan
//! history are the chunks' counts, and what was last seen of each object is in
//! `scanned_objects`. So the coordinator deletes the resources of scans that ended more than
//! `DPS_SCAN_RESOURCE_RETENTION_DAYS` days ago. What stays: the scan, its chunks (counts,
//! reasons) and its findings. What goes: the object lists of `GET /scans/:id/deployment-config`,
//! which then names no chunks (there is nothing left to deploy).

use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::error::ScanError;

/// Days an ended scan keeps its resource rows, unless configured.
pub const DEFAULT_DAYS: u32 = 30;

/// Resource rows deleted per statement: each is a short transaction.
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

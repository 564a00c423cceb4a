//! What the scans crate knows of one connector: its latest activity (when it was last scanned,
//! its open findings), its scan history, and its part in deleting it.

use std::collections::HashMap;

use diesel::dsl::max;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{findings, scan_connectors, scan_resources, scanned_objects, scans};
use ids::{ConnectorId, ScanId, TenantId};

use crate::error::ScanError;
use crate::lifecycle::{Stop, stop};
use crate::model::Status;

/// A connector's latest activity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Activity {
    /// When its last scan ended, whatever its status.
    pub last_scan: Option<OffsetDateTime>,
    /// Its open findings by detection category.
    pub open_findings: Vec<(String, i64)>,
}

impl Activity {
    pub fn open_findings_count(&self) -> i64 {
        self.open_findings.iter().map(|(_, n)| n).sum()
    }
}

/// The latest activity of each of `connectors` (each has an entry, empty when it never ran).
pub async fn activity(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connectors: &[ConnectorId],
) -> Result<HashMap<ConnectorId, Activity>, ScanError> {
    let ids: Vec<Uuid> = connectors.iter().map(ConnectorId::as_uuid).collect();
    let mut out: HashMap<ConnectorId, Activity> = connectors
        .iter()
        .map(|c| (*c, Activity::default()))
        .collect();
    if ids.is_empty() {
        return Ok(out);
    }
    let last: Vec<(Uuid, Option<OffsetDateTime>)> = scan_connectors::table
        .inner_join(
            scans::table.on(scans::tenant_id
                .eq(scan_connectors::tenant_id)
                .and(scans::scan_id.eq(scan_connectors::scan_id))),
        )
        .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::connector_id.eq_any(&ids))
        .group_by(scan_connectors::connector_id)
        .select((scan_connectors::connector_id, max(scans::completed_at)))
        .load(conn)
        .await?;
    for (id, at) in last {
        if let Some(a) = out.get_mut(&ConnectorId::from_uuid(id)) {
            a.last_scan = at;
        }
    }
    // Values, as every findings count counts them, from the counts kept by triggers on the
    // findings: exact at every commit, without grouping the findings.
    let open = crate::open_counts::by_connector(conn, tenant, &ids).await?;
    for (id, category, n) in open {
        if let Some(a) = out.get_mut(&ConnectorId::from_uuid(id)) {
            a.open_findings.push((category, n));
        }
    }
    Ok(out)
}

/// One entry of a connector's scan history.
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    pub scan_id: ScanId,
    pub status: String,
    pub started_at: Option<OffsetDateTime>,
    pub completed_at: Option<OffsetDateTime>,
    pub files_processed: i64,
    pub findings_count: i64,
}

/// A connector's latest scans, newest first, with what each processed of this connector.
pub async fn history(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    limit: i64,
) -> Result<Vec<HistoryEntry>, ScanError> {
    let rows: Vec<(Uuid, String, Option<OffsetDateTime>, Option<OffsetDateTime>)> = scans::table
        .inner_join(
            scan_connectors::table.on(scan_connectors::tenant_id
                .eq(scans::tenant_id)
                .and(scan_connectors::scan_id.eq(scans::scan_id))),
        )
        .filter(scans::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::connector_id.eq(connector.as_uuid()))
        .order((scans::created_at.desc(), scans::scan_id.desc()))
        .limit(limit)
        .select((
            scans::scan_id,
            scans::status,
            scans::started_at,
            scans::completed_at,
        ))
        .load(conn)
        .await?;
    // What each of these scans processed of this connector: the chunks that start in its
    // range of resources (a chunk holds one connector's), in one grouped query. Chunks stay
    // when an ended scan's resources go (`crate::retention`).
    #[derive(QueryableByName)]
    struct Done {
        #[diesel(sql_type = SqlUuid)]
        scan_id: Uuid,
        #[diesel(sql_type = BigInt)]
        processed: i64,
        #[diesel(sql_type = BigInt)]
        findings: i64,
    }
    let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
    let done: Vec<Done> = db::sql(
        "SELECT c.scan_id, sum(c.files_processed)::bigint AS processed,
                sum(c.findings_count)::bigint AS findings
           FROM scan_connectors sc
           JOIN scan_chunks c ON c.tenant_id = sc.tenant_id AND c.scan_id = sc.scan_id
                             AND c.start_index BETWEEN sc.first_idx AND sc.last_idx
          WHERE sc.tenant_id = $1 AND sc.scan_id = ANY($2) AND sc.connector_id = $3
          GROUP BY c.scan_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&ids)
    .bind::<SqlUuid, _>(connector.as_uuid())
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(scan_id, status, started_at, completed_at)| {
            let (processed, findings) = done
                .iter()
                .find(|d| d.scan_id == scan_id)
                .map_or((0, 0), |d| (d.processed, d.findings));
            HistoryEntry {
                scan_id: ScanId::from_uuid(scan_id),
                status,
                started_at,
                completed_at,
                files_processed: processed,
                findings_count: findings,
            }
        })
        .collect())
}

/// The scans crate's part in deleting a connector, in the caller's transaction (which also
/// deletes the connector itself): its queued and running scans are cancelled; its findings and
/// what was seen of its objects go; scans of it alone are deleted; from scans shared with other
/// connectors its resources and chunks go, so that their progress and workers count only what
/// remains.
pub async fn forget_connector(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<(), ScanError> {
    let scan_ids: Vec<Uuid> = scan_connectors::table
        .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::connector_id.eq(connector.as_uuid()))
        .select(scan_connectors::scan_id)
        .load(conn)
        .await?;
    for scan in &scan_ids {
        let reason = Some("a connector of the scan was deleted");
        let scan = ScanId::from_uuid(*scan);
        stop(conn, tenant, scan, Stop::Active, Status::Cancelled, reason).await?;
    }
    let shared: Vec<Uuid> = scan_connectors::table
        .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
        .filter(scan_connectors::scan_id.eq_any(&scan_ids))
        .filter(scan_connectors::connector_id.ne(connector.as_uuid()))
        .select(scan_connectors::scan_id)
        .distinct()
        .load(conn)
        .await?;
    let alone: Vec<&Uuid> = scan_ids.iter().filter(|s| !shared.contains(s)).collect();
    // Findings have no foreign keys (migration 000010): the connector's go explicitly, those
    // of the scans deleted below included.
    diesel::delete(
        findings::table
            .filter(findings::tenant_id.eq(tenant.as_str()))
            .filter(findings::connector_id.eq(connector.as_uuid())),
    )
    .execute(conn)
    .await?;
    diesel::delete(
        scanned_objects::table
            .filter(scanned_objects::tenant_id.eq(tenant.as_str()))
            .filter(scanned_objects::connector_id.eq(connector.as_uuid())),
    )
    .execute(conn)
    .await?;
    // A chunk holds one connector's resources, so the connector's chunks of a shared scan are
    // those in its range of resources, or with any resource of it; they go before the links and
    // resources that identify them. (An ended scan's resources may be gone already:
    // `crate::retention`.)
    db::sql(
        "DELETE FROM scan_chunks c
          WHERE c.tenant_id = $1 AND c.scan_id = ANY($2)
            AND (EXISTS (SELECT 1 FROM scan_connectors sc
                          WHERE sc.tenant_id = c.tenant_id AND sc.scan_id = c.scan_id
                            AND sc.connector_id = $3
                            AND c.start_index BETWEEN sc.first_idx AND sc.last_idx)
                 OR EXISTS (SELECT 1 FROM scan_resources r
                             WHERE r.tenant_id = c.tenant_id AND r.scan_id = c.scan_id
                               AND r.idx BETWEEN c.start_index AND c.end_index
                               AND r.connector_id = $3))",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&shared)
    .bind::<SqlUuid, _>(connector.as_uuid())
    .execute(conn)
    .await?;
    diesel::delete(
        scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq_any(&shared))
            .filter(scan_resources::connector_id.eq(connector.as_uuid())),
    )
    .execute(conn)
    .await?;
    diesel::delete(
        scan_connectors::table
            .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
            .filter(scan_connectors::scan_id.eq_any(&shared))
            .filter(scan_connectors::connector_id.eq(connector.as_uuid())),
    )
    .execute(conn)
    .await?;
    diesel::delete(
        scans::table
            .filter(scans::tenant_id.eq(tenant.as_str()))
            .filter(scans::scan_id.eq_any(alone)),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the tenant's scans left with no connector at all, in the caller's transaction, which
/// has just deleted a connector. A scan created while its only connector was being deleted is
/// one: [`forget_connector`] read the connector's scans before that scan existed, and the
/// delete (which waits for the scan's creation to commit, whose links hold a share of the
/// connector's row) then took its link by cascade. Such a scan is deleted, as the delete's own
/// scans of that connector alone are; a worker that still holds a chunk of it finds it gone.
pub async fn forget_orphans(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<usize, ScanError> {
    Ok(db::sql(
        "DELETE FROM scans s
          WHERE s.tenant_id = $1
            AND NOT EXISTS (SELECT 1 FROM scan_connectors c
                             WHERE c.tenant_id = s.tenant_id AND c.scan_id = s.scan_id)",
    )
    .bind::<Text, _>(tenant.as_str())
    .execute(conn)
    .await?)
}

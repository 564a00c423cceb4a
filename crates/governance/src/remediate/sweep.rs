//! The expiry sweeper: a tokenize or mask snapshot is deleted once its undo window has passed
//! (a failed request's snapshot, which has no window, at once). A quarantined object's copy is
//! the quarantine itself and is never swept.

use diesel::result::Error as DieselError;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::execute::{Executor, open_storage, snapshot_of};
use super::store::{self, COLUMNS, Row};

/// Snapshots looked at per step.
const PER_STEP: i32 = 50;

/// Deletes the snapshots due; returns how many requests it looked at.
pub async fn run_once(conn: &mut AsyncPgConnection, exec: &Executor) -> Result<usize, DieselError> {
    let due: Vec<Row> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM remediation_runs u
           JOIN remediation_requests r
             ON r.tenant_id = u.tenant_id AND r.request_id = u.request_id
          WHERE u.lkg_deleted_at IS NULL AND u.lkg_key IS NOT NULL
            AND r.action_type <> $1
            AND ((u.undo_until IS NOT NULL AND u.undo_until < now())
                 OR r.status IN ('failed', 'blocked'))
          ORDER BY u.undo_until NULLS FIRST
          LIMIT {PER_STEP}"
    ))
    .bind::<Text, _>("quarantine")
    .load(conn)
    .await?;
    for row in &due {
        let Ok(tenant) = row.tenant() else { continue };
        let Ok((bucket, key)) = snapshot_of(row) else {
            continue;
        };
        let deleted = match open_storage(conn, exec, &tenant, row).await {
            Ok(storage) => match storage.bucket(&bucket) {
                Ok(bucket) => bucket.delete(&key).await.map_err(|e| e.message),
                Err(e) => Err(e.message),
            },
            // A deleted connector's storage is out of reach for good.
            Err(super::stop::Stop::Fail(reason)) => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, %reason, "a snapshot is out of reach; it is forgotten");
                Ok(())
            }
            Err(_) => Err("the connector's storage could not be opened".to_owned()),
        };
        match deleted {
            Ok(()) => store::snapshot_deleted(conn, row).await?,
            Err(reason) => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, %reason, "an expired snapshot could not be deleted; it is tried again");
            }
        }
    }
    Ok(due.len())
}

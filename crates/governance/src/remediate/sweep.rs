//! The expiry sweeper: a tokenize or mask snapshot is deleted once its undo window has passed
//! (a failed request's snapshot at once, unless it was kept for the window because it may be
//! the original's only copy). A quarantined object's copy is the quarantine itself and is
//! never swept while it stands; once undone (the object is back) or failed, it goes like any
//! snapshot, after the window. A deleted connector's snapshots go at once, through the
//! configuration its deletion kept (`retain`).

use diesel::result::Error as DieselError;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::conn::Conn;
use super::execute::{Executor, open_storage};
use super::location::snapshot_of;
use super::retain;
use super::stop::Stop;
use super::store::{self, COLUMNS, Row};

/// Snapshots looked at per step.
const PER_STEP: i32 = 50;

/// Deletes the snapshots due, a random sample of them at a time (so that snapshots whose
/// delete keeps failing, a bucket gone or a permission withdrawn, cannot hold the head of the
/// queue); returns how many it deleted, so that a step that deleted nothing waits before the
/// next instead of asking the provider again at once.
pub async fn run_once(conn: &mut AsyncPgConnection, exec: &Executor) -> Result<usize, DieselError> {
    run(&mut Conn::Borrowed(conn), exec).await
}

/// [`run_once`] with connections from `pool`, none held while a snapshot's delete waits on the
/// storage.
pub async fn run_once_pooled(pool: &db::Pool, exec: &Executor) -> Result<usize, DieselError> {
    run(&mut Conn::pooled(pool), exec).await
}

async fn run(db: &mut Conn<'_>, exec: &Executor) -> Result<usize, DieselError> {
    let due: Vec<Row> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM remediation_runs u
           JOIN remediation_requests r
             ON r.tenant_id = u.tenant_id AND r.request_id = u.request_id
          WHERE u.lkg_deleted_at IS NULL AND u.lkg_key IS NOT NULL
            AND (r.action_type <> $1 OR r.status IN ('undone', 'failed'))
            AND ((u.undo_until IS NOT NULL AND u.undo_until < now())
                 OR (u.undo_until IS NULL AND r.status IN ('failed', 'blocked'))
                 OR EXISTS (SELECT 1 FROM remediation_retained_storage s
                             WHERE s.tenant_id = r.tenant_id AND s.connector_id = r.connector_id))
          ORDER BY random()
          LIMIT {PER_STEP}"
    ))
    .bind::<Text, _>("quarantine")
    .load(db.get().await?)
    .await?;
    let mut deleted_count = 0;
    for row in &due {
        let Ok(tenant) = row.tenant() else { continue };
        let Ok((bucket, key)) = snapshot_of(row) else {
            continue;
        };
        let conn = db.get().await?;
        let storage = match open_storage(conn, exec, &tenant, row).await {
            // A deleted connector's storage, through what its deletion kept.
            Err(Stop::Fail(cause)) => {
                match retain::retained_storage(conn, exec, &tenant, row.connector()).await {
                    Ok(Some(storage)) => Ok(storage),
                    Ok(None) => Err(Stop::Fail(cause)),
                    Err(e) => Err(e),
                }
            }
            opened => opened,
        };
        db.release();
        let deleted = match storage {
            Ok(storage) => match storage.bucket(&bucket) {
                Ok(bucket) => bucket.delete(&key).await.map_err(|e| e.message),
                Err(e) => Err(e.message),
            },
            // Deleted before its configuration was kept for this (or kept nothing): out of
            // reach for good.
            Err(Stop::Fail(cause)) => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, reason = %cause.reason, "a snapshot is out of reach; it is forgotten");
                Ok(())
            }
            Err(_) => Err("the connector's storage could not be opened".to_owned()),
        };
        match deleted {
            Ok(()) => {
                store::snapshot_deleted(db.get().await?, row).await?;
                deleted_count += 1;
            }
            Err(reason) => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, %reason, "an expired snapshot could not be deleted; it is tried again");
            }
        }
    }
    retain::release(db.get().await?).await?;
    Ok(deleted_count)
}

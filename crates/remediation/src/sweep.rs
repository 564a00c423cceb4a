//! The sweeper: deletes the copies remediation left in customers' storage once they may go
//! (`copies::fate` says when), a random sample of the due ones at a time, and keeps for good
//! those that may be the last copy of an original. A deleted connector's copies are reached
//! through the configuration its deletion kept (`retain`), on the same schedule as a live
//! one's: a snapshot lives until its rollback window ends, connector or not.

use diesel::result::Error as DieselError;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::conn::Conn;
use crate::copies::{self, Fate};
use crate::location::snapshot_of;
use crate::retain;
use crate::stop::{Reason, Stop};
use crate::storage::Executor;
use crate::store::{self, COLUMNS, Row};

/// Copies looked at per step.
const PER_STEP: i32 = 50;

/// Deletes the copies due, a random sample of them at a time (so that copies whose delete
/// keeps failing, a bucket gone or a permission withdrawn, cannot hold the head of the queue);
/// returns how many it deleted, so that a step that deleted nothing waits before the next
/// instead of asking the provider again at once.
pub async fn run_once(conn: &mut AsyncPgConnection, exec: &Executor) -> Result<usize, DieselError> {
    run(&mut Conn::Borrowed(conn), exec).await
}

/// [`run_once`] with connections from `pool`, none held while a copy's delete waits on the
/// storage.
pub async fn run_once_pooled(pool: &db::Pool, exec: &Executor) -> Result<usize, DieselError> {
    run(&mut Conn::pooled(pool), exec).await
}

/// The copies that may be due: an executed tokenize or mask's snapshot past its window; an
/// undone request's; a failed or blocked request's at once when nothing was written (no window
/// was set), else past its window; a failed, blocked or undone quarantine's copy at any time
/// (it goes only if its original is verified unchanged). A standing quarantine, a copy kept for
/// good and one deleted already are never chosen.
const DUE: &str = "u.lkg_deleted_at IS NULL AND u.lkg_key IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM remediation_kept_copies k
                     WHERE k.tenant_id = r.tenant_id AND k.request_id = r.request_id)
    AND CASE WHEN r.action_type = 'quarantine'
             THEN r.status IN ('failed', 'blocked', 'undone')
             ELSE r.status = 'undone'
                  OR (r.status IN ('receipted', 'failed', 'blocked') AND u.undo_until < now())
                  OR (r.status IN ('failed', 'blocked') AND u.undo_until IS NULL)
        END";

async fn run(db: &mut Conn<'_>, exec: &Executor) -> Result<usize, DieselError> {
    let due: Vec<Row> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM remediation_runs u
           JOIN remediation_requests r
             ON r.tenant_id = u.tenant_id AND r.request_id = u.request_id
          WHERE {DUE}
          ORDER BY random()
          LIMIT {PER_STEP}"
    ))
    .load(db.get().await?)
    .await?;
    let mut deleted_count = 0;
    for row in &due {
        let Ok((bucket, key)) = snapshot_of(row) else {
            continue;
        };
        let storage = match copies::open_any(db, exec, row).await {
            Ok(storage) => storage,
            // Deleted before its configuration was kept for this (a connector deleted by an
            // earlier version): out of reach for good.
            Err(Stop::Fail(cause)) if cause.reason == Reason::ConnectorDeleted => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, "a copy is out of reach: its connector was deleted with nothing kept; it is forgotten");
                store::snapshot_deleted(db.get().await?, row).await?;
                continue;
            }
            Err(Stop::Database(e)) => return Err(e),
            Err(_) => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, "the storage of a copy due could not be opened; it is tried again");
                continue;
            }
        };
        db.release();
        match copies::fate(&storage, row).await {
            Fate::Delete => match storage.bucket(&bucket) {
                Ok(b) => match b.delete(&key).await {
                    Ok(()) => {
                        store::snapshot_deleted(db.get().await?, row).await?;
                        deleted_count += 1;
                    }
                    Err(e) => {
                        tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, reason = %e.message, "a copy due could not be deleted; it is tried again");
                    }
                },
                Err(e) => {
                    tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, reason = %e.message, "a copy due could not be reached; it is tried again");
                }
            },
            Fate::Keep(reason) => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, reason, "a copy may be the original's last one; it is kept for good");
                store::keep_copy(db.get().await?, row, (&bucket, &key), reason).await?;
            }
            Fate::Undecided => {}
        }
    }
    retain::release(db.get().await?).await?;
    Ok(deleted_count)
}

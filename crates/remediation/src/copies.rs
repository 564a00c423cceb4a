//! The copies a remediation leaves in the customer's storage (a tokenize or mask snapshot, a
//! quarantine's copy at its destination) and when one may go.
//!
//! **Safety invariant:** no path deletes what may be the last copy of a customer's object. A
//! copy goes when its purpose is spent and the original is provably still there:
//! - an executed tokenize or mask's snapshot, once its rollback window has passed (the object
//!   holds the remediated content, as the tenant asked; the window is the promise);
//! - a snapshot of a request that ended without writing, or was undone, at once;
//! - a snapshot of a request that failed after its snapshot (its write may have happened), once
//!   the window has passed and only while something is at the object's key;
//! - a quarantine's copy only when the original is verified present and unchanged: a standing
//!   quarantine is the object itself, and a failed or undone one whose original is gone or holds
//!   something else may be the only copy left.
//!
//! A copy that may be the last is kept for good (`lkg_kept_reason`). Whether the connector
//! still exists does not matter: a deleted connector's storage is reached through the
//! configuration its deletion kept (`retain`), for cleaning up and undo, never for new changes.

use connectors::Storage;

use crate::conn::Conn;
use crate::location::{lkg_location, quarantine_location, snapshot_of};
use crate::retain;
use crate::stop::{Reason, Stop};
use crate::storage::{Executor, MAX_OBJECT_BYTES, open_storage, sha256};
use crate::store::{self, Row, State, same_etag};
use policies::document::{Action, ActionType};

/// The request's connector's storage: the live connector's, else what its deletion kept.
pub(crate) async fn open_any(
    db: &mut Conn<'_>,
    exec: &Executor,
    row: &Row,
) -> Result<Storage, Stop> {
    let tenant = row.tenant()?;
    let conn = db.get().await?;
    match open_storage(conn, exec, &tenant, row).await {
        Err(Stop::Fail(cause)) if cause.reason == Reason::ConnectorDeleted => {
            match retain::retained_storage(conn, exec, &tenant, row.connector()).await? {
                Some(storage) => Ok(storage),
                None => Err(Stop::Fail(cause)),
            }
        }
        opened => opened,
    }
}

/// What is at the request's object's key now, beside what it was planned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Original {
    /// The content the request was planned on (same ETag, or same SHA-256).
    Unchanged,
    /// Something else.
    Changed,
    /// Nothing.
    Missing,
}

impl Original {
    /// Why a copy is kept for good when the original is not as it was.
    pub(crate) fn kept_reason(self) -> Option<&'static str> {
        match self {
            Original::Unchanged => None,
            Original::Changed => Some("original_changed"),
            Original::Missing => Some("original_missing"),
        }
    }
}

/// Asks the storage what is at the request's object's key: `None` when it cannot say. The
/// ETag decides where it is the one planned on; elsewhere (another provider's ETags, an undo's
/// restore) the content is read and compared with the SHA-256 taken before the remediation.
pub(crate) async fn original(storage: &Storage, row: &Row) -> Option<Original> {
    let source = storage.bucket(&row.bucket).ok()?;
    let head = match source.head(&row.object_key).await {
        Ok(Some(head)) => head,
        Ok(None) => return Some(Original::Missing),
        Err(_) => return None,
    };
    if same_etag(head.etag.as_deref(), Some(&row.etag)) {
        return Some(Original::Unchanged);
    }
    let Some(before) = row.sha256_before.as_deref() else {
        return Some(Original::Changed);
    };
    match source
        .read_whole(&row.object_key, None, MAX_OBJECT_BYTES)
        .await
    {
        Ok(now) if sha256(&now.bytes) == before => Some(Original::Unchanged),
        Ok(_) => Some(Original::Changed),
        Err(e) => match e.failure {
            connectors::Failure::NotFound => Some(Original::Missing),
            connectors::Failure::TooLarge => Some(Original::Changed),
            _ => None,
        },
    }
}

/// What to do with a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Delete,
    /// Kept for good, for this reason.
    Keep(&'static str),
    /// The storage cannot say now: asked again later.
    Undecided,
}

/// Whether a recorded copy of an ended request may go now (the sweeper chose it as due).
pub(crate) async fn fate(storage: &Storage, row: &Row) -> Fate {
    let state = row.state();
    let kind = row.kind();
    let decide = |found: Option<Original>, keep_changed: bool| match found {
        None => Fate::Undecided,
        Some(Original::Unchanged) => Fate::Delete,
        Some(Original::Changed) if !keep_changed => Fate::Delete,
        Some(other) => other.kept_reason().map_or(Fate::Delete, Fate::Keep),
    };
    match (kind, state) {
        // The quarantined object itself: never chosen, never touched.
        (ActionType::Quarantine, State::Receipted) => Fate::Undecided,
        // A quarantine's copy goes only as a duplicate of an original that is there.
        (ActionType::Quarantine, _) => decide(original(storage, row).await, true),
        // An executed remediation's snapshot, its window passed; an undone one's, restored.
        (_, State::Receipted | State::Undone) => Fate::Delete,
        // A request that failed after its snapshot kept it for the window (its write may have
        // happened): it goes while something is at the key, which holds the object's history.
        (_, State::Failed | State::Blocked) if row.undo_until.is_some() => {
            decide(original(storage, row).await, false)
        }
        // Nothing was written.
        _ => Fate::Delete,
    }
}

/// A failed or blocked request's copy, when nothing can have been written yet or the original is
/// provably untouched: deleted at once (a failure to delete is left to the sweeper). A copy made
/// but not recorded (the process stopped between the two, or the connector was deleted under
/// it) is at the request's own location, which is known. A quarantine's copy goes only when its
/// original is verified unchanged; otherwise it is recorded and kept for good.
pub(crate) async fn discard(db: &mut Conn<'_>, exec: &Executor, row: &Row) {
    let Ok(storage) = open_any(db, exec, row).await else {
        return;
    };
    let recorded = snapshot_of(row).ok();
    let location = match &recorded {
        Some(location) => Some(location.clone()),
        None if row.state() == State::Planned => {
            let action = match (row.tenant(), row.kind(), db.get().await) {
                (Ok(tenant), kind, Ok(conn)) => policies::store::action_at(
                    conn,
                    &tenant,
                    row.policy(),
                    row.policy_version,
                    kind,
                )
                .await
                .ok()
                .flatten(),
                _ => None,
            };
            match action {
                Some(Action::Quarantine(config)) => {
                    Some(quarantine_location(row, &config.destination))
                }
                Some(Action::Tokenize(_) | Action::Mask(_)) => Some(lkg_location(&storage, row)),
                _ => None,
            }
        }
        None => None,
    };
    let Some((lkg_bucket, lkg_key)) = location else {
        return;
    };
    db.release();
    if row.kind() == ActionType::Quarantine {
        // A copy never recorded may never have been made (the request stopped before its
        // copy): there is nothing to keep then, and a record of one would be false.
        if recorded.is_none() {
            let exists = match storage.bucket(&lkg_bucket) {
                Ok(bucket) => bucket.head(&lkg_key).await.map(|h| h.is_some()),
                Err(e) => Err(e),
            };
            if !matches!(exists, Ok(true)) {
                return;
            }
        }
        match original(&storage, row).await.map(Original::kept_reason) {
            Some(None) => {}
            Some(Some(reason)) => {
                tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, reason, "a quarantine's copy may be the original's last one; it is kept");
                if let Ok(conn) = db.get().await {
                    let _ = store::keep_copy(conn, row, (&lkg_bucket, &lkg_key), reason).await;
                }
                return;
            }
            // Asked again by the sweeper, if recorded; an unrecorded copy of an original that
            // cannot be checked is left where it is, rather than risk the last copy.
            None => return,
        }
    }
    if let Ok(bucket) = storage.bucket(&lkg_bucket)
        && bucket.delete(&lkg_key).await.is_ok()
        && recorded.is_some()
        && let Ok(conn) = db.get().await
    {
        let _ = store::snapshot_deleted(conn, row).await;
    }
}

//! One-click undo within the tenant's rollback window: the snapshot goes back where the
//! remediation wrote (a quarantined object goes back where it was), conditional on what is
//! there now, and the request ends `undone`, with a receipt and a `remediation_undone` entry.
//!
//! The request's row stays locked while the storage is written, so two undos of one request
//! cannot both restore it. The transaction waits on the storage meanwhile, so it lifts the
//! services' idle-in-transaction timeout (the statement timeout, 5 s by default) for itself:
//! reading and writing an object of up to 64 MiB takes longer, and a session ended under a
//! restored object would leave it restored and the request still `receipted`. Should an undo
//! still stop between the write and the commit, the next one finds the original content in
//! place (by its SHA-256, whatever the store's ETags are) and finishes. An undone remediation is not planned again for the same policy
//! version (see `evaluate::plan`).

use connectors::cloud::{Failure, Storage};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use ids::{RemediationId, TenantId, UserId};
use scans::findings::Remediated;
use serde_json::json;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::conn::Conn;
use crate::location::snapshot_of;
use crate::receipt;
use crate::stop::{Reason, Stop};
use crate::storage::{Executor, MAX_OBJECT_BYTES};
use crate::store::{self, Ending, Row, State, same_etag};
use policies::document::ActionType;
use posture::risk::rescore::Changed;

#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error("no such remediation")]
    NotFound,
    /// Only a receipted remediation can be undone; the state says why this one cannot.
    #[error("the remediation is {0}, not executed")]
    NotUndoable(&'static str),
    #[error("the remediation was undone already")]
    AlreadyUndone,
    #[error("the rollback window of this remediation has passed; its snapshot is gone")]
    Expired,
    #[error("the object changed since the remediation wrote it")]
    ObjectChanged,
    /// The snapshot no longer holds the bytes the remediation copied: restoring it would
    /// write something else and call it the original.
    #[error("the snapshot does not hold the original bytes any more; nothing was restored")]
    SnapshotChanged,
    #[error("another undo of this remediation is running")]
    Busy,
    /// The remediation's connector was deleted and nothing of its configuration was kept (it
    /// was deleted before deletions kept it): its storage, and the snapshot in it, are out of
    /// the service's reach for good.
    #[error("the remediation's connector was deleted; its snapshot cannot be reached")]
    ConnectorDeleted,
    /// The storage could not be reached, or answered something unusable; the provider's own
    /// words went to the operator's log.
    #[error("the storage could not complete the undo: {0}")]
    Storage(Reason),
    /// The storage refused the undo for a reason retrying will not change: the object or the
    /// snapshot is archived, immutable or under a hold, or the connector's identity may not
    /// do it.
    #[error("the storage refused the undo: {0}")]
    Refused(Reason),
    #[error("database error")]
    Database(#[from] diesel::result::Error),
}

impl From<Stop> for UndoError {
    fn from(stop: Stop) -> Self {
        match stop {
            Stop::Database(e) => UndoError::Database(e),
            Stop::Fail(cause) if cause.reason == Reason::ConnectorDeleted => {
                UndoError::ConnectorDeleted
            }
            Stop::Fail(cause) | Stop::Retry(cause) => {
                if let Some(detail) = &cause.detail {
                    tracing::warn!(reason = %cause.reason, %detail, "an undo could not open the storage");
                }
                UndoError::Storage(cause.reason)
            }
        }
    }
}

/// Undoes a remediation. `force` restores even over a change made since the remediation.
pub async fn undo(
    conn: &mut AsyncPgConnection,
    exec: &Executor,
    tenant: &TenantId,
    id: RemediationId,
    actor: &UserId,
    force: bool,
) -> Result<Row, UndoError> {
    let id = id.as_uuid();
    let undone = conn
        .transaction(async |conn| {
            {
                use diesel_async::RunQueryDsl;
                db::sql(UNDO_IDLE_TIMEOUT).execute(conn).await?;
            }
            lock(conn, tenant, id).await?;
            let row = store::one(conn, tenant, id)
                .await?
                .ok_or(UndoError::NotFound)?;
            match row.state() {
                State::Receipted => {}
                State::Undone => return Err(UndoError::AlreadyUndone),
                other => return Err(UndoError::NotUndoable(other.as_str())),
            }
            let now = OffsetDateTime::now_utc();
            if row.lkg_deleted_at.is_some() || row.undo_until.is_none_or(|until| now >= until) {
                return Err(UndoError::Expired);
            }
            // Opened afresh: an undo is rare and asked by a person, and must see the connector
            // as it is now (deleted, or with new credentials), not as it was a minute ago. A
            // deleted connector's storage is reached through what its deletion kept: the
            // rollback window outlives the connector.
            exec.storages.forget(&(tenant.clone(), row.connector()));
            let storage = crate::copies::open_any(&mut Conn::Borrowed(conn), exec, &row).await?;
            let (restored, displaced) = restore(&storage, &row, force).await?;
            let receipt = exec
                .receipts
                .undone(conn, tenant, &row, actor.as_str(), &restored, force)
                .await?;
            let mut entry =
                receipt::entry(audit::Kind::RemediationUndone, &row, "undone", &receipt);
            entry.actor = audit::Actor::User(actor.clone());
            entry.details["forced"] = json!(force);
            // The original content is back: the tokens written into it are gone from it.
            crate::written::forget_request(conn, tenant, row.request_id).await?;
            if let Some((bucket, key)) = &displaced {
                // Where the version a forced undo replaced was kept.
                entry.details["displaced"] = json!({ "bucket": bucket, "key": key });
            }
            store::end(
                conn,
                &row,
                Ending {
                    from: State::Receipted,
                    to: State::Undone,
                    outcome: None,
                    reason: None,
                    entry,
                    receipt: Some(receipt),
                    changed: Some(Changed {
                        connector: row.connector(),
                        bucket: &row.bucket,
                        object_key: &row.object_key,
                        findings: &row.finding_ids,
                        change: Remediated::Restored,
                    }),
                },
            )
            .await?;
            Ok::<_, UndoError>(row)
        })
        .await?;
    // The snapshot of a tokenize or mask is spent; a quarantined object's copy was moved back.
    if let Ok((bucket, key)) = snapshot_of(&undone)
        && let Ok(storage) = crate::copies::open_any(&mut Conn::Borrowed(conn), exec, &undone).await
        && let Ok(bucket) = storage.bucket(&bucket)
        && bucket.delete(&key).await.is_ok()
    {
        store::snapshot_deleted(conn, &undone).await?;
    }
    store::one(conn, tenant, id)
        .await?
        .ok_or(UndoError::NotFound)
}

/// How long an undo's transaction may wait on the storage between two statements: every
/// storage call is bounded by the connector's own timeouts, and an undo makes at most five
/// (a head, a read of the snapshot, perhaps a read of the object and a copy, a put).
const UNDO_IDLE_TIMEOUT: &str = "SET LOCAL idle_in_transaction_session_timeout = '10min'";

/// Takes the request's row for this transaction, or says another holds it.
async fn lock(conn: &mut AsyncPgConnection, tenant: &TenantId, id: Uuid) -> Result<(), UndoError> {
    use diesel::sql_types::{Text, Uuid as SqlUuid};
    use diesel_async::RunQueryDsl;
    let locked = db::sql(
        "SELECT 1 FROM remediation_requests WHERE tenant_id = $1 AND request_id = $2
            FOR UPDATE NOWAIT",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await;
    match locked {
        Ok(0) => Err(UndoError::NotFound),
        Ok(_) => Ok(()),
        // 55P03 lock_not_available: another undo holds it.
        Err(diesel::result::Error::DatabaseError(_, info))
            if info.message().contains("could not obtain lock") =>
        {
            Err(UndoError::Busy)
        }
        Err(e) => Err(e.into()),
    }
}

/// Puts the snapshot back; returns the restored object's ETag and, for a forced undo over a
/// newer version, where that version was copied first.
async fn restore(
    storage: &Storage,
    row: &Row,
    force: bool,
) -> Result<(String, Option<(String, String)>), UndoError> {
    let storage_error = |e: connectors::cloud::AccessError| {
        let reason = Reason::storage(e.failure);
        if e.failure != Failure::Changed {
            tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, %reason, detail = %e.message, "the storage did not complete an undo");
        }
        match e.failure {
            Failure::Changed => UndoError::ObjectChanged,
            Failure::Refused | Failure::Permission => UndoError::Refused(reason),
            _ => UndoError::Storage(reason),
        }
    };
    let (lkg_bucket, lkg_key) = snapshot_of(row)?;
    let target = storage.bucket(&row.bucket).map_err(storage_error)?;
    let current = target.head(&row.object_key).await.map_err(storage_error)?;
    let unchanged = match row.kind() {
        // Quarantine left nothing at the key.
        ActionType::Quarantine => current.is_none(),
        _ => current
            .as_ref()
            .is_some_and(|c| same_etag(c.etag.as_deref(), row.etag_after.as_deref())),
    };
    // Back at the ETag it had before the remediation: its original content, as an undo cut
    // short after it put the snapshot back leaves it (where the ETag is the content's digest,
    // as S3's is for a single-part object). Putting the snapshot back again changes nothing.
    let mut restored_already = current
        .as_ref()
        .is_some_and(|c| same_etag(c.etag.as_deref(), Some(&row.etag)));
    // Elsewhere (GCS, Azure, a multipart S3 object) an ETag says nothing of the content: the
    // object is read, and holds the original if its digest is the one the remediation took.
    if !unchanged
        && !restored_already
        && current.is_some()
        && let Some(before) = row.sha256_before.as_deref()
    {
        match target
            .read_whole(&row.object_key, None, MAX_OBJECT_BYTES)
            .await
        {
            Ok(now) => restored_already = crate::storage::sha256(&now.bytes).as_slice() == before,
            // Changed again since the head, or grown past what is read: not the original.
            Err(e) if matches!(e.failure, Failure::NotFound | Failure::TooLarge) => {}
            Err(e) => return Err(storage_error(e)),
        }
    }
    if !unchanged && !restored_already && !force {
        return Err(UndoError::ObjectChanged);
    }
    let snapshot = storage
        .bucket(&lkg_bucket)
        .map_err(storage_error)?
        .read_whole(&lkg_key, None, MAX_OBJECT_BYTES)
        .await
        .map_err(|e| match e.failure {
            Failure::NotFound => UndoError::Expired,
            _ => storage_error(e),
        })?;
    if row.sha256_before.as_deref() != Some(crate::storage::sha256(&snapshot.bytes).as_slice()) {
        return Err(UndoError::SnapshotChanged);
    }
    // A forced undo writes over a version nobody else has a copy of: it is copied first, beside
    // the snapshot, as the remediation copied the original before writing.
    let displaced = match &current {
        Some(c) if !unchanged && !restored_already => {
            let etag = c.etag.as_deref().ok_or(UndoError::ObjectChanged)?;
            let key = crate::location::displaced_key(row.request_id, &lkg_key);
            storage
                .copy_if_match(&row.bucket, &row.object_key, etag, &lkg_bucket, &key, None)
                .await
                .map_err(storage_error)?;
            Some((lkg_bucket.clone(), key))
        }
        _ => None,
    };
    // The original's key, as recorded when it was snapshotted: the copy may be under another
    // bucket's default.
    let properties = connectors::cloud::Properties {
        encryption: connectors::cloud::Encryption::from_json(row.encryption.as_ref()),
        ..snapshot.properties
    };
    let (bytes, properties) = (snapshot.bytes, &properties);
    let restored = match current.and_then(|c| c.etag) {
        Some(etag) => {
            target
                .put_if_match(&row.object_key, bytes, &etag, properties)
                .await
        }
        None => {
            target
                .put_if_absent(&row.object_key, bytes, properties)
                .await
        }
    }
    .map_err(storage_error)?;
    Ok((restored, displaced))
}

//! Running one remediation request through its states against the customer's storage.
//!
//! - **planned**: the gate is read again (a class denied since the request was planned ends it
//!   `blocked`); the object is read at the ETag the scan saw; for tokenize and mask the new
//!   content is computed (detection with values, in memory; tokens from the vault); the object
//!   is copied, server-side and conditional on that ETag, to its last-known-good (LKG) location
//!   (quarantine: to its destination, which is its LKG). → **snapshotted**.
//! - **snapshotted**: the object is replaced, conditional on the same ETag (quarantine: deleted,
//!   conditional on it). A process killed after the write but before recording it finds, on
//!   resuming, that the object already holds exactly what it would write (or is gone), and
//!   records that; it never writes twice. → **written**, with `undo_until`.
//! - **written**: the signed receipt, the ledger's `executed`, the audit entry. → **receipted**.
//!
//! A concurrent change is never overwritten: the request fails `object_changed` and the next
//! scan of the changed object plans again.

use bytes::Bytes;
use connectors::cloud::{Bucket, Encryption, Failure, Properties, Storage};
use diesel::result::Error as DieselError;
use diesel_async::AsyncPgConnection;
use scans::findings::Remediated;
use serde_json::json;
use settings::Gate;

use crate::conn::Conn;
use crate::content::Unsupported;
use crate::location::{
    self, lkg_location, quarantine_location, refuse_public_snapshot, snapshot_of,
};
use crate::mark;
use crate::receipt;
use crate::rewrite;
use crate::stop::{Reason, Stop};
use crate::storage::{Executor, MAX_OBJECT_BYTES, open_storage, sha256};
use crate::store::{self, Ending, Row, State};
use policies::document::{Action, ActionType};
use posture::risk::rescore::Changed;

/// Takes one due request and runs it as far as it goes on `conn`, held throughout; returns
/// whether there was one.
pub async fn run_once(conn: &mut AsyncPgConnection, exec: &Executor) -> Result<bool, DieselError> {
    run(&mut Conn::Borrowed(conn), exec).await
}

/// [`run_once`] with connections from `pool`, each held only while the run talks to Postgres:
/// not while it waits on the storage or a co-signer (see [`Conn`]).
pub async fn run_once_pooled(pool: &db::Pool, exec: &Executor) -> Result<bool, DieselError> {
    run(&mut Conn::pooled(pool), exec).await
}

async fn run(db: &mut Conn<'_>, exec: &Executor) -> Result<bool, DieselError> {
    let Some(store::Taken {
        request: row,
        policy_deleted,
        action_withdrawn,
        connector_deleted,
    }) = store::take(db.get().await?).await?
    else {
        return Ok(false);
    };
    // A deleted connector withdraws the service's access to its storage at once: the storage
    // opened with its credentials is dropped, so every step below finds the connector gone
    // (`connector_deleted`, with the snapshot kept on record) instead of acting through a
    // cached handle for up to a minute more.
    if connector_deleted {
        exec.storages.forget(&(row.tenant()?, row.connector()));
    }
    // Deleting a policy, switching it to dry-run or taking the action out of it stops what it
    // planned and has not started: the object is untouched yet. A request past its snapshot
    // runs to its end (it may have written already).
    if action_withdrawn && row.state() == State::Planned {
        let reason = if policy_deleted {
            Reason::PolicyDeleted
        } else {
            Reason::PolicyWithdrawn
        };
        crate::copies::discard(db, exec, &row).await;
        fail(db.get().await?, &row, reason, None).await?;
        return Ok(true);
    }
    // Only a request that has changed nothing yet gives up: once snapshotted, the object may
    // hold the new content (a write whose answer was lost), and only a definite answer from the
    // storage ends the request; until then it is retried, every 30 minutes at most.
    if row.attempts > store::MAX_ATTEMPTS && row.state() == State::Planned {
        crate::copies::discard(db, exec, &row).await;
        fail(
            db.get().await?,
            &row,
            Reason::AttemptsExhausted,
            row.reason.as_deref(),
        )
        .await?;
        return Ok(true);
    }
    match advance(db, exec, row.clone()).await {
        Ok(()) => {}
        Err(Stop::Fail(cause)) => {
            cause.log(&row.tenant_id, &row.request_id);
            let reason = cause.reason;
            // The lease is renewed first, guarded by the one this taker holds, so that no other
            // taker can start on the request while this one asks the storage, keeps or deletes
            // the snapshot and ends it. A plain read could pass just before the lease ran out,
            // and the snapshot of a request another taker was writing would be deleted.
            match store::renew(db.get().await?, &row).await? {
                // Another taker holds the request now (this one's lease ran out), or it ended:
                // whatever this run found, it must not fail, keep or discard anything of a
                // request another is moving, or has finished.
                None => {
                    tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, %reason, "a remediation step failed after its lease passed to another taker; left to that taker");
                }
                // The object holds the new content: only the receipt is missing, and it is
                // retried, never failed.
                Some(current) if current.state() == State::Written => {
                    store::retry_later(db.get().await?, &current, reason).await?;
                }
                Some(current) => {
                    // Once snapshotted, the write may have reached the object before the answer
                    // was lost (a quarantine's delete, a put), and whatever holds the key now
                    // may be someone else's: the snapshot can be the only copy of the
                    // original. It is deleted only when the object is provably still the
                    // original; otherwise it is kept for the rollback window.
                    if current.state() == State::Planned || still_original(db, exec, &current).await
                    {
                        crate::copies::discard(db, exec, &current).await;
                    } else {
                        let conn = db.get().await?;
                        let tenant = current.tenant()?;
                        let read = settings::read(conn, &tenant).await;
                        // Unknown even from the audit log: the longest window, since the
                        // snapshot may be the only copy of the original.
                        let hours = receipt::retention_hours(conn, &tenant, &read)
                            .await
                            .unwrap_or(settings::LKG_RETENTION_OPTIONS[2]);
                        store::keep_snapshot(conn, &current, hours).await?;
                    }
                    fail(db.get().await?, &current, reason, None).await?;
                }
            }
        }
        Err(Stop::Retry(cause)) => {
            tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, attempt = row.attempts, reason = %cause.reason, detail = cause.detail.as_deref().unwrap_or(""), "a remediation step failed; it is retried");
            store::retry_later(db.get().await?, &row, cause.reason).await?;
        }
        Err(Stop::Database(e)) => return Err(e),
    }
    Ok(true)
}

/// Runs the request from the state it is in to `receipted`, `blocked` or a stop.
async fn advance(db: &mut Conn<'_>, exec: &Executor, row: Row) -> Result<(), Stop> {
    let tenant = row.tenant()?;
    let kind = row.kind();
    let conn = db.get().await?;
    let action = exec.actions.get(conn, &tenant, &row, kind).await?;
    // The tenant's settings, read once for the run: the gate, the co-signing and the rollback
    // window all come from this one row.
    let settings = settings::read(conn, &tenant).await;
    let cosigning = exec
        .receipts
        .cosigning_from(conn, &tenant, &settings)
        .await?;
    let mut row = row;
    // The new content, when this run computed it (a resumed run computes it again from the
    // snapshot; the vault replays the same tokens).
    let mut rewritten: Option<Rewrite> = None;
    if row.state() == State::Planned {
        // A class denied when the action was planned stays denied: the evaluation counted it
        // blocked, and only a reconciliation plans it again.
        let gate = if row.gate == Gate::Denied {
            Gate::Denied
        } else {
            settings::gate_of(&settings, &tenant, kind.safety_class())
        };
        if !gate.permits() {
            block(db.get().await?, exec, &row, cosigning.mode).await?;
            return Ok(());
        }
        if gate == Gate::AllowedPolicyUnreadable {
            store::gate_unavailable(db.get().await?, &row).await?;
        }
        // Required co-signing: nothing touches the object before the co-signer approved.
        crate::cosign::approve(db, &exec.receipts, &row, &cosigning).await?;
        let storage = open_storage(db.get().await?, exec, &tenant, &row).await?;
        let (next, rewrite) = snapshot(db, exec, &storage, &row, &action).await?;
        exec.crash_point("snapshotted");
        (row, rewritten) = (next, rewrite);
    }
    if row.state() == State::Snapshotted {
        // The gate again, read now (a brake a tenant may pull mid-run): a denied class ends the
        // request `blocked` while the object is provably untouched (so in this run), else not.
        let now = settings::read(db.get().await?, &tenant).await;
        if !settings::gate_of(&now, &tenant, kind.safety_class()).permits() {
            // Held for the storage calls below, as a failure holds it (see `run`).
            row = store::renew(db.get().await?, &row)
                .await?
                .ok_or_else(moved_on)?;
            let untouched = match rewritten {
                Some(_) => Some(true),
                None => is_original(db, exec, &row).await,
            };
            match untouched {
                Some(true) => {
                    // After the request ended: a snapshot left by a failed delete is the
                    // sweeper's.
                    if block(db.get().await?, exec, &row, cosigning.mode).await? {
                        crate::copies::discard(db, exec, &row).await;
                    }
                    return Ok(());
                }
                // Denied, and the storage cannot say whether the write happened: asked again
                // later, never written meanwhile.
                None => {
                    return Err(Stop::retry(Reason::ObjectStateUnknown));
                }
                Some(false) => {}
            }
        }
        let hours = receipt::retention_hours(db.get().await?, &tenant, &settings).await?;
        let storage = open_storage(db.get().await?, exec, &tenant, &row).await?;
        row = write(db, exec, &storage, &row, &action, rewritten, hours).await?;
        exec.crash_point("written");
    }
    if row.state() == State::Written {
        let receipt = exec.receipts.executed(&row, cosigning.mode)?;
        let entry = receipt::entry(audit::Kind::ActionExecuted, &row, "executed", &receipt);
        store::end(
            db.get().await?,
            &row,
            Ending {
                from: State::Written,
                to: State::Receipted,
                outcome: Some("executed"),
                reason: None,
                entry,
                receipt: Some(receipt),
                changed: Some(Changed {
                    connector: row.connector(),
                    bucket: &row.bucket,
                    object_key: &row.object_key,
                    findings: &row.finding_ids,
                    change: match kind {
                        ActionType::Tokenize => Remediated::Tokenized,
                        _ => Remediated::Resolved,
                    },
                }),
            },
        )
        .await?;
        exec.crash_point("receipted");
    }
    Ok(())
}

/// The other taker's doing when a guarded transition finds the request moved on.
fn moved_on() -> Stop {
    Stop::retry(Reason::MovedOn)
}

fn bucket(storage: &Storage, name: &str) -> Result<Bucket, Stop> {
    storage.bucket(name).map_err(Stop::storage)
}

/// An object's content before and after, the tokens written into it, and its served headers
/// and metadata (kept).
struct Rewrite {
    before: Bytes,
    after: Vec<u8>,
    tokens: Vec<(String, String)>,
    properties: Properties,
}

/// planned → snapshotted. Returns the request as it now is, and the new content it computed,
/// if any.
async fn snapshot(
    db: &mut Conn<'_>,
    exec: &Executor,
    storage: &Storage,
    row: &Row,
    action: &Action,
) -> Result<(Row, Option<Rewrite>), Stop> {
    if let Action::Quarantine(config) = action {
        location::refuse_public_quarantine(db, storage, row, &config.destination.bucket).await?;
    } else if matches!(action, Action::Tokenize(_) | Action::Mask(_)) {
        refuse_public_snapshot(db.get().await?, storage, row).await?;
    }
    let source = bucket(storage, &row.bucket)?;
    db.release();
    let whole = source
        .read_whole(&row.object_key, Some(&row.etag), MAX_OBJECT_BYTES)
        .await
        .map_err(Stop::storage)?;
    let before = sha256(&whole.bytes);
    // The snapshot keeps the original's customer-managed key.
    let encryption = whole.properties.encryption.clone();
    let (lkg, rewrite) = match action {
        Action::Quarantine(config) => (quarantine_location(row, &config.destination), None),
        Action::Tokenize(_) | Action::Mask(_) => {
            // Computed first: an object that cannot be rewritten gets no snapshot. Bytes
            // stored encoded (`Content-Encoding: gzip`, ...) are not what readers see.
            if whole.properties.is_encoded() {
                return Err(Stop::fail(Reason::Unsupported(Unsupported::Compressed)));
            }
            // Put Blob makes a block blob: an append blob (a log being written) or a page
            // blob rewritten so would stop being one, so neither is rewritten.
            match source
                .kind(&row.object_key)
                .await
                .map_err(Stop::storage)?
                .as_deref()
            {
                None | Some("BlockBlob") => {}
                Some("AppendBlob") => return Err(Stop::fail(Reason::AppendBlob)),
                Some(_) => return Err(Stop::fail(Reason::PageBlob)),
            }
            let rewritten = rewrite::rewrite(db, exec, row, action, &whole.bytes).await?;
            (
                lkg_location(storage, row),
                Some(Rewrite {
                    before: whole.bytes,
                    after: rewritten.bytes,
                    tokens: rewritten.tokens,
                    properties: whole.properties,
                }),
            )
        }
        Action::Alert(_) => return Err(Stop::fail(Reason::NotARemediation)),
    };
    db.release();
    storage
        .copy_if_match(
            &row.bucket,
            &row.object_key,
            &row.etag,
            &lkg.0,
            &lkg.1,
            Some(&encryption),
        )
        .await
        .map_err(Stop::storage)?;
    exec.crash_point("copied");
    let next = store::snapshotted(
        db.get().await?,
        row,
        (&lkg.0, &lkg.1),
        &before,
        encryption.to_json().as_ref(),
    )
    .await?
    .ok_or_else(moved_on)?;
    Ok((next, rewrite))
}

/// snapshotted → written, with `undo_until` `retention_hours` from now. Returns the request as
/// it now is.
async fn write(
    db: &mut Conn<'_>,
    exec: &Executor,
    storage: &Storage,
    row: &Row,
    action: &Action,
    rewritten: Option<Rewrite>,
    retention_hours: u32,
) -> Result<Row, Stop> {
    let source = bucket(storage, &row.bucket)?;
    db.release();
    // The tokens written into the object, as the vault's lookup keys of them.
    let mut written_tokens: Vec<uuid::Uuid> = Vec::new();
    let (etag_after, sha_after) = match action {
        Action::Quarantine(_) => {
            match source.delete_if_match(&row.object_key, &row.etag).await {
                Ok(()) => {}
                Err(e) if e.failure == Failure::Changed => {
                    // Gone already: this request deleted it before a crash, or someone did; the
                    // copy at the destination holds the bytes either way.
                    if source
                        .head(&row.object_key)
                        .await
                        .map_err(Stop::storage)?
                        .is_some()
                    {
                        return Err(Stop::fail(Reason::ObjectChanged));
                    }
                }
                Err(e) => return Err(Stop::storage(e)),
            }
            (None, None)
        }
        _ => {
            let rewrite = match rewritten {
                Some(rewrite) => rewrite,
                None => {
                    let (lkg_bucket, lkg_key) = snapshot_of(row)?;
                    let snapshot = bucket(storage, &lkg_bucket)?
                        .read_whole(&lkg_key, None, MAX_OBJECT_BYTES)
                        .await
                        .map_err(Stop::storage)?;
                    if Some(sha256(&snapshot.bytes)) != row.sha256_before {
                        return Err(Stop::fail(Reason::SnapshotMismatch));
                    }
                    let rewritten =
                        rewrite::rewrite(db, exec, row, action, &snapshot.bytes).await?;
                    db.release();
                    Rewrite {
                        before: snapshot.bytes,
                        after: rewritten.bytes,
                        tokens: rewritten.tokens,
                        // The snapshot is a server-side copy, with the original's metadata;
                        // the key is the original's, as recorded (the snapshot's bucket may
                        // have put another default on the copy).
                        properties: Properties {
                            encryption: Encryption::from_json(row.encryption.as_ref()),
                            ..snapshot.properties
                        },
                    }
                }
            };
            let sha_after = sha256(&rewrite.after);
            drop(rewrite.before);
            written_tokens = rewrite
                .tokens
                .iter()
                .map(|(pii_type, token)| tokenize_core::lookup(&row.tenant_id, pii_type, token))
                .collect();
            let (properties, written_mark) = mark::marked(rewrite.properties, row.request_id);
            match source
                .put_if_match(
                    &row.object_key,
                    Bytes::from(rewrite.after),
                    &row.etag,
                    &properties,
                )
                .await
            {
                Ok(etag) => (Some(etag), Some(sha_after)),
                Err(e) if e.failure == Failure::Changed => {
                    // Our own write, before a crash, if the object holds exactly what it would
                    // and says this request wrote it: another request whose result is the same
                    // bytes (two policies masking the same values alike) wrote someone else's.
                    let current = source
                        .read_whole(&row.object_key, None, MAX_OBJECT_BYTES)
                        .await
                        .map_err(|e| match e.failure {
                            Failure::NotFound => Stop::fail(Reason::ObjectChanged),
                            _ => Stop::storage(e),
                        })?;
                    if sha256(&current.bytes) != sha_after
                        || mark::of(&current.properties) != written_mark.as_deref()
                    {
                        return Err(Stop::fail(Reason::ObjectChanged));
                    }
                    (Some(current.etag), Some(sha_after))
                }
                Err(e) => return Err(Stop::storage(e)),
            }
        }
    };
    exec.crash_point("replaced");
    // Whether the replaced content is still in the bucket's versions, as its posture says.
    let (_, versioning) = posture::buckets::last_seen(
        db.get().await?,
        &row.tenant_id,
        row.connector_id,
        &row.bucket,
    )
    .await?;
    let prior_versions = storage.prior_versions(versioning.as_deref());
    // Undo is possible for the window from the execution's own time.
    store::written(
        db.get().await?,
        row,
        etag_after.as_deref(),
        sha_after.as_deref(),
        retention_hours,
        prior_versions,
        &written_tokens,
    )
    .await?
    .ok_or_else(moved_on)
}

/// planned or snapshotted → blocked: the tenant denies the action's class now. Returns whether
/// this run ended the request (another taker may have moved it on).
async fn block(
    conn: &mut AsyncPgConnection,
    exec: &Executor,
    row: &Row,
    cosigning: settings::CosigningMode,
) -> Result<bool, Stop> {
    let receipt = exec.receipts.blocked(row, cosigning)?;
    let mut entry = receipt::entry(audit::Kind::ActionBlocked, row, "blocked", &receipt);
    entry.details["gate"] = json!("denied");
    store::end(
        conn,
        row,
        Ending {
            from: row.state(),
            to: State::Blocked,
            outcome: Some("blocked"),
            reason: Some(Reason::SafetyClassDenied),
            entry,
            receipt: Some(receipt),
            changed: None,
        },
    )
    .await
    .map_err(Stop::from)
}

/// Ends a request `failed`, from whichever running state it is in; `last_reason` is the reason
/// of the retries that ended in `attempts_exhausted`.
async fn fail(
    conn: &mut AsyncPgConnection,
    row: &Row,
    reason: Reason,
    last_reason: Option<&str>,
) -> Result<(), DieselError> {
    let kind = row.kind().as_str();
    let mut entry = audit::NewEntry::new(audit::Kind::ActionFailed, audit::Actor::System)
        .policy(row.policy(), row.policy_version)
        .action(kind)
        .connector(row.connector())
        .resource(row.resource())
        .outcome("failed")
        .details(json!({
            "request_id": row.request_id.to_string(),
            "action_id": row.action_id.to_string(),
            "reason": reason.to_string(),
        }));
    if let Some(last) = last_reason {
        entry.details["last_reason"] = json!(last);
    }
    store::end(
        conn,
        row,
        Ending {
            from: row.state(),
            to: State::Failed,
            outcome: Some("failed"),
            reason: Some(reason),
            entry,
            receipt: None,
            changed: None,
        },
    )
    .await
    .map(drop)
}

/// Whether the request's object is still what it was planned on: nothing was written. Any
/// doubt (the storage cannot be asked) answers no.
async fn still_original(db: &mut Conn<'_>, exec: &Executor, row: &Row) -> bool {
    is_original(db, exec, row).await == Some(true)
}

/// Whether the request's object is still what it was planned on (its ETag, or its content's
/// SHA-256), or None when the storage cannot be asked.
async fn is_original(db: &mut Conn<'_>, exec: &Executor, row: &Row) -> Option<bool> {
    let storage = crate::copies::open_any(db, exec, row).await.ok()?;
    db.release();
    crate::copies::original(&storage, row)
        .await
        .map(|found| found == crate::copies::Original::Unchanged)
}

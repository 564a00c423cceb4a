//! A deleted connector's copies. A tokenize or mask snapshot is a copy of the original object,
//! values and all, in the customer's own storage; the sweeper deletes it when its rollback window
//! ends, and undo restores from it until then. A connector deleted before then would take its
//! credentials with it: the copies would stay for good, and undo would be gone. So the
//! transaction that deletes a connector keeps its configuration here (secrets still sealed)
//! while any of its copies may remain; undo and the sweeper reach its storage through it, on
//! the schedule a live connector's copies keep (`copies`), and this row goes once nothing is
//! left. Nothing else uses it: no new change is made through a deleted connector.
//!
//! A standing quarantine is not a copy to delete: it is the object itself, moved where the
//! tenant's policy said, and stays. Nor is a copy kept for good (`remediation_kept_copies`).

use diesel::result::Error as DieselError;
use diesel::sql_types::{Bool, Bytea, Int4, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel::{OptionalExtension as _, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};

use crate::stop::{Reason, Stop};
use crate::storage::Executor;
use connectors::Storage;

/// Whether a connector has a copy not deleted yet that is neither a standing quarantine nor kept
/// for good, or a request still under way (which may yet leave one): what undo and the sweeper
/// may still need its storage for.
/// `$1` is the tenant, `$2` the connector.
const PENDING: &str = "SELECT EXISTS (
        SELECT 1 FROM remediation_requests r
          LEFT JOIN remediation_runs u
                 ON u.tenant_id = r.tenant_id AND u.request_id = r.request_id
         WHERE r.tenant_id = $1 AND r.connector_id = $2
           AND (r.status IN ('planned', 'snapshotted', 'written')
                OR (u.lkg_key IS NOT NULL AND u.lkg_deleted_at IS NULL
                    AND NOT EXISTS (SELECT 1 FROM remediation_kept_copies k
                                     WHERE k.tenant_id = r.tenant_id
                                       AND k.request_id = r.request_id)
                    AND (r.action_type <> 'quarantine'
                         OR r.status IN ('undone', 'failed', 'blocked'))))
       ) AS pending";

#[derive(QueryableByName)]
struct Pending {
    #[diesel(sql_type = Bool)]
    pending: bool,
}

async fn pending(
    conn: &mut AsyncPgConnection,
    tenant: &str,
    connector: uuid::Uuid,
) -> Result<bool, DieselError> {
    let row: Pending = db::sql(PENDING)
        .bind::<Text, _>(tenant)
        .bind::<SqlUuid, _>(connector)
        .get_result(conn)
        .await?;
    Ok(row.pending)
}

/// Keeps `connector`'s configuration when snapshots of it may remain. Call it in the
/// transaction that deletes the connector, before its row goes. A configuration that cannot be
/// read is the connector's own error: the deletion stops rather than lose the way to the
/// snapshots.
pub async fn retain_storage(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<(), connectors::ConnectorError> {
    if !pending(conn, tenant.as_str(), connector.as_uuid()).await? {
        return Ok(());
    }
    let stored = match connectors::store::sealed_config(conn, tenant, connector).await {
        Ok(stored) => stored,
        // Already gone: nothing to keep.
        Err(connectors::ConnectorError::NotFound) => return Ok(()),
        Err(other) => return Err(other),
    };
    db::sql(
        "INSERT INTO remediation_retained_storage
                (tenant_id, connector_id, provider, config, secret_key_version, secret_sealed)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tenant_id, connector_id) DO NOTHING",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Text, _>(&stored.provider)
    .bind::<Jsonb, _>(&stored.public)
    .bind::<Nullable<Int4>, _>(stored.key_version)
    .bind::<Nullable<Bytea>, _>(stored.sealed.as_deref())
    .execute(conn)
    .await?;
    Ok(())
}

/// A deleted connector's storage, opened from what [`retain_storage`] kept; `None` when
/// nothing was kept (it was deleted with no snapshot left, or before this existed).
pub(crate) async fn retained_storage(
    conn: &mut AsyncPgConnection,
    exec: &Executor,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<Option<Storage>, Stop> {
    let stored: Option<connectors::store::SealedConfig> = db::sql(
        "SELECT provider, config, secret_key_version, secret_sealed
           FROM remediation_retained_storage WHERE tenant_id = $1 AND connector_id = $2",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .get_result(conn)
    .await
    .optional()
    .map_err(|e| Stop::retry_with(Reason::ConnectorUnreadable, e))?;
    let Some(stored) = stored else {
        return Ok(None);
    };
    let keys = crate::storage::tenant_keys(conn, exec, tenant).await?;
    let config = connectors::store::open_config(&keys, connector, &stored)
        .map_err(|e| Stop::retry_with(Reason::ConnectorUnreadable, e))?;
    let storage = exec
        .cloud
        .open(tenant, connector, &config)
        .map_err(|e| Stop::retry_with(Reason::StorageUnopened, e.message))?;
    // Kept for the next copies of the same pass, as `open_storage` keeps a live connector's
    // (which finds it there first). The executor drops a deleted connector's cached storage
    // before it could use it, and undo never reads the cache.
    exec.storages.put((tenant.clone(), connector), &storage);
    Ok(Some(storage))
}

#[derive(QueryableByName)]
struct Kept {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    connector_id: uuid::Uuid,
}

/// Drops what was kept of deleted connectors that have no snapshot left to delete.
pub(crate) async fn release(conn: &mut AsyncPgConnection) -> Result<usize, DieselError> {
    let kept: Vec<Kept> =
        db::sql("SELECT tenant_id, connector_id FROM remediation_retained_storage")
            .load(conn)
            .await?;
    let mut released = 0;
    for k in kept {
        if !pending(conn, &k.tenant_id, k.connector_id).await? {
            released += db::sql(
                "DELETE FROM remediation_retained_storage WHERE tenant_id = $1 AND connector_id = $2",
            )
            .bind::<Text, _>(&k.tenant_id)
            .bind::<SqlUuid, _>(k.connector_id)
            .execute(conn)
            .await?;
        }
    }
    Ok(released)
}

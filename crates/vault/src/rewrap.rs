//! Re-encrypting a tenant's entries under its current key version, after a rotation.

use diesel::prelude::*;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use keys::KeyRing;

use db::schema::vault_entries;
use ids::TenantId;

use crate::VaultError;
use crate::value::value_aad;

/// How long [`rewrap`] waits, at most, for entries under older versions that open transactions
/// hold (a revocation, a renewal) to be released.
const HELD_FOR_AT_MOST: std::time::Duration = std::time::Duration::from_secs(30);

/// Moves `tenant`'s entries written under older key versions onto the current one, 500 at a
/// time, each batch in its own transaction. Returns how many entries were re-encrypted. Tokens
/// do not change: only the key that protects each value at rest.
///
/// Batches skip the rows other transactions hold, so when a batch finds nothing, the entries
/// still under older versions are counted: while some remain, it tries again, for up to 30
/// seconds, and then answers an error saying so rather than reporting success. Other
/// processes cache a tenant's keys for up to 30 seconds and keep sealing under the version
/// they cached until then: run it once that long has passed since the rotation.
pub async fn rewrap(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
) -> Result<u64, VaultError> {
    keyring.forget(tenant);
    let keys = keyring.tenant(conn, tenant).await?;
    let (current, current_key) = keys.current()?;
    let mut moved = 0u64;
    let mut held_since: Option<std::time::Instant> = None;
    loop {
        let batch = conn
            .transaction(async |conn| {
                let rows: Vec<(uuid::Uuid, i32, Vec<u8>)> = vault_entries::table
                    .filter(vault_entries::tenant_id.eq(tenant.as_str()))
                    .filter(vault_entries::key_version.lt(current))
                    .select((
                        vault_entries::token_id,
                        vault_entries::key_version,
                        vault_entries::ciphertext,
                    ))
                    .limit(500)
                    .for_update()
                    .skip_locked()
                    .load(conn)
                    .await?;
                let mut ids = Vec::with_capacity(rows.len());
                let mut resealed = Vec::with_capacity(rows.len());
                for (token_id, version, sealed) in &rows {
                    let aad = value_aad(tenant, *token_id);
                    // Opened and sealed again at once; the plaintext lives only in between.
                    let plain = tokenize_core::Secret::new(
                        String::from_utf8(keys.data_key(*version)?.open(&aad, sealed)?)
                            .map_err(|_| VaultError::Crypto)?,
                    );
                    ids.push(*token_id);
                    resealed.push(current_key.seal(&aad, plain.expose().as_bytes())?);
                }
                if !ids.is_empty() {
                    use diesel::sql_types::{Array, Bytea, Int4, Text, Uuid as SqlUuid};
                    db::sql(
                        "UPDATE vault_entries AS v SET key_version = $2, ciphertext = u.c \
                         FROM unnest($3::uuid[], $4::bytea[]) AS u(id, c) \
                         WHERE v.tenant_id = $1 AND v.token_id = u.id",
                    )
                    .bind::<Text, _>(tenant.as_str())
                    .bind::<Int4, _>(current)
                    .bind::<Array<SqlUuid>, _>(ids)
                    .bind::<Array<Bytea>, _>(resealed)
                    .execute(conn)
                    .await?;
                }
                Ok::<_, VaultError>(rows.len() as u64)
            })
            .await?;
        if batch == 0 {
            let remaining: i64 = vault_entries::table
                .filter(vault_entries::tenant_id.eq(tenant.as_str()))
                .filter(vault_entries::key_version.lt(current))
                .count()
                .get_result(conn)
                .await?;
            if remaining == 0 {
                return Ok(moved);
            }
            let waiting = held_since.get_or_insert_with(std::time::Instant::now);
            if waiting.elapsed() > HELD_FOR_AT_MOST {
                return Err(VaultError::InvalidRequest(
                    "entries under older key versions stayed held by open transactions; \
                     run rewrap again",
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        moved += batch;
    }
}

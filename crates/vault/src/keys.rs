//! The key hierarchy below the master key.
//!
//! Each tenant has key versions: 32 random bytes each, stored only wrapped (AES-256-GCM under
//! the master key, with the tenant and version as associated data). From a version's bytes
//! HKDF-SHA256 derives that version's data key, which encrypts vault values. The token keys
//! (deterministic MAC, lookup fingerprint, FF1) are derived from version 1 and never rotate:
//! rotating them would change every deterministic and format-preserving token, and the same
//! value must keep its token. Rotation protects values at rest; `rewrap` moves old entries
//! onto the current version.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;
use ring::rand::{SecureRandom as _, SystemRandom};
use tokenize_core::{FpeKey, MacKey};

use db::schema::tenant_keys;
use ids::TenantId;

use crate::{MasterKey, VaultError};

/// How long a replica trusts its cached view of a tenant's keys. After a rotation, other
/// replicas write with the new version within this time; reads never depend on it, because an
/// entry names its version and every version is loaded.
const CACHE_TTL: Duration = Duration::from_secs(30);

pub(crate) const NONCE_LEN: usize = 12;

/// One tenant's keys, unwrapped in memory.
pub struct TenantKeys {
    pub current_version: i32,
    data: HashMap<i32, LessSafeKey>,
    pub mac: MacKey,
    pub fingerprint: MacKey,
    pub fpe: FpeKey,
}

impl std::fmt::Debug for TenantKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantKeys")
            .field("current_version", &self.current_version)
            .finish_non_exhaustive()
    }
}

/// HKDF output length: 32 bytes.
struct Len32;

impl hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

fn derive(root: &[u8; 32], label: &'static [u8]) -> Result<[u8; 32], VaultError> {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"dps-tenant-key-v1").extract(root);
    let info = [label];
    let okm = prk.expand(&info, Len32).map_err(|_| VaultError::Crypto)?;
    let mut out = [0u8; 32];
    okm.fill(&mut out).map_err(|_| VaultError::Crypto)?;
    Ok(out)
}

fn wrap_aad(tenant: &TenantId, version: i32) -> Vec<u8> {
    let mut aad = b"dps-tenant-key\0".to_vec();
    aad.extend_from_slice(tenant.as_str().as_bytes());
    aad.push(0);
    aad.extend_from_slice(&version.to_be_bytes());
    aad
}

fn master_cipher(master: &MasterKey) -> Result<LessSafeKey, VaultError> {
    let key = UnboundKey::new(&AES_256_GCM, master.as_bytes()).map_err(|_| VaultError::Crypto)?;
    Ok(LessSafeKey::new(key))
}

/// Seals `plaintext` with a fresh random nonce: `nonce || ciphertext || tag`.
pub(crate) fn seal(key: &LessSafeKey, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, VaultError> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| VaultError::Crypto)?;
    seal_with_nonce(key, nonce, aad, plaintext)
}

/// Seals with a nonce the caller drew from the system random generator (a batch draws all its
/// nonces at once). A nonce must never repeat under a key: 96 random bits make that as
/// unlikely as AES-GCM's bounds assume.
pub(crate) fn seal_with_nonce(
    key: &LessSafeKey,
    nonce: [u8; NONCE_LEN],
    aad: &[u8],
    plaintext: &[u8],
) -> Result<Vec<u8>, VaultError> {
    let mut body = plaintext.to_vec();
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut body,
        )
        .map_err(|_| VaultError::Crypto)?;
    let mut out = Vec::with_capacity(NONCE_LEN + body.len() + tag.as_ref().len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&body);
    out.extend_from_slice(tag.as_ref());
    Ok(out)
}

/// Opens what [`seal`] produced; fails on any change to the bytes or the associated data.
pub(crate) fn open(key: &LessSafeKey, aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, VaultError> {
    if sealed.len() < NONCE_LEN + 16 {
        return Err(VaultError::Crypto);
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| VaultError::Crypto)?;
    let mut body = body.to_vec();
    let plain = key
        .open_in_place(nonce, Aad::from(aad), &mut body)
        .map_err(|_| VaultError::Crypto)?;
    Ok(plain.to_vec())
}

/// A secret sealed under a tenant's data key: the key version it needs and the sealed bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSecret {
    pub key_version: i32,
    pub sealed: Vec<u8>,
}

fn secret_aad(purpose: &str, binding: &[u8]) -> Vec<u8> {
    let mut aad = b"dps-secret\0".to_vec();
    aad.extend_from_slice(purpose.as_bytes());
    aad.push(0);
    aad.extend_from_slice(binding);
    aad
}

impl TenantKeys {
    /// Seals a secret that is not a vault value (a connector's client secret, for example)
    /// under the current data key. `purpose` and `binding` (such as a connector id) are bound
    /// into the ciphertext, so it cannot be moved to another record or use.
    pub fn seal_secret(
        &self,
        purpose: &str,
        binding: &[u8],
        plaintext: &[u8],
    ) -> Result<SealedSecret, VaultError> {
        let (key_version, key) = self.current()?;
        Ok(SealedSecret {
            key_version,
            sealed: seal(key, &secret_aad(purpose, binding), plaintext)?,
        })
    }

    /// Opens what [`TenantKeys::seal_secret`] sealed, with the same purpose and binding.
    pub fn open_secret(
        &self,
        purpose: &str,
        binding: &[u8],
        secret: &SealedSecret,
    ) -> Result<Vec<u8>, VaultError> {
        open(
            self.data_key(secret.key_version)?,
            &secret_aad(purpose, binding),
            &secret.sealed,
        )
    }

    /// The data key of `version`, for decrypting an entry written under it.
    pub(crate) fn data_key(&self, version: i32) -> Result<&LessSafeKey, VaultError> {
        self.data.get(&version).ok_or(VaultError::Crypto)
    }

    /// The current data key and its version, for new writes.
    pub(crate) fn current(&self) -> Result<(i32, &LessSafeKey), VaultError> {
        Ok((self.current_version, self.data_key(self.current_version)?))
    }
}

/// Creates a new key version for `tenant` (1 for a tenant without keys) and returns it.
pub async fn add_version(
    conn: &mut AsyncPgConnection,
    master: &MasterKey,
    tenant: &TenantId,
) -> Result<i32, VaultError> {
    let next: Option<i32> = tenant_keys::table
        .filter(tenant_keys::tenant_id.eq(tenant.as_str()))
        .select(diesel::dsl::max(tenant_keys::version))
        .first(conn)
        .await?;
    let version = next.unwrap_or(0) + 1;
    let mut root = [0u8; 32];
    SystemRandom::new()
        .fill(&mut root)
        .map_err(|_| VaultError::Crypto)?;
    let wrapped = seal(&master_cipher(master)?, &wrap_aad(tenant, version), &root)?;
    root.fill(0);
    // When another writer created this version first, its key is as good as ours: nothing is
    // written under a version before its row exists.
    diesel::insert_into(tenant_keys::table)
        .values((
            tenant_keys::tenant_id.eq(tenant.as_str()),
            tenant_keys::version.eq(version),
            tenant_keys::wrapped_key.eq(wrapped),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(version)
}

/// Every tenant's keys, loaded on demand and cached for 30 seconds.
pub struct KeyRing {
    master: Arc<MasterKey>,
    cache: RwLock<HashMap<TenantId, (Instant, Arc<TenantKeys>)>>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyRing")
    }
}

impl KeyRing {
    pub fn new(master: Arc<MasterKey>) -> Self {
        Self {
            master,
            cache: RwLock::new(HashMap::new()),
        }
    }

    /// The tenant's keys, creating its first version when it has none.
    pub async fn tenant(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
    ) -> Result<Arc<TenantKeys>, VaultError> {
        if let Ok(cache) = self.cache.read()
            && let Some((at, keys)) = cache.get(tenant)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(keys.clone());
        }
        let keys = Arc::new(self.load(conn, tenant).await?);
        if let Ok(mut cache) = self.cache.write() {
            cache.insert(tenant.clone(), (Instant::now(), keys.clone()));
        }
        Ok(keys)
    }

    /// The tenant's keys, knowing at least `version`: a cached view older than a rotation done
    /// elsewhere is reloaded when an entry names a newer version.
    pub async fn tenant_at_least(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        version: i32,
    ) -> Result<Arc<TenantKeys>, VaultError> {
        let keys = self.tenant(conn, tenant).await?;
        if keys.current_version >= version {
            return Ok(keys);
        }
        self.forget(tenant);
        self.tenant(conn, tenant).await
    }

    /// Drops the cached keys of `tenant` (after a rotation in this process).
    pub fn forget(&self, tenant: &TenantId) {
        if let Ok(mut cache) = self.cache.write() {
            cache.remove(tenant);
        }
    }

    async fn load(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
    ) -> Result<TenantKeys, VaultError> {
        let mut rows = self.rows(conn, tenant).await?;
        if rows.is_empty() {
            add_version(conn, &self.master, tenant).await?;
            rows = self.rows(conn, tenant).await?;
        }
        let master = master_cipher(&self.master)?;
        let mut data = HashMap::new();
        let mut token_root: Option<[u8; 32]> = None;
        for (version, wrapped) in &rows {
            let root = open(&master, &wrap_aad(tenant, *version), wrapped)?;
            let root: [u8; 32] = root.try_into().map_err(|_| VaultError::Crypto)?;
            let data_key = derive(&root, b"data")?;
            let key = UnboundKey::new(&AES_256_GCM, &data_key).map_err(|_| VaultError::Crypto)?;
            data.insert(*version, LessSafeKey::new(key));
            if *version == 1 {
                token_root = Some(root);
            }
        }
        let token_root = token_root.ok_or(VaultError::Crypto)?;
        let current_version = rows
            .iter()
            .map(|(v, _)| *v)
            .max()
            .ok_or(VaultError::Crypto)?;
        Ok(TenantKeys {
            current_version,
            data,
            mac: MacKey::new(&derive(&token_root, b"token-mac")?),
            fingerprint: MacKey::new(&derive(&token_root, b"fingerprint")?),
            fpe: FpeKey::new(&derive(&token_root, b"ff1")?),
        })
    }

    async fn rows(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
    ) -> Result<Vec<(i32, Vec<u8>)>, VaultError> {
        Ok(tenant_keys::table
            .filter(tenant_keys::tenant_id.eq(tenant.as_str()))
            .select((tenant_keys::version, tenant_keys::wrapped_key))
            .order(tenant_keys::version)
            .load(conn)
            .await?)
    }
}

/// Moves `tenant`'s entries written under older key versions onto the current one, 500 at a
/// time, each batch in its own transaction. Returns how many entries were re-encrypted.
pub async fn rewrap(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
) -> Result<u64, VaultError> {
    use db::schema::vault_entries;
    use diesel_async::AsyncConnection as _;
    keyring.forget(tenant);
    let keys = keyring.tenant(conn, tenant).await?;
    let (current, current_key) = keys.current()?;
    let mut moved = 0u64;
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
                    let aad = crate::tokenize::value_aad(tenant, *token_id);
                    let plain = tokenize_core::Secret::new(
                        String::from_utf8(open(keys.data_key(*version)?, &aad, sealed)?)
                            .map_err(|_| VaultError::Crypto)?,
                    );
                    ids.push(*token_id);
                    resealed.push(seal(current_key, &aad, plain.expose().as_bytes())?);
                }
                if !ids.is_empty() {
                    use diesel::sql_types::{Array, Bytea, Int4, Text, Uuid as SqlUuid};
                    diesel::sql_query(
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
            return Ok(moved);
        }
        moved += batch;
    }
}

/// Every tenant that has keys.
pub async fn tenants(conn: &mut AsyncPgConnection) -> Result<Vec<TenantId>, VaultError> {
    let names: Vec<String> = tenant_keys::table
        .select(tenant_keys::tenant_id)
        .distinct()
        .order(tenant_keys::tenant_id)
        .load(conn)
        .await?;
    Ok(names.into_iter().filter_map(|n| n.parse().ok()).collect())
}

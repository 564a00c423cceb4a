//! Tenant key versions and the cache of their unwrapped keys.
//!
//! Each tenant has key versions: 32 random bytes each, stored only wrapped (AES-256-GCM under
//! the master key, with the tenant and version as associated data). From a version's bytes
//! HKDF-SHA256 derives that version's data key. The token keys (deterministic MAC, lookup
//! fingerprint, FF1) are derived from version 1 and never rotate: rotating them would change
//! every deterministic and format-preserving token, and the same value must keep its token.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ring::rand::{SecureRandom as _, SystemRandom};
use tokenize_core::{FpeKey, MacKey, TokenIdCipher};

use db::schema::tenant_keys;
use ids::TenantId;

use crate::aead::{DataKey, SealedSecret, hkdf32, secret_aad};
use crate::error::KeyError;
use crate::master::MasterKey;

/// How long a replica trusts its cached view of a tenant's keys. After a rotation, other
/// replicas write with the new version within this time; reads never depend on it, because a
/// sealed value names its version and every version is loaded.
const CACHE_TTL: Duration = Duration::from_secs(30);

/// One tenant's keys, unwrapped in memory.
pub struct TenantKeys {
    current_version: i32,
    data: HashMap<i32, DataKey>,
    /// Keys deterministic tokens.
    pub mac: MacKey,
    /// Keys the lookup fingerprint of a vault entry.
    pub fingerprint: MacKey,
    /// The FF1 key of format-preserving tokens.
    pub fpe: FpeKey,
    /// Derives randomized tokens from token ids, and reads them back.
    pub randomized: TokenIdCipher,
}

impl std::fmt::Debug for TenantKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantKeys")
            .field("current_version", &self.current_version)
            .finish_non_exhaustive()
    }
}

fn derive(root: &[u8; 32], label: &[u8]) -> [u8; 32] {
    hkdf32(b"dps-tenant-key-v1", root, label)
}

fn wrap_aad(tenant: &TenantId, version: i32) -> Vec<u8> {
    let mut aad = b"dps-tenant-key\0".to_vec();
    aad.extend_from_slice(tenant.as_str().as_bytes());
    aad.push(0);
    aad.extend_from_slice(&version.to_be_bytes());
    aad
}

impl TenantKeys {
    /// The version new writes use.
    pub fn current_version(&self) -> i32 {
        self.current_version
    }

    /// The data key of `version`, for opening what was sealed under it.
    pub fn data_key(&self, version: i32) -> Result<&DataKey, KeyError> {
        self.data.get(&version).ok_or(KeyError::Crypto)
    }

    /// The current data key and its version, for new writes.
    pub fn current(&self) -> Result<(i32, &DataKey), KeyError> {
        Ok((self.current_version, self.data_key(self.current_version)?))
    }

    /// Seals a secret that is not a vault value (a connector's client secret, for example)
    /// under the current data key. `purpose` and `binding` (such as a connector id) are bound
    /// into the ciphertext, so it cannot be moved to another record or use.
    pub fn seal_secret(
        &self,
        purpose: &str,
        binding: &[u8],
        plaintext: &[u8],
    ) -> Result<SealedSecret, KeyError> {
        let (key_version, key) = self.current()?;
        Ok(SealedSecret {
            key_version,
            sealed: key.seal(&secret_aad(purpose, binding), plaintext)?,
        })
    }

    /// Opens what [`TenantKeys::seal_secret`] sealed, with the same purpose and binding.
    pub fn open_secret(
        &self,
        purpose: &str,
        binding: &[u8],
        secret: &SealedSecret,
    ) -> Result<Vec<u8>, KeyError> {
        self.data_key(secret.key_version)?
            .open(&secret_aad(purpose, binding), &secret.sealed)
    }
}

/// Creates a new key version for `tenant` (1 for a tenant without keys) and returns it.
pub async fn add_version(
    conn: &mut AsyncPgConnection,
    master: &MasterKey,
    tenant: &TenantId,
) -> Result<i32, KeyError> {
    let next: Option<i32> = tenant_keys::table
        .filter(tenant_keys::tenant_id.eq(tenant.as_str()))
        .select(diesel::dsl::max(tenant_keys::version))
        .first(conn)
        .await?;
    let version = next.unwrap_or(0) + 1;
    let mut root = [0u8; 32];
    SystemRandom::new()
        .fill(&mut root)
        .map_err(|_| KeyError::Crypto)?;
    let stored = store_version(conn, master, tenant, version, &root).await;
    zeroize::Zeroize::zeroize(&mut root);
    stored.map(|()| version)
}

/// Test support, behind the `test-keys` feature, which no service enables: gives `tenant` its
/// first key version from `root` rather than random bytes, so that a test knows the tenant's
/// token keys (and can, say, use two values whose format-preserving tokens coincide).
#[cfg(feature = "test-keys")]
pub async fn add_first_version_from_root(
    conn: &mut AsyncPgConnection,
    master: &MasterKey,
    tenant: &TenantId,
    root: &[u8; 32],
) -> Result<(), KeyError> {
    store_version(conn, master, tenant, 1, root).await
}

/// Stores key version `version` of `tenant`, `root` wrapped under the master key.
async fn store_version(
    conn: &mut AsyncPgConnection,
    master: &MasterKey,
    tenant: &TenantId,
    version: i32,
    root: &[u8; 32],
) -> Result<(), KeyError> {
    let wrapped = DataKey::new(master.as_bytes())?.seal(&wrap_aad(tenant, version), root)?;
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
    Ok(())
}

/// Every tenant that has keys.
pub async fn tenants(conn: &mut AsyncPgConnection) -> Result<Vec<TenantId>, KeyError> {
    let names: Vec<String> = tenant_keys::table
        .select(tenant_keys::tenant_id)
        .distinct()
        .order(tenant_keys::tenant_id)
        .load(conn)
        .await?;
    Ok(names.into_iter().filter_map(|n| n.parse().ok()).collect())
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

    /// The master key the ring unwraps with.
    pub fn master(&self) -> &Arc<MasterKey> {
        &self.master
    }

    /// The tenant's keys, creating its first version when it has none.
    pub async fn tenant(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
    ) -> Result<Arc<TenantKeys>, KeyError> {
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
    /// elsewhere is reloaded when a sealed value names a newer version.
    pub async fn tenant_at_least(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        version: i32,
    ) -> Result<Arc<TenantKeys>, KeyError> {
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
    ) -> Result<TenantKeys, KeyError> {
        let mut rows = rows(conn, tenant).await?;
        if rows.is_empty() {
            add_version(conn, &self.master, tenant).await?;
            rows = self::rows(conn, tenant).await?;
        }
        let master = DataKey::new(self.master.as_bytes())?;
        let mut data = HashMap::new();
        let mut token_root: Option<[u8; 32]> = None;
        for (version, wrapped) in &rows {
            let mut opened = master.open(&wrap_aad(tenant, *version), wrapped)?;
            let root: Result<[u8; 32], _> = opened.as_slice().try_into();
            zeroize::Zeroize::zeroize(&mut opened);
            let mut root = root.map_err(|_| KeyError::Crypto)?;
            data.insert(*version, DataKey::new(&derive(&root, b"data"))?);
            if *version == 1 {
                token_root = Some(root);
            }
            zeroize::Zeroize::zeroize(&mut root);
        }
        let mut token_root = token_root.ok_or(KeyError::Crypto)?;
        let current_version = rows.iter().map(|(v, _)| *v).max().ok_or(KeyError::Crypto)?;
        let keys = TenantKeys {
            current_version,
            data,
            mac: MacKey::new(&derive(&token_root, b"token-mac")),
            fingerprint: MacKey::new(&derive(&token_root, b"fingerprint")),
            fpe: FpeKey::new(&derive(&token_root, b"ff1")),
            randomized: TokenIdCipher::new(&derive(&token_root, b"randomized-token")),
        };
        zeroize::Zeroize::zeroize(&mut token_root);
        Ok(keys)
    }
}

async fn rows(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<Vec<(i32, Vec<u8>)>, KeyError> {
    Ok(tenant_keys::table
        .filter(tenant_keys::tenant_id.eq(tenant.as_str()))
        .select((tenant_keys::version, tenant_keys::wrapped_key))
        .order(tenant_keys::version)
        .load(conn)
        .await?)
}

//! API keys: how machine callers authenticate to `POST /tokens/tokenize`.
//!
//! A key is [`API_KEY_PREFIX`] followed by 43 base64url characters that encode 256 random bits.
//! Only its SHA-256 hash is stored. Because the key is uniformly random and long, a fast hash
//! cannot be brute-forced, and a lookup by hash needs no constant-time comparison: an attacker
//! learns nothing from timing about a key they do not already hold.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom as _, SystemRandom};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::api_keys;

use ids::TenantId;

/// The fixed prefix of every API key. Never change it: it lets secret scanners recognize
/// leaked keys, and existing keys carry it.
pub const API_KEY_PREFIX: &str = "dpsk_";

/// Characters after the prefix: 32 bytes in unpadded base64url.
const KEY_BODY_LEN: usize = 43;

/// Writes to `last_used_at` happen at most this often per key, so that a busy key does not turn
/// every request into a row update.
const LAST_USED_RESOLUTION_SECONDS: i64 = 60;

/// An API key in plaintext. It exists only between its creation and the moment it is shown
/// once to the operator; `Debug` never prints it.
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    /// The key itself, to hand to the operator exactly once.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKeySecret(<redacted>)")
    }
}

/// The caller an API key authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyPrincipal {
    pub key_id: Uuid,
    pub tenant_id: TenantId,
    /// The user the key acts for, when it was created with one; per-user rate limits use it.
    pub owner_id: Option<String>,
}

/// An API key as listed to operators: everything but the key.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = api_keys, check_for_backend(diesel::pg::Pg))]
pub struct ApiKeyRecord {
    pub id: Uuid,
    pub tenant_id: String,
    pub owner_id: Option<String>,
    pub name: String,
    pub created_at: OffsetDateTime,
    pub last_used_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiKeyError {
    #[error("the system random generator failed")]
    Random,
    #[error("key name must be 1 to 100 characters")]
    InvalidName,
    #[error("owner id must be 1 to 256 characters")]
    InvalidOwner,
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

fn hash(key: &str) -> Vec<u8> {
    digest(&SHA256, key.as_bytes()).as_ref().to_vec()
}

/// Whether `presented` has the shape of one of our keys. Checked before any database work.
fn well_formed(presented: &str) -> bool {
    presented.strip_prefix(API_KEY_PREFIX).is_some_and(|body| {
        body.len() == KEY_BODY_LEN
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

fn generate() -> Result<ApiKeySecret, ApiKeyError> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ApiKeyError::Random)?;
    Ok(ApiKeySecret(format!(
        "{API_KEY_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(bytes)
    )))
}

/// Creates a key for `tenant`, optionally acting for `owner`. The returned secret is the only
/// copy of the key that will ever exist.
pub async fn create(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    owner: Option<&str>,
    name: &str,
) -> Result<(ApiKeyRecord, ApiKeySecret), ApiKeyError> {
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ApiKeyError::InvalidName);
    }
    if owner.is_some_and(|o| o.is_empty() || o.len() > 256 || o.chars().any(char::is_control)) {
        return Err(ApiKeyError::InvalidOwner);
    }
    let secret = generate()?;
    let record = diesel::insert_into(api_keys::table)
        .values((
            api_keys::id.eq(Uuid::now_v7()),
            api_keys::tenant_id.eq(tenant.as_str()),
            api_keys::owner_id.eq(owner),
            api_keys::name.eq(name),
            api_keys::key_hash.eq(hash(secret.expose())),
        ))
        .returning(ApiKeyRecord::as_returning())
        .get_result(conn)
        .await?;
    Ok((record, secret))
}

/// Lists keys, newest first, for one tenant or for all.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: Option<&TenantId>,
) -> QueryResult<Vec<ApiKeyRecord>> {
    let mut query = api_keys::table
        .select(ApiKeyRecord::as_select())
        .order((api_keys::created_at.desc(), api_keys::id.desc()))
        .into_boxed();
    if let Some(tenant) = tenant {
        query = query.filter(api_keys::tenant_id.eq(tenant.as_str()));
    }
    query.load(conn).await
}

/// Revokes a key. Revoking again keeps the first revocation time. `None` when no such key.
pub async fn revoke(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<ApiKeyRecord>> {
    diesel::update(api_keys::table.find(id))
        .set(api_keys::revoked_at.eq(diesel::dsl::sql::<
            diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
        >("COALESCE(revoked_at, now())")))
        .returning(ApiKeyRecord::as_returning())
        .get_result(conn)
        .await
        .optional()
}

/// Resolves a presented key to its caller. `None` for a malformed, unknown or revoked key.
pub async fn authenticate(
    conn: &mut AsyncPgConnection,
    presented: &str,
) -> QueryResult<Option<ApiKeyPrincipal>> {
    if !well_formed(presented) {
        return Ok(None);
    }
    let found: Option<(Uuid, String, Option<String>, Option<OffsetDateTime>)> = api_keys::table
        .filter(api_keys::key_hash.eq(hash(presented)))
        .filter(api_keys::revoked_at.is_null())
        .select((
            api_keys::id,
            api_keys::tenant_id,
            api_keys::owner_id,
            api_keys::last_used_at,
        ))
        .first(conn)
        .await
        .optional()?;
    let Some((key_id, tenant, owner_id, last_used_at)) = found else {
        return Ok(None);
    };
    let stale = last_used_at.is_none_or(|at| {
        (OffsetDateTime::now_utc() - at).whole_seconds() >= LAST_USED_RESOLUTION_SECONDS
    });
    if stale {
        diesel::update(api_keys::table.find(key_id))
            .set(api_keys::last_used_at.eq(diesel::dsl::now))
            .execute(conn)
            .await?;
    }
    // The tenant was validated when the key was created; a row that no longer parses is refused.
    let Ok(tenant_id) = tenant.parse() else {
        return Ok(None);
    };
    Ok(Some(ApiKeyPrincipal {
        key_id,
        tenant_id,
        owner_id,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_prefix_and_256_bits() {
        let key = generate().unwrap();
        assert!(key.expose().starts_with(API_KEY_PREFIX));
        assert_eq!(key.expose().len(), API_KEY_PREFIX.len() + KEY_BODY_LEN);
        assert!(well_formed(key.expose()));
        assert_ne!(generate().unwrap().expose(), key.expose());
    }

    #[test]
    fn debug_redacts_the_key() {
        let key = generate().unwrap();
        assert!(!format!("{key:?}").contains(&key.expose()[5..]));
    }

    #[test]
    fn malformed_keys_are_recognized() {
        assert!(!well_formed("dpsk_short"));
        assert!(!well_formed(&format!("nope_{}", "a".repeat(43))));
        assert!(!well_formed(&format!("dpsk_{}", "!".repeat(43))));
    }
}

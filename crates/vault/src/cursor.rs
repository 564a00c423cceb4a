//! Opaque, unforgeable cursors for the vault's and the policies' lists.
//!
//! A cursor is base64url of the position (a timestamp in microseconds and an id) followed by a
//! truncated HMAC over the tenant, the list's name and the position, under a key derived from
//! the master key. A cursor changed in any way, or taken from another tenant or another list,
//! is refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use uuid::Uuid;

use ids::TenantId;

use crate::VaultError;

const TAG_LEN: usize = 16;

/// Signs and checks cursors.
pub struct CursorKey(hmac::Key);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(<redacted>)")
    }
}

/// A position in a list ordered by (created_at, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub micros: i64,
    pub id: Uuid,
}

impl CursorKey {
    pub fn new(key: &[u8; 32]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, key))
    }

    fn tag(&self, tenant: &TenantId, list: &str, body: &[u8]) -> hmac::Tag {
        let mut ctx = hmac::Context::with_key(&self.0);
        for part in [tenant.as_str().as_bytes(), list.as_bytes(), body] {
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part);
        }
        ctx.sign()
    }

    pub fn encode(&self, tenant: &TenantId, list: &str, position: Position) -> String {
        let mut body = Vec::with_capacity(24 + TAG_LEN);
        body.extend_from_slice(&position.micros.to_be_bytes());
        body.extend_from_slice(position.id.as_bytes());
        let tag = self.tag(tenant, list, &body);
        body.extend_from_slice(&tag.as_ref()[..TAG_LEN]);
        URL_SAFE_NO_PAD.encode(body)
    }

    pub fn decode(
        &self,
        tenant: &TenantId,
        list: &str,
        cursor: &str,
    ) -> Result<Position, VaultError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| VaultError::BadCursor)?;
        if bytes.len() != 24 + TAG_LEN {
            return Err(VaultError::BadCursor);
        }
        let (body, tag) = bytes.split_at(24);
        let expected = self.tag(tenant, list, body);
        // Compared without an early exit, so timing says nothing about how much matched.
        let difference = expected.as_ref()[..TAG_LEN]
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if difference != 0 {
            return Err(VaultError::BadCursor);
        }
        let micros = i64::from_be_bytes(body[..8].try_into().map_err(|_| VaultError::BadCursor)?);
        let id = Uuid::from_slice(&body[8..24]).map_err(|_| VaultError::BadCursor)?;
        Ok(Position { micros, id })
    }
}

/// Cuts a page from `rows`, loaded with `limit + 1` so that one extra row says whether more
/// follow, and signs the cursor of the last row kept.
pub fn paginate<T>(
    cursors: &CursorKey,
    tenant: &TenantId,
    list: &str,
    mut rows: Vec<T>,
    limit: i64,
    position: impl Fn(&T) -> Position,
) -> (Vec<T>, api_types::Pagination) {
    let keep = usize::try_from(limit).unwrap_or(0);
    let has_more = rows.len() > keep;
    rows.truncate(keep);
    let next_cursor = rows
        .last()
        .filter(|_| has_more)
        .map(|last| cursors.encode(tenant, list, position(last)));
    let pagination = api_types::Pagination {
        limit: u32::try_from(limit).unwrap_or(0),
        has_more,
        next_cursor,
    };
    (rows, pagination)
}

/// The microseconds since the epoch of a database timestamp: a cursor's time part.
pub fn micros(at: time::OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000).unwrap_or(i64::MAX)
}

/// The timestamp a cursor's time part names.
pub fn at_micros(micros: i64) -> Result<time::OffsetDateTime, VaultError> {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .map_err(|_| VaultError::BadCursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_tampering_and_other_tenants() {
        let key = CursorKey::new(&[3u8; 32]);
        let acme: TenantId = "acme".parse().unwrap();
        let globex: TenantId = "globex".parse().unwrap();
        let position = Position {
            micros: 1_700_000_000_000_000,
            id: Uuid::now_v7(),
        };
        let cursor = key.encode(&acme, "vault", position);
        assert_eq!(key.decode(&acme, "vault", &cursor).unwrap(), position);
        assert!(key.decode(&globex, "vault", &cursor).is_err());
        assert!(key.decode(&acme, "policies", &cursor).is_err());
        let mut bytes = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        bytes[3] ^= 1;
        assert!(
            key.decode(&acme, "vault", &URL_SAFE_NO_PAD.encode(&bytes))
                .is_err()
        );
        assert!(key.decode(&acme, "vault", "garbage!").is_err());
        assert!(
            CursorKey::new(&[4u8; 32])
                .decode(&acme, "vault", &cursor)
                .is_err()
        );
    }
}

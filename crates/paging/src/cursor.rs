//! Opaque, unforgeable cursors.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ids::TenantId;
use ring::hmac;
use time::OffsetDateTime;
use uuid::Uuid;

/// Bytes of the HMAC kept in a cursor: 128 bits, beyond guessing.
const TAG_LEN: usize = 16;

/// The cursor is not one this service issued for this tenant and list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the cursor is not one this service issued for this list")]
pub struct BadCursor;

/// Signs and checks cursors, with a key derived from the master key (label `cursor`), so that
/// every replica accepts every other's cursors.
pub struct CursorKey(hmac::Key);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(<redacted>)")
    }
}

/// A position in a list ordered by (a time, an id), or by an id alone (`micros` 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub micros: i64,
    pub id: Uuid,
}

impl Position {
    /// The position of a row ordered by `at`, then `id`.
    pub fn at(at: OffsetDateTime, id: impl Into<Uuid>) -> Self {
        Self {
            micros: i64::try_from(at.unix_timestamp_nanos() / 1_000).unwrap_or(i64::MAX),
            id: id.into(),
        }
    }

    /// The position of a row ordered by its id alone (UUIDv7 ids sort in creation order).
    pub fn id(id: impl Into<Uuid>) -> Self {
        Self {
            micros: 0,
            id: id.into(),
        }
    }

    /// The position of a row ordered by a number alone (an audit log's `seq`).
    pub fn seq(n: i64) -> Self {
        Self {
            micros: n,
            id: Uuid::nil(),
        }
    }

    /// The time part, as the database compares it (microseconds).
    pub fn time(&self) -> Result<OffsetDateTime, BadCursor> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.micros) * 1_000)
            .map_err(|_| BadCursor)
    }
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
    ) -> Result<Position, BadCursor> {
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| BadCursor)?;
        if bytes.len() != 24 + TAG_LEN {
            return Err(BadCursor);
        }
        let (body, tag) = bytes.split_at(24);
        let expected = self.tag(tenant, list, body);
        // Compared without an early exit, so timing says nothing about how much matched.
        let difference = expected.as_ref()[..TAG_LEN]
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if difference != 0 {
            return Err(BadCursor);
        }
        let micros = i64::from_be_bytes(body[..8].try_into().map_err(|_| BadCursor)?);
        let id = Uuid::from_slice(&body[8..24]).map_err(|_| BadCursor)?;
        Ok(Position { micros, id })
    }
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

    #[test]
    fn positions_keep_microseconds() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_000).unwrap();
        let p = Position::at(at, Uuid::nil());
        assert_eq!(p.time().unwrap(), at);
    }
}

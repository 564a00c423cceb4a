//! What a connector's earlier scans saw: each object's size and ETag, so that an incremental
//! scan lists without reading what did not change, and a complete listing finds the objects
//! that are gone.
//!
//! A connector can hold millions of objects. Held as strings, a million keys, buckets and
//! ETags cost hundreds of MiB in the process that lists them. Here each object costs 32 bytes:
//! a 128-bit digest of its bucket and key, its size and a 64-bit digest of its ETag, in one
//! sorted array. The keys themselves stay in Postgres, and the objects that are gone are found
//! by paging through them again after the listing.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ring::digest::{SHA256, digest};

use db::schema::scanned_objects;
use ids::{ConnectorId, TenantId};

use crate::error::ScanError;

/// Rows read from Postgres per query, loading and when looking for what is gone.
const PAGE: i64 = 10_000;

/// One object scanned before.
#[derive(Debug, Clone, Copy)]
struct Known {
    object: u128,
    size: i64,
    etag: u64,
}

/// The objects a connector's scans recorded, and which of them the current listing has seen.
#[derive(Debug, Default)]
pub(crate) struct Baseline {
    /// Sorted by `object`.
    known: Vec<Known>,
    /// Parallel to `known`.
    seen: Vec<bool>,
    /// How many of `seen` are true.
    seen_count: usize,
}

/// Whether a listed object is the one scanned before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listed {
    /// Never scanned under this connector.
    New,
    /// Scanned before with another size or ETag.
    Changed,
    /// Scanned before with this size and ETag (an object without an ETag is never unchanged).
    Unchanged,
}

/// The digest that names an object: its bucket and key. The bucket's length goes first, so
/// that no two (bucket, key) pairs share their bytes.
fn object_digest(bucket: &str, key: &str) -> u128 {
    let mut bytes = Vec::with_capacity(8 + bucket.len() + key.len());
    bytes.extend_from_slice(&(bucket.len() as u64).to_be_bytes());
    bytes.extend_from_slice(bucket.as_bytes());
    bytes.extend_from_slice(key.as_bytes());
    let d = digest(&SHA256, &bytes);
    let mut first = [0u8; 16];
    first.copy_from_slice(&d.as_ref()[..16]);
    u128::from_be_bytes(first)
}

/// The digest of an ETag; 0 for none.
fn etag_digest(etag: Option<&str>) -> u64 {
    etag.map_or(0, |e| {
        let d = digest(&SHA256, e.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&d.as_ref()[..8]);
        u64::from_be_bytes(first) | 1
    })
}

impl Baseline {
    /// Loads what `connector`'s scans recorded, a page at a time.
    pub(crate) async fn load(
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        connector: ConnectorId,
    ) -> Result<Self, ScanError> {
        let mut known = Vec::new();
        let mut after: Option<(String, String)> = None;
        loop {
            let mut query = scanned_objects::table
                .filter(scanned_objects::tenant_id.eq(tenant.as_str()))
                .filter(scanned_objects::connector_id.eq(connector.as_uuid()))
                .select((
                    scanned_objects::bucket,
                    scanned_objects::object_key,
                    scanned_objects::size,
                    scanned_objects::etag,
                ))
                .order((scanned_objects::bucket, scanned_objects::object_key))
                .limit(PAGE)
                .into_boxed();
            if let Some((bucket, key)) = &after {
                query = query.filter(
                    scanned_objects::bucket
                        .gt(bucket.clone())
                        .or(scanned_objects::bucket
                            .eq(bucket.clone())
                            .and(scanned_objects::object_key.gt(key.clone()))),
                );
            }
            let rows: Vec<(String, String, i64, Option<String>)> = query.load(conn).await?;
            let full = rows.len() as i64 == PAGE;
            known.extend(rows.iter().map(|(bucket, key, size, etag)| Known {
                object: object_digest(bucket, key),
                size: *size,
                etag: etag_digest(etag.as_deref()),
            }));
            match rows.into_iter().last() {
                Some((bucket, key, _, _)) if full => after = Some((bucket, key)),
                _ => break,
            }
        }
        known.sort_unstable_by_key(|k| k.object);
        known.shrink_to_fit();
        let seen = vec![false; known.len()];
        Ok(Self {
            known,
            seen,
            seen_count: 0,
        })
    }

    /// Whether the listing so far has seen every object scanned before (none scanned before
    /// included): then none is gone.
    pub(crate) fn all_seen(&self) -> bool {
        self.seen_count == self.known.len()
    }

    fn position(&self, bucket: &str, key: &str) -> Option<usize> {
        let object = object_digest(bucket, key);
        self.known.binary_search_by_key(&object, |k| k.object).ok()
    }

    /// Notes that the listing holds `key` in `bucket`, and says how it compares with what was
    /// scanned before.
    pub(crate) fn see(&mut self, bucket: &str, key: &str, size: i64, etag: Option<&str>) -> Listed {
        let Some(at) = self.position(bucket, key) else {
            return Listed::New;
        };
        if !self.seen[at] {
            self.seen[at] = true;
            self.seen_count += 1;
        }
        let before = self.known[at];
        if etag.is_some() && before.size == size && before.etag == etag_digest(etag) {
            Listed::Unchanged
        } else {
            Listed::Changed
        }
    }

    /// Keys under `prefix` in `bucket`, scanned before, that the listing has not seen: the
    /// next page of them after `after` (in the order Postgres sorts keys), and the key to go
    /// on after, or None at the end.
    pub(crate) async fn unseen(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        connector: ConnectorId,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
    ) -> Result<(Vec<String>, Option<String>), ScanError> {
        let mut query = scanned_objects::table
            .filter(scanned_objects::tenant_id.eq(tenant.as_str()))
            .filter(scanned_objects::connector_id.eq(connector.as_uuid()))
            .filter(scanned_objects::bucket.eq(bucket))
            .select(scanned_objects::object_key)
            .order(scanned_objects::object_key)
            .limit(PAGE)
            .into_boxed();
        if let Some(after) = after {
            query = query.filter(scanned_objects::object_key.gt(after.to_owned()));
        }
        let keys: Vec<String> = query.load(conn).await?;
        let next = (keys.len() as i64 == PAGE)
            .then(|| keys.last().cloned())
            .flatten();
        let gone = keys
            .into_iter()
            .filter(|key| {
                key.starts_with(prefix)
                    && self.position(bucket, key).is_some_and(|at| !self.seen[at])
            })
            .collect();
        Ok((gone, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(objects: &[(&str, &str, i64, Option<&str>)]) -> Baseline {
        let mut known: Vec<Known> = objects
            .iter()
            .map(|(bucket, key, size, etag)| Known {
                object: object_digest(bucket, key),
                size: *size,
                etag: etag_digest(*etag),
            })
            .collect();
        known.sort_unstable_by_key(|k| k.object);
        let seen = vec![false; known.len()];
        Baseline {
            known,
            seen,
            seen_count: 0,
        }
    }

    #[test]
    fn an_object_is_unchanged_only_with_its_size_and_etag_both_the_same() {
        let mut b = baseline(&[
            ("b", "a.csv", 10, Some("\"e1\"")),
            ("b", "no-etag.csv", 10, None),
        ]);
        assert_eq!(b.see("b", "a.csv", 10, Some("\"e1\"")), Listed::Unchanged);
        assert_eq!(b.see("b", "a.csv", 11, Some("\"e1\"")), Listed::Changed);
        assert_eq!(b.see("b", "a.csv", 10, Some("\"e2\"")), Listed::Changed);
        assert_eq!(b.see("b", "a.csv", 10, None), Listed::Changed);
        assert_eq!(b.see("b", "no-etag.csv", 10, None), Listed::Changed);
        assert_eq!(b.see("b", "new.csv", 10, Some("\"e1\"")), Listed::New);
        // The same key in another bucket is another object.
        assert_eq!(b.see("c", "a.csv", 10, Some("\"e1\"")), Listed::New);
    }

    #[test]
    fn bucket_and_key_are_never_confused_where_their_bytes_meet() {
        assert_ne!(object_digest("ab", "c"), object_digest("a", "bc"));
        assert_ne!(etag_digest(None), etag_digest(Some("")));
    }

    #[test]
    fn seeing_an_object_marks_it_whatever_it_compares_to() {
        let mut b = baseline(&[("b", "x", 1, Some("e")), ("b", "y", 1, Some("e"))]);
        b.see("b", "x", 2, Some("f"));
        let at = b.position("b", "x").unwrap_or(usize::MAX);
        assert!(b.seen[at]);
        let other = b.position("b", "y").unwrap_or(usize::MAX);
        assert!(!b.seen[other]);
        assert!(!b.all_seen());
        b.see("b", "x", 1, Some("e"));
        assert!(!b.all_seen(), "seen twice is still one");
        b.see("b", "y", 1, Some("e"));
        assert!(b.all_seen());
    }
}

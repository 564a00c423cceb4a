//! Where a remediation keeps what it moves: its snapshot (`.dps-lkg/`) and a quarantined
//! object (`.dps-quarantine/`), named by the request so that no two share a key.

use connectors::cloud::Storage;

use crate::stop::{Reason, Stop};
use crate::store::Row;

/// Where the snapshot of `row`'s object goes: under `.dps-lkg/`, named by the request (so no two
/// snapshots share a key), in the connector's `lkg_location` bucket if it names one (then with
/// the source bucket in the key), else in the object's own bucket.
pub(crate) fn lkg_location(storage: &Storage, row: &Row) -> (String, String) {
    match storage.lkg_bucket() {
        Some(bucket) => (
            bucket.to_owned(),
            under_key_limit(
                format!(".dps-lkg/{}/{}/", row.request_id, row.bucket),
                &row.object_key,
            ),
        ),
        None => (
            row.bucket.clone(),
            under_key_limit(format!(".dps-lkg/{}/", row.request_id), &row.object_key),
        ),
    }
}

/// Refuses a rewrite whose snapshot, an exact copy of the values it protects, would go into a
/// bucket the last posture check saw public (a bucket never checked is not refused).
pub(crate) async fn refuse_public_snapshot(
    conn: &mut diesel_async::AsyncPgConnection,
    storage: &Storage,
    row: &Row,
) -> Result<(), Stop> {
    let (bucket, _) = lkg_location(storage, row);
    let (public, _) =
        posture::buckets::last_seen(conn, &row.tenant_id, row.connector_id, &bucket).await?;
    if public == Some(true) {
        return Err(Stop::fail(Reason::SnapshotWouldBePublic));
    }
    Ok(())
}

/// Refuses a quarantine whose destination bucket is public: the quarantined copy holds the whole
/// object, PII included. The destination is often outside the buckets the connector's posture
/// checks cover, so the provider is asked now; when it will not say, the last check decides,
/// and a bucket never seen public is taken as not public, as for snapshots.
pub(crate) async fn refuse_public_quarantine(
    db: &mut crate::conn::Conn<'_>,
    storage: &Storage,
    row: &Row,
    bucket: &str,
) -> Result<(), Stop> {
    let (last, _) =
        posture::buckets::last_seen(db.get().await?, &row.tenant_id, row.connector_id, bucket)
            .await?;
    db.release();
    let public = match storage.posture(bucket).await {
        Ok(posture) if posture.public.is_some() => posture.public,
        _ => last,
    };
    if public == Some(true) {
        return Err(Stop::fail(Reason::QuarantineWouldBePublic));
    }
    Ok(())
}

/// The longest object name all three providers take: 1,024 bytes of UTF-8 on S3 and GCS, 1,024
/// characters on Azure.
const MAX_OBJECT_KEY_BYTES: usize = 1024;

/// `head` followed by the object's key, or, where that would pass the providers' limit on a
/// name, by `sha256-` and the key's SHA-256 in hex. The request id in `head` keeps the name
/// unique either way, and the request records the object's full key. Without this, a key
/// longer than about 970 bytes could never be snapshotted or quarantined.
fn under_key_limit(head: String, key: &str) -> String {
    if head.len() + key.len() <= MAX_OBJECT_KEY_BYTES {
        head + key
    } else {
        head + "sha256-"
            + &hex::encode(ring::digest::digest(&ring::digest::SHA256, key.as_bytes()).as_ref())
    }
}

/// Where a forced undo copies the object it writes over: beside the snapshot, as
/// `<snapshot key>.displaced-by-undo`, or, where that would pass the providers' limit on a
/// name, as `.dps-lkg/<request>/sha256-<the snapshot key's SHA-256>.displaced-by-undo`.
pub(crate) fn displaced_key(request_id: uuid::Uuid, lkg_key: &str) -> String {
    const SUFFIX: &str = ".displaced-by-undo";
    if lkg_key.len() + SUFFIX.len() <= MAX_OBJECT_KEY_BYTES {
        format!("{lkg_key}{SUFFIX}")
    } else {
        let digest = ring::digest::digest(&ring::digest::SHA256, lkg_key.as_bytes());
        format!(
            ".dps-lkg/{request_id}/sha256-{}{SUFFIX}",
            hex::encode(digest.as_ref())
        )
    }
}

/// Where a quarantined object goes: the destination's bucket and prefix, under a
/// `.dps-quarantine/` segment that scans skip, named by the request and the source bucket.
pub(crate) fn quarantine_location(
    row: &Row,
    destination: &policies::document::Destination,
) -> (String, String) {
    // `.dps-quarantine` must be a path segment of its own, which scans skip: a prefix `held`
    // is `held/`, not `held.dps-quarantine/...`, which a scan would find and quarantine again.
    let prefix = match destination.prefix.as_deref() {
        Some(p) if !p.is_empty() && !p.ends_with('/') => format!("{p}/"),
        Some(p) => p.to_owned(),
        None => String::new(),
    };
    (
        destination.bucket.clone(),
        under_key_limit(
            format!("{prefix}.dps-quarantine/{}/{}/", row.request_id, row.bucket),
            &row.object_key,
        ),
    )
}

/// The recorded snapshot of `row`, or why there is none.
pub(crate) fn snapshot_of(row: &Row) -> Result<(String, String), Stop> {
    match (&row.lkg_bucket, &row.lkg_key) {
        (Some(b), Some(k)) => Ok((b.clone(), k.clone())),
        _ => Err(Stop::fail(Reason::SnapshotMissing)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_name_keeps_the_key_while_it_fits_and_hashes_it_when_not() {
        let head = ".dps-lkg/0192f3a4-5b6c-7d8e-9f00-112233445566/".to_owned();
        assert_eq!(
            under_key_limit(head.clone(), "exports/people.csv"),
            format!("{head}exports/people.csv")
        );
        let fits = "k".repeat(MAX_OBJECT_KEY_BYTES - head.len());
        assert_eq!(
            under_key_limit(head.clone(), &fits),
            format!("{head}{fits}")
        );
        let long = "k".repeat(MAX_OBJECT_KEY_BYTES - head.len() + 1);
        let named = under_key_limit(head.clone(), &long);
        assert_eq!(named.len(), head.len() + "sha256-".len() + 64);
        assert_eq!(
            named,
            format!(
                "{head}sha256-{}",
                hex::encode(crate::storage::sha256(long.as_bytes()))
            )
        );
        // Multi-byte characters count as their UTF-8 bytes.
        let wide = "é".repeat(500);
        assert!(under_key_limit(head, &wide).contains("sha256-"));
    }

    #[test]
    fn a_displaced_copy_stays_under_the_key_limit() {
        let request: uuid::Uuid = "0192f3a4-5b6c-7d8e-9f00-112233445566".parse().unwrap();
        let short = format!(".dps-lkg/{request}/exports/people.csv");
        assert_eq!(
            displaced_key(request, &short),
            format!("{short}.displaced-by-undo")
        );
        // A snapshot key at the limit (which under_key_limit allows) has no room for the suffix.
        let head = format!(".dps-lkg/{request}/");
        let longest = under_key_limit(head.clone(), &"k".repeat(MAX_OBJECT_KEY_BYTES - head.len()));
        assert_eq!(longest.len(), MAX_OBJECT_KEY_BYTES);
        let displaced = displaced_key(request, &longest);
        assert!(
            displaced.len() <= MAX_OBJECT_KEY_BYTES,
            "{}",
            displaced.len()
        );
        assert!(displaced.starts_with(&head) && displaced.ends_with(".displaced-by-undo"));
        assert_ne!(displaced, displaced_key(request, &short));
    }
}

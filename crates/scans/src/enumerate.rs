//! Enumeration: listing a running scan's objects into resources (only the new and changed ones
//! for an incremental scan, whose vanished objects have their findings resolved), then splitting
//! them into chunks.

use diesel::prelude::*;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use keys::KeyRing;
use time::OffsetDateTime;
use uuid::Uuid;

use connectors::cloud::{AccessError, Cloud, PAGE_SIZE};
use db::schema::{scan_chunks, scan_connectors, scan_resources, scans};
use ids::{ConnectorId, ScanId, TenantId};

use crate::baseline::{Baseline, Listed};
use crate::error::ScanError;
use crate::lifecycle::try_finalize;
use crate::model::Enumeration;
use crate::options::{Kind, Options};
use crate::rows;

/// Largest chunk, in resources.
pub const MAX_CHUNK: i64 = 1000;

/// Whether `key` is one of `types` (extensions without the dot). `people.csv.gz` is both `gz`
/// and `csv`.
pub fn has_file_type(key: &str, types: &[String]) -> bool {
    if types.is_empty() {
        return true;
    }
    let name = key.rsplit('/').next().unwrap_or(key).to_ascii_lowercase();
    let mut parts = name.rsplit('.');
    let last = parts.next();
    let before = parts.next();
    if name.matches('.').count() == 0 {
        return false;
    }
    let is = |ext: Option<&str>| ext.is_some_and(|e| types.iter().any(|t| t == e));
    is(last) || (last == Some("gz") && name.matches('.').count() >= 2 && is(before))
}

/// Whether `key` is one the platform wrote for remediation: a last-known-good snapshot
/// (`.dps-lkg/`) or a quarantined object (`.dps-quarantine/`), anywhere in the key. Scans never
/// report them: they hold what remediation took out of sight.
pub fn is_remediation_copy(key: &str) -> bool {
    key.split('/')
        .any(|segment| segment == ".dps-lkg" || segment == ".dps-quarantine")
}

/// One listing source.
/// The prefixes to list so that each key is listed once: sorted, without repeats, and without a
/// prefix another one already covers (`hr/2024/` under `hr/`). An empty prefix covers all.
fn covering(mut prefixes: Vec<String>) -> Vec<Option<String>> {
    prefixes.sort();
    let mut kept: Vec<String> = Vec::with_capacity(prefixes.len());
    for p in prefixes {
        if !kept.iter().any(|k| p.starts_with(k.as_str())) {
            kept.push(p);
        }
    }
    kept.into_iter()
        .map(|p| (!p.is_empty()).then_some(p))
        .collect()
}

/// The prefixes to list: the scan's within the connector's (a scan's prefix under one of the
/// connector's, or a connector's prefix under one of the scan's). None when neither names any
/// (the whole bucket); empty when they share nothing (nothing to list).
fn within_prefixes(scan: &[String], connector: &[String]) -> Option<Vec<String>> {
    match (scan.is_empty(), connector.is_empty()) {
        (true, true) => None,
        (true, false) => Some(connector.to_vec()),
        (false, true) => Some(scan.to_vec()),
        (false, false) => Some(
            scan.iter()
                .flat_map(|s| {
                    connector.iter().filter_map(move |c| {
                        if s.starts_with(c.as_str()) {
                            Some(s.clone())
                        } else if c.starts_with(s.as_str()) {
                            Some(c.clone())
                        } else {
                            None
                        }
                    })
                })
                .collect(),
        ),
    }
}

/// The file types to match: the scan's that the connector allows. Empty means any; None means
/// that the two allow nothing in common.
fn within_types(scan: &[String], connector: &[String]) -> Option<Vec<String>> {
    match (scan.is_empty(), connector.is_empty()) {
        (true, _) => Some(connector.to_vec()),
        (false, true) => Some(scan.to_vec()),
        (false, false) => {
            let both: Vec<String> = scan
                .iter()
                .filter(|t| connector.contains(t))
                .cloned()
                .collect();
            (!both.is_empty()).then_some(both)
        }
    }
}

struct Source {
    connector: ConnectorId,
    bucket: String,
    prefix: Option<String>,
}

/// Enumerates a running scan's objects into resources, then splits them into chunks. Listing
/// failures make the enumeration partial (some sources listed) or failed (none).
pub async fn enumerate(
    conn: &mut AsyncPgConnection,
    cloud: &Cloud,
    keyring: &KeyRing,
    tenant: &TenantId,
    scan: ScanId,
) -> Result<(), ScanError> {
    let row = rows::row(conn, tenant, scan).await?;
    let options = row.options()?;
    let kind = Kind::parse(&row.kind).ok_or(ScanError::CorruptRow)?;
    let connector_ids = rows::connector_ids(conn, tenant, scan).await?;
    // A restarted enumeration starts over.
    diesel::delete(
        scan_resources::table
            .filter(scan_resources::tenant_id.eq(tenant.as_str()))
            .filter(scan_resources::scan_id.eq(scan.as_uuid())),
    )
    .execute(conn)
    .await?;
    let keys = keyring.tenant(conn, tenant).await?;
    let mut enumerator = Enumerator {
        tenant,
        scan,
        options: &options,
        next_idx: 0,
        batch: Vec::new(),
        sources_total: 0,
        sources_listed: 0,
        problems: Vec::new(),
        ended: false,
        capped: false,
    };
    // Where each connector's resources begin: chunks never straddle two connectors, so each
    // has one connector's configuration (GET /scans/:id/deployment-config).
    let mut starts: Vec<i32> = Vec::new();
    let mut owners: Vec<ConnectorId> = Vec::new();
    for connector in connector_ids {
        if enumerator.ended {
            break;
        }
        starts.push(enumerator.next_idx);
        owners.push(connector);
        let config = match connectors::store::config(conn, &keys, tenant, connector).await {
            Ok(config) => config,
            Err(e) => {
                enumerator.sources_total += 1;
                enumerator
                    .problems
                    .push(format!("connector {connector}: {e}"));
                continue;
            }
        };
        let storage = match cloud.open(tenant, connector, &config) {
            Ok(s) => s,
            Err(e) => {
                enumerator.fail_source(connector, None, &e);
                continue;
            }
        };
        let buckets = match storage.buckets().await {
            // Each bucket once, or its objects would be two resources with twice the findings.
            Ok(mut b) => {
                b.sort();
                b.dedup();
                b
            }
            Err(e) => {
                enumerator.fail_source(connector, None, &e);
                continue;
            }
        };
        // A scan narrows its connectors' scope, never widens it: its prefixes and file types
        // apply within the connector's own.
        let prefixes: Vec<Option<String>> =
            match within_prefixes(&options.prefixes, &config.prefixes()) {
                Some(p) if p.is_empty() => Vec::new(),
                Some(p) => covering(p),
                None => vec![None],
            };
        let Some(types) = within_types(&options.file_types, &config.file_types()) else {
            // No file type both allow: nothing of this connector is in the scan's scope.
            continue;
        };
        // What was scanned before: an incremental scan skips what did not change, and any
        // complete listing resolves the findings of objects that are gone.
        let mut baseline = Baseline::load(conn, tenant, connector).await?;
        let incremental = kind == Kind::Incremental;
        for bucket_name in buckets {
            if enumerator.ended {
                break;
            }
            let bucket = match storage.bucket(&bucket_name) {
                Ok(b) => b,
                Err(e) => {
                    enumerator.fail_source(connector, Some(&bucket_name), &e);
                    continue;
                }
            };
            for prefix in &prefixes {
                if enumerator.ended {
                    break;
                }
                let source = Source {
                    connector,
                    bucket: bucket_name.clone(),
                    prefix: prefix.clone(),
                };
                enumerator
                    .list(conn, &bucket, &source, &types, &mut baseline, incremental)
                    .await?;
            }
        }
    }
    enumerator.flush(conn).await?;
    let total = enumerator.next_idx;
    // A source the cap stopped was listed in part, not failed.
    let status =
        if enumerator.sources_total > 0 && enumerator.sources_listed == 0 && !enumerator.capped {
            Enumeration::Failed
        } else if enumerator.sources_listed < enumerator.sources_total {
            Enumeration::Partial
        } else {
            Enumeration::Complete
        };
    let reason = (!enumerator.problems.is_empty()).then(|| {
        let mut joined = enumerator.problems.join("; ");
        joined.truncate(joined.floor_char_boundary(1000));
        joined
    });
    let chunks: Vec<_> = plan_chunks(&starts, total, options.max_workers)
        .into_iter()
        .enumerate()
        .map(|(no, (start, end))| {
            (
                scan_chunks::tenant_id.eq(tenant.as_str()),
                scan_chunks::scan_id.eq(scan.as_uuid()),
                scan_chunks::chunk_no.eq(no as i32),
                scan_chunks::start_index.eq(start),
                scan_chunks::end_index.eq(end),
            )
        })
        .collect();
    // The chunks and the enumeration's end are one transaction, under the scan row's lock: a
    // crash between them would leave chunks whose insert every restart then collides with,
    // and a scan cancelled or timed out while it was listed gets no chunks to run.
    let (sources_total, sources_listed) = (enumerator.sources_total, enumerator.sources_listed);
    conn.transaction::<_, ScanError, _>(async |conn| {
        let running = match rows::lock(conn, tenant, scan).await? {
            Some(row) => row.status()? == crate::model::Status::Running,
            None => false,
        };
        if running {
            for batch in chunks.chunks(1000) {
                diesel::insert_into(scan_chunks::table)
                    .values(batch.to_vec())
                    .execute(conn)
                    .await?;
            }
            // Each connector's range of resources, which names its chunks (its history).
            for (i, owner) in owners.iter().enumerate() {
                let first = starts[i];
                let end = starts.get(i + 1).copied().unwrap_or(total);
                let range = (first < end).then_some((first, end - 1));
                diesel::update(
                    scan_connectors::table
                        .filter(scan_connectors::tenant_id.eq(tenant.as_str()))
                        .filter(scan_connectors::scan_id.eq(scan.as_uuid()))
                        .filter(scan_connectors::connector_id.eq(owner.as_uuid())),
                )
                .set((
                    scan_connectors::first_idx.eq(range.map(|r| r.0)),
                    scan_connectors::last_idx.eq(range.map(|r| r.1)),
                ))
                .execute(conn)
                .await?;
            }
        }
        let target = scans::table
            .filter(scans::tenant_id.eq(tenant.as_str()))
            .filter(scans::scan_id.eq(scan.as_uuid()));
        let listed = (
            scans::enumeration_status.eq(status.as_str()),
            scans::sources_total.eq(sources_total),
            scans::sources_listed.eq(sources_listed),
        );
        if running {
            diesel::update(target)
                .set((listed, scans::status_reason.eq(reason)))
                .execute(conn)
                .await?;
        } else {
            // An ended scan keeps the reason it ended with.
            diesel::update(target).set(listed).execute(conn).await?;
        }
        Ok(())
    })
    .await?;
    tracing::info!(
        %scan,
        resources = total,
        enumeration = status.as_str(),
        "scan enumerated"
    );
    try_finalize(conn, tenant, scan).await?;
    Ok(())
}

/// Splits resources `0..total` into inclusive ranges of at most `MAX_CHUNK` resources, never
/// across a connector boundary (`starts` holds where each connector's resources begin, in
/// order). Their number is a multiple of `workers` where sizes allow, so that every round of
/// chunks keeps every worker busy: 10,000 resources for 4 workers are 12 chunks of 834, not
/// 10 of 1,000 whose last round would run on 2 workers.
fn plan_chunks(starts: &[i32], total: i32, workers: u32) -> Vec<(i32, i32)> {
    let workers = i64::from(workers.max(1));
    let all = i64::from(total);
    let rounds = ((all + workers * MAX_CHUNK - 1) / (workers * MAX_CHUNK)).max(1);
    let count = rounds * workers;
    let size = ((all + count - 1) / count).clamp(1, MAX_CHUNK);
    let mut ends: Vec<i64> = starts.iter().skip(1).map(|&s| i64::from(s)).collect();
    ends.push(i64::from(total));
    let mut chunks = Vec::new();
    let mut start = 0i64;
    for end in ends {
        while start < end {
            let last = (start + size).min(end) - 1;
            chunks.push((start as i32, last as i32));
            start = last + 1;
        }
    }
    chunks
}

type ResourceRow = (
    diesel::dsl::Eq<scan_resources::tenant_id, String>,
    diesel::dsl::Eq<scan_resources::scan_id, Uuid>,
    diesel::dsl::Eq<scan_resources::idx, i32>,
    diesel::dsl::Eq<scan_resources::connector_id, Uuid>,
    diesel::dsl::Eq<scan_resources::bucket, String>,
    diesel::dsl::Eq<scan_resources::object_key, String>,
    diesel::dsl::Eq<scan_resources::size, i64>,
    diesel::dsl::Eq<scan_resources::etag, Option<String>>,
    diesel::dsl::Eq<scan_resources::last_modified, OffsetDateTime>,
);

struct Enumerator<'a> {
    tenant: &'a TenantId,
    scan: ScanId,
    options: &'a Options,
    next_idx: i32,
    batch: Vec<ResourceRow>,
    sources_total: i32,
    sources_listed: i32,
    problems: Vec<String>,
    /// The scan ended (cancelled, timed out) while it was listed: listing stops at the next
    /// page, and nothing more is judged deleted.
    ended: bool,
    /// `max_files` was reached while objects in scope were left to list.
    capped: bool,
}

impl Enumerator<'_> {
    fn fail_source(&mut self, connector: ConnectorId, bucket: Option<&str>, e: &AccessError) {
        self.sources_total += 1;
        let place = match bucket {
            Some(b) => format!("connector {connector} bucket {b}"),
            None => format!("connector {connector}"),
        };
        self.problems
            .push(format!("{place}: {}: {}", e.failure.as_str(), e.message));
    }

    fn full(&self) -> bool {
        self.next_idx as u32 >= self.options.max_files
    }

    /// Notes, once, that `max_files` stopped the listing with objects in scope left.
    fn cap(&mut self) {
        if !self.capped {
            self.capped = true;
            self.problems.push(format!(
                "max_files ({}) was reached before every object in scope was listed",
                self.options.max_files
            ));
        }
    }

    async fn list(
        &mut self,
        conn: &mut AsyncPgConnection,
        bucket: &connectors::cloud::Bucket,
        source: &Source,
        types: &[String],
        baseline: &mut Baseline,
        incremental: bool,
    ) -> Result<(), ScanError> {
        self.sources_total += 1;
        let mut token = None;
        loop {
            if self.full() {
                // Objects past the cap are not seen: the source is not listed to its end
                // (the enumeration is partial, and says why), and nothing is judged deleted.
                self.cap();
                return Ok(());
            }
            // A scan cancelled or timed out while it is listed stops calling the storage at
            // once, not after listing millions of objects, and resolves nothing: one short
            // read per page of 1,000 objects.
            if !rows::running(conn, self.tenant, self.scan).await? {
                self.ended = true;
                return Ok(());
            }
            let page = match bucket
                .list_page(source.prefix.as_deref(), token.take(), PAGE_SIZE)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    self.sources_total -= 1;
                    self.fail_source(source.connector, Some(&source.bucket), &e);
                    return Ok(());
                }
            };
            for object in page.objects {
                // Seen whatever this scan reads: an object is gone only when the listing no
                // longer holds it, not when this scan's file types leave it out.
                let listed = baseline.see(
                    &source.bucket,
                    &object.key,
                    object.size as i64,
                    object.etag.as_deref(),
                );
                if !has_file_type(&object.key, types) || is_remediation_copy(&object.key) {
                    continue;
                }
                if incremental && listed == Listed::Unchanged {
                    continue;
                }
                if self.full() {
                    self.cap();
                    return Ok(());
                }
                self.batch.push((
                    scan_resources::tenant_id.eq(self.tenant.as_str().to_owned()),
                    scan_resources::scan_id.eq(self.scan.as_uuid()),
                    scan_resources::idx.eq(self.next_idx),
                    scan_resources::connector_id.eq(source.connector.as_uuid()),
                    scan_resources::bucket.eq(source.bucket.clone()),
                    scan_resources::object_key.eq(object.key),
                    scan_resources::size.eq(object.size as i64),
                    scan_resources::etag.eq(object.etag),
                    scan_resources::last_modified.eq(object.last_modified),
                ));
                self.next_idx += 1;
                if self.batch.len() >= 1000 {
                    self.flush(conn).await?;
                }
            }
            token = page.next;
            if token.is_none() {
                break;
            }
        }
        self.sources_listed += 1;
        // Every object scanned before was listed again (an unchanged bucket): nothing is gone,
        // and the keys need not be read back.
        if !baseline.all_seen() {
            self.resolve_deleted(conn, source, baseline).await?;
        }
        Ok(())
    }

    /// Objects scanned before, under this source, that the full listing no longer shows: their
    /// findings are resolved and they are forgotten. Their keys are read back from Postgres a
    /// page at a time, so that memory stays bounded however many are gone.
    async fn resolve_deleted(
        &mut self,
        conn: &mut AsyncPgConnection,
        source: &Source,
        baseline: &Baseline,
    ) -> Result<(), ScanError> {
        let prefix = source.prefix.as_deref().unwrap_or("");
        let tenant = self.tenant;
        let mut after: Option<String> = None;
        loop {
            let (gone, next) = baseline
                .unseen(
                    conn,
                    tenant,
                    source.connector,
                    &source.bucket,
                    prefix,
                    after.as_deref(),
                )
                .await?;
            let gone: Vec<&String> = gone.iter().collect();
            if !self.forget(conn, source, &gone).await? {
                self.ended = true;
                return Ok(());
            }
            match next {
                Some(key) => after = Some(key),
                None => return Ok(()),
            }
        }
    }

    /// Resolves the findings of `gone` and forgets them, 500 at a time; false when the scan
    /// no longer runs.
    async fn forget(
        &mut self,
        conn: &mut AsyncPgConnection,
        source: &Source,
        gone: &[&String],
    ) -> Result<bool, ScanError> {
        let tenant = self.tenant;
        let scan = self.scan;
        for keys in gone.chunks(500) {
            // The objects' findings are resolved and an outbox event says so, together:
            // governance then sees their findings go, as when a scan finds none. Only while
            // the scan runs, checked under a share of its row as a worker's record is: a scan
            // cancelled or timed out during its last page, or whose connector is being
            // deleted, resolves nothing.
            let resolved = conn
                .transaction(async |conn| {
                    if !rows::running_shared(conn, tenant, scan).await? {
                        return Ok::<_, ScanError>(false);
                    }
                    crate::findings::forget_objects(
                        conn,
                        tenant,
                        source.connector,
                        &source.bucket,
                        keys,
                    )
                    .await?;
                    let objects = keys
                        .iter()
                        .map(|key| crate::outbox::RecordedObject {
                            bucket: source.bucket.clone(),
                            object_key: (*key).clone(),
                            state: "deleted".to_owned(),
                            findings: 0,
                        })
                        .collect();
                    crate::outbox::write(
                        conn,
                        tenant,
                        scan,
                        &crate::outbox::Event::ObjectsRecorded {
                            connector: source.connector,
                            objects,
                        },
                    )
                    .await?;
                    Ok(true)
                })
                .await?;
            if !resolved {
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn flush(&mut self, conn: &mut AsyncPgConnection) -> Result<(), ScanError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        diesel::insert_into(scan_resources::table)
            .values(batch)
            .execute(conn)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_scan_narrows_its_connectors_scope_and_never_widens_it() {
        let hr = owned(&["hr/"]);
        assert_eq!(within_prefixes(&[], &[]), None);
        assert_eq!(within_prefixes(&[], &hr), Some(hr.clone()));
        assert_eq!(within_prefixes(&owned(&["x/"]), &[]), Some(owned(&["x/"])));
        // Under the connector's prefix: kept; above it: the connector's; elsewhere: nothing.
        assert_eq!(
            within_prefixes(&owned(&["hr/2024/", "finance/"]), &hr),
            Some(owned(&["hr/2024/"]))
        );
        assert_eq!(within_prefixes(&owned(&["h"]), &hr), Some(hr.clone()));
        assert_eq!(within_prefixes(&owned(&["finance/"]), &hr), Some(vec![]));

        let csv = owned(&["csv"]);
        assert_eq!(within_types(&[], &[]), Some(vec![]));
        assert_eq!(within_types(&[], &csv), Some(csv.clone()));
        assert_eq!(
            within_types(&owned(&["csv", "json"]), &csv),
            Some(csv.clone())
        );
        assert_eq!(within_types(&owned(&["json"]), &csv), None);
        assert_eq!(within_types(&owned(&["json"]), &[]), Some(owned(&["json"])));
    }

    #[test]
    fn chunks_cover_every_resource_once_and_never_straddle_connectors() {
        assert_eq!(plan_chunks(&[], 0, 4), vec![]);
        assert_eq!(plan_chunks(&[0], 0, 4), vec![]);
        assert_eq!(
            plan_chunks(&[0], 10, 4),
            vec![(0, 2), (3, 5), (6, 8), (9, 9)]
        );
        // Two connectors: 0..5 and 5..10; with 2 workers a chunk holds 5.
        assert_eq!(plan_chunks(&[0, 5], 10, 2), vec![(0, 4), (5, 9)]);
        // A boundary mid-chunk cuts it; an empty connector adds nothing.
        assert_eq!(
            plan_chunks(&[0, 3, 3, 7], 10, 2),
            vec![(0, 2), (3, 6), (7, 9)]
        );
        // Never more than MAX_CHUNK, and a multiple of the workers in number.
        let big = plan_chunks(&[0], 2500, 1);
        assert_eq!(big, vec![(0, 833), (834, 1667), (1668, 2499)]);
        let even = plan_chunks(&[0], 10_000, 4);
        assert_eq!(even.len(), 12);
        assert!(even.iter().all(|(a, b)| b - a < 834));
        assert_eq!(even.last(), Some(&(9174, 9999)));
    }

    #[test]
    fn remediation_copies_are_never_scanned() {
        assert!(is_remediation_copy(".dps-lkg/0190/people.csv"));
        assert!(is_remediation_copy(
            "held/.dps-quarantine/0190/b/people.csv"
        ));
        assert!(!is_remediation_copy("reports/.dps-lkg-notes.csv"));
        assert!(!is_remediation_copy("people.csv"));
    }

    #[test]
    fn file_types_match_the_extension_and_the_one_under_gz() {
        let types = vec!["csv".to_owned(), "txt".to_owned()];
        assert!(has_file_type("a/b/people.csv", &types));
        assert!(has_file_type("people.CSV.gz", &types));
        assert!(!has_file_type("people.json", &types));
        assert!(!has_file_type("csv", &types));
        assert!(!has_file_type("dir.csv/readme", &types));
        assert!(has_file_type("anything", &[]));
        assert!(has_file_type("x.gz", &["gz".to_owned()]));
    }
}

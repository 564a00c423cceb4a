//! The new content of a tokenize or mask: the request's values found again in the object's
//! bytes, by their fingerprints and with the classifiers of the scans that found them, and
//! replaced by tokens from the vault or masked.

use std::collections::{BTreeMap, HashSet};

use detect::Detector;
use ids::TenantId;
use keys::{KeyRing, TenantKeys};

use crate::cached::ScanClassifiers;
use crate::conn::Conn;
use crate::content;
use crate::stop::{Reason, Stop};
use crate::store::Row;
use policies::document::Action;

/// An object's new content, and the tokens written into it (PII type, token), which a rescan
/// will recognize there (`written`).
pub(super) struct Rewritten {
    pub bytes: Vec<u8>,
    pub tokens: Vec<(String, String)>,
}

/// The object's bytes with the request's values replaced: by tokens from the vault, or masked.
pub(super) async fn rewrite(
    db: &mut Conn<'_>,
    keyring: &KeyRing,
    classifiers: &ScanClassifiers,
    row: &Row,
    action: &Action,
    bytes: &[u8],
) -> Result<Rewritten, Stop> {
    let tenant = row.tenant()?;
    let conn = db.get().await?;
    let keys = keyring
        .tenant(conn, &tenant)
        .await
        .map_err(|_| Stop::retry(Reason::TenantKeysUnreadable))?;
    let found = find_values(db, classifiers, &keys, &tenant, row, bytes).await?;
    // Every finding of the request is marked remediated when it ends, so each must be found
    // again in the bytes that were scanned (the read is conditional on their ETag). One that is
    // not (the detector or the tenant's classifiers changed since) fails the request rather
    // than be reported remediated while its value stays in the object.
    if found.spans.is_empty() || found.missing > 0 {
        return Err(Stop::fail(Reason::ValuesNotFound));
    }
    let spans = found.spans;
    match action {
        Action::Mask(mask) => Ok(Rewritten {
            bytes: content::rewrite(bytes, &spans, |s| {
                content::mask(&s.value, usize::from(mask.keep_last), mask.char)
            }),
            tokens: Vec::new(),
        }),
        Action::Tokenize(config) => {
            let tokens = crate::tokens::issue(
                db.get().await?,
                keyring,
                &tenant,
                config.tokenization_policy_id,
                row.request_id,
                &spans,
            )
            .await?;
            let written = spans
                .iter()
                .filter_map(|s| {
                    let token = tokens.get(&(s.pii_type.clone(), s.value.clone()))?;
                    Some((s.pii_type.clone(), token.clone()))
                })
                .collect();
            Ok(Rewritten {
                bytes: content::rewrite(bytes, &spans, |s| {
                    tokens
                        .get(&(s.pii_type.clone(), s.value.clone()))
                        .cloned()
                        .unwrap_or_else(|| s.value.clone())
                }),
                tokens: written,
            })
        }
        _ => Err(Stop::fail(Reason::NotARewrite)),
    }
}

/// The request's findings' values in `bytes`, found again by their fingerprints with the
/// classifiers of the scans that found them.
async fn find_values(
    db: &mut Conn<'_>,
    classifiers: &ScanClassifiers,
    keys: &TenantKeys,
    tenant: &TenantId,
    row: &Row,
    bytes: &[u8],
) -> Result<content::Found, Stop> {
    let conn = db.get().await?;
    let findings = scans::findings::fingerprinted(conn, tenant, &row.finding_ids)
        .await
        .map_err(|e| Stop::retry_with(Reason::FindingsUnreadable, e))?;
    let wanted: HashSet<(String, Vec<u8>)> = findings
        .iter()
        .map(|f| (f.pii_type.clone(), f.fingerprint.clone()))
        .collect();
    let mut scans_seen: BTreeMap<uuid::Uuid, ()> = BTreeMap::new();
    let mut specs = Vec::new();
    for f in &findings {
        if scans_seen.insert(f.scan_id, ()).is_none() {
            let ran_with = classifiers
                .get(conn, tenant, ids::ScanId::from_uuid(f.scan_id))
                .await?;
            specs.extend(ran_with.iter().cloned());
        }
    }
    // The built-in recognizers cost milliseconds to build: built once per process. A tenant's
    // classifiers are compiled for the request (as rare as custom classifiers are).
    static PLAIN: std::sync::OnceLock<Detector> = std::sync::OnceLock::new();
    let compiled;
    let detector = if specs.is_empty() {
        PLAIN.get_or_init(Detector::new)
    } else {
        let mut seen = HashSet::new(); // each name once, wherever it repeats
        specs.retain(|spec| seen.insert(spec.name.clone()));
        let classifiers = detect::Classifiers::compile(&specs)
            .map_err(|_| Stop::fail(Reason::ClassifiersUnreadable))?;
        compiled = Detector::with_classifiers(classifiers);
        &compiled
    };
    let file_name = row.object_key.rsplit('/').next().unwrap_or(&row.object_key);
    // Detection is the run's longest stretch of CPU: no connection is held through it.
    db.release();
    content::find(detector, file_name, bytes, keys, &wanted)
        .map_err(|u| Stop::fail(Reason::Unsupported(u)))
}

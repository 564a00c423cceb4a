//! The platform's side of the coordinator API, for scan workers outside the platform: they
//! hold the scan's worker token and no database, no master key and no connector secret. A
//! claim hands them what the chunk needs; their reports are checked against the chunk and
//! recorded under its fence exactly as an in-platform worker's are (see
//! [`crate::worker::Local`]).

use std::collections::{HashMap, HashSet};

use diesel_async::AsyncPgConnection;
use ids::{ScanId, TenantId};
use keys::KeyRing;
use tokenize_core::PiiType;

use crate::error::ScanError;
use crate::lease::{self, Claim, Held};
use crate::record::{self, Outcome};
use crate::tokens::{Place, WrittenTokens};
use crate::worker::{Coordination as _, Local, Prepared};
use crate::{Status, lifecycle, rows};

/// What a claim gave: the scan's status, and the chunk with what it needs, if one was free.
#[derive(Debug)]
pub struct Claimed {
    pub status: Status,
    pub chunk: Option<(Claim, Prepared)>,
}

/// Why a call of the coordinator API was refused.
#[derive(Debug)]
pub enum Refused {
    /// Not the scan's worker token (or no such scan: the caller may not tell them apart).
    Token,
    /// The scan has no such chunk.
    NoChunk,
    /// An object the chunk does not hold.
    NotInChunk(i32),
    /// A finding reported `tokenized` in an object the platform wrote no token into, or of a
    /// custom classifier (the vault issues PII types only).
    Tokenized(i32),
    /// A finding whose type is neither a PII type nor one of the scan's classifiers, or whose
    /// category is not its type's.
    FindingType(i32),
    Scan(ScanError),
}

impl From<ScanError> for Refused {
    fn from(e: ScanError) -> Self {
        Refused::Scan(e)
    }
}

/// A scan whose worker token the caller showed: what [`record`] takes, so that a caller that
/// checks the token before it reads a large report does not have it checked twice.
#[derive(Debug)]
pub struct Authorized {
    tenant: TenantId,
    scan: ScanId,
}

/// Checks that `token` is the worker token of `scan`.
pub async fn authorize(
    conn: &mut AsyncPgConnection,
    scan: ScanId,
    token: &str,
) -> Result<Authorized, Refused> {
    let tenant = tenant(conn, scan, token).await?;
    Ok(Authorized { tenant, scan })
}

/// The tenant of `scan`, when `token` is its worker token.
async fn tenant(
    conn: &mut AsyncPgConnection,
    scan: ScanId,
    token: &str,
) -> Result<TenantId, Refused> {
    match crate::coordinator::authenticate(conn, scan, token).await {
        Ok(tenant) => Ok(tenant),
        Err(ScanError::NotFound | ScanError::Unauthorized) => Err(Refused::Token),
        Err(e) => Err(Refused::Scan(e)),
    }
}

/// The claim the token's holder names: chunk `chunk_no` under `fence` (each write checks that
/// the fence still holds).
async fn named_claim(
    conn: &mut AsyncPgConnection,
    scan: ScanId,
    token: &str,
    chunk_no: i32,
    fence: i64,
) -> Result<Claim, Refused> {
    let tenant = tenant(conn, scan, token).await?;
    lease::claim_at(conn, &tenant, scan, chunk_no, fence)
        .await?
        .ok_or(Refused::NoChunk)
}

/// Claims a chunk of `scan` for `worker_id`, as an in-platform worker would, with what its
/// objects need (connector configurations with their secrets: the caller hands over only the
/// public part, and the lookup keys of the tokens written into each object). When none is
/// free, ends the scan if its work is done.
pub async fn claim(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tokens: &dyn WrittenTokens,
    scan: ScanId,
    token: &str,
    worker_id: &str,
    lease_seconds: i64,
) -> Result<Claimed, Refused> {
    let tenant = &tenant(conn, scan, token).await?;
    let row = rows::row(conn, tenant, scan).await?;
    let status = row.status()?;
    if status != Status::Running || row.enumeration_status == "in_progress" {
        return Ok(Claimed {
            status,
            chunk: None,
        });
    }
    if let Some(claim) = lease::claim(conn, worker_id, Some((tenant, scan)), lease_seconds).await? {
        let prepared = Local {
            conn: &mut *conn,
            keyring,
            tokens: Some(tokens),
            lease_seconds,
        }
        .prepare(&claim)
        .await?;
        return Ok(Claimed {
            status,
            chunk: Some((claim, prepared)),
        });
    }
    // Others hold the remaining chunks; their leases may yet expire.
    lifecycle::try_finalize(conn, tenant, scan).await?;
    Ok(Claimed {
        status: rows::row(conn, tenant, scan).await?.status()?,
        chunk: None,
    })
}

/// One object's outcome as a worker reports it: findings without values.
#[derive(Debug)]
pub struct Reported {
    pub idx: i32,
    pub outcome: Outcome,
}

/// Renews the lease of the chunk the token's holder names.
pub async fn heartbeat(
    conn: &mut AsyncPgConnection,
    scan: ScanId,
    token: &str,
    chunk_no: i32,
    fence: i64,
    lease_seconds: i64,
) -> Result<Held, Refused> {
    let claim = named_claim(conn, scan, token, chunk_no, fence).await?;
    Ok(lease::heartbeat(conn, &claim, lease_seconds).await?)
}

/// Ends the chunk the token's holder names.
pub async fn complete(
    conn: &mut AsyncPgConnection,
    scan: ScanId,
    token: &str,
    chunk_no: i32,
    fence: i64,
) -> Result<Held, Refused> {
    let claim = named_claim(conn, scan, token, chunk_no, fence).await?;
    Ok(lifecycle::complete(conn, &claim).await?)
}

/// Records what the holder of `scan`'s token reports for chunk `chunk_no` under `fence`. Objects
/// already recorded (a report sent again after its answer was lost) are skipped. A finding
/// reported `tokenized` is refused in an object the platform wrote no token into, so a worker
/// cannot hide new values as the tenant's own tokens where there are none.
pub async fn record(
    conn: &mut AsyncPgConnection,
    tokens: &dyn WrittenTokens,
    scan: &Authorized,
    chunk_no: i32,
    fence: i64,
    reported: Vec<Reported>,
    lease_seconds: i64,
) -> Result<Held, Refused> {
    let claim = &lease::claim_at(conn, &scan.tenant, scan.scan, chunk_no, fence)
        .await?
        .ok_or(Refused::NoChunk)?;
    if let Some(r) = reported
        .iter()
        .find(|r| r.idx < claim.start || r.idx > claim.end)
    {
        return Err(Refused::NotInChunk(r.idx));
    }
    if let Some(r) = reported.iter().find(|r| match &r.outcome {
        Outcome::Scanned {
            findings: found, ..
        } => found
            .iter()
            .any(|f| f.tokenized && f.pii_type.parse::<PiiType>().is_err()),
        _ => false,
    }) {
        return Err(Refused::Tokenized(r.idx));
    }
    // Each finding is of a type the scan can find, in that type's category: what governance
    // and risk read back must be what a detector of the scan could have written.
    let classifiers = crate::classifiers::for_scan(conn, &claim.tenant, claim.scan).await?;
    let known = |pii_type: &str, category: &str| match pii_type.parse::<PiiType>().ok() {
        Some(t) => t.category().as_str() == category,
        None => pii_type.strip_prefix("custom:").is_some_and(|name| {
            classifiers
                .iter()
                .any(|c| c.name == name && c.category.as_str() == category)
        }),
    };
    if let Some(r) = reported.iter().find(|r| match &r.outcome {
        Outcome::Scanned {
            findings: found, ..
        } => found.iter().any(|f| !known(&f.pii_type, &f.category)),
        _ => false,
    }) {
        return Err(Refused::FindingType(r.idx));
    }
    let reported_idx: Vec<i32> = reported.iter().map(|r| r.idx).collect();
    let mut pending: HashMap<i32, lease::Resource> = lease::pending_of(conn, claim, &reported_idx)
        .await?
        .into_iter()
        .map(|r| (r.idx, r))
        .collect();
    let mut seen = HashSet::new();
    let mut batch = Vec::with_capacity(reported.len());
    for r in reported {
        if !seen.insert(r.idx) {
            continue;
        }
        let Some(resource) = pending.remove(&r.idx) else {
            continue;
        };
        batch.push((resource, r.outcome));
    }
    let claiming: Vec<&lease::Resource> = batch
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Scanned { findings: found, .. } if found.iter().any(|f| f.tokenized)))
        .map(|(r, _)| r)
        .collect();
    if !claiming.is_empty() {
        let places: Vec<Place<'_>> = claiming.iter().map(|r| Place::from(*r)).collect();
        let written = tokens
            .written_in(conn, &claim.tenant, &places)
            .await
            .map_err(ScanError::from)?;
        if let Some((r, _)) = claiming.iter().zip(written).find(|(_, w)| w.is_empty()) {
            return Err(Refused::Tokenized(r.idx));
        }
    }
    for (_, outcome) in &mut batch {
        if let Outcome::Scanned {
            findings: found, ..
        } = outcome
        {
            for finding in found.iter_mut() {
                // Masked here, whatever the worker sent: see `preview::remask`.
                finding.preview =
                    crate::preview::remask(finding.pii_type.parse().ok(), &finding.preview);
            }
        }
    }
    Ok(record::record(conn, claim, batch, lease_seconds).await?)
}

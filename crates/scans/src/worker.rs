//! A worker: claims chunks and scans their objects. The same loop runs as tokio tasks inside
//! platform-api and in the `scan-worker` binary.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use diesel_async::AsyncPgConnection;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use connectors::cloud::{AccessError, Bucket, Cloud, Failure};
use detect::ClassifierSpec;
use detect::{Detector, Finding};
use ids::{ConnectorId, ScanId};
use keys::KeyRing;

use uuid::Uuid;

use crate::archive;
use crate::error::ScanError;
use crate::group::{Groups, Written};
use crate::lease::{self, Claim, Held, Resource};
use crate::lifecycle;
use crate::record::{self, Outcome};
use crate::rows;
use crate::tokens::{Place, WrittenTokens};

/// How long a claim holds without a heartbeat, by default.
pub const LEASE_SECONDS: i64 = 30;
/// How often a worker reading one long object renews its lease and checks for a cancel.
const HEARTBEAT: Duration = Duration::from_secs(2);

/// File extensions never worth downloading: formats the detector cannot read. The binary Word
/// and PowerPoint 97–2003 formats are here; their Excel sibling (`.xls`, the same compound
/// file) is read by `extract`, which skips any other compound file `unsupported_format` too.
const UNSUPPORTED: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff", "webp", "ico", "7z", "rar", "xz", "exe",
    "dll", "so", "dylib", "bin", "iso", "mp3", "mp4", "mov", "avi", "mkv", "wav", "flac", "orc",
    "doc", "ppt", "class", "jar", "pyc", "woff", "woff2", "ttf", "otf",
];

/// A batch of outcomes is written when it holds this many resources, this many findings, or
/// is this old: a worker that dies loses at most that much work, which its successor redoes.
const BATCH_RESOURCES: usize = 32;
const BATCH_FINDINGS: usize = 2000;
const BATCH_AGE: Duration = Duration::from_secs(1);

/// How many objects a worker reads ahead of the one it scans, and how many pieces of each it
/// holds before the reader waits: enough to keep the storage busy while detection and writes
/// run, and a bound on memory. Small objects cost a request's latency each (tens of
/// milliseconds on object storage) for little content, so up to `READ_AHEAD_SMALL` are in
/// flight while their sizes add up to at most `READ_AHEAD_BYTES`; past that, `READ_AHEAD`.
const READ_AHEAD: usize = 6;
const READ_AHEAD_SMALL: usize = 64;
const READ_AHEAD_BYTES: u64 = 8 << 20;
/// Content is pushed to detection this much at a time, and its findings grouped after each
/// push: gzip inflates at most about a thousandfold, so one push yields at most about 5 MiB of
/// text (with the window it completes), whose values stay under [`PUSH_FINDINGS`] for any real
/// table. Only a bomb of short repeated values passes it, and fails as `findings_limit`.
const PUSH: usize = 4 << 10;
const PUSH_FINDINGS: usize = 1_000_000;
const PIECES_AHEAD: usize = 8;

/// How many scans' compiled classifier sets a worker keeps.
const DETECTORS_KEPT: usize = 8;

/// What a worker needs to scan.
#[derive(Debug, Clone)]
pub struct Worker {
    pub id: String,
    pub cloud: Cloud,
    /// The platform's keys, for a worker that works through Postgres ([`Worker::run_chunk`]);
    /// a worker outside the platform has none and is given what it needs with each claim.
    pub keyring: Option<Arc<KeyRing>>,
    /// How long each claim's lease lasts without a write or heartbeat.
    pub lease_seconds: i64,
    /// The detector of scans without custom classifiers.
    plain: Arc<Detector>,
    /// Detectors with a scan's classifiers, most recent last.
    compiled: Arc<Mutex<Compiled>>,
    /// Tells the tenant's own tokens from PII (see [`crate::tokens`]); without it, nothing is
    /// recognized as a token.
    tokens: Option<Arc<dyn WrittenTokens>>,
}

/// Compiled detectors by scan.
type Compiled = Vec<(ScanId, Arc<Detector>)>;

/// What a claimed chunk is scanned with, as its coordinator hands it over.
#[derive(Debug)]
pub struct Prepared {
    /// The chunk's resources not yet recorded.
    pub resources: Vec<Resource>,
    /// The custom classifiers the scan was created with.
    pub classifiers: Vec<ClassifierSpec>,
    /// The lookup keys of the tokens the platform wrote into each resource, by its index;
    /// none for a resource absent here (see [`crate::tokens`]).
    pub written: HashMap<i32, Vec<Uuid>>,
    /// Objects larger than this are skipped (`size_limit`).
    pub max_bytes: u64,
    /// The configuration of each connector the resources belong to, or why it is unusable.
    pub connectors: Vec<(ConnectorId, Result<connectors::Config, AccessError>)>,
}

/// The coordinator a worker runs a claimed chunk against: Postgres, in the platform
/// ([`Local`]), or the platform's coordinator API, from outside it (`scan-worker` with only
/// the deployment configuration). Every call after [`Coordination::prepare`] carries the
/// claim's fence; `Held::Lost` means the chunk is no longer this worker's.
#[async_trait::async_trait]
pub trait Coordination: Send {
    async fn prepare(&mut self, claim: &Claim) -> Result<Prepared, ScanError>;
    async fn heartbeat(&mut self, claim: &Claim) -> Result<Held, ScanError>;
    /// Records a batch of outcomes.
    async fn record(
        &mut self,
        claim: &Claim,
        batch: Vec<(Resource, Outcome)>,
    ) -> Result<Held, ScanError>;
    async fn complete(&mut self, claim: &Claim) -> Result<Held, ScanError>;
}

/// The coordinator in Postgres, with the platform's keys.
pub struct Local<'a> {
    pub conn: &'a mut AsyncPgConnection,
    pub keyring: &'a KeyRing,
    pub tokens: Option<&'a dyn WrittenTokens>,
    pub lease_seconds: i64,
}

impl std::fmt::Debug for Local<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local")
            .field("lease_seconds", &self.lease_seconds)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Coordination for Local<'_> {
    async fn prepare(&mut self, claim: &Claim) -> Result<Prepared, ScanError> {
        let conn = &mut *self.conn;
        let resources = lease::pending(conn, claim).await?;
        let classifiers = crate::classifiers::for_scan(conn, &claim.tenant, claim.scan).await?;
        let keys = self.keyring.tenant(conn, &claim.tenant).await?;
        let options = rows::row(conn, &claim.tenant, claim.scan)
            .await?
            .options()?;
        let mut configs: Vec<(ConnectorId, Result<connectors::Config, AccessError>)> = Vec::new();
        for resource in &resources {
            if configs.iter().any(|(id, _)| *id == resource.connector_id) {
                continue;
            }
            let config =
                connectors::store::config(conn, &keys, &claim.tenant, resource.connector_id)
                    .await
                    .map_err(|e| AccessError {
                        failure: Failure::Identity,
                        message: e.to_string(),
                    });
            configs.push((resource.connector_id, config));
        }
        let mut written = HashMap::new();
        if let Some(tokens) = self.tokens {
            let places: Vec<Place<'_>> = resources.iter().map(Place::from).collect();
            let found = tokens.written_in(conn, &claim.tenant, &places).await?;
            for (resource, lookups) in resources.iter().zip(found) {
                if !lookups.is_empty() {
                    written.insert(resource.idx, lookups);
                }
            }
        }
        Ok(Prepared {
            resources,
            classifiers,
            written,
            max_bytes: options.max_object_bytes,
            connectors: configs,
        })
    }

    async fn heartbeat(&mut self, claim: &Claim) -> Result<Held, ScanError> {
        lease::heartbeat(self.conn, claim, self.lease_seconds).await
    }

    async fn record(
        &mut self,
        claim: &Claim,
        batch: Vec<(Resource, Outcome)>,
    ) -> Result<Held, ScanError> {
        record::record(self.conn, claim, batch, self.lease_seconds).await
    }

    async fn complete(&mut self, claim: &Claim) -> Result<Held, ScanError> {
        lifecycle::complete(self.conn, claim).await
    }
}

/// What every object of one chunk is scanned with.
struct Scope<'a> {
    claim: &'a Claim,
    detector: Arc<Detector>,
    max_bytes: u64,
}

/// Why a chunk stopped early.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every resource was recorded and the chunk completed.
    Done,
    /// The lease or the scan was lost (cancel, timeout, another worker): nothing more written.
    Lost,
}

impl Worker {
    pub fn new(id: String, cloud: Cloud, keyring: Arc<KeyRing>) -> Self {
        Self {
            keyring: Some(keyring),
            ..Self::without_keys(id, cloud)
        }
    }

    /// A worker without the platform's keys, which runs chunks through a coordinator that
    /// hands over what each needs ([`Worker::run`]).
    pub fn without_keys(id: String, cloud: Cloud) -> Self {
        Self {
            id,
            cloud,
            keyring: None,
            lease_seconds: LEASE_SECONDS,
            plain: Arc::new(Detector::new()),
            compiled: Arc::default(),
            tokens: None,
        }
    }

    /// Tells the tokens remediation wrote into objects from new values with `tokens`.
    pub fn with_tokens(mut self, tokens: Arc<dyn WrittenTokens>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    pub fn with_lease_seconds(mut self, seconds: i64) -> Self {
        self.lease_seconds = seconds;
        self
    }

    /// The detector for a scan: the built-in recognizers plus the classifiers the scan was
    /// created with, compiled once per scan and process.
    fn detector(&self, scan: ScanId, specs: &[ClassifierSpec]) -> Result<Arc<Detector>, ScanError> {
        let cached = self
            .compiled
            .lock()
            .map_err(|_| ScanError::CorruptRow)?
            .iter()
            .find(|(s, _)| *s == scan)
            .map(|(_, d)| d.clone());
        if let Some(detector) = cached {
            return Ok(detector);
        }
        if specs.is_empty() {
            return Ok(self.plain.clone());
        }
        // The set compiled when it was stored; failing now means the row was edited.
        let classifiers = detect::Classifiers::compile(specs).map_err(|_| ScanError::CorruptRow)?;
        let detector = Arc::new(Detector::with_classifiers(classifiers));
        let mut compiled = self.compiled.lock().map_err(|_| ScanError::CorruptRow)?;
        if compiled.len() >= DETECTORS_KEPT {
            compiled.remove(0);
        }
        compiled.push((scan, detector.clone()));
        Ok(detector)
    }

    /// Runs one claimed chunk to the end through Postgres, with the platform's keys.
    pub async fn run_chunk(
        &self,
        conn: &mut AsyncPgConnection,
        claim: &Claim,
    ) -> Result<Stop, ScanError> {
        let keyring = self.keyring.clone().ok_or_else(|| {
            ScanError::Coordinator(
                "a worker without the platform's keys cannot use Postgres".into(),
            )
        })?;
        let mut local = Local {
            conn,
            keyring: &keyring,
            tokens: self.tokens.as_deref(),
            lease_seconds: self.lease_seconds,
        };
        self.run(&mut local, claim).await
    }

    /// Runs one claimed chunk to the end against `coordinator`.
    pub async fn run(
        &self,
        coordinator: &mut dyn Coordination,
        claim: &Claim,
    ) -> Result<Stop, ScanError> {
        let mut prepared = coordinator.prepare(claim).await?;
        let scope = Scope {
            claim,
            detector: self.detector(claim.scan, &prepared.classifiers)?,
            max_bytes: prepared.max_bytes,
        };
        let mut written = std::mem::take(&mut prepared.written);
        let buckets = self.buckets(&claim.tenant, &prepared);
        let mut ahead = ReadAhead::new(prepared.resources, buckets, prepared.max_bytes);
        // Outcomes are written in batches: a few statements per batch instead of per object.
        let mut unwritten: Vec<(Resource, Outcome)> = Vec::new();
        let mut unwritten_findings = 0usize;
        let mut flushed = Instant::now();
        while let Some((resource, next)) = ahead.next() {
            let outcome = match next {
                Next::Decided(outcome) => outcome,
                Next::Body(body) => {
                    let written = Written::new(
                        claim.tenant.as_str(),
                        written.remove(&resource.idx).unwrap_or_default(),
                    );
                    match self
                        .scan_body(coordinator, &scope, &resource, body, written)
                        .await?
                    {
                        Some(outcome) => outcome,
                        None => return Ok(Stop::Lost),
                    }
                }
            };
            if let Outcome::Scanned {
                findings: found, ..
            } = &outcome
            {
                unwritten_findings += found.len();
            }
            count(&resource, &outcome);
            unwritten.push((resource, outcome));
            if unwritten.len() >= BATCH_RESOURCES
                || unwritten_findings >= BATCH_FINDINGS
                || flushed.elapsed() >= BATCH_AGE
            {
                let batch = std::mem::take(&mut unwritten);
                (unwritten_findings, flushed) = (0, Instant::now());
                if coordinator.record(claim, batch).await? == Held::Lost {
                    return Ok(Stop::Lost);
                }
            }
        }
        if coordinator.record(claim, unwritten).await? == Held::Lost {
            return Ok(Stop::Lost);
        }
        Ok(match coordinator.complete(claim).await? {
            Held::Yes => Stop::Done,
            Held::Lost => Stop::Lost,
        })
    }

    /// Opens every bucket the resources live in, once each. A bucket that cannot be opened
    /// fails its objects, not the chunk.
    fn buckets(&self, tenant: &ids::TenantId, prepared: &Prepared) -> Buckets {
        let mut storages: Vec<(ConnectorId, Result<connectors::Storage, AccessError>)> = Vec::new();
        let mut buckets = Buckets::new();
        for resource in &prepared.resources {
            let key = (resource.connector_id, resource.bucket.clone());
            if buckets.iter().any(|(k, _)| *k == key) {
                continue;
            }
            if !storages.iter().any(|(id, _)| *id == resource.connector_id) {
                let storage = match prepared
                    .connectors
                    .iter()
                    .find(|(id, _)| *id == resource.connector_id)
                {
                    Some((id, Ok(config))) => self.cloud.open(tenant, *id, config),
                    Some((_, Err(e))) => Err(e.clone()),
                    None => Err(AccessError {
                        failure: Failure::Identity,
                        message: "the connector's configuration was not given".into(),
                    }),
                };
                storages.push((resource.connector_id, storage));
            }
            let bucket = storages
                .iter()
                .find(|(id, _)| *id == resource.connector_id)
                .map(|(_, storage)| storage.clone().and_then(|s| s.bucket(&resource.bucket)));
            if let Some(bucket) = bucket {
                buckets.push((key, bucket));
            }
        }
        buckets
    }

    /// Runs one object's content through detection as it arrives, on a blocking thread so that
    /// the runtime's threads stay free to read ahead and write, and renews the lease while it
    /// runs. `None` when the lease was lost meanwhile.
    async fn scan_body(
        &self,
        coordinator: &mut dyn Coordination,
        scope: &Scope<'_>,
        resource: &Resource,
        body: mpsc::Receiver<Piece>,
        written: Written,
    ) -> Result<Option<Outcome>, ScanError> {
        let detection = Detection {
            detector: scope.detector.clone(),
            written,
            file_name: resource.object_key.clone(),
            max_bytes: scope.max_bytes,
        };
        // Dropping the receiver's reader (the chunk ending early) ends the detection too.
        let mut running = tokio::task::spawn_blocking(move || detection.run(body));
        loop {
            tokio::select! {
                done = &mut running => {
                    // A detection that panicked fails its object, not the worker. The error's
                    // panic message may quote the object's text, so only its kind is logged
                    // (the panic hook logged where it happened).
                    return Ok(Some(done.unwrap_or_else(|e| {
                        tracing::error!(
                            scan = %scope.claim.scan,
                            resource = resource.idx,
                            error = if e.is_panic() { "panicked" } else { "cancelled" },
                            "detection failed on an object"
                        );
                        Outcome::Failed("internal".into())
                    })));
                }
                () = tokio::time::sleep(HEARTBEAT) => {
                    if coordinator.heartbeat(scope.claim).await? == Held::Lost {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

/// One object's detection, run off the async runtime.
struct Detection {
    detector: Arc<Detector>,
    written: Written,
    file_name: String,
    max_bytes: u64,
}

impl Detection {
    fn run(self, mut body: mpsc::Receiver<Piece>) -> Outcome {
        let mut stream = archive::detection(&self.detector, &self.file_name, PUSH_FINDINGS);
        let mut found: Vec<Finding> = Vec::new();
        let mut groups = Groups::default();
        // The first bytes say whether the object is an archive, whose members the reading
        // layer opens; anything else streams into detection as it comes.
        let mut head: Vec<u8> = Vec::new();
        let mut ended = false;
        while head.len() < extract::HEAD && !ended {
            match next_piece(&mut body) {
                Ok(Some(piece)) => head.extend_from_slice(&piece),
                Ok(None) => ended = true,
                Err(outcome) => return outcome,
            }
        }
        if head.len() as u64 > self.max_bytes {
            return Outcome::Skipped(record::SIZE_LIMIT.into());
        }
        if let Some(kind) = extract::container(&head) {
            let rest = || {
                if ended {
                    Ok(None)
                } else {
                    next_piece(&mut body).map_err(archive::Stop::Outcome)
                }
            };
            let file = match archive::spool(&head, self.max_bytes, rest) {
                Ok(file) => file,
                Err(archive::Stop::TooLarge) => return Outcome::Skipped(record::SIZE_LIMIT.into()),
                Err(archive::Stop::Outcome(outcome)) => return outcome,
            };
            return archive::scan(
                &self.detector,
                &self.written,
                &self.file_name,
                kind,
                file,
                PUSH,
                PUSH_FINDINGS,
            );
        }
        let mut read: u64 = 0;
        let mut first = Some(Bytes::from(head));
        loop {
            let piece = match first.take() {
                Some(head) => head,
                None if ended => break,
                None => match next_piece(&mut body) {
                    Ok(Some(piece)) => piece,
                    Ok(None) => break,
                    Err(outcome) => return outcome,
                },
            };
            read += piece.len() as u64;
            if read > self.max_bytes {
                return Outcome::Skipped(record::SIZE_LIMIT.into());
            }
            // Grouped after each step, so the values found are held one step at a time; a
            // step inflates at most PUSH bytes of gzip, whatever the piece.
            for step in piece.chunks(PUSH) {
                if let Err(reason) = stream.push(step, &mut found) {
                    return skip(reason);
                }
                found.drain(..).for_each(|f| groups.add(f, &self.written));
            }
        }
        if let Err(reason) = stream.finish(&mut found) {
            return skip(reason);
        }
        found.drain(..).for_each(|f| groups.add(f, &self.written));
        Outcome::scanned(groups.into_findings())
    }
}

/// The next piece of an object's content, `None` at its end, or the outcome its reader's
/// failure decides.
fn next_piece(body: &mut mpsc::Receiver<Piece>) -> Result<Option<Bytes>, Outcome> {
    match body.blocking_recv() {
        Some(Piece::Data(piece)) => Ok(Some(piece)),
        Some(Piece::End) => Ok(None),
        Some(Piece::Failed(failure)) => Err(Outcome::Failed(failure.as_str().into())),
        // The reader ended without saying why: it panicked or the chunk was given up, so the
        // object is not counted as scanned short.
        None => Err(Outcome::Failed(Failure::Provider.as_str().into())),
    }
}

/// Each bucket of a chunk, opened or not.
type Buckets = Vec<((ConnectorId, String), Result<Bucket, AccessError>)>;

/// What comes next for one resource: an outcome decided without reading it, or its content.
enum Next {
    Decided(Outcome),
    Body(mpsc::Receiver<Piece>),
}

/// One piece of an object's content as its reader hands it over.
enum Piece {
    Data(Bytes),
    End,
    Failed(Failure),
}

/// Reads a chunk's objects ahead of the one being scanned, so that the storage serves the
/// next requests while the worker runs detection and writes outcomes. At most `READ_AHEAD`
/// objects are in flight besides the current one (`READ_AHEAD_SMALL` while their sizes stay
/// under `READ_AHEAD_BYTES`), each holding at most `PIECES_AHEAD` pieces of content; dropping
/// this stops every read.
struct ReadAhead {
    waiting: std::vec::IntoIter<Resource>,
    started: VecDeque<(Resource, Next)>,
    /// The sizes of the started resources that are read.
    started_bytes: u64,
    buckets: Buckets,
    max_bytes: u64,
    readers: JoinSet<()>,
}

impl ReadAhead {
    fn new(resources: Vec<Resource>, buckets: Buckets, max_bytes: u64) -> Self {
        Self {
            waiting: resources.into_iter(),
            started: VecDeque::new(),
            started_bytes: 0,
            buckets,
            max_bytes,
            readers: JoinSet::new(),
        }
    }

    /// The next resource in order, with the reads behind it started.
    fn next(&mut self) -> Option<(Resource, Next)> {
        while self.readers.try_join_next().is_some() {}
        while let Some(size) = self
            .waiting
            .as_slice()
            .first()
            .map(|r| r.size.max(0) as u64)
        {
            let ahead = self.started.len();
            let small = ahead <= READ_AHEAD_SMALL && self.started_bytes + size <= READ_AHEAD_BYTES;
            if ahead > READ_AHEAD && !small {
                break;
            }
            let Some(resource) = self.waiting.next() else {
                break;
            };
            let next = self.start(&resource);
            self.started_bytes += Self::held(&resource, &next);
            self.started.push_back((resource, next));
        }
        let (resource, next) = self.started.pop_front()?;
        self.started_bytes -= Self::held(&resource, &next);
        Some((resource, next))
    }

    /// The bytes a started resource counts for: its size when it is read, none when decided.
    fn held(resource: &Resource, next: &Next) -> u64 {
        match next {
            Next::Body(_) => resource.size.max(0) as u64,
            Next::Decided(_) => 0,
        }
    }

    fn start(&mut self, resource: &Resource) -> Next {
        if resource.size as u64 > self.max_bytes {
            return Next::Decided(Outcome::Skipped(record::SIZE_LIMIT.into()));
        }
        if let Some(ext) = extension(&resource.object_key)
            && UNSUPPORTED.contains(&ext.as_str())
        {
            return Next::Decided(Outcome::Skipped("unsupported_format".into()));
        }
        let bucket = self
            .buckets
            .iter()
            .find(|((connector, bucket), _)| {
                *connector == resource.connector_id && *bucket == resource.bucket
            })
            .map(|(_, b)| b.clone());
        let bucket = match bucket {
            Some(Ok(bucket)) => bucket,
            Some(Err(e)) => return Next::Decided(Outcome::Failed(e.failure.as_str().into())),
            None => return Next::Decided(Outcome::Failed(Failure::Provider.as_str().into())),
        };
        let (sender, receiver) = mpsc::channel(PIECES_AHEAD);
        let key = resource.object_key.clone();
        let etag = resource.etag.clone();
        self.readers.spawn(async move {
            let mut body = match bucket.read(&key, etag.as_deref()).await {
                Ok(body) => body,
                Err(e) => {
                    let _ = sender.send(Piece::Failed(e.failure)).await;
                    return;
                }
            };
            while let Some(piece) = body.next().await {
                let piece = match piece {
                    Ok(data) => Piece::Data(data),
                    Err(e) => Piece::Failed(e.failure),
                };
                let last = matches!(piece, Piece::Failed(_));
                // A closed channel means the scan of this object ended early (skip, lost lease).
                if sender.send(piece).await.is_err() || last {
                    return;
                }
            }
            let _ = sender.send(Piece::End).await;
        });
        Next::Body(receiver)
    }
}

/// Objects a worker of this process scanned, skipped or failed; bytes it read; findings.
pub const OBJECTS_METRIC: &str = "dps_scan_objects_total";
pub const BYTES_METRIC: &str = "dps_scan_bytes_total";
pub const FINDINGS_METRIC: &str = "dps_scan_findings_total";

fn count(resource: &Resource, outcome: &Outcome) {
    let (label, findings) = match outcome {
        Outcome::Scanned {
            findings: found, ..
        } => ("scanned", record::values(found)),
        Outcome::Skipped(_) => ("skipped", 0),
        Outcome::Failed(_) => ("failed", 0),
    };
    metrics::counter!(OBJECTS_METRIC, "outcome" => label).increment(1);
    if label == "scanned" {
        metrics::counter!(BYTES_METRIC).increment(resource.size.max(0) as u64);
        metrics::counter!(FINDINGS_METRIC).increment(findings.max(0) as u64);
    }
}

fn skip(reason: detect::SkipReason) -> Outcome {
    match reason {
        detect::SkipReason::CorruptGzip => Outcome::Failed("parse".into()),
        // Not read to its end: a failure, which counts against coverage, never a skip.
        detect::SkipReason::TooManyFindings => Outcome::Failed(reason.as_str().into()),
        other => Outcome::Skipped(format!("binary:{}", other.as_str())),
    }
}

fn extension(key: &str) -> Option<String> {
    let name = key.rsplit('/').next()?;
    let (_, ext) = name.rsplit_once('.')?;
    Some(ext.to_ascii_lowercase())
}

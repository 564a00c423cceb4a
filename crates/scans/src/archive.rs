//! An archive among a scan's objects (ZIP, TAR, TAR.GZ): spooled to an anonymous temporary
//! file as it is read from storage, then walked member by member by the reading layer
//! (`extract`) under its limits. Detection reads each member as it reads an object, and the
//! member's findings join the object's, each sample location naming the member's path.

use std::io::{self, Read, Seek, Write};

use detect::{Detector, Hint, SkipReason};
use extract::{Column, Container, Limits, Sink, Skip};

use crate::group::{Groups, Written};
use crate::record::{Outcome, Unread};

/// Members of archives not read, by reason: a decompression bomb, a corrupt or encrypted
/// member, a binary file inside an archive.
pub const MEMBERS_SKIPPED_METRIC: &str = "dps_scan_archive_members_skipped_total";

/// Why an archive's spooling stopped before its end.
pub(crate) enum Stop {
    /// The object is larger than a scan reads.
    TooLarge,
    /// Its reader failed: the object fails with this outcome.
    Outcome(Outcome),
}

/// Writes `head` and every later piece `next` hands out to an anonymous temporary file, at
/// most `max_bytes` in all, and returns it rewound.
pub(crate) fn spool(
    head: &[u8],
    max_bytes: u64,
    mut next: impl FnMut() -> Result<Option<bytes::Bytes>, Stop>,
) -> Result<std::fs::File, Stop> {
    let spool_failed = |_| Stop::Outcome(Outcome::Failed("internal".into()));
    let mut file = tempfile::tempfile().map_err(spool_failed)?;
    file.write_all(head).map_err(spool_failed)?;
    let mut written = head.len() as u64;
    while let Some(piece) = next()? {
        written += piece.len() as u64;
        if written > max_bytes {
            return Err(Stop::TooLarge);
        }
        file.write_all(&piece).map_err(spool_failed)?;
    }
    file.rewind().map_err(spool_failed)?;
    Ok(file)
}

/// Reads every member of the archive in `file` with `detector`, grouping its values.
pub(crate) fn scan(
    detector: &Detector,
    written: &Written,
    name: &str,
    kind: Container,
    file: std::fs::File,
    push: usize,
    push_findings: usize,
) -> Outcome {
    let mut members = Members {
        detector,
        written,
        groups: Groups::default(),
        unread: Unread::new(),
        push,
        push_findings,
    };
    // The object's own name opens each path; its key is the finding's already.
    let name = name.rsplit('/').next().unwrap_or(name);
    match extract::walk(file, kind, name, Limits::default(), &mut members) {
        Ok(_) => Outcome::Scanned {
            findings: members.groups.into_findings(),
            unread: members.unread,
        },
        Err(skip) => {
            skipped(skip.as_str());
            Outcome::Skipped(skip.as_str().into())
        }
    }
}

fn skipped(reason: &str) {
    metrics::counter!(MEMBERS_SKIPPED_METRIC, "reason" => reason.to_owned()).increment(1);
}

struct Members<'a> {
    detector: &'a Detector,
    written: &'a Written,
    groups: Groups,
    unread: Unread,
    push: usize,
    push_findings: usize,
}

impl Sink for Members<'_> {
    fn member(&mut self, path: &[String], name: &str, content: &mut dyn Read) -> io::Result<()> {
        let mut stream = detection(self.detector, name, self.push_findings);
        let mut found = Vec::new();
        let mut buf = vec![0u8; self.push];
        // Values found before a read fails (a limit, a cut) stay the object's: they are there.
        loop {
            let n = match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let pushed = stream.push(&buf[..n], &mut found);
            for f in found.drain(..) {
                self.groups.add_in(f, self.written, path);
            }
            if let Err(reason) = pushed {
                self.unread(&detection_reason(reason));
                return Ok(());
            }
        }
        let finished = stream.finish(&mut found);
        for f in found.drain(..) {
            self.groups.add_in(f, self.written, path);
        }
        if let Err(reason) = finished {
            self.unread(&detection_reason(reason));
        }
        Ok(())
    }

    fn values(&mut self, path: &[String], column: &Column<'_>) {
        let names: Vec<&str> = column.names.iter().map(String::as_str).collect();
        let options = detect::Options {
            with_values: true,
            ..detect::Options::default()
        };
        for f in self
            .detector
            .scan_column(column.text, &names, column.rows, column.unit, &options)
        {
            self.groups.add_in(f, self.written, path);
        }
    }

    fn skipped(&mut self, _path: &[String], reason: Skip) {
        self.unread(reason.as_str());
    }
}

impl Members<'_> {
    /// A member not read, or not to its end: a limit, a corrupt or encrypted member, or one
    /// detection skips (a binary file, `binary:<kind>` as an object's would be).
    fn unread(&mut self, reason: &str) {
        skipped(reason);
        *self.unread.entry(reason.to_owned()).or_default() += 1;
    }
}

/// Detection as a scan runs it over an object or a member named `name`: with values, which
/// go no further than the grouping, and at most `push_findings` per push.
pub(crate) fn detection<'d>(
    detector: &'d Detector,
    name: &str,
    push_findings: usize,
) -> detect::Stream<'d> {
    let hint = Hint {
        content_type: None,
        file_name: Some(name),
    };
    let options = detect::Options {
        with_values: true,
        ..detect::Options::default()
    };
    detector
        .stream(hint, options)
        .with_findings_limit(push_findings)
}

/// Why detection left a member unread, in the words an object's outcome uses.
fn detection_reason(reason: SkipReason) -> String {
    match reason {
        SkipReason::CorruptGzip | SkipReason::TooManyFindings => reason.as_str().to_owned(),
        other => format!("binary:{}", other.as_str()),
    }
}

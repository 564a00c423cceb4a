//! A table file's values found again column by column, and rewritten in place: a Parquet or an
//! Avro object, or any rewriter of the reading layer that hands its values in runs as its
//! reader does, each run's rows numbering its lines.
//!
//! A finding in a Parquet file is one PII type in one column (its names joined by `.`). The
//! reading layer's rewrite (`extract::parquet_rewrite`) hands the wanted columns' values to
//! [`Values`] in runs, one value per line, as a scan sees them; detection runs on each run as
//! a scan runs it (`Detector::scan_column`, the column's names as context), and every value of
//! a wanted finding's type at or above its threshold, not a token the platform wrote there, is
//! kept. Twice: once to find them (and issue their tokens), once to write them, with the same
//! detector on the same bytes, so the second pass finds what the first did. Columns no finding
//! names are copied byte for byte; a changed column keeps its type and codec, or the request
//! fails and nothing is written (`extract::Refusal`).

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use detect::{Detector, Location, Options};
use extract::{Change, Column, Container, Editor, Limits, Refusal, avro_rewrite, parquet_rewrite};
use scans::group::Written;

use crate::content::{Found, Span, Unsupported, Wanted};

/// A reading layer's rewriter of one format: the file with an editor's changes, `None` when
/// it asks for none.
pub type Rewriter = fn(&[u8], &mut dyn Editor) -> Result<Option<Vec<u8>>, Refusal>;

/// The rewriter of the table file `bytes` is, if it is one that is rewritten in place.
pub fn rewriter(bytes: &[u8]) -> Option<Rewriter> {
    match extract::container(bytes)? {
        Container::Parquet => Some(|bytes, editor| {
            parquet_rewrite::rewrite(Bytes::copy_from_slice(bytes), Limits::default(), editor)
        }),
        Container::Avro => {
            Some(|bytes, editor| avro_rewrite::rewrite(bytes, Limits::default(), editor))
        }
        _ => None,
    }
}

/// The spans of the wanted values in the table file `bytes`, and how many wanted findings had
/// none (as [`crate::content::find`] answers for text).
pub fn find(
    rewriter: Rewriter,
    detector: &Detector,
    bytes: &[u8],
    wanted: &[Wanted],
    written: &Written,
) -> Result<Found, Unsupported> {
    let mut values = Values::new(detector, wanted, written, None);
    let asked = rewriter(bytes, &mut values);
    values.finish(asked)?;
    Ok(Found {
        missing: values.thresholds.len() - values.matched.len(),
        spans: values.spans,
    })
}

/// The table file `bytes` with each wanted value replaced by `replacement(span)`.
pub fn rewrite(
    rewriter: Rewriter,
    detector: &Detector,
    bytes: &[u8],
    wanted: &[Wanted],
    written: &Written,
    replacement: &dyn Fn(&Span) -> String,
) -> Result<Vec<u8>, Unsupported> {
    let mut values = Values::new(detector, wanted, written, Some(replacement));
    let out = rewriter(bytes, &mut values);
    let out = values.finish(out)?;
    // The first pass found values; the same detector on the same bytes finds them again.
    out.ok_or(Unsupported::Table)
}

/// Detection over a run of a column's values, keeping the wanted ones.
struct Values<'a> {
    detector: &'a Detector,
    /// Each (type, field) wanted, with the lowest confidence acted on.
    thresholds: HashMap<(String, String), f32>,
    fields: HashSet<String>,
    written: &'a Written,
    /// `None` to find the values, `Some` to replace them.
    replacement: Option<&'a dyn Fn(&Span) -> String>,
    spans: Vec<Span>,
    matched: HashSet<(String, String)>,
    /// Two values of one cell that overlap without one holding the other.
    overlapping: bool,
}

impl<'a> Values<'a> {
    fn new(
        detector: &'a Detector,
        wanted: &[Wanted],
        written: &'a Written,
        replacement: Option<&'a dyn Fn(&Span) -> String>,
    ) -> Self {
        let mut thresholds: HashMap<(String, String), f32> = HashMap::new();
        for w in wanted {
            thresholds
                .entry((w.pii_type.clone(), w.field.clone()))
                .and_modify(|min| *min = min.min(w.min_confidence))
                .or_insert(w.min_confidence);
        }
        let fields = thresholds.keys().map(|(_, field)| field.clone()).collect();
        Self {
            detector,
            thresholds,
            fields,
            written,
            replacement,
            spans: Vec::new(),
            matched: HashSet::new(),
            overlapping: false,
        }
    }

    /// The spans found, or why the file cannot be rewritten, given how the rewrite ended.
    fn finish<T>(&mut self, ended: Result<T, Refusal>) -> Result<T, Unsupported> {
        if self.overlapping {
            return Err(Unsupported::Overlapping);
        }
        ended.map_err(|refusal| match refusal {
            Refusal::ColumnType => Unsupported::ColumnType,
            Refusal::Unreadable | Refusal::Write => Unsupported::Table,
        })
    }
}

impl Editor for Values<'_> {
    fn wants(&self, field: &str) -> bool {
        self.fields.contains(field)
    }

    fn edit(&mut self, column: &Column<'_>) -> Vec<Change> {
        let names: Vec<&str> = column.names.iter().map(String::as_str).collect();
        let options = Options {
            with_values: true,
            ..Options::default()
        };
        let findings =
            self.detector
                .scan_column(column.text, &names, column.rows, column.unit, &options);
        // Each cell's values, longest first where two start together.
        let mut kept: Vec<(u64, Span)> = Vec::new();
        for finding in &findings {
            let Some(line) = line_of(&finding.location) else {
                continue;
            };
            let field = finding.location.field();
            let key = (finding.pii_type.as_str().to_owned(), field);
            let Some(&min) = self.thresholds.get(&key) else {
                continue;
            };
            if finding.confidence < min || self.written.holds(finding) {
                continue;
            }
            let Some(value) = finding.value.as_deref() else {
                continue;
            };
            let lead = value.len() - value.trim_start().len();
            let trimmed = value.trim();
            if trimmed.is_empty() {
                continue;
            }
            let start = finding.start + lead;
            kept.push((
                line,
                Span {
                    start,
                    end: start + trimmed.len(),
                    pii_type: key.0.clone(),
                    value: trimmed.to_owned(),
                    quote: false,
                },
            ));
            self.matched.insert(key);
        }
        kept.sort_by_key(|(line, s)| (*line, s.start, std::cmp::Reverse(s.end)));
        let mut changes: Vec<Change> = Vec::new();
        let mut last: Option<(u64, usize)> = None;
        for (line, span) in kept {
            match last {
                Some((l, end)) if l == line && span.end <= end => continue,
                Some((l, end)) if l == line && span.start < end => {
                    self.overlapping = true;
                    continue;
                }
                _ => {}
            }
            last = Some((line, span.end));
            if let Some(replacement) = self.replacement {
                changes.push(Change {
                    line,
                    start: span.start,
                    end: span.end,
                    text: replacement(&span),
                });
            }
            self.spans.push(span);
        }
        changes
    }
}

/// The line of a run a finding is on: the rewriter numbers a run's lines as its rows, so the
/// row (record, paragraph, line, or a cell's row) of a location is its line.
fn line_of(location: &Location) -> Option<u64> {
    match location {
        Location::Column { row, .. } => Some(*row),
        Location::Record { record, .. } => Some(*record),
        Location::Paragraph { paragraph, .. } | Location::Slide { paragraph, .. } => {
            Some(*paragraph)
        }
        Location::Page { line, .. } => Some(*line),
        Location::Cell { cell, .. } => cell
            .trim_start_matches(|c: char| c.is_ascii_uppercase())
            .parse()
            .ok(),
        Location::Line { .. } | Location::Csv { .. } | Location::Json { .. } => None,
    }
}

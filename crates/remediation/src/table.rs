//! A table file's, a workbook's or a document's values found again as a scan read them, and
//! rewritten in place through the reading layer's rewrite (`extract::rewrite`), which hands its
//! values in runs as its reader does, each run's rows numbering its lines: a Parquet file's
//! columns, an Avro file's fields block by block, a workbook's sheets column by column, a Word
//! document's parts paragraph by paragraph.
//!
//! A finding in one of them is one PII type in one field: a Parquet column (its names joined
//! by `.`), an Avro field (its path), a sheet's column (its header, or its letters without one), or a document's text
//! (no field). The rewrite hands the wanted fields' values to [`Values`] in runs, one value per
//! line, as a scan sees them; detection runs on each run as a scan runs it
//! (`Detector::scan_column`, the column's names as context), and every value of a wanted
//! finding's type at or above its threshold, not a token the platform wrote there, is kept.
//! Twice: once to find them (and issue their tokens), once to write them, with the same
//! detector on the same bytes, so the second pass finds what the first did. What no finding
//! names is copied byte for byte; a changed value keeps its column's type, its cell's style,
//! its paragraph's runs, or the request fails and nothing is written (`extract::Refusal`).

use std::collections::{HashMap, HashSet};

use detect::{Detector, Location, Options};
use extract::{Change, Column, Editor, Limits, Refusal, Rewritable};
use scans::group::Written;

use crate::content::{Found, Span, Unsupported, Wanted};

/// The spans of the wanted values in `bytes`, a file of `kind`, and how many wanted findings
/// had none (as [`crate::content::find`] answers for text).
pub fn find(
    kind: Rewritable,
    detector: &Detector,
    bytes: &[u8],
    wanted: &[Wanted],
    written: &Written,
) -> Result<Found, Unsupported> {
    let mut values = Values::new(detector, wanted, written, None);
    let asked = extract::rewrite(kind, bytes, Limits::default(), &mut values);
    values.finish(kind, asked)?;
    Ok(Found {
        missing: values.thresholds.len() - values.matched.len(),
        spans: values.spans,
    })
}

/// `bytes`, a file of `kind`, with each wanted value replaced by `replacement(span)`.
pub fn rewrite(
    kind: Rewritable,
    detector: &Detector,
    bytes: &[u8],
    wanted: &[Wanted],
    written: &Written,
    replacement: &dyn Fn(&Span) -> String,
) -> Result<Vec<u8>, Unsupported> {
    let mut values = Values::new(detector, wanted, written, Some(replacement));
    let out = extract::rewrite(kind, bytes, Limits::default(), &mut values);
    let out = values.finish(kind, out)?;
    // The first pass found values; the same detector on the same bytes finds them again.
    out.ok_or_else(|| unreadable(kind))
}

/// Why a file of `kind` that cannot be read, or written again as it is, is not rewritten.
fn unreadable(kind: Rewritable) -> Unsupported {
    match kind {
        Rewritable::Parquet | Rewritable::Avro => Unsupported::Table,
        Rewritable::Workbook | Rewritable::Document => Unsupported::Document,
    }
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
    fn finish<T>(&mut self, kind: Rewritable, ended: Result<T, Refusal>) -> Result<T, Unsupported> {
        if self.overlapping {
            return Err(Unsupported::Overlapping);
        }
        ended.map_err(|refusal| match refusal {
            Refusal::ColumnType => Unsupported::ColumnType,
            Refusal::Formula => Unsupported::Formula,
            Refusal::Markup => Unsupported::Markup,
            Refusal::Unreadable | Refusal::Write => unreadable(kind),
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

#[cfg(test)]
mod tests {
    use super::*;

    const PAYROLL: &[u8] = include_bytes!("../../../tests/fixtures/formats/payroll.xlsx");
    const CHECKS: &[u8] = include_bytes!("../../../tests/fixtures/formats/checks.xlsx");
    const CASE: &[u8] = include_bytes!("../../../tests/fixtures/formats/case_summary.docx");

    fn wanted(pii_type: &str, field: &str) -> Wanted {
        Wanted {
            pii_type: pii_type.into(),
            field: field.into(),
            min_confidence: 0.5,
        }
    }

    /// The values found of `wanted` in `bytes`, and how many wanted findings had none.
    fn found(kind: Rewritable, bytes: &[u8], wanted: &[Wanted]) -> (Vec<String>, usize) {
        let found = find(kind, &Detector::new(), bytes, wanted, &Written::default()).unwrap();
        (
            found.spans.into_iter().map(|s| s.value).collect(),
            found.missing,
        )
    }

    fn masked(kind: Rewritable, bytes: &[u8], wanted: &[Wanted]) -> Result<Vec<u8>, Unsupported> {
        let mask = |s: &Span| crate::content::mask(&s.value, 4, '*');
        rewrite(
            kind,
            &Detector::new(),
            bytes,
            wanted,
            &Written::default(),
            &mask,
        )
    }

    #[test]
    fn a_workbooks_values_are_found_by_their_columns_and_masked_only_there() {
        let kind = Rewritable::Workbook;
        assert_eq!(extract::rewritable(PAYROLL), Some(kind));
        // The scan's fields: a header, or a sheet's column letters without one.
        let (ssns, missing) = found(kind, PAYROLL, &[wanted("us_ssn", "SSN")]);
        assert_eq!((ssns.len(), missing), (40, 0));
        assert_eq!(ssns[0], "536-22-4800");
        let (export, _) = found(kind, PAYROLL, &[wanted("us_ssn", "A")]);
        assert_eq!(export.len(), 10);
        let (numbers, _) = found(kind, PAYROLL, &[wanted("us_ssn", "employee_ssn")]);
        assert_eq!(numbers.len(), 12);

        let out = masked(kind, PAYROLL, &[wanted("us_ssn", "SSN")]).unwrap();
        assert_eq!(found(kind, &out, &[wanted("us_ssn", "SSN")]), (vec![], 1));
        let (export, missing) = found(kind, &out, &[wanted("us_ssn", "A")]);
        assert_eq!(
            (export.len(), missing),
            (10, 0),
            "another column keeps its values"
        );
    }

    #[test]
    fn a_change_a_cell_cannot_hold_fails_with_its_reason() {
        let kind = Rewritable::Workbook;
        assert_eq!(
            masked(kind, PAYROLL, &[wanted("us_ssn", "employee_ssn")]),
            Err(Unsupported::ColumnType)
        );
        let (checks, _) = found(kind, CHECKS, &[wanted("us_ssn", "Check")]);
        assert_eq!(checks, ["536-22-4995"]);
        assert_eq!(
            masked(kind, CHECKS, &[wanted("us_ssn", "Check")]),
            Err(Unsupported::Formula)
        );
    }

    #[test]
    fn a_documents_values_are_found_in_its_paragraphs_and_masked_in_their_runs() {
        let kind = Rewritable::Document;
        assert_eq!(extract::rewritable(CASE), Some(kind));
        let (ssns, missing) = found(kind, CASE, &[wanted("us_ssn", "")]);
        assert_eq!(ssns, ["536-22-4871", "536-22-4872", "536-22-4873"]);
        assert_eq!(missing, 0);
        let out = masked(kind, CASE, &[wanted("us_ssn", "")]).unwrap();
        assert_eq!(found(kind, &out, &[wanted("us_ssn", "")]), (vec![], 1));
        let (emails, _) = found(kind, &out, &[wanted("email", "")]);
        assert_eq!(emails.len(), 4, "the emails are not the request's");
        // A document cut short is never rewritten.
        let mut cut = CASE.to_vec();
        cut.truncate(CASE.len() - 100);
        assert_eq!(
            find(
                kind,
                &Detector::new(),
                &cut,
                &[wanted("us_ssn", "")],
                &Written::default()
            )
            .map(|f| f.spans.len()),
            Err(Unsupported::Document)
        );
    }
}

//! The detector and its one pass over the text: the scanner stops only at digits and `@`, runs
//! the recognizers from each anchor, scores what they find and tracks where it is; custom
//! classifiers' automaton advances in the same loop. The byte and streaming entry points
//! (`scan_bytes`, `stream`) are in [`stream`](crate::stream), which builds on this module.

use std::borrow::Cow;

use tokenize_core::normalize::{NormalizeOptions, Region};

use crate::content::Format;
use crate::context::{Context, Labels};
use crate::custom::Classifiers;
use crate::markup::Markup;
use crate::recognize::Recognizers;
use crate::score::{self, CONTEXT_BOOST, Scope};
use crate::structure::Tracker;
use crate::types::{Evidence, Finding, Location, MAX_FIELD, Options, TableUnit, Window};

/// The detection engine. Build it once and share it: it holds the keyword automaton and the
/// compiled custom classifiers.
#[derive(Debug, Default)]
pub struct Detector {
    context: Context,
    custom: Option<Classifiers>,
    /// How numbers without a country code are read (the tenant policy's default region).
    normalize: NormalizeOptions,
}

impl Detector {
    pub fn new() -> Self {
        Self::default()
    }

    /// A detector that also runs a tenant's classifiers, in the same scan.
    pub fn with_classifiers(classifiers: Classifiers) -> Self {
        Self {
            custom: (!classifiers.is_empty()).then_some(classifiers),
            ..Self::default()
        }
    }

    /// Reads phone numbers without `+` as numbers of `region` (US by default), as the tenant's
    /// tokenization policy does.
    pub fn with_phone_region(mut self, region: Region) -> Self {
        self.normalize.default_region = region;
        self
    }

    /// Every finding at or above `min_confidence` in plain text, in order.
    pub fn scan(&self, text: &str, min_confidence: f32) -> Vec<Finding> {
        let options = Options {
            min_confidence,
            with_values: false,
        };
        self.scan_text(text, Format::Text, &options)
    }

    /// Every finding in decoded text of a known format, in order. XML and HTML
    /// ([`Format::Markup`]) are read with their markup blanked, at the same offsets.
    pub fn scan_text(&self, text: &str, format: Format, options: &Options) -> Vec<Finding> {
        if format == Format::Markup {
            let mut stripped = String::with_capacity(text.len());
            Markup::new().push_stripped(text, &mut stripped);
            return self.scan_whole(&stripped, Tracker::new(format), options);
        }
        self.scan_whole(text, Tracker::new(format), options)
    }

    /// Every finding in one field's value, handed over whole with the names of its field from
    /// the outermost in: a Parquet or Avro column path (`["customer", "ssn"]`), a spreadsheet
    /// column's header, a key path. The names speak for the value as a CSV header or JSON key
    /// does, and the value's own text is its only other context. Locations are lines and
    /// columns within the value: the caller, which knows the row and the column, puts its own.
    pub fn scan_field(&self, text: &str, path: &[&str], options: &Options) -> Vec<Finding> {
        self.scan_whole(text, Tracker::field(path), options)
    }

    /// Every finding in values of one table column, one value per line (a value holds no
    /// line break), the column named from the outermost name in as [`Self::scan_field`] names
    /// a field: a Parquet column's values, a run of them at a time. Each line is a field of its
    /// own, as a CSV cell is, and is on the file's row (or record) `rows[line - 1]`.
    /// Locations are [`Location::Column`] (or [`Location::Record`]), and a finding's offsets
    /// are within its value.
    pub fn scan_column(
        &self,
        text: &str,
        path: &[&str],
        rows: &[u64],
        unit: TableUnit<'_>,
        options: &Options,
    ) -> Vec<Finding> {
        let mut findings = self.scan_whole(text, Tracker::column(path), options);
        let column: String = path.join(".").chars().take(MAX_FIELD).collect();
        for finding in &mut findings {
            if let Location::Line { line, column: at } = finding.location {
                let length = finding.end - finding.start;
                finding.start = at - 1;
                finding.end = finding.start + length;
                let row = rows.get(line - 1).copied().unwrap_or_default();
                finding.location = match unit {
                    TableUnit::Row => Location::Column {
                        column: column.clone(),
                        row,
                    },
                    TableUnit::Record => Location::Record {
                        field: column.clone(),
                        record: row,
                    },
                    TableUnit::Paragraph { part } => Location::Paragraph {
                        part: part.chars().take(MAX_FIELD).collect(),
                        paragraph: row,
                    },
                    TableUnit::Slide { slide } => Location::Slide {
                        slide,
                        paragraph: row,
                    },
                    TableUnit::Page { page } => Location::Page { page, line: row },
                    TableUnit::Cell { sheet, column: at } => Location::Cell {
                        sheet: sheet.chars().take(MAX_FIELD).collect(),
                        cell: format!("{}{row}", crate::types::column_letters(at)),
                        header: (!column.is_empty()).then(|| column.clone()),
                    },
                };
            }
        }
        findings
    }

    /// Every finding in `text`, one window for all of it.
    fn scan_whole(&self, text: &str, mut tracker: Tracker, options: &Options) -> Vec<Finding> {
        let mut findings = Vec::new();
        let window = Window {
            text,
            base: 0,
            report_from: 0,
            report_until: usize::MAX,
            custom_from: 0,
        };
        self.scan_window(&window, options, &mut tracker, &mut findings);
        findings
    }

    /// Scans one window, feeding `tracker` the text up to each reported finding. Returns where
    /// custom classifiers resume in the next window.
    pub(crate) fn scan_window(
        &self,
        window: &Window<'_>,
        options: &Options,
        tracker: &mut Tracker,
        findings: &mut Vec<Finding>,
    ) -> usize {
        let text = window.text;
        let bytes = text.as_bytes();
        let base = window.base;
        let advance = |tracker: &mut Tracker, to: usize| {
            let from = tracker.position();
            if to > from && from >= base {
                tracker.feed(&bytes[from - base..to - base]);
            }
        };
        // Custom classifiers' matches, merged in as the anchors pass them.
        let mut custom_from = window.custom_from.saturating_sub(base);
        let mut custom_next = self
            .custom
            .as_ref()
            .and_then(|c| c.next_match(text, custom_from));
        let recognizers = Recognizers {
            normalize: &self.normalize,
        };
        let mut labels = Labels::default();
        let mut i = 0;
        loop {
            i = next_anchor(bytes, i);
            while let Some((classifier, start, end)) = custom_next
                && start <= i
            {
                if base + start < window.report_until {
                    custom_from = end;
                    if base + start >= window.report_from {
                        self.custom_finding(
                            window, options, tracker, classifier, start, end, findings,
                        );
                    }
                }
                custom_next = self
                    .custom
                    .as_ref()
                    .and_then(|c| c.next_match(text, end.max(start + 1)));
            }
            let Some(&b) = bytes.get(i) else { break };
            let (candidates, sequence_end) = if b == b'@' {
                (recognizers.email_at(text, i), i + 1)
            } else if i == 0 || !bytes[i - 1].is_ascii_digit() {
                recognizers.number_at(text, i)
            } else {
                i += 1;
                continue;
            };
            let mut next = i + 1;
            if b != b'@' {
                // Past the rest of this run of digits: it was looked at as a whole.
                while next < bytes.len() && bytes[next].is_ascii_digit() {
                    next += 1;
                }
                // A sequence that is nothing as a whole is not restarted from its middle:
                // "9400 0152 9235 9197 6780 12" holds no phone number.
                if candidates.is_empty() {
                    next = next.max(sequence_end);
                }
            }
            let Some(first) = candidates.iter().map(|c| base + c.start).min() else {
                i = next;
                continue;
            };
            if first >= window.report_until {
                i = next;
                continue;
            }
            let fresh = first >= window.report_from;
            // In CSV and JSON the value's field is its context: the text of its own cell or
            // string, and the names of its field (a header; a key and its parents' keys).
            let field = if tracker.labels() {
                if fresh {
                    advance(tracker, first);
                }
                tracker.field_at(first)
            } else {
                None
            };
            let named = match field {
                Some(_) => labels.named(&self.context, tracker.names()),
                None => None,
            };
            let scope = field.map(|field| Scope { field, named });
            if let Some(mut best) = score::best(&self.context, text, base, candidates, scope) {
                next = next.max(best.end);
                if fresh && best.confidence >= options.min_confidence {
                    advance(tracker, base + best.start);
                    best.location = tracker.location(base + best.start);
                    if options.with_values {
                        best.value = Some(text[best.start..best.end].to_owned());
                    } else {
                        best.normalized = None;
                    }
                    best.start += base;
                    best.end += base;
                    findings.push(best);
                }
            }
            i = next;
        }
        base + custom_from
    }

    /// Scores and reports one custom classifier match.
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site, all of it the scan's state"
    )]
    fn custom_finding(
        &self,
        window: &Window<'_>,
        options: &Options,
        tracker: &mut Tracker,
        classifier: usize,
        start: usize,
        end: usize,
        findings: &mut Vec<Finding>,
    ) {
        let Some(custom) = &self.custom else { return };
        let text = window.text;
        let at = window.base + start;
        // The header or key is context, so the tracker comes up to the match first.
        let from = tracker.position();
        if at > from && from >= window.base {
            tracker.feed(&text.as_bytes()[from - window.base..start]);
        }
        let label = tracker.label();
        let Some(scored) = custom.score(text, classifier, start, end, label, CONTEXT_BOOST) else {
            return;
        };
        if scored.confidence < options.min_confidence {
            return;
        }
        let context = scored.context;
        findings.push(Finding {
            pii_type: scored.name,
            category: scored.category,
            start: at,
            end: window.base + end,
            confidence: scored.confidence,
            location: tracker.location(at),
            evidence: Evidence {
                pattern: Cow::Borrowed("custom"),
                validator: scored.validator,
                context,
            },
            value: options
                .with_values
                .then(|| text[scored.start..scored.end].to_owned()),
            normalized: None,
        })
    }
}

/// The position of the next digit or `@` at or after `from`, or the end. Eight bytes at a time
/// are tested with word arithmetic (SWAR): no branch per byte, and the first anchor in a word
/// is found from its bit mask without a second look at its bytes.
pub(crate) fn next_anchor(bytes: &[u8], mut from: usize) -> usize {
    while let Some(word) = bytes.get(from..from + 8) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let mask = anchor_mask(u64::from_le_bytes(eight));
        if mask != 0 {
            return from + (mask.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    while from < bytes.len() && !(bytes[from].is_ascii_digit() || bytes[from] == b'@') {
        from += 1;
    }
    from
}

/// The high bit of each byte of `word` that is an ASCII digit or `@`. Bytes are first cut to
/// seven bits so that no sum carries into the next byte; bytes of 0x80 and above (UTF-8) are
/// never anchors.
fn anchor_mask(word: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let ascii = !word & HIGH;
    let low = word & LOW7;
    // low + (0x80 - c) reaches the high bit exactly when low >= c.
    let at_least_0 = (low + 0x5050_5050_5050_5050) & HIGH;
    let past_9 = (low + 0x4646_4646_4646_4646) & HIGH;
    let digit = at_least_0 & !past_9;
    // A byte equal to `@` is zero after the xor; only zero stays below the high bit plus 0x7f.
    let xored = low ^ 0x4040_4040_4040_4040;
    let at = !((xored + LOW7) | xored) & HIGH;
    (digit | at) & ascii
}

#![doc = include_str!("../README.md")]

mod content;
mod context;
mod custom;
mod selector;
mod stream;
mod structure;

use std::borrow::Cow;
use std::sync::Arc;

use tokenize_core::normalize::{
    NormalizeOptions, Region, days_in_month, is_date, is_month_name, sin_is_issuable,
    ssn_is_issuable,
};
use tokenize_core::{Category, PiiType, normalize};

pub use content::{Encoding, Format, Hint, SkipReason};
pub use context::{Context, Hits};
pub use custom::{
    ClassifierError, ClassifierSpec, Classifiers, DEFAULT_CONFIDENCE, DEFAULT_MATCH_DISTANCE,
    MAX_CLASSIFIERS, Validator,
};
pub use selector::Selector;
pub use stream::{Report, Stream};
use structure::Tracker;

/// What a recognizer looks for. Passports share one kind: the shape decides US or Canadian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    UsSsn,
    CaSin,
    Email,
    Phone,
    Date,
    Dob,
    Monetary,
    CaseNumber,
    Passport,
}

/// Where a finding is, in terms a person can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// 1-based line and column (in bytes) of plain text.
    Line { line: usize, column: usize },
    /// CSV or TSV: the 1-based data row (the header row is not counted), the 1-based column
    /// and that column's header.
    Csv {
        row: usize,
        column: usize,
        header: Option<String>,
    },
    /// JSON or NDJSON: the 1-based line the value is on and its JSONPath.
    Json { line: usize, path: String },
}

/// Why a finding was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// The shape that matched, for example `ssn_grouped`, or `custom` for a tenant's classifier.
    pub pattern: Cow<'static, str>,
    /// The check the value passed, for example `ssa_rules` or `luhn`.
    pub validator: Option<&'static str>,
    /// Context words found near it, a CSV header's or JSON key's included.
    pub context: Vec<Cow<'static, str>>,
}

/// What a finding is: one of the spec's PII types, or a tenant's custom classifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FindingType {
    Pii(PiiType),
    /// `custom:` and the classifier's name.
    Custom(Arc<str>),
}

impl FindingType {
    pub(crate) fn custom(name: &str) -> Self {
        FindingType::Custom(Arc::from(format!("custom:{name}")))
    }

    /// `us_ssn`, or `custom:<name>` for a custom classifier.
    pub fn as_str(&self) -> &str {
        match self {
            FindingType::Pii(t) => t.as_str(),
            FindingType::Custom(code) => code,
        }
    }

    /// The spec's PII type, unless this is a custom classifier's finding.
    pub fn pii(&self) -> Option<PiiType> {
        match self {
            FindingType::Pii(t) => Some(*t),
            FindingType::Custom(_) => None,
        }
    }
}

impl PartialEq<PiiType> for FindingType {
    fn eq(&self, other: &PiiType) -> bool {
        self.pii() == Some(*other)
    }
}

impl From<PiiType> for FindingType {
    fn from(t: PiiType) -> Self {
        FindingType::Pii(t)
    }
}

/// One piece of PII found in content. It holds offsets, never the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub pii_type: FindingType,
    pub category: Category,
    /// Byte offsets into the scanned text.
    pub start: usize,
    pub end: usize,
    pub confidence: f32,
    pub location: Location,
    pub evidence: Evidence,
    /// The matched text, only when [`Options::with_values`] asks for it (the tokenize and mask
    /// actions need it; reports and logs must not have it).
    pub value: Option<String>,
    /// The value's canonical form as `tokenize_core::normalize` gives it, when
    /// [`Options::with_values`] asks for values and validation already computed it (phone
    /// numbers, whose parse is the costly one), so callers need not parse them again.
    pub normalized: Option<String>,
}

/// How a scan reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Findings below this confidence are dropped.
    pub min_confidence: f32,
    /// Whether findings carry the matched text.
    pub with_values: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            min_confidence: DEFAULT_MIN_CONFIDENCE,
            with_values: false,
        }
    }
}

/// Decoded text to scan. `text` starts at absolute offset `base`; only findings starting in
/// `report_from..report_until` are reported, the rest being another window's.
pub(crate) struct Window<'t> {
    pub text: &'t str,
    pub base: usize,
    pub report_from: usize,
    pub report_until: usize,
    /// Where custom classifiers resume matching: past the last match an earlier window owned.
    pub custom_from: usize,
}

/// The longest local part and domain of an email address.
const MAX_EMAIL_LOCAL: usize = 64;
const MAX_EMAIL_DOMAIN: usize = 255;

/// How far a candidate may reach before its anchor (an email's local part) or after it, in
/// bytes, context windows included. Streaming windows overlap by this much on each side.
pub(crate) const MAX_REACH: usize = 512;

/// Findings below this confidence are not reported unless the caller lowers it.
pub const DEFAULT_MIN_CONFIDENCE: f32 = 0.5;

/// What a context word in favour adds, and what a word against takes away.
const CONTEXT_BOOST: f32 = 0.35;
const CONTEXT_PENALTY: f32 = 0.4;

/// The detection engine. Build it once and share it: it holds the keyword automaton and the
/// compiled custom classifiers.
#[derive(Debug, Default)]
pub struct Detector {
    context: Context,
    custom: Option<Classifiers>,
    /// How numbers without a country code are read (the tenant policy's default region).
    normalize: NormalizeOptions,
}

/// A candidate before scoring.
struct Candidate {
    kind: Kind,
    pii_type: PiiType,
    start: usize,
    end: usize,
    base: f32,
    pattern: &'static str,
    validator: Option<&'static str>,
    /// The canonical form of the value, when validating it produced one (phone numbers).
    normalized: Option<String>,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
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

    /// Every finding in decoded text of a known format, in order.
    pub fn scan_text(&self, text: &str, format: Format, options: &Options) -> Vec<Finding> {
        let mut findings = Vec::new();
        let window = Window {
            text,
            base: 0,
            report_from: 0,
            report_until: usize::MAX,
            custom_from: 0,
        };
        self.scan_window(&window, options, &mut Tracker::new(format), &mut findings);
        findings
    }

    /// Every finding in a file's bytes: gzip is inflated, the encoding and format are sniffed
    /// (the hint helps), binary content is skipped with the reason.
    pub fn scan_bytes(
        &self,
        bytes: &[u8],
        hint: Hint<'_>,
        options: &Options,
    ) -> Result<Report, SkipReason> {
        let mut stream = self.stream(hint, *options);
        let mut findings = Vec::new();
        stream.push(bytes, &mut findings)?;
        let mut report = stream.finish(&mut findings)?;
        report.findings = findings;
        Ok(report)
    }

    /// A scan of content that arrives in pieces, in bounded memory.
    pub fn stream(&self, hint: Hint<'_>, options: Options) -> Stream<'_> {
        Stream::new(self, hint, options)
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
                (self.email_at(text, i), i + 1)
            } else if i == 0 || !bytes[i - 1].is_ascii_digit() {
                self.number_at(text, i)
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
            // A CSV header or JSON key names the value: it is context too.
            let label = if tracker.labels() {
                if fresh {
                    advance(tracker, first);
                }
                Some(
                    tracker
                        .label()
                        .map_or_else(Hits::default, |label| self.context.label_hits(label)),
                )
            } else {
                None
            };
            if let Some(mut best) = self.best(text, candidates, label) {
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

    /// Scores candidates with their context and keeps the most confident one.
    fn best(&self, text: &str, candidates: Vec<Candidate>, label: Option<Hits>) -> Option<Finding> {
        let start = candidates.iter().map(|c| c.start).min()?;
        let end = candidates.iter().map(|c| c.end).max()?;
        let mut from = start.saturating_sub(context::BEFORE);
        if label.is_some() {
            // Structured content. In a CSV row or a JSON line the header or key speaks for the value; earlier lines
            // (the header row itself, other records) are not its context.
            if let Some(newline) = memchr::memrchr(b'\n', &text.as_bytes()[from..start]) {
                from += newline + 1;
            }
        }
        let before = window(text, from, start);
        let after = window(text, end, (end + context::AFTER).min(text.len()));
        let mut hits = self.context.hits(before, after);
        if let Some(label) = label {
            hits.merge(label);
        }
        let against = hits.against();
        let (confidence, pii_type, winner) = candidates
            .iter()
            .map(|c| {
                let mut confidence = c.base;
                if hits.supports(c.kind) {
                    confidence += CONTEXT_BOOST;
                }
                // Words against say a number is something else (an order, a version); an
                // email address is one whatever is near it.
                if against && c.kind != Kind::Email {
                    confidence -= CONTEXT_PENALTY;
                }
                // A date next to birth words is a date of birth.
                let pii_type = if c.kind == Kind::Date && hits.supports(Kind::Dob) {
                    confidence += CONTEXT_BOOST;
                    PiiType::Dob
                } else {
                    c.pii_type
                };
                (confidence.clamp(0.0, 1.0), pii_type, c)
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))?;
        Some(Finding {
            pii_type: FindingType::Pii(pii_type),
            category: pii_type.category(),
            start: winner.start,
            end: winner.end,
            confidence,
            location: Location::Line { line: 0, column: 0 },
            evidence: Evidence {
                pattern: Cow::Borrowed(winner.pattern),
                validator: winner.validator,
                context: hits.words.into_iter().map(Cow::Borrowed).collect(),
            },
            value: None,
            normalized: winner.normalized.clone(),
        })
    }

    fn email_at(&self, text: &str, at: usize) -> Vec<Candidate> {
        let bytes = text.as_bytes();
        let local = |b: u8| b.is_ascii_alphanumeric() || b"._%+-'".contains(&b);
        let domain = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
        // RFC 5321 limits: 64 bytes of local part, 255 of domain.
        let mut start = at;
        while start > 0 && at - start < MAX_EMAIL_LOCAL && local(bytes[start - 1]) {
            start -= 1;
        }
        if start > 0 && local(bytes[start - 1]) {
            return Vec::new();
        }
        let mut end = at + 1;
        while end < bytes.len() && end - at <= MAX_EMAIL_DOMAIN && domain(bytes[end]) {
            end += 1;
        }
        while end > at + 1 && bytes[end - 1] == b'.' {
            end -= 1;
        }
        while start < at && bytes[start] == b'.' {
            start += 1;
        }
        if start == at || end == at + 1 {
            return Vec::new();
        }
        let candidate = &text[start..end];
        if normalize(PiiType::Email, candidate, &NormalizeOptions::default()).is_err() {
            return Vec::new();
        }
        vec![Candidate {
            kind: Kind::Email,
            pii_type: PiiType::Email,
            start,
            end,
            base: 0.9,
            pattern: "email",
            validator: Some("email_syntax"),
            normalized: None,
        }]
    }

    /// Candidates anchored at the first digit of a number, and where the whole numeric sequence
    /// ends (to skip it when it is nothing).
    fn number_at(&self, text: &str, first: usize) -> (Vec<Candidate>, usize) {
        let bytes = text.as_bytes();
        // The numeric span: digits, with one separator (or ") " / " (") between digit groups.
        let is_sep = |b: u8| matches!(b, b'-' | b'.' | b',' | b' ' | b'/' | b'(' | b')');
        let mut end = first;
        let mut digits = 0usize;
        // Where the span could end instead, before each space between groups, with the digit
        // count there: "415 555 0132 212 555 0199" is two phone numbers, not one long number.
        let mut cuts = [(0usize, 0usize); 8];
        let mut cut_count = 0;
        while end < bytes.len() {
            if bytes[end].is_ascii_digit() {
                digits += 1;
                end += 1;
                if digits > 16 {
                    let Some(&(cut, cut_digits)) = cuts[..cut_count].last() else {
                        return (Vec::new(), sequence_end(bytes, first));
                    };
                    // Too long as one number: the groups before the last space may still be.
                    if bytes[end..].first().is_some_and(u8::is_ascii_digit) || cut_digits < 6 {
                        return (Vec::new(), sequence_end(bytes, first));
                    }
                    (end, digits) = (cut, cut_digits);
                    cut_count -= 1;
                    break;
                }
                continue;
            }
            let mut k = end;
            while k < bytes.len() && k - end < 2 && is_sep(bytes[k]) {
                k += 1;
            }
            let joint = &bytes[end..k];
            let allowed = match joint {
                // A comma groups thousands or marks decimals, in a plain amount only; anywhere
                // else it separates values (CSV cells, lists).
                b"," => {
                    let group = bytes[k..]
                        .iter()
                        .take(4)
                        .take_while(|b| b.is_ascii_digit())
                        .count();
                    // A thousands group ends the number or goes on with `.`, `,` or a space.
                    let after = bytes.get(k + group);
                    group <= 3
                        && !after.is_some_and(|b| matches!(b, b'-' | b'/'))
                        && bytes[first..end]
                            .iter()
                            .all(|b| b.is_ascii_digit() || matches!(b, b',' | b'.' | b' '))
                        // After space-grouped thousands only a decimal part: "5 883,23".
                        && (!bytes[first..end].contains(&b' ') || group == 2)
                }
                // "(415)555-0132": the parenthesis closes an area code opened just before.
                b")" => {
                    (first > 0 && bytes[first - 1] == b'(' && end - first == 3)
                        // "+44 (0)20 7946 0958": the trunk zero after a country code.
                        || (first > 0
                            && bytes[first - 1] == b'+'
                            && bytes[..end].ends_with(b" (0"))
                }
                [b] => *b != b'(' && *b != b')',
                _ => joint == b") " || joint == b" (",
            };
            if allowed && k < bytes.len() && bytes[k].is_ascii_digit() {
                if joint == b" " && cut_count < cuts.len() {
                    cuts[cut_count] = (end, digits);
                    cut_count += 1;
                }
                end = k;
            } else {
                break;
            }
        }
        let out = self.span_candidates(text, first, end, digits);
        if !out.is_empty() {
            return (out, end);
        }
        // Nothing as a whole: the longest shorter span ending at a space that is something.
        for &(cut, cut_digits) in cuts[..cut_count].iter().rev() {
            if cut_digits < 6 {
                break;
            }
            let out = self.span_candidates(text, first, cut, cut_digits);
            if !out.is_empty() {
                return (out, cut);
            }
        }
        (Vec::new(), sequence_end(bytes, first))
    }

    /// Candidates for the numeric span from the digit at `first` to `end`.
    fn span_candidates(
        &self,
        text: &str,
        first: usize,
        end: usize,
        digits: usize,
    ) -> Vec<Candidate> {
        let bytes = text.as_bytes();
        let mut start = first;
        // A phone number may open with + or (.
        if start > 0 && matches!(bytes[start - 1], b'+' | b'(') {
            start -= 1;
            if start > 0 && bytes[start] == b'(' && bytes[start - 1] == b'+' {
                start -= 1;
            }
        }
        // Fewer than six digits can only be an amount next to a currency or a day next to a
        // month name; most numbers in running text end here, cheaply.
        if digits < 6 {
            let mut out = Vec::new();
            if !bytes.get(end).is_some_and(|b| b.is_ascii_alphabetic()) {
                self.money(text, start, end, &text[start..end], &mut out);
            }
            if digits <= 2 && month_word_beside(text, start, end) {
                self.named_date(text, start, end, &mut out);
            }
            // Short case numbers: "T-351-11", "IMM-569-23".
            if start >= 2
                && bytes[start - 1] == b'-'
                && bytes[start - 2].is_ascii_uppercase()
                && !bytes.get(end).is_some_and(|b| is_word(*b))
            {
                let mut shape_buf = [0u8; 48];
                let span = &bytes[start..end];
                for (slot, b) in shape_buf.iter_mut().zip(span) {
                    *slot = if b.is_ascii_digit() { b'd' } else { *b };
                }
                let shape = std::str::from_utf8(&shape_buf[..span.len().min(48)]).unwrap_or("");
                self.prefixed(text, start, end, shape, &mut out);
            }
            // US federal dockets: "3:12-cv-20112".
            if digits == 1 && bytes.get(end) == Some(&b':') {
                self.docket(text, start, &mut out);
            }
            return out;
        }
        let span = &text[start..end];
        let after = bytes.get(end).copied();
        let before = start.checked_sub(1).map(|i| bytes[i]);
        // Part of a longer token: letters or digits glued on either side, a hyphenated
        // identifier (UUIDs, SKUs), a version (v1.2.3), a timestamp (2024-01-02T10:00).
        let glued_after = after.is_some_and(is_word)
            || (after.is_some_and(|a| a == b'-' || a == b'.' || a == b':' || a == b'_')
                && bytes.get(end + 1).is_some_and(|b| is_word(*b)));
        let glued_before = before.is_some_and(|b| b == b'-' || b == b'_' || b == b'.')
            && start >= 2
            && is_word(bytes[start - 2]);
        let letters_before = before.is_some_and(|b| b.is_ascii_alphabetic());
        // The span's shape, digits as `d`: at most 16 digits and their separators.
        let mut shape_buf = [0u8; 48];
        let shape_len = span.len().min(shape_buf.len());
        for (slot, b) in shape_buf.iter_mut().zip(span.bytes()) {
            *slot = if b.is_ascii_digit() { b'd' } else { b };
        }
        // The span is ASCII (digits, separators, + and parentheses), so this cannot fail.
        let shape = std::str::from_utf8(&shape_buf[..shape_len]).unwrap_or("");
        let mut out = Vec::new();
        if !glued_after && !glued_before && !letters_before {
            self.numeric(text, start, end, span, shape, &mut out);
        }
        if !glued_after {
            self.prefixed(text, start, end, shape, &mut out);
        }
        out
    }

    /// Shapes made of digits and separators only.
    fn numeric(
        &self,
        text: &str,
        start: usize,
        end: usize,
        span: &str,
        shape: &str,
        out: &mut Vec<Candidate>,
    ) {
        let mut digit_buf = [0u8; 16];
        let mut count = 0;
        for b in span.bytes().filter(u8::is_ascii_digit) {
            if let Some(slot) = digit_buf.get_mut(count) {
                *slot = b;
                count += 1;
            }
        }
        let digits = &digit_buf[..count];
        let candidate = |kind, pii_type, base, pattern, validator| Candidate {
            kind,
            pii_type,
            start,
            end,
            base,
            pattern,
            validator,
            normalized: None,
        };
        match shape {
            "ddd-dd-dddd" | "ddd dd dddd" | "ddd.dd.dddd" if ssn_is_issuable(digits) => {
                out.push(candidate(
                    Kind::UsSsn,
                    PiiType::UsSsn,
                    0.6,
                    "ssn_grouped",
                    Some("ssa_rules"),
                ))
            }
            "ddd-ddd-ddd" | "ddd ddd ddd" if sin_is_issuable(digits) => out.push(candidate(
                Kind::CaSin,
                PiiType::CaSin,
                0.6,
                "sin_grouped",
                Some("luhn"),
            )),
            "ddddddddd" => {
                // A bare nine-digit number is weak evidence of anything: context decides.
                if ssn_is_issuable(digits) {
                    out.push(candidate(
                        Kind::UsSsn,
                        PiiType::UsSsn,
                        0.3,
                        "ssn_bare",
                        Some("ssa_rules"),
                    ));
                }
                if sin_is_issuable(digits) {
                    out.push(candidate(
                        Kind::CaSin,
                        PiiType::CaSin,
                        0.3,
                        "sin_bare",
                        Some("luhn"),
                    ));
                }
                out.push(candidate(
                    Kind::Passport,
                    PiiType::PassportUs,
                    0.2,
                    "passport_us",
                    None,
                ));
            }
            _ => {}
        }
        // Dates written with digits and separators.
        if (6..=8).contains(&digits.len())
            && numeric_date(span)
            && !time_follows(text.as_bytes(), end)
        {
            out.push(candidate(
                Kind::Date,
                PiiType::Date,
                0.55,
                "date_numeric",
                Some("calendar"),
            ));
        }
        // Phone numbers: 10 to 15 digits, or a + prefix.
        let phone_like = (10..=15).contains(&digits.len())
            || (span.starts_with('+') && (8..=15).contains(&digits.len()));
        if phone_like
            && self.phone_grouping(span)
            && let Ok(phone) = normalize(PiiType::Phone, span, &self.normalize)
        {
            let formatted = span.starts_with('+')
                || span.starts_with('(')
                || shape.contains(['-', ' ', '.', ')']);
            out.push(Candidate {
                normalized: Some(phone.value.expose().to_owned()),
                ..candidate(
                    Kind::Phone,
                    PiiType::Phone,
                    if formatted { 0.6 } else { 0.35 },
                    if formatted {
                        "phone_formatted"
                    } else {
                        "phone_bare"
                    },
                    Some("libphonenumber"),
                )
            });
        }
        self.money(text, start, end, span, out);
        // Dates with a month name around a day number: "March 4, 2020", "4 mars 2020".
        if digits.len() <= 2 && month_word_beside(text, start, end) {
            self.named_date(text, start, end, out);
        }
    }

    /// Whether a number without `+` is grouped the way phone numbers of the detector's region
    /// are written. libphonenumber validates digits in any grouping, so without this an IP
    /// address, an ISBN or a browser version can read as a phone number.
    fn phone_grouping(&self, span: &str) -> bool {
        if span.starts_with('+') {
            return true;
        }
        let mut groups = [0usize; 8];
        let mut count = 0;
        let mut separator = None;
        let mut consistent = true;
        let mut in_group = false;
        for b in span.bytes() {
            if b.is_ascii_digit() {
                if !in_group {
                    if count == groups.len() {
                        return false;
                    }
                    count += 1;
                    in_group = true;
                }
                groups[count - 1] += 1;
            } else {
                in_group = false;
                if matches!(b, b'-' | b'.' | b' ' | b'/') {
                    consistent &= separator.is_none_or(|s| s == b);
                    separator = Some(b);
                }
            }
        }
        let groups = &groups[..count];
        let region = self.normalize.default_region;
        if region == Region::US || region == Region::CA {
            // North American numbering: 10 digits (or 1 and 10) as one run, 3-3-4 or 3-7.
            let leading_one = span.trim_start_matches('(').starts_with('1');
            return match groups {
                [10] | [3, 3, 4] | [3, 7] => true,
                [11] | [1, 3, 3, 4] | [1, 3, 7] => leading_one,
                _ => false,
            } && (consistent || span.contains(')'));
        }
        consistent && separator != Some(b'/')
    }

    /// Money: an amount with a currency sign right before (or a euro sign after), or an ISO
    /// code around it.
    fn money(&self, text: &str, start: usize, end: usize, span: &str, out: &mut Vec<Candidate>) {
        let bytes = text.as_bytes();
        // A cheap look at the neighbouring bytes first: a sign ends right before the amount
        // ($, or the last byte of €, £, ¥), or a space and a capital letter or € sit on either
        // side.
        let prev = start.checked_sub(1).map(|i| bytes[i]);
        let next = bytes.get(end).copied();
        let plausible = matches!(prev, Some(b'$' | 0xAC | 0xA3 | 0xA5))
            || (prev == Some(b' ')
                && start >= 2
                && (bytes[start - 2].is_ascii_uppercase() || bytes[start - 2] == b'$'))
            || (next == Some(b' ')
                && bytes
                    .get(end + 1)
                    .is_some_and(|b| b.is_ascii_uppercase() || *b == 0xE2 || *b == b'$'))
            || matches!(next, Some(0xE2 | b'$'));
        if !plausible {
            return;
        }
        let is_sign = |c: char| matches!(c, '$' | '€' | '£' | '¥');
        // "$1,234.50", or "$ 1,234.50" with a space after the sign.
        let spaced = text[..start].strip_suffix(' ').unwrap_or(&text[..start]);
        let sign_before = spaced.chars().next_back().is_some_and(is_sign);
        let code_near = |s: &str| CURRENCY_CODES.contains(&s);
        let code_before = start >= 4
            && bytes[start - 1] == b' '
            && text.get(start - 4..start - 1).is_some_and(code_near);
        let code_after =
            bytes.get(end) == Some(&b' ') && text.get(end + 1..end + 4).is_some_and(code_near);
        // "1.234,50 €", or the Quebec "2 500,00 $".
        let sign_after = text[end..].trim_start_matches(' ').starts_with(['€', '$']);
        if (sign_before || code_before || code_after || sign_after)
            && normalize(PiiType::Monetary, span, &NormalizeOptions::default()).is_ok()
        {
            let from = if sign_before {
                spaced.len() - spaced.chars().next_back().map_or(0, char::len_utf8)
            } else {
                start
            };
            out.push(Candidate {
                kind: Kind::Monetary,
                pii_type: PiiType::Monetary,
                start: from,
                end,
                base: 0.7,
                pattern: "money",
                validator: Some("amount"),
                normalized: None,
            });
        }
    }

    fn named_date(&self, text: &str, start: usize, end: usize, out: &mut Vec<Candidate>) {
        // "Month D, YYYY": the month word ends one space before the day.
        let head = text[..start].trim_end_matches(' ');
        let month_start = head
            .rfind(|c: char| !c.is_alphabetic() && c != '.')
            .map_or(0, |i| {
                i + head[i..].chars().next().map_or(1, char::len_utf8)
            });
        // No month word before the day: only "D Month YYYY" is possible.
        let month_start = if head[month_start..].chars().any(char::is_alphabetic) {
            month_start
        } else {
            start
        };
        // An ordinal suffix after the day: "December 18th, 2020".
        let ordinal = text.as_bytes()[end..]
            .iter()
            .take(2)
            .take_while(|b| b.is_ascii_lowercase())
            .count();
        for from in [month_start, start] {
            // "Month D, YYYY": the year follows the day; "D Month YYYY": it follows the month.
            let skip = if from == start { 16 } else { 3 + ordinal };
            let Some(to) = year_end(text, end, skip) else {
                continue;
            };
            if from >= to
                || !text.is_char_boundary(from)
                || !text.is_char_boundary(to)
                || time_follows(text.as_bytes(), to)
            {
                continue;
            }
            let candidate = &text[from..to];
            if candidate.len() > 30 {
                continue;
            }
            if is_date(candidate) {
                out.push(Candidate {
                    kind: Kind::Date,
                    pii_type: PiiType::Date,
                    start: from,
                    end: to,
                    base: 0.6,
                    pattern: "date_named",
                    validator: Some("calendar"),
                    normalized: None,
                });
                return;
            }
        }
    }

    /// A US federal docket number: office digit, `:`, two-digit year, `-`, two to three
    /// lower-case letters for the case type, `-`, three to five digits (`3:12-cv-20112`).
    fn docket(&self, text: &str, start: usize, out: &mut Vec<Candidate>) {
        let bytes = text.as_bytes();
        let rest = &bytes[start..];
        let digits = |from: usize| {
            rest[from.min(rest.len())..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        if rest.get(1) != Some(&b':') || digits(2) != 2 || rest.get(4) != Some(&b'-') {
            return;
        }
        let letters = rest[5..]
            .iter()
            .take_while(|b| b.is_ascii_lowercase())
            .count();
        if !(2..=3).contains(&letters) || rest.get(5 + letters) != Some(&b'-') {
            return;
        }
        let number = digits(6 + letters);
        let end = 6 + letters + number;
        if !(3..=5).contains(&number) || rest.get(end).is_some_and(|b| is_word(*b)) {
            return;
        }
        if start > 0 && is_word(bytes[start - 1]) {
            return;
        }
        out.push(Candidate {
            kind: Kind::CaseNumber,
            pii_type: PiiType::CaseNumber,
            start,
            end: start + end,
            base: 0.45,
            pattern: "case_number_docket",
            validator: None,
            normalized: None,
        });
    }

    /// Shapes that start with letters: Canadian passports (AB123456) and case numbers
    /// (CV-2023-001234).
    fn prefixed(
        &self,
        text: &str,
        start: usize,
        end: usize,
        shape: &str,
        out: &mut Vec<Candidate>,
    ) {
        let bytes = text.as_bytes();
        let letters = bytes[..start]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        if shape == "dddddd" && letters == 2 {
            let from = start - 2;
            if from == 0 || !is_word(bytes[from - 1]) {
                out.push(Candidate {
                    kind: Kind::Passport,
                    pii_type: PiiType::PassportCa,
                    start: from,
                    end,
                    base: 0.3,
                    pattern: "passport_ca",
                    validator: None,
                    normalized: None,
                });
            }
        }
        // Case numbers: 1 to 4 capitals, a hyphen, then digit groups joined by hyphens.
        if start >= 2 && bytes[start - 1] == b'-' {
            let caps = bytes[..start - 1]
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_uppercase())
                .count();
            let from = start - 1 - caps;
            if (1..=4).contains(&caps)
                && (from == 0 || !is_word(bytes[from - 1]))
                && shape.bytes().all(|b| b == b'd' || b == b'-')
                && shape.len() >= 4
            {
                out.push(Candidate {
                    kind: Kind::CaseNumber,
                    pii_type: PiiType::CaseNumber,
                    start: from,
                    end,
                    base: 0.45,
                    pattern: "case_number",
                    validator: None,
                    normalized: None,
                });
            }
        }
    }
}

/// Whether digits and separators are a calendar date, read as tokenize-core reads them (its
/// `is_date` is the reference, and a test holds the two together) but without allocating:
/// - `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYY.MM.DD` (month and day of one or two digits): year,
///   month, day;
/// - `M/D/YYYY` and `M-D-YYYY` (one or two digits each): month first, unless the first number
///   is above 12 and the second is not;
/// - `D.M.YYYY`: day first.
fn numeric_date(span: &str) -> bool {
    let mut groups = [0u32; 3];
    let mut lens = [0usize; 3];
    let mut separator = 0u8;
    let mut g = 0;
    for &b in span.as_bytes() {
        if b.is_ascii_digit() {
            groups[g] = groups[g] * 10 + u32::from(b - b'0');
            lens[g] += 1;
        } else if g < 2 && matches!(b, b'-' | b'/' | b'.') && (g == 0 || b == separator) {
            separator = b;
            g += 1;
        } else {
            return false;
        }
    }
    if g != 2 {
        return false;
    }
    let (year, month, day) = match (lens, separator) {
        ([4, 1 | 2, 1 | 2], _) => (groups[0], groups[1], groups[2]),
        ([1 | 2, 1 | 2, 4], b'.') => (groups[2], groups[1], groups[0]),
        ([1 | 2, 1 | 2, 4], _) if groups[0] > 12 && groups[1] <= 12 => {
            (groups[2], groups[1], groups[0])
        }
        ([1 | 2, 1 | 2, 4], _) => (groups[2], groups[0], groups[1]),
        _ => return false,
    };
    (1000..=9999).contains(&year)
        && (1..=12).contains(&month)
        && day >= 1
        && u8::try_from(day).is_ok_and(|d| d <= days_in_month(year as u16, month as u8))
}

/// Whether the first three letters (lower case) begin a month word: a cheap test that rejects
/// almost every other word before the full comparison.
fn is_month_prefix(prefix: [u8; 3]) -> bool {
    matches!(
        &prefix,
        b"jan"
            | b"feb"
            | b"mar"
            | b"apr"
            | b"may"
            | b"jun"
            | b"jul"
            | b"aug"
            | b"sep"
            | b"oct"
            | b"nov"
            | b"dec"
            | b"fev"
            | b"avr"
            | b"mai"
            | b"jui"
            | b"aou"
    )
}

/// Whether a byte can start a month word, in either language and either case.
fn is_month_initial(b: u8) -> bool {
    matches!(
        b | 0x20,
        b'j' | b'f' | b'm' | b'a' | b's' | b'o' | b'n' | b'd'
    )
}

fn is_month(word: &str) -> bool {
    let word = word.trim_end_matches('.');
    if word.len() < 3 || word.len() > 10 {
        return false;
    }
    let head = word.as_bytes();
    let prefix = [
        head[0].to_ascii_lowercase(),
        head[1].to_ascii_lowercase(),
        head[2].to_ascii_lowercase(),
    ];
    // Words with accents in their first three letters (février, août, décembre) skip the
    // prefix test.
    if head[..3].is_ascii() && !is_month_prefix(prefix) {
        return false;
    }
    // The date parser's own list, so the two never disagree about what a month is.
    is_month_name(word)
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic() || b >= 0x80
}

/// Whether a month name sits just before the day number (`March 4`) or just after it
/// (`4 mars`): the cheap test before any date parsing.
fn month_word_beside(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    // The word before: at most two spaces back (and an optional dot), then letters.
    let mut to = start;
    while to > 0 && start - to < 2 && bytes[to - 1] == b' ' {
        to -= 1;
    }
    if to < start {
        let word_end = if to > 0 && bytes[to - 1] == b'.' {
            to - 1
        } else {
            to
        };
        let mut from = word_end;
        while from > 0 && word_end - from < 12 && is_letter(bytes[from - 1]) {
            from -= 1;
        }
        if from < word_end
            && is_month_initial(bytes[from])
            && let Some(word) = text.get(from..word_end)
            && is_month(word)
        {
            return true;
        }
    }
    // The word after: an optional ordinal suffix and separators, then letters.
    let mut from = end;
    while from < bytes.len() && from - end < 3 && bytes[from].is_ascii_lowercase() {
        from += 1;
    }
    while from < bytes.len() && from - end < 5 && matches!(bytes[from], b' ' | b'-' | b'.') {
        from += 1;
    }
    if !bytes.get(from).is_some_and(|b| is_month_initial(*b)) {
        return false;
    }
    let mut to = from;
    while to < bytes.len() && to - from < 12 && is_letter(bytes[to]) {
        to += 1;
    }
    text.get(from..to).is_some_and(is_month)
}

/// Whether a time of day follows a date (`2023-10-13 02:38:16`, `16 Nov 2024 12:22:01`): a
/// timestamp, like the glued `T` form, not a person's date.
fn time_follows(bytes: &[u8], end: usize) -> bool {
    let rest = &bytes[end.min(bytes.len())..];
    let Some(rest) = rest.strip_prefix(b" ") else {
        return false;
    };
    let hours = rest
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .count();
    (1..=2).contains(&hours)
        && rest.get(hours) == Some(&b':')
        && rest.get(hours + 1).is_some_and(u8::is_ascii_digit)
        && rest.get(hours + 2).is_some_and(u8::is_ascii_digit)
}

/// The end of the numeric sequence that starts at `from`: digits and the separators between
/// them, but never across a comma, which separates values in CSV and lists.
fn sequence_end(bytes: &[u8], mut from: usize) -> usize {
    while from < bytes.len() {
        let joins = matches!(bytes[from], b' ' | b'-' | b'.' | b'/')
            && bytes.get(from + 1).is_some_and(u8::is_ascii_digit);
        if !(bytes[from].is_ascii_digit() || joins) {
            break;
        }
        from += 1;
    }
    from
}

/// The end of the first run of digits (the year) within `skip` characters after `from`.
fn year_end(text: &str, from: usize, skip: usize) -> Option<usize> {
    let (offset, _) = text[from..]
        .char_indices()
        .take(skip + 1)
        .find(|(_, c)| c.is_ascii_digit())?;
    let digits = text.as_bytes()[from + offset..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    Some(from + offset + digits)
}

/// ISO 4217 codes recognized next to an amount.
const CURRENCY_CODES: &[&str] = &[
    "USD", "EUR", "CAD", "GBP", "JPY", "CHF", "AUD", "NZD", "CNY", "INR", "MXN", "BRL", "SEK",
    "NOK", "DKK", "PLN", "CZK", "HUF", "ZAR", "SGD", "HKD", "KRW",
];

/// The position of the next digit or `@` at or after `from`, or the end. Eight bytes at a time
/// are tested with word arithmetic (SWAR): no branch per byte, and the first anchor in a word
/// is found from its bit mask without a second look at its bytes.
fn next_anchor(bytes: &[u8], mut from: usize) -> usize {
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

pub(crate) fn window(text: &str, mut from: usize, mut to: usize) -> &str {
    while from > 0 && !text.is_char_boundary(from) {
        from -= 1;
    }
    while to < text.len() && !text.is_char_boundary(to) {
        to += 1;
    }
    &text[from..to]
}

#[cfg(test)]
mod tests;

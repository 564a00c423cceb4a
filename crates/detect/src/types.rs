//! The crate's shared vocabulary, at the bottom of its module graph: what a finding is and
//! where (the public types), how a scan reports, and the internal shapes every stage passes
//! along (a window of text, a candidate before scoring). It uses no other module of the crate.

use std::borrow::Cow;
use std::sync::Arc;

use tokenize_core::{Category, PiiType};

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
    /// A column of a table file (Parquet): its path from the outermost name in, joined by
    /// `.` (`customer.ssn`), and the 1-based row of the file.
    Column { column: String, row: u64 },
    /// A field of a record file (Avro): its path from the record down, joined by `.`
    /// (`contact.email`), and the 1-based record of the file.
    Record { field: String, record: u64 },
    /// A spreadsheet's cell (`B7`) on its sheet, and its column's header when the sheet's
    /// first row names its columns.
    Cell {
        sheet: String,
        cell: String,
        header: Option<String>,
    },
    /// A document's paragraph: the part it is in (`word/document.xml`, `word/header1.xml`)
    /// and its 1-based number there.
    Paragraph { part: String, paragraph: u64 },
    /// A presentation's slide, 1-based, and the paragraph's 1-based number on it.
    Slide { slide: u32, paragraph: u64 },
    /// A PDF's page, 1-based, and the 1-based line of the text read from it.
    Page { page: u32, line: u64 },
}

/// What a table file's values are numbered by, for [`Location`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableUnit<'a> {
    /// Rows: [`Location::Column`].
    Row,
    /// Records: [`Location::Record`].
    Record,
    /// Rows of one column (0-based) of a sheet: [`Location::Cell`].
    Cell { sheet: &'a str, column: u32 },
    /// Paragraphs of a document's part: [`Location::Paragraph`].
    Paragraph { part: &'a str },
    /// Paragraphs of a presentation's slide: [`Location::Slide`].
    Slide { slide: u32 },
    /// Lines of a PDF's page: [`Location::Page`].
    Page { page: u32 },
}

/// A spreadsheet column's letters: 0 is `A`, 25 `Z`, 26 `AA`.
pub fn column_letters(column: u32) -> String {
    let mut letters = Vec::new();
    let mut n = u64::from(column) + 1;
    while n > 0 {
        let digit = ((n - 1) % 26) as u8;
        letters.push(char::from(b'A' + digit));
        n = (n - 1) / 26;
    }
    letters.iter().rev().collect()
}

/// The longest [`Location::field`], in characters: column names and JSON paths are cut at it.
pub const MAX_FIELD: usize = 256;

impl Location {
    /// The field the value sits in, the same for every value of one column or key: a CSV
    /// column's header (`#<column>` without one), a JSON path with each array index folded to
    /// `[*]` (`$.customers[*].ssn`), a table's column or a record's field path, or empty for plain text, which is
    /// one field. Findings are
    /// kept per field, and remediation finds a finding's values again by it.
    pub fn field(&self) -> String {
        match self {
            Location::Line { .. } => String::new(),
            Location::Csv { column, header, .. } => match header.as_deref() {
                Some(header) if !header.is_empty() => header.to_owned(),
                _ => format!("#{column}"),
            },
            Location::Json { path, .. } => fold_indices(path),
            Location::Column { column, .. } => column.clone(),
            Location::Record { field, .. } => field.clone(),
            Location::Paragraph { .. } | Location::Slide { .. } | Location::Page { .. } => {
                String::new()
            }
            Location::Cell { header, cell, .. } => match header.as_deref() {
                Some(header) if !header.is_empty() => header.to_owned(),
                _ => cell
                    .trim_end_matches(|c: char| c.is_ascii_digit())
                    .to_owned(),
            },
        }
    }
}

/// `path` with every `[<digits>]` written `[*]`.
fn fold_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest.as_bytes().get(digits) == Some(&b']') {
            out.push('*');
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
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

/// Findings below this confidence are not reported unless the caller lowers it.
pub const DEFAULT_MIN_CONFIDENCE: f32 = 0.5;

/// How far a candidate may reach before its anchor (an email's local part) or after it, in
/// bytes, context windows included. Streaming windows overlap by this much on each side.
pub(crate) const MAX_REACH: usize = 512;

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

/// A candidate before scoring.
pub(crate) struct Candidate {
    pub kind: Kind,
    pub pii_type: PiiType,
    pub start: usize,
    pub end: usize,
    pub base: f32,
    pub pattern: &'static str,
    pub validator: Option<&'static str>,
    /// The canonical form of the value, when validating it produced one (phone numbers).
    pub normalized: Option<String>,
}

/// `text[from..to]`, widened to character boundaries.
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
mod tests {
    use super::*;

    #[test]
    fn a_field_is_the_same_for_every_value_of_a_column_or_key() {
        let csv = |column, header: Option<&str>| Location::Csv {
            row: 7,
            column,
            header: header.map(str::to_owned),
        };
        assert_eq!(csv(2, Some("ssn")).field(), "ssn");
        assert_eq!(csv(3, None).field(), "#3");
        assert_eq!(csv(3, Some("")).field(), "#3");
        let json = |path: &str| Location::Json {
            line: 1,
            path: path.to_owned(),
        };
        assert_eq!(json("$.customers[12].ssn").field(), "$.customers[*].ssn");
        assert_eq!(json("$[0][1].x").field(), "$[*][*].x");
        assert_eq!(json(r#"$["a b"].ssn"#).field(), r#"$["a b"].ssn"#);
        assert_eq!(json("$.a[").field(), "$.a[");
        assert_eq!(json("$.a[1x]").field(), "$.a[1x]");
        assert_eq!(Location::Line { line: 3, column: 9 }.field(), "");
    }
}

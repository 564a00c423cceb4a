//! Finding a request's values again in an object's bytes, and rewriting only them.
//!
//! Findings keep no value. A finding is one PII type in one field of an object version (a CSV
//! column, a JSON path with its array indices folded, or the whole of a plain-text object; see
//! [`detect::Location::field`]), with a count and a few sample locations. The executor runs
//! detection again over the object it read (with values, in memory only) and keeps every value
//! of a wanted finding's type in that finding's field whose confidence is at least the one the
//! policy asked for ([`Wanted`]), however many the scan counted: a value written into the field
//! since the scan is rewritten too. The platform's own tokens in the object are not: they are
//! findings of their own (`tokenized`), never acted on again (`scans::group::Written`); a
//! token of a token would detokenize to the token. Each kept span is replaced; every byte
//! outside the spans stays as it was.

use std::collections::{HashMap, HashSet};

use detect::{Detector, Hint, Options};
use scans::group::Written;

/// One of a request's findings as remediation looks for its values again.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// `us_ssn`, or `custom:<name>`.
    pub pii_type: String,
    /// The field its values sit in, as [`detect::Location::field`] names it.
    pub field: String,
    /// The lowest confidence of a value rewritten: the threshold of the policy condition that
    /// matched the finding.
    pub min_confidence: f32,
}

/// One value to replace: where it is in the object's bytes, its type, and the value itself
/// (never logged, never stored).
#[derive(Clone, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub pii_type: String,
    pub value: String,
    /// A bare JSON value (a number): its replacement is written as a JSON string, since no
    /// token or mask is a JSON number.
    pub quote: bool,
}

impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Span")
            .field("start", &self.start)
            .field("end", &self.end)
            .field("pii_type", &self.pii_type)
            .finish_non_exhaustive()
    }
}

/// Why an object's values cannot be rewritten in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    /// Compressed content: rewriting it would change every byte.
    Compressed,
    /// Binary content, or text whose detection offsets are not its own byte offsets (UTF-16,
    /// Latin-1 with non-ASCII characters).
    NotUtf8Text,
    /// Two of the request's values share some characters without one holding the other:
    /// replacing either would leave part of the other in clear.
    Overlapping,
    /// A value read across CSV cells (a comma outside quotes inside it).
    AcrossCells,
    /// More values than detection reports for one object (`detect::MAX_FINDINGS_PER_OBJECT`).
    TooManyValues,
    /// A format that is never rewritten in place: an archive (ZIP, TAR, TAR.GZ), a table file
    /// or an office file other than Parquet, Avro, XLSX and DOCX (`extract::container` knows
    /// them all, XLS among them), a PDF or another binary format. Its values are found by
    /// scans, member by member; the action for them is quarantine.
    Format,
    /// A table file's value whose column cannot hold its replacement: a token that is not a
    /// number in an integer column, any mask there, a value in a float, date, decimal or
    /// timestamp column, a fixed-length value's length changed. In a workbook, the same of a
    /// number cell (a mask, a token that is not a number) and any change to a date's, a
    /// boolean's or an error's cell.
    ColumnType,
    /// A table file (Parquet, Avro) that cannot be read, or written again, as it is: corrupt,
    /// encrypted, LZO, past the reading limits.
    Table,
    /// A workbook's cell that holds a formula: the cell shows what the formula computes, and
    /// a spreadsheet would compute it again over a token or a mask.
    Formula,
    /// A value that a workbook's or a document's markup splits where no rewrite is safe:
    /// across a field code, a tracked change, a hyperlink, a tab or a break, or in text kept
    /// with a phonetic reading.
    Markup,
    /// A workbook or a Word document that cannot be read, or written again, as it is: corrupt,
    /// past the reading limits, or not reading back as it was meant to once written.
    Document,
}

impl Unsupported {
    pub const ALL: [Unsupported; 11] = [
        Unsupported::Compressed,
        Unsupported::NotUtf8Text,
        Unsupported::Overlapping,
        Unsupported::AcrossCells,
        Unsupported::TooManyValues,
        Unsupported::Format,
        Unsupported::ColumnType,
        Unsupported::Table,
        Unsupported::Formula,
        Unsupported::Markup,
        Unsupported::Document,
    ];

    /// The qualifier of the `unsupported_content` reason.
    pub fn code(self) -> &'static str {
        match self {
            Unsupported::Compressed => "compressed",
            Unsupported::NotUtf8Text => "encoding",
            Unsupported::Overlapping => "overlapping_values",
            Unsupported::AcrossCells => "value_across_cells",
            Unsupported::TooManyValues => "too_many_values",
            Unsupported::Format => "format",
            Unsupported::ColumnType => "column_type",
            Unsupported::Table => "table_unreadable",
            Unsupported::Formula => "formula",
            Unsupported::Markup => "value_across_markup",
            Unsupported::Document => "document_unreadable",
        }
    }
}

/// What [`find`] found: the spans to replace, and how many of the wanted findings (each
/// (type, field) once) it found no value of at all.
#[derive(Debug)]
pub struct Found {
    pub spans: Vec<Span>,
    pub missing: usize,
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The spans of `bytes` that are values of a `wanted` finding (its type, in its field, at or
/// above its confidence) and not one of the `written` tokens, in order, without overlap: a
/// span inside another is covered by it, and two that only overlap are refused.
pub fn find(
    detector: &Detector,
    file_name: &str,
    bytes: &[u8],
    wanted: &[Wanted],
    written: &Written,
) -> Result<Found, Unsupported> {
    // Each (type, field) once: were one named twice, the lower threshold is the one a policy
    // asked for.
    let mut thresholds: HashMap<(&str, &str), f32> = HashMap::with_capacity(wanted.len());
    for w in wanted {
        thresholds
            .entry((w.pii_type.as_str(), w.field.as_str()))
            .and_modify(|min| *min = min.min(w.min_confidence))
            .or_insert(w.min_confidence);
    }
    let mut matched: HashSet<(String, String)> = HashSet::with_capacity(thresholds.len());
    let hint = Hint {
        content_type: None,
        file_name: Some(file_name),
    };
    let options = Options {
        with_values: true,
        ..Options::default()
    };
    // An archive is read member by member by scans; rewriting one would rebuild it.
    if extract::container(bytes).is_some() {
        return Err(Unsupported::Format);
    }
    let report = detector
        .scan_bytes(bytes, hint, &options)
        .map_err(|reason| match reason {
            detect::SkipReason::TooManyFindings => Unsupported::TooManyValues,
            detect::SkipReason::BinaryFormat(_) => Unsupported::Format,
            _ => Unsupported::NotUtf8Text,
        })?;
    if report.compressed {
        return Err(Unsupported::Compressed);
    }
    // Detection reads the text after a byte-order mark; its offsets count from there.
    let base = if bytes.starts_with(UTF8_BOM) {
        UTF8_BOM.len()
    } else {
        0
    };
    let mut spans: Vec<Span> = Vec::new();
    for finding in &report.findings {
        let pii_type = finding.pii_type.as_str();
        let field = finding.location.field();
        let Some(&min) = thresholds.get(&(pii_type, field.as_str())) else {
            continue;
        };
        if finding.confidence < min || written.holds(finding) {
            continue;
        }
        let Some(value) = finding.value.as_deref() else {
            continue;
        };
        let (start, end) = (base + finding.start, base + finding.end);
        // Offsets index the decoded text; they are the object's own only when the bytes there
        // are the value itself.
        if bytes.get(start..end) != Some(value.as_bytes()) {
            return Err(Unsupported::NotUtf8Text);
        }
        // Only the value, not the whitespace detection may have taken with it.
        let lead = value.len() - value.trim_start().len();
        let trimmed = value.trim();
        if trimmed.is_empty() {
            continue;
        }
        spans.push(Span {
            start: start + lead,
            end: start + lead + trimmed.len(),
            pii_type: pii_type.to_owned(),
            value: trimmed.to_owned(),
            quote: false,
        });
        matched.insert((pii_type.to_owned(), field));
    }
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    // Two recognizers may claim the same text: the longest wins, and covers what it holds.
    let mut kept: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        match kept.last() {
            Some(last) if span.end <= last.end => {}
            Some(last) if span.start < last.end => return Err(Unsupported::Overlapping),
            _ => kept.push(span),
        }
    }
    match report.format {
        detect::Format::Json => {
            let strings = quoted(bytes, &kept, true);
            for (span, in_string) in kept.iter_mut().zip(strings) {
                span.quote = !in_string;
            }
        }
        // Outside quotes a comma ends a cell: a value holding one was read across cells
        // (`7,$12,500` as `$12,500`), and replacing it would join them. The object is walked
        // only when a value holds a comma.
        detect::Format::Csv if kept.iter().any(|s| s.value.contains(',')) => {
            let quoted = quoted(bytes, &kept, false);
            if kept
                .iter()
                .zip(quoted)
                .any(|(s, q)| !q && s.value.contains(','))
            {
                return Err(Unsupported::AcrossCells);
            }
        }
        // Markup's offsets are the file's own (its punctuation was blanked, not removed).
        detect::Format::Csv
        | detect::Format::Text
        | detect::Format::Tsv
        | detect::Format::Markup => {}
    }
    Ok(Found {
        spans: kept,
        missing: thresholds.len() - matched.len(),
    })
}

/// For each span (in order, not overlapping), whether it starts inside double quotes: a JSON
/// string (`backslash`: `\"` does not end it) or a quoted CSV field (`""` closes and reopens,
/// which leaves it open).
fn quoted(bytes: &[u8], spans: &[Span], backslash: bool) -> Vec<bool> {
    let mut states = Vec::with_capacity(spans.len());
    let mut inside = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        while spans.get(states.len()).is_some_and(|s| s.start == i) {
            states.push(inside);
        }
        if states.len() == spans.len() {
            break;
        }
        if escaped {
            escaped = false;
        } else if backslash && inside && b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            inside = !inside;
        }
    }
    states.resize(spans.len(), inside);
    states
}

/// `bytes` with each span replaced by `replacement(span)`; everything else byte for byte.
pub fn rewrite(bytes: &[u8], spans: &[Span], replacement: impl Fn(&Span) -> String) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for span in spans {
        out.extend_from_slice(&bytes[at..span.start]);
        if span.quote {
            out.push(b'"');
        }
        out.extend_from_slice(replacement(span).as_bytes());
        if span.quote {
            out.push(b'"');
        }
        at = span.end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// The mask action's replacement: every letter and digit becomes `char`, except the last
/// `keep_last` of them; separators and punctuation stay, so the value keeps its length in
/// characters and its shape (an SSN stays `***-**-6789`, an email keeps its `@` and dots).
/// At most half of the letters and digits are kept, so that a value shorter than `keep_last`
/// (`$950` under `keep_last: 4`) is still masked, not written back whole.
pub fn mask(value: &str, keep_last: usize, char: char) -> String {
    let alnum = value.chars().filter(|c| c.is_alphanumeric()).count();
    let masked = alnum - keep_last.min(alnum / 2);
    let mut seen = 0;
    value
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                seen += 1;
                if seen <= masked { char } else { c }
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: usize, end: usize, value: &str) -> Span {
        Span {
            start,
            end,
            pii_type: "us_ssn".into(),
            value: value.into(),
            quote: false,
        }
    }

    #[test]
    fn masking_keeps_length_shape_and_the_last_characters() {
        assert_eq!(mask("219-09-9999", 4, '*'), "***-**-9999");
        assert_eq!(mask("219-09-9999", 0, '#'), "###-##-####");
        assert_eq!(mask("ann.lee@example.com", 0, 'x'), "xxx.xxx@xxxxxxx.xxx");
        // Never more than half kept: a short value is still masked.
        assert_eq!(mask("12", 4, '*'), "*2");
        assert_eq!(mask("$950", 4, '*'), "$**0");
        assert_eq!(mask("7", 4, '*'), "*");
        assert_eq!(mask("é1", 0, '•').chars().count(), 2);
    }

    #[test]
    fn rewriting_touches_only_the_spans() {
        let bytes = b"a,219-09-9999,b,078-05-1120\n";
        let spans = [span(2, 13, "219-09-9999"), span(16, 27, "078-05-1120")];
        let out = rewrite(bytes, &spans, |s| mask(&s.value, 4, '*'));
        assert_eq!(out, b"a,***-**-9999,b,***-**-1120\n");
        assert_eq!(rewrite(bytes, &[], |_| String::new()), bytes);
    }

    #[test]
    fn quotes_are_tracked_as_json_and_csv_write_them() {
        let json = br#"{"a": 219099999, "b": "x\"y 219-09-9999", "c": 1}"#;
        let text = std::str::from_utf8(json).unwrap();
        let at = |v: &str| span(text.find(v).unwrap(), text.find(v).unwrap() + v.len(), v);
        let spans = [at("219099999"), at("219-09-9999")];
        assert_eq!(quoted(json, &spans, true), [false, true]);
        // In CSV a backslash escapes nothing, and a doubled quote keeps the field open.
        let csv = br#"id,note,amt
1,"say ""hi"", $12,500",$3,000
"#;
        let text = std::str::from_utf8(csv).unwrap();
        let at = |v: &str| span(text.find(v).unwrap(), text.find(v).unwrap() + v.len(), v);
        assert_eq!(
            quoted(csv, &[at("$12,500"), at("$3,000")], false),
            [true, false]
        );
        let mut bare = at("$3,000");
        bare.quote = true;
        let out = rewrite(csv, &[bare], |_| "X".into());
        assert!(
            out.ends_with(b",\"X\"\n"),
            "{}",
            String::from_utf8_lossy(&out)
        );
    }

    /// Who wants the values of `pii_type` in `field` at `min_confidence` and above.
    fn wanted(pii_type: &str, field: &str, min_confidence: f32) -> Wanted {
        Wanted {
            pii_type: pii_type.into(),
            field: field.into(),
            min_confidence,
        }
    }

    /// The values [`find`] finds in `bytes` of `file_name` for `wanted`, and how many wanted
    /// findings it found none of.
    fn found(
        file_name: &str,
        bytes: &str,
        wanted: &[Wanted],
        written: &Written,
    ) -> (Vec<String>, usize) {
        let found = find(
            &Detector::new(),
            file_name,
            bytes.as_bytes(),
            wanted,
            written,
        )
        .unwrap();
        let values = found.spans.into_iter().map(|s| s.value).collect();
        (values, found.missing)
    }

    /// A workbook or an office document is read by scans cell by cell or paragraph by
    /// paragraph, and never rewritten here: whatever its format (an XLS is a compound file,
    /// the others ZIPs), its values fail as a format, as an XLSX's do.
    #[test]
    fn office_files_are_an_unsupported_format() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats");
        for name in [
            "payroll.xlsx",
            "payroll.xls",
            "not_a_workbook.xls",
            "payroll.xlsb",
            "payroll.ods",
            "case_notes.odt",
            "review.odp",
        ] {
            let bytes = std::fs::read(fixtures.join(name)).unwrap();
            let found = find(
                &Detector::new(),
                name,
                &bytes,
                &[wanted("us_ssn", "SSN", 0.0)],
                &Written::default(),
            );
            assert!(matches!(found, Err(Unsupported::Format)), "{name}");
        }
    }

    /// Two columns of SSNs (both detected at 0.95), and a note column with one SSN said to be
    /// one (0.95) and one not (0.6).
    const PEOPLE: &str = "name,ssn,spouse_ssn,note
Ann,219-09-9999,078-05-1120,ssn 536-22-1234
Bo,457-55-5462,401-02-3456,other 212-67-4523
";

    #[test]
    fn only_values_of_the_findings_type_in_its_field_are_found() {
        let none = Written::default();
        let (values, missing) = found("people.csv", PEOPLE, &[wanted("us_ssn", "ssn", 0.8)], &none);
        assert_eq!(values, ["219-09-9999", "457-55-5462"]);
        assert_eq!(missing, 0);
        // The SSNs of the other column are found when it is the finding's.
        let (values, _) = found(
            "people.csv",
            PEOPLE,
            &[wanted("us_ssn", "spouse_ssn", 0.8)],
            &none,
        );
        assert_eq!(values, ["078-05-1120", "401-02-3456"]);
        // Another type in the same field is not the finding's either.
        let (values, missing) = found("people.csv", PEOPLE, &[wanted("email", "ssn", 0.0)], &none);
        assert!(values.is_empty());
        assert_eq!(missing, 1);
        // A JSON path's array indices are folded: every element's value, and only that key's.
        let json = r#"{"customers":[{"ssn":"219-09-9999","spouse":{"ssn":"457-55-5462"}},{"ssn":"536-22-1234"}]}"#;
        let (values, _) = found(
            "people.json",
            json,
            &[wanted("us_ssn", "$.customers[*].ssn", 0.8)],
            &none,
        );
        assert_eq!(values, ["219-09-9999", "536-22-1234"]);
    }

    #[test]
    fn a_value_below_the_threshold_is_left_in_its_field() {
        let none = Written::default();
        let (values, missing) = found(
            "people.csv",
            PEOPLE,
            &[wanted("us_ssn", "note", 0.8)],
            &none,
        );
        assert_eq!(values, ["536-22-1234"]);
        assert_eq!(missing, 0);
        // The threshold is inclusive, and one that admits both finds both.
        let (values, _) = found(
            "people.csv",
            PEOPLE,
            &[wanted("us_ssn", "note", 0.6)],
            &none,
        );
        assert_eq!(values, ["536-22-1234", "212-67-4523"]);
        // A field named twice is looked for at the lower threshold, and counted once.
        let twice = [wanted("us_ssn", "note", 0.9), wanted("us_ssn", "note", 0.5)];
        let (values, missing) = found("people.csv", PEOPLE, &twice, &none);
        assert_eq!((values.len(), missing), (2, 0));
    }

    #[test]
    fn a_value_added_to_the_field_since_the_scan_is_found_too() {
        let none = Written::default();
        // The scan saw one value in `ssn`; the column holds three now.
        let scanned = "name,ssn\nAnn,219-09-9999\n";
        let (values, _) = found(
            "people.csv",
            scanned,
            &[wanted("us_ssn", "ssn", 0.8)],
            &none,
        );
        assert_eq!(values.len(), 1);
        let now = format!("{scanned}Bo,457-55-5462\nCy,536-22-1234\n");
        let (values, missing) = found("people.csv", &now, &[wanted("us_ssn", "ssn", 0.8)], &none);
        assert_eq!(values, ["219-09-9999", "457-55-5462", "536-22-1234"]);
        assert_eq!(missing, 0);
    }

    #[test]
    fn a_finding_with_no_value_left_is_missing() {
        let none = Written::default();
        // A column renamed (or emptied) since the scan.
        let both = [
            wanted("us_ssn", "ssn", 0.8),
            wanted("us_ssn", "old_ssn", 0.8),
        ];
        let (values, missing) = found("people.csv", PEOPLE, &both, &none);
        assert_eq!(values.len(), 2);
        assert_eq!(missing, 1);
        // Values left only below the threshold are none left.
        let (values, missing) = found(
            "people.csv",
            PEOPLE,
            &[wanted("us_ssn", "note", 0.99)],
            &none,
        );
        assert!(values.is_empty());
        assert_eq!(missing, 1);
    }

    #[test]
    fn the_platforms_own_tokens_are_never_found_again() {
        let tenant = "acme";
        let token = |value: &str| tokenize_core::lookup(tenant, "us_ssn", value);
        let written = Written::new(tenant, [token("457-55-5462")]);
        let (values, missing) = found(
            "people.csv",
            PEOPLE,
            &[wanted("us_ssn", "ssn", 0.8)],
            &written,
        );
        assert_eq!(values, ["219-09-9999"]);
        assert_eq!(missing, 0);
        // Another tenant's token of the same text is not this tenant's.
        let theirs = Written::new(
            tenant,
            [tokenize_core::lookup("globex", "us_ssn", "457-55-5462")],
        );
        let (values, _) = found(
            "people.csv",
            PEOPLE,
            &[wanted("us_ssn", "ssn", 0.8)],
            &theirs,
        );
        assert_eq!(values.len(), 2);
        // A field that holds only tokens has no value left.
        let all = Written::new(tenant, [token("457-55-5462"), token("219-09-9999")]);
        let (values, missing) = found("people.csv", PEOPLE, &[wanted("us_ssn", "ssn", 0.8)], &all);
        assert!(values.is_empty());
        assert_eq!(missing, 1);
    }

    #[test]
    fn values_in_xml_and_html_are_rewritten_in_the_files_own_bytes() {
        // Detection reads markup with its punctuation blanked, at the file's own offsets: a
        // value in an element, an attribute or a comment is replaced there, and the markup
        // around it is left byte for byte.
        let xml = r#"<?xml version="1.0"?>
<people><person ssn="219-09-9999"><ssn>457-55-5462</ssn></person>
<!--old ssn 536-22-1234--></people>
"#;
        let people = find(
            &Detector::new(),
            "people.xml",
            xml.as_bytes(),
            &[wanted("us_ssn", "", 0.5)],
            &Written::default(),
        )
        .unwrap();
        let masked = rewrite(xml.as_bytes(), &people.spans, |s| mask(&s.value, 4, '*'));
        assert_eq!(
            String::from_utf8(masked).unwrap(),
            r#"<?xml version="1.0"?>
<people><person ssn="***-**-9999"><ssn>***-**-5462</ssn></person>
<!--old ssn ***-**-1234--></people>
"#
        );
        let html = "<p>Write to <a href=\"mailto:ann@example.com\">ann@example.com</a></p>";
        let (values, missing) = found(
            "letter.html",
            html,
            &[wanted("email", "", 0.5)],
            &Written::default(),
        );
        assert_eq!((values.len(), missing), (2, 0));
    }

    #[test]
    fn a_span_debug_never_shows_the_value() {
        assert!(!format!("{:?}", span(0, 11, "219-09-9999")).contains("9999"));
    }
}

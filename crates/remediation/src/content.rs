//! Finding a request's values again in an object's bytes, and rewriting only them.
//!
//! Findings keep no value, only a keyed fingerprint. The executor runs detection again over the
//! object it read (with values, in memory only), fingerprints each match the way the scan did,
//! and keeps the matches whose type and fingerprint belong to the request's findings. Each kept
//! span is replaced; every byte outside the spans stays as it was.

use std::collections::HashSet;

use detect::{Detector, Hint, Options};
use keys::TenantKeys;

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
}

impl Unsupported {
    pub const ALL: [Unsupported; 5] = [
        Unsupported::Compressed,
        Unsupported::NotUtf8Text,
        Unsupported::Overlapping,
        Unsupported::AcrossCells,
        Unsupported::TooManyValues,
    ];

    /// The qualifier of the `unsupported_content` reason.
    pub fn code(self) -> &'static str {
        match self {
            Unsupported::Compressed => "compressed",
            Unsupported::NotUtf8Text => "encoding",
            Unsupported::Overlapping => "overlapping_values",
            Unsupported::AcrossCells => "value_across_cells",
            Unsupported::TooManyValues => "too_many_values",
        }
    }
}

/// What [`find`] found: the spans to replace, and how many of the wanted (type, fingerprint)
/// pairs it did not find at all.
#[derive(Debug)]
pub struct Found {
    pub spans: Vec<Span>,
    pub missing: usize,
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The spans of `bytes` whose (type, fingerprint) is in `wanted`, in order, without overlap:
/// a span inside another is covered by it, and two that only overlap are refused.
pub fn find(
    detector: &Detector,
    file_name: &str,
    bytes: &[u8],
    keys: &TenantKeys,
    wanted: &HashSet<(String, Vec<u8>)>,
) -> Result<Found, Unsupported> {
    let hint = Hint {
        content_type: None,
        file_name: Some(file_name),
    };
    let options = Options {
        with_values: true,
        ..Options::default()
    };
    let report = detector
        .scan_bytes(bytes, hint, &options)
        .map_err(|reason| match reason {
            detect::SkipReason::TooManyFindings => Unsupported::TooManyValues,
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
    let mut matched: HashSet<(String, Vec<u8>)> = HashSet::new();
    let mut spans: Vec<Span> = Vec::new();
    for finding in &report.findings {
        let pii_type = finding.pii_type.as_str().to_owned();
        let current = (
            pii_type.clone(),
            scans::findings::fingerprint(&keys.finding, finding),
        );
        // Findings stored before the findings' own key carry the older fingerprint.
        let key = if wanted.contains(&current) {
            current
        } else {
            let legacy = (pii_type, scans::findings::legacy_fingerprint(keys, finding));
            if !wanted.contains(&legacy) {
                continue;
            }
            legacy
        };
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
            pii_type: key.0.clone(),
            value: trimmed.to_owned(),
            quote: false,
        });
        matched.insert(key);
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
        detect::Format::Csv | detect::Format::Text | detect::Format::Tsv => {}
    }
    Ok(Found {
        spans: kept,
        missing: wanted.len() - matched.len(),
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

    #[test]
    fn a_span_debug_never_shows_the_value() {
        assert!(!format!("{:?}", span(0, 11, "219-09-9999")).contains("9999"));
    }
}

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
}

impl Unsupported {
    pub fn reason(self) -> &'static str {
        match self {
            Unsupported::Compressed => "unsupported_content:compressed",
            Unsupported::NotUtf8Text => "unsupported_content:encoding",
        }
    }
}

/// The spans of `bytes` whose (type, fingerprint) is in `wanted`, in order, without overlap.
pub fn find(
    detector: &Detector,
    file_name: &str,
    bytes: &[u8],
    keys: &TenantKeys,
    wanted: &HashSet<(String, Vec<u8>)>,
) -> Result<Vec<Span>, Unsupported> {
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
        .map_err(|_| Unsupported::NotUtf8Text)?;
    if report.compressed {
        return Err(Unsupported::Compressed);
    }
    let mut spans: Vec<Span> = Vec::new();
    for finding in &report.findings {
        let fingerprint = scans::findings::fingerprint(keys, finding);
        let kind = finding.pii_type.as_str().to_owned();
        if !wanted.contains(&(kind.clone(), fingerprint)) {
            continue;
        }
        let Some(value) = finding.value.as_deref() else {
            continue;
        };
        // Offsets index the decoded text; they are the object's own only when the bytes there
        // are the value itself.
        if bytes.get(finding.start..finding.end) != Some(value.as_bytes()) {
            return Err(Unsupported::NotUtf8Text);
        }
        // Only the value, not the whitespace detection may have taken with it.
        let lead = value.len() - value.trim_start().len();
        let trimmed = value.trim();
        if trimmed.is_empty() {
            continue;
        }
        spans.push(Span {
            start: finding.start + lead,
            end: finding.start + lead + trimmed.len(),
            pii_type: kind,
            value: trimmed.to_owned(),
        });
    }
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    // Two recognizers may claim overlapping text: the first (and longest) wins.
    let mut kept: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        if kept.last().is_none_or(|last| span.start >= last.end) {
            kept.push(span);
        }
    }
    Ok(kept)
}

/// `bytes` with each span replaced by `replacement(span)`; everything else byte for byte.
pub fn rewrite(bytes: &[u8], spans: &[Span], replacement: impl Fn(&Span) -> String) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for span in spans {
        out.extend_from_slice(&bytes[at..span.start]);
        out.extend_from_slice(replacement(span).as_bytes());
        at = span.end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// The mask action's replacement: every letter and digit becomes `char`, except the last
/// `keep_last` of them; separators and punctuation stay, so the value keeps its length in
/// characters and its shape (an SSN stays `***-**-6789`, an email keeps its `@` and dots).
pub fn mask(value: &str, keep_last: usize, char: char) -> String {
    let alnum = value.chars().filter(|c| c.is_alphanumeric()).count();
    let masked = alnum.saturating_sub(keep_last);
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
        }
    }

    #[test]
    fn masking_keeps_length_shape_and_the_last_characters() {
        assert_eq!(mask("219-09-9999", 4, '*'), "***-**-9999");
        assert_eq!(mask("219-09-9999", 0, '#'), "###-##-####");
        assert_eq!(mask("ann.lee@example.com", 0, 'x'), "xxx.xxx@xxxxxxx.xxx");
        assert_eq!(mask("12", 4, '*'), "12");
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
    fn a_span_debug_never_shows_the_value() {
        assert!(!format!("{:?}", span(0, 11, "219-09-9999")).contains("9999"));
    }
}

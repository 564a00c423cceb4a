//! XML and HTML, read as text with their markup blanked: the planted values of a customer
//! export and a page of letters (`tests/fixtures/formats/make_markup.py`) are found in element
//! text, attribute values, comments, CDATA and inline JSON, each at the file's own offsets,
//! line and column; the PII-free controls have no finding; streams cut anywhere, gzip and
//! UTF-16 find the same.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

use std::collections::BTreeMap;
use std::io::Write;

use detect::{Detector, Finding, Format, Hint, Location, Options, Report};

/// The bytes of `tests/fixtures/formats/<name>`.
fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/formats")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn with_values() -> Options {
    Options {
        with_values: true,
        ..Options::default()
    }
}

fn scan(bytes: &[u8], name: &str) -> Report {
    let hint = Hint {
        content_type: None,
        file_name: Some(name),
    };
    Detector::new()
        .scan_bytes(bytes, hint, &with_values())
        .unwrap()
}

/// Findings by type, counted.
fn counts(findings: &[Finding]) -> BTreeMap<&str, usize> {
    let mut counts = BTreeMap::new();
    for f in findings {
        *counts.entry(f.pii_type.as_str()).or_default() += 1;
    }
    counts
}

/// The 1-based line and byte column of `offset` in `bytes`, counted in the file itself.
fn line_and_column(bytes: &[u8], offset: usize) -> Location {
    let before = &bytes[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |n| n + 1);
    Location::Line {
        line,
        column: offset - line_start + 1,
    }
}

/// Every finding's value is the file's own bytes at its offsets, and its location is the
/// line and column of those bytes: what remediation rewrites by, and what a reviewer opens.
fn assert_at_the_files_own_places(bytes: &[u8], findings: &[Finding]) {
    for f in findings {
        let value = f.value.as_deref().unwrap();
        assert_eq!(&bytes[f.start..f.end], value.as_bytes(), "{f:?}");
        assert_eq!(f.location, line_and_column(bytes, f.start), "{f:?}");
    }
}

fn values<'a>(findings: &'a [Finding], pii_type: &str) -> Vec<&'a str> {
    findings
        .iter()
        .filter(|f| f.pii_type.as_str() == pii_type)
        .map(|f| f.value.as_deref().unwrap())
        .collect()
}

#[test]
fn an_xml_exports_values_are_found_in_elements_attributes_comments_and_cdata() {
    let bytes = fixture("customers.xml");
    let report = scan(&bytes, "crm/customers.xml");
    assert_eq!(report.format, Format::Markup);
    let found = &report.findings;
    assert_eq!(
        counts(found),
        BTreeMap::from([("email", 10), ("phone", 4), ("us_ssn", 10)]),
        "{found:#?}"
    );
    assert_at_the_files_own_places(&bytes, found);
    let ssns = values(found, "us_ssn");
    // An attribute's value, a comment's text, and nine bare digits named by their element.
    for ssn in ["536-22-5210", "536-22-5211", "536225205"] {
        assert!(ssns.contains(&ssn), "{ssn}: {ssns:?}");
    }
    // In a CDATA section, beside markup-like text (`<family>`).
    assert!(values(found, "email").contains(&"family6@example.com"));
    let bare = found
        .iter()
        .find(|f| f.value.as_deref() == Some("536225205"))
        .unwrap();
    assert!(
        bare.evidence.context.iter().any(|w| w == "ssn"),
        "the element's name is the value's context: {bare:?}"
    );
    assert_eq!(
        found[0].location,
        Location::Line {
            line: 5,
            column: 10
        }
    );
}

#[test]
fn an_html_pages_values_are_found_in_text_links_inputs_comments_and_scripts() {
    let bytes = fixture("letters.html");
    // No name: the doctype says it is HTML.
    let report = scan(&bytes, "");
    assert_eq!(report.format, Format::Markup);
    let found = &report.findings;
    assert_eq!(
        counts(found),
        BTreeMap::from([("email", 11), ("phone", 3), ("us_ssn", 6)]),
        "{found:#?}"
    );
    assert_at_the_files_own_places(&bytes, found);
    assert_eq!(
        values(found, "us_ssn"),
        [
            // The inline JSON of a script, a sentence, a table cell, bold text, an input's
            // value, a comment.
            "536-22-5306",
            "536-22-5301",
            "536-22-5302",
            "536-22-5303",
            "536-22-5304",
            "536-22-5305",
        ]
    );
    // A link's `mailto:` and its text are two values.
    let emails = values(found, "email");
    let maria = emails
        .iter()
        .filter(|v| **v == "maria.rivera@example.com")
        .count();
    assert_eq!(maria, 2);
    // Right before a comment's `-->`: read as plain text, the dashes were taken for the
    // address's, and it was not found.
    assert!(emails.contains(&"mailroom@example.com"));
    let plain = scan(&bytes, "letters.txt");
    assert_eq!(plain.format, Format::Text);
    assert_eq!(counts(&plain.findings)["email"], 10);
    assert_eq!(
        values(found, "phone"),
        ["(212) 555-0147", "+12125550123", "212-555-0123"]
    );
}

#[test]
fn pii_free_pages_and_exports_have_no_finding() {
    // Hex colours, numeric ids, long digit strings in `data-` attributes and query strings,
    // CSS, a script, SVG coordinates; a catalog of SKUs, EANs and versions.
    for name in ["control.html", "control.xml"] {
        let report = scan(&fixture(name), name);
        assert_eq!(report.format, Format::Markup);
        assert!(report.findings.is_empty(), "{name}: {:#?}", report.findings);
    }
}

#[test]
fn an_email_between_a_comments_delimiters_is_found_once_they_are_blanked() {
    let page = b"<p>Contact</p><!--ann@example.com--><p>x</p>";
    let markup = scan(page, "page.html");
    assert_eq!(values(&markup.findings, "email"), ["ann@example.com"]);
    assert_at_the_files_own_places(page, &markup.findings);
    // Read as plain text, the comment's dashes are taken for the address's.
    assert!(scan(page, "page.txt").findings.is_empty());
}

/// Type and offsets of each finding: enough to compare two reads.
fn summary(findings: &[Finding]) -> Vec<(String, usize, usize, Location)> {
    findings
        .iter()
        .map(|f| {
            (
                f.pii_type.as_str().to_owned(),
                f.start,
                f.end,
                f.location.clone(),
            )
        })
        .collect()
}

#[test]
fn markup_streamed_in_pieces_of_any_size_finds_what_one_read_finds() {
    // Twenty pages, so that windows of 4 KiB cut tags, quotes, comments and scripts, then a
    // comment whose `--` is blanked only when the `>` after it comes, a piece later.
    let mut bytes: Vec<u8> = fixture("letters.html").repeat(20);
    bytes.extend_from_slice(b"<!--ann@example.com-->\n");
    let whole = scan(&bytes, "letters.html");
    assert_eq!(whole.findings.len(), 20 * 20 + 1);
    let detector = Detector::new();
    for piece in [1, 2, 3, 7, 61, 509, 4093] {
        let hint = Hint {
            content_type: None,
            file_name: Some("letters.html"),
        };
        let mut stream = detector.stream(hint, with_values()).with_window(4096);
        let mut findings = Vec::new();
        for chunk in bytes.chunks(piece) {
            stream.push(chunk, &mut findings).unwrap();
        }
        let report = stream.finish(&mut findings).unwrap();
        assert_eq!(report.text_bytes, bytes.len() as u64);
        assert_eq!(
            summary(&findings),
            summary(&whole.findings),
            "pieces of {piece}"
        );
    }
}

#[test]
fn gzip_and_utf16_markup_are_inflated_and_decoded_before_they_are_stripped() {
    let bytes = fixture("customers.xml");
    let plain = scan(&bytes, "customers.xml");

    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&bytes).unwrap();
    let zipped = scan(&encoder.finish().unwrap(), "customers.xml.gz");
    assert!(zipped.compressed);
    assert_eq!(zipped.format, Format::Markup);
    assert_eq!(summary(&zipped.findings), summary(&plain.findings));

    // UTF-16 with a byte order mark: offsets index the decoded text, which for this ASCII
    // file is the UTF-8 file's, and the markup is blanked after decoding.
    let text = std::str::from_utf8(&bytes).unwrap();
    let mut utf16 = vec![0xff, 0xfe];
    utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let wide = scan(&utf16, "customers.xml");
    assert_eq!(wide.format, Format::Markup);
    assert_eq!(summary(&wide.findings), summary(&plain.findings));
}

//! Property tests of detection on arbitrary input, 10,000 cases each. Whatever a bucket holds
//! (any bytes, gzip of anything, corrupt gzip), a scan finds or skips it with a reason: never
//! a panic. Streaming in any pieces finds what one read finds, in CSV and in markup. Classifier definitions from any
//! text, and any regex up to the size limit, are accepted or refused with a reason, in bounded
//! memory.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::io::Write as _;

use detect::{ClassifierSpec, Classifiers, Detector, Finding, Hint, Options};
use proptest::prelude::*;

const NAMES: [&str; 9] = [
    "people.csv",
    "rows.json",
    "notes.txt",
    "events.ndjson",
    "people.csv.gz",
    "blob",
    "report.TSV",
    "page.html",
    "export.xml",
];

/// One detector for every case: building one compiles every recognizer.
static DETECTOR: std::sync::LazyLock<Detector> = std::sync::LazyLock::new(Detector::new);

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// What a finding says, apart from its evidence: enough to compare two scans.
fn summary(findings: &[Finding]) -> Vec<(String, usize, usize)> {
    findings
        .iter()
        .map(|f| (format!("{:?}", f.pii_type), f.start, f.end))
        .collect()
}

fn scan(detector: &Detector, bytes: &[u8], name: &str) -> Result<Vec<Finding>, String> {
    detector
        .scan_bytes(
            bytes,
            Hint {
                content_type: None,
                file_name: Some(name),
            },
            &Options::default(),
        )
        .map(|report| report.findings)
        .map_err(|reason| format!("{reason:?}"))
}

/// Text that looks like the data buckets hold: CSV-ish rows with digits, separators, names,
/// e-mail-like and date-like runs, and now and then a multi-byte character.
fn data_text() -> impl Strategy<Value = String> {
    "(name,ssn,email,dob\n)?([A-Za-zé ]{0,12},[0-9 ().-]{0,14},[a-z.]{0,8}@?[a-z]{0,6}\\.?[a-z]{0,3},[0-9/ -]{0,11}\n){0,12}"
}

/// The same kind of values in XML and HTML: elements, attributes, comments, CDATA and
/// scripts, some of them left open for the next line to close.
fn markup_text() -> impl Strategy<Value = String> {
    "(<\\?xml version=\"1.0\"\\?>\n)?(<(p|td|ssn|!--|!\\[CDATA\\[|script)( (id|value)=[\"']?[0-9a-z@.-]{0,12}[\"']?)?/?>[A-Za-zé ]{0,8}[0-9 ().-]{0,14}[a-z.]{0,8}@?[a-z]{0,6}\\.?[a-z]{0,3}(</p>|-->|]]>|</script>)?\n){0,12}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn any_bytes_are_scanned_or_skipped_with_findings_inside_them(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        name in prop::sample::select(NAMES.as_slice()),
    ) {
        let detector = &*DETECTOR;
        if let Ok(findings) = scan(detector, &bytes, name) {
            for finding in &findings {
                prop_assert!(finding.start <= finding.end, "{finding:?}");
                prop_assert!((0.0..=1.0).contains(&finding.confidence), "{finding:?}");
            }
        }
    }

    #[test]
    fn gzip_of_any_text_finds_what_the_text_finds(text in data_text()) {
        let detector = &*DETECTOR;
        let plain = scan(detector, text.as_bytes(), "rows.txt");
        let zipped = scan(detector, &gzip(text.as_bytes()), "rows.txt.gz");
        prop_assert_eq!(
            plain.map(|f| summary(&f)),
            zipped.map(|f| summary(&f))
        );
    }

    #[test]
    fn corrupt_gzip_is_skipped_or_scanned_never_a_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..1024),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let detector = &*DETECTOR;
        let mut zipped = gzip(&bytes);
        let at = flip.index(zipped.len());
        zipped[at] ^= mask;
        let _ = scan(detector, &zipped, "x.csv.gz");
        zipped.truncate(cut.index(zipped.len()));
        let _ = scan(detector, &zipped, "x.csv.gz");
    }

    #[test]
    fn streaming_in_any_pieces_finds_what_one_read_finds(
        (text, name) in prop_oneof![
            data_text().prop_map(|text| (text, "people.csv")),
            markup_text().prop_map(|text| (text, "page.html")),
        ],
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let detector = &*DETECTOR;
        let bytes = text.as_bytes();
        let whole = scan(detector, bytes, name);
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        at.push(0);
        at.push(bytes.len());
        at.sort_unstable();
        let hint = Hint { content_type: None, file_name: Some(name) };
        let mut stream = detector.stream(hint, Options::default());
        let mut findings = Vec::new();
        let mut pushed = Ok(());
        for pair in at.windows(2) {
            // A cut may fall inside a multi-byte character: the stream must hold the bytes.
            pushed = pushed.and_then(|()| stream.push(&bytes[pair[0]..pair[1]], &mut findings));
        }
        let streamed = pushed
            .and_then(|()| stream.finish(&mut findings))
            .map(|_| findings)
            .map_err(|reason| format!("{reason:?}"));
        prop_assert_eq!(whole.map(|f| summary(&f)), streamed.map(|f| summary(&f)));
    }

    #[test]
    fn classifier_definitions_from_any_text_are_read_or_refused(text in "\\PC{0,300}") {
        for spec in [ClassifierSpec::from_json(&text), ClassifierSpec::from_yaml(&text)]
            .into_iter()
            .flatten()
        {
            let _ = spec.validate();
        }
    }

    #[test]
    fn any_regex_is_compiled_within_the_limits_or_refused(
        regex in "[a-z0-9()|*+?{},.\\\\\\[\\]^$-]{1,120}",
        keywords in prop::collection::vec("[a-z ]{0,12}", 0..4),
    ) {
        let spec = ClassifierSpec::from_json(
            &serde_json::json!({
                "name": "prop",
                "category": "personal",
                "regex": regex,
                "keywords": keywords,
            })
            .to_string(),
        );
        if let Ok(spec) = spec
            && spec.validate().is_ok()
        {
            let classifiers = Classifiers::compile(std::slice::from_ref(&spec));
            if let Ok(classifiers) = classifiers {
                let detector = Detector::with_classifiers(classifiers);
                let _ = scan(&detector, b"name,badge\nAnn,BDG-123456\n", "people.csv");
            }
        }
    }
}

/// A pattern whose compiled form would need gigabytes is refused by the size limit, not
/// compiled.
#[test]
fn an_exploding_regex_is_refused_by_the_size_limit() {
    for regex in [
        "(?:\\w{100}){100}",
        "\\w{1000}\\w{1000}",
        "(?:(?:(?:a{50}){50}){50}){50}",
    ] {
        let spec = ClassifierSpec::from_json(
            &serde_json::json!({ "name": "boom", "category": "personal", "regex": regex })
                .to_string(),
        )
        .unwrap();
        let refused = spec
            .validate()
            .and_then(|()| Classifiers::compile(std::slice::from_ref(&spec)).map(|_| ()));
        assert!(refused.is_err(), "{regex} was compiled");
    }
}

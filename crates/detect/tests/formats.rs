//! Content as files arrive: CSV, JSON and NDJSON structure, encodings, gzip, binary content,
//! and streams cut at any point.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

use std::io::Write;

use detect::{Detector, Encoding, Finding, Format, Hint, Location, Options, Report, SkipReason};
use flate2::Compression;
use flate2::write::GzEncoder;
use proptest::prelude::*;
use tokenize_core::PiiType;

fn scan(bytes: &[u8], hint: Hint<'_>) -> Result<Report, SkipReason> {
    Detector::new().scan_bytes(bytes, hint, &Options::default())
}

fn named(name: &str) -> Hint<'_> {
    Hint {
        content_type: None,
        file_name: Some(name),
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn summary(findings: &[Finding], text: &str) -> Vec<(PiiType, String)> {
    findings
        .iter()
        .map(|f| (f.pii_type.pii().unwrap(), text[f.start..f.end].to_owned()))
        .collect()
}

#[test]
fn a_csv_header_is_context_and_names_the_location() {
    let csv = "name,ssn,order_id\nAnn,123456789,987654321\n\"Lee, Bo\",078-05-1120,5\n";
    let report = scan(csv.as_bytes(), named("people.csv")).unwrap();
    assert_eq!(report.format, Format::Csv);
    assert_eq!(
        summary(&report.findings, csv),
        [
            (PiiType::UsSsn, "123456789".into()),
            (PiiType::UsSsn, "078-05-1120".into()),
        ],
        "the bare number under `ssn` is found; the one under `order_id` is not"
    );
    let first = &report.findings[0];
    assert_eq!(
        first.location,
        Location::Csv {
            row: 1,
            column: 2,
            header: Some("ssn".into())
        }
    );
    assert!(
        first.evidence.context.iter().any(|w| w == "ssn"),
        "{first:?}"
    );
    assert!(matches!(
        report.findings[1].location,
        Location::Csv {
            row: 2,
            column: 2,
            ..
        }
    ));
    // The same text without the header is plain text: a bare nine digits is not enough.
    let plain = Detector::new().scan("Ann,123456789,987654321", 0.5);
    assert!(plain.is_empty(), "{plain:?}");
}

#[test]
fn tsv_by_content_type() {
    let tsv = "id\tphone_number\n1\t2025550187\n";
    let hint = Hint {
        content_type: Some("text/tab-separated-values"),
        file_name: None,
    };
    let report = scan(tsv.as_bytes(), hint).unwrap();
    assert_eq!(report.format, Format::Tsv);
    assert_eq!(
        summary(&report.findings, tsv),
        [(PiiType::Phone, "2025550187".into())]
    );
}

#[test]
fn json_keys_are_context_and_paths_locate_findings() {
    let json = r#"{"customers": [
  {"name": "Ann", "dateOfBirth": "1980-03-04", "passportNumber": "912803456"},
  {"name": "Bo", "contact": {"email": "bo@example.org"}}
]}"#;
    let report = scan(json.as_bytes(), Hint::default()).unwrap();
    assert_eq!(report.format, Format::Json, "sniffed from the content");
    assert_eq!(
        summary(&report.findings, json),
        [
            (PiiType::Dob, "1980-03-04".into()),
            (PiiType::PassportUs, "912803456".into()),
            (PiiType::Email, "bo@example.org".into()),
        ]
    );
    let paths: Vec<_> = report
        .findings
        .iter()
        .map(|f| match &f.location {
            Location::Json { line, path } => (*line, path.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        paths,
        [
            (2, "$.customers[0].dateOfBirth"),
            (2, "$.customers[0].passportNumber"),
            (3, "$.customers[1].contact.email"),
        ]
    );
}

#[test]
fn ndjson_locates_by_line_and_path() {
    let ndjson = "{\"id\": 1, \"note\": \"none\"}\n{\"id\": 2, \"sin\": \"130692544\"}\n";
    let report = scan(ndjson.as_bytes(), named("events.ndjson")).unwrap();
    assert_eq!(
        summary(&report.findings, ndjson),
        [(PiiType::CaSin, "130692544".into())]
    );
    assert_eq!(
        report.findings[0].location,
        Location::Json {
            line: 2,
            path: "$.sin".into()
        }
    );
}

#[test]
fn utf16_with_a_bom_and_latin1_are_decoded() {
    let text = "Né le 12 juin 1975, NAS 130 692 544.";
    let utf16 = |little: bool| {
        let mut bytes = if little {
            vec![0xff, 0xfe]
        } else {
            vec![0xfe, 0xff]
        };
        for unit in text.encode_utf16() {
            bytes.extend(if little {
                unit.to_le_bytes()
            } else {
                unit.to_be_bytes()
            });
        }
        bytes
    };
    let expected = [
        (PiiType::Dob, "12 juin 1975".to_owned()),
        (PiiType::CaSin, "130 692 544".to_owned()),
    ];
    for (bytes, encoding) in [
        (utf16(true), Encoding::Utf16Le),
        (utf16(false), Encoding::Utf16Be),
        (
            text.chars().map(|c| c as u8).collect::<Vec<u8>>(),
            Encoding::Latin1,
        ),
        (text.as_bytes().to_vec(), Encoding::Utf8),
    ] {
        let report = scan(&bytes, Hint::default()).unwrap();
        assert_eq!(report.encoding, encoding);
        // Offsets index the text decoded to UTF-8.
        assert_eq!(summary(&report.findings, text), expected, "{encoding:?}");
    }
}

#[test]
fn gzip_of_any_format_is_inflated() {
    let csv = "name,ssn\nAnn,123456789\n".repeat(2000);
    let plain = scan(csv.as_bytes(), named("a.csv")).unwrap();
    let packed = gzip(csv.as_bytes());
    let report = scan(&packed, named("a.csv.gz")).unwrap();
    assert!(report.compressed);
    assert_eq!(report.format, Format::Csv);
    assert_eq!(report.bytes_read, packed.len() as u64);
    assert_eq!(report.text_bytes, csv.len() as u64);
    assert_eq!(report.findings, plain.findings);
    assert_eq!(report.findings.len(), 2000);
    // Truncated or corrupt streams are refused with the reason, not half-scanned silently.
    assert_eq!(
        scan(&packed[..packed.len() / 2], Hint::default()),
        Err(SkipReason::CorruptGzip)
    );
    let mut corrupt = packed.clone();
    corrupt[20] ^= 0xff;
    corrupt[21] ^= 0xff;
    assert_eq!(
        scan(&corrupt, Hint::default()),
        Err(SkipReason::CorruptGzip)
    );
}

#[test]
fn binary_content_is_skipped_with_the_reason() {
    assert_eq!(
        scan(b"%PDF-1.7\n SSN 123-45-6789", Hint::default()),
        Err(SkipReason::BinaryFormat("pdf"))
    );
    assert_eq!(
        scan(&gzip(b"\x89PNG\r\n\x1a\n...."), Hint::default()),
        Err(SkipReason::BinaryFormat("png"))
    );
    let mut noise: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    noise[10] = 0;
    assert_eq!(scan(&noise, Hint::default()), Err(SkipReason::NulBytes));
    assert_eq!(
        SkipReason::NulBytes.to_string(),
        "binary content (NUL bytes)"
    );
    // Empty content is empty text.
    assert!(scan(b"", Hint::default()).unwrap().findings.is_empty());
}

#[test]
fn values_only_on_request() {
    let text = b"SSN 123-45-6789";
    let without = scan(text, Hint::default()).unwrap();
    assert_eq!(without.findings[0].value, None);
    let options = Options {
        with_values: true,
        ..Options::default()
    };
    let with = Detector::new()
        .scan_bytes(text, Hint::default(), &options)
        .unwrap();
    assert_eq!(with.findings[0].value.as_deref(), Some("123-45-6789"));
}

/// Content rich in findings of every kind and in every structure, to cut anywhere.
fn sample(format: Format, rows: usize) -> String {
    let values = [
        ("ssn", "123-45-6789"),
        ("sin", "130 692 544"),
        ("email", "ann.lee@example.org"),
        ("phone", "+1 (202) 555-0187"),
        ("date_of_birth", "March 4, 1980"),
        ("salary", "$1,234.50"),
        ("case", "CV-2023-001234"),
        ("passport", "912803456"),
        ("nas", "130692544"),
    ];
    let mut out = String::new();
    match format {
        Format::Csv => out.push_str("id,kind,value,note\n"),
        Format::Json => out.push_str("[\n"),
        _ => {}
    }
    for n in 0..rows {
        let (kind, value) = values[n % values.len()];
        let filler = "lorem ipsum 42 dolor ".repeat(n % 7);
        match format {
            // A cell's own text is its context; another cell of the row is not.
            Format::Csv => out.push_str(&format!("{n},{kind},\"{kind} {value}\",\"{filler}\"\n")),
            Format::Json => out.push_str(&format!(
                "{{\"id\": {n}, \"{kind}\": \"{value}\", \"note\": \"{filler}\"}},\n"
            )),
            _ => out.push_str(&format!(
                "{n} {filler} the {kind} is {value}; né le 4 mai 1990\n"
            )),
        }
    }
    if format == Format::Json {
        out.push_str("{}]\n");
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Streaming through small windows, in pieces of any size, finds exactly what one pass over
    /// the whole text finds: nothing is lost or doubled at a boundary.
    #[test]
    fn streams_cut_anywhere_find_the_same(
        format in prop_oneof![Just(Format::Text), Just(Format::Csv), Just(Format::Json)],
        window in 4096usize..9000,
        pieces in proptest::collection::vec(1usize..5000, 1..40),
    ) {
        let text = sample(format, 400);
        let detector = Detector::new();
        let options = Options::default();
        let whole = detector.scan_text(&text, format, &options);
        prop_assert!(whole.len() >= 400, "{}", whole.len());
        let mut stream = detector.stream(Hint::default(), options).with_format(format).with_window(window);
        let mut found = Vec::new();
        let mut rest = text.as_bytes();
        for size in pieces.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, after) = rest.split_at((*size).min(rest.len()));
            stream.push(piece, &mut found).unwrap();
            rest = after;
        }
        stream.finish(&mut found).unwrap();
        prop_assert_eq!(found, whole);
    }
}

#[test]
fn memory_stays_bounded_whatever_the_size() {
    let detector = Detector::new();
    let mut stream = detector
        .stream(Hint::default(), Options::default())
        .with_window(16 << 10);
    let block = sample(Format::Text, 200);
    let mut found = Vec::new();
    let mut total = 0usize;
    let mut peak = 0usize;
    // 8 MiB of text through a 16 KiB window.
    while total < 8 << 20 {
        stream.push(block.as_bytes(), &mut found).unwrap();
        total += block.len();
        peak = peak.max(stream.buffered());
        found.clear();
    }
    stream.finish(&mut found).unwrap();
    assert!(
        peak <= 4 * (16 << 10),
        "held {peak} bytes for a 16 KiB window"
    );
    // A gzip bomb (a run of zeros inflates about a thousandfold) is inflated a step at a time.
    let bomb = gzip(&vec![b'a'; 32 << 20]);
    let mut stream = detector
        .stream(Hint::default(), Options::default())
        .with_window(16 << 10);
    let mut peak = 0;
    for piece in bomb.chunks(64 << 10) {
        stream.push(piece, &mut found).unwrap();
        peak = peak.max(stream.buffered());
    }
    let report = stream.finish(&mut found).unwrap();
    assert_eq!(report.text_bytes, 32 << 20);
    assert!(peak <= 1 << 20, "held {peak} bytes inflating a bomb");

    // A bomb of one SSN repeated: the findings a caller keeps for the object stop at the
    // limit (a few steps past it at most), with a reason, instead of growing with the text.
    let dense = gzip(&"ssn 219-09-9999\n".repeat(2_000_000).into_bytes());
    let mut stream = detector.stream(Hint::default(), Options::default());
    let mut kept = Vec::new();
    let mut stopped = None;
    for piece in dense.chunks(64 << 10) {
        if let Err(reason) = stream.push(piece, &mut kept) {
            stopped = Some(reason);
            break;
        }
    }
    assert_eq!(stopped, Some(SkipReason::TooManyFindings));
    assert!(
        kept.len() <= detect::MAX_FINDINGS_PER_OBJECT + 400_000,
        "{} findings kept",
        kept.len()
    );
}

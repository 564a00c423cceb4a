//! Detection on arbitrary bytes: the first byte picks the object's name (and so its format),
//! and an odd first byte also wraps the rest in gzip. Every object is scanned or skipped with
//! a reason, and every finding lies inside the bytes scanned.
#![no_main]

use std::io::Write as _;
use std::sync::LazyLock;

use detect::{Detector, Hint, Options};
use libfuzzer_sys::fuzz_target;

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

static DETECTOR: LazyLock<Detector> = LazyLock::new(Detector::new);

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip to memory");
    encoder.finish().expect("gzip to memory")
}

fuzz_target!(|bytes: &[u8]| {
    let Some((&pick, rest)) = bytes.split_first() else {
        return;
    };
    let name = NAMES[usize::from(pick) % NAMES.len()];
    let body = if pick & 1 == 1 { gzip(rest) } else { rest.to_vec() };
    let hint = Hint {
        content_type: None,
        file_name: Some(name),
    };
    if let Ok(report) = DETECTOR.scan_bytes(&body, hint, &Options::default()) {
        for finding in report.findings {
            assert!(finding.start <= finding.end);
        }
    }
});

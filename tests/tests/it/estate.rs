//! The data estate of issue 42, end to end: one bucket holding a Parquet table and an Avro
//! event file from a data lake, a payroll workbook, a case summary and a PDF of letters from a
//! shared drive, a ZIP of CSV exports (with a nested ZIP), a tar.gz of application logs, an
//! HTML page and an XML export, PII-free controls of each format and a zip bomb. One scan
//! finds, in every file, at least 0.95 of the planted values of each type, each with the
//! location its format gives, nothing in the controls, and survives the bomb.

use std::collections::BTreeMap;

use crate::formats::scan_fixtures;

/// Every file with its planted SSNs and emails (counted by the fixtures' scripts) and the
/// keys of its findings' locations.
const PLANTED: [(&str, i64, i64, &[&str]); 9] = [
    ("customers.parquet", 300, 300, &["column", "row"]),
    // 160 SSNs (every fifth holder has none); 200 emails and 199 alternative ones.
    ("events.avro", 160, 399, &["field", "record"]),
    // Three sheets; twelve of the SSNs typed in as numbers.
    ("payroll.xlsx", 63, 51, &["cell", "header", "sheet"]),
    ("case_summary.docx", 3, 4, &["paragraph", "part"]),
    ("letters.pdf", 5, 5, &["line", "page"]),
    ("export.zip", 26, 26, &["archive"]),
    ("logs.tar.gz", 4, 15, &["archive"]),
    ("letters.html", 6, 11, &["column", "line"]),
    ("customers.xml", 10, 10, &["column", "line"]),
];

const CONTROLS: [&str; 8] = [
    "control.parquet",
    "control.avro",
    "control.xlsx",
    "control.docx",
    "control.pdf",
    "control.zip",
    "control.html",
    "control.xml",
];

/// The least share of a file's planted values of one type a scan must find.
const RECALL: f64 = 0.95;

#[tokio::test]
async fn a_data_estate_is_read_in_every_format_with_each_values_location() {
    let mut names: Vec<&str> = PLANTED.iter().map(|p| p.0).collect();
    names.extend(CONTROLS);
    names.push("bomb.zip");
    let scanned = scan_fixtures("estate", "share", &names).await;
    let done = &scanned.done;
    let coverage = &done["coverage"];
    assert_eq!(coverage["total_enumerated"], names.len(), "{done}");
    assert_eq!(coverage["total_scanned"], names.len(), "{done}");
    assert_eq!(coverage["total_failed"], 0, "{done}");
    assert_eq!(
        coverage["skip_reasons"]["compression_ratio"], 1,
        "the bomb stops at its ratio: {done}"
    );

    let found = scanned.findings().await;
    let mut by_file: BTreeMap<(String, String), i64> = BTreeMap::new();
    for f in &found {
        let object = f["resource"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches("estate/share/")
            .to_owned();
        let pii = f["pii_type"].as_str().unwrap_or_default().to_owned();
        *by_file.entry((object, pii)).or_default() += f["occurrences"].as_i64().unwrap_or(0);
    }
    for (file, ssns, emails, keys) in PLANTED {
        for (pii, planted) in [("us_ssn", ssns), ("email", emails)] {
            let got = by_file
                .get(&(file.to_owned(), pii.to_owned()))
                .copied()
                .unwrap_or(0);
            let recall = got as f64 / planted as f64;
            eprintln!("{file}\t{pii}\t{got}/{planted}\t{recall:.3}");
            assert!(
                recall >= RECALL && got <= planted,
                "{file} {pii}: {got} of {planted}"
            );
        }
        let sample = found
            .iter()
            .find(|f| f["resource"] == format!("estate/share/{file}"))
            .unwrap_or_else(|| panic!("{file}: no finding"));
        let location = &sample["locations"][0];
        let mut shape: Vec<&str> = location
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        shape.sort_unstable();
        if keys == ["archive"] {
            assert!(shape.contains(&"archive"), "{file}: {location}");
        } else {
            assert_eq!(shape, keys, "{file}: {location}");
        }
    }
    for control in CONTROLS {
        assert!(
            !found
                .iter()
                .any(|f| f["resource"] == format!("estate/share/{control}")),
            "{control} holds no personal data"
        );
    }
}

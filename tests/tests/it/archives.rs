//! Archives in a customer's bucket, end to end: a scan on moto reads ZIP, TAR and TAR.GZ
//! objects member by member (nested ZIPs and gzip members included) from the fixtures Python's
//! zipfile and tarfile wrote (`tests/fixtures/formats/make.py`), finds exactly the planted
//! values with each member's path in their locations, and survives a bomb, a depth past the
//! limit, an encrypted member and a cut stream.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::formats::{counts, scan_fixtures};

const FIXTURES: [&str; 12] = [
    "export.zip",
    "logs.tar.gz",
    "pax.tar",
    "control.zip",
    "bomb.zip",
    "deep.zip",
    "encrypted.zip",
    "truncated.tar.gz",
    "app.log.bz2",
    "app.log.zst",
    "exports.tar.zst",
    "exports.tar.bz2",
];

#[tokio::test]
async fn a_scan_reads_every_member_of_zip_and_tar_archives_and_survives_hostile_ones() {
    let scanned = scan_fixtures("shared-drive", "exports", &FIXTURES).await;
    let done = &scanned.done;
    let coverage = &done["coverage"];
    assert_eq!(coverage["total_enumerated"], 12, "{done}");
    assert_eq!(coverage["total_failed"], 0, "{done}");
    assert_eq!(
        coverage["total_scanned"], 12,
        "every archive is read, the hostile ones as far as their limits: {done}"
    );
    assert_eq!(coverage["total_skipped"], 0, "{done}");
    assert_eq!(coverage["skipped_reasons"], json!({}), "{done}");
    // What was left unread inside them is said, member by member.
    assert_eq!(
        coverage["skip_reasons"],
        json!({
            "compression_ratio": 1,
            "archive_depth": 1,
            "encrypted_zip": 1,
            "corrupt_tar": 1
        }),
        "{done}"
    );

    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "shared-drive/exports/", |t| {
        t == "us_ssn" || t == "email"
    });
    let planted: BTreeMap<(String, String, String), i64> = [
        // customers.csv (20) and more/customers_2.csv.gz (5): one column across members.
        ("export.zip", "us_ssn", "ssn", 25),
        ("export.zip", "email", "email", 25),
        // nested/inner.zip > deep/notes.txt
        ("export.zip", "us_ssn", "", 1),
        ("export.zip", "email", "", 1),
        // app/2024-05-01.log (12 emails) and app/old.log.gz (1 SSN); the long-named CSV (3).
        ("logs.tar.gz", "email", "", 12),
        ("logs.tar.gz", "us_ssn", "", 1),
        ("logs.tar.gz", "us_ssn", "ssn", 3),
        ("logs.tar.gz", "email", "email", 3),
        ("pax.tar", "us_ssn", "ssn", 2),
        ("pax.tar", "email", "email", 2),
        // The member that is not encrypted.
        ("encrypted.zip", "us_ssn", "", 1),
        ("encrypted.zip", "email", "", 1),
        // The whole member before the cut.
        ("truncated.tar.gz", "email", "", 12),
        // Compressed files that are no archives, and TARs inside them.
        ("app.log.bz2", "email", "", 12),
        ("app.log.bz2", "us_ssn", "", 1),
        ("app.log.zst", "email", "", 12),
        ("app.log.zst", "us_ssn", "", 1),
        ("exports.tar.zst", "us_ssn", "ssn", 4),
        ("exports.tar.zst", "email", "email", 4),
        ("exports.tar.bz2", "us_ssn", "ssn", 4),
        ("exports.tar.bz2", "email", "email", 4),
    ]
    .into_iter()
    .map(|(o, t, f, n)| ((o.to_owned(), t.to_owned(), f.to_owned()), n))
    .collect();
    assert_eq!(counts, planted, "{body}");

    // A value in a nested ZIP says where, member by member.
    let notes = found
        .iter()
        .find(|f| {
            f["pii_type"] == "us_ssn"
                && f["field"].is_null()
                && f.to_string().contains("export.zip")
        })
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(
        notes["location"],
        json!({
            "archive": ["export.zip", "nested/inner.zip", "deep/notes.txt"],
            "line": 2,
            "column": 82
        }),
        "{notes}"
    );
    let column: &Value = found
        .iter()
        .find(|f| {
            f["pii_type"] == "us_ssn" && f["field"] == "ssn" && f.to_string().contains("export.zip")
        })
        .unwrap();
    let samples = column["locations"].as_array().unwrap();
    assert_eq!(samples.len(), 15, "{column}");
    assert_eq!(
        samples[0],
        json!({"archive": ["export.zip", "customers.csv"], "row": 1, "column": 3, "header": "ssn"})
    );

    // A compressed file that is no archive has the location of its content, as a gzip's.
    let log = found
        .iter()
        .find(|f| f["pii_type"] == "us_ssn" && f["resource"] == "shared-drive/exports/app.log.zst")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(log["location"], json!({"line": 25, "column": 65}), "{log}");

    // Nothing of the values is stored.
    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in [
        "536-22-4471",
        "jane.doe@example.com",
        "536-22-4480",
        "customer3@example.com",
    ] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

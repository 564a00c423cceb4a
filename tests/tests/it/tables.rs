//! Table files in a customer's bucket, end to end. A scan on moto reads the Parquet tables
//! pyarrow wrote (`tests/fixtures/formats/make_parquet.py`) column by column, flat and nested,
//! under every codec and inside a ZIP, and the Avro files fastavro wrote (`make_avro.py`)
//! record by record; it finds exactly the planted values with each one's column and row or
//! field and record, nothing in the PII-free tables, and survives cut, encrypted, damaged and
//! bomb files. Workbooks (XLSX, XLS, XLSB, ODS) are read cell by cell, documents (DOCX, PPTX,
//! ODT, ODP) paragraph by paragraph, and PDFs page by page.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::Method;
use serde_json::{Value, json};

use crate::formats::{counts, scan_fixtures};

const FIXTURES: [&str; 16] = [
    "customers.parquet",
    "nested.parquet",
    "payroll.parquet",
    "control.parquet",
    "lake.zip",
    "codec_none.parquet",
    "codec_snappy.parquet",
    "codec_gzip.parquet",
    "codec_brotli.parquet",
    "codec_lz4.parquet",
    "codec_zstd.parquet",
    "truncated.parquet",
    "encrypted.parquet",
    "damaged.parquet",
    "bomb.parquet",
    "repeated.parquet",
];

#[tokio::test]
async fn a_scan_reads_every_column_of_parquet_tables_and_survives_hostile_ones() {
    let scanned = scan_fixtures("lake", "tables", &FIXTURES).await;
    let done = &scanned.done;
    let coverage = &done["coverage"];
    assert_eq!(coverage["total_enumerated"], 16, "{done}");
    assert_eq!(coverage["total_failed"], 0, "{done}");
    // A file without its footer, or with an encrypted one, is not read at all.
    assert_eq!(coverage["total_scanned"], 14, "{done}");
    assert_eq!(coverage["total_skipped"], 2, "{done}");
    assert_eq!(
        coverage["skipped_reasons"],
        json!({"corrupt_parquet": 1, "encrypted_parquet": 1}),
        "{done}"
    );
    // Inside files that were read: the damaged column chunk, the bomb page and the value
    // repeated past its file's allowance.
    assert_eq!(
        coverage["skip_reasons"],
        json!({"corrupt_parquet": 2, "encrypted_parquet": 1, "compression_ratio": 2}),
        "{done}"
    );

    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "lake/tables/", |t| t == "us_ssn" || t == "email");
    let mut planted: Vec<(String, &str, &str, i64)> = [
        ("customers.parquet", "us_ssn", "ssn", 300),
        ("customers.parquet", "email", "email", 300),
        // Every tenth customer is null; alternative emails: i % 3 on rows not ≡ 3 (mod 4).
        ("nested.parquet", "us_ssn", "customer.ssn", 36),
        ("nested.parquet", "email", "customer.contact.email", 36),
        ("nested.parquet", "email", "alt_emails", 30),
        // SSNs stored as integers, named by their column.
        ("payroll.parquet", "us_ssn", "employee_ssn", 30),
        // Two parts of 50 rows: one column across members.
        ("lake.zip", "us_ssn", "ssn", 100),
        ("lake.zip", "email", "email", 100),
        // The first row group's ssn chunk is damaged: the two after it are read.
        ("damaged.parquet", "us_ssn", "ssn", 300 - 128),
        ("damaged.parquet", "email", "email", 300),
        ("bomb.parquet", "email", "email", 1),
    ]
    .into_iter()
    .map(|(o, t, f, n)| (o.to_owned(), t, f, n))
    .collect();
    for codec in ["none", "snappy", "gzip", "brotli", "lz4", "zstd"] {
        planted.push((format!("codec_{codec}.parquet"), "us_ssn", "ssn", 25));
        planted.push((format!("codec_{codec}.parquet"), "email", "email", 25));
    }
    let planted: BTreeMap<(String, String, String), i64> = planted
        .into_iter()
        .map(|(o, t, f, n)| ((o, t.to_owned(), f.to_owned()), n))
        .collect();
    assert_eq!(counts, planted, "{body}");
    // The PII-free table has no finding of any type.
    assert!(
        !found
            .iter()
            .any(|f| f["resource"] == "lake/tables/control.parquet"),
        "{body}"
    );

    // Each sample says which column and row; in a ZIP, which member too.
    let sample = |object: &str, field: &str| -> Value {
        found
            .iter()
            .find(|f| f["resource"] == format!("lake/tables/{object}") && f["field"] == field)
            .unwrap_or_else(|| panic!("{object} {field}: {body}"))["locations"][0]
            .clone()
    };
    assert_eq!(
        sample("customers.parquet", "ssn"),
        json!({"column": "ssn", "row": 1})
    );
    assert_eq!(
        sample("nested.parquet", "alt_emails"),
        json!({"column": "alt_emails", "row": 2})
    );
    assert_eq!(
        sample("lake.zip", "ssn"),
        json!({"archive": ["lake.zip", "part-0.parquet"], "column": "ssn", "row": 1})
    );

    // Findings by the kind of their locations: in an archive, or a table's columns (those in
    // the ZIP included, whose samples are columns too); a kind no finding has; a bad kind.
    let kind = async |kind: &str| -> BTreeSet<String> {
        scanned
            .findings_where(&format!("&location_kind={kind}"))
            .await
            .iter()
            .map(|f| {
                f["resource"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("lake/tables/")
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(
        kind("archive").await,
        BTreeSet::from(["lake.zip".to_owned()])
    );
    let objects: BTreeSet<String> = counts.keys().map(|k| k.0.clone()).collect();
    assert_eq!(kind("table").await, objects);
    assert!(kind("csv").await.is_empty());
    let (status, body) = scanned
        .admin()
        .send(Method::GET, "/findings?location_kind=parquet", None)
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["details"]["field"], "location_kind", "{body}");

    // Nothing of the values is stored.
    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in [
        "536-22-4100",
        "customer7@example.com",
        "536224600",
        "536-22-4310",
    ] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

const AVRO: [&str; 8] = [
    "events.avro",
    "codec_null.avro",
    "codec_deflate.avro",
    "codec_snappy.avro",
    "codec_zstandard.avro",
    "control.avro",
    "truncated.avro",
    "bomb.avro",
];

#[tokio::test]
async fn a_scan_reads_every_field_of_avro_files_and_survives_hostile_ones() {
    let scanned = scan_fixtures("events", "feeds", &AVRO).await;
    let done = &scanned.done;
    let coverage = &done["coverage"];
    assert_eq!(coverage["total_scanned"], 8, "{done}");
    assert_eq!(coverage["total_skipped"], 0, "{done}");
    assert_eq!(
        coverage["skip_reasons"],
        json!({"corrupt_avro": 1, "avro_limit": 1}),
        "{done}"
    );

    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "events/feeds/", |_| true);
    let truncated = counts
        .get(&(
            "truncated.avro".into(),
            "email".into(),
            "contact.email".into(),
        ))
        .copied()
        .unwrap_or_else(|| panic!("{body}"));
    assert!(
        (50..200).contains(&truncated),
        "whole blocks before the cut: {truncated}"
    );
    let mut planted: Vec<(String, &str, &str, i64)> = [
        // Every fifth account has no SSN; alternative emails: i % 3 per record.
        ("events.avro", "us_ssn", "contact.ssn", 160),
        ("events.avro", "email", "contact.email", 200),
        ("events.avro", "email", "alt_emails", 199),
    ]
    .into_iter()
    .map(|(o, t, f, n)| (o.to_owned(), t, f, n))
    .collect();
    for codec in ["null", "deflate", "snappy", "zstandard"] {
        let name = format!("codec_{codec}.avro");
        planted.push((name.clone(), "us_ssn", "contact.ssn", 20));
        planted.push((name.clone(), "email", "contact.email", 25));
        planted.push((name, "email", "alt_emails", 24));
    }
    let mut planted: BTreeMap<(String, String, String), i64> = planted
        .into_iter()
        .map(|(o, t, f, n)| ((o, t.to_owned(), f.to_owned()), n))
        .collect();
    // The cut file's SSNs and alternative emails follow its emails' record count; checked
    // above by range, taken here as read.
    for ((object, pii, field), n) in &counts {
        if object == "truncated.avro" {
            planted.insert((object.clone(), pii.clone(), field.clone()), *n);
        }
    }
    assert_eq!(counts, planted, "{body}");
    let sample = found
        .iter()
        .find(|f| f["resource"] == "events/feeds/events.avro" && f["field"] == "contact.ssn")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(
        sample["locations"][0],
        json!({"field": "contact.ssn", "record": 1})
    );
    assert_eq!(
        scanned.findings_where("&location_kind=record").await.len(),
        found.len()
    );
    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in ["536-22-4700", "holder7@example.com"] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

#[tokio::test]
async fn a_scan_reads_every_sheet_of_a_workbook_cell_by_cell() {
    let scanned = scan_fixtures("drive", "finance", &["payroll.xlsx", "control.xlsx"]).await;
    let done = &scanned.done;
    assert_eq!(done["coverage"]["total_scanned"], 2, "{done}");
    assert_eq!(done["coverage"]["skip_reasons"], json!({}), "{done}");
    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "drive/finance/", |t| t == "us_ssn" || t == "email");
    let planted: BTreeMap<(String, String, String), i64> = [
        // Payroll's SSN and Email columns, named by their headers.
        ("SSN", "us_ssn", 40),
        ("Email", "email", 40),
        // The case notes' Summary column: one of each in a sentence.
        ("Summary", "us_ssn", 1),
        ("Summary", "email", 1),
        // A sheet without a header row: its columns are named by their letters.
        ("A", "us_ssn", 10),
        ("B", "email", 10),
        // SSNs typed in as numbers, named by their column.
        ("employee_ssn", "us_ssn", 12),
    ]
    .into_iter()
    .map(|(f, t, n)| (("payroll.xlsx".to_owned(), t.to_owned(), f.to_owned()), n))
    .collect();
    assert_eq!(counts, planted, "{body}");
    let ssn = found
        .iter()
        .find(|f| f["field"] == "SSN")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(
        ssn["locations"][0],
        json!({"sheet": "Payroll", "cell": "B2", "header": "SSN"})
    );
    assert_eq!(
        scanned.findings_where("&location_kind=sheet").await.len(),
        found.len()
    );
    assert!(
        scanned
            .findings_where("&location_kind=csv")
            .await
            .is_empty()
    );
    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in ["536-22-4800", "staff1@example.com", "536224950"] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

#[tokio::test]
async fn a_scan_reads_the_paragraphs_of_word_documents_and_slides() {
    let names = ["case_summary.docx", "review.pptx", "control.docx"];
    let scanned = scan_fixtures("drive", "cases", &names).await;
    let done = &scanned.done;
    assert_eq!(done["coverage"]["total_scanned"], 3, "{done}");
    assert_eq!(done["coverage"]["skip_reasons"], json!({}), "{done}");
    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "drive/cases/", |t| t == "us_ssn" || t == "email");
    let planted: BTreeMap<(String, String, String), i64> = [
        // The body's split SSN and its email, the table's two rows, the footer's email.
        ("case_summary.docx", "us_ssn", 3),
        ("case_summary.docx", "email", 4),
        // A slide's SSN and email, and the email in its notes.
        ("review.pptx", "us_ssn", 1),
        ("review.pptx", "email", 2),
    ]
    .into_iter()
    .map(|(o, t, n)| ((o.to_owned(), t.to_owned(), String::new()), n))
    .collect();
    assert_eq!(counts, planted, "{body}");
    let slide = found
        .iter()
        .find(|f| f["resource"] == "drive/cases/review.pptx" && f["pii_type"] == "us_ssn")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(slide["locations"][0], json!({"slide": 2, "paragraph": 2}));
    let split = found
        .iter()
        .find(|f| f["resource"] == "drive/cases/case_summary.docx" && f["pii_type"] == "us_ssn")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(
        split["locations"][0],
        json!({"part": "word/document.xml", "paragraph": 3})
    );
    assert_eq!(
        scanned
            .findings_where("&location_kind=document")
            .await
            .len(),
        found.len()
    );
    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in ["536-22-4871", "dana.lee@example.com", "536-22-4874"] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

#[tokio::test]
async fn a_scan_reads_the_text_layer_of_pdfs_page_by_page_and_skips_what_it_cannot_read() {
    let names = [
        "letters.pdf",
        "statement.pdf",
        "control.pdf",
        "owner_only.pdf",
        "locked.pdf",
        "scanned.pdf",
        "bomb.pdf",
        "truncated.pdf",
    ];
    let scanned = scan_fixtures("drive", "mail", &names).await;
    let done = &scanned.done;
    let coverage = &done["coverage"];
    assert_eq!(coverage["total_scanned"], 4, "{done}");
    assert_eq!(coverage["total_failed"], 0, "{done}");
    assert_eq!(coverage["total_skipped"], 4, "{done}");
    assert_eq!(
        coverage["skipped_reasons"],
        json!({"encrypted_pdf": 1, "image_only_pdf": 1, "pdf_limit": 1, "corrupt_pdf": 1}),
        "{done}"
    );
    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "drive/mail/", |t| t == "us_ssn" || t == "email");
    let planted: BTreeMap<(String, String, String), i64> = [
        // A letter a page, in a standard and an embedded font, and a table of three rows.
        ("letters.pdf", "us_ssn", 5),
        ("letters.pdf", "email", 5),
        // Text drawn in pieces, and a filled form field's value.
        ("statement.pdf", "us_ssn", 2),
        ("statement.pdf", "email", 1),
        // Encrypted, but with an empty user password.
        ("owner_only.pdf", "us_ssn", 1),
        ("owner_only.pdf", "email", 1),
    ]
    .into_iter()
    .map(|(o, t, n)| ((o.to_owned(), t.to_owned(), String::new()), n))
    .collect();
    assert_eq!(counts, planted, "{body}");
    let page_two = found
        .iter()
        .find(|f| f["resource"] == "drive/mail/letters.pdf" && f["pii_type"] == "us_ssn")
        .unwrap_or_else(|| panic!("{body}"));
    let locations = page_two["locations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        locations.contains(&json!({"page": 2, "line": 4})),
        "{locations:?}"
    );
    assert_eq!(
        scanned
            .findings_where("&location_kind=document")
            .await
            .len(),
        found.len()
    );
    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in ["536-22-4101", "omar.haddad@example.com", "536-22-4107"] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

const LEGACY: [&str; 14] = [
    "payroll.xls",
    "control.xls",
    "not_a_workbook.xls",
    "truncated.xls",
    "payroll.xlsb",
    "control.xlsb",
    "payroll.ods",
    "control.ods",
    "bomb.ods",
    "encrypted.ods",
    "truncated.ods",
    "case_notes.odt",
    "control.odt",
    "review.odp",
];

/// The workbooks and documents of older and open office suites, written by xlwt, odfpy and a
/// writer of XLSB's records (`make_xls.py`, `make_odf.py`, `make_xlsb.py`): every planted
/// value found with its sheet and cell or part and paragraph, nothing in the controls, and the
/// hostile ones skipped with their reasons.
#[tokio::test]
async fn a_scan_reads_xls_xlsb_and_ods_workbooks_and_odt_and_odp_documents() {
    let scanned = scan_fixtures("office", "shared", &LEGACY).await;
    let done = &scanned.done;
    let coverage = &done["coverage"];
    assert_eq!(coverage["total_enumerated"], 14, "{done}");
    assert_eq!(coverage["total_failed"], 0, "{done}");
    assert_eq!(coverage["total_scanned"], 10, "{done}");
    assert_eq!(coverage["total_skipped"], 4, "{done}");
    assert_eq!(
        coverage["skipped_reasons"],
        json!({
            "unsupported_format": 1,
            "corrupt_spreadsheet": 1,
            "encrypted_office": 1,
            "corrupt_zip": 1
        }),
        "{done}"
    );
    // Inside a file that was read: the bomb's repeats, past the limit.
    assert_eq!(
        coverage["skip_reasons"],
        json!({
            "unsupported_format": 1,
            "corrupt_spreadsheet": 1,
            "encrypted_office": 1,
            "corrupt_zip": 1,
            "spreadsheet_limit": 1
        }),
        "{done}"
    );

    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "office/shared/", |t| {
        t == "us_ssn" || t == "email" || t == "phone"
    });
    let mut planted: Vec<(&str, &str, &str, i64)> = Vec::new();
    for workbook in ["payroll.xls", "payroll.xlsb", "payroll.ods"] {
        planted.extend([
            // The payroll's columns, named by their headers.
            (workbook, "us_ssn", "SSN", 40),
            (workbook, "email", "Email", 40),
            (workbook, "phone", "Phone", 40),
            // The case notes' Summary column: one of each in a sentence.
            (workbook, "us_ssn", "Summary", 1),
            (workbook, "email", "Summary", 1),
            // A sheet without a header row: its columns are named by their letters.
            (workbook, "us_ssn", "A", 10),
            (workbook, "email", "B", 10),
            // SSNs typed in as numbers, named by their column.
            (workbook, "us_ssn", "employee_ssn", 12),
        ]);
    }
    planted.extend([
        // One row written once and repeated three times, its cell over two columns: the first
        // column's header is the payroll's, and one field holds both sheets' values.
        ("payroll.ods", "us_ssn", "SSN", 3),
        ("payroll.ods", "us_ssn", "SSN copy", 3),
        // The cells before the bomb's repeats.
        ("bomb.ods", "us_ssn", "SSN", 1),
        // The body's split SSN, the table's two, the footnote's; three emails in the body
        // and the footer's; the phone after a tab.
        ("case_notes.odt", "us_ssn", "", 4),
        ("case_notes.odt", "email", "", 4),
        ("case_notes.odt", "phone", "", 1),
        // A slide's SSN and email, and the email in its notes.
        ("review.odp", "us_ssn", "", 1),
        ("review.odp", "email", "", 2),
    ]);
    let mut expected: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for (object, pii, field, n) in planted {
        *expected
            .entry((object.into(), pii.into(), field.into()))
            .or_default() += n;
    }
    assert_eq!(counts, expected, "{body}");
    for control in ["control.xls", "control.xlsb", "control.ods", "control.odt"] {
        assert!(
            !found
                .iter()
                .any(|f| f["resource"] == format!("office/shared/{control}")),
            "{control}: {body}"
        );
    }

    let sample = |object: &str, pii: &str, field: &str| -> Value {
        found
            .iter()
            .find(|f| {
                f["resource"] == format!("office/shared/{object}")
                    && f["pii_type"] == pii
                    // A document's findings have no field.
                    && f["field"].as_str().unwrap_or_default() == field
            })
            .unwrap_or_else(|| panic!("{object} {pii} {field}: {body}"))["locations"][0]
            .clone()
    };
    assert_eq!(
        sample("payroll.xls", "us_ssn", "SSN"),
        json!({"sheet": "Payroll", "cell": "B2", "header": "SSN"})
    );
    assert_eq!(
        sample("payroll.xlsb", "us_ssn", "A"),
        json!({"sheet": "Export", "cell": "A1", "header": null})
    );
    assert_eq!(
        sample("payroll.ods", "us_ssn", "SSN copy"),
        json!({"sheet": "Repeated", "cell": "B2", "header": "SSN copy"})
    );
    assert_eq!(
        sample("case_notes.odt", "us_ssn", ""),
        json!({"part": "content.xml", "paragraph": 3})
    );
    assert_eq!(
        sample("review.odp", "us_ssn", ""),
        json!({"slide": 2, "paragraph": 2})
    );
    let sheets = scanned.findings_where("&location_kind=sheet").await.len();
    let documents = scanned
        .findings_where("&location_kind=document")
        .await
        .len();
    assert_eq!(sheets + documents, found.len(), "{body}");

    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in [
        "536-22-5000",
        "bin1@example.com",
        "536225350",
        "536-22-5671",
        "(202) 555-0100",
    ] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

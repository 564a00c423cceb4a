//! `dpsctl detect` as operators run it: the real binary on real files and standard input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::Value;

use crate::file;

const CSV: &str = "name,ssn,phone\nAnn,123456789,+1 (202) 555-0187\nBo,078-05-1120,n/a\n";

fn dpsctl(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpsctl"))
        .arg("detect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn a_csv_file_gives_one_json_object_per_finding_and_a_summary() {
    let path = file("people.csv", CSV.as_bytes());
    let output = dpsctl(&["--format", "json", &path.path], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    let summary: Vec<_> = findings
        .iter()
        .map(|f| {
            (
                f["pii_type"].as_str().unwrap(),
                f["category"].as_str().unwrap(),
                &CSV[f["start"].as_u64().unwrap() as usize..f["end"].as_u64().unwrap() as usize],
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("us_ssn", "government_id", "123456789"),
            ("phone", "contact", "+1 (202) 555-0187"),
            ("us_ssn", "government_id", "078-05-1120"),
        ]
    );
    // The line's members and their order are what scripts read: pinned, as printed before
    // the printer wrote straight into the output.
    let out = String::from_utf8(output.stdout.clone()).unwrap();
    assert_eq!(
        out.lines().next().unwrap(),
        r#"{"pii_type":"us_ssn","category":"government_id","start":19,"end":28,"confidence":0.65,"location":{"row":1,"column":2,"header":"ssn"},"evidence":{"pattern":"ssn_bare","validator":"ssa_rules","context":["ssn"]}}"#
    );
    let first = &findings[0];
    assert!(first["confidence"].as_f64().unwrap() >= 0.5);
    assert_eq!(first["location"]["header"], "ssn");
    assert_eq!(first["evidence"]["validator"], "ssa_rules");
    let err = stderr(&output);
    assert!(
        err.contains("3 findings phone=1 us_ssn=2") && err.contains("csv"),
        "{err}"
    );
    // Values never leave the process: only offsets.
    let out = String::from_utf8(output.stdout.clone()).unwrap();
    for value in ["123456789", "078-05-1120", "555-0187"] {
        assert!(
            !out.contains(value) && !err.contains(value),
            "{value} printed"
        );
    }
}

#[test]
fn standard_input_gzip_and_thresholds() {
    let text = b"Employee SSN: 123-45-6789, passport 912803456.\n\
                 The rest of the report is about something else entirely: number 987654321\n";
    let output = dpsctl(&["--format", "json", "-"], text);
    assert!(output.status.success());
    let types: Vec<_> = json_lines(&output)
        .iter()
        .map(|f| f["pii_type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["us_ssn", "passport_us"]);
    assert!(
        stderr(&output).starts_with("stdin: 2 findings"),
        "{}",
        stderr(&output)
    );
    // Lower the threshold and the bare number shows up, weakly.
    let low = dpsctl(&["--format", "json", "--min-confidence", "0.1"], text);
    assert!(json_lines(&low).len() > 2);

    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(CSV.as_bytes()).unwrap();
    let path = file("people.csv.gz", &gz.finish().unwrap());
    let output = dpsctl(&[&path.path], b"");
    assert!(output.status.success());
    let out = String::from_utf8(output.stdout.clone()).unwrap();
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(
        out.starts_with("row 1, ssn\tus_ssn\tgovernment_id\t"),
        "{out}"
    );
    assert!(stderr(&output).contains("(gzip)"));
}

#[test]
fn binary_content_is_skipped_with_the_reason() {
    let path = file("scan.png", b"\x89PNG\r\n\x1a\nSSN 123-45-6789");
    let output = dpsctl(&[&path.path], b"");
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
    assert!(
        stderr(&output).ends_with("skipped: binary content (png)\n"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn custom_classifiers_run_in_the_same_scan() {
    let path = file(
        "classifiers.yaml",
        b"- name: employee_id\n  category: personal\n  regex: 'EMP-\\d{6}'\n  keywords: [employee]\n",
    );
    let output = dpsctl(
        &["--format", "json", "--classifiers", &path.path],
        b"employee EMP-123456, SSN 123-45-6789",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let types: Vec<_> = json_lines(&output)
        .iter()
        .map(|f| f["pii_type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["custom:employee_id", "us_ssn"]);
    let bad = file(
        "bad.yaml",
        b"- name: Bad Name\n  category: personal\n  regex: x\n",
    );
    let output = dpsctl(&["--classifiers", &bad.path], b"");
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("classifiers[0].name"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn bad_arguments_are_refused() {
    let output = dpsctl(&["--min-confidence", "1.5"], b"");
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("must be a number from 0 to 1"));
    let output = dpsctl(&["/nonexistent/file.csv"], b"");
    assert!(!output.status.success());
    assert!(stderr(&output).contains("opening /nonexistent/file.csv"));
}

#[test]
fn business_words_near_a_value_with_its_own_evidence_do_not_hide_it() {
    // Issue 39's lines, one per run as an operator pipes them: each is found with its type.
    for (line, pii_type, value) in [
        (
            "the account was reviewed by the team, passport no. GK356955 please update the record",
            "passport_ca",
            "GK356955",
        ),
        (
            "the account was reviewed by the team, docket CR-2003-208712 escalated",
            "case_number",
            "CR-2003-208712",
        ),
        (
            "shipment left the warehouse, value $57,715.06 the account was reviewed",
            "monetary",
            "$57,715.06",
        ),
        (
            "the account was reviewed by the team, SSN # 729505541 escalated to tier two",
            "us_ssn",
            "729505541",
        ),
        (
            r#"{"id": 119, "customer": {"ssn": "596573369", "note": "the account was reviewed"}}"#,
            "us_ssn",
            "596573369",
        ),
        (
            r#"{"id": 57, "customer": {"passport": "KJ315581", "note": "the account was reviewed"}}"#,
            "passport_ca",
            "KJ315581",
        ),
        (
            r#"{"id": 299, "customer": {"mobile": "3308221704", "note": "the account was reviewed"}}"#,
            "phone",
            "3308221704",
        ),
        ("contact 9717885853", "phone", "9717885853"),
        ("value 369.888.8848", "phone", "369.888.8848"),
        ("then (726)243-5254", "phone", "(726)243-5254"),
    ] {
        let input = format!("{line}\n");
        let output = dpsctl(&["--format", "json", "-"], input.as_bytes());
        assert!(output.status.success(), "{}", stderr(&output));
        let found: Vec<(String, String)> = json_lines(&output)
            .iter()
            .map(|f| {
                let (start, end) = (f["start"].as_u64().unwrap(), f["end"].as_u64().unwrap());
                (
                    f["pii_type"].as_str().unwrap().to_owned(),
                    input[start as usize..end as usize].to_owned(),
                )
            })
            .collect();
        assert_eq!(found, [(pii_type.to_owned(), value.to_owned())], "{line}");
    }
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../../tests/fixtures/formats/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn archives_are_read_member_by_member_from_files_and_standard_input() {
    let output = dpsctl(&["--format", "json", &fixture("export.zip")], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    let ssns = findings
        .iter()
        .filter(|f| f["pii_type"] == "us_ssn")
        .count();
    assert_eq!(ssns, 26, "20 + 5 in the CSVs, 1 in the nested ZIP's notes");
    let notes = findings
        .iter()
        .find(|f| f["archive"][1] == "nested/inner.zip")
        .unwrap();
    assert_eq!(
        notes["archive"],
        serde_json::json!(["export.zip", "nested/inner.zip", "deep/notes.txt"])
    );
    assert_eq!(
        notes["location"],
        serde_json::json!({"line": 2, "column": 82})
    );
    assert!(
        stderr(&output).contains("in 4 members of a zip"),
        "{}",
        stderr(&output)
    );

    let tgz = std::fs::read(fixture("logs.tar.gz")).unwrap();
    let output = dpsctl(&[], &tgz);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("stdin > app/old.log.gz > 1:"),
        "a gzip member inside the TAR is inflated: {text}"
    );

    let output = dpsctl(&[&fixture("bomb.zip")], b"");
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("skipped: compression_ratio=1"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn parquet_tables_are_read_column_by_column_with_each_values_row() {
    let output = dpsctl(&["--format", "json", &fixture("nested.parquet")], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    let count = |column: &str, pii: &str| {
        findings
            .iter()
            .filter(|f| f["location"]["column"] == column && f["pii_type"] == pii)
            .count()
    };
    assert_eq!(count("customer.ssn", "us_ssn"), 36);
    assert_eq!(count("customer.contact.email", "email"), 36);
    assert_eq!(count("alt_emails", "email"), 30);
    // A file of its own has no archive path; offsets are within the value.
    let first = findings.iter().find(|f| f["pii_type"] == "us_ssn").unwrap();
    assert_eq!(
        (
            first["location"].clone(),
            first.get("archive"),
            first["start"].clone()
        ),
        (
            serde_json::json!({"column": "customer.ssn", "row": 1}),
            None,
            serde_json::json!(0)
        )
    );

    // From standard input, as text; the PII-free table has nothing.
    let table = std::fs::read(fixture("payroll.parquet")).unwrap();
    let output = dpsctl(&[], &table);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("row 1, employee_ssn\tus_ssn"), "{text}");
    assert_eq!(text.lines().count(), 30);
    let output = dpsctl(&[&fixture("control.parquet")], b"");
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
    assert!(
        stderr(&output).contains("0 findings"),
        "{}",
        stderr(&output)
    );

    // A damaged column chunk is skipped with its reason; the rest is read.
    let output = dpsctl(&[&fixture("damaged.parquet")], b"");
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("us_ssn=172") && stderr(&output).contains("corrupt_parquet=1"),
        "{}",
        stderr(&output)
    );
    let output = dpsctl(&[&fixture("encrypted.parquet")], b"");
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("skipped: encrypted_parquet"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn avro_files_are_read_record_by_record_with_each_fields_path() {
    let output = dpsctl(&["--format", "json", &fixture("events.avro")], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    let ssns: Vec<&Value> = findings
        .iter()
        .filter(|f| f["pii_type"] == "us_ssn")
        .collect();
    assert_eq!(ssns.len(), 160, "every fifth of 200 accounts has no SSN");
    assert_eq!(
        ssns[0]["location"],
        serde_json::json!({"field": "contact.ssn", "record": 1})
    );
    assert!(
        stderr(&output).contains("in an avro file"),
        "{}",
        stderr(&output)
    );
    let output = dpsctl(&[&fixture("truncated.avro")], b"");
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("corrupt_avro=1"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn workbooks_are_read_cell_by_cell_with_each_values_sheet_and_cell() {
    let output = dpsctl(&["--format", "json", &fixture("payroll.xlsx")], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    let first = findings.iter().find(|f| f["pii_type"] == "us_ssn").unwrap();
    assert_eq!(
        first["location"],
        serde_json::json!({"sheet": "Payroll", "cell": "B2", "header": "SSN"})
    );
    let ssns = findings
        .iter()
        .filter(|f| f["pii_type"] == "us_ssn")
        .count();
    assert_eq!(ssns, 40 + 1 + 10 + 12);
    let output = dpsctl(&[&fixture("control.xlsx")], b"");
    assert!(output.status.success());
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn pdfs_are_read_page_by_page_and_a_locked_one_is_skipped_with_the_reason() {
    let output = dpsctl(&["--format", "json", &fixture("letters.pdf")], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    let ssns: Vec<&Value> = findings
        .iter()
        .filter(|f| f["pii_type"] == "us_ssn")
        .map(|f| &f["location"])
        .collect();
    assert_eq!(ssns.len(), 5);
    assert_eq!(ssns[1], &serde_json::json!({"page": 2, "line": 4}));
    assert!(stderr(&output).contains("in a pdf"), "{}", stderr(&output));

    let output = dpsctl(&[&fixture("locked.pdf")], b"");
    assert!(output.status.success());
    assert!(output.stdout.is_empty());
    assert!(
        stderr(&output).ends_with("skipped: encrypted_pdf\n"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn xml_and_html_are_read_as_text_with_their_markup_blanked() {
    let output = dpsctl(&["--format", "json", &fixture("customers.xml")], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    assert_eq!(findings.len(), 10 + 10 + 4, "SSNs, emails and phones");
    // The SSN in an attribute, at the line and column of the file itself.
    let xml = std::fs::read_to_string(fixture("customers.xml")).unwrap();
    let attribute = findings
        .iter()
        .find(|f| &xml[f["start"].as_u64().unwrap() as usize..][..11] == "536-22-5210")
        .unwrap();
    assert_eq!(
        attribute["location"],
        serde_json::json!({"line": 25, "column": 39})
    );
    let err = stderr(&output);
    assert!(err.contains("of markup"), "{err}");

    // From standard input, the page's doctype says what it is.
    let page = std::fs::read(fixture("letters.html")).unwrap();
    let output = dpsctl(&["--format", "json", "-"], &page);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(json_lines(&output).len(), 6 + 11 + 3);
    assert!(stderr(&output).contains("of markup"));

    let output = dpsctl(&[&fixture("control.html")], b"");
    assert!(output.status.success());
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn xls_ods_and_xlsb_workbooks_and_odf_documents_are_read_as_an_xlsx_and_a_docx_are() {
    // An XLS from standard input is spooled, then read from its compound file.
    let xls = std::fs::read(fixture("payroll.xls")).unwrap();
    let output = dpsctl(&["--format", "json"], &xls);
    assert!(output.status.success(), "{}", stderr(&output));
    let findings = json_lines(&output);
    let ssns: Vec<&Value> = findings
        .iter()
        .filter(|f| f["pii_type"] == "us_ssn")
        .collect();
    assert_eq!(ssns.len(), 40 + 1 + 10 + 12);
    assert_eq!(
        ssns[0]["location"],
        serde_json::json!({"sheet": "Payroll", "cell": "B2", "header": "SSN"})
    );
    assert!(
        stderr(&output).contains("in an xls workbook"),
        "{}",
        stderr(&output)
    );
    for (name, ssns) in [
        ("payroll.ods", 40 + 1 + 10 + 6 + 12),
        ("payroll.xlsb", 40 + 1 + 10 + 12),
    ] {
        let output = dpsctl(&["--format", "json", &fixture(name)], b"");
        assert!(output.status.success(), "{}", stderr(&output));
        let found = json_lines(&output)
            .iter()
            .filter(|f| f["pii_type"] == "us_ssn")
            .count();
        assert_eq!(found, ssns, "{name}");
    }
    let output = dpsctl(&["--format", "json", &fixture("case_notes.odt")], b"");
    let findings = json_lines(&output);
    let split = findings.iter().find(|f| f["pii_type"] == "us_ssn").unwrap();
    assert_eq!(
        split["location"],
        serde_json::json!({"part": "content.xml", "paragraph": 3})
    );
    // A compound file that is no workbook, and a package saved with a password.
    for (name, reason) in [
        ("not_a_workbook.xls", "unsupported_format"),
        ("encrypted.ods", "encrypted_office"),
    ] {
        let output = dpsctl(&[&fixture(name)], b"");
        assert!(output.status.success());
        assert!(
            stderr(&output).contains(&format!("skipped: {reason}")),
            "{name}: {}",
            stderr(&output)
        );
    }
}

//! Workbooks read cell by cell: XLSX written by openpyxl (`tests/fixtures/formats/make_xlsx.py`),
//! XLSB written from the format's specification (`make_xlsb.py`) and ODS written by odfpy
//! (`make_odf.py`): every sheet, each value with its sheet, column and row, the first row as
//! the header when it names the columns; and hostile ones.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

#[path = "common/cells.rs"]
mod cells;
mod common;

use std::io::{Cursor, Write};

use cells::{Cells, column, read, read_bytes};
use common::fixture;
use extract::{Container, Limits, Report, Skip, container, walk};

#[test]
fn every_sheets_cells_are_read_with_their_row_and_header() {
    let (report, cells) = read("payroll.xlsx");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert!(cells.skipped.is_empty(), "{:?}", cells.skipped);
    assert_eq!(cells.members, 0, "a workbook's parts are not read as files");
    let ssn = column(&cells, "Payroll", "B", "SSN");
    assert_eq!(ssn.len(), 40);
    assert_eq!(ssn[0], (2, "536-22-4800".into()));
    assert_eq!(ssn[39], (41, "536-22-4839".into()));
    assert_eq!(
        column(&cells, "Payroll", "C", "Email")[1].1,
        "staff1@example.com"
    );
    // Numbers without a needless fraction, dates as dates.
    assert_eq!(column(&cells, "Payroll", "E", "Salary")[0].1, "52000");
    assert_eq!(
        column(&cells, "Payroll", "F", "Start date")[0].1,
        "2015-01-01"
    );
    let summary = column(&cells, "Case notes", "B", "Summary");
    assert_eq!(summary.len(), 3);
    assert!(summary[1].1.contains("536-22-4871"), "{summary:?}");
    // A first row of values is data, not a header.
    let export = column(&cells, "Export", "A", "");
    assert_eq!(export.len(), 10);
    assert_eq!(export[0], (1, "536-22-4900".into()));
    assert_eq!(
        column(&cells, "Numbers", "A", "employee_ssn")[0],
        (2, "536224950".into())
    );
}

#[test]
fn a_workbook_whose_parts_claim_past_the_limits_is_not_read() {
    let bytes = fixture("payroll.xlsx");
    // Under a ratio of 1, the XML parts (which deflate several times over) are past it once
    // past the grace; under a byte budget smaller than the parts, past that.
    let limits = Limits {
        max_bytes: 10_000,
        ..Limits::default()
    };
    let mut cells = Cells::default();
    let report = walk(
        Cursor::new(bytes),
        Container::Zip,
        "p.xlsx",
        limits,
        &mut cells,
    );
    assert_eq!(report, Err(Skip::ArchiveBytes));
    assert!(cells.columns.is_empty());
    // A workbook cut short is no workbook: its directory is gone.
    let mut cut = fixture("payroll.xlsx");
    cut.truncate(cut.len() / 2);
    let mut cells = Cells::default();
    let report = walk(
        Cursor::new(cut),
        Container::Zip,
        "p.xlsx",
        Limits::default(),
        &mut cells,
    );
    assert!(report.is_err(), "{report:?}");
}

#[test]
fn an_xlsb_workbook_is_read_as_an_xlsx_is() {
    let (report, cells) = read("payroll.xlsb");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert_eq!(cells.members, 0, "a workbook's parts are not read as files");
    let ssn = column(&cells, "Payroll", "B", "SSN");
    assert_eq!(ssn.len(), 40);
    assert_eq!(ssn[0], (2, "536-22-5400".into()));
    assert_eq!(ssn[39], (41, "536-22-5439".into()));
    assert_eq!(
        column(&cells, "Payroll", "C", "Email")[1].1,
        "bin1@example.com"
    );
    assert_eq!(column(&cells, "Payroll", "E", "Salary")[0].1, "53000");
    // A real whose cell format shows a date.
    assert_eq!(
        column(&cells, "Payroll", "F", "Start date")[0].1,
        "2016-01-01"
    );
    assert_eq!(
        column(&cells, "Payroll", "G", "Phone")[0].1,
        "(202) 555-0100"
    );
    assert_eq!(
        column(&cells, "Case notes", "B", "Summary")[1],
        (
            3,
            "Caller gave SSN 536-22-5471 and asked for letters at ana.ruiz@example.com.".into()
        )
    );
    assert_eq!(
        column(&cells, "Export", "A", "")[0],
        (1, "536-22-5500".into())
    );
    assert_eq!(
        column(&cells, "Numbers", "A", "employee_ssn")[11],
        (13, "536225561".into())
    );
    assert_eq!(cells.columns.len(), 14, "{:?}", cells.columns.keys());
}

#[test]
fn an_ods_is_read_cell_by_cell_its_repeats_expanded_and_its_empty_edge_passed_over() {
    let (report, cells) = read("payroll.ods");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert_eq!(
        cells.members, 0,
        "a spreadsheet's parts are not read as files"
    );
    let ssn = column(&cells, "Payroll", "B", "SSN");
    assert_eq!(ssn.len(), 40);
    assert_eq!(ssn[0], (2, "536-22-5200".into()));
    assert_eq!(ssn[39], (41, "536-22-5239".into()));
    assert_eq!(
        column(&cells, "Payroll", "C", "Email")[2].1,
        "hr2@example.com"
    );
    // A float's value, not its paragraph; a date's ISO value.
    assert_eq!(column(&cells, "Payroll", "E", "Salary")[0].1, "51000");
    assert_eq!(
        column(&cells, "Payroll", "F", "Start date")[0].1,
        "2014-01-01"
    );
    assert_eq!(
        column(&cells, "Payroll", "G", "Phone")[39].1,
        "(202) 555-0139"
    );
    // Spans joined, `text:s c="2"` two spaces, a second paragraph on the same line, and the
    // cell's comment left out.
    assert_eq!(
        column(&cells, "Case notes", "B", "Summary")[1],
        (
            3,
            "Caller gave SSN 536-22-5271 and asked for letters at  lee.chan@example.com. \
             Callback requested."
                .into()
        )
    );
    assert_eq!(column(&cells, "Export", "A", "").len(), 10);
    assert_eq!(
        column(&cells, "Export", "A", "")[0],
        (1, "536-22-5300".into())
    );
    // One row written once, repeated three times, its cell over two columns: six cells.
    for (letters, header) in [("A", "SSN"), ("B", "SSN copy")] {
        let repeated = column(&cells, "Repeated", letters, header);
        let rows: Vec<u64> = repeated.iter().map(|(row, _)| *row).collect();
        assert_eq!(rows, [2, 3, 4]);
        assert!(repeated.iter().all(|(_, v)| v == "536-22-5330"));
    }
    assert_eq!(
        column(&cells, "Numbers", "A", "employee_ssn")[0],
        (2, "536225350".into())
    );
    // The sheets' million empty rows and thousand empty columns hold no value.
    assert_eq!(cells.columns.len(), 16, "{:?}", cells.columns.keys());
}

/// An ODS package around `content`, as odfpy or LibreOffice lay one out.
fn ods(content: &str) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("mimetype", stored).unwrap();
    zip.write_all(b"application/vnd.oasis.opendocument.spreadsheet")
        .unwrap();
    zip.start_file("content.xml", deflated).unwrap();
    zip.write_all(content.as_bytes()).unwrap();
    zip.finish().unwrap().into_inner()
}

fn sheet(rows: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:spreadsheet><table:table table:name="S">{rows}</table:table></office:spreadsheet></office:body></office:document-content>"#
    )
}

#[test]
fn an_ods_whose_repeats_claim_billions_of_cells_stops_at_the_limit() {
    // One cell repeated to the grid's last column, in a row repeated to its last row: the
    // cells before it keep their values, none of its copies is made.
    let (report, cells) = read("bomb.ods");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(cells.skipped, [Skip::SpreadsheetLimit]);
    assert_eq!(
        column(&cells, "Bomb", "A", "SSN"),
        [(2, "536-22-5398".to_owned())]
    );
    // The same claim spread over many rows, each under the limit: the text the workbook may
    // render to (250 times its size) stops it first, and little was handed over.
    let row = r#"<table:table-row><table:table-cell office:value-type="string" office:string-value="536-22-5399" table:number-columns-repeated="16384"/></table:table-row>"#;
    let bytes = ods(&sheet(&row.repeat(2_000)));
    let length = bytes.len() as u64;
    let started = std::time::Instant::now();
    let (report, cells) = read_bytes(bytes, "rows.ods", Limits::default());
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(cells.skipped, [Skip::CompressionRatio]);
    assert!(
        cells.text <= (length * 250).max(1 << 20),
        "{} bytes",
        cells.text
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    // A value placed off the grid (past column 16,384) is left out and said so; empty
    // repeats move the position and cost nothing.
    let off = r#"<table:table-row table:number-rows-repeated="4000000000"><table:table-cell table:number-columns-repeated="1000000"/></table:table-row><table:table-row><table:table-cell table:number-columns-repeated="20000"/><table:table-cell office:value-type="string"><text:p>lost</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="string"><text:p>kept@example.com</text:p></table:table-cell></table:table-row>"#;
    let (report, cells) = read_bytes(ods(&sheet(off)), "off.ods", Limits::default());
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(cells.skipped, [Skip::SpreadsheetLimit]);
    assert_eq!(cells.columns.len(), 0, "{:?}", cells.columns);
}

/// `n` bytes of words that deflate about as prose does, not a thousand to one.
fn filler(n: usize) -> String {
    let mut state: u32 = 1;
    let mut text = String::with_capacity(n + 16);
    while text.len() < n {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        for i in 0..(3 + (state >> 28)) {
            text.push(char::from(b'a' + ((state >> ((i * 3) % 27)) % 26) as u8));
        }
        text.push(' ');
    }
    text
}

#[test]
fn an_ods_cell_past_a_mebibyte_is_cut_and_the_cut_reported() {
    let long = format!("SSN 536-22-5400 {}", filler(1_200_000));
    let row = format!(
        r#"<table:table-row><table:table-cell office:value-type="string"><text:p>Notes</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="string"><text:p>{long}</text:p></table:table-cell></table:table-row>"#
    );
    let (report, cells) = read_bytes(ods(&sheet(&row)), "long.ods", Limits::default());
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(cells.skipped, [Skip::SpreadsheetLimit]);
    let read = column(&cells, "S", "A", "Notes");
    assert_eq!(read.len(), 1, "{:?}", cells.columns.keys());
    assert!(read[0].1.starts_with("SSN 536-22-5400 "));
    assert!(read[0].1.len() < long.len());
}

#[test]
fn an_encrypted_or_cut_ods_is_not_read() {
    let (report, cells) = read("encrypted.ods");
    assert_eq!(report, Err(Skip::EncryptedOffice));
    assert!(cells.columns.is_empty());
    // Cut, its directory is gone.
    let (report, cells) = read("truncated.ods");
    assert_eq!(report, Err(Skip::CorruptZip));
    assert!(cells.columns.is_empty());
    // Content that breaks off keeps the cells before the break.
    let broken = sheet(
        r#"<table:table-row><table:table-cell office:value-type="string"><text:p>Email</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="string"><text:p>kept@example.com</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell></table:table-row>"#,
    );
    let (report, cells) = read_bytes(ods(&broken), "broken.ods", Limits::default());
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(cells.skipped, [Skip::CorruptSpreadsheet]);
    assert_eq!(
        column(&cells, "S", "A", "Email"),
        [(2, "kept@example.com".to_owned())]
    );
}

#[test]
fn the_pii_free_workbooks_hold_no_planted_value() {
    for name in ["control.xlsx", "control.xlsb", "control.ods"] {
        let (report, cells) = read(name);
        assert!(report.is_ok(), "{name}: {report:?}");
        assert_eq!(column(&cells, "Stock", "A", "SKU").len(), 80, "{name}");
        assert!(
            cells
                .columns
                .values()
                .flatten()
                .all(|(_, v)| !v.contains('@') && !v.contains("536-22")),
            "{name}"
        );
    }
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// A workbook with bytes flipped or cut ends in a report or a skip, never a panic.
        #[test]
        fn damaged_workbooks_never_panic(
            which in 0usize..3,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in any::<usize>(),
        ) {
            let mut bytes = fixture(["payroll.xlsx", "payroll.xlsb", "payroll.ods"][which]);
            for (at, byte) in flips {
                let at = at % bytes.len();
                bytes[at] ^= byte;
            }
            // Cut one time in four: a cut loses the directory, and nothing is read past that.
            if cut % 4 == 0 {
                let whole = bytes.len();
                bytes.truncate(whole - cut / 4 % (whole / 8 + 1));
            }
            if container(&bytes) == Some(Container::Zip) {
                let mut cells = Cells::default();
                let report = walk(Cursor::new(bytes), Container::Zip, "p", Limits::default(), &mut cells);
                if report.is_err() {
                    prop_assert!(cells.columns.is_empty());
                }
            }
        }
    }
}

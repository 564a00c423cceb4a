//! Workbooks read cell by cell: XLSX written by openpyxl (`tests/fixtures/formats/make_xlsx.py`)
//! and XLSB written from the format's specification (`make_xlsb.py`): every sheet, each value
//! with its sheet, column and row, the first row as the header when it names the columns; and
//! hostile ones.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

#[path = "common/cells.rs"]
mod cells;
mod common;

use std::io::Cursor;

use cells::{Cells, column, read};
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
fn the_pii_free_workbooks_hold_no_planted_value() {
    for name in ["control.xlsx", "control.xlsb"] {
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
            which in 0usize..2,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in any::<usize>(),
        ) {
            let mut bytes = fixture(["payroll.xlsx", "payroll.xlsb"][which]);
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

//! XLSX workbooks written by openpyxl (`tests/fixtures/formats/make_xlsx.py`), read cell by
//! cell: every sheet, each value with its sheet, column and row, the first row as the header
//! when it names the columns.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use common::fixture;
use extract::{Column, Container, Limits, Report, Sink, Skip, TableUnit, container, walk};

/// Every value read, by (sheet, column letters, header), as (row, value).
#[derive(Default)]
struct Cells {
    columns: BTreeMap<(String, String, String), Vec<(u64, String)>>,
    skipped: Vec<Skip>,
    /// Members read as files: a damaged workbook whose parts' names no longer say so is a
    /// ZIP like any other.
    members: usize,
}

impl Sink for Cells {
    fn member(&mut self, _: &[String], _: &str, content: &mut dyn Read) -> std::io::Result<()> {
        self.members += 1;
        std::io::copy(content, &mut std::io::sink()).map(drop)
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        let TableUnit::Cell { sheet, column: at } = column.unit else {
            panic!("a workbook's values are cells");
        };
        let key = (
            sheet.to_owned(),
            detect::column_letters(at),
            column.names.join("."),
        );
        let values = self.columns.entry(key).or_default();
        for (line, row) in column.text.split_terminator('\n').zip(column.rows) {
            values.push((*row, line.to_owned()));
        }
    }

    fn skipped(&mut self, _: &[String], reason: Skip) {
        self.skipped.push(reason);
    }
}

fn read(name: &str) -> (Result<Report, Skip>, Cells) {
    let bytes = fixture(name);
    assert_eq!(container(&bytes), Some(Container::Zip), "{name}");
    let mut cells = Cells::default();
    let report = walk(
        Cursor::new(bytes),
        Container::Zip,
        name,
        Limits::default(),
        &mut cells,
    );
    (report, cells)
}

fn column<'c>(cells: &'c Cells, sheet: &str, letters: &str, header: &str) -> &'c [(u64, String)] {
    cells
        .columns
        .get(&(sheet.into(), letters.into(), header.into()))
        .unwrap_or_else(|| {
            panic!(
                "no {sheet}!{letters} ({header}) in {:?}",
                cells.columns.keys()
            )
        })
}

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

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// A workbook with bytes flipped or cut ends in a report or a skip, never a panic.
        #[test]
        fn damaged_workbooks_never_panic(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in any::<usize>(),
        ) {
            let mut bytes = fixture("payroll.xlsx");
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
                let report = walk(Cursor::new(bytes), Container::Zip, "p.xlsx", Limits::default(), &mut cells);
                if report.is_err() {
                    prop_assert!(cells.columns.is_empty());
                }
            }
        }
    }
}

//! A sink that keeps every value of a workbook by sheet, column and header, for the tests of
//! the workbook readers (`sheet.rs`, `xls.rs`).

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use extract::{Column, Limits, Report, Sink, Skip, TableUnit, container, walk};

use super::common::fixture;

/// Every value read, by (sheet, column letters, header), as (row, value).
#[derive(Default)]
pub struct Cells {
    pub columns: BTreeMap<(String, String, String), Vec<(u64, String)>>,
    pub skipped: Vec<Skip>,
    /// Members read as files: a damaged workbook whose parts' names no longer say so is a
    /// ZIP like any other.
    pub members: usize,
    /// Bytes of text handed over.
    pub text: u64,
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
        assert!(
            column.rows.windows(2).all(|w| w[0] <= w[1]),
            "rows go forward in a run: {:?}",
            column.rows
        );
        assert_eq!(
            column.text.split_terminator('\n').count(),
            column.rows.len()
        );
        self.text += column.text.len() as u64;
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

/// The fixture `name`, walked as the container its first bytes say it is.
pub fn read(name: &str) -> (Result<Report, Skip>, Cells) {
    read_bytes(fixture(name), name, Limits::default())
}

pub fn read_bytes(bytes: Vec<u8>, name: &str, limits: Limits) -> (Result<Report, Skip>, Cells) {
    let kind = container(&bytes).unwrap_or_else(|| panic!("{name} is read by the walk"));
    let mut cells = Cells::default();
    let report = walk(Cursor::new(bytes), kind, name, limits, &mut cells);
    (report, cells)
}

pub fn column<'c>(
    cells: &'c Cells,
    sheet: &str,
    letters: &str,
    header: &str,
) -> &'c [(u64, String)] {
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

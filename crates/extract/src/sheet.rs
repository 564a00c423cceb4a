//! XLSX and XLSM workbooks, read cell by cell with `calamine`: every sheet's cells, streamed
//! row by row, rendered as text and handed to the sink in runs of one column's values, each
//! with its row; the first row is the columns' header when it reads as one. A workbook is a ZIP
//! of XML parts, and its parts' sizes are checked before `calamine` inflates any of them.

use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::panic::{AssertUnwindSafe, catch_unwind};

use calamine::{DataRef, Reader, Xlsx};

use crate::columnar::render;
use crate::limits::RATIO_GRACE;
use crate::sink::{Lines, TableRead};
use crate::{Limits, Sink, Skip, TableUnit};

/// The largest shared-strings part read: `calamine` holds every shared string in memory, and
/// real workbooks of a million rows keep theirs in tens of MiB.
pub(crate) const MAX_SHARED_STRINGS: u64 = 64 << 20;

/// Text a sheet's runs hold before they are handed to the sink.
const RUNS: usize = 256 << 10;

/// The part whose presence makes a ZIP an Office Open XML workbook.
pub(crate) const WORKBOOK: &str = "xl/workbook.xml";

/// The part holding a workbook's shared strings.
pub(crate) const SHARED_STRINGS: &str = "xl/sharedStrings.xml";

/// The workbook's parts, checked before any is inflated: each (size, compressed size, whether
/// it is the shared strings) as its ZIP directory declares them, the ZIP reader refusing to
/// inflate a part past its declared size.
pub(crate) fn check(
    parts: impl Iterator<Item = (u64, u64, bool)>,
    length: u64,
    limits: Limits,
) -> Result<(), Skip> {
    let mut total: u64 = 0;
    for (size, compressed, shared) in parts {
        if size > RATIO_GRACE && size > compressed.min(length).saturating_mul(limits.max_ratio) {
            return Err(Skip::CompressionRatio);
        }
        if shared && size > MAX_SHARED_STRINGS {
            return Err(Skip::SpreadsheetLimit);
        }
        total = total.saturating_add(size);
        if total > limits.max_bytes {
            return Err(Skip::ArchiveBytes);
        }
    }
    Ok(())
}

/// Reads every sheet of the workbook `source` into `sink`. An error means the workbook could
/// not be opened: nothing was read.
pub(crate) fn read<R: Read + Seek>(
    source: R,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let mut book = open(source)?;
    let mut outcome = TableRead::default();
    for name in book.sheet_names() {
        let (handed, whole) = read_sheet(&mut book, &name, path, sink);
        if !whole {
            push_once(&mut outcome.skips, Skip::CorruptSpreadsheet);
        }
        outcome.handed |= handed;
    }
    Ok(outcome)
}

/// The workbook `source`, opened by `calamine`: its workbook part, relationships, styles and
/// shared strings read.
pub(crate) fn open<R: Read + Seek>(source: R) -> Result<Xlsx<R>, Skip> {
    // calamine meets the workbook's XML here; a panic among its parsers (an overflowing cell
    // reference, for one, in 0.38) is the file's fault, and ends the workbook or the sheet.
    catch_unwind(AssertUnwindSafe(|| Xlsx::new(source)))
        .map_err(|_| Skip::CorruptSpreadsheet)?
        .map_err(|_| Skip::CorruptSpreadsheet)
}

/// Reads the cells of the sheet `name` into `sink`, in runs of one column's values: whether
/// any reached it, and whether the sheet was read to its end.
pub(crate) fn read_sheet<R: Read + Seek>(
    book: &mut Xlsx<R>,
    name: &str,
    path: &[String],
    sink: &mut dyn Sink,
) -> (bool, bool) {
    let sheet: String = name.chars().take(crate::MAX_NAME).collect();
    let mut runs = Runs {
        sheet: &sheet,
        path,
        sink,
        columns: BTreeMap::new(),
        headers: BTreeMap::new(),
        header_row: None,
        held: 0,
        handed: false,
    };
    let read = catch_unwind(AssertUnwindSafe(|| cells(book, name, &mut runs)));
    // What was read before a failure is handed over all the same.
    runs.flush();
    (runs.handed, matches!(read, Ok(Ok(()))))
}

/// Reads one sheet's cells into `runs`, row by row as the sheet's XML has them.
fn cells<R: Read + Seek>(book: &mut Xlsx<R>, name: &str, runs: &mut Runs<'_>) -> Result<(), ()> {
    let mut cells = book.worksheet_cells_reader(name).map_err(drop)?;
    while let Some(cell) = cells.next_cell().map_err(drop)? {
        let (row, column) = cell.get_position();
        runs.cell(row, column, cell.get_value());
    }
    Ok(())
}

fn push_once(skips: &mut Vec<Skip>, skip: Skip) {
    if !skips.contains(&skip) {
        skips.push(skip);
    }
}

/// A cell's value as a sheet shows it: numbers without a needless fraction, dates as dates.
fn text(value: &DataRef<'_>, out: &mut String) {
    match value {
        DataRef::Int(v) => out.push_str(&v.to_string()),
        DataRef::Float(v) => number(*v, out),
        DataRef::String(s) => out.push_str(s),
        DataRef::SharedString(s) => out.push_str(s),
        DataRef::DateTimeIso(s) => out.push_str(s),
        DataRef::DateTime(d) if d.is_datetime() => {
            // Serial days since 1899-12-30; 25,569 is 1970-01-01.
            let serial = d.as_f64();
            let seconds = ((serial - 25_569.0) * 86_400.0).round();
            if seconds.is_finite() && seconds.abs() < 1e13 {
                let seconds = seconds as i64;
                if seconds.rem_euclid(86_400) == 0 {
                    render::date(seconds.div_euclid(86_400), out);
                } else {
                    render::timestamp(seconds, 1, out);
                }
            }
        }
        _ => {}
    }
}

/// A number as a sheet shows it: without a needless fraction; nothing for one not finite.
pub(crate) fn number(v: f64, out: &mut String) {
    if !v.is_finite() {
        return;
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        out.push_str(&(v as i64).to_string());
    } else {
        out.push_str(&v.to_string());
    }
}

/// Whether a first row's cell reads as a column's name: text, without what values have (an
/// `@`, five digits), so that a sheet without a header row never names a column by a value.
fn name_like(text: &str) -> bool {
    text.chars().any(char::is_alphabetic)
        && !text.contains('@')
        && text.chars().filter(char::is_ascii_digit).count() < 5
        && text.len() <= 256
}

struct Runs<'a> {
    sheet: &'a str,
    path: &'a [String],
    sink: &'a mut dyn Sink,
    columns: BTreeMap<u32, Lines>,
    /// The first row's cells, while it may be a header; kept as names once it is one.
    headers: BTreeMap<u32, String>,
    /// The first row's index, once a cell was read.
    header_row: Option<u32>,
    held: usize,
    handed: bool,
}

impl Runs<'_> {
    fn cell(&mut self, row: u32, column: u32, value: &DataRef<'_>) {
        let mut value_text = String::new();
        text(value, &mut value_text);
        if value_text.is_empty() {
            return;
        }
        let first = *self.header_row.get_or_insert(row);
        if row == first {
            // The first row: a header while every cell of it reads as a name.
            let named = matches!(value, DataRef::String(_) | DataRef::SharedString(_))
                && name_like(&value_text);
            if named && self.headers.len() < 16_384 {
                self.headers.insert(column, value_text.clone());
                return;
            }
            // A value in the first row: it is data, and so are the cells kept as names.
            let kept = std::mem::take(&mut self.headers);
            for (c, text) in kept {
                self.push(row, c, &text);
            }
            self.header_row = Some(u32::MAX);
        }
        self.push(row, column, &value_text);
    }

    fn push(&mut self, row: u32, column: u32, text: &str) {
        self.columns
            .entry(column)
            .or_default()
            .push(u64::from(row) + 1, text);
        self.held += text.len() + 1;
        if self.held >= RUNS {
            self.flush();
        }
    }

    fn flush(&mut self) {
        // A sheet of one row of names: they were values after all.
        if self.columns.is_empty() && !self.headers.is_empty() && self.header_row.is_some() {
            let row = self.header_row.unwrap_or_default();
            let kept = std::mem::take(&mut self.headers);
            for (c, text) in kept {
                self.columns
                    .entry(c)
                    .or_default()
                    .push(u64::from(row) + 1, &text);
            }
        }
        for (column, run) in &mut self.columns {
            if run.is_empty() {
                continue;
            }
            let names: Vec<String> = self.headers.get(column).cloned().into_iter().collect();
            let unit = TableUnit::Cell {
                sheet: self.sheet,
                column: *column,
            };
            self.sink.values(self.path, &run.column(&names, unit));
            self.handed = true;
            run.clear();
        }
        self.held = 0;
    }
}

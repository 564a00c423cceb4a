//! Workbooks, read cell by cell. XLSX, XLSM and XLSB are read with `calamine`, every worksheet
//! streamed row by row; XLS (`xls.rs`) and ODS (`ods.rs`) by readers of their own. Whatever
//! the format, each cell's value is rendered as text and handed to the sink here ([`Runs`]),
//! in runs of one column's values, each with its row; the first row is the columns' header
//! when it reads as one. An XLSX or XLSB is a ZIP of parts, and its parts' sizes are checked
//! before `calamine` inflates any of them.

use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::panic::{AssertUnwindSafe, catch_unwind};

use calamine::{DataRef, Reader, SheetType, Xlsb, Xlsx};

use crate::columnar::render;
use crate::limits::RATIO_GRACE;
use crate::sink::{Lines, TableRead};
use crate::{Limits, Sink, Skip, TableUnit};

/// The largest shared-strings part read: `calamine` holds every shared string in memory, and
/// real workbooks of a million rows keep theirs in tens of MiB.
pub(crate) const MAX_SHARED_STRINGS: u64 = 64 << 20;

/// Text a sheet's runs hold before they are handed to the sink.
const RUNS: usize = 256 << 10;

/// The most first-row cells kept as a header's names: a sheet has at most 16,384 columns.
const MAX_HEADERS: usize = 16_384;

/// The part whose presence makes a ZIP an Office Open XML workbook (XLSX, XLSM).
pub(crate) const WORKBOOK: &str = "xl/workbook.xml";
/// The part whose presence makes a ZIP a binary workbook (XLSB).
pub(crate) const BINARY_WORKBOOK: &str = "xl/workbook.bin";

/// The parts holding a workbook's shared strings, XML and binary.
const SHARED_STRINGS: [&str; 2] = ["xl/sharedStrings.xml", "xl/sharedStrings.bin"];

/// Whether a part is one whose whole `calamine` holds in memory.
pub(crate) fn held_whole(part: &str) -> bool {
    SHARED_STRINGS.contains(&part)
}

/// The workbook's parts, checked before any is inflated: each (size, compressed size, whether
/// `calamine` holds it whole) as its ZIP directory declares them, the ZIP reader refusing to
/// inflate a part past its declared size.
pub(crate) fn check(
    parts: impl Iterator<Item = (u64, u64, bool)>,
    length: u64,
    limits: Limits,
) -> Result<(), Skip> {
    let mut total: u64 = 0;
    for (size, compressed, held) in parts {
        if size > RATIO_GRACE && size > compressed.min(length).saturating_mul(limits.max_ratio) {
            return Err(Skip::CompressionRatio);
        }
        if held && size > MAX_SHARED_STRINGS {
            return Err(Skip::SpreadsheetLimit);
        }
        total = total.saturating_add(size);
        if total > limits.max_bytes {
            return Err(Skip::ArchiveBytes);
        }
    }
    Ok(())
}

/// What a workbook of `length` bytes may render to: a cell of a few bytes may name a shared
/// string of thousands, or an ODS cell repeat itself, as a ZIP member may inflate.
pub(crate) fn allowance(length: u64, limits: Limits) -> u64 {
    length.saturating_mul(limits.max_ratio).max(RATIO_GRACE)
}

/// Reads every worksheet of the XLSX (or, `binary`, XLSB) workbook `source` into `sink`. An
/// error means the workbook could not be opened: nothing was read.
pub(crate) fn read<R: Read + Seek>(
    source: R,
    binary: bool,
    allowance: u64,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let mut book = Book::open(source, binary)?;
    let mut runs = Runs::new(path, sink, allowance);
    let mut outcome = TableRead::default();
    // Chart and dialog sheets hold no cells.
    for name in book.worksheets() {
        book.read_sheet(&name, &mut runs, &mut outcome.skips);
        // The workbook's allowance is spent: no sheet after this one can be read either.
        if outcome.skips.contains(&Skip::CompressionRatio) {
            break;
        }
    }
    outcome.handed = runs.handed;
    Ok(outcome)
}

/// A workbook `calamine` opened.
pub(crate) enum Book<R: Read + Seek> {
    Xlsx(Xlsx<R>),
    Xlsb(Xlsb<R>),
}

impl<R: Read + Seek> Book<R> {
    /// The XLSX (or, `binary`, XLSB) workbook `source`, opened: its workbook part,
    /// relationships, styles and shared strings read.
    pub(crate) fn open(source: R, binary: bool) -> Result<Self, Skip> {
        // calamine meets the workbook's XML here; a panic among its parsers (an overflowing
        // cell reference, for one, in 0.38) is the file's fault, and ends the workbook.
        let opened = catch_unwind(AssertUnwindSafe(|| {
            if binary {
                Xlsb::new(source).map(Book::Xlsb).map_err(drop)
            } else {
                Xlsx::new(source).map(Book::Xlsx).map_err(drop)
            }
        }));
        opened
            .map_err(|_| Skip::CorruptSpreadsheet)?
            .map_err(|()| Skip::CorruptSpreadsheet)
    }

    /// The names of the workbook's worksheets, in its order; chart and dialog sheets hold no
    /// cells.
    pub(crate) fn worksheets(&self) -> Vec<String> {
        let sheets = match self {
            Book::Xlsx(book) => book.sheets_metadata(),
            Book::Xlsb(book) => book.sheets_metadata(),
        };
        sheets
            .iter()
            .filter(|s| s.typ == SheetType::WorkSheet)
            .map(|s| s.name.clone())
            .collect()
    }

    /// Reads the worksheet `name` into `runs` and finishes it there, adding each way it fell
    /// short to `skips` once. A scan and a rewrite both read a sheet here, so that an editor
    /// sees each cell's value, column and header as detection did.
    pub(crate) fn read_sheet(&mut self, name: &str, runs: &mut Runs<'_>, skips: &mut Vec<Skip>) {
        runs.sheet(name);
        let read = catch_unwind(AssertUnwindSafe(|| self.cells(name, runs)));
        match read {
            Ok(Ok(())) => {}
            Ok(Err(skip)) => push_once(skips, skip),
            Err(_) => push_once(skips, Skip::CorruptSpreadsheet),
        }
        // What was read before a failure is handed over all the same.
        if let Err(skip) = runs.finish_sheet() {
            push_once(skips, skip);
        }
    }

    /// Reads one sheet's cells into `runs`, row by row as the sheet's part has them.
    fn cells(&mut self, name: &str, runs: &mut Runs<'_>) -> Result<(), Skip> {
        fn corrupt<E>(_: E) -> Skip {
            Skip::CorruptSpreadsheet
        }
        match self {
            Book::Xlsx(book) => {
                let mut cells = book.worksheet_cells_reader(name).map_err(corrupt)?;
                while let Some(cell) = cells.next_cell().map_err(corrupt)? {
                    put(runs, cell.get_position(), cell.get_value())?;
                }
            }
            Book::Xlsb(book) => {
                let mut cells = book.worksheet_cells_reader(name).map_err(corrupt)?;
                while let Some(cell) = cells.next_cell().map_err(corrupt)? {
                    put(runs, cell.get_position(), cell.get_value())?;
                }
            }
        }
        Ok(())
    }
}

fn put(runs: &mut Runs<'_>, (row, column): (u32, u32), value: &DataRef<'_>) -> Result<(), Skip> {
    let named = matches!(value, DataRef::String(_) | DataRef::SharedString(_));
    runs.cell(row, column, named, |out| text(value, out))
}

pub(crate) fn push_once(skips: &mut Vec<Skip>, skip: Skip) {
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
        DataRef::DateTime(d) if d.is_datetime() => serial_date(d.as_f64(), out),
        _ => {}
    }
}

/// A number as a sheet shows it by default: a whole one without a fraction, so that an SSN
/// typed as a number reads `536224950`.
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

/// A date of the 1900 date system (serial days since 1899-12-30) as `YYYY-MM-DD`, or with its
/// time of day.
pub(crate) fn serial_date(serial: f64, out: &mut String) {
    // 25,569 is 1970-01-01.
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

/// Whether a first row's cell reads as a column's name: text, without what values have (an
/// `@`, five digits), so that a sheet without a header row never names a column by a value.
fn name_like(text: &str) -> bool {
    text.chars().any(char::is_alphabetic)
        && !text.contains('@')
        && text.chars().filter(char::is_ascii_digit).count() < 5
        && text.len() <= 256
}

/// A workbook's cells on their way to the sink: each sheet's columns, a run of values each,
/// and the first row's names while it may be a header.
pub(crate) struct Runs<'a> {
    path: &'a [String],
    sink: &'a mut dyn Sink,
    sheet: String,
    columns: BTreeMap<u32, Lines>,
    /// The first row's cells, while it may be a header; kept as names once it is one.
    headers: BTreeMap<u32, String>,
    /// The first row's index, once a cell was read.
    header_row: Option<u32>,
    held: usize,
    /// Whether the sheet placed a value yet (its first row's names are then a header).
    valued: bool,
    /// A cell's text, rendered before it is placed.
    value: String,
    /// Whether any values reached the sink.
    pub(crate) handed: bool,
    /// Bytes of text the workbook may still render to.
    allowance: u64,
}

impl<'a> Runs<'a> {
    pub(crate) fn new(path: &'a [String], sink: &'a mut dyn Sink, allowance: u64) -> Self {
        Self {
            path,
            sink,
            sheet: String::new(),
            columns: BTreeMap::new(),
            headers: BTreeMap::new(),
            header_row: None,
            held: 0,
            valued: false,
            value: String::new(),
            handed: false,
            allowance,
        }
    }

    /// Bytes of text the workbook may still render to.
    pub(crate) fn allowance(&self) -> u64 {
        self.allowance
    }

    /// Starts the sheet `name`; the one before it is finished first (`finish_sheet`), or
    /// what it holds is handed over here as it is.
    pub(crate) fn sheet(&mut self, name: &str) {
        self.flush();
        self.sheet = name.chars().take(crate::MAX_NAME).collect();
        self.columns.clear();
        self.headers.clear();
        self.header_row = None;
        self.valued = false;
    }

    /// Places the value `render` writes at (`row`, `column`), both 0-based; `named` says it is
    /// text, which a header's names are. Past the workbook's allowance, the workbook stops.
    pub(crate) fn cell(
        &mut self,
        row: u32,
        column: u32,
        named: bool,
        render: impl FnOnce(&mut String),
    ) -> Result<(), Skip> {
        let mut value = std::mem::take(&mut self.value);
        value.clear();
        render(&mut value);
        let placed = self.place(row, column, named, &value);
        self.value = value;
        placed
    }

    fn place(&mut self, row: u32, column: u32, named: bool, value: &str) -> Result<(), Skip> {
        if value.is_empty() {
            return Ok(());
        }
        let first = *self.header_row.get_or_insert(row);
        if row == first {
            // The first row: a header while every cell of it reads as a name.
            if named && name_like(value) && self.headers.len() < MAX_HEADERS {
                self.headers.insert(column, value.to_owned());
                return Ok(());
            }
            // A value in the first row: it is data, and so are the cells kept as names.
            self.header_row = Some(u32::MAX);
            for (c, text) in std::mem::take(&mut self.headers) {
                self.push(row, c, &text)?;
            }
        }
        self.push(row, column, value)
    }

    fn push(&mut self, row: u32, column: u32, text: &str) -> Result<(), Skip> {
        let Some(left) = self.allowance.checked_sub(text.len() as u64 + 1) else {
            self.allowance = 0;
            return Err(Skip::CompressionRatio);
        };
        self.allowance = left;
        let row = u64::from(row) + 1;
        // A run's rows only go forward: a cell placed above the last one (a hostile file's
        // order) starts a run of its own.
        if self
            .columns
            .get(&column)
            .and_then(|run| run.rows.last())
            .is_some_and(|&last| last > row)
        {
            self.flush();
        }
        self.columns.entry(column).or_default().push(row, text);
        self.valued = true;
        self.held += text.len() + 1;
        if self.held >= RUNS {
            self.flush();
        }
        Ok(())
    }

    /// Hands the sheet's runs over, the first row's names as values if no row followed them
    /// (within the allowance, as any value).
    pub(crate) fn finish_sheet(&mut self) -> Result<(), Skip> {
        let mut finished = Ok(());
        // A sheet of one row of names: they were values after all.
        if !self.valued
            && let Some(row) = self.header_row
        {
            for (c, text) in std::mem::take(&mut self.headers) {
                finished = self.push(row, c, &text);
                if finished.is_err() {
                    break;
                }
            }
        }
        self.flush();
        finished
    }

    /// Hands every column's run over and forgets them: a flush costs the columns that were
    /// written since the last one, not every column the sheet ever had, and their buffers go.
    fn flush(&mut self) {
        for (column, run) in std::mem::take(&mut self.columns) {
            if run.is_empty() {
                continue;
            }
            let names: Vec<String> = self.headers.get(&column).cloned().into_iter().collect();
            let unit = TableUnit::Cell {
                sheet: &self.sheet,
                column,
            };
            self.sink.values(self.path, &run.column(&names, unit));
            self.handed = true;
        }
        self.held = 0;
    }
}

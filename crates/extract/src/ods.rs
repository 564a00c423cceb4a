//! OpenDocument spreadsheets (ODS), read cell by cell as `content.xml` streams through
//! `quick-xml`, and handed to [`Runs`] as an XLSX's cells are.
//!
//! `calamine` reads ODS too, but it loads every sheet whole, and it expands a cell's
//! `table:number-columns-repeated` into that many copies before any limit is checked: a
//! content part of a few KiB can claim billions of cells. Here a repeated empty cell or row
//! only moves the position, and the copies a repeated value adds count against
//! [`MAX_REPEATS`]; past it the workbook stops with `spreadsheet_limit`.

use std::io::{BufRead, BufReader, Read, Seek};

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

use crate::odf::CONTENT;
use crate::sheet::{Runs, push_once};
use crate::sink::TableRead;
use crate::xml::reference;
use crate::{Sink, Skip};

/// The most cells that repeats may add to a workbook, over the cells its XML writes: a
/// spreadsheet application repeats a value only across identical neighbours, a few at a time.
pub(crate) const MAX_REPEATS: u64 = 1 << 20;

/// A sheet's grid, as spreadsheet applications have it (LibreOffice's largest): a value placed
/// past it is no cell of a real sheet.
const MAX_ROWS: u64 = 1 << 24;
const MAX_COLUMNS: u64 = 16_384;

/// The longest cell text kept, in bytes.
const MAX_CELL: usize = 1 << 20;

/// Reads every sheet of the ODS in `archive` into `sink`, within `allowance` bytes of text.
/// An error means its content could not be opened: nothing was read.
pub(crate) fn read<R: Read + Seek>(
    archive: &mut zip::ZipArchive<R>,
    allowance: u64,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let content = archive
        .by_name(CONTENT)
        .map_err(|_| Skip::CorruptSpreadsheet)?;
    let mut cells = Cells {
        runs: Runs::new(path, sink, allowance),
        tables: 0,
        sheets: 0,
        row: 0,
        row_repeat: 1,
        column: 0,
        cell: None,
        ignored: 0,
        repeated: 0,
        skips: Vec::new(),
    };
    let read = cells.read(BufReader::new(content));
    // What was read before a failure is handed over all the same.
    let finished = cells.runs.finish_sheet();
    let mut outcome = TableRead {
        handed: cells.runs.handed,
        skips: cells.skips,
    };
    for skip in [read.err(), finished.err()].into_iter().flatten() {
        push_once(&mut outcome.skips, skip);
    }
    Ok(outcome)
}

/// How a cell's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// In the cell's attributes (a number, a date, a string given as `office:string-value`).
    Given,
    /// In the cell's paragraphs: text.
    Text,
    /// None that is read: a boolean, a duration, an empty cell.
    Unread,
}

/// A cell being read.
struct Cell {
    repeat: u64,
    value: Value,
    /// Whether the value is text, as a header's names are.
    named: bool,
    text: String,
    /// Paragraphs of the cell read so far: the second starts on a line of its own.
    paragraphs: u32,
}

struct Cells<'a> {
    runs: Runs<'a>,
    /// Tables open: a table inside a cell is read as that cell's text.
    tables: u32,
    sheets: usize,
    row: u64,
    row_repeat: u64,
    column: u64,
    cell: Option<Cell>,
    /// Elements open inside the cell whose text is not its value (a comment).
    ignored: u32,
    /// Cells the workbook's repeats added so far.
    repeated: u64,
    skips: Vec<Skip>,
}

impl Cells<'_> {
    fn read(&mut self, source: impl BufRead) -> Result<(), Skip> {
        let corrupt = |_| Skip::CorruptSpreadsheet;
        let mut reader = quick_xml::Reader::from_reader(source);
        let mut buf = Vec::new();
        loop {
            match reader.read_event_into(&mut buf).map_err(corrupt)? {
                Event::Start(e) => self.start(&e, false)?,
                Event::Empty(e) => self.start(&e, true)?,
                Event::End(e) => self.end(e.local_name().as_ref())?,
                Event::Text(t) => self.text(&t.xml10_content()),
                Event::GeneralRef(r) => {
                    if let Some(c) = reference(&r) {
                        self.text(c.encode_utf8(&mut [0; 4]));
                    }
                }
                Event::Eof => return Ok(()),
                _ => {}
            }
            buf.clear();
        }
    }

    fn start(&mut self, e: &BytesStart<'_>, empty: bool) -> Result<(), Skip> {
        let name = e.local_name();
        let name = name.as_ref();
        if let Some(cell) = &mut self.cell {
            if self.ignored > 0 {
                self.ignored += u32::from(!empty);
                return Ok(());
            }
            match name {
                "table" if !empty => self.tables += 1,
                "annotation" if !empty => self.ignored = 1,
                // A value given in the attributes is the value; the paragraphs show it.
                _ if cell.value != Value::Text => {}
                "p" | "h" => {
                    if cell.paragraphs > 0 {
                        push(&mut cell.text, "\n");
                    }
                    cell.paragraphs += 1;
                }
                "s" => {
                    let count = attribute(e, "text:c").and_then(|c| c.parse().ok());
                    // Runs of spaces lay out text; a count past that only multiplies it.
                    for _ in 0..count.unwrap_or(1usize).min(crate::document::MAX_SPACES) {
                        if !push(&mut cell.text, " ") {
                            break;
                        }
                    }
                }
                "tab" => {
                    push(&mut cell.text, "\t");
                }
                "line-break" => {
                    push(&mut cell.text, "\n");
                }
                _ => {}
            }
            return Ok(());
        }
        match name {
            "table" if self.tables == 0 => {
                self.sheets += 1;
                let name =
                    attribute(e, "table:name").unwrap_or_else(|| format!("Sheet{}", self.sheets));
                self.runs.finish_sheet()?;
                self.runs.sheet(&name);
                (self.row, self.column) = (0, 0);
                self.tables = u32::from(!empty);
            }
            "table-row" if self.tables == 1 => {
                self.row_repeat = repeats(e, "table:number-rows-repeated");
                self.column = 0;
                if empty {
                    self.row = self.row.saturating_add(self.row_repeat);
                    self.row_repeat = 1;
                }
            }
            "table-cell" | "covered-table-cell" if self.tables == 1 => {
                let cell = cell(e);
                if empty {
                    self.place(cell)?;
                } else {
                    self.cell = Some(cell);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, name: &str) -> Result<(), Skip> {
        if self.cell.is_some() {
            if self.ignored > 0 {
                self.ignored -= 1;
                return Ok(());
            }
            match name {
                "table" if self.tables > 1 => self.tables -= 1,
                "table-cell" | "covered-table-cell" if self.tables == 1 => {
                    if let Some(cell) = self.cell.take() {
                        self.place(cell)?;
                    }
                }
                _ => {}
            }
            return Ok(());
        }
        match name {
            "table-row" if self.tables == 1 => {
                self.row = self.row.saturating_add(self.row_repeat);
                self.row_repeat = 1;
            }
            "table" if self.tables > 0 => {
                self.tables -= 1;
                if self.tables == 0 {
                    self.runs.finish_sheet()?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn text(&mut self, text: &str) {
        if let Some(cell) = &mut self.cell
            && cell.value == Value::Text
            && self.ignored == 0
            && !push(&mut cell.text, text)
        {
            // The rest of a cell past MAX_CELL is not read.
            push_once(&mut self.skips, Skip::SpreadsheetLimit);
        }
    }

    /// Places a cell's value at every row and column its repeats cover, and moves past it.
    fn place(&mut self, cell: Cell) -> Result<(), Skip> {
        let (row, column) = (self.row, self.column);
        self.column = column.saturating_add(cell.repeat);
        if cell.value == Value::Unread || cell.text.trim().is_empty() {
            return Ok(());
        }
        let copies = self.row_repeat.saturating_mul(cell.repeat);
        self.repeated = self.repeated.saturating_add(copies - 1);
        if self.repeated > MAX_REPEATS {
            return Err(Skip::SpreadsheetLimit);
        }
        // Past the grid's edge, copies are no cells.
        let rows = row..row.saturating_add(self.row_repeat).min(MAX_ROWS).max(row);
        let columns = column..self.column.min(MAX_COLUMNS).max(column);
        if rows.end - row < self.row_repeat || columns.end - column < cell.repeat {
            push_once(&mut self.skips, Skip::SpreadsheetLimit);
        }
        let named = cell.named;
        for r in rows {
            for c in columns.clone() {
                // Both are within the grid, which u32 holds.
                let (r, c) = (r as u32, c as u32);
                self.runs
                    .cell(r, c, named, |out| out.push_str(cell.text.trim()))?;
            }
        }
        Ok(())
    }
}

/// A cell's repeat and value, from its attributes (ODF 1.2, 19.385): numbers, percentages and
/// currencies in `office:value`, dates in `office:date-value`, strings in
/// `office:string-value` or the cell's paragraphs; booleans and durations are not read, as in
/// an XLSX.
fn cell(e: &BytesStart<'_>) -> Cell {
    let repeat = repeats(e, "table:number-columns-repeated");
    let kind = attribute(e, "office:value-type");
    let given = match kind.as_deref() {
        Some("float" | "percentage" | "currency") => attribute(e, "office:value")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| {
                let mut text = String::new();
                crate::sheet::number(v, &mut text);
                text
            }),
        Some("date") => attribute(e, "office:date-value"),
        Some("string") => attribute(e, "office:string-value"),
        Some("boolean" | "time") => {
            return Cell {
                repeat,
                value: Value::Unread,
                named: false,
                text: String::new(),
                paragraphs: 0,
            };
        }
        _ => None,
    };
    let named = matches!(kind.as_deref(), None | Some("string"));
    let (value, text) = match given {
        Some(text) => (Value::Given, text),
        None => (Value::Text, String::new()),
    };
    Cell {
        repeat,
        value,
        named,
        text,
        paragraphs: 0,
    }
}

/// A repeat count attribute: 1 when absent or not a positive number.
fn repeats(e: &BytesStart<'_>, name: &str) -> u64 {
    attribute(e, name)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(1)
}

/// The value of the attribute `name` (its qualified name, as ODF's writers prefix it).
fn attribute(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let attribute = e.try_get_attribute(name).ok()??;
    let value = attribute.normalized_value(XmlVersion::Implicit1_0).ok()?;
    Some(value.chars().take(MAX_CELL).collect())
}

/// Appends `text` to a cell's, up to [`MAX_CELL`] bytes; whether all of it fitted.
fn push(cell: &mut String, text: &str) -> bool {
    let room = MAX_CELL.saturating_sub(cell.len());
    if text.len() <= room {
        cell.push_str(text);
        return true;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    cell.push_str(&text[..end]);
    false
}

//! Excel 97–2003 workbooks (XLS: BIFF8 records in the `Workbook` stream of a compound file),
//! read record by record as the stream is: the workbook's globals first (its sheets' names,
//! shared strings, number formats), then each worksheet's cells in the order they are written,
//! handed to [`Runs`] as an XLSX's are.
//!
//! `calamine` reads XLS too, but it holds every sheet whole as a dense grid, follows the
//! compound file's chains without a bound and renders every formula to text: a file of a few
//! KiB claiming two cells 65,536 rows and columns apart costs gigabytes, a loop in its
//! allocation table never ends, and a formula of nested parentheses takes seconds. Here memory
//! is the allocation table, the shared strings (at most [`MAX_SST`] of them) and one record,
//! and time is one pass over the stream; formulas are not parsed, their cached values are read.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, Read, Seek, SeekFrom};

use crate::cfb::{Compound, Entry};
use crate::sheet::{Runs, allowance, number, push_once, serial_date};
use crate::sink::TableRead;
use crate::{Limits, Sink, Skip};

/// The most bytes of shared strings (the SST record and its continuations) read: they are
/// held in memory while the sheets are read, and a million distinct strings of a real
/// workbook take tens of MiB.
pub(crate) const MAX_SST: u64 = 32 << 20;

/// The stream that holds an Excel 97–2003 workbook (Excel 5.0/95 named it `Book`, and is not
/// read: its strings are in a code page).
const WORKBOOK: &str = "Workbook";
/// The stream of an Office Open XML file encrypted with a password (MS-OFFCRYPTO).
const ENCRYPTED_PACKAGE: &str = "EncryptedPackage";

/// `BOF`'s version for BIFF8, and its substream type for a worksheet.
const BIFF8: u16 = 0x0600;
const WORKSHEET: u16 = 0x0010;

// Record types (MS-XLS 2.3).
const PADDING: u16 = 0x0000;
const BOF: u16 = 0x0809;
const EOF: u16 = 0x000A;
const CONTINUE: u16 = 0x003C;
const FILE_PASS: u16 = 0x002F;
const BOUND_SHEET: u16 = 0x0085;
const SST: u16 = 0x00FC;
const XF: u16 = 0x00E0;
const FORMAT: u16 = 0x041E;
const DATE_MODE: u16 = 0x0022;
const NUMBER: u16 = 0x0203;
const RK: u16 = 0x027E;
const MUL_RK: u16 = 0x00BD;
const LABEL_SST: u16 = 0x00FD;
const LABEL: u16 = 0x0204;
const RSTRING: u16 = 0x00D6;
const FORMULA: u16 = 0x0006;
const STRING: u16 = 0x0207;
/// Records a formula's own record may be followed by before its text result (`STRING`): a
/// shared formula's, an array formula's and a data table's definitions.
const SHRFMLA: u16 = 0x04BC;
const ARRAY: u16 = 0x0221;
const TABLE: u16 = 0x0236;

/// Days from 1899-12-30 to 1904-01-01: a serial of the 1904 date system plus this is one of
/// the 1900 system.
const DAYS_1904: f64 = 1462.0;

/// Reads every worksheet of the XLS workbook in the compound file `source` into `sink`. An
/// error means the workbook could not be opened: nothing was read; a compound file that holds
/// no workbook is `unsupported_format`, or `encrypted_office` for an encrypted one.
pub(crate) fn read<R: Read + Seek>(
    mut source: R,
    limits: Limits,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let length = source
        .seek(SeekFrom::End(0))
        .map_err(|_| Skip::CorruptSpreadsheet)?;
    let mut file = Compound::open(source).map_err(|_| Skip::CorruptSpreadsheet)?;
    let workbook = workbook_stream(&mut file)?;
    let stream = file
        .stream(&workbook)
        .map_err(|_| Skip::CorruptSpreadsheet)?;
    let mut records = Records::new(BufReader::new(stream));
    let globals = Globals::read(&mut records)?;
    let mut runs = Runs::new(path, sink, allowance(length, limits));
    let mut outcome = TableRead::default();
    if !globals.strings_whole {
        push_once(&mut outcome.skips, Skip::CorruptSpreadsheet);
    }
    match sheets(&mut records, &globals, &mut runs) {
        Ok(true) => {}
        Ok(false) => push_once(&mut outcome.skips, Skip::CorruptSpreadsheet),
        Err(skip) => push_once(&mut outcome.skips, skip),
    }
    // What was read before a failure is handed over all the same.
    if let Err(skip) = runs.finish_sheet() {
        push_once(&mut outcome.skips, skip);
    }
    outcome.handed = runs.handed;
    Ok(outcome)
}

/// The compound file's workbook stream, or why it has none: an Excel 5.0/95 workbook (a
/// `Book` stream), a Word or PowerPoint file, or anything else, is `unsupported_format`; an
/// Office Open XML file saved with a password is `encrypted_office`.
fn workbook_stream<R: Read + Seek>(file: &mut Compound<R>) -> Result<Entry, Skip> {
    let mut streams = file
        .root_streams(&[WORKBOOK, ENCRYPTED_PACKAGE])
        .map_err(|_| Skip::CorruptSpreadsheet)?;
    if let Some(at) = streams
        .iter()
        .position(|e| e.name.eq_ignore_ascii_case(WORKBOOK))
    {
        return Ok(streams.swap_remove(at));
    }
    Err(if streams.is_empty() {
        Skip::UnsupportedFormat
    } else {
        Skip::EncryptedOffice
    })
}

/// The records of a BIFF stream, one at a time, each with its offset in the stream.
struct Records<R> {
    source: R,
    offset: u64,
    /// The current record's data.
    data: Vec<u8>,
    /// A record read ahead (its data in `data`), handed out again by the next call.
    pending: Option<(u16, u64)>,
}

impl<R: Read> Records<R> {
    fn new(source: R) -> Self {
        Self {
            source,
            offset: 0,
            data: Vec::new(),
            pending: None,
        }
    }

    /// The next record's type and offset, its data in `self.data`; `None` at the stream's end.
    fn next(&mut self) -> Result<Option<(u16, u64)>, Skip> {
        if let Some(record) = self.pending.take() {
            return Ok(Some(record));
        }
        let mut header = [0u8; 4];
        match fill(&mut self.source, &mut header)? {
            0 => return Ok(None),
            4 => {}
            _ => return Err(Skip::CorruptSpreadsheet),
        }
        let kind = u16::from_le_bytes([header[0], header[1]]);
        let length = usize::from(u16::from_le_bytes([header[2], header[3]]));
        self.data.resize(length, 0);
        if fill(&mut self.source, &mut self.data)? != length {
            return Err(Skip::CorruptSpreadsheet);
        }
        let at = self.offset;
        self.offset += 4 + length as u64;
        Ok(Some((kind, at)))
    }
}

/// Fills `buf` from `source`, fewer bytes only at its end.
fn fill(source: &mut impl Read, buf: &mut [u8]) -> Result<usize, Skip> {
    let mut filled = 0;
    while filled < buf.len() {
        match source.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Skip::CorruptSpreadsheet),
        }
    }
    Ok(filled)
}

/// What the workbook's globals substream says about its sheets.
#[derive(Default)]
struct Globals {
    /// Each worksheet's name, by the stream offset of its `BOF`.
    names: BTreeMap<u64, String>,
    strings: Strings,
    /// Whether the shared strings were read to their end.
    strings_whole: bool,
    /// Each cell format's number format id, in the order of the `XF` records that cells
    /// name by index.
    formats: Vec<u16>,
    /// The workbook's own number formats that show dates, or (`elapsed`) times elapsed.
    dates: BTreeSet<u16>,
    elapsed: BTreeSet<u16>,
    date1904: bool,
}

impl Globals {
    /// Reads the globals, from the stream's first `BOF` to its `EOF`.
    fn read<R: Read>(records: &mut Records<R>) -> Result<Self, Skip> {
        match records.next()? {
            Some((BOF, _)) if u16_at(&records.data, 0) == Some(BIFF8) => {}
            // Excel 5.0/95 and older write other versions, with strings in a code page.
            Some((BOF, _)) => return Err(Skip::UnsupportedFormat),
            _ => return Err(Skip::CorruptSpreadsheet),
        }
        let mut globals = Globals {
            strings_whole: true,
            ..Globals::default()
        };
        while let Some((kind, _)) = records.next()? {
            let data = &records.data;
            match kind {
                EOF => break,
                FILE_PASS => return Err(Skip::EncryptedOffice),
                BOUND_SHEET => {
                    if let (Some(at), Some(name)) = (u32_at(data, 0), short_string(data, 6)) {
                        globals.names.insert(u64::from(at), name);
                    }
                }
                XF => globals.formats.push(u16_at(data, 2).unwrap_or(0)),
                FORMAT => {
                    if let (Some(id), Some(format)) = (u16_at(data, 0), unicode_string(data, 2)) {
                        match format_kind(&format) {
                            Shown::Date => globals.dates.insert(id),
                            Shown::Elapsed => globals.elapsed.insert(id),
                            Shown::Number => false,
                        };
                    }
                }
                DATE_MODE => globals.date1904 = u16_at(data, 0) == Some(1),
                SST => (globals.strings, globals.strings_whole) = shared_strings(records)?,
                _ => {}
            }
        }
        Ok(globals)
    }

    /// How the cell format `xf` shows a number.
    fn shown(&self, xf: u16) -> Shown {
        let Some(&format) = self.formats.get(usize::from(xf)) else {
            return Shown::Number;
        };
        match format {
            // The built-in date and time formats (MS-XLS 2.5.165).
            14..=22 | 45 | 47 => Shown::Date,
            46 => Shown::Elapsed,
            _ if self.dates.contains(&format) => Shown::Date,
            _ if self.elapsed.contains(&format) => Shown::Elapsed,
            _ => Shown::Number,
        }
    }

    /// A number as the cell format `xf` shows it: a date as a date; an elapsed time, like a
    /// boolean, is not read.
    fn number(&self, xf: u16, value: f64, out: &mut String) {
        match self.shown(xf) {
            Shown::Number => number(value, out),
            Shown::Date if self.date1904 => serial_date(value + DAYS_1904, out),
            Shown::Date => serial_date(value, out),
            Shown::Elapsed => {}
        }
    }
}

/// What a number format shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Number,
    Date,
    Elapsed,
}

/// What the number format `format` shows: a date or time when it has a date or time code
/// (`d`, `m`, `y`, `h`, `s`) outside quoted text, escapes and brackets; an elapsed time when a
/// bracket holds one (`[h]:mm`).
fn format_kind(format: &str) -> Shown {
    let mut chars = format.chars();
    let mut date = false;
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                chars.by_ref().find(|&c| c == '"');
            }
            '\\' | '_' | '*' => {
                chars.next();
            }
            '[' => {
                let inside: String = chars.by_ref().take_while(|&c| c != ']').collect();
                let inside = inside.to_ascii_lowercase();
                if !inside.is_empty() && inside.chars().all(|c| matches!(c, 'h' | 'm' | 's')) {
                    return Shown::Elapsed;
                }
            }
            // Only the first section, for positive numbers, decides.
            ';' => break,
            c if matches!(c.to_ascii_lowercase(), 'd' | 'm' | 'y' | 'h' | 's') => date = true,
            _ => {}
        }
    }
    if date { Shown::Date } else { Shown::Number }
}

/// The shared strings, one text with each string's end in it.
#[derive(Default)]
struct Strings {
    text: String,
    ends: Vec<u32>,
}

impl Strings {
    fn get(&self, index: usize) -> Option<&str> {
        let end = *self.ends.get(index)? as usize;
        let start = match index.checked_sub(1) {
            Some(before) => *self.ends.get(before)? as usize,
            None => 0,
        };
        self.text.get(start..end)
    }
}

/// Reads the `SST` record in `records.data` and the `CONTINUE` records after it: the strings,
/// and whether they were read to their end.
fn shared_strings<R: Read>(records: &mut Records<R>) -> Result<(Strings, bool), Skip> {
    let mut segments = vec![std::mem::take(&mut records.data)];
    let mut total = segments[0].len() as u64;
    loop {
        match records.next()? {
            Some((CONTINUE, _)) => {
                total += records.data.len() as u64;
                if total > MAX_SST {
                    return Err(Skip::SpreadsheetLimit);
                }
                segments.push(records.data.clone());
            }
            Some(other) => {
                records.pending = Some(other);
                break;
            }
            None => break,
        }
    }
    // The total and unique counts come first; neither is trusted.
    let mut cursor = Segments {
        segments: &segments,
        index: 0,
        at: 8,
    };
    let mut strings = Strings::default();
    while !cursor.done() {
        if cursor.string(&mut strings.text).is_none() {
            return Ok((strings, false));
        }
        let Ok(end) = u32::try_from(strings.text.len()) else {
            return Ok((strings, false));
        };
        strings.ends.push(end);
    }
    Ok((strings, true))
}

/// A cursor over a record's data and its continuations, read as one, but for the characters
/// of a string, whose width a continuation restates in its first byte (MS-XLS 2.4.58).
struct Segments<'s> {
    segments: &'s [Vec<u8>],
    index: usize,
    at: usize,
}

impl Segments<'_> {
    /// Whether every byte was read.
    fn done(&mut self) -> bool {
        while self
            .segments
            .get(self.index)
            .is_some_and(|segment| self.at >= segment.len())
        {
            self.index += 1;
            self.at = 0;
        }
        self.index >= self.segments.len()
    }

    fn byte(&mut self) -> Option<u8> {
        if self.done() {
            return None;
        }
        let byte = *self.segments.get(self.index)?.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.byte()?, self.byte()?]))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes([
            self.byte()?,
            self.byte()?,
            self.byte()?,
            self.byte()?,
        ]))
    }

    fn skip(&mut self, mut n: u64) -> Option<()> {
        while n > 0 {
            if self.done() {
                return None;
            }
            let segment = self.segments.get(self.index)?;
            let take = ((segment.len() - self.at) as u64).min(n);
            self.at += take as usize;
            n -= take;
        }
        Some(())
    }

    /// One `XLUnicodeRichExtendedString`: its characters to `out`, its formatting runs and
    /// phonetic data skipped.
    fn string(&mut self, out: &mut String) -> Option<()> {
        let count = self.u16()?;
        let flags = self.byte()?;
        let runs = if flags & 0x08 != 0 { self.u16()? } else { 0 };
        let extended = if flags & 0x04 != 0 { self.u32()? } else { 0 };
        self.characters(usize::from(count), flags & 0x01 != 0, out)?;
        self.skip(u64::from(runs) * 4)?;
        self.skip(u64::from(extended))
    }

    /// `count` characters, each one byte (Latin-1) or two (UTF-16) as `wide` says; where they
    /// cross into the next segment, its first byte says their width from there.
    fn characters(&mut self, mut count: usize, mut wide: bool, out: &mut String) -> Option<()> {
        let mut units: Vec<u16> = Vec::with_capacity(count);
        while count > 0 {
            let segment = self.segments.get(self.index)?;
            if self.at >= segment.len() {
                self.index += 1;
                self.at = 0;
                let flags = *self.segments.get(self.index)?.first()?;
                self.at = 1;
                wide = flags & 0x01 != 0;
                continue;
            }
            let rest = &segment[self.at..];
            let width = if wide { 2 } else { 1 };
            let n = (rest.len() / width).min(count);
            // A character cut by the segment's end: the string is broken.
            if n == 0 {
                return None;
            }
            units.extend(rest.chunks_exact(width).take(n).map(|c| match c {
                [low, high] => u16::from_le_bytes([*low, *high]),
                [byte] => u16::from(*byte),
                _ => 0,
            }));
            self.at += n * width;
            count -= n;
        }
        out.extend(char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)));
        Some(())
    }
}

/// Reads the records after the globals: each worksheet's cells into `runs`. `Ok(false)` says
/// some record was malformed and left out.
fn sheets<R: Read>(
    records: &mut Records<R>,
    globals: &Globals,
    runs: &mut Runs<'_>,
) -> Result<bool, Skip> {
    let mut depth = 0u32;
    let mut worksheet = false;
    let mut worksheets = 0usize;
    let mut whole = true;
    // A formula's cell whose text result is in the `STRING` record after it.
    let mut text_result: Option<(u32, u32)> = None;
    while let Some((kind, at)) = records.next()? {
        let data = &records.data;
        match kind {
            // Writers pad the stream to a whole number of sectors, or of 4 KiB, with zeros
            // after the last substream: no record has type 0.
            PADDING if depth == 0 => break,
            BOF => {
                // A chart or another substream inside a worksheet nests; its records are not
                // the sheet's cells.
                if depth == 0 {
                    worksheet = u16_at(data, 2) == Some(WORKSHEET);
                    if worksheet {
                        runs.finish_sheet()?;
                        worksheets += 1;
                        let name = globals.names.get(&at).cloned();
                        runs.sheet(&name.unwrap_or_else(|| format!("Sheet{worksheets}")));
                    }
                }
                depth = depth.saturating_add(1);
            }
            EOF => {
                depth = depth.saturating_sub(1);
                if depth == 0 && worksheet {
                    runs.finish_sheet()?;
                    worksheet = false;
                }
            }
            _ if !worksheet || depth != 1 => {}
            // Between a formula and its text result; the result still comes.
            SHRFMLA | ARRAY | TABLE => {}
            STRING => {
                if let Some((row, column)) = text_result.take() {
                    let text = unicode_string(data, 0);
                    whole &= text.is_some();
                    runs.cell(row, column, true, |out| {
                        out.push_str(&text.unwrap_or_default())
                    })?;
                }
            }
            _ => {
                text_result = None;
                match cell(kind, data, globals, runs, &mut text_result)? {
                    Some(()) => {}
                    None => whole = false,
                }
            }
        }
    }
    Ok(whole)
}

/// Places the cell, or cells, of one record; `None` when the record is malformed.
fn cell(
    kind: u16,
    data: &[u8],
    globals: &Globals,
    runs: &mut Runs<'_>,
    text_result: &mut Option<(u32, u32)>,
) -> Result<Option<()>, Skip> {
    let at = || Some((u32::from(u16_at(data, 0)?), u32::from(u16_at(data, 2)?)));
    match kind {
        NUMBER | RK | FORMULA => {
            let (Some((row, column)), Some(xf)) = (at(), u16_at(data, 4)) else {
                return Ok(None);
            };
            let value = match kind {
                NUMBER => f64_at(data, 6),
                RK => u32_at(data, 6).map(rk),
                // A result that is not a number marks its last two bytes 0xFFFF; a string
                // (type 0) follows in its own record.
                _ if data.get(12..14) == Some(&[0xFF, 0xFF]) => {
                    if data.get(6) == Some(&0) {
                        *text_result = Some((row, column));
                    }
                    return Ok(Some(()));
                }
                _ => f64_at(data, 6),
            };
            let Some(value) = value else {
                return Ok(None);
            };
            runs.cell(row, column, false, |out| globals.number(xf, value, out))?;
        }
        MUL_RK => {
            // Row, first column, (format, RK) pairs, last column.
            let (Some((row, first)), Some(pairs)) =
                (at(), data.get(4..data.len().saturating_sub(2)))
            else {
                return Ok(None);
            };
            if pairs.len() % 6 != 0 {
                return Ok(None);
            }
            for (column, pair) in (first..).zip(pairs.chunks_exact(6)) {
                let (Some(xf), Some(value)) = (u16_at(pair, 0), u32_at(pair, 2)) else {
                    return Ok(None);
                };
                runs.cell(row, column, false, |out| globals.number(xf, rk(value), out))?;
            }
        }
        LABEL_SST => {
            let (Some((row, column)), Some(index)) = (at(), u32_at(data, 6)) else {
                return Ok(None);
            };
            let Some(text) = globals.strings.get(index as usize) else {
                return Ok(None);
            };
            runs.cell(row, column, true, |out| out.push_str(text))?;
        }
        LABEL | RSTRING => {
            let (Some((row, column)), Some(text)) = (at(), unicode_string(data, 6)) else {
                return Ok(None);
            };
            runs.cell(row, column, true, |out| out.push_str(&text))?;
        }
        _ => {}
    }
    Ok(Some(()))
}

/// An RK number (MS-XLS 2.5.217): a 30-bit integer or the high 30 bits of a float, either
/// maybe a hundredth of what is written.
fn rk(value: u32) -> f64 {
    let number = if value & 0x02 != 0 {
        f64::from((value as i32) >> 2)
    } else {
        f64::from_bits(u64::from(value & 0xFFFF_FFFC) << 32)
    };
    if value & 0x01 != 0 {
        number / 100.0
    } else {
        number
    }
}

/// An `XLUnicodeString` at `at`: a 16-bit character count, a byte of flags, the characters.
/// One cut short keeps the characters it has.
fn unicode_string(data: &[u8], at: usize) -> Option<String> {
    let count = usize::from(u16_at(data, at)?);
    characters(data.get(at + 2..)?, count)
}

/// A `ShortXLUnicodeString` at `at`: an 8-bit character count, a byte of flags, the
/// characters.
fn short_string(data: &[u8], at: usize) -> Option<String> {
    let count = usize::from(*data.get(at)?);
    characters(data.get(at + 1..)?, count)
}

/// `count` characters after a byte of flags whose lowest bit says they are two bytes each.
fn characters(flagged: &[u8], count: usize) -> Option<String> {
    let (&flags, bytes) = flagged.split_first()?;
    if flags & 0x01 != 0 {
        let units = bytes
            .chunks_exact(2)
            .take(count)
            .map(|c| u16::from_le_bytes([c[0], c[1]]));
        Some(
            char::decode_utf16(units)
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect(),
        )
    } else {
        Some(bytes.iter().take(count).map(|&b| char::from(b)).collect())
    }
}

fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn f64_at(data: &[u8], at: usize) -> Option<f64> {
    Some(f64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

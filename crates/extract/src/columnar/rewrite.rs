//! A Parquet file rewritten with some of its values changed, the rest kept: the same schema,
//! row groups, row counts and key-value metadata, every column chunk without a change copied
//! byte for byte, and a changed column chunk encoded again with its own codec (and a
//! dictionary when it had one), by the `parquet` crate's writer.
//!
//! Which values change is an [`Editor`]'s call. It sees the values of the columns it names as
//! the scan saw them (rendered as text, one per line) and answers with byte ranges of a value
//! and their new text. A change must keep the value's physical type: a string stays a string
//! (a fixed-length one the same length), and an integer is only replaced whole, by an integer.
//! Anything else (a float, a date, a decimal, a mask in an integer column) refuses the whole
//! rewrite, and nothing is written.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::column::reader::{ColumnReader, ColumnReaderImpl, get_column_reader};
use parquet::column::writer::{ColumnCloseResult, ColumnWriter};
use parquet::data_type::{ByteArray, DataType, FixedLenByteArray};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, ColumnPath};

use super::pages::{Codec, Pages, Shared};
use super::render::{self, Render};
use super::{RECORDS, byte_range, footer};
use crate::edit::{Change, Editor, Refusal};
use crate::limits::RATIO_GRACE;
use crate::sink::Lines;
use crate::{Limits, TableUnit};

/// `bytes`, a Parquet file, with the changes `editor` asks for; `None` when it asks for none.
pub fn rewrite(
    bytes: Bytes,
    limits: Limits,
    editor: &mut dyn Editor,
) -> Result<Option<Vec<u8>>, Refusal> {
    let length = bytes.len() as u64;
    let mut source = Cursor::new(bytes.clone());
    let metadata = footer(&mut source, length).map_err(|_| Refusal::Unreadable)?;
    let metadata = catch_unwind(AssertUnwindSafe(|| {
        ParquetMetaDataReader::decode_metadata(&metadata)
    }))
    .map_err(|_| Refusal::Unreadable)?
    .map_err(|_| Refusal::Unreadable)?;
    let shared: Shared = Arc::new(Mutex::new(source));
    let mut budget = Budget {
        allowance: length.saturating_mul(limits.max_ratio).max(RATIO_GRACE),
        held: MAX_HELD,
    };
    // Names once per leaf column, not once per chunk: a wide schema has millions of them.
    let schema = metadata.file_metadata().schema_descr();
    let names: Vec<Vec<String>> = schema
        .columns()
        .iter()
        .map(|c| render::names(schema.root_schema(), c.path().parts()))
        .collect();
    // Every column chunk to change, decoded and changed, before anything is written: a
    // refusal leaves nothing half done.
    let mut changed: Vec<Vec<Option<Decoded>>> = Vec::new();
    for group in metadata.row_groups() {
        let schema = group.schema_descr();
        let mut columns = Vec::with_capacity(group.num_columns());
        for (i, chunk) in group.columns().iter().enumerate() {
            let descr = schema.column(i);
            let Some(names) = names.get(i) else {
                return Err(Refusal::Unreadable);
            };
            let wanted = editor.wants(&names.join("."));
            let decoded = match Render::of(&descr) {
                Some(render) if wanted => {
                    let column = Chunk {
                        source: &shared,
                        length,
                        chunk,
                        descr,
                        render,
                        limits,
                    };
                    column.decode(names, editor, &mut budget)?
                }
                _ => None,
            };
            columns.push(decoded);
        }
        changed.push(columns);
    }
    if changed.iter().flatten().all(Option::is_none) {
        return Ok(None);
    }
    let out = write(&metadata, &bytes, changed)?;
    verify(&metadata, &out)?;
    Ok(Some(out))
}

/// The most a rewrite holds of changed column chunks, decoded: their pages, levels and
/// values. A page of a few bytes may declare two billion nulls.
const MAX_HELD: u64 = 512 << 20;

/// What a rewrite may still spend: text rendered (as a scan may), and memory held.
struct Budget {
    allowance: u64,
    held: u64,
}

impl Budget {
    fn hold(&mut self, amount: u64) -> Result<(), Refusal> {
        spend(&mut self.held, amount).map_err(|()| Refusal::Unreadable)
    }
}

/// Checks the new file's footer against the old one's before it is handed back: the same row
/// groups, rows and columns, every chunk within the file. A writer's mistake must never reach
/// a customer's storage.
fn verify(before: &ParquetMetaData, out: &[u8]) -> Result<(), Refusal> {
    let after = ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::copy_from_slice(out))
        .map_err(|_| Refusal::Write)?;
    let (b, a) = (before.file_metadata(), after.file_metadata());
    let same = b.num_rows() == a.num_rows()
        && before.num_row_groups() == after.num_row_groups()
        && before
            .row_groups()
            .iter()
            .zip(after.row_groups())
            .all(|(b, a)| {
                b.num_rows() == a.num_rows()
                    && b.num_columns() == a.num_columns()
                    && a.columns()
                        .iter()
                        .all(|c| byte_range(c, out.len() as u64).is_ok())
            });
    if same { Ok(()) } else { Err(Refusal::Write) }
}

/// Writes the file again: each row group's columns copied or, when changed, encoded anew.
fn write(
    metadata: &ParquetMetaData,
    bytes: &Bytes,
    changed: Vec<Vec<Option<Decoded>>>,
) -> Result<Vec<u8>, Refusal> {
    let file = metadata.file_metadata();
    let schema = file.schema_descr();
    let mut properties = WriterProperties::builder()
        .set_key_value_metadata(file.key_value_metadata().cloned())
        .set_created_by(file.created_by().unwrap_or("dps").to_owned());
    // A changed column keeps its codec, and a dictionary when its first row group had one.
    for (i, column) in schema.columns().iter().enumerate() {
        let path = ColumnPath::new(column.path().parts().to_vec());
        if let Some(chunk) = metadata.row_groups().first().map(|g| g.column(i)) {
            properties = properties
                .set_column_compression(path.clone(), chunk.compression())
                .set_column_dictionary_enabled(path, chunk.dictionary_page_offset().is_some());
        }
    }
    let properties = Arc::new(properties.build());
    let mut writer = SerializedFileWriter::new(Vec::new(), schema.root_schema_ptr(), properties)
        .map_err(|_| Refusal::Write)?;
    for (group, columns) in metadata.row_groups().iter().zip(changed) {
        let mut out = writer.next_row_group().map_err(|_| Refusal::Write)?;
        for (chunk, decoded) in group.columns().iter().zip(columns) {
            match decoded {
                None => out
                    .append_column(bytes, copied(chunk, group.num_rows())?)
                    .map_err(|_| Refusal::Write)?,
                Some(decoded) => {
                    let mut column = out
                        .next_column()
                        .map_err(|_| Refusal::Write)?
                        .ok_or(Refusal::Write)?;
                    decoded.write(column.untyped())?;
                    column.close().map_err(|_| Refusal::Write)?;
                }
            }
        }
        out.close().map_err(|_| Refusal::Write)?;
    }
    writer.into_inner().map_err(|_| Refusal::Write)
}

/// What the writer needs to copy a column chunk as it is. A dictionary offset some writers
/// leave at 0 (or past the data) is no dictionary, as the reader takes it: the writer would
/// copy from there.
fn copied(chunk: &ColumnChunkMetaData, rows: i64) -> Result<ColumnCloseResult, Refusal> {
    let metadata = match chunk.dictionary_page_offset() {
        Some(d) if d <= 0 || d >= chunk.data_page_offset() => chunk
            .clone()
            .into_builder()
            .set_dictionary_page_offset(None)
            .build()
            .map_err(|_| Refusal::Write)?,
        _ => chunk.clone(),
    };
    Ok(ColumnCloseResult {
        bytes_written: chunk.compressed_size().max(0) as u64,
        rows_written: rows.max(0) as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: None,
    })
}

/// A changed column chunk: its values and levels, ready to be written.
struct Decoded {
    values: Values,
    def: Option<Vec<i16>>,
    rep: Option<Vec<i16>>,
}

enum Values {
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Bytes(Vec<ByteArray>),
    Fixed(Vec<FixedLenByteArray>),
}

impl Decoded {
    fn write(self, writer: &mut ColumnWriter<'_>) -> Result<(), Refusal> {
        let (def, rep) = (self.def.as_deref(), self.rep.as_deref());
        let written = match (self.values, writer) {
            (Values::Int32(v), ColumnWriter::Int32ColumnWriter(w)) => w.write_batch(&v, def, rep),
            (Values::Int64(v), ColumnWriter::Int64ColumnWriter(w)) => w.write_batch(&v, def, rep),
            (Values::Bytes(v), ColumnWriter::ByteArrayColumnWriter(w)) => {
                w.write_batch(&v, def, rep)
            }
            (Values::Fixed(v), ColumnWriter::FixedLenByteArrayColumnWriter(w)) => {
                w.write_batch(&v, def, rep)
            }
            _ => return Err(Refusal::Write),
        };
        written.map(drop).map_err(|_| Refusal::Write)
    }
}

/// One column chunk of the file, to be read.
struct Chunk<'a> {
    source: &'a Shared,
    length: u64,
    chunk: &'a ColumnChunkMetaData,
    descr: ColumnDescPtr,
    render: Render,
    limits: Limits,
}

impl Chunk<'_> {
    /// The chunk's values with the editor's changes, or `None` when it asks for none.
    fn decode(
        self,
        names: &[String],
        editor: &mut dyn Editor,
        budget: &mut Budget,
    ) -> Result<Option<Decoded>, Refusal> {
        let range = byte_range(self.chunk, self.length).map_err(|_| Refusal::Unreadable)?;
        // Its pages stay held as long as a value points into them.
        budget.hold(self.chunk.uncompressed_size().max(0) as u64)?;
        let codec = Codec::of(self.chunk.compression()).map_err(|_| Refusal::Unreadable)?;
        let levels: Option<Arc<AtomicU64>> =
            (self.descr.max_rep_level() > 0).then(|| Arc::new(AtomicU64::new(0)));
        let pages = Pages::new(
            self.source.clone(),
            range,
            codec,
            self.limits,
            levels.clone(),
        );
        let (max_def, max_rep) = (self.descr.max_def_level(), self.descr.max_rep_level());
        let reader = catch_unwind(AssertUnwindSafe(|| {
            get_column_reader(self.descr, Box::new(pages))
        }))
        .map_err(|_| Refusal::Unreadable)?;
        let render = self.render;
        let mut read = Read {
            names,
            editor,
            budget,
            levels,
        };
        let (values, def, rep) = match reader {
            ColumnReader::Int32ColumnReader(r) => {
                let Some((mut v, def, rep, changes)) =
                    read.all(r, |v, t| render.int(i64::from(*v), t))?
                else {
                    return Ok(None);
                };
                for (i, changes) in changes {
                    v[i] = integer(render, i64::from(v[i]), &changes)
                        .and_then(|n| i32::try_from(n).map_err(|_| Refusal::ColumnType))?;
                }
                (Values::Int32(v), def, rep)
            }
            ColumnReader::Int64ColumnReader(r) => {
                let Some((mut v, def, rep, changes)) = read.all(r, |v, t| render.int(*v, t))?
                else {
                    return Ok(None);
                };
                for (i, changes) in changes {
                    v[i] = integer(render, v[i], &changes)?;
                }
                (Values::Int64(v), def, rep)
            }
            ColumnReader::ByteArrayColumnReader(r) => {
                let Some((mut v, def, rep, changes)) =
                    read.all(r, |v, t| render.bytes(v.data(), t))?
                else {
                    return Ok(None);
                };
                for (i, changes) in changes {
                    v[i] = ByteArray::from(text(render, v[i].data(), &changes, false)?);
                }
                (Values::Bytes(v), def, rep)
            }
            ColumnReader::FixedLenByteArrayColumnReader(r) => {
                let Some((mut v, def, rep, changes)) =
                    read.all(r, |v, t| render.bytes(v.data(), t))?
                else {
                    return Ok(None);
                };
                for (i, changes) in changes {
                    let changed = text(render, v[i].data(), &changes, true)?;
                    v[i] = FixedLenByteArray::from(changed);
                }
                (Values::Fixed(v), def, rep)
            }
            // A float cannot hold a token or a mask: a change there is refused.
            ColumnReader::FloatColumnReader(r) => {
                return match read.all(r, |v, t| render.float(f64::from(*v), t))? {
                    Some(_) => Err(Refusal::ColumnType),
                    None => Ok(None),
                };
            }
            ColumnReader::DoubleColumnReader(r) => {
                return match read.all(r, |v, t| render.float(*v, t))? {
                    Some(_) => Err(Refusal::ColumnType),
                    None => Ok(None),
                };
            }
            // `Render::of` renders neither booleans nor INT96 timestamps.
            ColumnReader::BoolColumnReader(_) | ColumnReader::Int96ColumnReader(_) => {
                return Ok(None);
            }
        };
        Ok(Some(Decoded {
            values,
            def: (max_def > 0).then_some(def),
            rep: (max_rep > 0).then_some(rep),
        }))
    }
}

/// The changes of one value, by its index among the chunk's values.
type Changes = Vec<(usize, Vec<Change>)>;

/// A chunk's values, levels and changes; `None` when nothing changes.
type All<T> = Option<(Vec<T>, Vec<i16>, Vec<i16>, Changes)>;

/// Reading one chunk's values and asking the editor about them.
struct Read<'a, 'e> {
    names: &'a [String],
    editor: &'e mut dyn Editor,
    budget: &'a mut Budget,
    /// Levels the pages fetched for one read of a repeated column, reset before each read.
    levels: Option<Arc<AtomicU64>>,
}

/// Text a run of values reaches before the editor sees it.
const RUN: usize = 64 << 10;

impl Read<'_, '_> {
    /// Every value of the chunk, its levels, and the changes the editor asks for.
    fn all<T: DataType>(
        &mut self,
        mut reader: ColumnReaderImpl<T>,
        render: impl Fn(&T::T, &mut String),
    ) -> Result<All<T::T>, Refusal> {
        let mut def = Vec::new();
        let mut rep = Vec::new();
        let mut values = Vec::new();
        loop {
            let before = values.len();
            if let Some(levels) = &self.levels {
                levels.store(0, Ordering::Relaxed);
            }
            let (records, _, levels) = catch_unwind(AssertUnwindSafe(|| {
                reader.read_records(RECORDS, Some(&mut def), Some(&mut rep), &mut values)
            }))
            .map_err(|_| Refusal::Unreadable)?
            .map_err(|_| Refusal::Unreadable)?;
            if records == 0 && levels == 0 && values.len() == before {
                break;
            }
            let added = values.len() - before;
            self.spend(levels.max(added) as u64)?;
            let held = levels * 2 * size_of::<i16>() + added * size_of::<T::T>();
            self.budget.hold(held as u64)?;
        }
        let mut changes: Changes = Vec::new();
        let mut lines = Lines::default();
        // The value each line of the run is.
        let mut of_line: Vec<usize> = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let next = of_line.len() as u64 + 1;
            let allowance = &mut self.budget.allowance;
            lines
                .push_with(next, |t| render(value, t), |n| spend(allowance, n as u64))
                .map_err(|()| Refusal::Unreadable)?;
            if lines.rows.len() > of_line.len() {
                of_line.push(i);
            }
            if lines.text.len() >= RUN {
                self.ask(&mut lines, &mut of_line, &mut changes);
            }
        }
        self.ask(&mut lines, &mut of_line, &mut changes);
        if changes.is_empty() {
            return Ok(None);
        }
        Ok(Some((values, def, rep, changes)))
    }

    /// Hands a run to the editor and keeps its changes by value.
    fn ask(&mut self, lines: &mut Lines, of_line: &mut Vec<usize>, changes: &mut Changes) {
        if lines.is_empty() {
            return;
        }
        let mut asked = self.editor.edit(&lines.column(self.names, TableUnit::Row));
        asked.sort_by_key(|c| (c.line, c.start));
        for change in asked {
            let Some(&value) = usize::try_from(change.line)
                .ok()
                .and_then(|l| l.checked_sub(1))
                .and_then(|l| of_line.get(l))
            else {
                continue;
            };
            match changes.last_mut() {
                Some((last, list)) if *last == value => list.push(change),
                _ => changes.push((value, vec![change])),
            }
        }
        lines.clear();
        of_line.clear();
    }

    fn spend(&mut self, amount: u64) -> Result<(), Refusal> {
        spend(&mut self.budget.allowance, amount).map_err(|()| Refusal::Unreadable)
    }
}

fn spend(allowance: &mut u64, amount: u64) -> Result<(), ()> {
    *allowance = allowance.checked_sub(amount).ok_or(())?;
    Ok(())
}

/// An integer replaced whole by the integer its change's text is. Only a plain integer is
/// shown as itself; a date, a decimal or a timestamp is not, and is refused.
fn integer(render: Render, value: i64, changes: &[Change]) -> Result<i64, Refusal> {
    let mut shown = String::new();
    render.int(value, &mut shown);
    match (render, changes) {
        (Render::Signed, [change]) if change.start == 0 && change.end == shown.len() => {
            change.text.parse().map_err(|_| Refusal::ColumnType)
        }
        _ => Err(Refusal::ColumnType),
    }
}

/// A string value with its changes: only text shown as itself (valid UTF-8, a line break a
/// space of the same length) is changed; a fixed-length value keeps its length.
fn text(render: Render, value: &[u8], changes: &[Change], fixed: bool) -> Result<Vec<u8>, Refusal> {
    if !matches!(render, Render::Text | Render::MaybeText) || std::str::from_utf8(value).is_err() {
        return Err(Refusal::ColumnType);
    }
    let mut out = Vec::with_capacity(value.len());
    let mut at = 0;
    for change in changes {
        if change.start < at || change.end < change.start || change.end > value.len() {
            return Err(Refusal::ColumnType);
        }
        out.extend_from_slice(&value[at..change.start]);
        out.extend_from_slice(change.text.as_bytes());
        at = change.end;
    }
    out.extend_from_slice(&value[at..]);
    if fixed && out.len() != value.len() {
        return Err(Refusal::ColumnType);
    }
    Ok(out)
}

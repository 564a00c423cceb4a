//! Parquet files, read column by column: every leaf column of every row group, its values
//! rendered as text (strings, integers, decimals, dates and timestamps, floats) and handed to
//! the sink in runs, each value with its row. The footer is decoded by the `parquet` crate;
//! pages are read and inflated here under bounds ([`pages`]) and decoded by its column reader.
//! A column chunk that fails is skipped with its reason and the other columns are still read.

mod header;
mod pages;
pub(crate) mod render;
pub mod rewrite;

use std::io::SeekFrom;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use parquet::column::reader::{ColumnReader, ColumnReaderImpl, get_column_reader};
use parquet::data_type::DataType;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaDataReader};
use parquet::schema::types::ColumnDescPtr;

pub(crate) use pages::Source;
use pages::{Codec, Pages, Shared, skip_of};
use render::Render;

use crate::limits::RATIO_GRACE;
use crate::sink::{Lines, TableRead};
use crate::{Limits, Sink, Skip, TableUnit};

/// The largest footer read: wide tables with many row groups reach a few MiB.
const MAX_FOOTER: u64 = 64 << 20;

/// Records read from a column at a time.
const RECORDS: usize = 1024;

/// Text a run of values reaches before it is handed to the sink.
const RUN: usize = 64 << 10;

/// Reads every column of the Parquet file in `source` into `sink`, each run of values at
/// `path`. An error means the footer could not be read: nothing was.
pub(crate) fn read(
    source: impl Source + 'static,
    limits: Limits,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let mut source = source;
    let length = source
        .seek(SeekFrom::End(0))
        .map_err(|_| Skip::CorruptParquet)?;
    let metadata = footer(&mut source, length)?;
    let metadata = catch_unwind(AssertUnwindSafe(|| {
        ParquetMetaDataReader::decode_metadata(&metadata)
    }))
    .map_err(|_| Skip::CorruptParquet)?
    .map_err(|_| Skip::CorruptParquet)?;
    let shared: Shared = Arc::new(Mutex::new(source));
    let mut outcome = TableRead::default();
    // What the file may render to, levels and text together, as an archive member may inflate:
    // a page of a few bytes can say "this value, two billion times".
    let allowance = length.saturating_mul(limits.max_ratio).max(RATIO_GRACE);
    let mut run = Run {
        names: Vec::new(),
        lines: Lines::default(),
        path,
        sink,
        handed: false,
        allowance,
    };
    let mut first_row: u64 = 1;
    'groups: for group in metadata.row_groups() {
        let Ok(rows) = u64::try_from(group.num_rows()) else {
            outcome.skips.push(Skip::CorruptParquet);
            break;
        };
        let schema = group.schema_descr();
        for (i, chunk) in group.columns().iter().enumerate() {
            let descr = schema.column(i);
            let Some(render) = Render::of(&descr) else {
                continue;
            };
            run.names = render::names(schema.root_schema(), descr.path().parts());
            let read = column(
                &shared, length, chunk, descr, render, limits, first_row, &mut run,
            );
            // What was read before a failure is handed over all the same.
            run.flush();
            if let Err(skip) = read {
                if !outcome.skips.contains(&skip) {
                    outcome.skips.push(skip);
                }
                // The file's allowance is spent: no column after this one can be read either.
                if run.allowance == 0 {
                    break 'groups;
                }
            }
        }
        first_row = first_row.saturating_add(rows);
    }
    outcome.handed = run.handed;
    Ok(outcome)
}

/// The footer's metadata bytes, after checking its length and magic.
fn footer(source: &mut impl Source, length: u64) -> Result<Vec<u8>, Skip> {
    if length < 12 {
        return Err(Skip::CorruptParquet);
    }
    let mut tail = [0u8; 8];
    source
        .seek(SeekFrom::Start(length - 8))
        .and_then(|_| source.read_exact(&mut tail))
        .map_err(|_| Skip::CorruptParquet)?;
    match &tail[4..] {
        b"PAR1" => {}
        b"PARE" => return Err(Skip::EncryptedParquet),
        _ => return Err(Skip::CorruptParquet),
    }
    let size = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if size + 12 > length {
        return Err(Skip::CorruptParquet);
    }
    if size > MAX_FOOTER {
        return Err(Skip::ParquetLimit);
    }
    let mut bytes = vec![0u8; size as usize];
    source
        .seek(SeekFrom::Start(length - 8 - size))
        .and_then(|_| source.read_exact(&mut bytes))
        .map_err(|_| Skip::CorruptParquet)?;
    Ok(bytes)
}

/// Reads one column chunk into `run`.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; the chunk, where it is and how to render it"
)]
fn column(
    source: &Shared,
    length: u64,
    chunk: &ColumnChunkMetaData,
    descr: ColumnDescPtr,
    render: Render,
    limits: Limits,
    first_row: u64,
    run: &mut Run<'_>,
) -> Result<(), Skip> {
    let range = byte_range(chunk, length)?;
    let codec = Codec::of(chunk.compression())?;
    let repeated = descr.max_rep_level() > 0;
    let levels = repeated.then(|| Arc::new(AtomicU64::new(0)));
    let pages = Pages::new(source.clone(), range, codec, limits, levels.clone());
    let mut rows = Rows {
        max_def: descr.max_def_level(),
        max_rep: descr.max_rep_level(),
        next: first_row,
        levels,
    };
    let reader = catch_unwind(AssertUnwindSafe(|| {
        get_column_reader(descr, Box::new(pages))
    }))
    .map_err(|_| Skip::CorruptParquet)?;
    match reader {
        ColumnReader::Int32ColumnReader(r) => {
            rows.drain(r, run, |v, t| render.int(i64::from(*v), t))
        }
        ColumnReader::Int64ColumnReader(r) => rows.drain(r, run, |v, t| render.int(*v, t)),
        ColumnReader::FloatColumnReader(r) => {
            rows.drain(r, run, |v, t| render.float(f64::from(*v), t))
        }
        ColumnReader::DoubleColumnReader(r) => rows.drain(r, run, |v, t| render.float(*v, t)),
        ColumnReader::ByteArrayColumnReader(r) => {
            rows.drain(r, run, |v, t| render.bytes(v.data(), t))
        }
        ColumnReader::FixedLenByteArrayColumnReader(r) => {
            rows.drain(r, run, |v, t| render.bytes(v.data(), t))
        }
        // `Render::of` renders neither booleans nor INT96 timestamps.
        ColumnReader::BoolColumnReader(_) | ColumnReader::Int96ColumnReader(_) => Ok(()),
    }
}

/// Where a column chunk's pages are, checked against the file: its dictionary page when it
/// has one, else its first data page, for its compressed size.
fn byte_range(chunk: &ColumnChunkMetaData, length: u64) -> Result<(u64, u64), Skip> {
    let data = u64::try_from(chunk.data_page_offset()).map_err(|_| Skip::CorruptParquet)?;
    // Some writers put 0 for "no dictionary"; a dictionary page is before the data pages.
    let start = match chunk.dictionary_page_offset() {
        Some(d) if d > 0 && (d as u64) < data => d as u64,
        _ => data,
    };
    let size = u64::try_from(chunk.compressed_size()).map_err(|_| Skip::CorruptParquet)?;
    match start.checked_add(size) {
        Some(end) if end <= length => Ok((start, size)),
        _ => Err(Skip::CorruptParquet),
    }
}

/// Follows rows through a column's levels: a repetition level of 0 starts a row, a definition
/// level at its maximum is a value.
struct Rows {
    max_def: i16,
    max_rep: i16,
    /// The 1-based row of the file the next record starts.
    next: u64,
    levels: Option<Arc<AtomicU64>>,
}

impl Rows {
    fn drain<T: DataType>(
        &mut self,
        mut reader: ColumnReaderImpl<T>,
        run: &mut Run<'_>,
        render: impl Fn(&T::T, &mut String),
    ) -> Result<(), Skip> {
        let mut def = Vec::new();
        let mut rep = Vec::new();
        let mut values = Vec::new();
        loop {
            def.clear();
            rep.clear();
            values.clear();
            if let Some(levels) = &self.levels {
                levels.store(0, Ordering::Relaxed);
            }
            // The crate's decoders meet hostile pages here: a panic among them is the page's
            // fault, and this column's end. The sink is never called inside.
            let (records, _, read) = catch_unwind(AssertUnwindSafe(|| {
                reader.read_records(RECORDS, Some(&mut def), Some(&mut rep), &mut values)
            }))
            .map_err(|_| Skip::CorruptParquet)?
            .map_err(|e| skip_of(&e))?;
            if records == 0 && read == 0 {
                return Ok(());
            }
            run.spend(read as u64)?;
            if self.max_def == 0 && self.max_rep == 0 {
                for value in &values {
                    run.push(self.next, |text| render(value, text))?;
                    self.next += 1;
                }
            } else {
                let mut values = values.iter();
                let mut row = self.next.saturating_sub(1);
                for k in 0..read {
                    if self.max_rep == 0 || rep.get(k) == Some(&0) {
                        row = self.next;
                        self.next += 1;
                    }
                    if self.max_def == 0 || def.get(k) == Some(&self.max_def) {
                        let value = values.next().ok_or(Skip::CorruptParquet)?;
                        run.push(row, |text| render(value, text))?;
                    }
                }
            }
            if run.lines.text.len() >= RUN {
                run.flush();
            }
        }
    }
}

/// Takes `amount` from what the file may still render to; past it, the file stops.
fn spend(allowance: &mut u64, amount: u64) -> Result<(), Skip> {
    match allowance.checked_sub(amount) {
        Some(left) => {
            *allowance = left;
            Ok(())
        }
        None => {
            *allowance = 0;
            Err(Skip::CompressionRatio)
        }
    }
}

/// A column's values on their way to the sink, one per line.
struct Run<'a> {
    /// The column's names.
    names: Vec<String>,
    lines: Lines,
    path: &'a [String],
    sink: &'a mut dyn Sink,
    handed: bool,
    /// Levels and bytes of text the file may still render to.
    allowance: u64,
}

impl Run<'_> {
    fn spend(&mut self, amount: u64) -> Result<(), Skip> {
        spend(&mut self.allowance, amount)
    }

    /// Renders one value on a line of its own, within the file's allowance.
    fn push(&mut self, row: u64, render: impl FnOnce(&mut String)) -> Result<(), Skip> {
        let Self {
            lines, allowance, ..
        } = self;
        lines.push_with(row, render, |length| spend(allowance, length as u64))
    }

    fn flush(&mut self) {
        if self.lines.is_empty() {
            return;
        }
        self.sink
            .values(self.path, &self.lines.column(&self.names, TableUnit::Row));
        self.handed = true;
        self.lines.clear();
    }
}

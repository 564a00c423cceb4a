//! An Avro object container file rewritten with some of its values changed, the rest kept:
//! the header (schema, codec, metadata and sync marker) copied byte for byte, every block
//! without a change copied as it is, and a changed block's records encoded again against the
//! file's own schema and compressed with its own codec.
//!
//! Which values change is an [`Editor`]'s call, as for Parquet
//! ([`crate::parquet_rewrite`]): it sees a block's values field by field, rendered as the
//! reader renders them, one per line, and answers with byte ranges of values and their new
//! text. A string takes the change in place; an integer is only replaced whole, by an integer;
//! anything else (an enum's symbol, a map's key, a float, a date, a timestamp, a decimal, a
//! fixed value's length) refuses the whole rewrite, and nothing is written.

use std::collections::HashMap;
use std::str::FromStr;

use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;
use apache_avro::{Codec, Schema};

use crate::avro::{MAX_BLOCK, Place, leaf, leaves};
use crate::edit::{Change, Editor, Refusal};
use crate::limits::RATIO_GRACE;
use crate::sink::Lines;
use crate::{Limits, TableUnit};

/// The sync marker's length, after the header and after every block.
const SYNC: usize = 16;

/// `bytes`, an Avro object container file, with the changes `editor` asks for; `None` when it
/// asks for none.
pub fn rewrite(
    bytes: &[u8],
    limits: Limits,
    editor: &mut dyn Editor,
) -> Result<Option<Vec<u8>>, Refusal> {
    crate::avro::cap_allocations();
    let mut input = bytes;
    let header = Header::read(&mut input)?;
    let mut allowance = (bytes.len() as u64)
        .saturating_mul(limits.max_ratio)
        .max(RATIO_GRACE);
    let mut out: Option<Vec<u8>> = None;
    while !input.is_empty() {
        let start = bytes.len() - input.len();
        let count = long(&mut input)?;
        let size = usize::try_from(long(&mut input)?).map_err(|_| Refusal::Unreadable)?;
        if count < 0 || size > MAX_BLOCK || input.len() < size + SYNC {
            return Err(Refusal::Unreadable);
        }
        let (data, rest) = input.split_at(size);
        let (sync, rest) = rest.split_at(SYNC);
        if sync != header.sync {
            return Err(Refusal::Unreadable);
        }
        input = rest;
        let block = Block {
            header: &header,
            count: count as u64,
            data,
        };
        match block.changed(editor, &mut allowance)? {
            Some(encoded) => {
                let out = out.get_or_insert_with(|| bytes[..start].to_vec());
                write_long(out, count);
                write_long(out, encoded.len() as i64);
                out.extend_from_slice(&encoded);
                out.extend_from_slice(&header.sync);
            }
            None => {
                if let Some(out) = out.as_mut() {
                    out.extend_from_slice(&bytes[start..bytes.len() - input.len()]);
                }
            }
        }
    }
    Ok(out)
}

/// What a file's header says: its schema, codec and sync marker.
struct Header {
    schema: Schema,
    codec: Codec,
    sync: [u8; SYNC],
}

impl Header {
    fn read(input: &mut &[u8]) -> Result<Self, Refusal> {
        let magic = take(input, 4)?;
        if magic != b"Obj\x01" {
            return Err(Refusal::Unreadable);
        }
        let mut metadata: HashMap<String, Vec<u8>> = HashMap::new();
        loop {
            let mut count = long(input)?;
            if count == 0 {
                break;
            }
            if count < 0 {
                count = count.checked_neg().ok_or(Refusal::Unreadable)?;
                long(input)?;
            }
            for _ in 0..count {
                let key =
                    String::from_utf8(bytes(input)?.to_vec()).map_err(|_| Refusal::Unreadable)?;
                let value = bytes(input)?.to_vec();
                metadata.insert(key, value);
            }
        }
        let sync: [u8; SYNC] = take(input, SYNC)?
            .try_into()
            .map_err(|_| Refusal::Unreadable)?;
        let schema = metadata
            .get("avro.schema")
            .and_then(|s| std::str::from_utf8(s).ok())
            .and_then(|s| Schema::parse_str(s).ok())
            .ok_or(Refusal::Unreadable)?;
        let codec = match metadata.get("avro.codec").map(Vec::as_slice) {
            None | Some(b"null") => Codec::Null,
            Some(name) => std::str::from_utf8(name)
                .ok()
                .and_then(|n| Codec::from_str(n).ok())
                .ok_or(Refusal::Unreadable)?,
        };
        crate::avro::refuse(&schema).map_err(|_| Refusal::Unreadable)?;
        Ok(Self {
            schema,
            codec,
            sync,
        })
    }
}

/// One block of records, as the file holds it.
struct Block<'a> {
    header: &'a Header,
    count: u64,
    data: &'a [u8],
}

impl Block<'_> {
    /// The block encoded again with the editor's changes, or `None` when it asks for none.
    fn changed(
        &self,
        editor: &mut dyn Editor,
        allowance: &mut u64,
    ) -> Result<Option<Vec<u8>>, Refusal> {
        let mut data = self.data.to_vec();
        self.header
            .codec
            .decompress(&mut data)
            .map_err(|_| Refusal::Unreadable)?;
        // Every record takes a byte at least (a schema whose records take none is refused).
        if self.count > data.len() as u64 {
            return Err(Refusal::Unreadable);
        }
        let reader = GenericDatumReader::builder(&self.header.schema)
            .build()
            .map_err(|_| Refusal::Unreadable)?;
        // Each field's values, in the order the reader renders them. The records are decoded
        // one at a time, here and again to write them, so a block is never held as values.
        let mut fields = Fields::default();
        let mut rest = data.as_slice();
        for _ in 0..self.count {
            let mut record = reader
                .read_value(&mut rest)
                .map_err(|_| Refusal::Unreadable)?;
            fields.collect(&mut record, editor, allowance)?;
        }
        let mut changes: HashMap<Vec<String>, Vec<(usize, Vec<Change>)>> = HashMap::new();
        for (names, lines) in fields.lines {
            let column = lines.column(&names, TableUnit::Record);
            let mut asked = editor.edit(&column);
            if asked.is_empty() {
                continue;
            }
            asked.sort_by_key(|c| (c.line, c.start));
            let mut by_value: Vec<(usize, Vec<Change>)> = Vec::new();
            for change in asked {
                let Some(index) = usize::try_from(change.line)
                    .ok()
                    .and_then(|l| l.checked_sub(1))
                else {
                    continue;
                };
                match by_value.last_mut() {
                    Some((last, list)) if *last == index => list.push(change),
                    _ => by_value.push((index, vec![change])),
                }
            }
            changes.insert(names, by_value);
        }
        if changes.is_empty() {
            return Ok(None);
        }
        let mut apply = Apply {
            changes,
            seen: HashMap::new(),
        };
        let writer = GenericDatumWriter::builder(&self.header.schema)
            .build()
            .map_err(|_| Refusal::Write)?;
        let mut encoded = Vec::with_capacity(data.len());
        let mut rest = data.as_slice();
        for _ in 0..self.count {
            let mut record = reader
                .read_value(&mut rest)
                .map_err(|_| Refusal::Unreadable)?;
            apply.value(&mut record)?;
            writer
                .write_value_ref(&mut encoded, &record)
                .map_err(|_| Refusal::ColumnType)?;
        }
        self.header
            .codec
            .compress(&mut encoded)
            .map_err(|_| Refusal::Write)?;
        Ok(Some(encoded))
    }
}

/// A block's values, field by field, each value a line.
#[derive(Default)]
struct Fields {
    lines: Vec<(Vec<String>, Lines)>,
    index: HashMap<Vec<String>, usize>,
}

impl Fields {
    /// Renders the leaves of `value` as the reader does; only the fields the editor wants are
    /// kept.
    fn collect(
        &mut self,
        value: &mut Value,
        editor: &dyn Editor,
        allowance: &mut u64,
    ) -> Result<(), Refusal> {
        let mut buf = String::new();
        leaves(value, &mut Vec::new(), &mut |names, value, _| {
            let text = leaf(value, &mut buf).unwrap_or_default();
            if text.is_empty() || !editor.wants(&names.join(".")) {
                return Ok(());
            }
            *allowance = allowance
                .checked_sub(text.len() as u64 + 1)
                .ok_or(Refusal::Unreadable)?;
            let slot = match self.index.get(names) {
                Some(&slot) => slot,
                None => {
                    self.index.insert(names.to_vec(), self.lines.len());
                    self.lines.push((names.to_vec(), Lines::default()));
                    self.lines.len() - 1
                }
            };
            let lines = &mut self.lines[slot].1;
            let next = lines.rows.len() as u64 + 1;
            lines.push(next, text);
            Ok(())
        })
    }
}

/// The changes applied to a block's records, in the order [`Fields::collect`] met the values.
struct Apply {
    /// Each field's changes by the index of its value in the block.
    changes: HashMap<Vec<String>, Vec<(usize, Vec<Change>)>>,
    /// Values of each field met so far.
    seen: HashMap<Vec<String>, usize>,
}

impl Apply {
    /// Applies the changes to the leaves of `value`, met in the order [`Fields::collect`] met
    /// them. A change to a map's key is refused: the key is the map's structure.
    fn value(&mut self, value: &mut Value) -> Result<(), Refusal> {
        let mut buf = String::new();
        leaves(value, &mut Vec::new(), &mut |names, value, place| {
            if leaf(value, &mut buf).unwrap_or_default().is_empty() {
                return Ok(());
            }
            let Some(changes) = self.changes.get(names) else {
                return Ok(());
            };
            let index = match self.seen.get_mut(names) {
                Some(seen) => {
                    *seen += 1;
                    *seen - 1
                }
                None => {
                    self.seen.insert(names.to_vec(), 1);
                    0
                }
            };
            let Ok(at) = changes.binary_search_by_key(&index, |(i, _)| *i) else {
                return Ok(());
            };
            if place == Place::Key {
                return Err(Refusal::ColumnType);
            }
            *value = changed(value, &changes[at].1)?;
            Ok(())
        })
    }
}

/// `value` with `changes`: a string's bytes changed in place, an integer replaced whole.
fn changed(value: &Value, changes: &[Change]) -> Result<Value, Refusal> {
    let whole = |shown: &str| match changes {
        [change] if change.start == 0 && change.end == shown.len() => Ok(change.text.as_str()),
        _ => Err(Refusal::ColumnType),
    };
    Ok(match value {
        Value::String(s) => Value::String(spliced(s, changes)?),
        Value::Bytes(b) if std::str::from_utf8(b).is_ok() => {
            Value::Bytes(spliced(std::str::from_utf8(b).unwrap_or_default(), changes)?.into_bytes())
        }
        Value::Fixed(n, b) if std::str::from_utf8(b).is_ok() => {
            let new = spliced(std::str::from_utf8(b).unwrap_or_default(), changes)?;
            if new.len() != *n {
                return Err(Refusal::ColumnType);
            }
            Value::Fixed(*n, new.into_bytes())
        }
        Value::Int(v) => Value::Int(
            whole(&v.to_string())?
                .parse()
                .map_err(|_| Refusal::ColumnType)?,
        ),
        Value::Long(v) => Value::Long(
            whole(&v.to_string())?
                .parse()
                .map_err(|_| Refusal::ColumnType)?,
        ),
        _ => return Err(Refusal::ColumnType),
    })
}

/// `text` with each change's byte range replaced by its text.
fn spliced(text: &str, changes: &[Change]) -> Result<String, Refusal> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for change in changes {
        let kept = text
            .get(at..change.start)
            .filter(|_| change.end <= text.len() && text.is_char_boundary(change.end))
            .ok_or(Refusal::ColumnType)?;
        out.push_str(kept);
        out.push_str(&change.text);
        at = change.end;
    }
    out.push_str(text.get(at..).ok_or(Refusal::ColumnType)?);
    Ok(out)
}

/// `n` bytes from the front of `input`.
fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], Refusal> {
    if input.len() < n {
        return Err(Refusal::Unreadable);
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// A length-prefixed byte string.
fn bytes<'a>(input: &mut &'a [u8]) -> Result<&'a [u8], Refusal> {
    let n = usize::try_from(long(input)?).map_err(|_| Refusal::Unreadable)?;
    take(input, n)
}

/// A zig-zag variable-length long.
fn long(input: &mut &[u8]) -> Result<i64, Refusal> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *take(input, 1)?.first().ok_or(Refusal::Unreadable)?;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    Err(Refusal::Unreadable)
}

fn write_long(out: &mut Vec<u8>, n: i64) {
    let mut value = ((n << 1) ^ (n >> 63)) as u64;
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

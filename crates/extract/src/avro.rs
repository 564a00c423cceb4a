//! Avro object container files, read record by record with `apache-avro` (its header first,
//! then its blocks as they stream in, each inflated under the crate's allocation cap): every
//! field of every record, unions, arrays and maps included, rendered as text and handed to the
//! sink in runs of one field's values, each with its record's number.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::Read;
use std::rc::Rc;
use std::sync::Once;

use apache_avro::schema::Name;
use apache_avro::types::Value;
use apache_avro::{Reader, Schema, error::Details};

use crate::columnar::render;
use crate::limits::RATIO_GRACE;
use crate::sink::{Lines, TableRead};
use crate::{Limits, Sink, Skip, TableUnit};

/// The most one Avro block may inflate to, and the longest string, array or map it may hold:
/// the crate refuses whatever is past it instead of allocating for it.
pub(crate) const MAX_BLOCK: usize = 32 << 20;

/// Text the runs of a file hold before they are handed to the sink.
const RUNS: usize = 256 << 10;

/// Distinct fields of one file kept apart: past this, a file of ever new map keys or field
/// names is no table.
const MAX_FIELDS: usize = 4096;

/// Reads every record of the Avro file `source` (`length` bytes, or as many as were read when
/// it streams) into `sink`. An error means its header could not be read: nothing was.
pub(crate) fn read(
    source: impl Read,
    limits: Limits,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    cap_allocations();
    let read = Rc::new(Cell::new(0));
    let counted = Counting {
        inner: source,
        read: read.clone(),
    };
    let reader = Reader::new(counted).map_err(|_| Skip::CorruptAvro)?;
    refuse(reader.writer_schema())?;
    let mut runs = Runs {
        fields: HashMap::new(),
        order: Vec::new(),
        held: 0,
        path,
        sink,
        handed: false,
        spent: 0,
        read: read.clone(),
        max_ratio: limits.max_ratio,
    };
    let mut outcome = TableRead::default();
    let mut record: u64 = 0;
    for value in reader {
        let value = match value {
            Ok(value) => value,
            Err(e) => {
                outcome.skips.push(match e.details() {
                    Details::MemoryAllocation { .. } => Skip::AvroLimit,
                    _ => Skip::CorruptAvro,
                });
                break;
            }
        };
        record += 1;
        let mut value = value;
        if let Err(skip) = runs.value(&mut value, record) {
            outcome.skips.push(skip);
            break;
        }
        if runs.held >= RUNS {
            runs.flush();
        }
    }
    runs.flush();
    outcome.handed = runs.handed;
    Ok(outcome)
}

/// Sets the crate's allocation cap, once per process: a block inflates, and a string, array or
/// map is allocated, to at most [`MAX_BLOCK`].
pub(crate) fn cap_allocations() {
    static CAP: Once = Once::new();
    CAP.call_once(|| {
        apache_avro::util::max_allocation_bytes(MAX_BLOCK);
    });
}

/// Counts the bytes read through it: what the file's allowance grows with.
struct Counting<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

struct Runs<'a> {
    fields: HashMap<Vec<String>, Lines>,
    /// The fields in the order they were first met, so that runs are handed over in it.
    order: Vec<Vec<String>>,
    held: usize,
    path: &'a [String],
    sink: &'a mut dyn Sink,
    handed: bool,
    /// Text rendered so far.
    spent: u64,
    /// Bytes of the file read so far, and how many times that its text may be.
    read: Rc<Cell<u64>>,
    max_ratio: u64,
}

impl Runs<'_> {
    /// Renders every leaf of `value` into its field's run.
    fn value(&mut self, value: &mut Value, record: u64) -> Result<(), Skip> {
        let mut buf = String::new();
        leaves(
            value,
            &mut Vec::new(),
            &mut |names, leaf_value, _| match leaf(leaf_value, &mut buf) {
                Some(text) if !text.is_empty() => self.push(names, record, text),
                _ => Ok(()),
            },
        )
    }

    fn push(&mut self, names: &[String], record: u64, text: &str) -> Result<(), Skip> {
        // A file renders to at most its length × the ratio, as an archive's member inflates.
        let spent = self.spent + text.len() as u64 + 1;
        if spent
            > self
                .max_ratio
                .saturating_mul(self.read.get())
                .max(RATIO_GRACE)
        {
            return Err(Skip::CompressionRatio);
        }
        if !self.fields.contains_key(names) {
            if self.fields.len() >= MAX_FIELDS {
                return Err(Skip::AvroLimit);
            }
            self.order.push(names.to_vec());
            self.fields.insert(names.to_vec(), Lines::default());
        }
        let Some(run) = self.fields.get_mut(names) else {
            return Ok(());
        };
        run.push(record, text);
        self.held += text.len() + 1;
        self.spent = spent;
        Ok(())
    }

    fn flush(&mut self) {
        for names in &self.order {
            let Some(run) = self.fields.get_mut(names) else {
                continue;
            };
            if run.is_empty() {
                continue;
            }
            self.sink
                .values(self.path, &run.column(names, TableUnit::Record));
            self.handed = true;
            run.clear();
        }
        self.held = 0;
    }
}

/// The text of a value that is one (a string, a number, a date or a timestamp), in `buf` when
/// it is rendered; `None` for containers and for what holds no text a person reads. Strings
/// are their own text: a value may be as large as its block.
pub(crate) fn leaf<'a>(value: &'a Value, buf: &'a mut String) -> Option<&'a str> {
    match value {
        Value::String(s) | Value::Enum(_, s) => Some(s),
        Value::Bytes(b) | Value::Fixed(_, b) => Some(std::str::from_utf8(b).unwrap_or_default()),
        Value::Int(v) => Some(rendered(buf, |t| t.push_str(&v.to_string()))),
        Value::Long(v) => Some(rendered(buf, |t| t.push_str(&v.to_string()))),
        Value::Float(v) if v.is_finite() => Some(rendered(buf, |t| t.push_str(&v.to_string()))),
        Value::Double(v) if v.is_finite() => Some(rendered(buf, |t| t.push_str(&v.to_string()))),
        Value::Float(_) | Value::Double(_) => Some(""),
        Value::Date(days) => Some(rendered(buf, |t| render::date(i64::from(*days), t))),
        Value::TimestampMillis(v) | Value::LocalTimestampMillis(v) => {
            Some(rendered(buf, |t| render::timestamp(*v, 1_000, t)))
        }
        Value::TimestampMicros(v) | Value::LocalTimestampMicros(v) => {
            Some(rendered(buf, |t| render::timestamp(*v, 1_000_000, t)))
        }
        Value::TimestampNanos(v) | Value::LocalTimestampNanos(v) => {
            Some(rendered(buf, |t| render::timestamp(*v, 1_000_000_000, t)))
        }
        Value::BigDecimal(d) => Some(rendered(buf, |t| t.push_str(&d.to_string()))),
        _ => None,
    }
}

fn rendered(buf: &mut String, render: impl FnOnce(&mut String)) -> &str {
    buf.clear();
    render(buf);
    buf
}

/// Where a leaf sits: a value, or a map's key, which is the map's structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Value,
    Key,
}

/// What [`leaves`] hands each leaf to: its field path, the leaf, and where it sits.
pub(crate) type Visit<'v, E> = dyn FnMut(&[String], &mut Value, Place) -> Result<(), E> + 'v;

/// Visits every leaf of `value` ([`leaf`] says which are) with its field path, in the one
/// order the reader and the rewriter agree on: a record's fields in order, an array's items in
/// order, a union's value, a map's entries by key, each key (at `<map>.key`) before its value
/// (at `<map>.value`). A map's key is handed over as a string, and what the visitor does to it
/// is not kept.
pub(crate) fn leaves<E>(
    value: &mut Value,
    names: &mut Vec<String>,
    visit: &mut Visit<'_, E>,
) -> Result<(), E> {
    match value {
        Value::Union(_, inner) => leaves(inner, names, visit),
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|item| leaves(item, names, visit)),
        Value::Map(entries) => {
            let mut keys: Vec<String> = entries.keys().cloned().collect();
            keys.sort_unstable();
            for key in keys {
                names.push("key".into());
                let visited = visit(names, &mut Value::String(key.clone()), Place::Key);
                names.pop();
                visited?;
                names.push("value".into());
                let visited = match entries.get_mut(&key) {
                    Some(item) => leaves(item, names, visit),
                    None => Ok(()),
                };
                names.pop();
                visited?;
            }
            Ok(())
        }
        Value::Record(fields) => {
            for (name, field) in fields {
                names.push(field_name(name));
                let visited = leaves(field, names, visit);
                names.pop();
                visited?;
            }
            Ok(())
        }
        _ if leaf(value, &mut String::new()).is_some() => visit(names, value, Place::Value),
        // Null, booleans, times of day, durations, UUIDs, and decimals, whose scale is in the
        // schema.
        _ => Ok(()),
    }
}

/// A record field's name as a field path holds it.
fn field_name(name: &str) -> String {
    name.chars().take(crate::MAX_NAME).collect()
}

/// Why a file's schema is not read, if it is not: a record that holds itself (a linked list, a
/// tree), whose values nest as deep as the data says, and which `apache-avro` decodes by
/// recursion without a bound, so that a block of a few bytes a level would overflow the
/// stack; or a record that takes no bytes (`null`, a record of nulls), of which a block may
/// claim any count. A schema's own nesting is bounded by its JSON's (128 levels).
pub(crate) fn refuse(schema: &Schema) -> Result<(), Skip> {
    if recursive(schema, &mut Vec::new()) || empty(schema) {
        return Err(Skip::AvroLimit);
    }
    Ok(())
}

/// Whether `schema` names one of the records it is inside of (`within`).
fn recursive<'s>(schema: &'s Schema, within: &mut Vec<&'s Name>) -> bool {
    match schema {
        Schema::Ref { name } => within.contains(&name),
        Schema::Record(record) => {
            within.push(&record.name);
            let found = record.fields.iter().any(|f| recursive(&f.schema, within));
            within.pop();
            found
        }
        Schema::Array(array) => recursive(&array.items, within),
        Schema::Map(map) => recursive(&map.types, within),
        Schema::Union(union) => union.variants().iter().any(|v| recursive(v, within)),
        _ => false,
    }
}

/// Whether a value of `schema` is encoded in no bytes at all.
fn empty(schema: &Schema) -> bool {
    match schema {
        Schema::Null => true,
        Schema::Fixed(fixed) => fixed.size == 0,
        Schema::Record(record) => record.fields.iter().all(|f| empty(&f.schema)),
        _ => false,
    }
}

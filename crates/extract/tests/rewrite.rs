//! Parquet files pyarrow wrote (`tests/fixtures/formats/make_parquet.py`), rewritten with some
//! values changed: the schema, row groups, codecs and key-value metadata stay, every other
//! column keeps its bytes, and the reader reads the changed values back.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use bytes::Bytes;
use common::fixture;
use extract::{
    Change, Column, Container, Editor, Limits, Refusal, Sink, Skip, parquet_rewrite, walk,
};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

/// Replaces every value of the `field` columns that starts with `from` by `to(value)`.
struct Replace<'a> {
    field: &'a str,
    to: fn(&str) -> Option<String>,
    seen: Vec<String>,
}

impl Editor for Replace<'_> {
    fn wants(&self, field: &str) -> bool {
        field == self.field
    }

    fn edit(&mut self, column: &Column<'_>) -> Vec<Change> {
        assert_eq!(column.names.join("."), self.field);
        let mut changes = Vec::new();
        for (line, value) in column.text.split_terminator('\n').enumerate() {
            assert_eq!(column.rows[line], line as u64 + 1, "rows count lines");
            self.seen.push(value.to_owned());
            if let Some(text) = (self.to)(value) {
                changes.push(Change {
                    line: line as u64 + 1,
                    start: 0,
                    end: value.len(),
                    text,
                });
            }
        }
        changes
    }
}

/// Every value the reader reads, by column, in order.
#[derive(Default)]
struct Columns(BTreeMap<String, Vec<(u64, String)>>);

impl Sink for Columns {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("a Parquet file has no members");
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        let values = self.0.entry(column.names.join(".")).or_default();
        for (line, row) in column.text.split_terminator('\n').zip(column.rows) {
            values.push((*row, line.to_owned()));
        }
    }

    fn skipped(&mut self, _: &[String], reason: Skip) {
        panic!("{reason}");
    }
}

fn columns(bytes: Vec<u8>) -> Columns {
    let mut columns = Columns::default();
    walk(
        Cursor::new(bytes),
        Container::Parquet,
        "t.parquet",
        Limits::default(),
        &mut columns,
    )
    .unwrap();
    columns
}

fn metadata(bytes: &[u8]) -> ParquetMetaData {
    ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::copy_from_slice(bytes))
        .unwrap()
}

fn rewritten(name: &str, editor: &mut dyn Editor) -> Result<Option<Vec<u8>>, Refusal> {
    parquet_rewrite::rewrite(Bytes::from(fixture(name)), Limits::default(), editor)
}

fn tokenized(value: &str) -> Option<String> {
    value
        .strip_prefix("536-22-")
        .map(|last| format!("900-71-{last}"))
}

/// The chunks of every column but `changed`, as bytes: they are copied, not re-encoded.
fn other_chunks(bytes: &[u8], changed: &str) -> Vec<Vec<u8>> {
    let meta = metadata(bytes);
    let mut chunks = Vec::new();
    for group in meta.row_groups() {
        for chunk in group.columns() {
            if chunk.column_path().string() == changed {
                continue;
            }
            let (start, length) = chunk.byte_range();
            chunks.push(bytes[start as usize..(start + length) as usize].to_vec());
        }
    }
    chunks
}

#[test]
fn a_string_column_is_rewritten_and_every_other_column_kept_byte_for_byte() {
    let original = fixture("customers.parquet");
    let mut editor = Replace {
        field: "ssn",
        to: tokenized,
        seen: Vec::new(),
    };
    let out = rewritten("customers.parquet", &mut editor)
        .unwrap()
        .unwrap();
    assert_eq!(editor.seen.len(), 300, "every SSN is seen once");

    let (before, after) = (metadata(&original), metadata(&out));
    let schema = |m: &ParquetMetaData| format!("{:?}", m.file_metadata().schema());
    assert_eq!(schema(&before), schema(&after));
    assert_eq!(
        before.file_metadata().num_rows(),
        after.file_metadata().num_rows()
    );
    assert_eq!(before.num_row_groups(), after.num_row_groups());
    assert_eq!(
        before.file_metadata().key_value_metadata(),
        after.file_metadata().key_value_metadata(),
        "pyarrow's ARROW:schema and the rest are kept"
    );
    for (b, a) in before.row_groups().iter().zip(after.row_groups()) {
        assert_eq!(b.num_rows(), a.num_rows());
        for (bc, ac) in b.columns().iter().zip(a.columns()) {
            assert_eq!(bc.compression(), ac.compression(), "{}", bc.column_path());
        }
    }
    assert_eq!(
        other_chunks(&original, "ssn"),
        other_chunks(&out, "ssn"),
        "the columns without a change are copied as they were"
    );

    let (old, new) = (columns(original), columns(out));
    for (column, values) in &old.0 {
        if column != "ssn" {
            assert_eq!(values, &new.0[column], "{column}");
        }
    }
    let ssns = &new.0["ssn"];
    assert_eq!(ssns.len(), 300);
    assert_eq!(ssns[7], (8, "900-71-4107".to_owned()));
}

#[test]
fn an_integer_column_stays_an_integer_column() {
    let mut editor = Replace {
        field: "employee_ssn",
        to: |v| v.parse::<i64>().ok().map(|n| (n + 100_000_000).to_string()),
        seen: Vec::new(),
    };
    let out = rewritten("payroll.parquet", &mut editor).unwrap().unwrap();
    let after = metadata(&out);
    let column = after.file_metadata().schema_descr().column(0);
    assert_eq!(column.physical_type(), parquet::basic::Type::INT64);
    let new = columns(out);
    assert_eq!(new.0["employee_ssn"][0], (1, "636224600".to_owned()));
    assert_eq!(new.0["department"].len(), 30);
}

#[test]
fn a_change_an_integer_column_cannot_hold_refuses_the_whole_rewrite() {
    let mut masked = Replace {
        field: "employee_ssn",
        to: |_| Some("*****4600".to_owned()),
        seen: Vec::new(),
    };
    assert_eq!(
        rewritten("payroll.parquet", &mut masked),
        Err(Refusal::ColumnType)
    );
    // A date is shown as text but stored as days: it cannot take a change either.
    let mut dated = Replace {
        field: "date_of_birth",
        to: |_| Some("1999-01-01".to_owned()),
        seen: Vec::new(),
    };
    assert_eq!(
        rewritten("customers.parquet", &mut dated),
        Err(Refusal::ColumnType)
    );
}

#[test]
fn nested_and_repeated_columns_keep_their_nulls_and_lists() {
    let original = fixture("nested.parquet");
    let mut editor = Replace {
        field: "alt_emails",
        to: |v| Some(v.replace("@example.com", "@example.org")),
        seen: Vec::new(),
    };
    let out = rewritten("nested.parquet", &mut editor).unwrap().unwrap();
    let (old, new) = (columns(original), columns(out));
    let alt = &new.0["alt_emails"];
    assert_eq!(alt.len(), old.0["alt_emails"].len());
    for ((row_before, before), (row_after, after)) in old.0["alt_emails"].iter().zip(alt) {
        assert_eq!(row_before, row_after, "every value stays in its row");
        assert_eq!(before.replace("@example.com", "@example.org"), *after);
    }
    assert_eq!(old.0["customer.ssn"], new.0["customer.ssn"]);
}

#[test]
fn nothing_asked_is_nothing_written_and_a_damaged_file_is_refused() {
    let mut none = Replace {
        field: "ssn",
        to: |_| None,
        seen: Vec::new(),
    };
    assert_eq!(rewritten("customers.parquet", &mut none), Ok(None));
    let mut any = Replace {
        field: "ssn",
        to: tokenized,
        seen: Vec::new(),
    };
    assert_eq!(
        rewritten("truncated.parquet", &mut any),
        Err(Refusal::Unreadable)
    );
}

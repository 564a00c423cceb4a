//! Avro files fastavro wrote (`tests/fixtures/formats/make_avro.py`), rewritten with some
//! values changed: the header stays byte for byte, a block without a change is copied, and the
//! reader reads the changed values back in their records, every other field as it was.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use common::fixture;
use extract::{Change, Column, Container, Editor, Limits, Refusal, Sink, Skip, avro_rewrite, walk};

/// The sync marker make_avro.py writes: the header ends with it.
const SYNC: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// Replaces every value of the `field` for which `to` says so.
struct Replace {
    field: &'static str,
    to: fn(&str) -> Option<String>,
}

impl Editor for Replace {
    fn wants(&self, field: &str) -> bool {
        field == self.field
    }

    fn edit(&mut self, column: &Column<'_>) -> Vec<Change> {
        assert_eq!(column.names.join("."), self.field);
        let mut changes = Vec::new();
        for (line, value) in column.text.split_terminator('\n').enumerate() {
            assert_eq!(column.rows[line], line as u64 + 1, "rows count lines");
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

/// Every value the reader reads, by field, as (record, value).
#[derive(Default)]
struct Fields(BTreeMap<String, Vec<(u64, String)>>);

impl Sink for Fields {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("an Avro file has no members");
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

fn fields(bytes: Vec<u8>) -> Fields {
    let mut fields = Fields::default();
    walk(
        Cursor::new(bytes),
        Container::Avro,
        "e.avro",
        Limits::default(),
        &mut fields,
    )
    .unwrap();
    fields
}

fn rewritten(name: &str, editor: &mut dyn Editor) -> Result<Option<Vec<u8>>, Refusal> {
    avro_rewrite::rewrite(&fixture(name), Limits::default(), editor)
}

fn tokenized(value: &str) -> Option<String> {
    value
        .strip_prefix("536-22-")
        .map(|last| format!("900-71-{last}"))
}

/// The bytes up to the end of the header: its sync marker's first occurrence.
fn header(bytes: &[u8]) -> &[u8] {
    let end = bytes.windows(16).position(|w| w == SYNC).unwrap() + 16;
    &bytes[..end]
}

#[test]
fn a_string_field_is_rewritten_in_every_codec_and_every_other_field_kept() {
    for codec in ["null", "deflate", "snappy", "zstandard"] {
        let name = format!("codec_{codec}.avro");
        let original = fixture(&name);
        let mut editor = Replace {
            field: "contact.ssn",
            to: tokenized,
        };
        let out = avro_rewrite::rewrite(&original, Limits::default(), &mut editor)
            .unwrap()
            .unwrap();
        assert_eq!(
            header(&out),
            header(&original),
            "{codec}: the header is kept"
        );
        let (old, new) = (fields(original), fields(out));
        assert_eq!(
            old.0.keys().collect::<Vec<_>>(),
            new.0.keys().collect::<Vec<_>>()
        );
        for (field, values) in &old.0 {
            if field != "contact.ssn" {
                assert_eq!(values, &new.0[field], "{codec}: {field}");
            }
        }
        let ssns = &new.0["contact.ssn"];
        assert_eq!(ssns.len(), old.0["contact.ssn"].len());
        for ((row_before, before), (row_after, after)) in old.0["contact.ssn"].iter().zip(ssns) {
            assert_eq!(row_before, row_after, "every value stays in its record");
            assert_eq!(tokenized(before).as_deref(), Some(after.as_str()));
        }
    }
}

#[test]
fn blocks_without_a_change_are_copied_as_they_are() {
    let original = fixture("events.avro");
    // One value, in the file's first block: every later block is copied byte for byte.
    let mut editor = Replace {
        field: "contact.ssn",
        to: |v| (v == "536-22-4701").then(|| "900-71-4701".to_owned()),
    };
    let out = rewritten("events.avro", &mut editor).unwrap().unwrap();
    let tail = 2000;
    assert!(original.len() > 2 * tail);
    assert_eq!(out[out.len() - tail..], original[original.len() - tail..]);
    let new = fields(out);
    assert_eq!(new.0["contact.ssn"][1], (2, "900-71-4701".to_owned()));
    assert_eq!(new.0["contact.ssn"][2], (3, "536-22-4702".to_owned()));
}

#[test]
fn a_long_stays_a_long_and_what_a_field_cannot_hold_is_refused() {
    let mut renumbered = Replace {
        field: "event_id",
        to: |v| v.parse::<i64>().ok().map(|n| (n + 1).to_string()),
    };
    let out = rewritten("events.avro", &mut renumbered).unwrap().unwrap();
    assert_eq!(fields(out).0["event_id"][0], (1, "90001".to_owned()));

    let mut masked = Replace {
        field: "event_id",
        to: |_| Some("*****".to_owned()),
    };
    assert_eq!(
        rewritten("events.avro", &mut masked),
        Err(Refusal::ColumnType)
    );
    let mut symbol = Replace {
        field: "kind",
        to: |_| Some("SECRET".to_owned()),
    };
    assert_eq!(
        rewritten("events.avro", &mut symbol),
        Err(Refusal::ColumnType)
    );
    let mut key = Replace {
        field: "attributes.key",
        to: |_| Some("x".to_owned()),
    };
    assert_eq!(rewritten("events.avro", &mut key), Err(Refusal::ColumnType));
    let mut when = Replace {
        field: "occurred_at",
        to: |_| Some("2000-01-01T00:00:00".to_owned()),
    };
    assert_eq!(
        rewritten("events.avro", &mut when),
        Err(Refusal::ColumnType)
    );
}

#[test]
fn nothing_asked_is_nothing_written_and_a_cut_file_is_refused() {
    let mut none = Replace {
        field: "contact.ssn",
        to: |_| None,
    };
    assert_eq!(rewritten("events.avro", &mut none), Ok(None));
    let mut any = Replace {
        field: "contact.ssn",
        to: tokenized,
    };
    assert_eq!(
        rewritten("truncated.avro", &mut any),
        Err(Refusal::Unreadable)
    );
}

//! Avro object container files written by fastavro (`tests/fixtures/formats/make_avro.py`),
//! read record by record: every field with its path and record, under every codec, and
//! hostile.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use common::fixture;
use extract::{Column, Container, Limits, Report, Sink, Skip, TableUnit, container, walk};

/// Every value read, by field (names joined by `.`), as (record, value).
#[derive(Default)]
struct Fields {
    fields: BTreeMap<String, Vec<(u64, String)>>,
    skipped: Vec<Skip>,
}

impl Sink for Fields {
    fn member(&mut self, path: &[String], _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("{path:?}: an Avro file has no members");
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        assert_eq!(column.unit, TableUnit::Record);
        let lines: Vec<&str> = column.text.split_terminator('\n').collect();
        assert_eq!(lines.len(), column.rows.len(), "a record for every line");
        let values = self.fields.entry(column.names.join(".")).or_default();
        for (line, record) in lines.iter().zip(column.rows) {
            values.push((*record, (*line).to_owned()));
        }
    }

    fn skipped(&mut self, _: &[String], reason: Skip) {
        self.skipped.push(reason);
    }
}

fn read(name: &str) -> (Result<Report, Skip>, Fields) {
    let bytes = fixture(name);
    assert_eq!(container(&bytes), Some(Container::Avro), "{name}");
    let mut fields = Fields::default();
    let report = walk(
        Cursor::new(bytes),
        Container::Avro,
        name,
        Limits::default(),
        &mut fields,
    );
    (report, fields)
}

fn field<'f>(fields: &'f Fields, name: &str) -> &'f [(u64, String)] {
    fields
        .fields
        .get(name)
        .unwrap_or_else(|| panic!("no field {name} in {:?}", fields.fields.keys()))
}

#[test]
fn every_field_of_every_record_is_read_with_its_record() {
    let (report, fields) = read("events.avro");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert_eq!(
        fields.fields.keys().collect::<Vec<_>>(),
        [
            "alt_emails",
            "attributes.key",
            "attributes.value",
            "balance",
            "contact.city",
            "contact.email",
            "contact.name",
            "contact.ssn",
            "event_id",
            "kind",
            "occurred_at"
        ]
    );
    // Every fifth account has no SSN: a null branch of the union is no value.
    let ssn = field(&fields, "contact.ssn");
    assert_eq!(ssn.len(), 160);
    assert_eq!(ssn[4], (6, "536-22-4705".into()));
    let email = field(&fields, "contact.email");
    assert_eq!(email.len(), 200);
    assert_eq!(email[199], (200, "holder199@example.com".into()));
    // An array's values share their record; a map's keys and values are fields of their own.
    let alt = field(&fields, "alt_emails");
    assert_eq!(alt.len(), 199);
    assert_eq!(
        alt[..3],
        [
            (2, "holder1.alt0@example.com".into()),
            (3, "holder2.alt0@example.com".into()),
            (3, "holder2.alt1@example.com".into())
        ]
    );
    assert_eq!(
        field(&fields, "attributes.key")[..2],
        [(1, "branch".into()), (1, "tier".into())]
    );
    // Enums, timestamps and numbers as text.
    assert_eq!(field(&fields, "kind")[2].1, "CLOSED");
    assert_eq!(field(&fields, "occurred_at")[1].1, "2024-05-01T09:31:00");
    assert_eq!(field(&fields, "balance")[1].1, "1013.25");
}

#[test]
fn every_codec_reads_the_same_records() {
    let expected: Vec<(u64, String)> = (0..25u64)
        .filter(|i| i % 5 != 4)
        .map(|i| (i + 1, format!("536-22-{:04}", 5000 + i)))
        .collect();
    for codec in ["null", "deflate", "snappy", "zstandard"] {
        let name = format!("codec_{codec}.avro");
        let (report, fields) = read(&name);
        assert_eq!(
            report,
            Ok(Report {
                members: 1,
                skipped: 0
            }),
            "{name}"
        );
        assert_eq!(field(&fields, "contact.ssn"), expected, "{name}");
    }
}

#[test]
fn a_cut_file_keeps_its_whole_blocks_and_a_bomb_is_refused() {
    let (report, fields) = read("truncated.avro");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(fields.skipped, [Skip::CorruptAvro]);
    let email = field(&fields, "contact.email");
    assert!((50..200).contains(&email.len()), "{}", email.len());
    assert_eq!(email[0], (1, "holder0@example.com".into()));

    // A block that inflates to 48 MiB is past what one block may.
    let (report, fields) = read("bomb.avro");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(fields.skipped, [Skip::AvroLimit]);
    assert!(fields.fields.is_empty());

    // A header that is not Avro's past its magic reads nothing.
    let mut bytes = fixture("events.avro");
    bytes[4..40].fill(0xff);
    let mut sink = Fields::default();
    let report = walk(
        Cursor::new(bytes),
        Container::Avro,
        "x.avro",
        Limits::default(),
        &mut sink,
    );
    assert_eq!(report, Err(Skip::CorruptAvro));
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Any fixture with bytes flipped or cut ends in a report or a skip, never a panic,
        /// and never more text than the file's allowance.
        #[test]
        fn damaged_avro_files_never_panic(
            which in 0usize..3,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in any::<usize>(),
        ) {
            let name = ["events.avro", "codec_snappy.avro", "codec_zstandard.avro"][which];
            let mut bytes = fixture(name);
            for (at, byte) in flips {
                let at = 4 + at % (bytes.len() - 4);
                bytes[at] ^= byte;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            let length = bytes.len() as u64;
            let mut sink = Fields::default();
            let report = walk(Cursor::new(bytes), Container::Avro, name, Limits::default(), &mut sink);
            let text: u64 = sink.fields.values().flatten().map(|v| v.1.len() as u64 + 1).sum();
            prop_assert!(text <= (length * 250).max(extract::RATIO_GRACE));
            if report.is_err() {
                prop_assert!(sink.fields.is_empty() && sink.skipped.is_empty());
            }
        }
    }
}

/// The file `apache-avro` writes of `records` under `schema` (JSON).
fn written(schema: &str, records: Vec<apache_avro::types::Value>) -> Vec<u8> {
    let schema = apache_avro::Schema::parse_str(schema).unwrap();
    let mut writer = apache_avro::Writer::new(&schema, Vec::new()).unwrap();
    for record in records {
        writer.append_value(record).unwrap();
    }
    writer.into_inner().unwrap()
}

#[test]
fn a_schema_that_holds_itself_or_takes_no_bytes_is_not_read() {
    use apache_avro::types::Value;
    // A linked list: its values nest as deep as the data says, and the decoder recurses.
    let list = r#"{"type": "record", "name": "Node", "fields": [
        {"name": "email", "type": "string"},
        {"name": "next", "type": ["null", "Node"]}]}"#;
    let node = |email: &str, next: Value| {
        Value::Record(vec![
            ("email".into(), Value::String(email.into())),
            ("next".into(), next),
        ])
    };
    let tail = node("b@example.com", Value::Union(0, Box::new(Value::Null)));
    let head = node("a@example.com", Value::Union(1, Box::new(tail)));
    let mut fields = Fields::default();
    let report = walk(
        Cursor::new(written(list, vec![head])),
        Container::Avro,
        "list.avro",
        Limits::default(),
        &mut fields,
    );
    assert_eq!(report, Err(Skip::AvroLimit));
    // Records of nothing: a block may claim any count of them.
    let nothing = written(r#""null""#, vec![Value::Null; 3]);
    let report = walk(
        Cursor::new(nothing),
        Container::Avro,
        "nulls.avro",
        Limits::default(),
        &mut Fields::default(),
    );
    assert_eq!(report, Err(Skip::AvroLimit));
}

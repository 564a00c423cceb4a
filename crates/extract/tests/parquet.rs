//! Parquet files written by pyarrow (`tests/fixtures/formats/make_parquet.py`), read column by
//! column: every value with its column's names and its row, under every codec, nested, inside
//! a ZIP, and hostile.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use common::fixture;
use extract::{Column, Container, Limits, Report, Sink, Skip, container, walk};

/// Every value read, by column (names joined by `.`), as (path, row, value).
#[derive(Default)]
struct Table {
    columns: BTreeMap<String, Vec<(String, u64, String)>>,
    skipped: Vec<(String, Skip)>,
}

impl Sink for Table {
    fn member(&mut self, path: &[String], _: &str, content: &mut dyn Read) -> std::io::Result<()> {
        let mut sink = Vec::new();
        content.read_to_end(&mut sink)?;
        assert!(
            !path.last().unwrap().ends_with(".parquet"),
            "{path:?} was read as bytes"
        );
        Ok(())
    }

    fn values(&mut self, path: &[String], column: &Column<'_>) {
        let lines: Vec<&str> = column.text.split_terminator('\n').collect();
        assert_eq!(lines.len(), column.rows.len(), "a row for every line");
        let values = self.columns.entry(column.names.join(".")).or_default();
        for (line, row) in lines.iter().zip(column.rows) {
            values.push((path.join(" > "), *row, (*line).to_owned()));
        }
    }

    fn skipped(&mut self, path: &[String], reason: Skip) {
        self.skipped.push((path.join(" > "), reason));
    }
}

fn read(name: &str) -> (Result<Report, Skip>, Table) {
    let bytes = fixture(name);
    let kind = container(&bytes).unwrap_or_else(|| panic!("{name} is read by the walk"));
    let mut table = Table::default();
    let report = walk(
        Cursor::new(bytes),
        kind,
        name,
        Limits::default(),
        &mut table,
    );
    (report, table)
}

fn column<'t>(table: &'t Table, name: &str) -> &'t [(String, u64, String)] {
    table
        .columns
        .get(name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", table.columns.keys()))
}

#[test]
fn a_flat_table_is_read_column_by_column_with_each_values_row() {
    let bytes = fixture("customers.parquet");
    assert_eq!(container(&bytes), Some(Container::Parquet));
    let (report, table) = read("customers.parquet");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert!(table.skipped.is_empty(), "{:?}", table.skipped);
    // Every rendered column, in the schema's order of names.
    assert_eq!(
        table.columns.keys().collect::<Vec<_>>(),
        [
            "balance",
            "city",
            "customer_id",
            "date_of_birth",
            "email",
            "full_name",
            "plan",
            "ssn"
        ]
    );
    // Three row groups of 128, 128 and 44 rows: rows count across them, from 1.
    let ssn = column(&table, "ssn");
    assert_eq!(ssn.len(), 300);
    for (i, (path, row, value)) in ssn.iter().enumerate() {
        assert_eq!(path, "customers.parquet");
        assert_eq!(*row, i as u64 + 1);
        assert_eq!(value, &format!("536-22-{:04}", 4100 + i));
    }
    let email = column(&table, "email");
    assert_eq!(email[299].2, "customer299@example.com");
    // Dictionary-encoded strings, dates, and decimals as a CSV export writes them.
    assert_eq!(column(&table, "plan")[4].2, "premium");
    assert_eq!(column(&table, "date_of_birth")[0].2, "1950-01-01");
    assert_eq!(column(&table, "date_of_birth")[13].2, "1963-02-14");
    assert_eq!(column(&table, "balance")[3].2, "23757.03");
}

#[test]
fn every_codec_reads_the_same_values() {
    let expected: Vec<String> = (500..525)
        .map(|i| format!("536-22-{:04}", 4100 + i))
        .collect();
    for codec in ["none", "snappy", "gzip", "brotli", "lz4", "zstd"] {
        let name = format!("codec_{codec}.parquet");
        let (report, table) = read(&name);
        assert_eq!(
            report,
            Ok(Report {
                members: 1,
                skipped: 0
            }),
            "{name}"
        );
        let ssn: Vec<String> = column(&table, "ssn").iter().map(|v| v.2.clone()).collect();
        assert_eq!(ssn, expected, "{name}");
        assert_eq!(column(&table, "email").len(), 25, "{name}");
    }
}

#[test]
fn nested_columns_are_named_by_their_path_and_lists_share_their_row() {
    let (report, table) = read("nested.parquet");
    assert!(table.skipped.is_empty(), "{:?}", table.skipped);
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert_eq!(
        table.columns.keys().collect::<Vec<_>>(),
        [
            "alt_emails",
            "attributes.key",
            "attributes.value",
            "customer.contact.city",
            "customer.contact.email",
            "customer.name",
            "customer.ssn",
            "id"
        ]
    );
    // Every tenth customer is null: 36 of 40.
    let ssn = column(&table, "customer.ssn");
    assert_eq!(ssn.len(), 36);
    assert_eq!(ssn[9], ("nested.parquet".into(), 11, "536-22-4310".into()));
    let email = column(&table, "customer.contact.email");
    assert_eq!(email.len(), 36);
    assert_eq!(email[0].2, "member0@example.com");
    // Row i has i % 3 alternative emails, none on every fourth row.
    let alt = column(&table, "alt_emails");
    let expected: Vec<(u64, String)> = (0..40u64)
        .filter(|i| i % 4 != 3)
        .flat_map(|i| (0..i % 3).map(move |k| (i + 1, format!("alt{i}.{k}@example.com"))))
        .collect();
    let read: Vec<(u64, String)> = alt.iter().map(|v| (v.1, v.2.clone())).collect();
    assert_eq!(read, expected);
    // A map's keys and values, two entries on every row.
    assert_eq!(column(&table, "attributes.key").len(), 80);
    assert_eq!(column(&table, "attributes.value")[1].1, 1);
}

#[test]
fn integers_are_read_as_numbers() {
    let (_, table) = read("payroll.parquet");
    let ssn = column(&table, "employee_ssn");
    assert_eq!(ssn.len(), 30);
    assert_eq!(ssn[0].2, "536224600");
    assert_eq!(column(&table, "grade")[2].2, "5");
}

#[test]
fn parquet_files_in_a_zip_are_read_as_members() {
    let (report, table) = read("lake.zip");
    assert_eq!(
        report,
        Ok(Report {
            members: 2,
            skipped: 0
        })
    );
    let ssn = column(&table, "ssn");
    assert_eq!(ssn.len(), 100);
    assert_eq!(ssn[0].0, "lake.zip > part-0.parquet");
    assert_eq!(
        (ssn[50].0.as_str(), ssn[50].1),
        ("lake.zip > part-1.parquet", 1)
    );
    assert_eq!(ssn[50].2, "536-22-4150");
}

#[test]
fn a_file_without_its_footer_or_with_an_encrypted_one_is_not_read() {
    let (report, table) = read("truncated.parquet");
    assert_eq!(report, Err(Skip::CorruptParquet));
    assert!(table.columns.is_empty());
    let (report, table) = read("encrypted.parquet");
    assert_eq!(report, Err(Skip::EncryptedParquet));
    assert!(table.columns.is_empty());
}

#[test]
fn a_damaged_column_is_skipped_and_the_others_are_read() {
    let (report, table) = read("damaged.parquet");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(
        table.skipped,
        [("damaged.parquet".to_owned(), Skip::CorruptParquet)]
    );
    // The first row group's ssn chunk is gone; the two after it are read.
    assert_eq!(column(&table, "ssn").len(), 300 - 128);
    assert_eq!(column(&table, "email").len(), 300);
}

#[test]
fn a_page_that_inflates_past_the_ratio_is_a_bomb_and_stops_nothing_else() {
    let (report, table) = read("bomb.parquet");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(
        table.skipped,
        [("bomb.parquet".to_owned(), Skip::CompressionRatio)]
    );
    assert!(!table.columns.contains_key("note"));
    assert_eq!(column(&table, "email")[0].2, "bomb.owner@example.com");
}

#[test]
fn a_value_repeated_past_the_files_allowance_stops_the_file() {
    // 200,000 rows of one value in a few KiB: the read stops after 1 MiB of text, at the file's
    // length × 250 or RATIO_GRACE, whichever is more.
    let bytes = fixture("repeated.parquet");
    assert!(bytes.len() * 250 < extract::RATIO_GRACE as usize);
    let (report, table) = read("repeated.parquet");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(
        table.skipped,
        [("repeated.parquet".to_owned(), Skip::CompressionRatio)]
    );
    let remark = column(&table, "remark");
    let text: usize = remark.iter().map(|v| v.2.len() + 1).sum();
    assert!(
        remark.len() > 1000 && text as u64 <= extract::RATIO_GRACE,
        "{}",
        remark.len()
    );
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Any fixture with bytes flipped or cut ends in a report or a skip: never a panic out
        /// of the walk, never more text than the file's allowance, and every value with a row.
        #[test]
        fn damaged_parquet_files_never_panic(
            which in 0usize..5,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in any::<usize>(),
        ) {
            let name = [
                "customers.parquet", "nested.parquet", "codec_gzip.parquet",
                "codec_brotli.parquet", "codec_lz4.parquet",
            ][which];
            let mut bytes = fixture(name);
            let whole = bytes.len();
            for (at, byte) in flips {
                let at = at % bytes.len();
                bytes[at] ^= byte;
            }
            // Cut mostly near the end, where the footer is.
            bytes.truncate(whole - cut % (whole / 4 + 1));
            let length = bytes.len() as u64;
            let mut table = Table::default();
            let report = walk(Cursor::new(bytes), Container::Parquet, name, Limits::default(), &mut table);
            let text: u64 = table
                .columns
                .values()
                .flatten()
                .map(|v| v.2.len() as u64 + 1)
                .sum();
            prop_assert!(text <= (length * 250).max(extract::RATIO_GRACE));
            if report.is_err() {
                prop_assert!(table.columns.is_empty() && table.skipped.is_empty());
            }
        }
    }
}

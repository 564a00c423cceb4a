//! Workbooks and Word documents written by openpyxl, XlsxWriter and python-docx
//! (`tests/fixtures/formats/make_xlsx.py`, `make_ledger.py`, `make_office.py`), rewritten with
//! some values changed: only those values change, the reader reads the new ones at the same
//! cells and paragraphs, and every other part of the package keeps its bytes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};
use std::ops::Range;

use common::fixture;
use extract::{
    Change, Column, Container, Editor, Limits, Refusal, Rewritable, Sink, Skip, TableUnit,
    rewritable, rewrite, walk,
};

/// Replaces, in the runs of `field` (any field when `None`), every value `find` finds by
/// `to(value)`.
struct Replace {
    field: Option<&'static str>,
    find: fn(&str) -> Vec<Range<usize>>,
    to: fn(&str) -> String,
    seen: usize,
}

impl Editor for Replace {
    fn wants(&self, field: &str) -> bool {
        self.field.is_none_or(|f| f == field)
    }

    fn edit(&mut self, column: &Column<'_>) -> Vec<Change> {
        let mut changes = Vec::new();
        for (i, line) in column.text.split_terminator('\n').enumerate() {
            assert_eq!(column.rows[i], i as u64 + 1, "rows count lines");
            for range in (self.find)(line) {
                self.seen += 1;
                changes.push(Change {
                    line: i as u64 + 1,
                    start: range.start,
                    end: range.end,
                    text: (self.to)(&line[range]),
                });
            }
        }
        changes
    }
}

/// Every `536-22-NNNN` of a line.
fn ssns(line: &str) -> Vec<Range<usize>> {
    line.match_indices("536-22-")
        .map(|(at, _)| at..at + 11)
        .filter(|r| {
            line.get(r.start + 7..r.end)
                .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect()
}

/// The whole line, as one value.
fn whole(line: &str) -> Vec<Range<usize>> {
    std::iter::once(0..line.len()).collect()
}

fn tokenized(ssn: &str) -> String {
    ssn.replace("536-22-", "900-71-")
}

fn editor(field: Option<&'static str>) -> Replace {
    Replace {
        field,
        find: ssns,
        to: tokenized,
        seen: 0,
    }
}

fn rewritten(name: &str, editor: &mut dyn Editor) -> Result<Option<Vec<u8>>, Refusal> {
    let bytes = fixture(name);
    let kind = rewritable(&bytes).unwrap();
    rewrite(kind, &bytes, Limits::default(), editor)
}

/// Every value the reader reads: a cell by (sheet, column letters, header), a paragraph by
/// (part, "", ""), each as (row or paragraph, text).
#[derive(Default)]
struct Values(BTreeMap<(String, String, String), Vec<(u64, String)>>);

impl Sink for Values {
    fn member(&mut self, _: &[String], name: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("{name} read as a file");
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        let key = match column.unit {
            TableUnit::Cell { sheet, column: at } => (
                sheet.to_owned(),
                detect::column_letters(at),
                column.names.join("."),
            ),
            TableUnit::Paragraph { part } => (part.to_owned(), String::new(), String::new()),
            other => panic!("{other:?}"),
        };
        let values = self.0.entry(key).or_default();
        for (line, row) in column.text.split_terminator('\n').zip(column.rows) {
            values.push((*row, line.to_owned()));
        }
    }

    fn skipped(&mut self, _: &[String], reason: Skip) {
        panic!("{reason}");
    }
}

fn values(bytes: Vec<u8>) -> Values {
    let mut values = Values::default();
    walk(
        Cursor::new(bytes),
        Container::Zip,
        "office",
        Limits::default(),
        &mut values,
    )
    .unwrap();
    values
}

fn cells<'v>(values: &'v Values, sheet: &str, letters: &str, header: &str) -> &'v [(u64, String)] {
    &values.0[&(sheet.to_owned(), letters.to_owned(), header.to_owned())]
}

/// Each member as stored: name, compressed bytes, CRC, method and time.
type Stored = (String, Vec<u8>, u32, String, String);

fn stored(bytes: &[u8]) -> Vec<Stored> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    (0..archive.len())
        .map(|i| {
            let file = archive.by_index_raw(i).unwrap();
            let (name, crc) = (file.name().unwrap().into_owned(), file.crc32());
            let method = format!("{:?}", file.compression());
            let time = format!("{:?}", file.last_modified());
            let start = file.data_start().unwrap() as usize;
            let raw = bytes[start..start + file.compressed_size() as usize].to_vec();
            (name, raw, crc, method, time)
        })
        .collect()
}

fn part(bytes: &[u8], name: &str) -> String {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    let mut text = String::new();
    archive
        .by_name(name)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Every member of both but `changed` is stored byte for byte as it was, in the same order.
fn kept_but(before: &[u8], after: &[u8], changed: &[&str]) {
    let (before, after) = (stored(before), stored(after));
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            (&b.0, &b.3, &b.4),
            (&a.0, &a.3, &a.4),
            "name, method and time"
        );
        if !changed.contains(&b.0.as_str()) {
            assert!(b == a, "{} is not kept byte for byte", b.0);
        }
    }
}

#[test]
fn cells_of_a_workbook_are_rewritten_in_their_sheet_and_every_other_part_is_kept() {
    let original = fixture("payroll.xlsx");
    let mut editor = editor(Some("SSN"));
    let out = rewritten("payroll.xlsx", &mut editor).unwrap().unwrap();
    assert_eq!(
        editor.seen, 40,
        "only the SSN column's values are asked about"
    );
    kept_but(&original, &out, &["xl/worksheets/sheet1.xml"]);
    // openpyxl writes inline strings: each changes in its text element, nothing else does.
    let sheet = part(&original, "xl/worksheets/sheet1.xml");
    assert_eq!(
        part(&out, "xl/worksheets/sheet1.xml"),
        sheet.replace("<t>536-22-", "<t>900-71-")
    );
    let (old, new) = (values(original), values(out));
    let ssn = cells(&new, "Payroll", "B", "SSN");
    assert_eq!(ssn.len(), 40);
    assert_eq!(ssn[0], (2, "900-71-4800".to_owned()));
    for (key, column) in &old.0 {
        if key.2 != "SSN" {
            assert_eq!(column, &new.0[key], "{key:?}");
        }
    }
    // The case notes' SSN sits in another column: it is not the editor's.
    assert!(
        cells(&new, "Case notes", "B", "Summary")[1]
            .1
            .contains("536-22-4871")
    );
}

#[test]
fn a_shared_string_changes_in_its_cell_only_and_the_cell_keeps_its_style() {
    let original = fixture("ledger.xlsx");
    let out = rewritten("ledger.xlsx", &mut editor(Some("SSN")))
        .unwrap()
        .unwrap();
    kept_but(&original, &out, &["xl/worksheets/sheet1.xml"]);
    let (old, new) = (values(original.clone()), values(out.clone()));
    let ssn: Vec<&str> = cells(&new, "Ledger", "B", "SSN")
        .iter()
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(ssn[..2], ["900-71-4910", "900-71-4911"]);
    // The spouses' cells share those strings, and keep them.
    assert_eq!(
        cells(&new, "Ledger", "C", "Spouse SSN"),
        cells(&old, "Ledger", "C", "Spouse SSN")
    );
    assert_eq!(cells(&new, "Ledger", "C", "Spouse SSN")[5].1, "536-22-4910");
    let sheet = part(&out, "xl/worksheets/sheet1.xml");
    assert!(
        sheet.contains(r#"<c r="B4" s="3" t="inlineStr"><is><t>900-71-4912</t></is></c>"#),
        "{sheet}"
    );
    assert!(
        sheet.contains(r#"<c r="C3" t="s"><v>10</v></c>"#),
        "{sheet}"
    );
    // Dates stay dates, and everything outside the changed cells stays as it was.
    assert_eq!(
        cells(&new, "Ledger", "E", "Opened"),
        cells(&old, "Ledger", "E", "Opened")
    );
    let before = part(&original, "xl/worksheets/sheet1.xml");
    assert_eq!(
        before.split("<c r=\"B").count(),
        sheet.split("<c r=\"B").count()
    );
    assert_eq!(
        before[..before.find("<c r=\"B2\"").unwrap()],
        sheet[..sheet.find("<c r=\"B2\"").unwrap()]
    );
}

#[test]
fn a_value_across_a_rich_strings_runs_keeps_their_formatting() {
    let out = rewritten("ledger.xlsx", &mut editor(Some("Note")))
        .unwrap()
        .unwrap();
    let sheet = part(&out, "xl/worksheets/sheet1.xml");
    let d3 = &sheet[sheet.find(r#"<c r="D3""#).unwrap()..];
    let d3 = &d3[..d3.find("</c>").unwrap()];
    assert!(d3.starts_with(r#"<c r="D3" t="inlineStr"><is><r><t xml:space="preserve">Caller gave </t></r><r><rPr><b/>"#), "{d3}");
    assert!(d3.contains("<t>900-71-4990</t></r><r><rPr><i/>"), "{d3}");
    assert!(d3.contains("<t></t></r>"), "{d3}");
    let notes = values(out);
    let notes = cells(&notes, "Ledger", "D", "Note");
    assert_eq!(notes[1], (3, "Caller gave 900-71-4990 today.".to_owned()));
    assert_eq!(
        notes[2],
        (
            4,
            "Letters to 900-71-4991 & copies kept <on file>.".to_owned()
        )
    );
}

#[test]
fn numbers_are_replaced_by_numbers_and_any_other_change_to_them_is_refused() {
    let mut plus = Replace {
        field: Some("employee_ssn"),
        find: whole,
        to: |n| (n.parse::<u64>().unwrap() + 100_000_000).to_string(),
        seen: 0,
    };
    let out = rewritten("payroll.xlsx", &mut plus).unwrap().unwrap();
    let new = values(out.clone());
    assert_eq!(
        cells(&new, "Numbers", "A", "employee_ssn")[0],
        (2, "636224950".to_owned())
    );
    assert!(
        part(&out, "xl/worksheets/sheet4.xml").contains(r#"<c r="A2" t="n"><v>636224950</v></c>"#)
    );
    let mut masked = Replace {
        field: Some("employee_ssn"),
        find: whole,
        to: |_| "*****4950".to_owned(),
        seen: 0,
    };
    assert_eq!(
        rewritten("payroll.xlsx", &mut masked),
        Err(Refusal::ColumnType)
    );
    // A date is a number shown as a date: it cannot take a change.
    let mut dated = Replace {
        field: Some("Start date"),
        find: whole,
        to: |_| "1999-01-01".to_owned(),
        seen: 0,
    };
    assert_eq!(
        rewritten("payroll.xlsx", &mut dated),
        Err(Refusal::ColumnType)
    );
    // A formula's cached value would be computed again over any change.
    assert_eq!(
        rewritten("checks.xlsx", &mut editor(Some("Check"))),
        Err(Refusal::Formula)
    );
}

#[test]
fn a_documents_values_are_rewritten_in_their_runs_even_across_them() {
    let original = fixture("case_summary.docx");
    let mut every = editor(None);
    let out = rewritten("case_summary.docx", &mut every).unwrap().unwrap();
    assert_eq!(every.seen, 3);
    kept_but(&original, &out, &["word/document.xml"]);
    let body = part(&out, "word/document.xml");
    // The split SSN: the token in the first run, the bold run emptied and still bold.
    assert!(
        body.contains(
            r#"<w:r><w:t>900-71-4871</w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t></w:t></w:r>"#
        ),
        "{body}"
    );
    let (old, new) = (values(original), values(out));
    let paragraphs = &new.0[&("word/document.xml".to_owned(), String::new(), String::new())];
    assert_eq!(
        paragraphs[2],
        (
            3,
            "Her SSN is 900-71-4871 and she asked that letters go to dana.lee@example.com."
                .to_owned()
        )
    );
    let before = &old.0[&("word/document.xml".to_owned(), String::new(), String::new())];
    assert_eq!(before.len(), paragraphs.len());
    for ((n, was), (m, is)) in before.iter().zip(paragraphs) {
        assert_eq!(n, m);
        assert_eq!(&tokenized(was), is);
    }
    // An email in the footer is changed there, and only the footer changes.
    let mut emails = Replace {
        field: None,
        find: |line| {
            line.find("claims.desk@")
                .map(|at| at..line.len())
                .into_iter()
                .collect()
        },
        to: |_| "tok@example.org".to_owned(),
        seen: 0,
    };
    let out = rewritten("case_summary.docx", &mut emails)
        .unwrap()
        .unwrap();
    kept_but(&fixture("case_summary.docx"), &out, &["word/footer1.xml"]);
    assert!(part(&out, "word/footer1.xml").contains("<w:t>Questions: tok@example.org</w:t>"));
}

/// `bytes` with the part `name`'s text passed through `change`, every other part as it was.
fn with_part(bytes: &[u8], name: &str, change: impl Fn(&str) -> String) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for i in 0..archive.len() {
        let file = archive.by_index_raw(i).unwrap();
        if file.name().unwrap() == name {
            let options = file.options();
            drop(file);
            let text = part(bytes, name);
            writer.start_file(name, options).unwrap();
            writer.write_all(change(&text).as_bytes()).unwrap();
        } else {
            writer.raw_copy_file(file).unwrap();
        }
    }
    writer.finish().unwrap().into_inner()
}

#[test]
fn a_value_that_cannot_be_rewritten_safely_refuses_the_whole_document() {
    let original = fixture("case_summary.docx");
    for (around, close) in [
        (r#"<w:hyperlink r:id="rId99">"#, "</w:hyperlink>"),
        (r#"<w:ins w:id="1" w:author="a">"#, "</w:ins>"),
    ] {
        let linked = with_part(&original, "word/document.xml", |xml| {
            xml.replace(
                r#"<w:r><w:rPr><w:b/></w:rPr><w:t>4871</w:t></w:r>"#,
                &format!(r#"{around}<w:r><w:rPr><w:b/></w:rPr><w:t>4871</w:t></w:r>{close}"#),
            )
        });
        assert_ne!(linked, original);
        let result = rewrite(
            Rewritable::Document,
            &linked,
            Limits::default(),
            &mut editor(None),
        );
        assert_eq!(result, Err(Refusal::Markup), "{around}");
    }
}

#[test]
fn nothing_asked_is_nothing_written_and_a_damaged_package_is_refused() {
    for name in ["payroll.xlsx", "ledger.xlsx", "case_summary.docx"] {
        let mut none = Replace {
            field: None,
            find: |_| Vec::new(),
            to: tokenized,
            seen: 0,
        };
        assert_eq!(rewritten(name, &mut none), Ok(None), "{name}");
    }
    assert_eq!(
        rewritable(&fixture("payroll.xlsx")),
        Some(Rewritable::Workbook)
    );
    assert_eq!(
        rewritable(&fixture("case_summary.docx")),
        Some(Rewritable::Document)
    );
    assert_eq!(
        rewritable(&fixture("customers.parquet")),
        Some(Rewritable::Parquet)
    );
    assert_eq!(rewritable(&fixture("events.avro")), Some(Rewritable::Avro));
    // Read by a scan, never rewritten: the workbooks and documents other than XLSX and DOCX.
    for other in [
        "review.pptx",
        "export.zip",
        "letters.pdf",
        "payroll.xlsb",
        "payroll.xls",
        "payroll.ods",
        "case_notes.odt",
        "review.odp",
    ] {
        assert_eq!(rewritable(&fixture(other)), None, "{other}");
    }
    let mut cut = fixture("case_summary.docx");
    cut.truncate(cut.len() - 100);
    let result = rewrite(
        Rewritable::Document,
        &cut,
        Limits::default(),
        &mut editor(None),
    );
    assert_eq!(result, Err(Refusal::Unreadable));
    // A workbook whose parts claim past the limits is not opened.
    let tight = Limits {
        max_bytes: 10_000,
        ..Limits::default()
    };
    let result = rewrite(
        Rewritable::Workbook,
        &fixture("payroll.xlsx"),
        tight,
        &mut editor(None),
    );
    assert_eq!(result, Err(Refusal::Unreadable));
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// A package with bytes flipped is refused or rewritten, never a panic; what is
        /// written reads as a package again.
        #[test]
        fn damaged_packages_never_panic_and_what_is_written_reads(
            which in 0usize..3,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        ) {
            let name = ["payroll.xlsx", "ledger.xlsx", "case_summary.docx"][which];
            let mut bytes = fixture(name);
            for (at, byte) in flips {
                let at = at % bytes.len();
                bytes[at] ^= byte;
            }
            let kind = [Rewritable::Workbook, Rewritable::Workbook, Rewritable::Document][which];
            if let Ok(Some(out)) = rewrite(kind, &bytes, Limits::default(), &mut editor(None)) {
                prop_assert!(zip::ZipArchive::new(Cursor::new(out)).is_ok());
            }
        }
    }
}

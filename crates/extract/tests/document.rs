//! Word documents and PowerPoint presentations written by python-docx and python-pptx
//! (`tests/fixtures/formats/make_office.py`), read paragraph by paragraph.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::io::{Cursor, Read};

use common::fixture;
use extract::{Column, Container, Limits, Report, Sink, Skip, TableUnit, walk};

/// Every paragraph read, as (part or slide, paragraph, text).
#[derive(Default)]
struct Paragraphs {
    read: Vec<(String, u64, String)>,
    skipped: Vec<Skip>,
    members: usize,
}

impl Sink for Paragraphs {
    fn member(&mut self, _: &[String], _: &str, content: &mut dyn Read) -> std::io::Result<()> {
        self.members += 1;
        std::io::copy(content, &mut std::io::sink()).map(drop)
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        let at = match column.unit {
            TableUnit::Paragraph { part } => part.to_owned(),
            TableUnit::Slide { slide } => format!("slide {slide}"),
            other => panic!("a document's values are paragraphs, not {other:?}"),
        };
        assert!(column.names.is_empty(), "a paragraph is free text");
        for (line, n) in column.text.split_terminator('\n').zip(column.rows) {
            self.read.push((at.clone(), *n, line.to_owned()));
        }
    }

    fn skipped(&mut self, _: &[String], reason: Skip) {
        self.skipped.push(reason);
    }
}

fn read(name: &str) -> (Result<Report, Skip>, Paragraphs) {
    let mut paragraphs = Paragraphs::default();
    let report = walk(
        Cursor::new(fixture(name)),
        Container::Zip,
        name,
        Limits::default(),
        &mut paragraphs,
    );
    (report, paragraphs)
}

#[test]
fn a_documents_paragraphs_are_read_with_their_part_and_runs_joined() {
    let (report, doc) = read("case_summary.docx");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert_eq!(doc.members, 0, "a document's parts are not read as files");
    // Body first, then the header and the footer.
    assert_eq!(
        doc.read[0],
        (
            "word/document.xml".into(),
            1,
            "Case summary CR-2024-0117".into()
        )
    );
    let split = doc
        .read
        .iter()
        .find(|p| p.2.contains("536-22-4871"))
        .unwrap();
    assert_eq!(
        split,
        &(
            "word/document.xml".into(),
            3,
            "Her SSN is 536-22-4871 and she asked that letters go to dana.lee@example.com.".into()
        )
    );
    // A table's cells are paragraphs of the body.
    assert!(doc.read.iter().any(|p| p.2 == "sam.ortiz@example.com"));
    let last = doc.read.last().unwrap();
    assert_eq!(
        last,
        &(
            "word/footer1.xml".into(),
            1,
            "Questions: claims.desk@example.com".into()
        )
    );
    assert!(doc.read.iter().any(|p| p.0 == "word/header1.xml"));
}

#[test]
fn a_presentations_slides_are_read_in_order_with_their_notes() {
    let (report, deck) = read("review.pptx");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    let slides: Vec<&str> = deck.read.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(slides.first(), Some(&"slide 1"));
    assert!(deck.read.contains(&(
        "slide 2".into(),
        2,
        "Identity checks failed for SSN 536-22-4874".into()
    )));
    assert!(
        deck.read
            .iter()
            .any(|p| p.0.starts_with("ppt/notesSlides/") && p.2.contains("ops.lead@example.com"))
    );
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// A document with bytes flipped ends in a report or a skip, never a panic.
        #[test]
        fn damaged_documents_never_panic(
            which in 0usize..2,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            let name = ["case_summary.docx", "review.pptx"][which];
            let mut bytes = fixture(name);
            for (at, byte) in flips {
                let at = at % bytes.len();
                bytes[at] ^= byte;
            }
            let mut paragraphs = Paragraphs::default();
            let report = walk(Cursor::new(bytes), Container::Zip, name, Limits::default(), &mut paragraphs);
            if report.is_err() {
                prop_assert!(paragraphs.read.is_empty());
            }
        }
    }
}

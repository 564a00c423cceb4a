//! Word documents and PowerPoint presentations written by python-docx and python-pptx
//! (`tests/fixtures/formats/make_office.py`), and OpenDocument texts and presentations written
//! by odfpy (`make_odf.py`), read paragraph by paragraph.
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

#[test]
fn an_opendocument_texts_paragraphs_are_read_with_their_spans_joined() {
    let (report, doc) = read("case_notes.odt");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert_eq!(doc.members, 0, "a document's parts are not read as files");
    let content: Vec<(u64, &str)> = doc
        .read
        .iter()
        .filter(|p| p.0 == "content.xml")
        .map(|p| (p.1, p.2.as_str()))
        .collect();
    assert_eq!(
        content,
        [
            (1, "Case summary CR-2024-0211"),
            (
                2,
                "The claimant called on 3 June to confirm the address on file."
            ),
            // Spans joined, `text:s` a space.
            (
                3,
                "Her SSN is 536-22-5671 and letters go to mia.ross@example.com."
            ),
            // A tab kept, a line break a space.
            (4, "Contact:\t(202) 555-0180 Office hours apply."),
            // A table's cells are paragraphs of the body.
            (5, "Member"),
            (6, "SSN"),
            (7, "Email"),
            (8, "Robin Hale"),
            (9, "536-22-5672"),
            (10, "robin.hale@example.com"),
            (11, "Sam Ortiz"),
            (12, "536-22-5673"),
            (13, "sam.ortiz@example.com"),
            // A footnote's paragraph ends first, inside the one that cites it; the citation
            // mark is no text of either.
            (14, "Verified against SSN 536-22-5674."),
            (15, "Payment was issued after the usual review."),
            (
                16,
                "No further action is needed until the next quarterly review."
            ),
        ]
    );
    // The pages' header and footer, from styles.xml, after the body.
    let styles: Vec<(u64, &str)> = doc
        .read
        .iter()
        .filter(|p| p.0 == "styles.xml")
        .map(|p| (p.1, p.2.as_str()))
        .collect();
    assert_eq!(
        styles,
        [
            (1, "Claims department, case review"),
            (2, "Questions: odt.desk@example.com"),
        ]
    );
    assert_eq!(doc.read.len(), 18);
}

#[test]
fn an_opendocument_presentations_pages_are_its_slides_with_their_notes() {
    let (report, deck) = read("review.odp");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    let slides: Vec<(&str, u64, &str)> = deck
        .read
        .iter()
        .map(|p| (p.0.as_str(), p.1, p.2.as_str()))
        .collect();
    assert_eq!(
        slides,
        [
            ("slide 1", 1, "Member services review"),
            ("slide 1", 2, "Third quarter"),
            ("slide 2", 1, "Escalations"),
            ("slide 2", 2, "Identity checks failed for SSN 536-22-5774"),
            ("slide 2", 3, "Callback at nia.cole@example.com"),
            // The notes, after the slide's own paragraphs.
            ("slide 2", 4, "Owner: deck.owner@example.com"),
            ("slide 3", 1, "Next steps"),
            ("slide 3", 2, "Review the escalation queue weekly."),
        ]
    );
    let (report, control) = read("control.odt");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(control.read.len(), 3);
    assert!(control.read.iter().all(|p| !p.2.contains('@')));
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// A document with bytes flipped ends in a report or a skip, never a panic.
        #[test]
        fn damaged_documents_never_panic(
            which in 0usize..4,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            let name = ["case_summary.docx", "review.pptx", "case_notes.odt", "review.odp"][which];
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

#[test]
fn a_paragraph_past_a_mebibyte_is_cut_and_the_cut_reported() {
    // Words that deflate as prose does (a run of one letter would be a bomb to the walk).
    let mut state: u32 = 7;
    let mut filler = String::new();
    while filler.len() < 1_200_000 {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        for i in 0..(3 + (state >> 28)) {
            filler.push(char::from(b'a' + ((state >> ((i * 3) % 27)) % 26) as u8));
        }
        filler.push(' ');
    }
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text><text:p>Case 1</text:p><text:p>SSN 536-22-5401 {filler}</text:p></office:text></office:body></office:document-content>"#
    );
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("mimetype", stored).unwrap();
    std::io::Write::write_all(&mut zip, b"application/vnd.oasis.opendocument.text").unwrap();
    zip.start_file("content.xml", deflated).unwrap();
    std::io::Write::write_all(&mut zip, content.as_bytes()).unwrap();
    let bytes = zip.finish().unwrap().into_inner();

    let mut paragraphs = Paragraphs::default();
    let report = walk(
        Cursor::new(bytes),
        Container::Zip,
        "long.odt",
        Limits::default(),
        &mut paragraphs,
    );
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(paragraphs.skipped, [Skip::DocumentLimit]);
    assert_eq!(paragraphs.read.len(), 2);
    assert_eq!(paragraphs.read[0].2, "Case 1");
    assert!(paragraphs.read[1].2.starts_with("SSN 536-22-5401 "));
    assert!(paragraphs.read[1].2.len() <= 1 << 20);
}

#[test]
fn a_slide_is_numbered_as_the_deck_shows_it_not_by_its_parts_name() {
    // moved.pptx: slide3.xml was moved to the front of the deck.
    let (report, deck) = read("moved.pptx");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    let ssn = deck
        .read
        .iter()
        .find(|p| p.2.contains("536-22-4875"))
        .unwrap();
    assert_eq!(ssn.0, "slide 1", "{:?}", deck.read);
    let email = deck
        .read
        .iter()
        .find(|p| p.2.contains("moved.owner@example.com"))
        .unwrap();
    assert_eq!(email.0, "slide 3", "{:?}", deck.read);
}

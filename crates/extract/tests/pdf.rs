//! PDFs written by fpdf2, ReportLab and pypdf, and by hand (`tests/fixtures/formats/make_pdf.py`),
//! read page by page and line by line.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::io::{Cursor, Read, Write};

use common::fixture;
use extract::{Column, Container, Limits, Report, Sink, Skip, TableUnit, container, walk};
use proptest::prelude::*;

/// Every line read, as (page, line, text).
#[derive(Default)]
struct Pages {
    read: Vec<(u32, u64, String)>,
    skipped: Vec<Skip>,
}

impl Pages {
    fn lines_with(&self, needle: &str) -> Vec<(u32, u64, &str)> {
        self.read
            .iter()
            .filter(|(_, _, text)| text.contains(needle))
            .map(|(page, line, text)| (*page, *line, text.as_str()))
            .collect()
    }
}

impl Sink for Pages {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("a PDF has no members");
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        let TableUnit::Page { page } = column.unit else {
            panic!("a PDF's values are pages' lines, not {:?}", column.unit);
        };
        assert!(column.names.is_empty(), "a page's line is free text");
        for (line, n) in column.text.split_terminator('\n').zip(column.rows) {
            self.read.push((page, *n, line.to_owned()));
        }
    }

    fn skipped(&mut self, _: &[String], reason: Skip) {
        self.skipped.push(reason);
    }
}

fn read_bytes(name: &str, bytes: Vec<u8>) -> (Result<Report, Skip>, Pages) {
    let mut pages = Pages::default();
    let report = walk(
        Cursor::new(bytes),
        Container::Pdf,
        name,
        Limits::default(),
        &mut pages,
    );
    (report, pages)
}

fn read(name: &str) -> (Result<Report, Skip>, Pages) {
    let bytes = fixture(name);
    assert_eq!(container(&bytes), Some(Container::Pdf), "{name}");
    read_bytes(name, bytes)
}

const READ: Result<Report, Skip> = Ok(Report {
    members: 1,
    skipped: 0,
});

#[test]
fn letters_are_read_page_by_page_in_every_font() {
    let (report, letters) = read("letters.pdf");
    assert_eq!(report, READ);
    assert_eq!(letters.skipped, []);
    // Page 1, a standard font.
    assert_eq!(
        letters.lines_with("536-22-4101"),
        [(
            1,
            5,
            "The Social Security number on file for you is 536-22-4101."
        )]
    );
    assert_eq!(letters.lines_with("dana.lee@example.com")[0].0, 1);
    // Page 2, an embedded TrueType font read through its ToUnicode map.
    assert_eq!(
        letters.lines_with("536-22-4102"),
        [(
            2,
            4,
            "For identity checks we matched SSN 536-22-4102 against the enrolment form."
        )]
    );
    assert_eq!(letters.lines_with("omar.haddad@example.com")[0].0, 2);
    // Page 3, a table drawn cell by cell: each row is one line, its cells apart.
    assert_eq!(
        letters.lines_with("536-22-4104"),
        [(3, 4, "Sam Ortiz 536-22-4104 sam.ortiz@example.com")]
    );
    assert_eq!(
        letters.lines_with("Name SSN Email")[0],
        (3, 2, "Name SSN Email")
    );
    let ssns = letters
        .read
        .iter()
        .filter(|l| l.2.contains("536-22-41"))
        .count();
    assert_eq!(ssns, 5);
}

#[test]
fn a_statement_is_read_with_its_pieces_joined_and_its_form_fields_values() {
    let (report, statement) = read("statement.pdf");
    assert_eq!(report, READ);
    assert_eq!(statement.skipped, []);
    assert_eq!(
        statement.lines_with("jordan.miles@example.com"),
        [(1, 3, "Contact: jordan.miles@example.com (primary)")]
    );
    assert_eq!(
        statement.lines_with("536-22-4106"),
        [(1, 4, "Taxpayer identification: SSN 536-22-4106")]
    );
    // The filled field's value, on the page its widget is on.
    assert_eq!(statement.lines_with("536-22-4107")[0].0, 1);
    assert!(statement.read.iter().any(|l| l.0 == 2));
}

#[test]
fn a_document_without_personal_data_is_read_all_the_same() {
    let (report, control) = read("control.pdf");
    assert_eq!(report, READ);
    assert_eq!(control.read.len(), 5);
    assert_eq!(control.read[0], (1, 1, "Facilities memo".into()));
}

#[test]
fn a_pdf_that_needs_a_password_is_skipped_and_one_with_an_empty_user_password_read() {
    let (report, locked) = read("locked.pdf");
    assert_eq!(report, Err(Skip::EncryptedPdf));
    assert!(locked.read.is_empty());
    let (report, open) = read("owner_only.pdf");
    assert_eq!(report, READ);
    assert_eq!(
        open.lines_with("536-22-4108"),
        [(
            1,
            1,
            "Payroll correction for SSN 536-22-4108, sent to payroll@example.com"
        )]
    );
}

#[test]
fn a_scan_without_text_is_skipped_as_image_only() {
    let (report, scan) = read("scanned.pdf");
    assert_eq!(report, Err(Skip::ImageOnlyPdf));
    assert!(scan.read.is_empty());
}

#[test]
fn text_in_a_font_without_a_way_back_to_characters_is_reported_not_guessed() {
    let (report, unmapped) = read("unmapped.pdf");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(unmapped.skipped, [Skip::UnmappedPdfText]);
    // Pages 1 and 3 are in a standard font; page 2's glyph numbers are not read as letters.
    assert_eq!(unmapped.lines_with("536-22-4101").len(), 1);
    assert!(
        unmapped.read.iter().all(|l| l.0 != 2),
        "{:?}",
        unmapped.read
    );
}

#[test]
fn a_truncated_pdf_is_skipped_as_corrupt() {
    // Cut in half, the letters keep their pages' content but lose the fonts they name: no
    // text is guessed without them.
    let (report, cut) = read("truncated.pdf");
    assert_eq!(report, Err(Skip::CorruptPdf));
    assert!(cut.read.is_empty());
}

#[test]
fn a_content_stream_bomb_stops_at_the_files_allowance() {
    let started = std::time::Instant::now();
    let (report, bomb) = read("bomb.pdf");
    assert_eq!(report, Err(Skip::PdfLimit));
    assert!(bomb.read.is_empty());
    // The hundred pages share one stream: after the first inflation spends the allowance,
    // none is inflated again. (Not a timing assertion on speed: a bound on repeated work.)
    assert!(started.elapsed().as_secs() < 60);
}

/// A one-page PDF drawing `text` in Helvetica in one string.
fn one_line_pdf(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 12 Tf 72 700 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_owned(),
        format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    let mut file = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(file.len());
        file.push_str(&format!("{} 0 obj\n{object}\nendobj\n", i + 1));
    }
    let xref = file.len();
    file.push_str("xref\n0 6\n0000000000 65535 f \n");
    for offset in offsets {
        file.push_str(&format!("{offset:010} 00000 n \n"));
    }
    file.push_str(&format!(
        "trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ));
    file.into_bytes()
}

#[test]
fn a_line_past_64_kib_is_cut_and_the_cut_reported() {
    let (report, short) = read_bytes("short.pdf", one_line_pdf("SSN 536-22-4105"));
    assert_eq!(report, READ);
    assert_eq!(short.read, [(1, 1, "SSN 536-22-4105".to_owned())]);

    let long = format!("SSN 536-22-4105 {}", "x".repeat(70_000));
    let (report, cut) = read_bytes("long.pdf", one_line_pdf(&long));
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(cut.skipped, [Skip::PdfLimit]);
    assert_eq!(cut.read.len(), 1);
    assert_eq!(cut.read[0].2.len(), 64 << 10);
    assert!(cut.read[0].2.starts_with("SSN 536-22-4105 x"));
}

#[test]
fn forms_drawing_themselves_stop_at_the_files_allowance() {
    let started = std::time::Instant::now();
    let (report, forms) = read("forms.pdf");
    assert_eq!(report, Err(Skip::PdfLimit));
    assert!(forms.read.is_empty());
    // A thousand forms a level, eight levels deep, would be 10^24 visits: each is paid for.
    assert!(started.elapsed().as_secs() < 60);
}

#[test]
fn a_pdf_inside_an_archive_is_read_at_its_path() {
    let mut zipped = Vec::new();
    {
        let mut zip = zip::ZipWriter::new(Cursor::new(&mut zipped));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("mail/letters.pdf", options).unwrap();
        zip.write_all(&fixture("letters.pdf")).unwrap();
        zip.finish().unwrap();
    }
    let mut pages = Pages::default();
    let report = walk(
        Cursor::new(zipped),
        Container::Zip,
        "mail.zip",
        Limits::default(),
        &mut pages,
    );
    assert_eq!(report, READ);
    assert_eq!(pages.lines_with("536-22-4105").len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Whatever bytes follow a PDF's header, or however a real one is cut or damaged, the
    /// reader ends with lines or a skip, never a panic. A damaged font's map back to
    /// characters is reported as unmapped text, as an intact font without one is.
    #[test]
    fn damaged_pdfs_never_panic(
        cut in 0usize..14_000,
        flips in proptest::collection::vec((0usize..14_000, any::<u8>()), 0..8),
    ) {
        let mut bytes = fixture("letters.pdf");
        for (at, byte) in flips {
            let at = at % bytes.len();
            bytes[at] = byte;
        }
        bytes.truncate(cut.max(5));
        let (report, _) = read_bytes("damaged.pdf", bytes);
        if let Err(skip) = report {
            prop_assert!(
                matches!(
                    skip,
                    Skip::CorruptPdf | Skip::PdfLimit | Skip::ImageOnlyPdf | Skip::UnmappedPdfText
                ),
                "{skip}"
            );
        }
    }

    #[test]
    fn random_bytes_after_the_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let mut bytes = b"%PDF-1.7\n".to_vec();
        bytes.extend(tail);
        let _ = read_bytes("random.pdf", bytes);
    }
}

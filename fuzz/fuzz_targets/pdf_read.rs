//! The PDF reader on arbitrary bytes (`fuzz/run` seeds the corpus with the fpdf2, ReportLab
//! and pypdf fixtures). Nothing panics out of the walk; a read that fails handed nothing to the
//! sink; every run of lines is of one page, with a line number for each line, going forward.
#![no_main]

use std::io::{Cursor, Read};

use extract::{Column, Container, Limits, Sink, Skip, TableUnit, walk};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    max_depth: 4,
    max_members: 1000,
    max_bytes: 8 << 20,
    max_ratio: 250,
};

#[derive(Default)]
struct Drain {
    text: u64,
    skipped: u64,
    page: u32,
}

impl Sink for Drain {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("a PDF has no members");
    }

    fn values(&mut self, path: &[String], column: &Column<'_>) {
        assert_eq!(path, ["fuzz"]);
        let TableUnit::Page { page } = column.unit else {
            panic!("a PDF's values are lines of its pages");
        };
        assert!(page >= 1 && page >= self.page, "pages go forward");
        self.page = page;
        assert!(column.names.is_empty());
        assert_eq!(column.text.split_terminator('\n').count(), column.rows.len());
        assert!(column.rows.windows(2).all(|w| w[0] < w[1]), "lines go forward");
        self.text += column.text.len() as u64;
    }

    fn skipped(&mut self, _: &[String], _: Skip) {
        self.skipped += 1;
    }
}

fuzz_target!(|bytes: &[u8]| {
    let mut sink = Drain::default();
    match walk(Cursor::new(bytes.to_vec()), Container::Pdf, "fuzz", LIMITS, &mut sink) {
        Ok(report) => assert_eq!(report.skipped, sink.skipped),
        Err(_) => assert_eq!((sink.text, sink.skipped), (0, 0)),
    }
});

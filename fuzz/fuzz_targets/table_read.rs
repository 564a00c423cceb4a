//! The table readers on arbitrary bytes, each input read as a Parquet file, as an Avro file and
//! as a compound file (an XLS workbook) whatever its magic (`fuzz/run` seeds the corpus with
//! the pyarrow, fastavro and xlwt fixtures).
//! Nothing panics out of the walk; a read that fails handed nothing to the sink; every run of values has a row for each line,
//! rows only go forward within a run, and the text stays within the file's allowance.
#![no_main]

use std::io::{Cursor, Read};

use extract::{Column, Container, Limits, RATIO_GRACE, Sink, Skip, walk};
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
}

impl Sink for Drain {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("a table file has no members");
    }

    fn values(&mut self, path: &[String], column: &Column<'_>) {
        assert_eq!(path, ["fuzz"]);
        assert_eq!(column.text.split_terminator('\n').count(), column.rows.len());
        assert!(column.rows.windows(2).all(|w| w[0] <= w[1]), "rows go forward");
        assert!(column.rows.iter().all(|&r| r >= 1), "rows count from 1");
        self.text += column.text.len() as u64;
    }

    fn skipped(&mut self, _: &[String], _: Skip) {
        self.skipped += 1;
    }
}

fn check(bytes: &[u8], kind: Container) {
    let mut sink = Drain::default();
    let length = bytes.len() as u64;
    match walk(Cursor::new(bytes.to_vec()), kind, "fuzz", LIMITS, &mut sink) {
        Ok(report) => assert_eq!(report.skipped, sink.skipped),
        Err(_) => assert_eq!((sink.text, sink.skipped), (0, 0)),
    }
    assert!(sink.text <= (length * LIMITS.max_ratio).max(RATIO_GRACE));
}

fuzz_target!(|bytes: &[u8]| {
    check(bytes, Container::Parquet);
    check(bytes, Container::Avro);
    check(bytes, Container::Cfb);
});

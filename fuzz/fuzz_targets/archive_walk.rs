//! The archive walk on arbitrary bytes: any input that `extract::container` calls a container
//! (ZIP, TAR, TAR.GZ, ...) is walked under small limits, and a TAR is walked again gzipped.
//! The sink reads every member to its end. Nothing panics; a walk that fails touched no member;
//! the report counts what the sink saw; paths stay within the depth and name limits; and the
//! sink is never handed more than the byte limit allows.
#![no_main]

use std::io::{Cursor, Read, Write as _};

use extract::{Container, Limits, MAX_NAME, Sink, Skip, container, walk};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    max_depth: 4,
    max_members: 1000,
    max_bytes: 8 << 20,
    max_ratio: 250,
};

/// Counts what the walk hands out, and checks every path it names.
#[derive(Default)]
struct Drain {
    members: u64,
    skipped: u64,
    bytes: u64,
}

fn check_path(path: &[String]) {
    assert_eq!(path.first().map(String::as_str), Some("fuzz"));
    assert!(path.len() <= LIMITS.max_depth + 1, "{path:?}");
    assert!(path.iter().all(|p| p.len() <= MAX_NAME), "{path:?}");
}

impl Sink for Drain {
    fn member(
        &mut self,
        path: &[String],
        name: &str,
        content: &mut dyn Read,
    ) -> std::io::Result<()> {
        check_path(path);
        assert!(name.len() <= MAX_NAME);
        let mut buf = [0u8; 16 << 10];
        loop {
            match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.bytes += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.members += 1;
        Ok(())
    }

    fn values(&mut self, path: &[String], column: &extract::Column<'_>) {
        check_path(path);
        assert_eq!(column.text.lines().count(), column.rows.len());
        assert!(column.rows.windows(2).all(|w| w[0] <= w[1]), "rows go forward");
        self.bytes += column.text.len() as u64;
    }

    fn skipped(&mut self, path: &[String], _reason: Skip) {
        check_path(path);
        self.skipped += 1;
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip to memory");
    encoder.finish().expect("gzip to memory")
}

fn check(bytes: &[u8]) {
    let Some(kind) = container(bytes) else {
        return;
    };
    let mut sink = Drain::default();
    match walk(Cursor::new(bytes.to_vec()), kind, "fuzz", LIMITS, &mut sink) {
        Ok(report) => {
            assert_eq!(report.members, sink.members);
            assert_eq!(report.skipped, sink.skipped);
        }
        Err(_) => assert_eq!((sink.members, sink.skipped, sink.bytes), (0, 0, 0)),
    }
    // Every decompression counts against max_bytes; a plain TAR's own members are the input's
    // bytes, read as they are, so they may add at most the input's length.
    assert!(
        sink.bytes <= LIMITS.max_bytes + bytes.len() as u64,
        "{} bytes handed out",
        sink.bytes
    );
}

fuzz_target!(|bytes: &[u8]| {
    check(bytes);
    if container(bytes) == Some(Container::Tar) {
        let gzipped = gzip(bytes);
        assert_eq!(container(&gzipped), Some(Container::TarGz));
        check(&gzipped);
    }
});

//! The walk over archives written by Python's zipfile, tarfile and gzip
//! (`tests/fixtures/formats/make.py`), and over hostile ones.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

mod common;

use std::io::{Cursor, Read};

use common::fixture;
use extract::{Container, Limits, Report, Sink, Skip, container, walk};

#[derive(Default)]
struct Collect {
    members: Vec<(String, String, Vec<u8>)>,
    skipped: Vec<(String, Skip)>,
    /// Members whose content the sink was given, read to the end or not.
    handed: usize,
}

impl Sink for Collect {
    fn member(
        &mut self,
        path: &[String],
        name: &str,
        content: &mut dyn Read,
    ) -> std::io::Result<()> {
        self.handed += 1;
        let mut data = Vec::new();
        content.read_to_end(&mut data)?;
        self.members.push((path.join(" > "), name.to_owned(), data));
        Ok(())
    }

    fn values(&mut self, path: &[String], column: &extract::Column<'_>) {
        panic!("{path:?} holds no table, yet {:?} was read", column.names);
    }

    fn skipped(&mut self, path: &[String], reason: Skip) {
        self.skipped.push((path.join(" > "), reason));
    }
}

fn read(name: &str, limits: Limits) -> (Result<Report, Skip>, Collect) {
    let bytes = fixture(name);
    let kind = container(&bytes).unwrap_or_else(|| panic!("{name} is a container"));
    let mut sink = Collect::default();
    let report = walk(Cursor::new(bytes), kind, name, limits, &mut sink);
    (report, sink)
}

fn text(data: &[u8]) -> &str {
    std::str::from_utf8(data).expect("text")
}

#[test]
fn a_zip_is_read_member_by_member_through_nested_zips_and_gzip() {
    let (report, sink) = read("export.zip", Limits::default());
    let paths: Vec<(&str, &str)> = sink
        .members
        .iter()
        .map(|(p, n, _)| (p.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            ("export.zip > customers.csv", "customers.csv"),
            ("export.zip > readme.txt", "readme.txt"),
            (
                "export.zip > nested/inner.zip > deep/notes.txt",
                "deep/notes.txt"
            ),
            (
                "export.zip > more/customers_2.csv.gz",
                "more/customers_2.csv"
            ),
        ]
    );
    assert_eq!(text(&sink.members[0].2).matches("536-22-").count(), 20);
    assert!(text(&sink.members[2].2).contains("536-22-4471"));
    assert_eq!(text(&sink.members[3].2).matches("@example.com").count(), 5);
    assert!(sink.skipped.is_empty(), "{:?}", sink.skipped);
    assert_eq!(
        report,
        Ok(Report {
            members: 4,
            skipped: 0
        })
    );
}

#[test]
fn a_tar_gz_is_read_with_long_and_pax_names() {
    let (report, sink) = read("logs.tar.gz", Limits::default());
    assert_eq!(container(&fixture("logs.tar.gz")), Some(Container::TarGz));
    let names: Vec<&str> = sink.members.iter().map(|(_, n, _)| n.as_str()).collect();
    let long = format!("archive/{}customers.csv", "quarterly-exports/".repeat(7));
    assert_eq!(names, ["app/2024-05-01.log", "app/old.log", long.as_str()]);
    assert!(text(&sink.members[1].2).contains("536-22-4480"));
    assert_eq!(text(&sink.members[2].2).matches("536-22-").count(), 3);
    assert_eq!(
        report,
        Ok(Report {
            members: 3,
            skipped: 0
        })
    );

    let (_, sink) = read("pax.tar", Limits::default());
    assert_eq!(sink.members[0].1, "données/clients_é.csv");
    assert_eq!(text(&sink.members[0].2).matches("536-22-").count(), 2);
}

#[test]
fn a_zip_bomb_stops_at_its_ratio_early() {
    let (report, sink) = read("bomb.zip", Limits::default());
    assert_eq!(
        sink.skipped,
        [("bomb.zip > zeros.csv".to_owned(), Skip::CompressionRatio)]
    );
    // The sink saw an error, not 64 MiB: the meter stopped the member past its grace.
    assert!(sink.members.is_empty());
    assert_eq!(
        report,
        Ok(Report {
            members: 0,
            skipped: 1
        })
    );
}

#[test]
fn nesting_past_the_depth_limit_is_skipped_with_its_reason() {
    let (_, sink) = read("deep.zip", Limits::default());
    assert!(sink.members.is_empty());
    assert_eq!(sink.skipped.len(), 1);
    assert_eq!(sink.skipped[0].1, Skip::ArchiveDepth);
    // Ten levels: the object and nine ZIPs inside it open, the tenth inside is not.
    assert_eq!(sink.skipped[0].0.matches(" > ").count(), 10);

    let (_, sink) = read(
        "deep.zip",
        Limits {
            max_depth: 12,
            ..Limits::default()
        },
    );
    assert_eq!(sink.members.len(), 1);
    assert!(text(&sink.members[0].2).contains("536-22-4490"));
}

#[test]
fn an_encrypted_member_is_skipped_and_the_others_are_read() {
    let (_, sink) = read("encrypted.zip", Limits::default());
    assert_eq!(
        sink.skipped,
        [("encrypted.zip > secret.csv".to_owned(), Skip::EncryptedZip)]
    );
    assert_eq!(sink.members.len(), 1);
    assert_eq!(sink.members[0].1, "open.txt");
}

#[test]
fn a_truncated_tar_gz_keeps_the_members_before_the_cut() {
    let (report, sink) = read("truncated.tar.gz", Limits::default());
    assert_eq!(sink.members.len(), 1);
    assert_eq!(sink.members[0].1, "app/2024-05-01.log");
    assert_eq!(text(&sink.members[0].2).matches("@example.com").count(), 12);
    // The cut member is reported, as the stream's own corruption: the gzip under the TAR.
    assert_eq!(
        sink.skipped,
        [(
            "truncated.tar.gz > exports/customers.csv".to_owned(),
            Skip::CorruptTar
        )]
    );
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
}

#[test]
fn the_member_and_byte_limits_stop_the_object() {
    let (_, sink) = read(
        "export.zip",
        Limits {
            max_members: 2,
            ..Limits::default()
        },
    );
    assert_eq!(sink.members.len(), 2);
    assert_eq!(
        sink.skipped,
        [(
            "export.zip > nested/inner.zip".to_owned(),
            Skip::ArchiveMembers
        )]
    );

    let (_, sink) = read(
        "export.zip",
        Limits {
            max_bytes: 1000,
            ..Limits::default()
        },
    );
    assert_eq!(sink.skipped.last().map(|s| s.1), Some(Skip::ArchiveBytes));
    assert_eq!(
        sink.skipped.len(),
        1,
        "nothing is read after the budget is spent"
    );
}

#[test]
fn what_is_no_container_is_left_to_detection() {
    assert_eq!(container(b"customer_id,ssn\n1,536-22-4100\n"), None);
    let plain_gzip = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut e, b"just a log line\n").expect("write");
        e.finish().expect("finish")
    };
    assert_eq!(container(&plain_gzip), None);
    assert_eq!(container(&fixture("control.zip")), Some(Container::Zip));
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Any bytes, and any fixture with bytes flipped or cut, end in a report or a skip:
        /// never a panic, and never more than the limits allow.
        #[test]
        fn damaged_archives_never_panic(
            which in 0usize..9,
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in any::<usize>(),
        ) {
            let name = [
                "export.zip", "logs.tar.gz", "pax.tar", "deep.zip", "encrypted.zip",
                "app.log.bz2", "app.log.zst", "exports.tar.zst", "exports.tar.bz2",
            ][which];
            let mut bytes = fixture(name);
            for (at, byte) in flips {
                let at = at % bytes.len();
                bytes[at] ^= byte;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            let limits = Limits { max_bytes: 4 << 20, ..Limits::default() };
            if let Some(kind) = container(&bytes) {
                let mut sink = Collect::default();
                let report = walk(Cursor::new(bytes), kind, name, limits, &mut sink);
                let read: usize = sink.members.iter().map(|m| m.2.len()).sum();
                prop_assert!(read as u64 <= limits.max_bytes);
                // An error says the object was not read: nothing reached the sink.
                if report.is_err() {
                    prop_assert_eq!((sink.handed, sink.skipped.len()), (0, 0));
                }
            }
        }
    }
}

#[test]
fn bzip2_and_zstandard_files_are_inflated_and_a_tar_inside_is_walked() {
    for name in ["app.log.bz2", "app.log.zst"] {
        let (report, sink) = read(name, Limits::default());
        assert_eq!(
            report,
            Ok(Report {
                members: 1,
                skipped: 0
            }),
            "{name}"
        );
        let (path, inner, data) = &sink.members[0];
        assert_eq!((path.as_str(), inner.as_str()), (name, "app.log"));
        assert_eq!(text(data).matches("@example.com").count(), 12, "{name}");
        assert!(text(data).contains("536-22-4480"), "{name}");
    }
    for (name, first) in [("exports.tar.zst", 60), ("exports.tar.bz2", 70)] {
        let (_, sink) = read(name, Limits::default());
        assert_eq!(sink.members.len(), 1, "{name}");
        assert_eq!(sink.members[0].0, format!("{name} > exports/customers.csv"));
        assert!(text(&sink.members[0].2).contains(&format!("536-22-{}", 4100 + first)));
    }
    // Cut short, each says so: as an error when nothing came out before the cut, as a skip
    // when something did (the sink saw it, so the object was read in part).
    for (name, reason) in [
        ("app.log.bz2", Skip::CorruptBzip2),
        ("app.log.zst", Skip::CorruptZstd),
    ] {
        let mut bytes = fixture(name);
        bytes.truncate(bytes.len() / 2);
        let kind = container(&bytes).unwrap();
        let mut sink = Collect::default();
        let report = walk(Cursor::new(bytes), kind, name, Limits::default(), &mut sink);
        if sink.handed == 0 {
            // A bzip2 block inflates only whole: nothing came out before the cut.
            assert_eq!(report, Err(reason), "{name}");
        } else {
            let partly = Report {
                members: 0,
                skipped: 1,
            };
            assert_eq!(report, Ok(partly), "{name}");
            assert_eq!(sink.skipped, [(name.to_owned(), reason)]);
        }
    }
    // The fuzz target's first find: a Zstandard frame that inflates, then fails. What came
    // out reached the sink, so the walk is a skip, not an error that would drop it.
    let found = [
        0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x29, 0x00, 0x00, 0x00, 0x72, 0x00, 0x00, 0x00, 0x0a, 0x00,
        0x01, 0x00, 0x72, 0x00, 0x04, 0x40, 0x00, 0x00, 0x00, 0x72, 0x00, 0x00, 0x00, 0x0a, 0x00,
        0x01, 0x00, 0x72, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    let mut sink = Collect::default();
    let report = walk(
        Cursor::new(found),
        Container::Zstd,
        "f.zst",
        Limits::default(),
        &mut sink,
    );
    assert_eq!(sink.handed, 1);
    assert_eq!(report.map(|r| r.skipped), Ok(1));
    // A header alone is an error: nothing was read.
    let mut sink = Collect::default();
    let header = Cursor::new([0x28, 0xb5, 0x2f, 0xfd]);
    let report = walk(
        header,
        Container::Zstd,
        "x.zst",
        Limits::default(),
        &mut sink,
    );
    assert_eq!(report, Err(Skip::CorruptZstd));
    assert_eq!(sink.handed, 0);
}

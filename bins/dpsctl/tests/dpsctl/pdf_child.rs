//! PDFs parsed in children of the real binary (`extract::isolation`): the same lines as in
//! process, and a file that makes the parser outgrow its caps ends `pdf_limit` in the child
//! while this process stays small.

use std::io::{Cursor, Read, Write};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use extract::isolation::{self, Isolation};
use extract::{Column, Container, Limits, Report, Sink, Skip, TableUnit, walk};
use flate2::Compression;
use flate2::write::ZlibEncoder;

/// Every line read, as (page, line, text), and what was skipped.
#[derive(Debug, Default, PartialEq)]
struct Pages {
    read: Vec<(u32, u64, String)>,
    skipped: Vec<Skip>,
}

impl Sink for Pages {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn Read) -> std::io::Result<()> {
        panic!("a PDF has no members");
    }

    fn values(&mut self, path: &[String], column: &Column<'_>) {
        assert_eq!(
            path,
            ["doc.pdf"],
            "lines are handed at the object's own path"
        );
        let TableUnit::Page { page } = column.unit else {
            panic!("a PDF's values are pages' lines, not {:?}", column.unit);
        };
        for (line, n) in column.text.split_terminator('\n').zip(column.rows) {
            self.read.push((page, *n, line.to_owned()));
        }
    }

    fn skipped(&mut self, _: &[String], reason: Skip) {
        self.skipped.push(reason);
    }
}

/// The tests here change how this process parses PDFs: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn children(memory: u64, deadline: Duration) -> Option<Isolation> {
    Some(Isolation {
        program: PathBuf::from(env!("CARGO_BIN_EXE_dpsctl")),
        memory,
        deadline,
    })
}

fn read(bytes: &[u8], how: Option<Isolation>) -> (Result<Report, Skip>, Pages) {
    isolation::set(how);
    let mut pages = Pages::default();
    let report = walk(
        Cursor::new(bytes.to_vec()),
        Container::Pdf,
        "doc.pdf",
        Limits::default(),
        &mut pages,
    );
    isolation::set(None);
    (report, pages)
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats");
    let mut pdfs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "pdf"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    pdfs.sort();
    pdfs
}

/// The process's peak resident memory so far (`VmHWM`), in bytes.
fn peak_resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .unwrap();
    kib.trim().parse::<u64>().unwrap() * 1024
}

/// A one-page PDF showing `SSN 536-22-4105` whose object 4, drawn by nothing, is an array
/// of `zeros` zeros: two bytes each in the file, an object each in the parser.
fn array_pdf(zeros: usize) -> Vec<u8> {
    let array = format!("[{}]", "0 ".repeat(zeros));
    pdf(&[array.as_bytes()])
}

/// A PDF of `objects` (numbered from 4) besides a catalog, a page tree and one page showing
/// `SSN 536-22-4105`, with a classic cross-reference table.
fn pdf(objects: &[&[u8]]) -> Vec<u8> {
    let content = b"BT /F1 12 Tf 72 700 Td (SSN 536-22-4105) Tj ET";
    let mut all: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R \
             /Resources << /Font << /F1 {} 0 R >> >> >>",
            objects.len() + 4,
            objects.len() + 5
        )
        .into_bytes(),
    ];
    all.extend(objects.iter().map(|o| o.to_vec()));
    let mut stream = format!("<< /Length {} >>\nstream\n", content.len()).into_bytes();
    stream.extend_from_slice(content);
    stream.extend_from_slice(b"\nendstream");
    all.push(stream);
    all.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    let mut file = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in all.iter().enumerate() {
        offsets.push(file.len());
        writeln!(file, "{} 0 obj", i + 1).unwrap();
        file.extend_from_slice(object);
        file.extend_from_slice(b"\nendobj\n");
    }
    let xref = file.len();
    write!(file, "xref\n0 {}\n0000000000 65535 f \n", all.len() + 1).unwrap();
    for offset in offsets {
        writeln!(file, "{offset:010} 00000 n ").unwrap();
    }
    write!(
        file,
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        all.len() + 1
    )
    .unwrap();
    file
}

/// A PDF 1.5 file whose object stream's `members` members all begin at its first byte, an
/// array of `zeros` zeros: the parser reads each member from there, so the stream of a few
/// kilobytes costs `members` x `zeros` objects.
fn object_stream_pdf(members: u32, zeros: usize) -> Vec<u8> {
    let header: String = (0..members).map(|i| format!("{} 0 ", i + 10)).collect();
    let mut body = header.into_bytes();
    let first = body.len();
    body.extend_from_slice(format!("[{}]", "0 ".repeat(zeros)).as_bytes());
    let mut deflate = ZlibEncoder::new(Vec::new(), Compression::best());
    deflate.write_all(&body).unwrap();
    let packed = deflate.finish().unwrap();

    let mut file = b"%PDF-1.5\n".to_vec();
    let mut offsets = Vec::new();
    let plain: [&[u8]; 3] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
        b"",
    ];
    for (i, object) in plain.iter().take(2).enumerate() {
        offsets.push(file.len());
        writeln!(file, "{} 0 obj", i + 1).unwrap();
        file.extend_from_slice(object);
        file.extend_from_slice(b"\nendobj\n");
    }
    offsets.push(file.len());
    write!(
        file,
        "3 0 obj\n<< /Type /ObjStm /N {members} /First {first} /Filter /FlateDecode /Length {} >>\nstream\n",
        packed.len()
    )
    .unwrap();
    file.extend_from_slice(&packed);
    file.extend_from_slice(b"\nendstream\nendobj\n");
    // The cross-reference stream, object 4: W [1 4 2], objects 0 to 3 in the file, then the
    // members, numbered from 10, in object stream 3.
    let xref = file.len();
    let mut entries = Vec::new();
    let mut entry = |kind: u8, field: u32, index: u16| {
        entries.push(kind);
        entries.extend_from_slice(&field.to_be_bytes());
        entries.extend_from_slice(&index.to_be_bytes());
    };
    entry(0, 0, 0xffff);
    for offset in &offsets {
        entry(1, u32::try_from(*offset).unwrap(), 0);
    }
    entry(1, u32::try_from(xref).unwrap(), 0);
    for _ in 5..10 {
        entry(0, 0, 0);
    }
    for i in 0..members {
        entry(2, 3, u16::try_from(i).unwrap());
    }
    let size = 10 + members;
    write!(
        file,
        "4 0 obj\n<< /Type /XRef /Size {size} /W [1 4 2] /Root 1 0 R /Length {} >>\nstream\n",
        entries.len()
    )
    .unwrap();
    file.extend_from_slice(&entries);
    write!(file, "\nendstream\nendobj\nstartxref\n{xref}\n%%EOF\n").unwrap();
    file
}

#[test]
fn every_fixture_reads_the_same_in_a_child_as_in_this_process() {
    let _one = serial();
    let mut compared = 0;
    for (name, bytes) in fixtures() {
        let here = read(&bytes, None);
        let there = read(&bytes, children(1 << 30, Duration::from_secs(120)));
        assert_eq!(there, here, "{name}");
        compared += 1;
    }
    assert!(
        compared >= 10,
        "the fixtures are where they were: {compared}"
    );
    let (report, pages) = read(
        &array_pdf(1_000),
        children(1 << 30, Duration::from_secs(60)),
    );
    assert_eq!(report.unwrap().skipped, 0);
    assert_eq!(pages.read, [(1, 1, "SSN 536-22-4105".to_owned())]);
}

#[test]
fn a_pdf_that_outgrows_its_child_ends_pdf_limit_and_this_process_stays_small() {
    let _one = serial();
    // Sixteen megabytes of `0 `: in process, the parser held about 1.9 GB for it.
    let (report, pages) = read(
        &array_pdf(8_000_000),
        children(256 << 20, Duration::from_secs(120)),
    );
    assert_eq!(report, Err(Skip::PdfLimit));
    assert!(pages.read.is_empty());
    // An object stream of a few kilobytes whose thousand members each parse one array of
    // 200,000 zeros.
    let hostile = object_stream_pdf(1_000, 200_000);
    assert!(hostile.len() < 64 << 10, "{}", hostile.len());
    let (report, _) = read(&hostile, children(256 << 20, Duration::from_secs(120)));
    assert_eq!(report, Err(Skip::PdfLimit));
    let peak = peak_resident();
    assert!(peak < 512 << 20, "this process peaked at {peak} bytes");
}

#[test]
fn a_child_past_its_deadline_is_ended_and_the_pdf_is_left_unread() {
    let _one = serial();
    // Two million tokens take the child seconds to parse, within its memory.
    let bytes = array_pdf(2_000_000);
    let (report, pages) = read(&bytes, children(1 << 30, Duration::from_millis(100)));
    assert_eq!(report, Err(Skip::PdfLimit));
    assert!(pages.read.is_empty());
}

#[test]
fn a_child_that_does_not_answer_leaves_the_pdf_unread_and_is_never_replaced_by_this_process() {
    let _one = serial();
    let bytes = array_pdf(10);
    for program in ["/bin/true", "/bin/false", "/nonexistent/dps-reader"] {
        isolation::set(Some(Isolation {
            program: PathBuf::from(program),
            memory: 1 << 30,
            deadline: Duration::from_secs(30),
        }));
        let mut pages = Pages::default();
        let report = walk(
            Cursor::new(bytes.clone()),
            Container::Pdf,
            "doc.pdf",
            Limits::default(),
            &mut pages,
        );
        isolation::set(None);
        assert_eq!(report, Err(Skip::PdfLimit), "{program}");
        assert!(pages.read.is_empty(), "{program}");
    }
}

#[test]
fn the_child_is_given_no_environment() {
    let _one = serial();
    let dir = std::env::temp_dir().join(format!("dpsctl-pdf-env-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("reader");
    let seen = dir.join("env");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexport -p > '{}'\n", seen.display()),
    )
    .unwrap();
    let chmod = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    assert!(chmod.success());
    isolation::set(Some(Isolation {
        program: script,
        memory: 1 << 30,
        deadline: Duration::from_secs(30),
    }));
    let mut pages = Pages::default();
    let report = walk(
        Cursor::new(array_pdf(10)),
        Container::Pdf,
        "doc.pdf",
        Limits::default(),
        &mut pages,
    );
    isolation::set(None);
    assert_eq!(report, Err(Skip::PdfLimit));
    let exported = std::fs::read_to_string(&seen).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // Of this process's variables (PATH, HOME, CARGO_*...), none reached the child: what the
    // shell lists is what it sets itself.
    let shell_sets = ["PWD", "OLDPWD", "SHLVL", "_"];
    for (name, _) in std::env::vars().filter(|(name, _)| !shell_sets.contains(&name.as_str())) {
        assert!(
            !exported.contains(&format!(" {name}=")),
            "{name} reached the child: {exported}"
        );
    }
}

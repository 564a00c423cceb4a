//! Excel 97–2003 workbooks written by xlwt (`tests/fixtures/formats/make_xls.py`), read cell
//! by cell from their compound file; compound files that are no workbook; and hostile ones,
//! built here: a compound file is a small file system, and each of its numbers can lie.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

#[path = "common/cells.rs"]
mod cells;
mod common;

use std::time::{Duration, Instant};

use cells::{column, read, read_bytes};
use common::fixture;
use extract::{Container, Limits, Report, Skip, container};

const MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
const END_OF_CHAIN: u32 = 0xFFFF_FFFE;
const FREE: u32 = 0xFFFF_FFFF;
const FAT_SECTOR: u32 = 0xFFFF_FFFD;
const NO_ENTRY: u32 = 0xFFFF_FFFF;

#[test]
fn an_xls_workbooks_sheets_are_read_cell_by_cell_with_their_headers() {
    let bytes = fixture("payroll.xls");
    assert_eq!(container(&bytes), Some(Container::Cfb));
    let (report, cells) = read("payroll.xls");
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    let ssn = column(&cells, "Payroll", "B", "SSN");
    assert_eq!(ssn.len(), 40);
    assert_eq!(ssn[0], (2, "536-22-5000".into()));
    assert_eq!(ssn[39], (41, "536-22-5039".into()));
    assert_eq!(
        column(&cells, "Payroll", "C", "Email")[3].1,
        "payroll3@example.com"
    );
    // Whole numbers written as RK, without a fraction; a number whose format is a date, a date.
    assert_eq!(column(&cells, "Payroll", "E", "Salary")[1].1, "48500");
    assert_eq!(
        column(&cells, "Payroll", "F", "Start date")[0].1,
        "2012-01-01"
    );
    assert_eq!(
        column(&cells, "Payroll", "G", "Phone")[0].1,
        "(202) 555-0100"
    );
    assert_eq!(
        column(&cells, "Case notes", "B", "Summary")[1],
        (
            3,
            "Caller gave SSN 536-22-5071 and asked for letters at kim.ng@example.com.".into()
        )
    );
    // A first row of values is data, not a header.
    let export = column(&cells, "Export", "A", "");
    assert_eq!(export.len(), 10);
    assert_eq!(export[0], (1, "536-22-5100".into()));
    assert_eq!(
        column(&cells, "Numbers", "A", "employee_ssn")[0],
        (2, "536225150".into())
    );
    assert_eq!(cells.columns.len(), 14, "{:?}", cells.columns.keys());

    let (report, cells) = read("control.xls");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(column(&cells, "Stock", "A", "SKU").len(), 80);
    assert!(
        cells
            .columns
            .values()
            .flatten()
            .all(|(_, v)| !v.contains('@') && !v.contains("536-22"))
    );
}

#[test]
fn a_compound_file_that_holds_no_workbook_is_skipped_as_unsupported() {
    // A Word 97 file's stream, where the workbook's was.
    let (report, cells) = read("not_a_workbook.xls");
    assert_eq!(report, Err(Skip::UnsupportedFormat));
    assert!(cells.columns.is_empty());
    // An Excel 5.0/95 workbook, named `Book`, and one whose `BOF` says BIFF5.
    let (report, _) = read_bytes(
        compound(&[("Book", workbook(&[]))]),
        "old.xls",
        Limits::default(),
    );
    assert_eq!(report, Err(Skip::UnsupportedFormat));
    let mut biff5 = workbook(&[]);
    biff5[4..6].copy_from_slice(&0x0500u16.to_le_bytes());
    let (report, _) = read_bytes(
        compound(&[("Workbook", biff5)]),
        "old.xls",
        Limits::default(),
    );
    assert_eq!(report, Err(Skip::UnsupportedFormat));
    // A Word 97 file, as a compound file of its own.
    let (report, _) = read_bytes(
        compound(&[("WordDocument", vec![0; 5000])]),
        "letter.doc",
        Limits::default(),
    );
    assert_eq!(report, Err(Skip::UnsupportedFormat));
}

#[test]
fn an_encrypted_workbook_or_office_file_is_skipped_as_encrypted() {
    // Excel's own encryption: a FILEPASS record among the globals.
    let mut globals = record(0x0809, &bof(0x0005));
    globals.extend(record(0x002F, &[1, 0, 1, 0, 1, 0]));
    globals.extend(record(0x000A, &[]));
    globals.resize(4096, 0);
    let (report, _) = read_bytes(
        compound(&[("Workbook", globals)]),
        "locked.xls",
        Limits::default(),
    );
    assert_eq!(report, Err(Skip::EncryptedOffice));
    // An Office Open XML file saved with a password: its package is a stream of a compound file.
    let (report, _) = read_bytes(
        compound(&[
            ("EncryptionInfo", vec![4; 300]),
            ("EncryptedPackage", vec![7; 6000]),
        ]),
        "locked.xlsx",
        Limits::default(),
    );
    assert_eq!(report, Err(Skip::EncryptedOffice));
}

#[test]
fn a_small_workbook_is_read_from_the_mini_stream() {
    // Under 4 KiB, a stream lives in 64-byte sectors of the mini stream.
    let label = label_at(0, 0, "Email");
    let value = label_at(1, 0, "mini@example.com");
    let small = workbook(&[label, value]);
    assert!(small.len() < 4096);
    let (report, cells) = read_bytes(
        compound(&[("Workbook", small)]),
        "small.xls",
        Limits::default(),
    );
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 0
        })
    );
    assert_eq!(
        column(&cells, "Sheet", "A", "Email"),
        [(2, "mini@example.com".to_owned())]
    );
}

#[test]
fn cells_far_apart_cost_nothing_and_out_of_order_rows_keep_runs_forward() {
    // calamine holds a sheet as the grid between its corners: 65,536 by 65,536 cells here.
    let cells = vec![
        label_at(0, 0, "First"),
        label_at(65_535, 65_535, "536-22-5901"),
        label_at(9, 0, "536-22-5902"),
        label_at(3, 0, "536-22-5903"),
    ];
    let started = Instant::now();
    let (report, read) = read_bytes(
        compound(&[("Workbook", workbook(&cells))]),
        "far.xls",
        Limits::default(),
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        column(&read, "Sheet", "A", "First"),
        [(10, "536-22-5902".into()), (4, "536-22-5903".into())]
    );
    assert_eq!(
        column(&read, "Sheet", "CRXP", ""),
        [(65_536, "536-22-5901".into())]
    );
}

#[test]
fn a_shared_string_named_thousands_of_times_stops_at_the_workbooks_allowance() {
    // One 30,000-character string, and 2,000 cells of 14 bytes each naming it: 60 MB of text
    // from a file of 60 KB.
    let mut sst = Vec::new();
    sst.extend(1u32.to_le_bytes());
    sst.extend(1u32.to_le_bytes());
    sst.extend(30_000u16.to_le_bytes());
    sst.push(0);
    sst.extend(std::iter::repeat_n(b'x', 30_000));
    let cells: Vec<Vec<u8>> = (0..2_000u16)
        .map(|row| {
            let mut data = row.to_le_bytes().to_vec();
            data.extend([0; 4]);
            data.extend(0u32.to_le_bytes());
            record(0x00FD, &data)
        })
        .collect();
    let bytes = compound(&[("Workbook", workbook_with(&[record(0x00FC, &sst)], &cells))]);
    let length = bytes.len() as u64;
    let (report, read) = read_bytes(bytes, "amplified.xls", Limits::default());
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(read.skipped, [Skip::CompressionRatio]);
    assert!(read.text <= length * 250, "{} bytes of text", read.text);
    assert!(read.text > length * 200, "{} bytes of text", read.text);
}

#[test]
fn a_loop_in_a_chain_ends_quickly() {
    // A workbook stream of 4 KiB and more, in sectors of its own from sector 0, with no
    // padding for the reader to stop at.
    let labels: Vec<Vec<u8>> = (0..300).map(|row| label_at(row, 0, "loop")).collect();
    let stream = workbook(&labels);
    assert!(stream.len() > 4096);
    let good = compound(&[("Workbook", stream), ("Filler", vec![0xFF; 4096])]);
    let fat = first_fat_sector(&good);
    // The stream's first sector points at itself, its size claiming 4 GiB: read until the
    // chain has visited as many sectors as the file has.
    let mut looped = good.clone();
    set_fat(&mut looped, fat, 0, 0);
    set_entry_size(&mut looped, 1, u32::MAX);
    let started = Instant::now();
    let (_, cells) = read_bytes(looped, "loop.xls", Limits::default());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(cells.text < 100_000, "{} bytes", cells.text);
    // The directory's chain loops.
    let mut looped = good.clone();
    let directory = u32::from_le_bytes(looped[48..52].try_into().unwrap());
    set_fat(&mut looped, fat, directory, directory);
    let (report, _) = read_bytes(looped, "loop.xls", Limits::default());
    assert_eq!(report, Err(Skip::CorruptSpreadsheet));
    // The allocation table's sectors are named by a DIFAT chain that loops, naming none.
    let mut looped = good;
    let filler = filler_start(&looped);
    for id in 0..109 {
        looped[76 + 4 * id..80 + 4 * id].copy_from_slice(&FREE.to_le_bytes());
    }
    looped[68..72].copy_from_slice(&filler.to_le_bytes());
    let last = (filler as usize + 1) * 512 + 508;
    looped[last..last + 4].copy_from_slice(&filler.to_le_bytes());
    let (report, _) = read_bytes(looped, "loop.xls", Limits::default());
    assert_eq!(report, Err(Skip::CorruptSpreadsheet));
}

#[test]
fn a_cut_workbook_is_not_read() {
    // xlwt writes the directory and allocation table last: cut in half, the file has none.
    let (report, cells) = read("truncated.xls");
    assert_eq!(report, Err(Skip::CorruptSpreadsheet));
    assert!(cells.columns.is_empty());
}

#[test]
fn an_xls_in_an_archive_is_spooled_and_read_and_a_doc_beside_it_skipped() {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for name in ["payroll.xls", "not_a_workbook.xls"] {
        zip.start_file(format!("hr/{name}"), options).unwrap();
        zip.write_all(&fixture(name)).unwrap();
    }
    let bytes = zip.finish().unwrap().into_inner();
    let (report, cells) = read_bytes(bytes, "hr.zip", Limits::default());
    assert_eq!(
        report,
        Ok(Report {
            members: 1,
            skipped: 1
        })
    );
    assert_eq!(cells.skipped, [Skip::UnsupportedFormat]);
    assert_eq!(column(&cells, "Payroll", "B", "SSN").len(), 40);
    assert_eq!(
        cells.members, 0,
        "a compound file is never handed over as a file"
    );
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// A workbook with bytes flipped or cut ends in a report or a skip, never a panic or a
        /// hang, and a read that fails handed nothing over.
        #[test]
        fn damaged_workbooks_never_panic(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in any::<usize>(),
        ) {
            let mut bytes = fixture("payroll.xls");
            // Most of a workbook is cells; the header, allocation table and directory are
            // where a flip breaks the most, so half the flips land in the first and last 1 KiB.
            for (i, (at, byte)) in flips.into_iter().enumerate() {
                let len = bytes.len();
                let at = match i % 2 {
                    0 => at % len,
                    _ if at % 2 == 0 => at % 1024,
                    _ => len - 1 - at % 1024,
                };
                bytes[at] ^= byte;
            }
            if cut % 4 == 0 {
                let whole = bytes.len();
                bytes.truncate(whole - cut / 4 % whole);
            }
            if container(&bytes) == Some(Container::Cfb) {
                let (report, cells) = read_bytes(bytes, "p.xls", Limits::default());
                if report.is_err() {
                    prop_assert!(cells.columns.is_empty());
                }
            }
        }

        /// Arbitrary bytes after the magic: a header, tables and directory of noise.
        #[test]
        fn noise_after_the_magic_never_panics(noise in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let mut bytes = MAGIC.to_vec();
            bytes.extend(noise);
            let (report, cells) = read_bytes(bytes, "noise.xls", Limits::default());
            if report.is_err() {
                prop_assert!(cells.columns.is_empty());
            }
        }
    }
}

// A BIFF8 workbook: the globals (a BOF, one BOUNDSHEET naming the sheet "Sheet", an EOF), then
// the sheet's substream.

fn record(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut out = kind.to_le_bytes().to_vec();
    out.extend(u16::try_from(data.len()).unwrap().to_le_bytes());
    out.extend(data);
    out
}

fn bof(kind: u16) -> Vec<u8> {
    let mut data = 0x0600u16.to_le_bytes().to_vec();
    data.extend(kind.to_le_bytes());
    data.extend([0; 12]);
    data
}

/// A `LABEL` record at (`row`, `column`): an inline string, as older writers use.
fn label_at(row: u16, column: u16, text: &str) -> Vec<u8> {
    let mut data = row.to_le_bytes().to_vec();
    data.extend(column.to_le_bytes());
    data.extend(0u16.to_le_bytes());
    data.extend(u16::try_from(text.len()).unwrap().to_le_bytes());
    data.push(0);
    data.extend(text.as_bytes());
    record(0x0204, &data)
}

fn workbook(cells: &[Vec<u8>]) -> Vec<u8> {
    workbook_with(&[], cells)
}

/// A workbook of one sheet holding `cells`, its globals ending with `globals`.
fn workbook_with(globals: &[Vec<u8>], cells: &[Vec<u8>]) -> Vec<u8> {
    let mut head = record(0x0809, &bof(0x0005));
    let sheet_name = |at: u32| {
        let mut data = at.to_le_bytes().to_vec();
        data.extend([0, 0, 5, 0]);
        data.extend(b"Sheet");
        record(0x0085, &data)
    };
    let globals: Vec<u8> = globals.concat();
    let length = head.len() + sheet_name(0).len() + globals.len() + 4;
    head.extend(sheet_name(u32::try_from(length).unwrap()));
    head.extend(globals);
    head.extend(record(0x000A, &[]));
    head.extend(record(0x0809, &bof(0x0010)));
    for cell in cells {
        head.extend(cell);
    }
    head.extend(record(0x000A, &[]));
    head
}

// A compound file (MS-CFB, version 3, 512-byte sectors) of streams at its root: streams of 4 KiB
// or more in sectors of their own, smaller ones in the mini stream.

fn compound(streams: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut sectors: Vec<Vec<u8>> = Vec::new();
    let mut fat: Vec<u32> = Vec::new();
    let chain = |bytes: &[u8], sectors: &mut Vec<Vec<u8>>, fat: &mut Vec<u32>| -> u32 {
        if bytes.is_empty() {
            return END_OF_CHAIN;
        }
        let start = u32::try_from(sectors.len()).unwrap();
        for (i, piece) in bytes.chunks(512).enumerate() {
            let mut sector = piece.to_vec();
            sector.resize(512, 0);
            sectors.push(sector);
            let last = (i + 1) * 512 >= bytes.len();
            fat.push(if last {
                END_OF_CHAIN
            } else {
                start + i as u32 + 1
            });
        }
        start
    };
    let mut mini = Vec::new();
    let mut mini_fat: Vec<u32> = Vec::new();
    let mut entries = Vec::new();
    for (name, bytes) in streams {
        let start = if bytes.len() >= 4096 {
            chain(bytes, &mut sectors, &mut fat)
        } else {
            let start = u32::try_from(mini.len() / 64).unwrap();
            let count = bytes.len().div_ceil(64);
            for i in 0..count {
                mini_fat.push(if i + 1 == count {
                    END_OF_CHAIN
                } else {
                    start + i as u32 + 1
                });
            }
            mini.extend(bytes);
            mini.resize(mini.len().div_ceil(64) * 64, 0);
            start
        };
        entries.push((name.to_string(), 2u8, start, bytes.len()));
    }
    let mini_start = chain(&mini, &mut sectors, &mut fat);
    let mini_fat_bytes: Vec<u8> = mini_fat.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mini_fat_start = chain(&mini_fat_bytes, &mut sectors, &mut fat);
    let mut directory = entry("Root Entry", 5, mini_start, mini.len(), 1, NO_ENTRY);
    for (i, (name, kind, start, size)) in entries.iter().enumerate() {
        let next = if i + 1 < entries.len() {
            i as u32 + 2
        } else {
            NO_ENTRY
        };
        directory.extend(entry(name, *kind, *start, *size, NO_ENTRY, next));
    }
    let directory_start = chain(&directory, &mut sectors, &mut fat);
    // The allocation table's own sectors come last, and count themselves.
    let mut fat_sectors = 1;
    while (sectors.len() + fat_sectors).div_ceil(128) > fat_sectors {
        fat_sectors += 1;
    }
    let first_fat = sectors.len() as u32;
    fat.extend(std::iter::repeat_n(FAT_SECTOR, fat_sectors));
    fat.resize(fat_sectors * 128, FREE);
    let mut header = MAGIC.to_vec();
    header.resize(24, 0);
    header.extend(0x003Eu16.to_le_bytes());
    header.extend(3u16.to_le_bytes());
    header.extend(0xFFFEu16.to_le_bytes());
    header.extend(9u16.to_le_bytes());
    header.extend(6u16.to_le_bytes());
    header.resize(44, 0);
    header.extend(u32::try_from(fat_sectors).unwrap().to_le_bytes());
    header.extend(directory_start.to_le_bytes());
    header.extend(0u32.to_le_bytes());
    header.extend(4096u32.to_le_bytes());
    header.extend(mini_fat_start.to_le_bytes());
    header.extend(
        u32::try_from(mini_fat_bytes.len().div_ceil(512))
            .unwrap()
            .to_le_bytes(),
    );
    header.extend(END_OF_CHAIN.to_le_bytes());
    header.extend(0u32.to_le_bytes());
    for i in 0..109 {
        let id = if i < fat_sectors {
            first_fat + i as u32
        } else {
            FREE
        };
        header.extend(id.to_le_bytes());
    }
    let mut file = header;
    for sector in sectors {
        file.extend(sector);
    }
    file.extend(fat.iter().flat_map(|v| v.to_le_bytes()));
    file
}

fn entry(name: &str, kind: u8, start: u32, size: usize, child: u32, right: u32) -> Vec<u8> {
    let mut out: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    out.extend([0, 0]);
    let name_length = u16::try_from(out.len()).unwrap();
    out.resize(64, 0);
    out.extend(name_length.to_le_bytes());
    out.push(kind);
    out.push(1);
    out.extend(NO_ENTRY.to_le_bytes());
    out.extend(right.to_le_bytes());
    out.extend(child.to_le_bytes());
    out.resize(116, 0);
    out.extend(start.to_le_bytes());
    out.extend(u32::try_from(size).unwrap().to_le_bytes());
    out.extend(0u32.to_le_bytes());
    out
}

/// The first allocation sector, as the header's DIFAT names it.
fn first_fat_sector(file: &[u8]) -> u32 {
    u32::from_le_bytes(file[76..80].try_into().unwrap())
}

/// Sets the allocation table's entry for `sector` (the table's first sector holding it).
fn set_fat(file: &mut [u8], fat: u32, sector: u32, next: u32) {
    let at = (fat as usize + 1) * 512 + sector as usize * 4;
    file[at..at + 4].copy_from_slice(&next.to_le_bytes());
}

/// Where the second stream (`Filler`) starts, from its directory entry.
fn filler_start(file: &[u8]) -> u32 {
    let directory = u32::from_le_bytes(file[48..52].try_into().unwrap()) as usize;
    let at = (directory + 1) * 512 + 2 * 128 + 116;
    u32::from_le_bytes(file[at..at + 4].try_into().unwrap())
}

/// Sets directory entry `index`'s stream size (in the directory's first sector).
fn set_entry_size(file: &mut [u8], index: usize, size: u32) {
    let directory = u32::from_le_bytes(file[48..52].try_into().unwrap()) as usize;
    let at = (directory + 1) * 512 + index * 128 + 120;
    file[at..at + 4].copy_from_slice(&size.to_le_bytes());
}

//! Walking one container member by member: ZIP (its directory first, so from a seekable
//! source), TAR (a stream of headers and data) and gzip (a stream), nested in any order. Each
//! member's first bytes decide what it is, not its name. A member that needs random access (a
//! ZIP inside an archive) is spooled to an anonymous temporary file, so memory stays bounded
//! whatever the sizes; everything else streams.

use std::io::{self, Cursor, Read, Seek};
use std::rc::Rc;

use flate2::read::MultiGzDecoder;

use crate::limits::{Budget, Compressed, Counted, Meter, reached};
use crate::odf::Package;
use crate::sink::{MAX_NAME, TableRead};
use crate::{Limits, Sink, Skip};

/// A container the walk opens, as the object's first bytes show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    Zip,
    Tar,
    /// A gzip stream holding a TAR (`.tar.gz`, `.tgz`). A gzip of anything else is read by
    /// detection itself, as a stream.
    TarGz,
    /// A bzip2 stream (`.bz2`, `.tar.bz2`): inflated here, whatever it holds.
    Bzip2,
    /// A Zstandard stream (`.zst`, `.tar.zst`): inflated here, whatever it holds.
    Zstd,
    /// A Parquet file: a container of columns, read column by column.
    Parquet,
    /// An Avro object container file: records, read field by field.
    Avro,
    /// A PDF: pages, read line by line.
    Pdf,
    /// An OLE2 compound file: an Excel 97–2003 workbook (XLS) is read cell by cell; any other
    /// (a Word or PowerPoint 97–2003 file) is skipped `unsupported_format`.
    Cfb,
}

impl Container {
    pub fn as_str(self) -> &'static str {
        match self {
            Container::Zip => "zip",
            Container::Tar => "tar",
            Container::TarGz => "tar.gz",
            Container::Bzip2 => "bzip2",
            Container::Zstd => "zstd",
            Container::Parquet => "parquet",
            Container::Avro => "avro",
            Container::Pdf => "pdf",
            Container::Cfb => "cfb",
        }
    }
}

/// Bytes of an object's head that [`container`] needs to tell a TAR (its magic is at 257).
pub const HEAD: usize = 512;

/// The container the object is, from its first bytes (at least [`HEAD`] of them when the
/// object is that long), or `None` when it is no container.
pub fn container(head: &[u8]) -> Option<Container> {
    match kind(head) {
        Kind::Zip => Some(Container::Zip),
        Kind::Tar => Some(Container::Tar),
        Kind::Bzip2 => Some(Container::Bzip2),
        Kind::Zstd => Some(Container::Zstd),
        Kind::Parquet => Some(Container::Parquet),
        Kind::Avro => Some(Container::Avro),
        Kind::Pdf => Some(Container::Pdf),
        Kind::Cfb => Some(Container::Cfb),
        Kind::Gzip => {
            let mut inflated = Vec::with_capacity(HEAD);
            // A truncated head inflates to what it holds; an error is no container, and
            // detection reports the corrupt gzip itself.
            let _ = MultiGzDecoder::new(head)
                .take(HEAD as u64)
                .read_to_end(&mut inflated);
            (kind(&inflated) == Kind::Tar).then_some(Container::TarGz)
        }
        Kind::Leaf => None,
    }
}

/// What a walk read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Members handed to the sink.
    pub members: u64,
    /// Members or remains of containers reported skipped.
    pub skipped: u64,
}

/// Reads every member of `source`, which is a `container`, into `sink`, within `limits`.
/// `name` is the object's, the first element of every path. An error means the container
/// could not be opened at all (nothing was read); once a member was read, a later problem is
/// a skip, and the members before it keep what the sink made of them.
pub fn walk<R: Read + Seek + Send + 'static>(
    source: R,
    container: Container,
    name: &str,
    limits: Limits,
    sink: &mut dyn Sink,
) -> Result<Report, Skip> {
    let mut walk = Walk {
        limits,
        budget: Rc::new(Budget::default()),
        sink,
        path: vec![bounded(name)],
        depth: 1,
        members: 0,
        handed: 0,
        stopped: false,
        report: Report::default(),
    };
    let result = match container {
        Container::Zip => walk.zip(source),
        Container::Tar => walk.tar(source),
        Container::Parquet => walk.parquet(source),
        Container::Avro => walk.avro(source),
        Container::Pdf => walk.pdf(source),
        Container::Cfb => walk.xls(source),
        Container::TarGz => {
            let (input, count) = Counted::new(source);
            let inflated = walk.meter(MultiGzDecoder::new(input), Compressed::Counted(count));
            walk.tar(inflated)
        }
        // The object is one compressed stream: what it holds is opened at the object's own
        // path, a TAR walked, anything else handed to the sink as the object's content.
        Container::Bzip2 | Container::Zstd => {
            let layer = match container {
                Container::Bzip2 => Skip::CorruptBzip2,
                _ => Skip::CorruptZstd,
            };
            let mut source = source;
            walk.open(&mut source, layer)
        }
    };
    match result {
        Ok(()) => Ok(walk.report),
        // Nothing reached the sink: the object was not read at all.
        Err(skip) if walk.members == 0 && walk.handed == 0 => Err(skip),
        Err(skip) => {
            walk.skip_here(skip);
            Ok(walk.report)
        }
    }
}

/// The largest window a Zstandard frame may ask for: every standard level up to 19 uses at
/// most 8 MiB; a frame that asks for more (long mode, or a hostile header) would make the
/// decoder hold that much, and is refused as `corrupt_zstd`.
const MAX_ZSTD_WINDOW: u64 = 32 << 20;

/// The most of a pax extended header read for a member's path.
const MAX_PAX: u64 = 64 << 10;

/// What a member's first bytes say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Zip,
    Tar,
    Gzip,
    Bzip2,
    Zstd,
    Parquet,
    Avro,
    Pdf,
    Cfb,
    Leaf,
}

fn kind(head: &[u8]) -> Kind {
    if head.starts_with(b"PAR1") {
        Kind::Parquet
    } else if head.starts_with(b"Obj\x01") {
        Kind::Avro
    } else if head.starts_with(b"%PDF-") {
        Kind::Pdf
    } else if head.starts_with(&crate::cfb::MAGIC) {
        Kind::Cfb
    } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Kind::Zip
    } else if head.get(257..262) == Some(b"ustar") {
        Kind::Tar
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Kind::Gzip
    } else if head.starts_with(b"BZh") && head.get(3).is_some_and(|b| (b'1'..=b'9').contains(b)) {
        Kind::Bzip2
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Kind::Zstd
    } else {
        Kind::Leaf
    }
}

struct Walk<'s> {
    limits: Limits,
    budget: Rc<Budget>,
    sink: &'s mut dyn Sink,
    path: Vec<String>,
    /// Containers open around the current member, the object included.
    depth: usize,
    members: u64,
    /// Contents handed to the sink, read to their end or not.
    handed: u64,
    stopped: bool,
    report: Report,
}

impl Walk<'_> {
    fn meter<R: Read>(&self, inner: R, compressed: Compressed) -> Meter<R> {
        Meter::new(inner, self.budget.clone(), self.limits, compressed)
    }

    /// Counts one more member; past the limit, reports it and stops the walk.
    fn count(&mut self, name: &str) -> bool {
        self.members += 1;
        if self.members > self.limits.max_members {
            self.path.push(name.to_owned());
            self.skip_here(Skip::ArchiveMembers);
            self.path.pop();
            return false;
        }
        true
    }

    fn skip_here(&mut self, reason: Skip) {
        self.sink.skipped(&self.path, reason);
        self.report.skipped += 1;
        if reason.stops_the_object() {
            self.stopped = true;
        }
    }

    fn zip<R: Read + Seek>(&mut self, mut source: R) -> Result<(), Skip> {
        // A member's header may claim more compressed bytes than the whole file holds, which
        // would let it inflate past any ratio: the file's length caps the claim.
        let length = source
            .seek(io::SeekFrom::End(0))
            .and_then(|length| source.rewind().map(|()| length))
            .map_err(|e| reached(&e).unwrap_or(Skip::CorruptZip))?;
        let mut archive = zip::ZipArchive::new(source).map_err(|e| zip_skip(&e))?;
        if let Some(office) = office(&mut archive) {
            return self.office(archive, length, office);
        }
        for i in 0..archive.len() {
            if self.stopped {
                break;
            }
            let name = archive
                .name_for_index(i)
                .and_then(Result::ok)
                .map_or_else(|| format!("#{i}"), |name| bounded(&name));
            if name.ends_with('/') {
                continue;
            }
            if !self.count(&name) {
                break;
            }
            match archive.by_index(i) {
                Ok(file) => {
                    let compressed = match file.compression() {
                        zip::CompressionMethod::Stored => Compressed::Stored,
                        _ => Compressed::Known(file.compressed_size().min(length)),
                    };
                    let metered = self.meter(file, compressed);
                    // A ZIP's members are independent: one that fails leaves the next readable.
                    let _ = self.member(name, metered, Skip::CorruptZip);
                }
                Err(e) => {
                    self.path.push(name);
                    self.skip_here(zip_skip(&e));
                    self.path.pop();
                }
            }
        }
        Ok(())
    }

    fn tar<R: Read>(&mut self, source: R) -> Result<(), Skip> {
        let mut archive = tar::Archive::new(source);
        // Raw entries: the long names and pax headers come to this walk, which reads at most
        // MAX_NAME or MAX_PAX of them, instead of being read whole into memory.
        let entries = archive
            .entries()
            .map_err(|e| reached(&e).unwrap_or(Skip::CorruptTar))?
            .raw(true);
        let mut long_name: Option<String> = None;
        for entry in entries {
            if self.stopped {
                break;
            }
            let mut entry = entry.map_err(|e| reached(&e).unwrap_or(Skip::CorruptTar))?;
            let kind = entry.header().entry_type();
            if kind.is_gnu_longname() {
                let name = read_at_most(&mut entry, MAX_NAME as u64)?;
                let name = name.split(|&b| b == 0).next().unwrap_or_default();
                long_name = Some(bounded(&String::from_utf8_lossy(name)));
                continue;
            }
            if kind.is_pax_local_extensions() {
                let pax = read_at_most(&mut entry, MAX_PAX)?;
                long_name = pax_path(&pax).or(long_name);
                continue;
            }
            if kind.is_gnu_longlink() || kind.is_pax_global_extensions() {
                continue;
            }
            let name = long_name.take();
            if !(kind.is_file() || kind.is_contiguous()) {
                continue;
            }
            let name =
                name.unwrap_or_else(|| bounded(&String::from_utf8_lossy(&entry.path_bytes())));
            if !self.count(&name) {
                break;
            }
            // The TAR's own stream failed under the member (it is cut or corrupt): no entry
            // follows, and the cut is reported once, at the member.
            if self.member(name, &mut entry, Skip::CorruptTar) == Some(Skip::CorruptTar) {
                break;
            }
        }
        Ok(())
    }

    /// Reads a Parquet file's columns into the sink.
    fn parquet<R: Read + Seek + Send + 'static>(&mut self, source: R) -> Result<(), Skip> {
        let read = crate::columnar::read(source, self.limits, &self.path, &mut *self.sink)?;
        self.table(read);
        Ok(())
    }

    /// Reads an Avro file's records into the sink.
    fn avro(&mut self, source: impl Read) -> Result<(), Skip> {
        let read = crate::avro::read(source, self.limits, &self.path, &mut *self.sink)?;
        self.table(read);
        Ok(())
    }

    /// Reads a PDF's pages into the sink.
    fn pdf<R: Read + Seek>(&mut self, source: R) -> Result<(), Skip> {
        let read = crate::pdf::child::read(source, self.limits, &self.path, &mut *self.sink)?;
        self.table(read);
        Ok(())
    }

    /// Reads an XLS workbook's sheets into the sink.
    fn xls<R: Read + Seek>(&mut self, source: R) -> Result<(), Skip> {
        let read = crate::xls::read(source, self.limits, &self.path, &mut *self.sink)?;
        self.table(read);
        Ok(())
    }

    /// Reads an office file (a workbook, a document, a presentation) into the sink, its
    /// parts' declared sizes checked first.
    fn office<R: Read + Seek>(
        &mut self,
        mut archive: zip::ZipArchive<R>,
        length: u64,
        office: Office,
    ) -> Result<(), Skip> {
        self.check_parts(&mut archive, length)?;
        let allowance = crate::sheet::allowance(length, self.limits);
        let (path, sink) = (&self.path, &mut *self.sink);
        let read = match office {
            Office::Workbook { binary } => {
                let mut source = archive.into_inner();
                source.rewind().map_err(|_| Skip::CorruptSpreadsheet)?;
                crate::sheet::read(source, binary, allowance, path, sink)?
            }
            Office::Word => crate::document::read(&mut archive, true, path, sink),
            Office::PowerPoint => crate::document::read(&mut archive, false, path, sink),
            Office::OpenDocument(package) => {
                if crate::odf::encrypted(&mut archive) {
                    return Err(Skip::EncryptedOffice);
                }
                match package {
                    Package::Spreadsheet => crate::ods::read(&mut archive, allowance, path, sink)?,
                    Package::Text | Package::Presentation => {
                        let presentation = package == Package::Presentation;
                        crate::document::read_odf(&mut archive, presentation, path, sink)
                    }
                }
            }
        };
        self.table(read);
        Ok(())
    }

    /// Checks an Office document's parts' declared sizes, which the ZIP reader holds them to,
    /// before any is inflated.
    fn check_parts<R: Read + Seek>(
        &self,
        archive: &mut zip::ZipArchive<R>,
        length: u64,
    ) -> Result<(), Skip> {
        let mut parts = Vec::with_capacity(archive.len());
        for i in 0..archive.len() {
            let part = archive.by_index_raw(i).map_err(|e| zip_skip(&e))?;
            parts.push((
                part.size(),
                part.compressed_size(),
                part.name()
                    .is_ok_and(|name| crate::sheet::held_whole(&name)),
            ));
        }
        crate::sheet::check(parts.into_iter(), length, self.limits)
    }

    /// Counts a table file that was read as a member, and what it left unread, once per
    /// reason, as skips of the file.
    fn table(&mut self, read: TableRead) {
        if read.handed {
            self.handed += 1;
        }
        self.report.members += 1;
        for skip in read.skips {
            self.skip_here(skip);
        }
    }

    /// Reads one member, whatever it is; a problem is reported as its skip, and returned.
    fn member(&mut self, name: String, mut content: impl Read, layer: Skip) -> Option<Skip> {
        self.path.push(name);
        let skip = self.open(&mut content, layer).err();
        if let Some(skip) = skip {
            self.skip_here(skip);
        }
        self.path.pop();
        skip
    }

    /// Opens the member at the end of the path: a container is walked, a gzip stream
    /// inflated and opened again, anything else handed to the sink.
    fn open(&mut self, content: &mut dyn Read, layer: Skip) -> Result<(), Skip> {
        let head = peek(content).map_err(|e| reached(&e).unwrap_or(layer))?;
        let kind = kind(&head);
        // A table file holds columns, not members: it is no level of nesting.
        let nests = !matches!(
            kind,
            Kind::Leaf | Kind::Parquet | Kind::Avro | Kind::Pdf | Kind::Cfb
        );
        if nests {
            if self.depth >= self.limits.max_depth {
                return Err(Skip::ArchiveDepth);
            }
            self.depth += 1;
        }
        let whole = Cursor::new(head).chain(content);
        let result = match kind {
            Kind::Zip => self.spool(whole, layer).and_then(|file| self.zip(file)),
            Kind::Parquet => self.spool(whole, layer).and_then(|file| self.parquet(file)),
            Kind::Pdf => self.spool(whole, layer).and_then(|file| self.pdf(file)),
            Kind::Cfb => self.spool(whole, layer).and_then(|file| self.xls(file)),
            // Avro's header comes first and its blocks follow: it streams.
            Kind::Avro => self.avro(whole),
            Kind::Tar => self.tar(whole),
            Kind::Gzip => {
                let (input, count) = Counted::new(whole);
                let mut inflated =
                    self.meter(MultiGzDecoder::new(input), Compressed::Counted(count));
                self.open(&mut inflated, Skip::CorruptGzip)
            }
            Kind::Bzip2 => {
                let (input, count) = Counted::new(whole);
                let decoder = bzip2::read::MultiBzDecoder::new(input);
                let mut inflated = self.meter(decoder, Compressed::Counted(count));
                self.open(&mut inflated, Skip::CorruptBzip2)
            }
            Kind::Zstd => {
                let (input, count) = Counted::new(whole);
                match ruzstd::decoding::StreamingDecoder::new_with_max_window_size(
                    input,
                    MAX_ZSTD_WINDOW,
                ) {
                    Ok(decoder) => {
                        let mut inflated = self.meter(decoder, Compressed::Counted(count));
                        self.open(&mut inflated, Skip::CorruptZstd)
                    }
                    Err(_) => Err(Skip::CorruptZstd),
                }
            }
            Kind::Leaf => {
                let name = inner_name(self.path.last().map_or("", String::as_str));
                let mut whole = whole;
                self.handed += 1;
                let read = self.sink.member(&self.path, &name, &mut whole);
                read.map(|()| self.report.members += 1)
                    .map_err(|e| reached(&e).unwrap_or(layer))
            }
        };
        if nests {
            self.depth -= 1;
        }
        result
    }

    /// Writes a member to an anonymous temporary file (gone when closed, or when the process
    /// dies), for a format whose directory is at its end.
    fn spool(&self, mut content: impl Read, layer: Skip) -> Result<std::fs::File, Skip> {
        let mut file = tempfile::tempfile().map_err(|_| Skip::Spool)?;
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(reached(&e).unwrap_or(layer)),
            };
            io::Write::write_all(&mut file, &buf[..n]).map_err(|_| Skip::Spool)?;
        }
        file.rewind().map_err(|_| Skip::Spool)?;
        Ok(file)
    }
}

/// An office file a ZIP is, read as such rather than member by member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Office {
    /// XLSX or XLSM, or (`binary`) XLSB.
    Workbook {
        binary: bool,
    },
    Word,
    PowerPoint,
    OpenDocument(Package),
}

/// The office file `archive` is, by the part its format always has.
fn office<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> Option<Office> {
    let markers = [
        (crate::sheet::WORKBOOK, Office::Workbook { binary: false }),
        (
            crate::sheet::BINARY_WORKBOOK,
            Office::Workbook { binary: true },
        ),
        (crate::document::WORD, Office::Word),
        (crate::document::POWERPOINT, Office::PowerPoint),
    ];
    markers
        .into_iter()
        .find(|(marker, _)| archive.index_for_name(marker).is_some())
        .map(|(_, office)| office)
        .or_else(|| crate::odf::package(archive).map(Office::OpenDocument))
}

/// Up to [`HEAD`] bytes from the start of `content`, fewer only at its end.
fn peek(content: &mut dyn Read) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; HEAD];
    let mut filled = 0;
    while filled < HEAD {
        match content.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(filled);
    Ok(head)
}

/// At most `max` bytes of a tar entry's data; the walk skips the rest.
fn read_at_most(entry: &mut impl Read, max: u64) -> Result<Vec<u8>, Skip> {
    let mut data = Vec::new();
    entry
        .take(max)
        .read_to_end(&mut data)
        .map_err(|e| reached(&e).unwrap_or(Skip::CorruptTar))?;
    Ok(data)
}

/// The `path` record of a pax extended header (`<length> path=<value>\n` records).
fn pax_path(pax: &[u8]) -> Option<String> {
    let mut rest = pax;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ')?;
        let length: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
        if length <= space || length > rest.len() {
            return None;
        }
        let record = &rest[space + 1..length];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(path) = record.strip_prefix(b"path=") {
            return Some(bounded(&String::from_utf8_lossy(path)));
        }
        rest = &rest[length..];
    }
    None
}

/// `name` cut to [`MAX_NAME`] bytes at a character boundary.
fn bounded(name: &str) -> String {
    if name.len() <= MAX_NAME {
        return name.to_owned();
    }
    let mut end = MAX_NAME;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// The name of what a compressed member holds: `app.log` for `app.log.gz` or `app.log.zst`,
/// `x.tar` for `x.tgz`.
fn inner_name(name: &str) -> String {
    if let Some(stem) = name.strip_suffix(".tgz").or(name.strip_suffix(".tbz2")) {
        return format!("{stem}.tar");
    }
    [".gz", ".bz2", ".zst"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
        .to_owned()
}

fn zip_skip(e: &zip::result::ZipError) -> Skip {
    use zip::result::ZipError;
    match e {
        ZipError::Io(e) => reached(e).unwrap_or(Skip::CorruptZip),
        ZipError::UnsupportedArchive(ZipError::PASSWORD_REQUIRED) => Skip::EncryptedZip,
        ZipError::UnsupportedArchive(_) | ZipError::CompressionMethodNotSupported(_) => {
            Skip::UnsupportedCompression
        }
        _ => Skip::CorruptZip,
    }
}

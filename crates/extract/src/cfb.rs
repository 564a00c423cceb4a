//! OLE2 compound files (MS-CFB), the container of Office 97–2003 files: enough of one to list
//! the streams at its root and read one of them sector by sector. A compound file is a small
//! file system (a header, an allocation table of sector chains, a directory), and every one of
//! its numbers is the file's to lie about: each chain is followed at most as many steps as the
//! file has sectors, so a loop ends as an error instead of a hang, and nothing is held but the
//! allocation tables (four bytes per sector) and one sector at a time.

use std::io::{self, Read, Seek, SeekFrom};

/// The first bytes of every compound file.
pub(crate) const MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// The header's own bytes; in a file of 4,096-byte sectors the rest of the first sector is
/// padding.
const HEADER: usize = 512;
/// Sector ids past this one are markers (end of chain, free), not sectors.
const MAX_SECTOR: u32 = 0xFFFF_FFFA;
/// A directory sibling or child id meaning "none".
const NO_ENTRY: u32 = 0xFFFF_FFFF;
/// A directory entry's bytes.
const ENTRY: u64 = 128;
/// Streams shorter than this live in the mini stream, in 64-byte sectors (MS-CFB 2.2: both
/// are fixed by the format).
const MINI_CUTOFF: u64 = 4096;
const MINI_SECTOR: u64 = 64;
/// The most entries at the root the walk of the directory tree visits: an Office file has a
/// handful; a hostile one is no reason to read thousands.
const MAX_ROOT_ENTRIES: usize = 4096;

/// A compound file that cannot be read: its header, a chain or its directory is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt;

impl From<io::Error> for Corrupt {
    fn from(_: io::Error) -> Self {
        Corrupt
    }
}

/// One stream at the root of the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub name: String,
    start: u32,
    pub size: u64,
}

/// An open compound file: its allocation table and where its directory and mini stream are.
pub(crate) struct Compound<R> {
    source: R,
    /// Where `source` is, so that reading the next sector of a contiguous chain needs no seek.
    at: u64,
    sector: u64,
    /// Sectors the file holds after its header.
    sectors: u32,
    fat: Vec<u32>,
    /// The directory's sectors, in order.
    directory: Vec<u32>,
    mini_fat_start: u32,
    mini_fat_sectors: u32,
    /// The root entry's chain, which holds the mini stream.
    mini_stream: (u32, u64),
}

impl<R: Read + Seek> Compound<R> {
    /// Reads the header and the allocation table of the compound file `source`.
    pub(crate) fn open(mut source: R) -> Result<Self, Corrupt> {
        let length = source.seek(SeekFrom::End(0))?;
        source.seek(SeekFrom::Start(0))?;
        let mut header = [0u8; HEADER];
        source.read_exact(&mut header)?;
        if header[..8] != MAGIC || le16(&header, 32) != 6 {
            return Err(Corrupt);
        }
        let sector: u64 = match le16(&header, 30) {
            9 => 512,
            12 => 4096,
            _ => return Err(Corrupt),
        };
        let sectors = u32::try_from((length / sector).saturating_sub(1)).map_err(|_| Corrupt)?;
        let mut file = Self {
            source,
            at: HEADER as u64,
            sector,
            sectors,
            fat: Vec::new(),
            directory: Vec::new(),
            mini_fat_start: le32(&header, 60),
            mini_fat_sectors: le32(&header, 64),
            mini_stream: (0, 0),
        };
        file.fat = file.allocation_table(&header)?;
        file.directory = file.chain(le32(&header, 48))?;
        let root = file.entry(0)?;
        file.mini_stream = (le32(&root, 116), file.size(&root));
        Ok(file)
    }

    /// The allocation table: the sectors the DIFAT names (109 in the header, the rest in its
    /// own chain), read in order, as many as the file's sectors need.
    fn allocation_table(&mut self, header: &[u8; HEADER]) -> Result<Vec<u32>, Corrupt> {
        let per_sector = (self.sector / 4) as usize;
        // Past the sectors the file holds, an allocation table says nothing.
        let needed = (self.sectors as usize).div_ceil(per_sector);
        let mut fat_sectors: Vec<u32> = (0..109)
            .map(|i| le32(header, 76 + 4 * i))
            .filter(|&id| id < MAX_SECTOR)
            .collect();
        let mut next = le32(header, 68);
        let mut steps = 0u32;
        while next < MAX_SECTOR && fat_sectors.len() < needed {
            steps += 1;
            if steps > self.sectors {
                return Err(Corrupt);
            }
            let difat = self.read_sector(next)?;
            fat_sectors.extend(
                (0..per_sector - 1)
                    .map(|i| le32(&difat, 4 * i))
                    .filter(|&id| id < MAX_SECTOR),
            );
            next = le32(&difat, 4 * (per_sector - 1));
        }
        fat_sectors.truncate(needed);
        let mut fat = Vec::with_capacity(fat_sectors.len() * per_sector);
        for id in fat_sectors {
            let sector = self.read_sector(id)?;
            fat.extend((0..per_sector).map(|i| le32(&sector, 4 * i)));
        }
        Ok(fat)
    }

    /// The streams at the root of the directory whose names are among `names` (compared as
    /// the format does, without case), found by walking the root's tree of children.
    pub(crate) fn root_streams(&mut self, names: &[&str]) -> Result<Vec<Entry>, Corrupt> {
        let root = self.entry(0)?;
        let mut found = Vec::new();
        let mut pending = vec![le32(&root, 76)];
        let mut visited = 0usize;
        while let Some(id) = pending.pop() {
            if id == NO_ENTRY {
                continue;
            }
            visited += 1;
            // A tree of more nodes than this is a loop or a hostile file.
            if visited > MAX_ROOT_ENTRIES {
                return Err(Corrupt);
            }
            let entry = self.entry(id)?;
            pending.push(le32(&entry, 68));
            pending.push(le32(&entry, 72));
            // Type 2 is a stream; storages (1) hold streams of their own, not the file's.
            if entry[66] != 2 {
                continue;
            }
            let name = entry_name(&entry);
            if names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                found.push(Entry {
                    name,
                    start: le32(&entry, 116),
                    size: self.size(&entry),
                });
            }
        }
        Ok(found)
    }

    /// A stream's bytes, as a reader.
    pub(crate) fn stream(&mut self, entry: &Entry) -> Result<Stream<'_, R>, Corrupt> {
        if entry.size < MINI_CUTOFF {
            let small = self.small_stream(entry)?;
            return Ok(Stream::Small(io::Cursor::new(small)));
        }
        Ok(Stream::Chain(Chain {
            next: entry.start,
            left: entry.size,
            steps: 0,
            sector: Vec::new(),
            at: 0,
            file: self,
        }))
    }

    /// A stream under [`MINI_CUTOFF`] bytes, read whole from the mini stream.
    fn small_stream(&mut self, entry: &Entry) -> Result<Vec<u8>, Corrupt> {
        // The table needs four bytes for each mini sector the mini stream holds, whatever the
        // header claims: a claim past that would have the whole file read as the table.
        let needed = self.mini_stream.1.div_ceil(MINI_SECTOR).saturating_mul(4);
        let mini_fat = self.chain_bytes(
            self.mini_fat_start,
            u64::from(self.mini_fat_sectors)
                .saturating_mul(self.sector)
                .min(needed.next_multiple_of(self.sector.max(1))),
        )?;
        let mini_fat: Vec<u32> = (0..mini_fat.len() / 4)
            .map(|i| le32(&mini_fat, 4 * i))
            .collect();
        let holder = self.chain(self.mini_stream.0)?;
        let mut bytes = Vec::with_capacity(entry.size as usize);
        let mut next = entry.start;
        while (bytes.len() as u64) < entry.size && next < MAX_SECTOR {
            let offset = u64::from(next) * MINI_SECTOR;
            if offset + MINI_SECTOR > self.mini_stream.1 {
                return Err(Corrupt);
            }
            let index = usize::try_from(offset / self.sector).map_err(|_| Corrupt)?;
            let sector = *holder.get(index).ok_or(Corrupt)?;
            let mut mini = [0u8; MINI_SECTOR as usize];
            self.read_at(self.offset(sector) + offset % self.sector, &mut mini)?;
            let take = (entry.size - bytes.len() as u64).min(MINI_SECTOR) as usize;
            bytes.extend_from_slice(&mini[..take]);
            next = *mini_fat.get(next as usize).ok_or(Corrupt)?;
        }
        Ok(bytes)
    }

    /// The sectors of the chain starting at `start`, in order.
    fn chain(&mut self, start: u32) -> Result<Vec<u32>, Corrupt> {
        let mut chain = Vec::new();
        let mut next = start;
        while next < MAX_SECTOR {
            if chain.len() >= self.sectors as usize {
                return Err(Corrupt);
            }
            chain.push(next);
            next = self.next(next)?;
        }
        Ok(chain)
    }

    /// At most `size` bytes of the chain starting at `start`.
    fn chain_bytes(&mut self, start: u32, size: u64) -> Result<Vec<u8>, Corrupt> {
        let mut bytes = Vec::new();
        for id in self.chain(start)? {
            if bytes.len() as u64 >= size {
                break;
            }
            bytes.extend_from_slice(&self.read_sector(id)?);
        }
        bytes.truncate(size.min(bytes.len() as u64) as usize);
        Ok(bytes)
    }

    /// Directory entry `id`, found by walking the directory's chain.
    fn entry(&mut self, id: u32) -> Result<[u8; ENTRY as usize], Corrupt> {
        let per_sector = self.sector / ENTRY;
        let index = usize::try_from(u64::from(id) / per_sector).map_err(|_| Corrupt)?;
        let sector = *self.directory.get(index).ok_or(Corrupt)?;
        let mut entry = [0u8; ENTRY as usize];
        let within = u64::from(id) % per_sector * ENTRY;
        self.read_at(self.offset(sector) + within, &mut entry)?;
        Ok(entry)
    }

    /// An entry's stream size; a file of 512-byte sectors keeps only the low 32 bits, and its
    /// writers may leave anything in the high ones (MS-CFB 2.6.3).
    fn size(&self, entry: &[u8]) -> u64 {
        let low = u64::from(le32(entry, 120));
        if self.sector == 512 {
            low
        } else {
            low | u64::from(le32(entry, 124)) << 32
        }
    }

    fn next(&self, sector: u32) -> Result<u32, Corrupt> {
        self.fat.get(sector as usize).copied().ok_or(Corrupt)
    }

    fn offset(&self, sector: u32) -> u64 {
        (u64::from(sector) + 1) * self.sector
    }

    fn read_sector(&mut self, id: u32) -> Result<Vec<u8>, Corrupt> {
        if id >= self.sectors {
            return Err(Corrupt);
        }
        let mut sector = vec![0u8; self.sector as usize];
        self.read_at(self.offset(id), &mut sector)?;
        Ok(sector)
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), Corrupt> {
        if offset != self.at {
            self.source.seek(SeekFrom::Start(offset))?;
        }
        self.source.read_exact(buf)?;
        self.at = offset + buf.len() as u64;
        Ok(())
    }
}

/// A stream of a compound file.
pub(crate) enum Stream<'c, R> {
    /// A stream of the mini stream, read whole (it is under 4 KiB).
    Small(io::Cursor<Vec<u8>>),
    Chain(Chain<'c, R>),
}

/// A stream in sectors of its own, read one sector at a time along its chain.
pub(crate) struct Chain<'c, R> {
    file: &'c mut Compound<R>,
    next: u32,
    /// Bytes of the stream's declared size not read yet.
    left: u64,
    steps: u32,
    sector: Vec<u8>,
    at: usize,
}

impl<R: Read + Seek> Read for Stream<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Small(cursor) => cursor.read(buf),
            Stream::Chain(chain) => chain.read(buf),
        }
    }
}

impl<R: Read + Seek> Chain<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.sector.len() {
            // A chain that ends before the declared size is a short stream, as readers take it.
            if self.left == 0 || self.next >= MAX_SECTOR {
                return Ok(0);
            }
            self.steps += 1;
            if self.steps > self.file.sectors {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "sector loop"));
            }
            let corrupt = |_| io::Error::new(io::ErrorKind::InvalidData, "broken chain");
            self.sector = self.file.read_sector(self.next).map_err(corrupt)?;
            self.next = self.file.next(self.next).map_err(corrupt)?;
            let keep = (self.sector.len() as u64).min(self.left) as usize;
            self.sector.truncate(keep);
            self.left -= keep as u64;
            self.at = 0;
        }
        let n = buf.len().min(self.sector.len() - self.at);
        buf[..n].copy_from_slice(&self.sector[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A directory entry's name: UTF-16, its length in bytes (the closing NUL included) after it.
fn entry_name(entry: &[u8]) -> String {
    let length = (le16(entry, 64) as usize).min(64).saturating_sub(2);
    let units = (0..length / 2).map(|i| le16(entry, 2 * i));
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// The little-endian `u16` at `at`, or 0 past the end: every caller reads a fixed layout from
/// a buffer of that layout's size.
fn le16(bytes: &[u8], at: usize) -> u16 {
    bytes
        .get(at..at + 2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

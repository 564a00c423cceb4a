//! The limits one object's walk runs under, and the reader that enforces them on every byte a
//! decompressor hands out.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

use crate::Skip;

/// What one object's walk may read. The defaults are those of the issue that introduced the
/// reading layer, after Macie's: ten nested levels, a million members, 1 GiB decompressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Archives inside the object, the object itself counted: 1 reads an archive's members
    /// but no archive among them.
    pub max_depth: usize,
    /// Members read or skipped across every level.
    pub max_members: u64,
    /// Bytes every decompression of the object may hand out in all (a ZIP's member, a gzip
    /// stream, nested ones each counted), and bytes spooled for random access.
    pub max_bytes: u64,
    /// The most a member may inflate, as a multiple of its compressed bytes, once it has
    /// inflated past [`RATIO_GRACE`]. Deflate tops out near 1,032:1; business files of text
    /// reach tens to a few hundred.
    pub max_ratio: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: 10,
            max_members: 1_000_000,
            max_bytes: 1 << 30,
            max_ratio: 250,
        }
    }
}

/// Bytes a member may inflate before its ratio is checked: a small file of one repeated line
/// compresses far past any ratio and harms nobody.
pub const RATIO_GRACE: u64 = 1 << 20;

/// A limit reached while reading, carried through `io::Error` so that it survives every
/// decompressor and parser between the meter and whoever reads.
#[derive(Debug)]
pub(crate) struct Reached(pub Skip);

impl std::fmt::Display for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "limit reached: {}", self.0)
    }
}

impl std::error::Error for Reached {}

/// The limit `e` carries, if a meter raised it.
pub(crate) fn reached(e: &io::Error) -> Option<Skip> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<Reached>())
        .map(|r| r.0)
}

/// The decompressed bytes one object's walk has handed out so far, shared by its meters.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    used: Cell<u64>,
}

/// How many compressed bytes a metered member came from.
#[derive(Debug, Clone)]
pub(crate) enum Compressed {
    /// Not compressed: the ratio is 1.
    Stored,
    /// A ZIP member's compressed size, from its header.
    Known(u64),
    /// A stream's input, counted as the decompressor reads it.
    Counted(Rc<Cell<u64>>),
}

/// A reader that counts what it hands out against the object's budget and the member's ratio.
pub(crate) struct Meter<R> {
    inner: R,
    budget: Rc<Budget>,
    limits: Limits,
    compressed: Compressed,
    produced: u64,
}

impl<R: Read> Meter<R> {
    pub(crate) fn new(
        inner: R,
        budget: Rc<Budget>,
        limits: Limits,
        compressed: Compressed,
    ) -> Self {
        Self {
            inner,
            budget,
            limits,
            compressed,
            produced: 0,
        }
    }
}

impl<R: Read> Read for Meter<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let n64 = n as u64;
        self.produced += n64;
        let used = self.budget.used.get() + n64;
        self.budget.used.set(used);
        if used > self.limits.max_bytes {
            return Err(io::Error::other(Reached(Skip::ArchiveBytes)));
        }
        let from = match &self.compressed {
            Compressed::Stored => None,
            Compressed::Known(bytes) => Some(*bytes),
            Compressed::Counted(count) => Some(count.get()),
        };
        if let Some(from) = from
            && self.produced > RATIO_GRACE
            && self.produced > from.max(1).saturating_mul(self.limits.max_ratio)
        {
            return Err(io::Error::other(Reached(Skip::CompressionRatio)));
        }
        Ok(n)
    }
}

/// A reader that counts the bytes read through it: a decompressor's input.
pub(crate) struct Counted<R> {
    pub(crate) inner: R,
    pub(crate) count: Rc<Cell<u64>>,
}

impl<R> Counted<R> {
    /// `inner`, counted, and the count a meter reads as the compressed bytes.
    pub(crate) fn new(inner: R) -> (Self, Rc<Cell<u64>>) {
        let count = Rc::new(Cell::new(0));
        (
            Self {
                inner,
                count: count.clone(),
            },
            count,
        )
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

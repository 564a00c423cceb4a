//! A column chunk's pages, read and inflated here under bounds and handed to the `parquet`
//! crate's column reader, which decodes their levels and values. Each header is read first
//! ([`super::header`]), so that no page larger than [`MAX_PAGE`], or inflating past the
//! object's ratio, is ever allocated; every codec is bounded by the size its header claims.

use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::errors::ParquetError;

use super::header::{self, Header, Problem};
use crate::limits::{RATIO_GRACE, Reached};
use crate::{Limits, Skip};

/// What a Parquet file is read from: the object, or a member spooled to a file.
pub(crate) trait Source: Read + Seek + Send {}

impl<T: Read + Seek + Send> Source for T {}

pub(crate) type Shared = Arc<Mutex<dyn Source>>;

/// The largest page, inflated, that is read. Writers cut pages at about 1 MiB (arrow, Spark,
/// parquet-mr); a page this large is a hostile header, or a table no scan should hold at once.
pub(crate) const MAX_PAGE: usize = 64 << 20;

/// The most levels (values and nulls) the pages fetched for one read of a repeated column may
/// hold: a list whose one row spans pages would otherwise grow the reader's buffers without
/// bound, since a row is read whole.
pub(crate) const MAX_LEVELS_PER_READ: u64 = 2 << 20;

/// The longest page header read: statistics of long strings make them large, never this.
const MAX_HEADER: usize = 1 << 20;

/// The largest Zstandard window a page may ask for, as the walk's own streams.
const MAX_ZSTD_WINDOW: u64 = 32 << 20;

/// The codecs a page may be compressed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    None,
    Snappy,
    Gzip,
    Brotli,
    /// The deprecated `LZ4`: Hadoop's framing around LZ4 blocks, or one raw block.
    Lz4,
    Lz4Raw,
    Zstd,
}

impl Codec {
    pub(crate) fn of(compression: Compression) -> Result<Self, Skip> {
        Ok(match compression {
            Compression::UNCOMPRESSED => Codec::None,
            Compression::SNAPPY => Codec::Snappy,
            Compression::GZIP(_) => Codec::Gzip,
            Compression::BROTLI(_) => Codec::Brotli,
            Compression::LZ4 => Codec::Lz4,
            Compression::LZ4_RAW => Codec::Lz4Raw,
            Compression::ZSTD(_) => Codec::Zstd,
            Compression::LZO => return Err(Skip::UnsupportedCompression),
        })
    }
}

/// The pages of one column chunk.
pub(crate) struct Pages {
    source: Shared,
    offset: u64,
    remaining: u64,
    codec: Codec,
    max_ratio: u64,
    /// Levels of the pages fetched since the reader last reset it; `None` for a column
    /// without repetition, whose reads hold at most the records asked for.
    levels: Option<Arc<AtomicU64>>,
    /// The next page's header and its length, read ahead for the column reader's peek.
    peeked: Option<(Header, usize)>,
}

impl Pages {
    pub(crate) fn new(
        source: Shared,
        (offset, length): (u64, u64),
        codec: Codec,
        limits: Limits,
        levels: Option<Arc<AtomicU64>>,
    ) -> Self {
        Self {
            source,
            offset,
            remaining: length,
            codec,
            max_ratio: limits.max_ratio,
            levels,
            peeked: None,
        }
    }

    fn read_at(&self, at: u64, length: usize) -> Result<Vec<u8>, Skip> {
        let mut bytes = vec![0u8; length];
        let mut source = self.source.lock().map_err(|_| Skip::CorruptParquet)?;
        source
            .seek(SeekFrom::Start(at))
            .and_then(|_| source.read_exact(&mut bytes))
            .map_err(|_| Skip::CorruptParquet)?;
        Ok(bytes)
    }

    /// The next page's header and its length, read in growing pieces.
    fn header(&self) -> Result<(Header, usize), Skip> {
        let mut want = 4 << 10;
        loop {
            let length = want.min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
            let bytes = self.read_at(self.offset, length)?;
            match header::read(&bytes) {
                Ok(read) => return Ok(read),
                Err(Problem::Short) if length < self.remaining as usize && want < MAX_HEADER => {
                    want *= 16;
                }
                Err(Problem::Short) if want >= MAX_HEADER => return Err(Skip::ParquetLimit),
                Err(_) => return Err(Skip::CorruptParquet),
            }
        }
    }

    /// The next header of a page of values (an index page is passed over), read ahead and
    /// kept until its page is read.
    fn peek(&mut self) -> Result<Option<&Header>, Skip> {
        while self.peeked.is_none() {
            if self.remaining == 0 {
                return Ok(None);
            }
            let (header, length) = self.header()?;
            if matches!(header.kind, 0 | 2 | 3) {
                self.peeked = Some((header, length));
            } else {
                // An index page, or a kind a later format may add: not values.
                let whole = u64::try_from(header.compressed)
                    .ok()
                    .and_then(|c| c.checked_add(length as u64))
                    .filter(|&whole| whole <= self.remaining)
                    .ok_or(Skip::CorruptParquet)?;
                self.offset += whole;
                self.remaining -= whole;
            }
        }
        Ok(self.peeked.as_ref().map(|(header, _)| header))
    }

    fn next(&mut self) -> Result<Option<Page>, Skip> {
        self.peek()?;
        let Some((header, length)) = self.peeked.take() else {
            return Ok(None);
        };
        let compressed = usize::try_from(header.compressed).map_err(|_| Skip::CorruptParquet)?;
        let uncompressed =
            usize::try_from(header.uncompressed).map_err(|_| Skip::CorruptParquet)?;
        let whole = (length as u64)
            .checked_add(compressed as u64)
            .filter(|&whole| whole <= self.remaining)
            .ok_or(Skip::CorruptParquet)?;
        let at = self.offset + length as u64;
        self.offset += whole;
        self.remaining -= whole;
        if uncompressed > MAX_PAGE || compressed > MAX_PAGE {
            return Err(Skip::ParquetLimit);
        }
        let raw = self.read_at(at, compressed)?;
        if header.crc.is_some_and(|crc| crc != crc32fast::hash(&raw)) {
            return Err(Skip::CorruptParquet);
        }
        self.page(&header, &raw, uncompressed).map(Some)
    }

    fn page(&self, header: &Header, raw: &[u8], uncompressed: usize) -> Result<Page, Skip> {
        let corrupt = |_| Skip::CorruptParquet;
        match (header.kind, header.data, header.dictionary, header.data_v2) {
            (0, Some(data), _, _) => {
                self.count(data.values)?;
                Ok(Page::DataPage {
                    buf: self.inflate(raw, uncompressed)?,
                    num_values: u32::try_from(data.values).map_err(corrupt)?,
                    encoding: encoding(data.encoding)?,
                    def_level_encoding: encoding(data.def_encoding)?,
                    rep_level_encoding: encoding(data.rep_encoding)?,
                    statistics: None,
                })
            }
            (2, _, Some(dictionary), _) => {
                // Every dictionary value takes a byte at least: more values than bytes would
                // have the decoder allocate for values that are not there.
                if u64::try_from(dictionary.values).map_err(corrupt)? > uncompressed as u64 {
                    return Err(Skip::CorruptParquet);
                }
                Ok(Page::DictionaryPage {
                    buf: self.inflate(raw, uncompressed)?,
                    num_values: u32::try_from(dictionary.values).map_err(corrupt)?,
                    encoding: encoding(dictionary.encoding)?,
                    is_sorted: dictionary.sorted,
                })
            }
            (3, _, _, Some(v2)) => {
                self.count(v2.values)?;
                // The levels lead the page uncompressed; the values after them may be.
                let levels = usize::try_from(v2.def_length)
                    .ok()
                    .zip(usize::try_from(v2.rep_length).ok())
                    .and_then(|(d, r)| d.checked_add(r))
                    .filter(|&l| l <= raw.len() && l <= uncompressed)
                    .ok_or(Skip::CorruptParquet)?;
                let buf = if v2.compressed && self.codec != Codec::None {
                    let values = inflate(
                        self.codec,
                        &raw[levels..],
                        uncompressed - levels,
                        self.max_ratio,
                    )?;
                    let mut buf = Vec::with_capacity(uncompressed);
                    buf.extend_from_slice(&raw[..levels]);
                    buf.extend_from_slice(&values);
                    Bytes::from(buf)
                } else if raw.len() == uncompressed {
                    Bytes::copy_from_slice(raw)
                } else {
                    return Err(Skip::CorruptParquet);
                };
                Ok(Page::DataPageV2 {
                    buf,
                    num_values: u32::try_from(v2.values).map_err(corrupt)?,
                    encoding: encoding(v2.encoding)?,
                    num_nulls: u32::try_from(v2.nulls).map_err(corrupt)?,
                    num_rows: u32::try_from(v2.rows).map_err(corrupt)?,
                    def_levels_byte_len: u32::try_from(v2.def_length).map_err(corrupt)?,
                    rep_levels_byte_len: u32::try_from(v2.rep_length).map_err(corrupt)?,
                    is_compressed: v2.compressed,
                    statistics: None,
                })
            }
            _ => Err(Skip::CorruptParquet),
        }
    }

    fn inflate(&self, raw: &[u8], uncompressed: usize) -> Result<Bytes, Skip> {
        if self.codec == Codec::None {
            if raw.len() != uncompressed {
                return Err(Skip::CorruptParquet);
            }
            return Ok(Bytes::copy_from_slice(raw));
        }
        inflate(self.codec, raw, uncompressed, self.max_ratio).map(Bytes::from)
    }

    /// Counts a data page's levels against what one read of a repeated column may hold.
    fn count(&self, values: i32) -> Result<(), Skip> {
        let values = u64::try_from(values).map_err(|_| Skip::CorruptParquet)?;
        if let Some(levels) = &self.levels
            && levels.fetch_add(values, Ordering::Relaxed) + values > MAX_LEVELS_PER_READ
        {
            return Err(Skip::ParquetLimit);
        }
        Ok(())
    }
}

/// `raw` inflated with `codec` to exactly `expected` bytes, never more: a page that inflates
/// past its ratio is a bomb, one that inflates to another size is corrupt.
pub(crate) fn inflate(
    codec: Codec,
    raw: &[u8],
    expected: usize,
    max_ratio: u64,
) -> Result<Vec<u8>, Skip> {
    if expected as u64 > RATIO_GRACE
        && expected as u64 > (raw.len() as u64).saturating_mul(max_ratio)
    {
        return Err(Skip::CompressionRatio);
    }
    let corrupt = |_| Skip::CorruptParquet;
    let exact = |out: Vec<u8>| {
        if out.len() == expected {
            Ok(out)
        } else {
            Err(Skip::CorruptParquet)
        }
    };
    let bounded = |mut reader: Box<dyn Read + '_>| {
        let mut out = Vec::with_capacity(expected);
        reader
            .by_ref()
            .take(expected as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|_| Skip::CorruptParquet)?;
        exact(out)
    };
    match codec {
        Codec::None => exact(raw.to_vec()),
        Codec::Snappy => {
            if snap::raw::decompress_len(raw).map_err(corrupt)? != expected {
                return Err(Skip::CorruptParquet);
            }
            let mut out = vec![0u8; expected];
            let n = snap::raw::Decoder::new()
                .decompress(raw, &mut out)
                .map_err(corrupt)?;
            out.truncate(n);
            exact(out)
        }
        Codec::Gzip => bounded(Box::new(flate2::read::MultiGzDecoder::new(raw))),
        Codec::Brotli => bounded(Box::new(brotli_decompressor::Decompressor::new(raw, 4096))),
        Codec::Zstd => {
            let decoder =
                ruzstd::decoding::StreamingDecoder::new_with_max_window_size(raw, MAX_ZSTD_WINDOW)
                    .map_err(|_| Skip::CorruptParquet)?;
            bounded(Box::new(decoder))
        }
        Codec::Lz4Raw => lz4_block(raw, expected),
        Codec::Lz4 => hadoop_lz4(raw, expected).or_else(|_| lz4_block(raw, expected)),
    }
}

fn lz4_block(raw: &[u8], expected: usize) -> Result<Vec<u8>, Skip> {
    let mut out = vec![0u8; expected];
    let n = lz4_flex::block::decompress_into(raw, &mut out).map_err(|_| Skip::CorruptParquet)?;
    if n != expected {
        return Err(Skip::CorruptParquet);
    }
    Ok(out)
}

/// Hadoop's LZ4 framing: blocks, each behind its inflated and compressed sizes (big-endian).
fn hadoop_lz4(mut raw: &[u8], expected: usize) -> Result<Vec<u8>, Skip> {
    let mut out = Vec::with_capacity(expected);
    while !raw.is_empty() {
        let size = |b: &[u8]| {
            b.get(..4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .ok_or(Skip::CorruptParquet)
        };
        let inflated = size(raw)?;
        let compressed = size(raw.get(4..).unwrap_or_default())?;
        let block = raw
            .get(8..8usize.saturating_add(compressed))
            .ok_or(Skip::CorruptParquet)?;
        if out.len() + inflated > expected {
            return Err(Skip::CorruptParquet);
        }
        out.extend_from_slice(&lz4_block(block, inflated)?);
        raw = &raw[8 + compressed..];
    }
    if out.len() != expected {
        return Err(Skip::CorruptParquet);
    }
    Ok(out)
}

#[allow(deprecated, reason = "BIT_PACKED levels are still in old files")]
fn encoding(code: i32) -> Result<Encoding, Skip> {
    Ok(match code {
        0 => Encoding::PLAIN,
        2 => Encoding::PLAIN_DICTIONARY,
        3 => Encoding::RLE,
        4 => Encoding::BIT_PACKED,
        5 => Encoding::DELTA_BINARY_PACKED,
        6 => Encoding::DELTA_LENGTH_BYTE_ARRAY,
        7 => Encoding::DELTA_BYTE_ARRAY,
        8 => Encoding::RLE_DICTIONARY,
        9 => Encoding::BYTE_STREAM_SPLIT,
        _ => return Err(Skip::CorruptParquet),
    })
}

/// A skip as the column reader carries it back: inside its error, to be found again.
pub(crate) fn carried(skip: Skip) -> ParquetError {
    ParquetError::External(Box::new(Reached(skip)))
}

/// The skip a column reader's error carries, or `corrupt_parquet` for its own.
pub(crate) fn skip_of(e: &ParquetError) -> Skip {
    match e {
        ParquetError::External(inner) => inner
            .downcast_ref::<Reached>()
            .map_or(Skip::CorruptParquet, |r| r.0),
        _ => Skip::CorruptParquet,
    }
}

impl Iterator for Pages {
    type Item = parquet::errors::Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for Pages {
    fn get_next_page(&mut self) -> parquet::errors::Result<Option<Page>> {
        Pages::next(self).map_err(|skip| {
            // Nothing after a bad page can be found in this chunk.
            self.remaining = 0;
            carried(skip)
        })
    }

    fn peek_next_page(&mut self) -> parquet::errors::Result<Option<PageMetadata>> {
        let header = self.peek().map_err(carried)?;
        Ok(header.map(|h| PageMetadata {
            num_rows: h.data_v2.map(|v2| v2.rows.max(0) as usize),
            num_levels: h
                .data
                .map(|d| d.values)
                .or(h.data_v2.map(|v2| v2.values))
                .map(|v| v.max(0) as usize),
            is_dict: h.kind == 2,
        }))
    }

    fn skip_next_page(&mut self) -> parquet::errors::Result<()> {
        Err(ParquetError::NYI("pages are read in order".into()))
    }
}

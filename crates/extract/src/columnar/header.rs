//! A Parquet page header, read here rather than by the `parquet` crate: its sizes decide what
//! is allocated and inflated, so they are checked before a byte of the page is read. The
//! header is a Thrift struct in the compact protocol; only the fields a page needs are kept,
//! everything else (statistics, checksums, index pages) is skipped, nested at most
//! [`MAX_NESTING`] deep.

/// What the header says of its page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Header {
    /// `PageType`: 0 data, 1 index, 2 dictionary, 3 data v2.
    pub kind: i32,
    pub uncompressed: i32,
    pub compressed: i32,
    /// The CRC-32 of the page's bytes as stored, when the writer put one.
    pub crc: Option<u32>,
    pub data: Option<Data>,
    pub dictionary: Option<Dictionary>,
    pub data_v2: Option<DataV2>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Data {
    pub values: i32,
    pub encoding: i32,
    pub def_encoding: i32,
    pub rep_encoding: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Dictionary {
    pub values: i32,
    pub encoding: i32,
    pub sorted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DataV2 {
    pub values: i32,
    pub nulls: i32,
    pub rows: i32,
    pub encoding: i32,
    pub def_length: i32,
    pub rep_length: i32,
    pub compressed: bool,
}

impl Default for DataV2 {
    fn default() -> Self {
        Self {
            values: 0,
            nulls: 0,
            rows: 0,
            encoding: 0,
            def_length: 0,
            rep_length: 0,
            compressed: true,
        }
    }
}

/// Why a header could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Problem {
    /// The bytes end inside it: read more and try again.
    Short,
    /// It is not a page header.
    Corrupt,
}

/// Structs and containers inside one another past this are a hostile header.
const MAX_NESTING: usize = 16;

/// The header at the start of `bytes`, and its length.
pub(super) fn read(bytes: &[u8]) -> Result<(Header, usize), Problem> {
    let mut input = Input { bytes, at: 0 };
    let mut header = Header {
        kind: -1,
        uncompressed: -1,
        compressed: -1,
        crc: None,
        data: None,
        dictionary: None,
        data_v2: None,
    };
    input.fields(0, |input, id, ty| {
        match (id, ty) {
            (1, I32) => header.kind = input.int()?,
            (2, I32) => header.uncompressed = input.int()?,
            (3, I32) => header.compressed = input.int()?,
            (4, I32) => header.crc = Some(input.int()? as u32),
            (5, STRUCT) => {
                let mut data = Data::default();
                input.fields(1, |input, id, ty| {
                    match (id, ty) {
                        (1, I32) => data.values = input.int()?,
                        (2, I32) => data.encoding = input.int()?,
                        (3, I32) => data.def_encoding = input.int()?,
                        (4, I32) => data.rep_encoding = input.int()?,
                        _ => input.skip(ty, 1)?,
                    }
                    Ok(())
                })?;
                header.data = Some(data);
            }
            (7, STRUCT) => {
                let mut dictionary = Dictionary::default();
                input.fields(1, |input, id, ty| {
                    match (id, ty) {
                        (1, I32) => dictionary.values = input.int()?,
                        (2, I32) => dictionary.encoding = input.int()?,
                        (3, TRUE) => dictionary.sorted = true,
                        _ => input.skip(ty, 1)?,
                    }
                    Ok(())
                })?;
                header.dictionary = Some(dictionary);
            }
            (8, STRUCT) => {
                let mut v2 = DataV2::default();
                input.fields(1, |input, id, ty| {
                    match (id, ty) {
                        (1, I32) => v2.values = input.int()?,
                        (2, I32) => v2.nulls = input.int()?,
                        (3, I32) => v2.rows = input.int()?,
                        (4, I32) => v2.encoding = input.int()?,
                        (5, I32) => v2.def_length = input.int()?,
                        (6, I32) => v2.rep_length = input.int()?,
                        (7, FALSE) => v2.compressed = false,
                        _ => input.skip(ty, 1)?,
                    }
                    Ok(())
                })?;
                header.data_v2 = Some(v2);
            }
            _ => input.skip(ty, 0)?,
        }
        Ok(())
    })?;
    if header.kind < 0 || header.uncompressed < 0 || header.compressed < 0 {
        return Err(Problem::Corrupt);
    }
    Ok((header, input.at))
}

// The compact protocol's type codes.
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> Result<u8, Problem> {
        let b = *self.bytes.get(self.at).ok_or(Problem::Short)?;
        self.at += 1;
        Ok(b)
    }

    fn advance(&mut self, n: u64) -> Result<(), Problem> {
        let n = usize::try_from(n).map_err(|_| Problem::Corrupt)?;
        let end = self.at.checked_add(n).ok_or(Problem::Corrupt)?;
        if end > self.bytes.len() {
            return Err(Problem::Short);
        }
        self.at = end;
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, Problem> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Problem::Corrupt)
    }

    /// A zigzag varint that must fit an `i32`.
    fn int(&mut self) -> Result<i32, Problem> {
        let raw = self.varint()?;
        let value = (raw >> 1) as i64 ^ -((raw & 1) as i64);
        i32::try_from(value).map_err(|_| Problem::Corrupt)
    }

    /// Reads a struct's fields to its stop byte, handing each field's id and type to `field`,
    /// which reads or skips its value.
    fn fields(
        &mut self,
        depth: usize,
        mut field: impl FnMut(&mut Self, i16, u8) -> Result<(), Problem>,
    ) -> Result<(), Problem> {
        if depth > MAX_NESTING {
            return Err(Problem::Corrupt);
        }
        let mut last: i16 = 0;
        loop {
            let b = self.byte()?;
            if b == 0 {
                return Ok(());
            }
            let ty = b & 0x0f;
            let delta = i16::from(b >> 4);
            let id = if delta == 0 {
                i16::try_from(self.int()?).map_err(|_| Problem::Corrupt)?
            } else {
                last.checked_add(delta).ok_or(Problem::Corrupt)?
            };
            last = id;
            field(self, id, ty)?;
        }
    }

    /// Skips one value of type `ty`.
    fn skip(&mut self, ty: u8, depth: usize) -> Result<(), Problem> {
        if depth > MAX_NESTING {
            return Err(Problem::Corrupt);
        }
        match ty {
            TRUE | FALSE => Ok(()),
            BYTE => self.advance(1),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.advance(8),
            UUID => self.advance(16),
            BINARY => {
                let n = self.varint()?;
                self.advance(n)
            }
            LIST | SET => {
                let b = self.byte()?;
                let element = b & 0x0f;
                let size = match b >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.elements(element, size, depth)
            }
            MAP => {
                let size = self.varint()?;
                if size == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                for _ in 0..size {
                    self.element(types >> 4, depth)?;
                    self.element(types & 0x0f, depth)?;
                }
                Ok(())
            }
            STRUCT => self.fields(depth + 1, |input, _, ty| input.skip(ty, depth + 1)),
            _ => Err(Problem::Corrupt),
        }
    }

    fn elements(&mut self, element: u8, size: u64, depth: usize) -> Result<(), Problem> {
        // Each element takes a byte at least: a size past the bytes left is a lie, and
        // looping over it would be a hang.
        if size > (self.bytes.len() - self.at) as u64 {
            return Err(Problem::Short);
        }
        for _ in 0..size {
            self.element(element, depth)?;
        }
        Ok(())
    }

    /// One element of a list, set or map: a boolean there takes a byte of its own.
    fn element(&mut self, ty: u8, depth: usize) -> Result<(), Problem> {
        match ty {
            TRUE | FALSE => self.advance(1),
            _ => self.skip(ty, depth + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data page header as parquet-mr and arrow-rs write it, statistics included.
    fn written() -> Vec<u8> {
        let mut h = vec![
            0x15, 0x00, // 1: type = DATA_PAGE (0)
            0x15, 0xa0, 0x1f, // 2: uncompressed = 2000
            0x15, 0xd0, 0x0f, // 3: compressed = 1000
            0x2c, // 5: data page header (delta 2, struct)
            0x15, 0x64, // 1: num_values = 50
            0x15, 0x10, // 2: encoding = 8 (RLE_DICTIONARY)
            0x15, 0x06, // 3: def encoding = 3 (RLE)
            0x15, 0x06, // 4: rep encoding = 3
            0x1c, // 5: statistics (struct)
            0x18, 0x03, b'a', b'b', b'c', // 1: binary "abc"
            0x19, 0x25, 0x02, 0x04, // 2: list of 2 i32
            0x00, // end of statistics
            0x00, // end of data page header
            0x00, // end of page header
        ];
        h.extend_from_slice(b"page bytes");
        h
    }

    #[test]
    fn a_data_page_header_is_read_and_the_rest_skipped() {
        let bytes = written();
        let (header, length) = read(&bytes).expect("header");
        assert_eq!(length, bytes.len() - b"page bytes".len());
        assert_eq!(
            (header.kind, header.uncompressed, header.compressed),
            (0, 2000, 1000)
        );
        assert_eq!(
            header.data,
            Some(Data {
                values: 50,
                encoding: 8,
                def_encoding: 3,
                rep_encoding: 3
            })
        );
    }

    #[test]
    fn a_cut_header_asks_for_more_and_a_bad_one_is_corrupt() {
        let bytes = written();
        for cut in 0..bytes.len() - b"page bytes".len() {
            assert_eq!(read(&bytes[..cut]), Err(Problem::Short), "cut at {cut}");
        }
        // An unknown type code, a negative size, a list claiming more elements than bytes.
        assert_eq!(read(&[0x1e, 0x00]), Err(Problem::Corrupt));
        assert_eq!(
            read(&[0x15, 0x00, 0x15, 0x01, 0x15, 0x02, 0x00]),
            Err(Problem::Corrupt)
        );
        assert_eq!(read(&[0x19, 0xf5, 0xff, 0xff, 0x0f]), Err(Problem::Short));
        // Structs nested past the bound.
        let mut deep = vec![0x1c; MAX_NESTING + 2];
        deep.extend(vec![0x00; MAX_NESTING + 2]);
        assert_eq!(read(&deep), Err(Problem::Corrupt));
    }
}

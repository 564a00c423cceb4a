//! Office Open XML packages (XLSX and XLSM workbooks, DOCX documents) written again with some
//! values changed. A package is a ZIP of XML parts; only the parts holding a changed value are
//! written anew, each changed in place (a cell, a text element) with every other byte of it
//! kept, and every other part is copied as it was compressed, in its place, with its name,
//! time and attributes. What a rewrite writes is read back before it is handed over: a
//! document that would not read as meant is refused, never written.

pub(crate) mod cells;
pub(crate) mod runs;
pub(crate) mod strings;
pub(crate) mod word;
pub(crate) mod workbook;

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};
use std::ops::Range;

use zip::{ZipArchive, ZipWriter};

use crate::Limits;
use crate::edit::Refusal;

/// The largest part a rewrite holds in memory to change it: a sheet of a million rows of a
/// dozen columns is some 200 MiB of XML; anything larger is refused as past the limits.
pub(crate) const MAX_PART: u64 = 256 << 20;

/// A package opened for a rewrite, its parts' declared sizes checked as a scan checks them
/// before any is inflated.
pub(crate) struct Package<'a> {
    archive: ZipArchive<Cursor<&'a [u8]>>,
    /// The package's length: what its new one starts from.
    length: usize,
}

impl<'a> Package<'a> {
    pub fn open(bytes: &'a [u8], limits: Limits) -> Result<Self, Refusal> {
        let mut archive = ZipArchive::new(Cursor::new(bytes)).map_err(|_| Refusal::Unreadable)?;
        let mut parts = Vec::with_capacity(archive.len());
        for i in 0..archive.len() {
            let part = archive.by_index_raw(i).map_err(|_| Refusal::Unreadable)?;
            let held = part
                .name()
                .is_ok_and(|name| crate::sheet::held_whole(&name));
            parts.push((part.size(), part.compressed_size(), held));
        }
        crate::sheet::check(parts.into_iter(), bytes.len() as u64, limits)
            .map_err(|_| Refusal::Unreadable)?;
        Ok(Self {
            archive,
            length: bytes.len(),
        })
    }

    /// The names of its parts, in the ZIP's order.
    pub fn names(&self) -> Vec<String> {
        self.archive
            .file_names()
            .filter_map(Result::ok)
            .map(|name| name.into_owned())
            .collect()
    }

    /// The name a part is stored under: `name` itself, or one that differs from it only in
    /// case or in its separators, as `calamine` finds parts.
    pub fn stored_name(&self, name: &str) -> Option<String> {
        if self.archive.index_for_name(name).is_some() {
            return Some(name.to_owned());
        }
        self.names()
            .into_iter()
            .find(|stored| stored.replace('\\', "/").eq_ignore_ascii_case(name))
    }

    /// Part `name` inflated, or `None` when the package has none.
    pub fn part(&mut self, name: &str) -> Result<Option<Vec<u8>>, Refusal> {
        let Some(index) = self.archive.index_for_name(name) else {
            return Ok(None);
        };
        let file = self
            .archive
            .by_index(index)
            .map_err(|_| Refusal::Unreadable)?;
        if file.size() > MAX_PART {
            return Err(Refusal::Unreadable);
        }
        let mut out = Vec::with_capacity(usize::try_from(file.size()).unwrap_or(0));
        file.take(MAX_PART + 1)
            .read_to_end(&mut out)
            .map_err(|_| Refusal::Unreadable)?;
        if out.len() as u64 > MAX_PART {
            return Err(Refusal::Unreadable);
        }
        Ok(Some(out))
    }

    /// The package again: each part of `changed` with its new content, compressed as it was
    /// and dated as it was; every other part copied as it was compressed (`raw_copy_file`),
    /// in the same order, and the archive's comment kept.
    pub fn write(mut self, changed: &BTreeMap<String, Vec<u8>>) -> Result<Vec<u8>, Refusal> {
        let mut writer = ZipWriter::new(Cursor::new(Vec::with_capacity(self.length)));
        let mut written = 0;
        for i in 0..self.archive.len() {
            let file = self
                .archive
                .by_index_raw(i)
                .map_err(|_| Refusal::Unreadable)?;
            let content = file
                .name()
                .ok()
                .and_then(|name| Some((name.to_string(), changed.get(name.as_ref())?)));
            match content {
                Some((name, content)) => {
                    let options = file.options();
                    drop(file);
                    writer
                        .start_file(name, options)
                        .map_err(|_| Refusal::Write)?;
                    writer.write_all(content).map_err(|_| Refusal::Write)?;
                    written += 1;
                }
                None => writer.raw_copy_file(file).map_err(|_| Refusal::Write)?,
            }
        }
        if written != changed.len() {
            return Err(Refusal::Write);
        }
        writer
            .set_raw_comment(self.archive.comment().into())
            .map_err(|_| Refusal::Write)?;
        let out = writer.finish().map_err(|_| Refusal::Write)?.into_inner();
        // What was written opens as a ZIP of as many parts.
        let reopened = ZipArchive::new(Cursor::new(out.as_slice())).map_err(|_| Refusal::Write)?;
        if reopened.len() != self.archive.len() {
            return Err(Refusal::Write);
        }
        Ok(out)
    }
}

/// New bytes for a range of a part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Splice {
    pub range: Range<usize>,
    pub bytes: Vec<u8>,
}

/// `xml` with each splice's range replaced by its bytes; two that overlap refuse the rewrite.
pub(crate) fn spliced(xml: &[u8], mut splices: Vec<Splice>) -> Result<Vec<u8>, Refusal> {
    splices.sort_by_key(|s| (s.range.start, s.range.end));
    let grown: usize = splices.iter().map(|s| s.bytes.len()).sum();
    let mut out = Vec::with_capacity(xml.len() + grown);
    let mut at = 0;
    for splice in &splices {
        let kept = xml.get(at..splice.range.start).ok_or(Refusal::Write)?;
        if splice.range.end < splice.range.start || splice.range.end > xml.len() {
            return Err(Refusal::Write);
        }
        out.extend_from_slice(kept);
        out.extend_from_slice(&splice.bytes);
        at = splice.range.end;
    }
    out.extend_from_slice(xml.get(at..).ok_or(Refusal::Write)?);
    Ok(out)
}

/// `text` as XML character data: `&`, `<` and `>` escaped, and a carriage return written as a
/// reference, since a parser reads a literal one as a line feed.
pub(crate) fn escape(text: &str, out: &mut Vec<u8>) {
    for c in text.chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '\r' => out.extend_from_slice(b"&#13;"),
            c => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

/// Whether text written into an element loses spaces at its ends unless the element says
/// `xml:space="preserve"`.
pub(crate) fn needs_preserve(text: &str) -> bool {
    let space = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    text.starts_with(space) || text.ends_with(space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_replace_their_ranges_and_refuse_to_overlap() {
        let xml = b"<t>536-22-4871</t>";
        let splices = vec![
            Splice {
                range: 3..14,
                bytes: b"a&amp;b".to_vec(),
            },
            Splice {
                range: 2..2,
                bytes: b" x=\"1\"".to_vec(),
            },
        ];
        assert_eq!(spliced(xml, splices).unwrap(), b"<t x=\"1\">a&amp;b</t>");
        let overlapping = vec![
            Splice {
                range: 3..10,
                bytes: Vec::new(),
            },
            Splice {
                range: 5..12,
                bytes: Vec::new(),
            },
        ];
        assert_eq!(spliced(xml, overlapping), Err(Refusal::Write));
    }

    #[test]
    fn text_is_escaped_as_character_data() {
        let mut out = Vec::new();
        escape("a<b>&c\r\n\"'é", &mut out);
        assert_eq!(out, "a&lt;b&gt;&amp;c&#13;\n\"'é".as_bytes());
        assert!(needs_preserve(" and"));
        assert!(!needs_preserve("a b"));
    }
}

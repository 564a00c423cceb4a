//! A sheet's cells changed in its XML, found where `calamine` finds them (a cell's own
//! reference, or the row's and the cell's place when it has none) and changed by their type:
//!
//! - an inline string (`t="inlineStr"`) in its text elements, in place;
//! - a shared string (`t="s"`) in this cell only, since other cells may share it: the cell
//!   becomes an inline string holding the shared string's runs with the change made, and the
//!   shared strings part is left as it was;
//! - a formula's text result (`t="str"`) and a number are refused when the cell holds a
//!   formula; a text result without one is changed in its value;
//! - a number (`t="n"`, or no type) only replaced whole by a number, and only where it shows
//!   as itself: a date, a time or a percentage is a number shown otherwise, and refused;
//! - a boolean, an error or an ISO date is refused.
//!
//! Every other byte of the sheet, a changed cell's style (`s`) and other attributes included,
//! stays as it was.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use quick_xml::events::{BytesStart, Event};

use super::strings::{self, Item};
use super::{Splice, escape, runs, spliced};
use crate::edit::{Edited, Refusal};

/// A cell by its 1-based row and its 0-based column, as the reader hands them.
pub(crate) type Key = (u64, u32);

/// A cell to change, as the sheet's XML has it.
#[derive(Debug)]
pub(crate) struct Cell {
    /// Its start tag, `<c r="B2" s="1" t="s">`, written again with its type an inline string.
    tag: Range<usize>,
    inline_tag: Vec<u8>,
    /// The prefix of its elements' names (`""` for none).
    prefix: String,
    kind: Option<String>,
    formula: bool,
    /// Its `<v>` element whole, its content, and that content's text.
    value: Option<(Range<usize>, Range<usize>, String)>,
    /// Its `<is>` element's content.
    inline: Option<Range<usize>>,
}

impl Cell {
    /// The index of the shared string the cell shows, if it shows one.
    pub fn shared(&self) -> Option<usize> {
        match (self.kind.as_deref(), &self.value) {
            (Some("s"), Some((_, _, text))) => text.trim().parse().ok(),
            _ => None,
        }
    }
}

/// What a sheet's change writes: its splices, and the text the reader will read back.
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub splices: Vec<Splice>,
    pub expected: String,
}

/// The cells of `keys` in the sheet `xml`, found as `calamine` finds them.
pub(crate) fn locate<T>(xml: &[u8], keys: &BTreeMap<Key, T>) -> Result<Vec<(Key, Cell)>, Refusal> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let config = reader.config_mut();
    config.expand_empty_elements = true;
    config.check_end_names = false;
    config.trim_text(false);
    let mut buf = Vec::new();
    let (mut row, mut column): (u32, u32) = (0, 0);
    let mut found = Vec::new();
    // `calamine` reads cells from the sheet's data on.
    let mut in_data = false;
    loop {
        let before = position(&reader)?;
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|_| Refusal::Unreadable)?;
        let after = position(&reader)?;
        match event {
            Event::Start(e) if !in_data => in_data = e.local_name().as_ref() == "sheetData",
            Event::Start(e) if e.local_name().as_ref() == "row" => {
                if let Some(r) = attribute(&e, "r") {
                    row = reference(&r).ok_or(Refusal::Unreadable)?.0;
                }
            }
            Event::End(e) if e.local_name().as_ref() == "row" => {
                row = row.checked_add(1).ok_or(Refusal::Unreadable)?;
                column = 0;
            }
            Event::Start(e) if e.local_name().as_ref() == "c" => {
                let at = match attribute(&e, "r") {
                    Some(r) => match reference(&r).ok_or(Refusal::Unreadable)? {
                        (r, Some(c)) => (r, c),
                        (_, None) => return Err(Refusal::Unreadable),
                    },
                    None => (row, column),
                };
                column = at.1;
                let key = (u64::from(at.0) + 1, at.1);
                let wanted = keys.contains_key(&key);
                let cell = children(&mut reader, &e, before..after, wanted)?;
                if let Some(cell) = cell {
                    found.push((key, cell));
                }
                column = column.checked_add(1).ok_or(Refusal::Unreadable)?;
            }
            Event::End(e) if e.local_name().as_ref() == "sheetData" => break,
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(found)
}

/// Reads a cell's children up to its end; the cell when it is `wanted`.
fn children(
    reader: &mut quick_xml::Reader<&[u8]>,
    start: &BytesStart<'_>,
    tag: Range<usize>,
    wanted: bool,
) -> Result<Option<Cell>, Refusal> {
    let name = start.name();
    let prefix = name.prefix().map_or("", |p| p.into_inner()).to_owned();
    let mut cell = Cell {
        tag,
        inline_tag: if wanted { retyped(start)? } else { Vec::new() },
        prefix,
        kind: attribute(start, "t"),
        formula: false,
        value: None,
        inline: None,
    };
    let mut buf = Vec::new();
    let mut depth = 0u32;
    // The child being read: its name, where it starts, where its content starts, its text.
    let mut child: Option<(String, usize, usize, String)> = None;
    loop {
        let before = position(reader)?;
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|_| Refusal::Unreadable)?;
        let after = position(reader)?;
        match event {
            Event::Start(e) => {
                if depth == 0 {
                    let name = e.local_name().as_ref().to_owned();
                    cell.formula |= name == "f";
                    child = Some((name, before, after, String::new()));
                }
                depth += 1;
            }
            Event::End(e) if depth == 0 && e.local_name().as_ref() == "c" => break,
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0
                    && let Some((name, start, content, text)) = child.take()
                {
                    match name.as_str() {
                        "v" => cell.value = Some((start..after, content..before, text)),
                        "is" => cell.inline = Some(content..before),
                        _ => {}
                    }
                }
            }
            Event::Text(t) if depth == 1 => {
                if let Some((_, _, _, text)) = &mut child {
                    text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) if depth == 1 => {
                if let Some((_, _, _, text)) = &mut child {
                    text.push(strings::reference(&r).unwrap_or(char::REPLACEMENT_CHARACTER));
                }
            }
            Event::Eof => return Err(Refusal::Unreadable),
            _ => {}
        }
        buf.clear();
    }
    Ok(wanted.then_some(cell))
}

/// The change `edited` made to `cell` of the sheet `xml`; `shared` is the shared strings part
/// and the content of the string the cell shows, when it shows one.
pub(crate) fn edit(
    xml: &[u8],
    cell: &Cell,
    edited: &Edited,
    shared: Option<(&[u8], Range<usize>)>,
) -> Result<Written, Refusal> {
    if cell.formula {
        return Err(Refusal::Formula);
    }
    match cell.kind.as_deref() {
        Some("s") => {
            let (sst, content) = shared.ok_or(Refusal::Unreadable)?;
            let (whole, _, _) = cell.value.as_ref().ok_or(Refusal::Unreadable)?;
            let item = strings::item(sst, content.clone())?;
            if !item.movable(&cell.prefix) {
                return Err(Refusal::Markup);
            }
            let changed = changed_item(&item, edited)?;
            let local: Vec<Splice> = changed
                .splices
                .into_iter()
                .map(|s| Splice {
                    range: s.range.start - content.start..s.range.end - content.start,
                    bytes: s.bytes,
                })
                .collect();
            let runs = spliced(&sst[content], local)?;
            let p = if cell.prefix.is_empty() {
                String::new()
            } else {
                format!("{}:", cell.prefix)
            };
            let mut bytes = format!("<{p}is>").into_bytes();
            bytes.extend_from_slice(&runs);
            bytes.extend_from_slice(format!("</{p}is>").as_bytes());
            let splices = vec![
                Splice {
                    range: cell.tag.clone(),
                    bytes: cell.inline_tag.clone(),
                },
                Splice {
                    range: whole.clone(),
                    bytes,
                },
            ];
            Ok(Written {
                splices,
                expected: changed.expected,
            })
        }
        Some("inlineStr" | "is") => {
            let content = cell.inline.clone().ok_or(Refusal::Unreadable)?;
            changed_item(&strings::item(xml, content)?, edited)
        }
        Some("str") => {
            let (_, content, text) = cell.value.as_ref().ok_or(Refusal::Unreadable)?;
            same(&strings::unescape(text), &edited.text)?;
            let expected = edited.changed()?;
            let mut bytes = Vec::with_capacity(expected.len());
            escape(&strings::escape(&expected), &mut bytes);
            Ok(Written {
                splices: vec![Splice {
                    range: content.clone(),
                    bytes,
                }],
                expected,
            })
        }
        Some("n") | None => number(cell, edited),
        Some(_) => Err(Refusal::ColumnType),
    }
}

/// A string's change made in its text elements.
fn changed_item(item: &Item, edited: &Edited) -> Result<Written, Refusal> {
    same(&item.text, &edited.text)?;
    let edits: Vec<(Range<usize>, &str)> = edited
        .changes
        .iter()
        .map(|c| (c.start..c.end, c.text.as_str()))
        .collect();
    Ok(Written {
        splices: runs::splices(&item.text, &item.nodes, &edits, true)?,
        expected: edited.changed()?,
    })
}

/// A number replaced whole by the number its change's text is, where the cell shows the
/// number as itself.
fn number(cell: &Cell, edited: &Edited) -> Result<Written, Refusal> {
    let (_, content, text) = cell.value.as_ref().ok_or(Refusal::Unreadable)?;
    let value: f64 = text.parse().map_err(|_| Refusal::ColumnType)?;
    let mut shown = String::new();
    crate::sheet::number(value, &mut shown);
    if shown != edited.text {
        return Err(Refusal::ColumnType);
    }
    let [change] = edited.changes.as_slice() else {
        return Err(Refusal::ColumnType);
    };
    let new: f64 = change.text.parse().map_err(|_| Refusal::ColumnType)?;
    if change.start != 0 || change.end != shown.len() || !new.is_finite() {
        return Err(Refusal::ColumnType);
    }
    // What the cell will show: the number, as a number column's values lose leading zeros.
    let mut expected = String::new();
    crate::sheet::number(new, &mut expected);
    let mut bytes = Vec::new();
    escape(&change.text, &mut bytes);
    Ok(Written {
        splices: vec![Splice {
            range: content.clone(),
            bytes,
        }],
        expected,
    })
}

/// Refuses a cell whose text, as read here, is not what the reader handed the editor.
fn same(text: &str, line: &str) -> Result<(), Refusal> {
    let shown = text.replace(['\n', '\r'], " ");
    if shown == line {
        Ok(())
    } else {
        Err(Refusal::Unreadable)
    }
}

/// The shared strings part's strings of `indices`: each one's content.
pub(crate) fn shared_strings(
    sst: &[u8],
    indices: &[usize],
) -> Result<BTreeMap<usize, Range<usize>>, Refusal> {
    let mut reader = quick_xml::Reader::from_reader(sst);
    let config = reader.config_mut();
    config.expand_empty_elements = true;
    config.check_end_names = false;
    let mut buf = Vec::new();
    let mut index = 0usize;
    let mut open: Option<(String, usize)> = None;
    let mut found = BTreeMap::new();
    loop {
        let before = position(&reader)?;
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|_| Refusal::Unreadable)?;
        let after = position(&reader)?;
        match event {
            Event::Start(e) if open.is_none() && e.local_name().as_ref() == "si" => {
                open = Some((e.name().as_ref().to_owned(), after));
            }
            Event::End(e) => {
                if let Some((name, start)) = &open
                    && e.name().as_ref() == name
                {
                    if indices.contains(&index) {
                        found.insert(index, *start..before);
                    }
                    index += 1;
                    open = None;
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(found)
}

/// A cell's start tag again, its type an inline string's and every other attribute as it was;
/// one whose attributes cannot all be read is not written again.
fn retyped(start: &BytesStart<'_>) -> Result<Vec<u8>, Refusal> {
    let mut tag = format!("<{}", start.name().as_ref());
    let mut typed = false;
    for attribute in start.attributes() {
        let attribute = attribute.map_err(|_| Refusal::Unreadable)?;
        let key = attribute.key.as_ref();
        let value = if key == "t" {
            typed = true;
            Cow::Borrowed("inlineStr")
        } else {
            attribute.value.clone()
        };
        tag.push_str(&format!(" {key}=\"{}\"", value.replace('"', "&quot;")));
    }
    if !typed {
        tag.push_str(" t=\"inlineStr\"");
    }
    tag.push('>');
    Ok(tag.into_bytes())
}

fn attribute(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .map(|a| a.value.into_owned())
}

/// A cell reference's 0-based row and column (`B7` is row 6, column 1), as `calamine` reads
/// one; `None` where it fails to.
fn reference(range: &str) -> Option<(u32, Option<u32>)> {
    let bytes = range.as_bytes();
    let letters = bytes.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let mut column: u32 = 0;
    for b in &bytes[..letters] {
        let digit = u32::from(b.to_ascii_uppercase() - b'A') + 1;
        column = column.checked_mul(26)?.checked_add(digit)?;
    }
    let digits = &bytes[letters..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let row: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((row.checked_sub(1)?, column.checked_sub(1)))
}

fn position<R>(reader: &quick_xml::Reader<R>) -> Result<usize, Refusal> {
    usize::try_from(reader.buffer_position()).map_err(|_| Refusal::Unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_as_calamine_reads_them() {
        assert_eq!(reference("B7"), Some((6, Some(1))));
        assert_eq!(reference("aa1"), Some((0, Some(26))));
        assert_eq!(reference("12"), Some((11, None)));
        assert_eq!(reference("B0"), None);
        assert_eq!(reference("B"), None);
        assert_eq!(reference("ZZZZZZZZZ1"), None);
    }

    #[test]
    fn a_retyped_cell_keeps_every_other_attribute_or_is_refused() {
        let tag = |xml: &str| {
            let mut reader = quick_xml::Reader::from_str(xml);
            match reader.read_event().unwrap() {
                Event::Start(e) => retyped(&e).map(|t| String::from_utf8(t).unwrap()),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            tag(r#"<x:c r="B4" s="3" t="s" cm='a"b'>"#).unwrap(),
            r#"<x:c r="B4" s="3" t="inlineStr" cm="a&quot;b">"#
        );
        assert_eq!(tag(r#"<c r="B4" s="3" s="4">"#), Err(Refusal::Unreadable));
    }
}

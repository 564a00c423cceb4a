//! XLSX and XLSM workbooks written again with some cells changed.
//!
//! The editor sees the cells as a scan saw them: `calamine` reads each sheet, and the sheet
//! reader hands its runs (one column's values, its header as the field) to the editor as it
//! hands them to detection. Each changed cell is then found in its sheet's XML and changed
//! there ([`cells`]); the sheets without a change, the shared strings, the styles and every
//! other part are copied as they were compressed. What was written is read again with
//! `calamine`: every value of a changed sheet must read as it did, and each changed cell as
//! its change made it, or nothing is written.

use std::collections::BTreeMap;
use std::io::Cursor;

use quick_xml::events::Event;

use super::cells::{self, Key};
use super::{Package, spliced};
use crate::edit::{Digest, Edited, Editor, Refusal, ask, field};
use crate::sheet::{Book, Runs};
use crate::{Column, Limits, Sink, Skip, TableUnit};

/// The workbook `bytes` with the changes `editor` asks for; `None` when it asks for none.
pub(crate) fn rewrite(
    bytes: &[u8],
    limits: Limits,
    editor: &mut dyn Editor,
) -> Result<Option<Vec<u8>>, Refusal> {
    let mut package = Package::open(bytes, limits)?;
    let mut sheets = asked(bytes, limits, editor)?;
    if sheets.is_empty() {
        return Ok(None);
    }
    let parts = Parts::of(&mut package)?;
    let mut shared: Option<Vec<u8>> = None;
    let mut changed = BTreeMap::new();
    for sheet in &mut sheets {
        let part = parts.sheets.get(&sheet.name).ok_or(Refusal::Unreadable)?;
        let part = package.stored_name(part).ok_or(Refusal::Unreadable)?;
        let xml = package.part(&part)?.ok_or(Refusal::Unreadable)?;
        let found = cells::locate(&xml, &sheet.edited)?;
        if found.len() != sheet.edited.len() {
            return Err(Refusal::Unreadable);
        }
        let indices: Vec<usize> = found.iter().filter_map(|(_, c)| c.shared()).collect();
        if !indices.is_empty() && shared.is_none() {
            let name = format!("{}sharedStrings.xml", parts.dir);
            let name = package.stored_name(&name).ok_or(Refusal::Unreadable)?;
            shared = package.part(&name)?;
        }
        let sst = shared.as_deref().unwrap_or_default();
        let strings = if indices.is_empty() {
            BTreeMap::new()
        } else {
            cells::shared_strings(sst, &indices)?
        };
        let mut splices = Vec::new();
        for (key, cell) in &found {
            let edited = sheet.edited.get(key).ok_or(Refusal::Unreadable)?;
            let string = match cell.shared() {
                Some(index) => Some((sst, strings.get(&index).ok_or(Refusal::Unreadable)?.clone())),
                None => None,
            };
            let written = cells::edit(&xml, cell, edited, string)?;
            splices.extend(written.splices);
            sheet.expected.insert(*key, written.expected);
        }
        changed.insert(part, spliced(&xml, splices)?);
    }
    let out = package.write(&changed)?;
    read_back(&out, limits, &sheets)?;
    Ok(Some(out))
}

/// A sheet with changes: what the editor asked, and what its values read as.
struct Sheet {
    name: String,
    edited: BTreeMap<Key, Edited>,
    /// Every value of the sheet but the changed ones, as read.
    digest: (u64, u64),
    /// Each changed cell's text once written, as the reader will read it.
    expected: BTreeMap<Key, String>,
}

/// Reads every worksheet as a scan does, within the same allowance, asking the editor about
/// its runs: the sheets it changes. A sheet the scan could not read whole is refused, since
/// the editor would not see what detection saw.
fn asked(bytes: &[u8], limits: Limits, editor: &mut dyn Editor) -> Result<Vec<Sheet>, Refusal> {
    let mut book = Book::open(Cursor::new(bytes), false).map_err(|_| Refusal::Unreadable)?;
    let mut allowance = crate::sheet::allowance(bytes.len() as u64, limits);
    let mut sheets = Vec::new();
    for name in book.worksheets() {
        let mut asking = Asking {
            editor: &mut *editor,
            edited: BTreeMap::new(),
            digest: Digest::default(),
            failed: None,
        };
        let mut skips = Vec::new();
        let mut runs = Runs::new(&[], &mut asking, allowance);
        book.read_sheet(&name, &mut runs, &mut skips);
        allowance = runs.allowance();
        if let Some(refusal) = asking.failed {
            return Err(refusal);
        }
        if !skips.is_empty() {
            return Err(Refusal::Unreadable);
        }
        if !asking.edited.is_empty() {
            sheets.push(Sheet {
                name,
                edited: asking.edited,
                digest: asking.digest.finish(),
                expected: BTreeMap::new(),
            });
        }
    }
    Ok(sheets)
}

/// Reads the changed sheets of the new workbook `out`: each must read as expected.
fn read_back(out: &[u8], limits: Limits, sheets: &[Sheet]) -> Result<(), Refusal> {
    let mut book = Book::open(Cursor::new(out), false).map_err(|_| Refusal::Write)?;
    let mut allowance = crate::sheet::allowance(out.len() as u64, limits);
    for sheet in sheets {
        let mut checking = Checking {
            expected: &sheet.expected,
            seen: 0,
            wrong: false,
            digest: Digest::default(),
        };
        let mut skips = Vec::new();
        let mut runs = Runs::new(&[], &mut checking, allowance);
        book.read_sheet(&sheet.name, &mut runs, &mut skips);
        allowance = runs.allowance();
        let read_as_meant = skips.is_empty()
            && !checking.wrong
            && checking.seen == sheet.expected.len()
            && checking.digest.finish() == sheet.digest;
        if !read_as_meant {
            return Err(Refusal::Write);
        }
    }
    Ok(())
}

/// The column of a sheet's run.
fn sheet_column(column: &Column<'_>) -> Option<u32> {
    match column.unit {
        TableUnit::Cell { column, .. } => Some(column),
        _ => None,
    }
}

/// The editor between the sheet reader and its runs.
struct Asking<'e> {
    editor: &'e mut dyn Editor,
    edited: BTreeMap<Key, Edited>,
    digest: Digest,
    failed: Option<Refusal>,
}

impl Sink for Asking<'_> {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn std::io::Read) -> std::io::Result<()> {
        Ok(())
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        let Some(at) = sheet_column(column) else {
            self.failed = Some(Refusal::Unreadable);
            return;
        };
        let mut edited = Vec::new();
        if self.failed.is_none() && self.editor.wants(&field(column)) {
            match ask(self.editor, column) {
                Ok(asked) => edited = asked,
                Err(refusal) => self.failed = Some(refusal),
            }
        }
        let mut edited = edited.into_iter().peekable();
        for (line, (text, row)) in column
            .text
            .split_terminator('\n')
            .zip(column.rows)
            .enumerate()
        {
            match edited.next_if(|e| e.line == line) {
                Some(e) => {
                    if self.edited.insert((e.row, at), e).is_some() {
                        self.failed = Some(Refusal::Unreadable);
                    }
                }
                None => self.digest.value(column, *row, text),
            }
        }
    }

    fn skipped(&mut self, _: &[String], _: Skip) {}
}

/// What a changed sheet reads as once written.
struct Checking<'a> {
    expected: &'a BTreeMap<Key, String>,
    seen: usize,
    wrong: bool,
    digest: Digest,
}

impl Sink for Checking<'_> {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn std::io::Read) -> std::io::Result<()> {
        Ok(())
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        let Some(at) = sheet_column(column) else {
            self.wrong = true;
            return;
        };
        for (text, row) in column.text.split_terminator('\n').zip(column.rows) {
            match self.expected.get(&(*row, at)) {
                Some(expected) => {
                    self.seen += 1;
                    self.wrong |= expected != text;
                }
                None => self.digest.value(column, *row, text),
            }
        }
    }

    fn skipped(&mut self, _: &[String], _: Skip) {}
}

/// Where a workbook's parts are, found as `calamine` finds them: the workbook part from the
/// package's relationships, each sheet's part from the workbook's.
struct Parts {
    /// The workbook part's folder (`xl/`), where its shared strings are.
    dir: String,
    /// Each sheet's part, by the sheet's name.
    sheets: BTreeMap<String, String>,
}

impl Parts {
    fn of(package: &mut Package<'_>) -> Result<Self, Refusal> {
        let rels = read(package, "_rels/.rels")?;
        let target = relationships(&rels)?
            .into_iter()
            .find(|(_, kind, _)| kind.ends_with("/relationships/officeDocument"))
            .map(|(_, _, target)| target)
            .ok_or(Refusal::Unreadable)?;
        let (dir, name) = match target.rfind('/') {
            Some(i) => target.split_at(i + 1),
            None => ("", target.as_str()),
        };
        let dir = dir.strip_prefix('/').unwrap_or(dir).to_owned();
        let targets: BTreeMap<String, String> =
            relationships(&read(package, &format!("{dir}_rels/{name}.rels"))?)?
                .into_iter()
                .map(|(id, _, target)| (id, target))
                .collect();
        let workbook = read(package, &format!("{dir}{name}"))?;
        let mut sheets = BTreeMap::new();
        for (sheet, id) in sheet_ids(&workbook)? {
            let target = targets.get(&id).ok_or(Refusal::Unreadable)?;
            let part = match target.strip_prefix('/') {
                Some(absolute) => absolute.to_owned(),
                None => format!("{dir}{target}"),
            };
            sheets.insert(sheet, part);
        }
        Ok(Self { dir, sheets })
    }
}

fn read(package: &mut Package<'_>, name: &str) -> Result<Vec<u8>, Refusal> {
    let stored = package.stored_name(name).ok_or(Refusal::Unreadable)?;
    package.part(&stored)?.ok_or(Refusal::Unreadable)
}

/// Each relationship of a `.rels` part: its id, type and target.
fn relationships(xml: &[u8]) -> Result<Vec<(String, String, String)>, Refusal> {
    let mut found = Vec::new();
    elements(xml, "Relationship", |e| {
        let get = |name: &str| {
            e.attributes()
                .flatten()
                .find(|a| a.key.as_ref() == name)
                .map(|a| attribute_text(&a))
                .unwrap_or_default()
        };
        found.push((get("Id"), get("Type"), get("Target")));
    })?;
    Ok(found)
}

/// Each sheet of a workbook part: its name, and the id of its relationship.
fn sheet_ids(xml: &[u8]) -> Result<Vec<(String, String)>, Refusal> {
    let mut found = Vec::new();
    elements(xml, "sheet", |e| {
        let mut name = String::new();
        let mut id = String::new();
        for a in e.attributes().flatten() {
            let key = a.key.as_ref();
            if key == "name" {
                name = attribute_text(&a);
            } else if key == "id" || key.ends_with(":id") {
                id = a.value.into_owned();
            }
        }
        found.push((name, id));
    })?;
    Ok(found)
}

/// An attribute's value with its references read, as `calamine` reads names and targets.
fn attribute_text(a: &quick_xml::events::attributes::Attribute<'_>) -> String {
    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
        .map(|v| v.into_owned())
        .unwrap_or_default()
}

/// Calls `each` with every element of the part named `local` (empty or not).
fn elements(
    xml: &[u8],
    local: &str,
    mut each: impl FnMut(&quick_xml::events::BytesStart<'_>),
) -> Result<(), Refusal> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    loop {
        match reader
            .read_event_into(&mut buf)
            .map_err(|_| Refusal::Unreadable)?
        {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == local => each(&e),
            Event::Eof => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

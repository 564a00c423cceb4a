//! Word documents (DOCX) written again with some text changed.
//!
//! The editor sees each text part's paragraphs as a scan saw them (the body, headers,
//! footers, footnotes, endnotes and comments, in runs of paragraphs), and each change is made
//! in the paragraph's text elements ([`runs`]): in place within one, or across runs with only
//! their boundaries between them. A change that cannot be made so refuses the whole rewrite.
//! Each changed part is read again before anything is written: every paragraph must read as it
//! did, and each changed one as its changes made it, or nothing is written.

use std::collections::BTreeMap;

use super::{Package, Splice, runs, spliced};
use crate::document::{Node, Paragraphs, Run, WORD, paragraphs, text_parts};
use crate::edit::{Digest, Editor, Refusal, ask, field};
use crate::{Column, Limits, Sink, Skip};

/// The document `bytes` with the changes `editor` asks for; `None` when it asks for none.
pub(crate) fn rewrite(
    bytes: &[u8],
    limits: Limits,
    editor: &mut dyn Editor,
) -> Result<Option<Vec<u8>>, Refusal> {
    let mut package = Package::open(bytes, limits)?;
    let names = package.names();
    if !names.iter().any(|name| name == WORD) {
        return Err(Refusal::Unreadable);
    }
    let mut changed = BTreeMap::new();
    for part in text_parts(names.iter().map(String::as_str), true) {
        let xml = package.part(&part)?.ok_or(Refusal::Unreadable)?;
        if let Some(new) = rewrite_part(&xml, &part, editor)? {
            changed.insert(part, new);
        }
    }
    if changed.is_empty() {
        return Ok(None);
    }
    package.write(&changed).map(Some)
}

/// One part with its changes, read back; `None` when there are none.
fn rewrite_part(
    xml: &[u8],
    part: &str,
    editor: &mut dyn Editor,
) -> Result<Option<Vec<u8>>, Refusal> {
    let mut asking = Asking {
        editor,
        held: BTreeMap::new(),
        splices: Vec::new(),
        expected: BTreeMap::new(),
        digest: Digest::default(),
        failed: None,
    };
    let mut editing = Editing {
        run: Run::new(part, None, &[], &mut asking),
    };
    let read = paragraphs(xml, &mut editing);
    editing.run.flush();
    if let Some(refusal) = asking.failed {
        return Err(refusal);
    }
    read.map_err(|()| Refusal::Unreadable)?;
    if asking.expected.is_empty() {
        return Ok(None);
    }
    let new = spliced(xml, asking.splices)?;
    let mut checking = Checking {
        expected: &asking.expected,
        seen: 0,
        wrong: false,
        digest: Digest::default(),
    };
    let mut run = Run::new(part, None, &[], &mut checking);
    let read = paragraphs(new.as_slice(), &mut run);
    run.flush();
    let read_as_meant = read.is_ok()
        && !checking.wrong
        && checking.seen == asking.expected.len()
        && checking.digest.finish() == asking.digest.finish();
    if !read_as_meant {
        return Err(Refusal::Write);
    }
    Ok(Some(new))
}

/// A paragraph held until its run is handed to the editor: its text as the part has it, and
/// its text elements.
struct Held {
    text: String,
    nodes: Vec<Node>,
}

/// The part's paragraphs on their way to the run, each held for the editor's changes.
struct Editing<'a, 'e> {
    run: Run<'a, Asking<'e>>,
}

impl Paragraphs for Editing<'_, '_> {
    fn paragraph(&mut self, number: u64, text: &str, nodes: &[Node]) {
        // Held first: the run may hand itself over as the paragraph joins it.
        self.run.sink.held.insert(
            number,
            Held {
                text: text.to_owned(),
                nodes: nodes.to_vec(),
            },
        );
        self.run.push(number, text);
    }
}

/// The editor between the paragraphs' runs and the part's XML.
struct Asking<'e> {
    editor: &'e mut dyn Editor,
    /// The paragraphs of the run being built, by number.
    held: BTreeMap<u64, Held>,
    splices: Vec<Splice>,
    /// Each changed paragraph's text once changed, as the reader will read it.
    expected: BTreeMap<u64, String>,
    /// Every other paragraph, as read.
    digest: Digest,
    failed: Option<Refusal>,
}

impl Asking<'_> {
    fn values_or_refusal(&mut self, column: &Column<'_>) -> Result<(), Refusal> {
        let edited = if self.editor.wants(&field(column)) {
            ask(self.editor, column)?
        } else {
            Vec::new()
        };
        let mut edited = edited.into_iter().peekable();
        for (line, (text, row)) in column
            .text
            .split_terminator('\n')
            .zip(column.rows)
            .enumerate()
        {
            let Some(e) = edited.next_if(|e| e.line == line) else {
                self.digest.value(column, *row, text);
                continue;
            };
            let held = self.held.get(&e.row).ok_or(Refusal::Unreadable)?;
            // The line is the paragraph trimmed: its offsets start after the leading spaces.
            let lead = held.text.len() - held.text.trim_start().len();
            let edits: Vec<_> = e
                .changes
                .iter()
                .map(|c| (c.start + lead..c.end + lead, c.text.as_str()))
                .collect();
            self.splices
                .extend(runs::splices(&held.text, &held.nodes, &edits, false)?);
            if self.expected.insert(e.row, e.changed()?).is_some() {
                return Err(Refusal::Unreadable);
            }
        }
        Ok(())
    }
}

impl Sink for Asking<'_> {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn std::io::Read) -> std::io::Result<()> {
        Ok(())
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        if self.failed.is_none()
            && let Err(refusal) = self.values_or_refusal(column)
        {
            self.failed = Some(refusal);
        }
        self.held.clear();
    }

    fn skipped(&mut self, _: &[String], _: Skip) {}
}

/// What a changed part reads as once written.
struct Checking<'a> {
    expected: &'a BTreeMap<u64, String>,
    seen: usize,
    wrong: bool,
    digest: Digest,
}

impl Sink for Checking<'_> {
    fn member(&mut self, _: &[String], _: &str, _: &mut dyn std::io::Read) -> std::io::Result<()> {
        Ok(())
    }

    fn values(&mut self, _: &[String], column: &Column<'_>) {
        for (text, row) in column.text.split_terminator('\n').zip(column.rows) {
            match self.expected.get(row) {
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

//! Word (DOCX) and PowerPoint (PPTX) documents, read paragraph by paragraph: the text of every
//! paragraph of the body, tables, headers, footers, notes and comments, or of every slide and
//! its notes, with the text a paragraph's runs split joined again. A document is a ZIP of XML
//! parts; its parts' sizes are checked as a workbook's are, and each part streams through
//! `quick-xml`.

use std::io::{BufReader, Read, Seek};

use quick_xml::events::Event;

use crate::sink::{Lines, TableRead};
use crate::{Sink, Skip, TableUnit};

/// The part whose presence makes a ZIP a Word document.
pub(crate) const WORD: &str = "word/document.xml";
/// The part whose presence makes a ZIP a PowerPoint presentation.
pub(crate) const POWERPOINT: &str = "ppt/presentation.xml";

/// The longest paragraph kept whole, in bytes; past it a paragraph is cut.
const MAX_PARAGRAPH: usize = 1 << 20;

/// Text a part's run holds before it is handed to the sink.
const RUN: usize = 256 << 10;

/// Which parts of a document hold its text, in reading order: for Word the body, then
/// headers, footers, footnotes, endnotes and comments; for PowerPoint each slide by its
/// number, then each slide's notes.
pub(crate) fn text_parts<'n>(names: impl Iterator<Item = &'n str>, word: bool) -> Vec<String> {
    let mut parts: Vec<(u8, u32, String)> = names
        .filter_map(|name| {
            let rank = if word {
                match name {
                    WORD => (0, 0),
                    _ if name.starts_with("word/header") && name.ends_with(".xml") => (1, 0),
                    _ if name.starts_with("word/footer") && name.ends_with(".xml") => (2, 0),
                    "word/footnotes.xml" => (3, 0),
                    "word/endnotes.xml" => (4, 0),
                    "word/comments.xml" => (5, 0),
                    _ => return None,
                }
            } else if let Some(n) = numbered(name, "ppt/slides/slide") {
                (0, n)
            } else if let Some(n) = numbered(name, "ppt/notesSlides/notesSlide") {
                (1, n)
            } else {
                return None;
            };
            Some((rank.0, rank.1, name.to_owned()))
        })
        .collect();
    parts.sort();
    parts.into_iter().map(|(_, _, name)| name).collect()
}

/// `N` of `<prefix>N.xml`.
fn numbered(name: &str, prefix: &str) -> Option<u32> {
    name.strip_prefix(prefix)?
        .strip_suffix(".xml")?
        .parse()
        .ok()
}

/// Reads every text part of the Word document (`word`) or PowerPoint presentation in
/// `archive` into `sink`.
pub(crate) fn read<R: Read + Seek>(
    archive: &mut zip::ZipArchive<R>,
    word: bool,
    path: &[String],
    sink: &mut dyn Sink,
) -> TableRead {
    let names: Vec<String> = archive
        .file_names()
        .filter_map(Result::ok)
        .map(|n| n.into_owned())
        .collect();
    let parts = text_parts(names.iter().map(String::as_str), word);
    let mut outcome = TableRead::default();
    for part in &parts {
        let Ok(file) = archive.by_name(part) else {
            push_once(&mut outcome.skips, Skip::CorruptDocument);
            continue;
        };
        // A slide's paragraphs are the slide's; its notes keep their part's name.
        let slide = if word {
            None
        } else {
            numbered(part, "ppt/slides/slide")
        };
        let mut run = Run {
            lines: Lines::default(),
            part,
            slide,
            path,
            sink: &mut *sink,
            handed: false,
        };
        if paragraphs(BufReader::new(file), &mut run).is_err() {
            push_once(&mut outcome.skips, Skip::CorruptDocument);
        }
        // What was read before a failure is handed over all the same.
        run.flush();
        outcome.handed |= run.handed;
    }
    outcome
}

fn push_once(skips: &mut Vec<Skip>, skip: Skip) {
    if !skips.contains(&skip) {
        skips.push(skip);
    }
}

/// Streams one part's XML, joining the text elements (`w:t`, `a:t`) of each paragraph
/// (`w:p`, `a:p`) into one line; a tab is a tab, a break a space.
fn paragraphs(source: impl std::io::BufRead, run: &mut Run<'_>) -> Result<(), ()> {
    let mut reader = quick_xml::Reader::from_reader(source);
    let mut buf = Vec::new();
    let mut paragraph = String::new();
    let mut number: u64 = 0;
    let mut in_text = false;
    loop {
        let event = reader.read_event_into(&mut buf).map_err(drop)?;
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                // Text, and text a tracked change deleted: it is still in the file.
                "t" | "delText" => in_text = true,
                "tab" => paragraph.push('\t'),
                "br" | "cr" => paragraph.push(' '),
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "tab" => paragraph.push('\t'),
                "br" | "cr" => paragraph.push(' '),
                "p" => number += 1,
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                "t" | "delText" => in_text = false,
                "p" => {
                    number += 1;
                    run.push(number, &paragraph);
                    paragraph.clear();
                }
                _ => {}
            },
            Event::Text(t) if in_text && paragraph.len() < MAX_PARAGRAPH => {
                paragraph.push_str(&t.xml10_content());
            }
            Event::GeneralRef(r) if in_text => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    _ => match r.as_ref() {
                        "amp" => Some('&'),
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        _ => None,
                    },
                };
                paragraph.extend(c);
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

/// A part's paragraphs on their way to the sink, one per line.
struct Run<'a> {
    lines: Lines,
    part: &'a str,
    slide: Option<u32>,
    path: &'a [String],
    sink: &'a mut dyn Sink,
    handed: bool,
}

impl Run<'_> {
    fn push(&mut self, number: u64, paragraph: &str) {
        let paragraph = paragraph.trim();
        if paragraph.is_empty() {
            return;
        }
        let mut end = paragraph.len().min(MAX_PARAGRAPH);
        while !paragraph.is_char_boundary(end) {
            end -= 1;
        }
        self.lines.push(number, &paragraph[..end]);
        if self.lines.text.len() >= RUN {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.lines.is_empty() {
            return;
        }
        let unit = match self.slide {
            Some(slide) => TableUnit::Slide { slide },
            None => TableUnit::Paragraph { part: self.part },
        };
        self.sink.values(self.path, &self.lines.column(&[], unit));
        self.handed = true;
        self.lines.clear();
    }
}

//! Word (DOCX) and PowerPoint (PPTX) documents, and OpenDocument texts and presentations (ODT,
//! ODP), read paragraph by paragraph: the text of every paragraph of the body, tables, headers,
//! footers, notes and comments, or of every slide and its notes, with the text a paragraph's
//! runs (or spans) split joined again. A document is a ZIP of XML parts; its parts' sizes are
//! checked as a workbook's are, and each part streams through `quick-xml`.

use std::collections::HashMap;
use std::io::{BufReader, Read, Seek};
use std::ops::Range;

use quick_xml::events::{BytesStart, Event};

use crate::sink::{Lines, TableRead};
use crate::xml::reference;
use crate::{Sink, Skip, TableUnit};

/// The part whose presence makes a ZIP a Word document.
pub(crate) const WORD: &str = "word/document.xml";
/// The part whose presence makes a ZIP a PowerPoint presentation.
pub(crate) const POWERPOINT: &str = "ppt/presentation.xml";

/// The longest paragraph kept whole, in bytes; past it a paragraph is cut.
const MAX_PARAGRAPH: usize = 1 << 20;

/// The most spaces one OpenDocument space element (`text:s text:c="N"`) stands for: enough
/// for any layout, and a 45-byte element can no longer claim a megabyte of text.
pub(crate) const MAX_SPACES: usize = 64;

/// Text a part's run holds before it is handed to the sink.
const RUN: usize = 256 << 10;

/// Paragraphs inside paragraphs (a note's, a text box's) kept apart from the one around them;
/// deeper ones join the innermost kept, so that a hostile nesting holds at most this many.
const MAX_NESTED: usize = 16;

/// An OpenDocument text's parts that hold its text: the body, then the pages' headers and
/// footers.
const ODF_TEXT_PARTS: [&str; 2] = [crate::odf::CONTENT, "styles.xml"];

/// Elements inside an OpenDocument paragraph whose text is not the paragraph's: a note's
/// citation mark, a frame's title and description, a comment's author and date.
const ODF_NOT_TEXT: [&str; 5] = ["note-citation", "title", "desc", "creator", "date"];

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
    // A deck's slides are numbered as the deck shows them, which is not their parts' names'
    // order once a slide was moved.
    let shown = if word {
        HashMap::new()
    } else {
        slide_order(archive)
    };
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
            shown
                .get(part.as_str())
                .copied()
                .or_else(|| numbered(part, "ppt/slides/slide"))
        };
        let mut run = Run::new(part, slide, path, &mut *sink);
        if paragraphs(BufReader::new(file), &mut run).is_err() {
            push_once(&mut outcome.skips, Skip::CorruptDocument);
        }
        // What was read before a failure is handed over all the same.
        run.flush();
        outcome.handed |= run.handed;
        if run.cut {
            push_once(&mut outcome.skips, Skip::DocumentLimit);
        }
    }
    outcome
}

fn push_once(skips: &mut Vec<Skip>, skip: Skip) {
    if !skips.contains(&skip) {
        skips.push(skip);
    }
}

/// A paragraph's text element (`w:t`, `w:delText`, `a:t`): where its content is in the
/// part's bytes and where its text is in the paragraph's, for a rewrite to change it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    /// Its start tag, `<w:t xml:space="preserve">`.
    pub tag: Range<usize>,
    /// Its content, between its start and end tags.
    pub content: Range<usize>,
    /// Its text within the paragraph's.
    pub text: Range<usize>,
    /// Whether its content is text and references only, each character of it in the
    /// paragraph: only such an element can be written again from its text.
    pub plain: bool,
    /// Whether its start tag keeps the spaces of its text (`xml:space="preserve"`).
    pub preserve: bool,
    /// How much markup no change may cross came before it in the paragraph: two elements with
    /// the same count have only runs' boundaries and properties between them.
    pub barrier: u32,
}

/// Whoever reads a part's paragraphs.
pub(crate) trait Paragraphs {
    /// Paragraph `number` of the part (empty ones counted), its runs' text joined, and its text
    /// elements.
    fn paragraph(&mut self, number: u64, text: &str, nodes: &[Node]);
}

/// Streams one part's XML, joining the text elements (`w:t`, `a:t`) of each paragraph (`w:p`,
/// `a:p`) into one line; a tab is a tab, a break a space. Text a tracked change deleted
/// (`w:delText`) is read too: it is still in the file.
pub(crate) fn paragraphs(
    source: impl std::io::BufRead,
    out: &mut dyn Paragraphs,
) -> Result<(), ()> {
    let mut reader = quick_xml::Reader::from_reader(source);
    let mut buf = Vec::new();
    let mut paragraph = String::new();
    let mut number: u64 = 0;
    let mut nodes: Vec<Node> = Vec::new();
    // The text element being read, if any.
    let mut open: Option<Node> = None;
    let mut marks = Marks::default();
    loop {
        let before = position(&reader)?;
        let event = reader.read_event_into(&mut buf).map_err(drop)?;
        let after = position(&reader)?;
        if open.is_some()
            && !matches!(
                &event,
                Event::Text(_) | Event::GeneralRef(_) | Event::End(_)
            )
        {
            // Markup inside a text element: not one a rewrite writes again from its text.
            open.iter_mut().for_each(|node| node.plain = false);
        }
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                "t" | "delText" => {
                    // A text element inside another: neither is plain.
                    let nested = open.take().map(|node| close(node, before, paragraph.len()));
                    let plain = nested.is_none();
                    nodes.extend(nested);
                    open = Some(Node {
                        tag: before..after,
                        content: after..after,
                        text: paragraph.len()..paragraph.len(),
                        plain,
                        preserve: preserves(&e),
                        barrier: marks.barrier,
                    });
                }
                "tab" => {
                    paragraph.push('\t');
                    marks.barrier += 1;
                }
                "br" | "cr" => {
                    paragraph.push(' ');
                    marks.barrier += 1;
                }
                name => marks.start(name),
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "tab" => {
                    paragraph.push('\t');
                    marks.barrier += 1;
                }
                "br" | "cr" => {
                    paragraph.push(' ');
                    marks.barrier += 1;
                }
                "p" => number += 1,
                "t" | "delText" => {}
                name => marks.empty(name),
            },
            Event::End(e) => match e.local_name().as_ref() {
                "t" | "delText" => {
                    if let Some(node) = open.take() {
                        nodes.push(close(node, before, paragraph.len()));
                    }
                }
                "p" => {
                    number += 1;
                    out.paragraph(number, &paragraph, &nodes);
                    paragraph.clear();
                    nodes.clear();
                }
                name => marks.end(name),
            },
            Event::Text(t) => {
                if let Some(node) = &mut open {
                    if paragraph.len() < MAX_PARAGRAPH {
                        paragraph.push_str(&t.xml10_content());
                    } else {
                        node.plain = false;
                    }
                }
            }
            Event::GeneralRef(r) => {
                if let Some(node) = &mut open {
                    let c = reference(&r);
                    node.plain &= c.is_some();
                    paragraph.extend(c);
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

/// Where the reader is in the part's bytes.
fn position<R>(reader: &quick_xml::Reader<R>) -> Result<usize, ()> {
    usize::try_from(reader.buffer_position()).map_err(drop)
}

/// A text element ended at `end` in the part, its text at `text_end` in the paragraph.
fn close(mut node: Node, end: usize, text_end: usize) -> Node {
    node.content.end = end;
    node.text.end = text_end;
    node
}

/// Whether a text element's start tag says its spaces are kept.
fn preserves(e: &BytesStart<'_>) -> bool {
    e.attributes()
        .flatten()
        .any(|a| a.key.as_ref() == "xml:space" && a.value.as_ref() == "preserve")
}

/// The markup between a paragraph's text elements that a change may not cross: anything but
/// runs (`w:r`), their properties (`w:rPr` and all in it), and the marks an editor leaves
/// between runs that hold no text (`w:proofErr`, `w:bookmarkStart`, `w:bookmarkEnd`). A field
/// code, a tracked change, a hyperlink, a drawing, a symbol: each is a barrier.
#[derive(Debug, Default)]
struct Marks {
    barrier: u32,
    /// How deep inside run properties the reader is.
    properties: u32,
}

impl Marks {
    fn start(&mut self, name: &str) {
        if name == "rPr" {
            self.properties += 1;
        } else {
            self.empty(name);
        }
    }

    fn end(&mut self, name: &str) {
        if name == "rPr" {
            self.properties = self.properties.saturating_sub(1);
        } else {
            self.empty(name);
        }
    }

    fn empty(&mut self, name: &str) {
        let between_runs = matches!(
            name,
            "r" | "rPr" | "proofErr" | "bookmarkStart" | "bookmarkEnd" | "p"
        );
        if self.properties == 0 && !between_runs {
            self.barrier += 1;
        }
    }
}

/// A part's paragraphs on their way to a sink, one per line, in runs of [`RUN`] bytes: the
/// same runs for a scan and for a rewrite, so that detection reads the same text in both.
pub(crate) struct Run<'a, S: Sink + ?Sized> {
    pub lines: Lines,
    part: &'a str,
    slide: Option<u32>,
    path: &'a [String],
    pub sink: &'a mut S,
    pub handed: bool,
    /// Whether a paragraph reached [`MAX_PARAGRAPH`]: the rest of it is not read.
    pub cut: bool,
}

impl<'a, S: Sink + ?Sized> Run<'a, S> {
    pub fn new(part: &'a str, slide: Option<u32>, path: &'a [String], sink: &'a mut S) -> Self {
        Self {
            lines: Lines::default(),
            part,
            slide,
            path,
            sink,
            handed: false,
            cut: false,
        }
    }

    /// Adds paragraph `number`, trimmed and cut at [`MAX_PARAGRAPH`]; an empty one is none.
    /// The readers stop adding to a paragraph once it reaches that length, so one that
    /// reaches it is taken as cut.
    pub fn push(&mut self, number: u64, paragraph: &str) {
        let paragraph = paragraph.trim();
        if paragraph.is_empty() {
            return;
        }
        self.cut |= paragraph.len() >= MAX_PARAGRAPH;
        let mut end = paragraph.len().min(MAX_PARAGRAPH);
        while !paragraph.is_char_boundary(end) {
            end -= 1;
        }
        self.lines.push(number, &paragraph[..end]);
        if self.lines.text.len() >= RUN {
            self.flush();
        }
    }

    pub fn flush(&mut self) {
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

impl<S: Sink + ?Sized> Paragraphs for Run<'_, S> {
    fn paragraph(&mut self, number: u64, text: &str, _: &[Node]) {
        self.push(number, text);
    }
}

/// Reads an OpenDocument text's paragraphs (its body, then its pages' headers and footers),
/// or a presentation's, slide by slide, into `sink`.
pub(crate) fn read_odf<R: Read + Seek>(
    archive: &mut zip::ZipArchive<R>,
    presentation: bool,
    path: &[String],
    sink: &mut dyn Sink,
) -> TableRead {
    let mut outcome = TableRead::default();
    // A presentation's other part holds its masters: the placeholders of a template.
    let parts = if presentation {
        &ODF_TEXT_PARTS[..1]
    } else {
        &ODF_TEXT_PARTS[..]
    };
    for &part in parts {
        let file = match archive.by_name(part) {
            Ok(file) => file,
            // A package without styles has no headers or footers.
            Err(zip::result::ZipError::FileNotFound) if part != crate::odf::CONTENT => continue,
            Err(_) => {
                push_once(&mut outcome.skips, Skip::CorruptDocument);
                continue;
            }
        };
        let mut run = Run::new(part, None, path, &mut *sink);
        if odf_paragraphs(BufReader::new(file), &mut run, presentation).is_err() {
            push_once(&mut outcome.skips, Skip::CorruptDocument);
        }
        // What was read before a failure is handed over all the same.
        run.flush();
        outcome.handed |= run.handed;
        if run.cut {
            push_once(&mut outcome.skips, Skip::DocumentLimit);
        }
    }
    outcome
}

/// Streams one OpenDocument part's XML: each paragraph or heading (`text:p`, `text:h`) is a
/// line, its spans joined, `text:s` its spaces, a tab a tab and a line break a space. A
/// paragraph inside another (a note's, a text box's, a comment's) is a line of its own, and
/// numbered, as in Word, where it ends. In a presentation each page (`draw:page`) is a slide,
/// its notes numbered after its own paragraphs.
fn odf_paragraphs(
    source: impl std::io::BufRead,
    run: &mut Run<'_, dyn Sink + '_>,
    presentation: bool,
) -> Result<(), ()> {
    let mut reader = quick_xml::Reader::from_reader(source);
    let mut buf = Vec::new();
    let mut text = OdfText::default();
    let mut slides: u32 = 0;
    loop {
        let event = reader.read_event_into(&mut buf).map_err(drop)?;
        match event {
            Event::Start(e) => {
                if presentation && text.ignored == 0 && e.local_name().as_ref() == "page" {
                    run.flush();
                    slides += 1;
                    run.slide = Some(slides);
                    text.number = 0;
                }
                text.start(&e, false);
            }
            Event::Empty(e) => text.start(&e, true),
            Event::End(e) => {
                let name = e.local_name();
                if let Some((number, paragraph)) = text.end(name.as_ref()) {
                    run.push(number, &paragraph);
                }
                if presentation && text.ignored == 0 && name.as_ref() == "page" {
                    run.flush();
                    run.slide = None;
                }
            }
            Event::Text(t) => text.push_text(&t.xml10_content()),
            Event::GeneralRef(r) => {
                if let Some(c) = reference(&r) {
                    text.push_text(c.encode_utf8(&mut [0; 4]));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

/// The paragraphs open in an OpenDocument part, innermost last.
#[derive(Default)]
struct OdfText {
    open: Vec<String>,
    /// Paragraphs open, those past [`MAX_NESTED`] included.
    depth: usize,
    /// Paragraphs ended so far in the part (or the slide).
    number: u64,
    /// Elements open whose text is not the paragraph's.
    ignored: u32,
}

impl OdfText {
    fn start(&mut self, e: &BytesStart<'_>, empty: bool) {
        let name = e.local_name();
        let name = name.as_ref();
        if self.ignored > 0 {
            self.ignored += u32::from(!empty);
            return;
        }
        match name {
            "p" | "h" if empty => self.number += 1,
            "p" | "h" => {
                self.depth += 1;
                if self.open.len() < MAX_NESTED {
                    self.open.push(String::new());
                }
            }
            "s" => {
                let count = e
                    .try_get_attribute("text:c")
                    .ok()
                    .flatten()
                    .and_then(|c| c.value.trim().parse().ok());
                // Runs of spaces lay out text; a count past that only multiplies it.
                for _ in 0..count.unwrap_or(1usize).min(MAX_SPACES) {
                    if !self.push(" ") {
                        break;
                    }
                }
            }
            "tab" => {
                self.push("\t");
            }
            "line-break" => {
                self.push(" ");
            }
            _ if ODF_NOT_TEXT.contains(&name) && !empty => self.ignored = 1,
            _ => {}
        }
    }

    /// Ends an element; a paragraph that ends is handed back with its number.
    fn end(&mut self, name: &str) -> Option<(u64, String)> {
        if self.ignored > 0 {
            self.ignored -= 1;
            return None;
        }
        if !matches!(name, "p" | "h") || self.depth == 0 {
            return None;
        }
        self.number += 1;
        let kept = self.depth <= MAX_NESTED;
        self.depth -= 1;
        if kept {
            return self.open.pop().map(|text| (self.number, text));
        }
        None
    }

    /// Appends `text` to the innermost paragraph while it is under [`MAX_PARAGRAPH`]; whether
    /// it still is.
    fn push(&mut self, text: &str) -> bool {
        if self.ignored > 0 {
            return true;
        }
        let Some(paragraph) = self.open.last_mut() else {
            return false;
        };
        if paragraph.len() >= MAX_PARAGRAPH {
            return false;
        }
        paragraph.push_str(text);
        true
    }

    /// Appends text of the XML, in which whitespace is a space (ODF 1.2, 6.1.2): a tab is
    /// `text:tab`, a line break `text:line-break`.
    fn push_text(&mut self, text: &str) {
        if text.contains(['\n', '\r', '\t']) {
            self.push(&text.replace(['\n', '\r', '\t'], " "));
        } else {
            self.push(text);
        }
    }
}

/// The most of a presentation's list of slides or its relationships read: a deck of a thousand
/// slides lists them in tens of KiB.
const MAX_SLIDE_LIST: u64 = 4 << 20;

/// Each slide part's 1-based position in the deck (`ppt/presentation.xml`'s slide list, its
/// relationships naming the parts); empty when either cannot be read, and the parts' own
/// numbers stand.
fn slide_order<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> HashMap<String, u32> {
    let mut targets: HashMap<String, String> = HashMap::new();
    let rels = elements(
        archive,
        "ppt/_rels/presentation.xml.rels",
        "Relationship",
        &["Id", "Target"],
    );
    for attributes in rels {
        if let [Some(id), Some(target)] = &attributes[..] {
            let target = target.trim_start_matches('/');
            let part = target.strip_prefix("ppt/").unwrap_or(target);
            targets.insert(id.clone(), format!("ppt/{part}"));
        }
    }
    let mut order = HashMap::new();
    let listed = elements(archive, "ppt/presentation.xml", "sldId", &["r:id"]);
    for (position, attributes) in listed.into_iter().enumerate() {
        if let [Some(id)] = &attributes[..]
            && let Some(part) = targets.get(id)
        {
            order.insert(
                part.clone(),
                u32::try_from(position + 1).unwrap_or(u32::MAX),
            );
        }
    }
    order
}

/// The `attributes` of every `element` (by local name) of the XML part `name`, read to at
/// most [`MAX_SLIDE_LIST`] bytes.
fn elements<R: Read + Seek>(
    archive: &mut zip::ZipArchive<R>,
    name: &str,
    element: &str,
    attributes: &[&str],
) -> Vec<Vec<Option<String>>> {
    let mut found = Vec::new();
    let Ok(file) = archive.by_name(name) else {
        return found;
    };
    let mut reader = quick_xml::Reader::from_reader(BufReader::new(file.take(MAX_SLIDE_LIST)));
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e) | Event::Empty(e)) if e.local_name().as_ref() == element => {
                found.push(
                    attributes
                        .iter()
                        .map(|a| {
                            e.try_get_attribute(a)
                                .ok()
                                .flatten()
                                .map(|v| v.value.into_owned())
                        })
                        .collect(),
                );
            }
            Ok(Event::Eof) | Err(_) => return found,
            Ok(_) => {}
        }
        buf.clear();
    }
}

//! A workbook's strings as `calamine` reads them, with their text elements: a shared string's
//! `<si>` or an inline string's `<is>` is the text of its `t` elements (a rich string's runs
//! joined, a phonetic reading's left out), each trimmed of spaces unless it keeps them, with
//! `_xHHHH_` escapes read as the characters they stand for.

use std::borrow::Cow;
use std::ops::Range;

use quick_xml::events::Event;

use crate::document::Node;
use crate::edit::Refusal;

/// A string's text, and its text elements.
#[derive(Debug)]
pub(crate) struct Item {
    pub text: String,
    pub nodes: Vec<Node>,
    /// The prefixes of its elements (`""` for none), each once, and whether an attribute of
    /// it has a prefix other than `xml`: what decides whether it can move into a sheet.
    prefixes: Vec<String>,
    prefixed_attribute: bool,
}

impl Item {
    /// Whether the string's markup can be written into a cell whose elements have `prefix`
    /// and mean the same: none of it names another namespace.
    pub fn movable(&self, prefix: &str) -> bool {
        !self.prefixed_attribute && self.prefixes.iter().all(|p| p == prefix)
    }
}

/// The string whose content is `xml[range]`, read as `calamine` reads it.
pub(crate) fn item(xml: &[u8], range: Range<usize>) -> Result<Item, Refusal> {
    let content = xml.get(range.clone()).ok_or(Refusal::Unreadable)?;
    let base = range.start;
    let mut reader = quick_xml::Reader::from_reader(content);
    let mut buf = Vec::new();
    let mut item = Item {
        text: String::new(),
        nodes: Vec::new(),
        prefixes: Vec::new(),
        prefixed_attribute: false,
    };
    // The `t` being read: its node, and its text as the file has it.
    let mut open: Option<(Node, String)> = None;
    let mut phonetic = 0u32;
    let mut barrier = 0u32;
    let mut has_phonetic = false;
    loop {
        let before = base + position(&reader)?;
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|_| Refusal::Unreadable)?;
        let after = base + position(&reader)?;
        if let Event::Start(e) | Event::Empty(e) = &event {
            item.note(e);
        }
        if let Some((node, value)) = &mut open {
            match event {
                Event::Text(t) => value.push_str(&t.xml10_content()),
                Event::CData(t) => {
                    value.push_str(&t.xml10_content());
                    node.plain = false;
                }
                Event::GeneralRef(r) => value.push(reference(&r)?),
                Event::End(e) if e.local_name().as_ref() == "t" => {
                    if let Some((node, value)) = open.take() {
                        item.close(node, &value, before);
                    }
                }
                Event::Eof => return Err(Refusal::Unreadable),
                _ => node.plain = false,
            }
            buf.clear();
            continue;
        }
        match event {
            Event::Start(e) => match e.local_name().as_ref() {
                "rPh" => {
                    phonetic += 1;
                    has_phonetic = true;
                }
                "t" if phonetic == 0 => {
                    let preserve = e
                        .attributes()
                        .flatten()
                        .any(|a| a.key.as_ref() == "xml:space" && a.value.as_ref() == "preserve");
                    let node = Node {
                        tag: before..after,
                        content: after..after,
                        text: item.text.len()..item.text.len(),
                        plain: true,
                        preserve,
                        barrier,
                    };
                    open = Some((node, String::new()));
                }
                "r" | "rPr" | "t" => {}
                _ if phonetic > 0 => {}
                _ => barrier += 1,
            },
            Event::End(e) => match e.local_name().as_ref() {
                "rPh" => phonetic = phonetic.saturating_sub(1),
                "r" | "rPr" | "t" => {}
                _ => barrier += 1,
            },
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if has_phonetic {
        // A phonetic reading would still read the value that changed.
        item.nodes.iter_mut().for_each(|node| node.plain = false);
    }
    Ok(item)
}

impl Item {
    fn note(&mut self, e: &quick_xml::events::BytesStart<'_>) {
        let name = e.name();
        let prefix = name.prefix().map_or("", |p| p.into_inner());
        if !self.prefixes.iter().any(|p| p == prefix) {
            self.prefixes.push(prefix.to_owned());
        }
        self.prefixed_attribute |= e.attributes().flatten().any(|a| {
            a.key
                .prefix()
                .is_some_and(|p| p.into_inner() != "xml" && p.into_inner() != "xmlns")
        });
    }

    /// A `t` whose content ends at `end`: its text as `calamine` reads it, trimmed unless it
    /// keeps its spaces, and escapes read.
    fn close(&mut self, mut node: Node, value: &str, end: usize) {
        let kept = if node.preserve {
            value
        } else {
            value.trim_matches([' ', '\t', '\r', '\n'])
        };
        let text = unescape(kept);
        node.content.end = end;
        node.text = self.text.len()..self.text.len() + text.len();
        self.text.push_str(&text);
        self.nodes.push(node);
    }
}

/// An entity or character reference as `calamine` reads it; another is an error there.
pub(crate) fn reference(r: &quick_xml::events::BytesRef<'_>) -> Result<char, Refusal> {
    match r.as_ref() {
        "amp" => Ok('&'),
        "lt" => Ok('<'),
        "gt" => Ok('>'),
        "quot" => Ok('"'),
        "apos" => Ok('\''),
        _ => r
            .resolve_char_ref()
            .ok()
            .flatten()
            .ok_or(Refusal::Unreadable),
    }
}

fn position<R>(reader: &quick_xml::Reader<R>) -> Result<usize, Refusal> {
    usize::try_from(reader.buffer_position()).map_err(|_| Refusal::Unreadable)
}

/// The code unit of a `_xHHHH_` escape at `at`, if one is there.
fn escape_at(text: &str, at: usize) -> Option<u16> {
    let bytes = text.as_bytes();
    let escape = bytes.get(at..at + 7)?;
    if !(escape.starts_with(b"_x") || escape.starts_with(b"_X")) || escape[6] != b'_' {
        return None;
    }
    let hex = std::str::from_utf8(&escape[2..6]).ok()?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(hex, 16).ok()
}

/// Text with its `_xHHHH_` escapes (ST_Xstring's, for characters XML cannot hold) read, as
/// `calamine` reads them: a surrogate pair is one character, a lone surrogate U+FFFD.
pub(crate) fn unescape(text: &str) -> Cow<'_, str> {
    if !text.contains("_x") && !text.contains("_X") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut copied = 0;
    while at < text.len() {
        let Some(unit) = escape_at(text, at) else {
            at += 1;
            continue;
        };
        out.push_str(&text[copied..at]);
        at += 7;
        let c = match unit {
            0xD800..=0xDBFF => match escape_at(text, at) {
                Some(low @ 0xDC00..=0xDFFF) => {
                    at += 7;
                    let point =
                        0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    char::from_u32(point)
                }
                _ => None,
            },
            unit => char::from_u32(u32::from(unit)),
        };
        out.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
        copied = at;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Text as a workbook's string holds it: an underscore that would start an escape is itself
/// escaped (`_x005F_`), and a control character XML cannot hold is written as its escape.
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    let control = |c: char| c < ' ' && !matches!(c, '\t' | '\n' | '\r');
    let starts_escape = |i: usize| escape_at(text, i).is_some();
    if !text.chars().any(control)
        && !text
            .char_indices()
            .any(|(i, c)| c == '_' && starts_escape(i))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (i, c) in text.char_indices() {
        if control(c) || (c == '_' && starts_escape(i)) {
            out.push_str(&format!("_x{:04X}_", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rich_string_reads_as_its_runs_joined_without_its_phonetic_reading() {
        let xml = br#"<si><r><t>SSN </t></r><r><rPr><b/></rPr><t xml:space="preserve">536-22- </t></r><r><t> 4871 </t></r></si>"#;
        let item = item(xml, 4..xml.len() - 5).unwrap();
        assert_eq!(item.text, "SSN536-22- 4871");
        assert_eq!(item.nodes.len(), 3);
        assert!(item.nodes.iter().all(|n| n.plain && n.barrier == 0));
        assert!(item.movable(""));
        assert!(!item.movable("x"));
        let phonetic = br#"<si><t>536-22-4871</t><rPh sb="0" eb="1"><t>x</t></rPh></si>"#;
        let item = super::item(phonetic, 4..phonetic.len() - 5).unwrap();
        assert_eq!(item.text, "536-22-4871");
        assert!(!item.nodes[0].plain);
    }

    #[test]
    fn escapes_read_and_write_as_calamine_and_excel_have_them() {
        assert_eq!(unescape("a_x000D_b_x005F_x0041_"), "a\rb_x0041_");
        assert_eq!(unescape("_xD83D__xDE00_ _xD800_"), "😀 \u{FFFD}");
        assert_eq!(escape("a\u{1}b_x0041_ c_d"), "a_x0001_b_x005F_x0041_ c_d");
        for text in ["plain", "a\u{1}b", "_x0041_", "x_x_y"] {
            assert_eq!(unescape(&escape(text)), text);
        }
    }
}

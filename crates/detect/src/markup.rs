//! XML and HTML read as text: the markup's punctuation becomes spaces, byte for byte, so that
//! detection reads the document's words (its text, element and attribute names, attribute
//! values) at the very offsets and on the very lines the file has them. A finding's location
//! and offsets are then the file's own, as for plain text, and remediation rewrites the
//! original bytes by them.
//!
//! What becomes a space:
//! - in a tag, `<`, `>`, `/`, `=`, `?`, `!` and the quotes around a value; element and
//!   attribute names stay, since they name the values beside them as a CSV header does
//!   (`<ssn>536-22-4871</ssn>` reads ` ssn 536-22-4871  ssn `), and so do the values;
//! - a comment's `<!--` and `-->` and a CDATA section's `<![CDATA[` and `]]>`, whose text
//!   stays (`<!--ann@example.com-->` is an email);
//! - a `<` in text, even one that opens no tag (`a < b`): only the byte after it tells, and
//!   each byte is decided as it comes.
//!
//! A `script` or `style` element's body is text up to its end tag, as HTML reads it: scripts
//! often hold inline JSON with real records, so it is read, never dropped, and a `<` in it
//! (`i < n`) opens no tag (it is blanked all the same). Entities (`&amp;`, `&#64;`) stay as written: a decoded character
//! is shorter than its reference, and padding it with spaces would still split the value it
//! sits in, so decoding would buy nothing a detector can use.
//!
//! The filter is a state machine fed in pieces of any size: a tag, quote, comment or CDATA
//! section cut by a piece's end goes on in the next. It only ever turns ASCII punctuation
//! into an ASCII space, so UTF-8 stays valid and every multi-byte character passes untouched.
//! Each byte is decided as it comes, but for a `--` or `]]` that is known to close a comment
//! or CDATA section only when the `>` after it comes: those two are blanked then, in the text
//! already put out. Malformed markup is read in the same way: no byte is ever removed, so the
//! worst a misread does is leave some punctuation, as plain text has it.

use memchr::memchr;

/// The markup filter's state between pieces.
#[derive(Debug, Clone, Default)]
pub(crate) struct Markup {
    state: State,
    /// The tag being read opens a `script` or `style` element, whose body is raw text.
    raw: Option<Raw>,
    /// The tag's last byte other than whitespace was `/`: `<script src="a.js"/>` has no body.
    slash: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    /// Character data between tags.
    #[default]
    Text,
    /// Just after `<`: the next byte says whether a tag opens (`a < b` is text).
    Open,
    /// An element's name (`div`, `/p`, `?xml`). `opens` is false for an end tag or a
    /// processing instruction, which have no body.
    Name { opens: bool, name: Name },
    /// Within a tag, between attributes.
    Attributes,
    /// After an attribute's `=`, before its value.
    Equals,
    /// A quoted attribute value, up to the quote that opened it.
    Quoted(u8),
    /// An unquoted attribute value, up to whitespace or `>`.
    Unquoted,
    /// After `<!`, with `matched` bytes of `[CDATA[` read.
    Bang { matched: u8 },
    /// After `<!-`.
    BangDash,
    /// In a comment, after `dashes` dashes (at most two are counted).
    Comment { dashes: u8 },
    /// In a CDATA section, after `brackets` closing brackets (at most two are counted).
    CData { brackets: u8 },
    /// The body of a `script` or `style` element, with `matched` bytes of its end tag
    /// (`</script`) read.
    Raw { element: Raw, matched: u8 },
}

/// The elements whose body is raw text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Raw {
    Script,
    Style,
}

impl Raw {
    fn name(self) -> &'static [u8] {
        match self {
            Raw::Script => b"script",
            Raw::Style => b"style",
        }
    }
}

/// The first bytes of an element's name, lowercased: enough to tell `script` and `style`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Name {
    bytes: [u8; 6],
    /// The name's whole length, saturating: past 6, only its first bytes are kept.
    len: u8,
}

impl Name {
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(usize::from(self.len)) {
            *slot = b.to_ascii_lowercase();
        }
        self.len = self.len.saturating_add(1);
    }

    fn raw(&self) -> Option<Raw> {
        match self.bytes.get(..usize::from(self.len))? {
            b"script" => Some(Raw::Script),
            b"style" => Some(Raw::Style),
            _ => None,
        }
    }
}

const CDATA: &[u8] = b"[CDATA[";

/// What becomes of a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Keep,
    Blank,
    /// Blank it and the `--` or `]]` just before it, which it turns out to close.
    Close(&'static str),
}

/// Blanks `closer` at the end of `out`. The text put out is the caller's to keep, and is
/// checked: text that does not end with it loses nothing.
fn blank_tail(out: &mut String, closer: &str) {
    if out.ends_with(closer) {
        let at = out.len() - closer.len();
        out.replace_range(at.., &" ".repeat(closer.len()));
    }
}

/// A byte of an element or attribute name: XML allows letters of any script, which are
/// UTF-8's bytes from 0x80 up.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.') || b >= 0x80
}

/// The first byte of a name: not a digit, `-` or `.`, so `x <5` and `a <- b` stay text.
fn is_name_start(b: u8) -> bool {
    is_name_byte(b) && !b.is_ascii_digit() && !matches!(b, b'-' | b'.')
}

impl Markup {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends `text` to `out` with its markup blanked: `out` grows by exactly `text.len()`
    /// bytes, with every line break where it was. `out` holds what the earlier calls put out,
    /// at least its last two bytes: a comment's `-->` cut after its `--` blanks them.
    pub(crate) fn push_stripped(&mut self, text: &str, out: &mut String) {
        let bytes = text.as_bytes();
        out.reserve(bytes.len());
        // Start of the run of bytes not yet copied.
        let mut kept = 0;
        let mut i = 0;
        while i < bytes.len() {
            if self.state == State::Text {
                // Character data runs to the next `<`, skipped at memchr's pace.
                match memchr(b'<', &bytes[i..]) {
                    Some(n) => i += n,
                    None => break,
                }
            }
            let b = bytes[i];
            let act = self.step(b);
            i += 1;
            // Only ASCII is ever blanked (the states blank nothing else, and the test is
            // repeated here), so `i - 1` and `i` are character boundaries of `text`.
            if act == Act::Keep || !b.is_ascii() {
                continue;
            }
            out.push_str(&text[kept..i - 1]);
            if let Act::Close(closer) = act {
                blank_tail(out, closer);
            }
            out.push(' ');
            kept = i;
        }
        out.push_str(&text[kept..]);
    }

    /// Reads one byte and says what becomes of it.
    fn step(&mut self, b: u8) -> Act {
        let blank = match self.state {
            State::Text => self.text(b),
            State::Open => self.open(b),
            State::Name { opens, name } => self.name(b, opens, name),
            State::Attributes => self.attributes(b),
            State::Equals => self.equals(b),
            State::Quoted(quote) => self.quoted(b, quote),
            State::Unquoted => self.unquoted(b),
            State::Bang { matched } => self.bang(b, matched),
            State::BangDash => self.bang_dash(b),
            State::Comment { dashes } => return self.comment(b, dashes),
            State::CData { brackets } => return self.cdata(b, brackets),
            State::Raw { element, matched } => self.raw_text(b, element, matched),
        };
        if blank { Act::Blank } else { Act::Keep }
    }

    fn text(&mut self, b: u8) -> bool {
        if b == b'<' {
            self.state = State::Open;
            return true;
        }
        false
    }

    fn open(&mut self, b: u8) -> bool {
        self.state = match b {
            // An end tag, or a processing instruction (`<?xml ...?>`): neither has a body.
            b'/' | b'?' => State::Name {
                opens: false,
                name: Name::default(),
            },
            b'!' => State::Bang { matched: 0 },
            b'<' => State::Open,
            b if is_name_start(b) => {
                let mut name = Name::default();
                name.push(b);
                self.state = State::Name { opens: true, name };
                return false;
            }
            // `a < b`, `x <= 3`: text.
            _ => {
                self.state = State::Text;
                return false;
            }
        };
        true
    }

    fn name(&mut self, b: u8, opens: bool, mut name: Name) -> bool {
        if is_name_byte(b) {
            name.push(b);
            self.state = State::Name { opens, name };
            return false;
        }
        self.start_attributes(if opens { name.raw() } else { None });
        self.attributes(b)
    }

    fn start_attributes(&mut self, raw: Option<Raw>) {
        self.raw = raw;
        self.slash = false;
        self.state = State::Attributes;
    }

    fn attributes(&mut self, b: u8) -> bool {
        if b.is_ascii_whitespace() {
            return false;
        }
        if b == b'>' {
            self.end_tag();
            return true;
        }
        self.slash = b == b'/';
        match b {
            b'=' => {
                self.state = State::Equals;
                true
            }
            b'/' | b'?' | b'!' | b'<' | b'"' | b'\'' => true,
            _ => false,
        }
    }

    /// A tag's `>`: a `script` or `style` start tag opens its raw body.
    fn end_tag(&mut self) {
        self.state = match self.raw.take() {
            Some(element) if !self.slash => State::Raw {
                element,
                matched: 0,
            },
            _ => State::Text,
        };
        self.slash = false;
    }

    fn equals(&mut self, b: u8) -> bool {
        match b {
            b'"' | b'\'' => {
                self.state = State::Quoted(b);
                true
            }
            b'>' => {
                self.end_tag();
                true
            }
            b if b.is_ascii_whitespace() => false,
            _ => {
                self.state = State::Unquoted;
                false
            }
        }
    }

    fn quoted(&mut self, b: u8, quote: u8) -> bool {
        if b == quote {
            self.state = State::Attributes;
            return true;
        }
        false
    }

    fn unquoted(&mut self, b: u8) -> bool {
        if b == b'>' {
            self.end_tag();
            return true;
        }
        if b.is_ascii_whitespace() {
            self.state = State::Attributes;
        }
        false
    }

    fn bang(&mut self, b: u8, matched: u8) -> bool {
        if matched == 0 && b == b'-' {
            self.state = State::BangDash;
            return true;
        }
        if CDATA.get(usize::from(matched)) == Some(&b) {
            let matched = matched + 1;
            self.state = if usize::from(matched) == CDATA.len() {
                State::CData { brackets: 0 }
            } else {
                State::Bang { matched }
            };
            return true;
        }
        self.declaration(b)
    }

    fn bang_dash(&mut self, b: u8) -> bool {
        if b == b'-' {
            self.state = State::Comment { dashes: 0 };
            return true;
        }
        self.declaration(b)
    }

    /// `<!DOCTYPE html>`, `<!ENTITY ...>`: read as a tag's attributes are.
    fn declaration(&mut self, b: u8) -> bool {
        self.start_attributes(None);
        self.attributes(b)
    }

    fn comment(&mut self, b: u8, dashes: u8) -> Act {
        match b {
            b'-' => {
                self.state = State::Comment {
                    dashes: 2.min(dashes + 1),
                }
            }
            b'>' if dashes == 2 => {
                self.state = State::Text;
                return Act::Close("--");
            }
            _ => self.state = State::Comment { dashes: 0 },
        }
        Act::Keep
    }

    fn cdata(&mut self, b: u8, brackets: u8) -> Act {
        match b {
            b']' => {
                self.state = State::CData {
                    brackets: 2.min(brackets + 1),
                }
            }
            b'>' if brackets == 2 => {
                self.state = State::Text;
                return Act::Close("]]");
            }
            _ => self.state = State::CData { brackets: 0 },
        }
        Act::Keep
    }

    /// A raw body's text, up to `</script` or `</style` followed by the end of a name.
    fn raw_text(&mut self, b: u8, element: Raw, matched: u8) -> bool {
        let name = element.name();
        let at = usize::from(matched);
        let (next, blank) = match at {
            0 => (u8::from(b == b'<'), b == b'<'),
            1 if b == b'/' => (2, true),
            _ if at >= 2 && name.get(at - 2) == Some(&b.to_ascii_lowercase()) => {
                (matched + 1, false)
            }
            _ if at == name.len() + 2 && !is_name_byte(b) => {
                self.start_attributes(None);
                return self.attributes(b);
            }
            // Not the end tag after all: the byte is the body's, and may start the end tag.
            _ => return self.raw_text(b, element, 0),
        };
        self.state = State::Raw {
            element,
            matched: next,
        };
        blank
    }
}

#[cfg(test)]
mod tests;

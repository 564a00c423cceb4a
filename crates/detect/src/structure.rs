//! Where a finding sits in the content's structure: the line and column of text, the row and
//! header of CSV, the path of JSON. Each tracker is fed the text once, in order and in pieces of
//! any size, so it works the same on a whole file and on a stream of windows; its memory is
//! bounded whatever the input.

use memchr::{memchr, memchr2, memchr3};

use crate::content::Format;
use crate::types::Location;

/// Column names and JSON keys longer than this are cut.
const MAX_NAME: usize = 256;
/// CSV columns past this many have no header name.
const MAX_COLUMNS: usize = 4096;
/// JSON nesting past this depth is counted but not named in paths.
const MAX_DEPTH: usize = 256;
/// The longest JSONPath a location shows, in characters (see `Json::path`).
const MAX_PATH: usize = 256;

#[derive(Debug)]
pub(crate) enum Tracker {
    Lines(Lines),
    Csv(Csv),
    Json(Json),
    /// One field's value, handed over with the names of its field (`Detector::scan_field`).
    Field(Named),
    /// Values of one field, one per line, with the names of their field
    /// (`Detector::scan_column`): each line is a field of its own.
    Column(Named),
}

/// How the field holding a value ends after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Close {
    /// At the next `"`: a JSON string, a quoted CSV cell.
    Quote,
    /// At the next delimiter or line break: an unquoted CSV cell.
    Cell(u8),
    /// With the value itself: a JSON number.
    Token,
    /// At the end of the text: a field handed over whole.
    Whole,
}

/// The field a value sits in: where it starts (an absolute offset) and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    pub start: usize,
    pub close: Close,
}

/// A field's value scanned on its own, with its names from the outermost to the innermost.
#[derive(Debug)]
pub(crate) struct Named {
    lines: Lines,
    names: Vec<String>,
}

impl Tracker {
    /// A tracker for one field's value, named by `path` from the outermost name in.
    pub fn field(path: &[&str]) -> Self {
        Tracker::Field(Named {
            lines: Lines::default(),
            names: path
                .iter()
                .map(|name| name.chars().take(MAX_NAME).collect())
                .collect(),
        })
    }

    /// A tracker for values of one field, one per line, named by `path`.
    pub fn column(path: &[&str]) -> Self {
        match Self::field(path) {
            Tracker::Field(named) => Tracker::Column(named),
            other => other,
        }
    }

    pub fn new(format: Format) -> Self {
        match format {
            // Markup is blanked to text of the same length: its lines are the file's.
            Format::Text | Format::Markup => Tracker::Lines(Lines::default()),
            Format::Csv => Tracker::Csv(Csv::new(b',')),
            Format::Tsv => Tracker::Csv(Csv::new(b'\t')),
            Format::Json => Tracker::Json(Json::default()),
        }
    }

    /// The absolute offset of the next byte to feed.
    pub fn position(&self) -> usize {
        match self {
            Tracker::Lines(t) => t.pos,
            Tracker::Csv(t) => t.pos,
            Tracker::Json(t) => t.pos,
            Tracker::Field(t) | Tracker::Column(t) => t.lines.pos,
        }
    }

    /// Whether findings need the tracker before they are scored (a header or key is context).
    pub fn labels(&self) -> bool {
        !matches!(self, Tracker::Lines(_))
    }

    /// Consumes the next bytes of the text.
    pub fn feed(&mut self, bytes: &[u8]) {
        match self {
            Tracker::Lines(t) => t.feed(bytes),
            Tracker::Csv(t) => t.feed(bytes),
            Tracker::Json(t) => t.feed(bytes),
            Tracker::Field(t) | Tracker::Column(t) => t.lines.feed(bytes),
        }
    }

    /// The location of absolute offset `at`, which is at or just after the fed bytes.
    pub fn location(&self, at: usize) -> Location {
        match self {
            Tracker::Lines(t)
            | Tracker::Field(Named { lines: t, .. })
            | Tracker::Column(Named { lines: t, .. }) => Location::Line {
                line: t.line,
                column: at.saturating_sub(t.line_start) + 1,
            },
            Tracker::Csv(t) => Location::Csv {
                row: t.record,
                column: t.field + 1,
                header: t.header().filter(|_| t.names_shown).map(str::to_owned),
            },
            Tracker::Json(t) => Location::Json {
                line: t.line,
                path: t.path(),
            },
        }
    }

    /// The name of the current value: its CSV header or JSON key.
    pub fn label(&self) -> Option<&str> {
        match self {
            Tracker::Lines(_) => None,
            Tracker::Csv(t) => t.header(),
            Tracker::Json(t) => t.key(),
            Tracker::Field(t) | Tracker::Column(t) => t.names.last().map(String::as_str),
        }
    }

    /// The names of the current value's field, innermost first: a CSV header; a JSON key and
    /// its parents' keys; a handed-over field's path, reversed.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let (single, json, named) = match self {
            Tracker::Lines(_) => (None, None, None),
            Tracker::Csv(t) => (t.header(), None, None),
            Tracker::Json(t) => (None, Some(t), None),
            Tracker::Field(t) | Tracker::Column(t) => (None, None, Some(&t.names)),
        };
        single
            .into_iter()
            .chain(json.into_iter().flat_map(Json::keys))
            .chain(
                named
                    .into_iter()
                    .flat_map(|n| n.iter().rev().map(String::as_str)),
            )
    }

    /// The field the value at `at` (just after the fed bytes) sits in; `None` in plain text.
    pub fn field_at(&self, at: usize) -> Option<Field> {
        match self {
            Tracker::Lines(_) => None,
            Tracker::Csv(t) => Some(Field {
                start: t.cell_start,
                close: if t.in_quotes || t.quote_pending {
                    Close::Quote
                } else {
                    Close::Cell(t.delimiter)
                },
            }),
            Tracker::Json(t) if t.in_string => Some(Field {
                start: t.string_start,
                close: Close::Quote,
            }),
            Tracker::Json(_) => Some(Field {
                start: at,
                close: Close::Token,
            }),
            Tracker::Field(_) => Some(Field {
                start: 0,
                close: Close::Whole,
            }),
            Tracker::Column(t) => Some(Field {
                start: t.lines.line_start,
                close: Close::Cell(b'\n'),
            }),
        }
    }
}

/// Whether a header or key looks like data rather than a name: an `@`, or five digits or more.
/// Locations are stored and shown with findings, which hold no values; a CSV without a header
/// row gives its first data row as headers, and JSON objects can be keyed by emails or ids.
fn data_like(text: &str) -> bool {
    text.contains('@') || text.bytes().filter(u8::is_ascii_digit).count() >= 5
}

/// Whether a header cell reads as a column name, strictly: a location is stored and shown with
/// a finding, so a first row that is data after all (a CSV without a header row) must not
/// become one. A name has a letter; only letters, digits, spaces and a little punctuation
/// (`PUNCTUATION`); fewer than five digits; and no word of digits alone (`Mar 5 84`,
/// `950 EUR`, `Q3 2024` are not names; `address_line_2` is).
fn name_like(text: &str) -> bool {
    const PUNCTUATION: &[char] = &[
        '_', '-', '.', '/', '(', ')', '#', '&', '\'', ',', ':', '?', '%', '*',
    ];
    text.chars().any(char::is_alphabetic)
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || c == ' ' || PUNCTUATION.contains(&c))
        && text.chars().filter(char::is_ascii_digit).count() < 5
        && text
            .split(|c: char| c.is_whitespace() || (c != '_' && PUNCTUATION.contains(&c)))
            .all(|word| word.is_empty() || !word.chars().all(|c| c.is_ascii_digit()))
}

/// Lines of plain text.
#[derive(Debug)]
pub(crate) struct Lines {
    pos: usize,
    line: usize,
    line_start: usize,
}

impl Default for Lines {
    fn default() -> Self {
        Self {
            pos: 0,
            line: 1,
            line_start: 0,
        }
    }
}

impl Lines {
    fn feed(&mut self, bytes: &[u8]) {
        for k in memchr::memchr_iter(b'\n', bytes) {
            self.line += 1;
            self.line_start = self.pos + k + 1;
        }
        self.pos += bytes.len();
    }
}

/// CSV or TSV with a header row, quoted fields and doubled quotes (RFC 4180).
#[derive(Debug)]
pub(crate) struct Csv {
    delimiter: u8,
    pos: usize,
    in_quotes: bool,
    /// A quote closed the chunk inside a quoted field: it ends the field or starts `""`.
    quote_pending: bool,
    /// Where the current cell starts (an absolute offset, its opening quote included).
    cell_start: usize,
    /// 0 while in the header row; data rows count from 1.
    record: usize,
    field: usize,
    headers: Vec<String>,
    /// Every cell of the header row reads as a name ([`name_like`]): only then are the
    /// headers shown in locations. Detection still reads them as context either way.
    names_shown: bool,
    name: Vec<u8>,
}

impl Csv {
    fn new(delimiter: u8) -> Self {
        Self {
            delimiter,
            pos: 0,
            in_quotes: false,
            quote_pending: false,
            cell_start: 0,
            record: 0,
            field: 0,
            headers: Vec::new(),
            names_shown: false,
            name: Vec::new(),
        }
    }

    fn header(&self) -> Option<&str> {
        if self.record == 0 {
            return None;
        }
        self.headers
            .get(self.field)
            .map(String::as_str)
            .filter(|h| !h.is_empty())
    }

    fn name_bytes(&mut self, bytes: &[u8]) {
        if self.record == 0 {
            let room = MAX_NAME.saturating_sub(self.name.len());
            self.name.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    fn end_field(&mut self) {
        if self.record == 0 && self.headers.len() < MAX_COLUMNS {
            let name = String::from_utf8_lossy(&self.name);
            self.headers.push(name.trim().to_owned());
        }
        self.name.clear();
        self.field += 1;
    }

    fn feed(&mut self, bytes: &[u8]) {
        let origin = self.pos;
        self.pos += bytes.len();
        let mut i = 0;
        if self.quote_pending && !bytes.is_empty() {
            self.quote_pending = false;
            if bytes[0] == b'"' {
                self.name_bytes(b"\"");
                i = 1;
            } else {
                self.in_quotes = false;
            }
        }
        while i < bytes.len() {
            let rest = &bytes[i..];
            if self.in_quotes {
                let Some(k) = memchr(b'"', rest) else {
                    self.name_bytes(rest);
                    return;
                };
                self.name_bytes(&rest[..k]);
                i += k + 1;
                match bytes.get(i) {
                    Some(b'"') => {
                        self.name_bytes(b"\"");
                        i += 1;
                    }
                    Some(_) => self.in_quotes = false,
                    None => self.quote_pending = true,
                }
            } else {
                let Some(k) = memchr3(self.delimiter, b'"', b'\n', rest) else {
                    self.name_bytes(rest);
                    return;
                };
                self.name_bytes(&rest[..k]);
                i += k + 1;
                if rest[k] != b'"' {
                    self.cell_start = origin + i;
                }
                match rest[k] {
                    b'"' => self.in_quotes = true,
                    b'\n' => {
                        self.end_field();
                        if self.record == 0 {
                            if self.headers.iter().any(|h| data_like(h)) {
                                // A first row holding data (an email, a number of five
                                // digits or more) is not a header row, and none of its cells
                                // names a column.
                                self.headers.clear();
                            }
                            self.names_shown =
                                self.headers.iter().all(|h| h.is_empty() || name_like(h));
                        }
                        self.record += 1;
                        self.field = 0;
                    }
                    _ => self.end_field(),
                }
            }
        }
    }
}

#[derive(Debug)]
enum Frame {
    /// The key is `names[key.0..key.1]`: keys live in one buffer used as a stack, so tracking
    /// allocates nothing once it has warmed up.
    Object {
        key: (usize, usize),
        expecting_key: bool,
    },
    Array {
        index: usize,
    },
}

/// JSON documents, one or many (NDJSON). Lenient: it tracks structure without validating it.
#[derive(Debug)]
pub(crate) struct Json {
    pos: usize,
    line: usize,
    stack: Vec<Frame>,
    /// Nesting deeper than MAX_DEPTH, counted so closing brackets stay balanced.
    hidden: usize,
    in_string: bool,
    /// Where the current string's text starts (an absolute offset, after its quote).
    string_start: usize,
    escaped: bool,
    in_key: bool,
    key: Vec<u8>,
    names: String,
}

impl Default for Json {
    fn default() -> Self {
        Self {
            pos: 0,
            line: 1,
            stack: Vec::new(),
            hidden: 0,
            in_string: false,
            string_start: 0,
            escaped: false,
            in_key: false,
            key: Vec::new(),
            names: String::new(),
        }
    }
}

impl Json {
    fn key_bytes(&mut self, bytes: &[u8]) {
        if self.in_key {
            let room = MAX_NAME.saturating_sub(self.key.len());
            self.key.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }

    fn push(&mut self, frame: Frame) {
        if self.stack.len() < MAX_DEPTH && self.hidden == 0 {
            self.stack.push(frame);
        } else {
            self.hidden += 1;
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let origin = self.pos;
        self.pos += bytes.len();
        let mut i = 0;
        while i < bytes.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    self.key_bytes(&bytes[i..i + 1]);
                    i += 1;
                    continue;
                }
                let rest = &bytes[i..];
                // Most strings are short: a plain loop beats setting up a vector search.
                let short = rest.iter().take(16).position(|&b| b == b'"' || b == b'\\');
                let found = match short {
                    Some(k) => Some(k),
                    None if rest.len() <= 16 => None,
                    None => memchr2(b'"', b'\\', &rest[16..]).map(|k| k + 16),
                };
                let Some(k) = found else {
                    self.key_bytes(rest);
                    return;
                };
                self.key_bytes(&rest[..k]);
                i += k + 1;
                if rest[k] == b'\\' {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                    if self.in_key {
                        self.in_key = false;
                        if let Some(Frame::Object { key, .. }) = self.stack.last_mut() {
                            // The innermost object's key is the last in the buffer.
                            self.names.truncate(key.0);
                            match std::str::from_utf8(&self.key) {
                                Ok(name) => self.names.push_str(name),
                                Err(_) => self.names.push_str(&String::from_utf8_lossy(&self.key)),
                            }
                            key.1 = self.names.len();
                        }
                    }
                }
                continue;
            }
            let b = bytes[i];
            i += 1;
            match b {
                b'"' => {
                    self.in_string = true;
                    self.string_start = origin + i;
                    self.in_key = self.hidden == 0
                        && matches!(
                            self.stack.last(),
                            Some(Frame::Object {
                                expecting_key: true,
                                ..
                            })
                        );
                    self.key.clear();
                }
                b'{' => self.push(Frame::Object {
                    key: (self.names.len(), self.names.len()),
                    expecting_key: true,
                }),
                b'[' => self.push(Frame::Array { index: 0 }),
                b'}' | b']' => {
                    if self.hidden > 0 {
                        self.hidden -= 1;
                    } else if let Some(Frame::Object { key, .. }) = self.stack.pop() {
                        self.names.truncate(key.0);
                    }
                }
                b',' if self.hidden == 0 => match self.stack.last_mut() {
                    Some(Frame::Object { expecting_key, .. }) => *expecting_key = true,
                    Some(Frame::Array { index }) => *index += 1,
                    None => {}
                },
                b':' if self.hidden == 0 => {
                    if let Some(Frame::Object { expecting_key, .. }) = self.stack.last_mut() {
                        *expecting_key = false;
                    }
                }
                b'\n' => self.line += 1,
                _ => {}
            }
        }
    }

    /// The key naming the current value: the innermost object's, through arrays.
    fn key(&self) -> Option<&str> {
        self.keys().next()
    }

    /// The keys of the current value and of the objects around it, innermost first.
    fn keys(&self) -> impl Iterator<Item = &str> {
        self.stack.iter().rev().filter_map(|frame| match frame {
            Frame::Object { key, .. } if key.1 > key.0 => Some(&self.names[key.0..key.1]),
            _ => None,
        })
    }

    /// A JSONPath to the current value: `$.customers[3].ssn`, `$["first name"]`. A control
    /// character of a key is shown as U+FFFD (a location is stored as JSON and shown to people;
    /// Postgres's `jsonb` cannot hold U+0000). A path longer than [`MAX_PATH`] characters keeps
    /// its innermost steps, which name the value, after `$…`.
    fn path(&self) -> String {
        let mut steps: Vec<String> = Vec::with_capacity(self.stack.len());
        for frame in &self.stack {
            match frame {
                Frame::Object { key, .. } if key.1 == key.0 => {}
                Frame::Object { key, .. } => {
                    let key = &self.names[key.0..key.1];
                    // Held to the rule of CSV headers: a key that does not read as a name (a
                    // date, a number in any script, an email) is data, and is not stored.
                    if data_like(key) || !name_like(key) {
                        steps.push("[\"…\"]".into());
                        continue;
                    }
                    let plain = key
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    if plain {
                        steps.push(format!(".{key}"));
                    } else {
                        let mut step = String::with_capacity(key.len() + 4);
                        step.push_str("[\"");
                        for c in key.chars() {
                            match c {
                                '"' | '\\' => {
                                    step.push('\\');
                                    step.push(c);
                                }
                                c if c.is_control() => step.push(char::REPLACEMENT_CHARACTER),
                                c => step.push(c),
                            }
                        }
                        step.push_str("\"]");
                        steps.push(step);
                    }
                }
                Frame::Array { index } => steps.push(format!("[{index}]")),
            }
        }
        let hidden = if self.hidden > 0 { "…" } else { "" };
        let limit = MAX_PATH - hidden.chars().count();
        let lengths: Vec<usize> = steps.iter().map(|s| s.chars().count()).collect();
        let mut rest: usize = lengths.iter().sum();
        let mut from = 0;
        // "$" before every step, or "$…" once some are left out.
        while from + 1 < steps.len() && rest + if from == 0 { 1 } else { 2 } > limit {
            rest -= lengths[from];
            from += 1;
        }
        let mut path = String::from(if from > 0 { "$…" } else { "$" });
        for step in &steps[from..] {
            path.push_str(step);
        }
        if path.chars().count() > limit {
            // One step alone is too long (a key of MAX_NAME bytes written in quotes): keep its
            // start.
            path = path.chars().take(limit - 1).collect();
            path.push('…');
        }
        path.push_str(hidden);
        path
    }
}

#[cfg(test)]
mod tests;

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

    pub fn new(format: Format) -> Self {
        match format {
            Format::Text => Tracker::Lines(Lines::default()),
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
            Tracker::Field(t) => t.lines.pos,
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
            Tracker::Field(t) => t.lines.feed(bytes),
        }
    }

    /// The location of absolute offset `at`, which is at or just after the fed bytes.
    pub fn location(&self, at: usize) -> Location {
        match self {
            Tracker::Lines(t) | Tracker::Field(Named { lines: t, .. }) => Location::Line {
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
            Tracker::Field(t) => t.names.last().map(String::as_str),
        }
    }

    /// The names of the current value's field, innermost first: a CSV header; a JSON key and
    /// its parents' keys; a handed-over field's path, reversed.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let (single, json, named) = match self {
            Tracker::Lines(_) => (None, None, None),
            Tracker::Csv(t) => (t.header(), None, None),
            Tracker::Json(t) => (None, Some(t), None),
            Tracker::Field(t) => (None, None, Some(&t.names)),
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
mod tests {
    use super::*;

    /// The location and label at `needle`, feeding the text in pieces of `step` bytes.
    fn at(format: Format, text: &str, needle: &str, step: usize) -> (Location, Option<String>) {
        let Some(offset) = text.find(needle) else {
            panic!("{needle} is not in the text")
        };
        let mut tracker = Tracker::new(format);
        for piece in text.as_bytes()[..offset].chunks(step) {
            tracker.feed(piece);
        }
        (tracker.location(offset), tracker.label().map(str::to_owned))
    }

    #[test]
    fn headers_and_keys_that_look_like_data_are_not_locations() {
        // A CSV without a header row: its first data row is taken for the headers.
        let text =
            "Ann Lee,123-45-6789,ann@example.com,Notes 2024\nBo,234-56-7890,bo@example.com,x\n";
        let header = |needle: &str| match at(Format::Csv, text, needle, 1000).0 {
            Location::Csv { header, .. } => header,
            other => panic!("{other:?}"),
        };
        // A first row with data in it names no column, not even where the cell looks like a
        // name.
        for needle in ["Bo,", "234-56", "bo@", "x\n"] {
            assert_eq!(header(needle), None, "{needle}");
        }
        // Nor does a first row whose cells only read as data: an amount, a date, a name
        // beside them. Detection still reads them as context.
        for text in [
            "Ann Lee,$950\nBo Chan,$1200.50\n",
            "Ann Lee,Mar 5 84\nBo Chan,Mar 6 85 $1200.50\n",
            "Ann Lee,950 EUR\nBo Chan,$1200.50\n",
            "Ann Lee,3/5/84\nBo Chan,$1200.50\n",
        ] {
            match at(Format::Csv, text, "$1200", 1).0 {
                Location::Csv { header, row, .. } => assert_eq!((header, row), (None, 1), "{text}"),
                other => panic!("{other:?}"),
            }
        }
        for (name, shown) in [
            ("ssn", true),
            ("Date of Birth", true),
            ("address_line_2", true),
            ("e-mail (work)", true),
            ("Prénom", true),
            ("Q3 2024", false),
            ("$950", false),
            ("950 EUR", false),
            ("5-Mar-84", false),
            ("3/5/84", false),
            ("12345", false),
            ("a@b", false),
            ("", false),
        ] {
            assert_eq!(name_like(name), shown, "{name}");
        }
        // A header row names its columns.
        let text = "name,ssn,email\nBo,234-56-7890,bo@example.com\n";
        let header = |needle: &str| match at(Format::Csv, text, needle, 1).0 {
            Location::Csv { header, .. } => header,
            other => panic!("{other:?}"),
        };
        assert_eq!(header("234-56"), Some("ssn".into()));
        assert_eq!(header("bo@"), Some("email".into()));
        // JSON keyed by an email or a card number.
        let doc = r#"{"alice@example.com": {"phone": 17}, "4111111111111111": 28}"#;
        for (needle, expected) in [("17", r#"$["…"].phone"#), ("28", r#"$["…"]"#)] {
            match at(Format::Json, doc, needle, 3).0 {
                Location::Json { path, .. } => assert_eq!(path, expected),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn csv_rows_and_headers_survive_quotes_and_any_chunking() {
        let text =
            "id,\"full, name\",ssn\r\n1,\"Doe, \"\"J\"\"\nline2\",123-45-6789\n2,x,987-65-4321\n";
        for step in [1, 2, 3, 7, 1000] {
            let (location, label) = at(Format::Csv, text, "123-45", step);
            assert_eq!(
                location,
                Location::Csv {
                    row: 1,
                    column: 3,
                    header: Some("ssn".into())
                },
                "step {step}"
            );
            assert_eq!(label.as_deref(), Some("ssn"));
            let (location, _) = at(Format::Csv, text, "Doe", step);
            assert_eq!(
                location,
                Location::Csv {
                    row: 1,
                    column: 2,
                    header: Some("full, name".into())
                }
            );
            let (location, _) = at(Format::Csv, text, "987", step);
            assert!(matches!(
                location,
                Location::Csv {
                    row: 2,
                    column: 3,
                    ..
                }
            ));
        }
        let (location, label) = at(Format::Tsv, "a\tphone\n1\t555\n", "555", 1);
        assert_eq!(label.as_deref(), Some("phone"));
        assert!(matches!(
            location,
            Location::Csv {
                row: 1,
                column: 2,
                ..
            }
        ));
    }

    #[test]
    fn json_paths_follow_objects_arrays_and_escapes() {
        let text = r#"{"customers": [{"name": "A \"q\" {[", "ssn": "123-45-6789"},
 {"first name": "B", "phones": ["+1 202 555 0187", "x"]}], "n": 1}"#;
        for step in [1, 2, 5, 1000] {
            let (location, label) = at(Format::Json, text, "123-45", step);
            assert_eq!(
                location,
                Location::Json {
                    line: 1,
                    path: "$.customers[0].ssn".into()
                },
                "step {step}"
            );
            assert_eq!(label.as_deref(), Some("ssn"));
            let (location, label) = at(Format::Json, text, "+1 202", step);
            assert_eq!(
                location,
                Location::Json {
                    line: 2,
                    path: "$.customers[1].phones[0]".into()
                }
            );
            assert_eq!(label.as_deref(), Some("phones"));
        }
        let (location, _) = at(Format::Json, r#"{"first name": "x@y.z"}"#, "x@", 1);
        assert_eq!(
            location,
            Location::Json {
                line: 1,
                path: "$[\"first name\"]".into()
            }
        );
    }

    #[test]
    fn ndjson_lines_each_start_at_the_root() {
        let text = "{\"a\": 1}\n{\"b\": [1, 2, \"x\"]}\n{\"email\": \"q@r.s\"}\n";
        let (location, label) = at(Format::Json, text, "q@", 3);
        assert_eq!(
            location,
            Location::Json {
                line: 3,
                path: "$.email".into()
            }
        );
        assert_eq!(label.as_deref(), Some("email"));
    }

    #[test]
    fn paths_are_bounded_and_hold_no_control_character() {
        // A key with U+0000 and a tab: stored as JSON, shown to people, and `jsonb` refuses
        // U+0000. It does not read as a name, so it is not shown at all.
        let (location, _) = at(
            Format::Json,
            "{\"con\u{0}tact\tx\": \"ann.lee@example.com\"}",
            "ann.",
            7,
        );
        assert_eq!(
            location,
            Location::Json {
                line: 1,
                path: "$[\"…\"]".into()
            }
        );
        // Keys that are data by the rule of CSV headers: a short date, digits of another
        // script; a key that reads as a name stays.
        for (key, shown) in [
            ("4/3/80", "$[\"…\"]"),
            ("\u{0661}\u{0662}\u{0663}", "$[\"…\"]"),
            ("first name", "$[\"first name\"]"),
            ("address_line_2", "$.address_line_2"),
        ] {
            let text = format!("{{\"{key}\": \"ann.lee@example.com\"}}");
            let (location, _) = at(Format::Json, &text, "ann.", 4 + key.len());
            assert_eq!(
                location,
                Location::Json {
                    line: 1,
                    path: shown.into()
                },
                "{key}"
            );
        }
        // Forty levels of a 25-character key: the innermost steps, which name the value, stay.
        let deep = "{\"customer_record_section\":".repeat(40)
            + "{\"email\": \"ann.lee@example.com\"}"
            + &"}".repeat(40);
        let (location, _) = at(Format::Json, &deep, "ann.", 64);
        let Location::Json { path, .. } = location else {
            panic!("{location:?}")
        };
        assert!(path.chars().count() <= MAX_PATH, "{path}");
        assert!(path.starts_with("$….customer_record_section."), "{path}");
        assert!(path.ends_with(".customer_record_section.email"), "{path}");
        // One key of MAX_NAME characters, quoted: its start, cut.
        let key = "k ".repeat(MAX_NAME / 2);
        let text = format!("{{\"{key}\": \"ann.lee@example.com\"}}");
        let (location, _) = at(Format::Json, &text, "ann.", 9);
        let Location::Json { path, .. } = location else {
            panic!("{location:?}")
        };
        assert_eq!(path.chars().count(), MAX_PATH, "{path}");
        assert!(
            path.starts_with("$[\"k k ") && path.ends_with('…'),
            "{path}"
        );
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let deep = "[".repeat(10_000) + "\"v\"" + &"]".repeat(10_000) + "{\"k\": \"w\"}";
        let (location, _) = at(Format::Json, &deep, "w\"", 4096);
        assert_eq!(
            location,
            Location::Json {
                line: 1,
                path: "$.k".into()
            }
        );
    }
}

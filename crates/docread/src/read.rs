//! Bytes to a JSON value, with the limits every document meets before its fields are looked
//! at.
//!
//! - at most [`Limits::max_bytes`] bytes and [`Limits::max_depth`] levels of nesting;
//! - one document, whose top level is a mapping;
//! - no duplicate key, in JSON as in YAML;
//! - in YAML, no anchor, alias or explicit tag: a policy reads the same to every reader, and
//!   an alias cannot multiply a small document into a large one.
//!
//! YAML is read with one parser (yaml-rust2's event stream), which builds the value itself:
//! a second parser that resolved aliases after the first had checked for them could disagree
//! with it. Plain scalars resolve by the YAML 1.2 core schema, so `on` and `yes` stay strings.
//!
//! No message holds a value from the document: a problem names where, never what.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

use crate::{Pointer, Problem};

/// How large and how deep a document may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest document accepted, in bytes.
    pub max_bytes: usize,
    /// The deepest nesting accepted; the top-level mapping is level 1.
    pub max_depth: usize,
}

/// How the document is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// JSON (RFC 8259).
    Json,
    /// YAML 1.2, without anchors, aliases or tags.
    Yaml,
}

/// Reads a document into a value. Problems that leave the value well formed (a duplicate key,
/// an anchor) are all collected, so the next layer can still report its own; problems that do
/// not (bad syntax, too large, too deep) end the reading at once.
pub fn read(
    bytes: &[u8],
    syntax: Syntax,
    limits: Limits,
) -> Result<(Value, Vec<Problem>), Vec<Problem>> {
    if bytes.len() > limits.max_bytes {
        return Err(vec![Problem::root(format!(
            "the document is larger than {} bytes",
            limits.max_bytes
        ))]);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(vec![Problem::root("the document is not valid UTF-8")]);
    };
    // The source is stored as text, which Postgres refuses with a NUL in it. YAML readers
    // also take a raw NUL for the end of the stream, so what follows it would go unread.
    if text.contains('\0') {
        return Err(vec![Problem::root(
            "the document holds the NUL character (U+0000), which cannot be stored",
        )]);
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(vec![Problem::root("the document is empty")]);
    }
    let (value, soft) = match syntax {
        Syntax::Json => read_json(text, limits.max_depth)?,
        Syntax::Yaml => read_yaml(text, limits.max_depth)?,
    };
    if !value.is_object() {
        return Err(vec![Problem::root("the document must be a mapping")]);
    }
    if let Some(problem) = nul_in(&value, &Pointer::root()) {
        return Err(vec![problem]);
    }
    Ok((value, soft))
}

/// The first string or key that holds the NUL character (U+0000), which Postgres cannot
/// store. The depth is already bounded by [`Limits::max_depth`].
fn nul_in(value: &Value, at: &Pointer) -> Option<Problem> {
    match value {
        Value::String(s) if s.contains('\0') => Some(Problem::at(
            at,
            "must not contain the NUL character (U+0000)",
        )),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_in(item, &at.index(i))),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            if key.contains('\0') {
                Some(Problem::at(
                    at,
                    "a key must not contain the NUL character (U+0000)",
                ))
            } else {
                nul_in(item, &at.key(key))
            }
        }),
        _ => None,
    }
}

/// The most problems one document is answered with: a body of aliases could otherwise make
/// an answer (and a list in memory) larger than itself.
pub const MAX_PROBLEMS: usize = 100;

/// Records a problem that leaves the value well formed, until there are [`MAX_PROBLEMS`]; then
/// the reading ends with them and one more saying so.
fn note(soft: &mut Vec<Problem>, problem: Problem) -> Result<(), Vec<Problem>> {
    if soft.len() < MAX_PROBLEMS {
        soft.push(problem);
        return Ok(());
    }
    let mut all = std::mem::take(soft);
    all.push(too_many());
    Err(all)
}

fn too_many() -> Problem {
    Problem::root(format!(
        "more than {MAX_PROBLEMS} problems; the first {MAX_PROBLEMS} are listed"
    ))
}

fn too_deep(at: &Pointer, max_depth: usize) -> Problem {
    Problem::at(at, format!("nesting is deeper than {max_depth} levels"))
}

// --- YAML -------------------------------------------------------------------------------------

/// A container being built, with the key its next value goes under.
enum Frame {
    Seq(Vec<Value>, Pointer),
    Map {
        map: Map<String, Value>,
        at: Pointer,
        /// The key read and waiting for its value.
        key: Option<String>,
    },
}

impl Frame {
    fn at(&self) -> &Pointer {
        match self {
            Frame::Seq(_, at) | Frame::Map { at, .. } => at,
        }
    }
}

fn read_yaml(text: &str, max_depth: usize) -> Result<(Value, Vec<Problem>), Vec<Problem>> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut soft = Vec::new();
    let mut root: Option<Value> = None;
    let mut documents = 0usize;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| {
            // The scanner's messages describe the syntax; the one that quotes a character is
            // cut before it.
            let info = e
                .info()
                .split('`')
                .next()
                .unwrap_or("")
                .trim_end_matches(": ");
            vec![Problem::root(format!(
                "the document is not valid YAML: {info} (line {}, column {})",
                e.marker().line(),
                e.marker().col() + 1
            ))]
        })?;
        let position =
            |what: &str| format!("{what} (line {}, column {})", mark.line(), mark.col() + 1);
        // Where the value this event starts goes.
        let here = |stack: &[Frame]| -> Pointer {
            match stack.last() {
                None => Pointer::root(),
                Some(Frame::Seq(items, at)) => at.index(items.len()),
                Some(Frame::Map { at, key, .. }) => match key {
                    Some(key) => at.key(key),
                    None => at.clone(),
                },
            }
        };
        let value = match event {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => continue,
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(vec![Problem::root(
                        "the body must hold exactly one YAML document",
                    )]);
                }
                continue;
            }
            Event::Alias(_) => {
                note(
                    &mut soft,
                    Problem::at(&here(&stack), position("aliases are not allowed")),
                )?;
                Value::Null
            }
            Event::Scalar(raw, style, anchor, tag) => {
                let at = here(&stack);
                if anchor != 0 {
                    note(
                        &mut soft,
                        Problem::at(&at, position("anchors are not allowed")),
                    )?;
                }
                if tag.is_some() {
                    note(
                        &mut soft,
                        Problem::at(&at, position("tags are not allowed")),
                    )?;
                }
                // A key is always read as text.
                if let Some(Frame::Map {
                    key: key @ None,
                    map,
                    at: map_at,
                }) = stack.last_mut()
                {
                    let key_at = map_at.key(&raw);
                    if map.contains_key(&raw) {
                        note(&mut soft, Problem::at(&key_at, position("duplicate key")))?;
                    }
                    *key = Some(raw);
                    continue;
                }
                match resolve(raw, style) {
                    Ok(value) => value,
                    Err(reason) => {
                        note(&mut soft, Problem::at(&at, reason))?;
                        Value::Null
                    }
                }
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                if let Some(Frame::Map { key: None, .. }) = stack.last() {
                    return Err(vec![Problem::at(
                        stack.last().map(Frame::at).unwrap_or(&Pointer::root()),
                        position("mapping keys must be plain text"),
                    )]);
                }
                let at = here(&stack);
                if stack.len() >= max_depth {
                    return Err(vec![too_deep(&at, max_depth)]);
                }
                if anchor != 0 {
                    note(
                        &mut soft,
                        Problem::at(&at, position("anchors are not allowed")),
                    )?;
                }
                if tag.is_some() {
                    note(
                        &mut soft,
                        Problem::at(&at, position("tags are not allowed")),
                    )?;
                }
                stack.push(if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq(Vec::new(), at)
                } else {
                    Frame::Map {
                        map: Map::new(),
                        at,
                        key: None,
                    }
                });
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq(items, _)) => Value::Array(items),
                _ => return Err(vec![Problem::root("the YAML event stream is inconsistent")]),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map { map, .. }) => Value::Object(map),
                _ => return Err(vec![Problem::root("the YAML event stream is inconsistent")]),
            },
        };
        match stack.last_mut() {
            None => root = Some(value),
            Some(Frame::Seq(items, _)) => items.push(value),
            Some(Frame::Map { map, key, .. }) => {
                if let Some(key) = key.take() {
                    // The first of duplicate keys stays; the duplicate is a problem already.
                    map.entry(key).or_insert(value);
                }
            }
        }
    }
    root.map(|root| (root, soft))
        .ok_or_else(|| vec![Problem::root("the document is empty")])
}

/// The YAML 1.2 core schema, for plain scalars; anything quoted or in a block is text.
fn resolve(raw: String, style: TScalarStyle) -> Result<Value, String> {
    if style != TScalarStyle::Plain {
        return Ok(Value::String(raw));
    }
    match raw.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => return Err("numbers must be finite".into()),
        _ => {}
    }
    let unsigned = raw.strip_prefix(['-', '+']).unwrap_or(&raw);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(match raw.parse::<i64>() {
            Ok(n) => Value::Number(n.into()),
            Err(_) => float(&raw)?,
        });
    }
    if let Some(hex) = raw.strip_prefix("0x")
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return i64::from_str_radix(hex, 16)
            .map(|n| Value::Number(n.into()))
            .map_err(|_| "the number is out of range".into());
    }
    if let Some(oct) = raw.strip_prefix("0o")
        && !oct.is_empty()
        && oct.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return i64::from_str_radix(oct, 8)
            .map(|n| Value::Number(n.into()))
            .map_err(|_| "the number is out of range".into());
    }
    if is_core_float(unsigned) {
        return float(&raw);
    }
    Ok(Value::String(raw))
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, the core schema's float without sign.
fn is_core_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

fn float(raw: &str) -> Result<Value, String> {
    raw.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| "numbers must be finite".into())
}

// --- JSON -------------------------------------------------------------------------------------

fn read_json(text: &str, max_depth: usize) -> Result<(Value, Vec<Problem>), Vec<Problem>> {
    let soft = RefCell::new(Vec::new());
    let hard = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Node {
        at: Pointer::root(),
        depth: 0,
        max_depth,
        soft: &soft,
        hard: &hard,
    };
    let outcome = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match outcome {
        Ok(value) => Ok((value, soft.into_inner())),
        Err(_) if hard.borrow().as_ref() == Some(&too_many()) => {
            let mut all = soft.into_inner();
            all.push(too_many());
            Err(all)
        }
        Err(e) => Err(vec![hard.into_inner().unwrap_or_else(|| {
            // serde_json's syntax messages name the position and the expectation, not the
            // text: "expected `,` or `}` at line 3 column 5".
            Problem::root(format!(
                "the document is not valid JSON: {}",
                json_reason(&e)
            ))
        })]),
    }
}

fn json_reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    // Messages from our own visitor are replaced by the recorded problem; the rest are
    // serde_json's and end with the position.
    match e.classify() {
        serde_json::error::Category::Eof => {
            format!("it ends early (line {}, column {})", e.line(), e.column())
        }
        _ => text.split(" at line").next().map_or_else(
            || text.clone(),
            |what| format!("{what} (line {}, column {})", e.line(), e.column()),
        ),
    }
}

/// Builds one JSON value, tracking where it is and how deep.
struct Node<'a> {
    at: Pointer,
    depth: usize,
    max_depth: usize,
    soft: &'a RefCell<Vec<Problem>>,
    hard: &'a RefCell<Option<Problem>>,
}

impl Node<'_> {
    fn child(&self, at: Pointer) -> Self {
        Node {
            at,
            depth: self.depth + 1,
            max_depth: self.max_depth,
            soft: self.soft,
            hard: self.hard,
        }
    }

    fn enter<E: serde::de::Error>(&self) -> Result<(), E> {
        if self.depth >= self.max_depth {
            *self.hard.borrow_mut() = Some(too_deep(&self.at, self.max_depth));
            return Err(E::custom("too deep"));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("numbers must be finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.child(self.at.index(items.len())))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        self.enter()?;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let at = self.at.key(&key);
            let value = access.next_value_seed(self.child(at.clone()))?;
            if map.contains_key(&key) {
                let mut soft = self.soft.borrow_mut();
                if soft.len() >= MAX_PROBLEMS {
                    *self.hard.borrow_mut() = Some(too_many());
                    return Err(serde::de::Error::custom("too many problems"));
                }
                soft.push(Problem::at(&at, "duplicate key"));
            } else {
                map.insert(key, value);
            }
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_bytes: 64 * 1024,
        max_depth: 32,
    };

    fn read(bytes: &[u8], syntax: Syntax) -> Result<(Value, Vec<Problem>), Vec<Problem>> {
        super::read(bytes, syntax, LIMITS)
    }

    fn yaml(text: &str) -> Result<(Value, Vec<Problem>), Vec<Problem>> {
        read(text.as_bytes(), Syntax::Yaml)
    }

    fn pointers(problems: &[Problem]) -> Vec<&str> {
        problems.iter().map(|p| p.pointer.as_str()).collect()
    }

    #[test]
    fn plain_scalars_resolve_by_the_core_schema() {
        let (v, soft) = yaml(
            "a: 1\nb: 0.5\nc: on\nd: true\ne: ~\nf: '1'\ng: 0x1f\nh: 1e3\ni: 1.\nj: .5\nk: 12ab\n",
        )
        .unwrap();
        assert!(soft.is_empty());
        assert_eq!(
            v,
            serde_json::json!({"a": 1, "b": 0.5, "c": "on", "d": true, "e": null, "f": "1",
                "g": 31, "h": 1000.0, "i": 1.0, "j": 0.5, "k": "12ab"})
        );
    }

    #[test]
    fn a_raw_nul_is_refused_even_where_yaml_would_stop_reading_at_it() {
        // A YAML reader takes the NUL for the end of the stream and finds a valid mapping.
        for text in ["a: 1\n# note\0\nb: 2\n", "a: 1\0"] {
            let problems = yaml(text).unwrap_err();
            assert!(problems[0].reason.contains("NUL"), "{problems:?}");
        }
        assert!(read(b"{\"a\": 1}\0", Syntax::Json).is_err());
    }

    #[test]
    fn anchors_aliases_tags_and_duplicates_are_all_reported() {
        let (_, soft) = yaml("a: &x 1\nb: *x\nc: !!str 2\nd:\n  e: 1\n  e: 2\n").unwrap();
        assert_eq!(pointers(&soft), ["/a", "/b", "/c", "/d/e"]);
        assert!(soft[0].reason.starts_with("anchors are not allowed"));
        assert!(soft[1].reason.starts_with("aliases are not allowed"));
        assert!(soft[2].reason.starts_with("tags are not allowed"));
        assert!(soft[3].reason.starts_with("duplicate key"));
    }

    #[test]
    fn json_duplicates_are_reported_and_the_first_value_stays() {
        let (v, soft) = read(br#"{"a": {"b": 1, "b": 2}}"#, Syntax::Json).unwrap();
        assert_eq!(pointers(&soft), ["/a/b"]);
        assert_eq!(v, serde_json::json!({"a": {"b": 1}}));
    }

    #[test]
    fn depth_is_limited_in_both_syntaxes() {
        let deep_json = format!(
            "{}{}",
            "{\"a\":".repeat(33),
            "1".to_owned() + &"}".repeat(33)
        );
        let err = read(deep_json.as_bytes(), Syntax::Json).unwrap_err();
        assert!(err[0].reason.contains("deeper than 32"), "{err:?}");
        let ok_json = format!(
            "{}{}",
            "{\"a\":".repeat(32),
            "1".to_owned() + &"}".repeat(32)
        );
        assert!(read(ok_json.as_bytes(), Syntax::Json).is_ok());

        let deep_yaml = format!("{}1{}", "[".repeat(33), "]".repeat(33));
        let err = yaml(&format!("a: {deep_yaml}")).unwrap_err();
        assert!(err[0].reason.contains("deeper than 32"), "{err:?}");
    }

    #[test]
    fn size_documents_and_shape_are_checked_first() {
        let big = format!("a: '{}'", "x".repeat(LIMITS.max_bytes));
        assert!(yaml(&big).unwrap_err()[0].reason.contains("larger than"));
        assert!(
            yaml("a: 1\n---\nb: 2\n").unwrap_err()[0]
                .reason
                .contains("one YAML document")
        );
        assert!(yaml("- 1\n").unwrap_err()[0].reason.contains("mapping"));
        assert!(yaml("   \n").unwrap_err()[0].reason.contains("empty"));
        assert!(
            read(b"[1]", Syntax::Json).unwrap_err()[0]
                .reason
                .contains("mapping")
        );
    }

    #[test]
    fn syntax_errors_name_a_position_and_never_the_text() {
        let err = yaml("a: [secret-value\n").unwrap_err();
        assert!(err[0].reason.contains("line"), "{err:?}");
        assert!(!err[0].reason.contains("secret"), "{err:?}");
        let err = read(br#"{"a": "secret-value" "b"}"#, Syntax::Json).unwrap_err();
        assert!(err[0].reason.contains("line 1"), "{err:?}");
        assert!(!err[0].reason.contains("secret"), "{err:?}");
        let err = yaml("a: \"secret\\qvalue\"\n").unwrap_err();
        assert!(!err[0].reason.contains("secret"), "{err:?}");
    }

    #[test]
    fn at_most_a_hundred_problems_are_listed() {
        let aliases = format!("a: &x 1\nb: [{}]\n", vec!["*x"; 5000].join(","));
        let problems = yaml(&aliases).unwrap_err();
        assert_eq!(problems.len(), MAX_PROBLEMS + 1);
        assert!(
            problems[MAX_PROBLEMS]
                .reason
                .starts_with("more than 100 problems")
        );
        let keys: String = (0..500).map(|_| "\"k\": 1,").collect();
        let duplicates = format!("{{{keys} \"end\": 1}}");
        let problems = read(duplicates.as_bytes(), Syntax::Json).unwrap_err();
        assert_eq!(problems.len(), MAX_PROBLEMS + 1);
        assert_eq!(problems[0].reason, "duplicate key");
        // Up to a hundred are all listed, and the value is still read.
        let (_, soft) = yaml("a: &x 1\nb: *x\n").unwrap();
        assert_eq!(soft.len(), 2);
        let exactly = format!("a: &x 1\nb: [{}]\n", vec!["*x"; 99].join(","));
        let (_, soft) = yaml(&exactly).unwrap();
        assert_eq!(soft.len(), MAX_PROBLEMS);
    }

    #[test]
    fn complex_keys_are_refused() {
        assert!(yaml("? [a]\n: 1\n").is_err());
    }
}

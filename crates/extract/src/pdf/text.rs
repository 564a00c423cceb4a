//! A content stream's text, turned back into lines. A PDF draws strings at positions; it has
//! no lines or words. Strings drawn at the same height (within a fraction of the font size)
//! join one line, a space between them when the text moved in between or a `TJ` array leaves
//! a gap wider than a fifth of the font size; a string lower or higher starts the next line.
//! The positions follow the current transformation (`cm`, `q`/`Q`, forms' matrices) and the
//! text line matrix (`BT`, `Td`, `TD`, `Tm`, `T*`, `'`, `"`); widths are not computed, so a
//! gap inside one run of text is not seen.

use std::rc::Rc;

use lopdf::content::Content;
use lopdf::{Dictionary, Encoding, Object};

use super::{Font, Reader, max_form_depth};
use crate::sink::Lines;
use crate::{Sink, Skip, TableUnit};

/// The longest line kept, in bytes; past it a line is cut.
const MAX_LINE: usize = 64 << 10;

/// Text a page holds before it is handed to the sink.
const RUN: usize = 256 << 10;

/// A `TJ` adjustment, in thousandths of the font size, wider than which is a space between
/// words: kerning moves glyphs by tens.
const WORD_GAP: f32 = 200.0;

/// Saved graphics states (`q`) kept; deeper nesting is not a real page's.
const MAX_SAVED: usize = 256;

/// `[a b c d e f]`, the affine matrix `[a b 0; c d 0; e f 1]`.
pub(super) type Matrix = [f32; 6];

pub(super) const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `m` then `n`: the product `m × n`.
fn multiply(m: &Matrix, n: &Matrix) -> Matrix {
    [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]
}

/// A matrix written as six numbers.
pub(super) fn matrix(numbers: &[Object]) -> Option<Matrix> {
    let mut m = IDENTITY;
    if numbers.len() != 6 {
        return None;
    }
    for (slot, number) in m.iter_mut().zip(numbers) {
        *slot = number.as_float().ok()?;
    }
    Some(m)
}

/// One page's lines on their way to the sink, handed over a run at a time.
pub(super) struct Page<'s> {
    path: &'s [String],
    sink: &'s mut dyn Sink,
    /// Whether any line reached the sink.
    pub handed: bool,
    /// Whether a line was cut at [`MAX_LINE`]: the rest of it was not read.
    cut: bool,
    number: u32,
    lines: Lines,
    line: String,
    /// Lines of the page so far, the empty ones not counted.
    count: u64,
    /// The height on the page of the line being read.
    y: Option<f32>,
}

impl<'s> Page<'s> {
    pub fn new(number: u32, path: &'s [String], sink: &'s mut dyn Sink) -> Self {
        Self {
            path,
            sink,
            handed: false,
            cut: false,
            number,
            lines: Lines::default(),
            line: String::new(),
            count: 0,
            y: None,
        }
    }

    /// Adds a string drawn at height `y`, `tolerance` from it still being the same line.
    fn show(&mut self, text: &str, y: f32, tolerance: f32, moved: bool) {
        match self.y {
            Some(line) if (y - line).abs() > tolerance => self.end_line(),
            Some(_) if moved => self.space(),
            _ => {}
        }
        self.y = Some(y);
        for c in text.chars() {
            if self.line.len() >= MAX_LINE {
                self.cut = true;
                break;
            }
            self.line.push(if c.is_control() { ' ' } else { c });
        }
    }

    fn space(&mut self) {
        if !self.line.is_empty() && !self.line.ends_with(' ') {
            self.line.push(' ');
        }
    }

    /// A form field's value: a line of its own.
    pub fn field(&mut self, value: &str) {
        self.end_line();
        self.show(value, f32::NAN, 0.0, false);
        self.end_line();
    }

    fn end_line(&mut self) {
        self.y = None;
        let line = self.line.trim();
        if !line.is_empty() {
            self.count += 1;
            self.lines.push(self.count, line);
            if self.lines.text.len() >= RUN {
                self.flush();
            }
        }
        self.line.clear();
    }

    /// Hands what is left of the page to the sink: whether any of the page reached it, and
    /// whether a line of it was cut.
    pub fn finish(mut self) -> (bool, bool) {
        self.end_line();
        self.flush();
        (self.handed, self.cut)
    }

    fn flush(&mut self) {
        if self.lines.is_empty() {
            return;
        }
        let unit = TableUnit::Page { page: self.number };
        self.sink.values(self.path, &self.lines.column(&[], unit));
        self.handed = true;
        self.lines.clear();
    }
}

/// The text state of one content stream.
struct State<'d> {
    /// The current transformation, and the ones `q` saved.
    ctm: Matrix,
    saved: Vec<Matrix>,
    /// The text line matrix.
    line: Matrix,
    leading: f32,
    font: Option<Rc<Encoding<'d>>>,
    /// A font was selected whose text does not map back to characters.
    unmapped_font: bool,
    size: f32,
    /// The text moved since the last string was drawn.
    moved: bool,
}

impl State<'_> {
    /// Moves the text line start by `(tx, ty)`.
    fn translate(&mut self, tx: f32, ty: f32) {
        self.line = multiply(&[1.0, 0.0, 0.0, 1.0, tx, ty], &self.line);
        self.moved = true;
    }

    fn next_line(&mut self) {
        self.translate(0.0, -self.leading);
    }

    /// The height on the page the next string is drawn at, and how far from it a string
    /// still is on the same line: a third of the font size, as it is drawn.
    fn position(&self) -> (f32, f32) {
        let m = multiply(&self.line, &self.ctm);
        let scale = m[2].hypot(m[3]);
        (m[5], (self.size.abs() * scale / 3.0).max(0.5))
    }
}

/// Reads the text `content` draws, with the fonts and forms of `resources` (the innermost
/// first), into `page`. A form drawn inside is read at `depth + 1`.
pub(super) fn run<'d>(
    reader: &mut Reader<'d>,
    content: &[u8],
    resources: &[&'d Dictionary],
    page: &mut Page<'_>,
    ctm: Matrix,
    depth: usize,
) -> Result<(), Skip> {
    let mut state = State {
        ctm,
        saved: Vec::new(),
        line: IDENTITY,
        leading: 0.0,
        font: None,
        unmapped_font: false,
        size: 0.0,
        moved: false,
    };
    for operation in Content::decode_iter(content) {
        let Ok(operation) = operation else {
            return Err(Skip::CorruptPdf);
        };
        let operands = &operation.operands;
        let number = |i: usize| operands.get(i).and_then(|o| o.as_float().ok());
        match operation.operator.as_str() {
            "q" if state.saved.len() < MAX_SAVED => state.saved.push(state.ctm),
            "Q" => state.ctm = state.saved.pop().unwrap_or(ctm),
            "cm" => {
                if let Some(m) = matrix(operands) {
                    state.ctm = multiply(&m, &state.ctm);
                }
            }
            "BT" => state.line = IDENTITY,
            "Tf" => {
                let name = operands.first().and_then(|o| o.as_name().ok());
                let font = match name {
                    Some(name) => reader.encoding(resources, name)?,
                    None => Font::Missing,
                };
                state.unmapped_font = matches!(font, Font::Unmapped);
                state.font = match font {
                    Font::Mapped(encoding) => Some(encoding),
                    Font::Unmapped | Font::Missing => None,
                };
                state.size = number(1).unwrap_or(0.0);
            }
            "TL" => state.leading = number(0).unwrap_or(0.0),
            "Td" | "TD" => {
                let (tx, ty) = (number(0).unwrap_or(0.0), number(1).unwrap_or(0.0));
                if operation.operator == "TD" {
                    state.leading = -ty;
                }
                state.translate(tx, ty);
            }
            "Tm" => {
                if let Some(m) = matrix(operands) {
                    state.line = m;
                    state.moved = true;
                }
            }
            "T*" => state.next_line(),
            "Tj" => show(reader, &mut state, page, operands.first()),
            "'" => {
                state.next_line();
                show(reader, &mut state, page, operands.first());
            }
            "\"" => {
                state.next_line();
                show(reader, &mut state, page, operands.get(2));
            }
            "TJ" => {
                let Some(Ok(items)) = operands.first().map(Object::as_array) else {
                    continue;
                };
                for item in items {
                    match item {
                        Object::String(..) => show(reader, &mut state, page, Some(item)),
                        _ if item.as_float().is_ok_and(|gap| -gap > WORD_GAP) => page.space(),
                        _ => {}
                    }
                }
            }
            "BI" => reader.images = true,
            "Do" if depth < max_form_depth() => {
                let Some(name) = operands.first().and_then(|o| o.as_name().ok()) else {
                    continue;
                };
                if let Some(form) = reader.form(resources, name)? {
                    let mut inner: Vec<&'d Dictionary> = form.resources.into_iter().collect();
                    inner.extend_from_slice(resources);
                    let ctm = multiply(&form.matrix.unwrap_or(IDENTITY), &state.ctm);
                    run(reader, &form.content, &inner, page, ctm, depth + 1)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Draws the string `operand` in the current font.
fn show(
    reader: &mut Reader<'_>,
    state: &mut State<'_>,
    page: &mut Page<'_>,
    operand: Option<&Object>,
) {
    let Some(Object::String(bytes, _)) = operand else {
        return;
    };
    let Some(encoding) = state.font.as_ref() else {
        if state.unmapped_font && !bytes.is_empty() {
            reader.unmapped = true;
        }
        return;
    };
    let Ok(text) = encoding.bytes_to_string(bytes) else {
        reader.unmapped = true;
        return;
    };
    let (y, tolerance) = state.position();
    page.show(&text, y, tolerance, state.moved);
    state.moved = false;
}

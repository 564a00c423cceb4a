//! What every rewrite of a file shares: an [`Editor`] that sees the file's values as a scan's
//! detection sees them and names the [`Change`]s, and the [`Refusal`] that ends a rewrite with
//! nothing written. A rewriter hands the editor the same runs its format's reader hands a sink
//! (the same values, rendered the same way, grouped the same way), so that what detection
//! found in a scan it finds again here.

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::{Column, TableUnit};

/// One change to a value: bytes `start..end` of it, as its line shows it, become `text`.
#[derive(Clone, PartialEq, Eq)]
pub struct Change {
    /// The 1-based line of the run the value is on (the `rows` an [`Editor`] is handed count
    /// lines, not the file's rows).
    pub line: u64,
    pub start: usize,
    pub end: usize,
    pub text: String,
}

impl std::fmt::Debug for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Change")
            .field("line", &self.line)
            .field("start", &self.start)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

/// Who decides what changes in a rewrite.
pub trait Editor {
    /// Whether the values of the column named `field` (its names joined by `.`, as
    /// `detect::Location::field` names a table's column, a sheet's column, or `""` for a
    /// document's paragraphs) may change: the others are copied.
    fn wants(&self, field: &str) -> bool;

    /// The changes to a run of one column's values, one value per line of `column.text`;
    /// `column.rows` are the lines' own numbers, 1-based. Changes of one line do not overlap.
    fn edit(&mut self, column: &Column<'_>) -> Vec<Change>;
}

/// Why a file is not rewritten. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The file, or a part or column chunk to change, cannot be read: corrupt, encrypted,
    /// compressed with LZO, or past the limits a scan reads it under.
    Unreadable,
    /// A change to a value its column's type cannot hold as changed: a float, a date, a
    /// decimal or a timestamp; text in an integer column or a number cell; a fixed-length
    /// value's length.
    ColumnType,
    /// A change to a workbook cell that holds a formula: the cell shows what the formula
    /// computes, and a spreadsheet would compute it again over the change.
    Formula,
    /// A change to text that the document's markup splits where no rewrite is safe: across a
    /// field code, a tracked change, a hyperlink, a tab or a break, or a run holding something
    /// other than text; or text a workbook keeps with its phonetic reading.
    Markup,
    /// The writer failed on what it was given, or what it wrote did not read back as meant.
    Write,
}

/// The field a run's values are in, as `detect::Location::field` will name a finding's: a
/// table's or a sheet's column by its names joined by `.` (a sheet's column without a header
/// by its letters), and none for a document's paragraphs.
pub(crate) fn field(column: &Column<'_>) -> String {
    let joined: String = column
        .names
        .join(".")
        .chars()
        .take(detect::MAX_FIELD)
        .collect();
    match column.unit {
        TableUnit::Cell { column: at, .. } if joined.is_empty() => detect::column_letters(at),
        TableUnit::Paragraph { .. } | TableUnit::Slide { .. } | TableUnit::Page { .. } => {
            String::new()
        }
        _ => joined,
    }
}

/// A line of a run that the editor changed: its row in the file, its text as the editor saw
/// it, and the changes, in order, not overlapping.
#[derive(Debug)]
pub(crate) struct Edited {
    /// The line's index in its run, from 0.
    pub line: usize,
    pub row: u64,
    pub text: String,
    pub changes: Vec<Change>,
}

impl Edited {
    /// The line's text with its changes made.
    pub fn changed(&self) -> Result<String, Refusal> {
        apply(&self.text, &self.changes)
    }
}

/// Hands a run whose `rows` are the file's (a sheet's rows, a part's paragraphs) to `editor`
/// with its lines numbered from 1, as [`Editor::edit`] expects, and gives each line it changed
/// back with its row. A change outside its line, or overlapping another, refuses the rewrite.
pub(crate) fn ask(editor: &mut dyn Editor, column: &Column<'_>) -> Result<Vec<Edited>, Refusal> {
    let lines: Vec<&str> = column.text.split_terminator('\n').collect();
    if lines.len() != column.rows.len() {
        return Err(Refusal::Unreadable);
    }
    let numbers: Vec<u64> = (1..=lines.len() as u64).collect();
    let mut asked = editor.edit(&Column {
        rows: &numbers,
        ..*column
    });
    asked.sort_by_key(|c| (c.line, c.start));
    let mut edited: Vec<Edited> = Vec::new();
    for change in asked {
        let index = usize::try_from(change.line)
            .ok()
            .and_then(|l| l.checked_sub(1))
            .filter(|&l| l < lines.len())
            .ok_or(Refusal::Write)?;
        match edited.last_mut() {
            Some(last) if last.line == index => last.changes.push(change),
            _ => edited.push(Edited {
                line: index,
                row: column.rows[index],
                text: lines[index].to_owned(),
                changes: vec![change],
            }),
        }
    }
    Ok(edited)
}

/// `text` with `changes` (in order, not overlapping, each on char boundaries) made.
pub(crate) fn apply(text: &str, changes: &[Change]) -> Result<String, Refusal> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for change in changes {
        let (start, end) = (change.start, change.end);
        if start < at || end < start || !text.is_char_boundary(start) {
            return Err(Refusal::Write);
        }
        let kept = text.get(at..start).ok_or(Refusal::Write)?;
        text.get(start..end).ok_or(Refusal::Write)?;
        out.push_str(kept);
        out.push_str(&change.text);
        at = end;
    }
    out.push_str(text.get(at..).ok_or(Refusal::Write)?);
    Ok(out)
}

/// A digest of the values a reader hands over, in order, each with its column and row: what a
/// rewrite expects to read back from what it wrote (every value as it was, the changed ones
/// changed), computed again on the new file and compared, so that a file that would not read
/// back as meant is never written.
#[derive(Debug, Default)]
pub(crate) struct Digest {
    hasher: DefaultHasher,
    values: u64,
}

impl Digest {
    pub fn value(&mut self, column: &Column<'_>, row: u64, text: &str) {
        column.names.hash(&mut self.hasher);
        unit_key(column.unit).hash(&mut self.hasher);
        row.hash(&mut self.hasher);
        text.hash(&mut self.hasher);
        self.values += 1;
    }

    pub fn finish(&self) -> (u64, u64) {
        (self.hasher.finish(), self.values)
    }
}

/// What a run's unit says of where its values are, hashable.
fn unit_key(unit: TableUnit<'_>) -> (u8, String, u32) {
    match unit {
        TableUnit::Row => (0, String::new(), 0),
        TableUnit::Record => (1, String::new(), 0),
        TableUnit::Cell { sheet, column } => (2, sheet.to_owned(), column),
        TableUnit::Paragraph { part } => (3, part.to_owned(), 0),
        TableUnit::Slide { slide } => (4, String::new(), slide),
        TableUnit::Page { page } => (5, String::new(), page),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(line: u64, start: usize, end: usize, text: &str) -> Change {
        Change {
            line,
            start,
            end,
            text: text.into(),
        }
    }

    #[test]
    fn changes_are_made_in_order_and_refused_outside_their_line() {
        let changes = [change(1, 4, 15, "900-71-4871"), change(1, 20, 21, "X")];
        assert_eq!(
            apply("SSN 536-22-4871 and a b", &changes).unwrap(),
            "SSN 900-71-4871 and X b"
        );
        assert_eq!(apply("abc", &[change(1, 2, 9, "x")]), Err(Refusal::Write));
        let overlapping = [change(1, 0, 2, "x"), change(1, 1, 3, "y")];
        assert_eq!(apply("abcd", &overlapping), Err(Refusal::Write));
        assert_eq!(apply("é", &[change(1, 1, 2, "x")]), Err(Refusal::Write));
    }

    struct Every;
    impl Editor for Every {
        fn wants(&self, _: &str) -> bool {
            true
        }
        fn edit(&mut self, column: &Column<'_>) -> Vec<Change> {
            assert_eq!(column.rows, [1, 2, 3], "lines are numbered, not rows");
            vec![
                change(3, 0, 1, "Z"),
                change(1, 0, 1, "X"),
                change(1, 1, 2, "Y"),
            ]
        }
    }

    #[test]
    fn an_editor_sees_lines_and_its_changes_come_back_with_their_rows() {
        let names = ["SSN".to_owned()];
        let column = Column {
            names: &names,
            text: "ab\ncd\nef\n",
            rows: &[2, 5, 9],
            unit: TableUnit::Cell {
                sheet: "Payroll",
                column: 1,
            },
        };
        let edited = ask(&mut Every, &column).unwrap();
        let rows: Vec<(u64, String)> = edited
            .iter()
            .map(|e| (e.row, e.changed().unwrap()))
            .collect();
        assert_eq!(rows, [(2, "XY".to_owned()), (9, "Zf".to_owned())]);
        assert_eq!(field(&column), "SSN");
        let unnamed = Column {
            names: &[],
            ..column
        };
        assert_eq!(field(&unnamed), "B");
    }
}

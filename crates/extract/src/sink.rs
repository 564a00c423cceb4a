//! Whoever reads what the walk opens: the members' contents and the table files' columns.

use std::io::{self, Read};

pub use detect::TableUnit;

use crate::Skip;

/// The longest member name kept, in bytes: a hostile archive's names are not the place to
/// spend memory, and a location quotes them (eleven of them fit a stored location's 4 KiB).
pub const MAX_NAME: usize = 256;

/// Whoever reads the members: detection, for a scan or `dpsctl detect`.
pub trait Sink {
    /// One member that is not itself a container, its content decompressed. `path` names it
    /// from the object down (the object's own name first); `name` is the file name whose
    /// extension hints its format (`logs/app.log` for a member `logs/app.log.gz`). An error
    /// from reading `content` is handed back unchanged: the walk tells a limit from a corrupt
    /// member and reports it through [`Sink::skipped`].
    fn member(&mut self, path: &[String], name: &str, content: &mut dyn Read) -> io::Result<()>;

    /// A run of one table column's values (a Parquet file's, or a member's), read at `path`.
    fn values(&mut self, path: &[String], column: &Column<'_>);

    /// A member, or what is left of a container, that was not read, and why.
    fn skipped(&mut self, path: &[String], reason: Skip);
}

/// Values of one column of a table file (a Parquet column, an Avro field), one per line, each
/// with its row or record.
#[derive(Debug, Clone, Copy)]
pub struct Column<'a> {
    /// The column's names from the outermost in (`["customer", "ssn"]`), a list's and a map's
    /// wrappers left out.
    pub names: &'a [String],
    /// The values, each on a line of its own: a line break inside a value is a space here.
    pub text: &'a str,
    /// The 1-based row (or record) of the file each line is in: a list's values share it.
    pub rows: &'a [u64],
    /// What `rows` count: rows (Parquet, a sheet's column) or records (Avro), as detection
    /// names them.
    pub unit: TableUnit<'a>,
}

/// What reading one table file (Parquet, Avro) did, once it could be opened.
#[derive(Debug, Default)]
pub(crate) struct TableRead {
    /// Whether any values reached the sink.
    pub handed: bool,
    /// Why columns, or the rest of the file, were left unread, each reason once.
    pub skips: Vec<Skip>,
}

/// A table column's values on their way to the sink, each on a line of its own with its row:
/// what every table reader hands over as a [`Column`].
#[derive(Debug, Default)]
pub(crate) struct Lines {
    pub text: String,
    pub rows: Vec<u64>,
}

impl Lines {
    /// Adds `value` as a line at `row`; an empty value is none.
    pub fn push(&mut self, row: u64, value: &str) {
        let admitted: Result<(), std::convert::Infallible> =
            self.push_with(row, |text| text.push_str(value), |_| Ok(()));
        let _ = admitted;
    }

    /// Renders a value at the end of the text and adds it as a line at `row`, once `admit`
    /// accepts its length; refused, it is taken back. A value rendered empty is none. A line
    /// break inside a value would split it in two: a space keeps its offsets.
    pub fn push_with<E>(
        &mut self,
        row: u64,
        render: impl FnOnce(&mut String),
        admit: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.text.len();
        render(&mut self.text);
        if self.text.len() == start {
            return Ok(());
        }
        if let Err(refused) = admit(self.text.len() - start) {
            self.text.truncate(start);
            return Err(refused);
        }
        if self.text[start..].contains(['\n', '\r']) {
            let cleaned = self.text[start..].replace(['\n', '\r'], " ");
            self.text.truncate(start);
            self.text.push_str(&cleaned);
        }
        self.text.push('\n');
        self.rows.push(row);
        Ok(())
    }

    /// The lines as the column `names` of `unit`.
    pub fn column<'a>(&'a self, names: &'a [String], unit: TableUnit<'a>) -> Column<'a> {
        Column {
            names,
            text: &self.text,
            rows: &self.rows,
            unit,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.rows.clear();
    }
}

//! Which files can be written again with some values changed, and the rewrite of each: a
//! Parquet file column by column, a workbook cell by cell. Every other format (Avro, PDF,
//! Word and PowerPoint documents, archives) is read, never rewritten.

use bytes::Bytes;

use crate::edit::{Editor, Refusal};
use crate::{Container, Limits};

/// A file a rewrite can change in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewritable {
    Parquet,
    /// An XLSX or XLSM workbook.
    Workbook,
}

/// What `bytes` are, if a rewrite can change them: a ZIP is a workbook by the part that makes
/// it one, as a scan tells it.
pub fn rewritable(bytes: &[u8]) -> Option<Rewritable> {
    match crate::container(bytes)? {
        Container::Parquet => Some(Rewritable::Parquet),
        Container::Zip => {
            let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).ok()?;
            (archive.index_for_name(crate::sheet::WORKBOOK).is_some())
                .then_some(Rewritable::Workbook)
        }
        _ => None,
    }
}

/// `bytes`, which are `kind`, with the changes `editor` asks for; `None` when it asks for
/// none. Nothing is written on a refusal.
pub fn rewrite(
    kind: Rewritable,
    bytes: &[u8],
    limits: Limits,
    editor: &mut dyn Editor,
) -> Result<Option<Vec<u8>>, Refusal> {
    match kind {
        Rewritable::Parquet => {
            crate::columnar::rewrite::rewrite(Bytes::copy_from_slice(bytes), limits, editor)
        }
        Rewritable::Workbook => crate::office::workbook::rewrite(bytes, limits, editor),
    }
}

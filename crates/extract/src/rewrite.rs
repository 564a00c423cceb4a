//! Which files can be written again with some values changed, and the rewrite of each: a
//! Parquet file column by column, an Avro file block by block, a workbook cell by cell, a Word
//! document in its text runs. Every other format (XLS, XLSB, ODF, PDF, PowerPoint, archives) is
//! read, never rewritten.

use bytes::Bytes;

use crate::edit::{Editor, Refusal};
use crate::{Container, Limits};

/// A file a rewrite can change in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewritable {
    Parquet,
    Avro,
    /// An XLSX or XLSM workbook.
    Workbook,
    /// A Word (DOCX) document.
    Document,
}

/// What `bytes` are, if a rewrite can change them: a ZIP is a workbook or a document by the
/// part that makes it one, as a scan tells them.
pub fn rewritable(bytes: &[u8]) -> Option<Rewritable> {
    match crate::container(bytes)? {
        Container::Parquet => Some(Rewritable::Parquet),
        Container::Avro => Some(Rewritable::Avro),
        Container::Zip => {
            let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).ok()?;
            if archive.index_for_name(crate::sheet::WORKBOOK).is_some() {
                Some(Rewritable::Workbook)
            } else if archive.index_for_name(crate::document::WORD).is_some() {
                Some(Rewritable::Document)
            } else {
                None
            }
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
        Rewritable::Avro => crate::avro_rewrite::rewrite(bytes, limits, editor),
        Rewritable::Workbook => crate::office::workbook::rewrite(bytes, limits, editor),
        Rewritable::Document => crate::office::word::rewrite(bytes, limits, editor),
    }
}

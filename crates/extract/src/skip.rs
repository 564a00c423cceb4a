//! Why a container, a table file, or one of their members or columns was not read, whole or
//! in part.

/// Every way an archive or one of its members can be left unread. The codes are what a scan's
/// coverage counts (`skip_reasons`) and what a finding's location never holds: no code quotes
/// the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// Nested deeper than [`crate::Limits::max_depth`].
    ArchiveDepth,
    /// Past [`crate::Limits::max_members`] members of one object.
    ArchiveMembers,
    /// The object's decompressed bytes passed [`crate::Limits::max_bytes`].
    ArchiveBytes,
    /// A member inflated more than [`crate::Limits::max_ratio`] times the bytes it was
    /// compressed into: a decompression bomb.
    CompressionRatio,
    /// A ZIP whose directory or member cannot be read.
    CorruptZip,
    /// A ZIP member that needs a password.
    EncryptedZip,
    /// A ZIP member compressed with a method other than stored or deflate.
    UnsupportedCompression,
    /// A TAR whose headers or data cannot be read, a truncated one included.
    CorruptTar,
    /// A gzip stream inside an archive that is corrupt or truncated.
    CorruptGzip,
    /// A bzip2 stream that is corrupt or truncated.
    CorruptBzip2,
    /// A Zstandard stream that is corrupt, truncated, or asks for a window past 32 MiB.
    CorruptZstd,
    /// A member that needs random access (a ZIP inside an archive) could not be written to a
    /// temporary file.
    Spool,
    /// A Parquet file whose footer, a page or a column chunk cannot be read, a truncated one
    /// included.
    CorruptParquet,
    /// A Parquet file whose footer is encrypted (modular encryption, `PARE`): no key, no read.
    EncryptedParquet,
    /// A Parquet page larger than 64 MiB, or a row of a repeated column spanning more than
    /// two million values: past what a scan holds at once.
    ParquetLimit,
    /// An Avro file whose header, or a block, cannot be read, a truncated one included.
    CorruptAvro,
    /// An Avro block that inflates past 32 MiB, a value or collection claiming more, or a file
    /// of more than 4,096 distinct fields.
    AvroLimit,
    /// A workbook whose parts cannot be read, or a sheet of it that cannot; a compound file
    /// (OLE2) whose header, allocation table or directory cannot be read.
    CorruptSpreadsheet,
    /// A workbook whose shared strings are past 64 MiB (32 MiB in an XLS), or an ODS whose
    /// repeated cells expand past a million, or place a value off the sheet's grid; an ODS
    /// cell's text past 1 MiB (the rest of it).
    SpreadsheetLimit,
    /// A Word document or a presentation whose text part cannot be read.
    CorruptDocument,
    /// A paragraph of a Word document, a presentation or an OpenDocument text that reached
    /// 1 MiB: the rest of it.
    DocumentLimit,
    /// A PDF whose structure, or a page's content, cannot be read, a truncated one included.
    CorruptPdf,
    /// A PDF that needs a password to open (one whose user password is empty is read).
    EncryptedPdf,
    /// A PDF with no text, only images: a scan, which no OCR reads here.
    ImageOnlyPdf,
    /// A PDF past 128 MiB, a stream inflating past 64 MiB, content past the file's length
    /// times the ratio limit, more than 256 fonts, a line past 64 KiB (the rest of it), or a
    /// parse that outgrew the caps of the child process it ran in ([`crate::isolation`]).
    PdfLimit,
    /// Text of a PDF drawn in a font that does not map back to characters (a composite font
    /// without a `ToUnicode` map): drawn, but not readable as text.
    UnmappedPdfText,
    /// A compound file (OLE2) that holds no Excel 97–2003 workbook: a Word or PowerPoint
    /// 97–2003 file, an Excel 5.0/95 workbook, or anything else.
    UnsupportedFormat,
    /// An office file protected by a password: an XLS workbook that is encrypted, an Office
    /// Open XML file wrapped in an encrypted compound file, or an OpenDocument file whose parts
    /// are encrypted. No key, no read.
    EncryptedOffice,
}

impl Skip {
    pub const ALL: [Skip; 28] = [
        Skip::ArchiveDepth,
        Skip::ArchiveMembers,
        Skip::ArchiveBytes,
        Skip::CompressionRatio,
        Skip::CorruptZip,
        Skip::EncryptedZip,
        Skip::UnsupportedCompression,
        Skip::CorruptTar,
        Skip::CorruptGzip,
        Skip::CorruptBzip2,
        Skip::CorruptZstd,
        Skip::Spool,
        Skip::CorruptParquet,
        Skip::EncryptedParquet,
        Skip::ParquetLimit,
        Skip::CorruptAvro,
        Skip::AvroLimit,
        Skip::CorruptSpreadsheet,
        Skip::SpreadsheetLimit,
        Skip::CorruptDocument,
        Skip::DocumentLimit,
        Skip::CorruptPdf,
        Skip::EncryptedPdf,
        Skip::ImageOnlyPdf,
        Skip::PdfLimit,
        Skip::UnmappedPdfText,
        Skip::UnsupportedFormat,
        Skip::EncryptedOffice,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Skip::ArchiveDepth => "archive_depth",
            Skip::ArchiveMembers => "archive_members",
            Skip::ArchiveBytes => "archive_bytes",
            Skip::CompressionRatio => "compression_ratio",
            Skip::CorruptZip => "corrupt_zip",
            Skip::EncryptedZip => "encrypted_zip",
            Skip::UnsupportedCompression => "unsupported_compression",
            Skip::CorruptTar => "corrupt_tar",
            Skip::CorruptGzip => "corrupt_gzip",
            Skip::CorruptBzip2 => "corrupt_bzip2",
            Skip::CorruptZstd => "corrupt_zstd",
            Skip::Spool => "spool_failed",
            Skip::CorruptParquet => "corrupt_parquet",
            Skip::EncryptedParquet => "encrypted_parquet",
            Skip::ParquetLimit => "parquet_limit",
            Skip::CorruptAvro => "corrupt_avro",
            Skip::AvroLimit => "avro_limit",
            Skip::CorruptSpreadsheet => "corrupt_spreadsheet",
            Skip::SpreadsheetLimit => "spreadsheet_limit",
            Skip::CorruptDocument => "corrupt_document",
            Skip::DocumentLimit => "document_limit",
            Skip::CorruptPdf => "corrupt_pdf",
            Skip::EncryptedPdf => "encrypted_pdf",
            Skip::ImageOnlyPdf => "image_only_pdf",
            Skip::PdfLimit => "pdf_limit",
            Skip::UnmappedPdfText => "unmapped_pdf_text",
            Skip::UnsupportedFormat => "unsupported_format",
            Skip::EncryptedOffice => "encrypted_office",
        }
    }

    /// Whether no further member of the object is read after this one.
    pub fn stops_the_object(self) -> bool {
        matches!(self, Skip::ArchiveBytes | Skip::ArchiveMembers)
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

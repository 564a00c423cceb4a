//! What a file is before it is scanned: compressed or not, text or binary, which encoding,
//! which structure. Decided from the caller's hints and the first bytes.

/// What the caller knows about the content. Both fields are optional; the bytes decide when
/// they are absent or wrong.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hint<'a> {
    /// A MIME type such as `text/csv` or `application/json; charset=utf-8`.
    pub content_type: Option<&'a str>,
    /// The file's name or path; only its extensions are used.
    pub file_name: Option<&'a str>,
}

/// How the text is laid out, which decides what a finding's location says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    /// Comma-separated with a header row.
    Csv,
    /// Tab-separated with a header row.
    Tsv,
    /// One JSON document, or one per line (NDJSON, JSON Lines).
    Json,
    /// XML or HTML, read as text with its markup blanked ([`crate::markup`]): its locations
    /// are plain text's, line and column of the file itself.
    Markup,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Json => "json",
            Format::Markup => "markup",
        }
    }
}

/// How the bytes became text. Finding offsets index the text as decoded to UTF-8, which for
/// UTF-8 content are the file's own byte offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16Le,
    Utf16Be,
    /// Not valid UTF-8: each byte is one character of ISO 8859-1.
    Latin1,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf16Le => "utf-16le",
            Encoding::Utf16Be => "utf-16be",
            Encoding::Latin1 => "latin-1",
        }
    }
}

/// Why content was not scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// A known binary format, by its magic number (`pdf`, `zip`, `png`, ...).
    BinaryFormat(&'static str),
    /// NUL bytes in text that is not UTF-16 with a byte order mark.
    NulBytes,
    /// Too many control characters to be text.
    ControlCharacters,
    /// The gzip stream is corrupt or truncated.
    CorruptGzip,
    /// More than [`crate::MAX_FINDINGS_PER_OBJECT`] findings: a caller keeps an object's
    /// findings together, and a gzip of one value repeated inflates a thousandfold.
    TooManyFindings,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::BinaryFormat(kind) => kind,
            SkipReason::NulBytes => "nul_bytes",
            SkipReason::ControlCharacters => "control_characters",
            SkipReason::CorruptGzip => "corrupt_gzip",
            SkipReason::TooManyFindings => "findings_limit",
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::BinaryFormat(kind) => write!(f, "binary content ({kind})"),
            SkipReason::NulBytes => f.write_str("binary content (NUL bytes)"),
            SkipReason::ControlCharacters => f.write_str("binary content (control characters)"),
            SkipReason::CorruptGzip => f.write_str("corrupt or truncated gzip stream"),
            SkipReason::TooManyFindings => f.write_str("more findings than one object may have"),
        }
    }
}

/// How many leading bytes the sniffing looks at.
pub const SNIFF_LEN: usize = 8192;

pub(crate) const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// Whether the content is gzip, by magic number.
pub(crate) fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(GZIP_MAGIC)
}

/// Magic numbers of binary formats that are never scanned as text.
const MAGIC: &[(&[u8], &str)] = &[
    (b"%PDF-", "pdf"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"\x7fELF", "elf"),
    (b"SQLite format 3\0", "sqlite"),
    (b"PAR1", "parquet"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!\x1a\x07", "rar"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\0", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\0asm", "wasm"),
    (b"\xca\xfe\xba\xbe", "java_class"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "ole2"),
    (b"Obj\x01", "avro"),
    (b"ORC", "orc"),
];

/// The encoding of decompressed content, or why it is not text, from its first bytes.
/// Returns the encoding and the length of the byte order mark to drop.
pub(crate) fn sniff(head: &[u8]) -> Result<(Encoding, usize), SkipReason> {
    if head.starts_with(b"\xef\xbb\xbf") {
        return Ok((Encoding::Utf8, 3));
    }
    if head.starts_with(b"\xff\xfe") {
        return Ok((Encoding::Utf16Le, 2));
    }
    if head.starts_with(b"\xfe\xff") {
        return Ok((Encoding::Utf16Be, 2));
    }
    if let Some((_, kind)) = MAGIC.iter().find(|(magic, _)| head.starts_with(magic)) {
        return Err(SkipReason::BinaryFormat(kind));
    }
    let sample = &head[..head.len().min(SNIFF_LEN)];
    if sample.contains(&0) {
        return Err(SkipReason::NulBytes);
    }
    // Text has tabs, line breaks and form feeds; anything else below 0x20 (and DEL) is rare.
    let control = sample
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c)) || b == 0x7f)
        .count();
    if control * 16 > sample.len() {
        return Err(SkipReason::ControlCharacters);
    }
    let encoding = match std::str::from_utf8(sample) {
        Ok(_) => Encoding::Utf8,
        // A character cut by the end of the sample is still UTF-8.
        Err(e) if e.error_len().is_none() => Encoding::Utf8,
        Err(_) => Encoding::Latin1,
    };
    Ok((encoding, 0))
}

/// The structure of the content, from the hints first and the first text second.
pub(crate) fn format(hint: &Hint<'_>, head: &str) -> Format {
    if let Some(format) = hint.content_type.and_then(format_of_content_type) {
        return format;
    }
    if let Some(format) = hint.file_name.and_then(format_of_file_name) {
        return format;
    }
    if looks_like_json(head) {
        Format::Json
    } else if looks_like_markup(head) {
        Format::Markup
    } else {
        Format::Text
    }
}

fn format_of_content_type(content_type: &str) -> Option<Format> {
    let essence = content_type.split(';').next()?.trim().to_ascii_lowercase();
    match essence.as_str() {
        "text/csv" | "application/csv" => Some(Format::Csv),
        "text/tab-separated-values" => Some(Format::Tsv),
        "application/json"
        | "text/json"
        | "application/x-ndjson"
        | "application/ndjson"
        | "application/jsonl"
        | "application/x-jsonlines"
        | "application/json-seq" => Some(Format::Json),
        other if other.ends_with("+json") => Some(Format::Json),
        "text/html" | "application/xhtml+xml" | "application/xml" | "text/xml" => {
            Some(Format::Markup)
        }
        other if other.ends_with("+xml") => Some(Format::Markup),
        "text/plain" => Some(Format::Text),
        _ => None,
    }
}

fn format_of_file_name(name: &str) -> Option<Format> {
    let name = name.rsplit(['/', '\\']).next()?.to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let (_, extension) = name.rsplit_once('.')?;
    match extension {
        "csv" => Some(Format::Csv),
        "tsv" | "tab" => Some(Format::Tsv),
        "json" | "ndjson" | "jsonl" | "geojson" => Some(Format::Json),
        "txt" | "log" | "md" | "text" => Some(Format::Text),
        "xml" | "html" | "htm" | "xhtml" | "svg" => Some(Format::Markup),
        _ => None,
    }
}

/// JSON starts with an object, or an array of values; `[INFO] ...` and `[2024-01-01] ...`
/// log lines do not count.
fn looks_like_json(head: &str) -> bool {
    let mut rest = head.trim_start().chars();
    match rest.next() {
        Some('{') => matches!(rest.find(|c| !c.is_whitespace()), Some('"' | '}') | None),
        Some('[') => matches!(
            rest.find(|c| !c.is_whitespace()),
            Some('{' | '[' | '"' | ']') | None
        ),
        _ => false,
    }
}

/// XML starts with its declaration (`<?xml`), HTML with a doctype or its root element; a
/// document type declaration starts other XML too. Leading whitespace aside, nothing else
/// counts: a log line or prose that holds a tag is text.
fn looks_like_markup(head: &str) -> bool {
    let head = head.trim_start().as_bytes();
    [&b"<?xml"[..], b"<!doctype", b"<html"].iter().any(|start| {
        head.get(..start.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(start))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_marks_decide_the_encoding() {
        assert_eq!(sniff(b"\xef\xbb\xbfhi"), Ok((Encoding::Utf8, 3)));
        assert_eq!(sniff(b"\xff\xfeh\0i\0"), Ok((Encoding::Utf16Le, 2)));
        assert_eq!(sniff(b"\xfe\xff\0h\0i"), Ok((Encoding::Utf16Be, 2)));
        assert_eq!(sniff("né le 3".as_bytes()), Ok((Encoding::Utf8, 0)));
        assert_eq!(sniff(b"n\xe9 le 3"), Ok((Encoding::Latin1, 0)));
        // A character cut at the end of the sample is still UTF-8.
        assert_eq!(sniff(b"abc \xc3"), Ok((Encoding::Utf8, 0)));
    }

    #[test]
    fn binary_content_is_recognized_with_a_reason() {
        assert_eq!(sniff(b"%PDF-1.7\n"), Err(SkipReason::BinaryFormat("pdf")));
        assert_eq!(sniff(b"PK\x03\x04xx"), Err(SkipReason::BinaryFormat("zip")));
        assert_eq!(sniff(b"abc\0def"), Err(SkipReason::NulBytes));
        assert_eq!(
            sniff(b"\x01\x02\x03\x04abc"),
            Err(SkipReason::ControlCharacters)
        );
        assert!(sniff(b"col\tcol\r\nv\tv\x0c").is_ok());
    }

    #[test]
    fn hints_then_content_decide_the_format() {
        let hint = |content_type, file_name| Hint {
            content_type,
            file_name,
        };
        assert_eq!(
            format(&hint(Some("text/csv; charset=utf-8"), None), ""),
            Format::Csv
        );
        assert_eq!(
            format(&hint(None, Some("a/b/people.TSV.gz")), ""),
            Format::Tsv
        );
        assert_eq!(format(&hint(None, Some("x.jsonl")), ""), Format::Json);
        assert_eq!(
            format(&hint(Some("application/vnd.api+json"), None), ""),
            Format::Json
        );
        assert_eq!(format(&Hint::default(), " {\"a\": 1}"), Format::Json);
        assert_eq!(format(&Hint::default(), "[{\"a\": 1}]"), Format::Json);
        assert_eq!(format(&Hint::default(), "[INFO] started"), Format::Text);
        assert_eq!(
            format(&Hint::default(), "[2024-01-01] started"),
            Format::Text
        );
        assert_eq!(
            format(&hint(None, Some("notes.txt")), "{\"a\":1}"),
            Format::Text
        );
    }

    #[test]
    fn xml_and_html_are_markup_by_hint_or_first_bytes() {
        let hint = |content_type, file_name| Hint {
            content_type,
            file_name,
        };
        for content_type in [
            "text/html; charset=utf-8",
            "application/xhtml+xml",
            "application/xml",
            "text/xml",
            "image/svg+xml",
            "application/atom+xml",
        ] {
            assert_eq!(
                format(&hint(Some(content_type), None), ""),
                Format::Markup,
                "{content_type}"
            );
        }
        for name in [
            "a/letters.html",
            "Index.HTM",
            "x.xhtml",
            "export.xml.gz",
            "logo.svg",
        ] {
            assert_eq!(
                format(&hint(None, Some(name)), ""),
                Format::Markup,
                "{name}"
            );
        }
        for head in [
            "<?xml version=\"1.0\"?>\n<customers/>",
            "\n  <!DOCTYPE html>\n<html>",
            "<!doctype html>",
            "<HTML lang=\"en\">",
            "<!DOCTYPE note SYSTEM \"note.dtd\">",
        ] {
            assert_eq!(format(&Hint::default(), head), Format::Markup, "{head}");
        }
        // A hint that says otherwise wins; a tag later in prose or a log is text.
        assert_eq!(
            format(&hint(None, Some("page.txt")), "<html>"),
            Format::Text
        );
        assert_eq!(
            format(&hint(Some("text/plain"), None), "<?xml"),
            Format::Text
        );
        assert_eq!(
            format(&Hint::default(), "INFO rendered <html> for 7"),
            Format::Text
        );
        assert_eq!(format(&Hint::default(), "<p>hi</p>"), Format::Text);
    }
}

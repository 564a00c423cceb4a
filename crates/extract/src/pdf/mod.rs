//! PDF documents, read page by page: the text layer of every page (its content streams, the
//! forms they draw, and the values of its form fields), decoded through each font's encoding
//! or `ToUnicode` map, one line of text per line the page shows.
//!
//! `lopdf` parses the file: it holds the whole file and its objects in memory, so a PDF past
//! [`MAX_FILE`] is not read, and every stream it inflates is bounded. A document encrypted
//! with an empty user password (one any viewer opens without asking) is decrypted and read;
//! one that needs a password is skipped as `encrypted_pdf`. A document with no text but with
//! images (a scan) is skipped as `image_only_pdf`: no text was read, and no OCR runs here.

pub(crate) mod child;
mod cmap;
mod text;

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use lopdf::{DecompressError, Dictionary, Document, Encoding, LoadOptions, Object, ObjectId};

use crate::limits::RATIO_GRACE;
use crate::sink::TableRead;
use crate::{Sink, Skip};

use text::Page;

/// The largest PDF read, in bytes: the parser holds the whole file, and its objects but the
/// images' data ([`without_images`]), so a worker holds about this much for a PDF. Text
/// documents are far smaller; a larger PDF is almost always scanned images.
pub const MAX_FILE: u64 = 128 << 20;

/// The most one stream inflates to: a page's content, a form's, an object stream.
const MAX_STREAM: usize = 64 << 20;

/// The most a font's `ToUnicode` map inflates to; real maps are kilobytes, a full CJK font's
/// a few hundred.
const MAX_CMAP: usize = 4 << 20;

/// Fonts whose encodings are read per document: real documents use tens. Each costs at most
/// [`MAX_CMAP`] to read, so this bounds the work a file of fonts sharing one hostile map can
/// cause; text in a font past it is not read (`pdf_limit`).
const MAX_FONTS: usize = 256;

/// What visiting a form or an annotation costs from the allowance at least, whatever it
/// holds: a page may draw one empty form a million times, or pages share one long array of
/// annotations, and each visit is work.
const VISIT: usize = 64;

/// Forms drawn inside forms, at most this deep.
const MAX_FORM_DEPTH: usize = 8;

/// Reads every page of the PDF `bytes` into `sink`, in this process: the document's content
/// may cost up to its length times `max_ratio`.
fn parse(
    bytes: Vec<u8>,
    max_ratio: u64,
    path: &[String],
    sink: &mut dyn Sink,
) -> Result<TableRead, Skip> {
    let length = bytes.len() as u64;
    let document = load(&bytes)?;
    drop(bytes);
    let mut reader = Reader {
        document: &document,
        allowance: length.saturating_mul(max_ratio).max(RATIO_GRACE),
        encodings: HashMap::new(),
        outcome: TableRead::default(),
        images: false,
        unmapped: false,
    };
    let mut seen = std::collections::HashSet::new();
    for (number, page) in document.get_pages() {
        // A page tree that names one page twice is damaged; the page is read once.
        if !seen.insert(page) {
            push_once(&mut reader.outcome.skips, Skip::CorruptPdf);
            continue;
        }
        let mut lines = Page::new(number, path, &mut *sink);
        // The parser's and decoders' panics on a hostile page end that page, not the scan.
        let read = catch_unwind(AssertUnwindSafe(|| reader.page(page, &mut lines)));
        let (handed, cut) = lines.finish();
        reader.outcome.handed |= handed;
        if cut {
            push_once(&mut reader.outcome.skips, Skip::PdfLimit);
        }
        match read {
            Ok(Ok(())) => {}
            Ok(Err(skip)) => {
                push_once(&mut reader.outcome.skips, skip);
                if skip == Skip::PdfLimit && reader.allowance == 0 {
                    break;
                }
            }
            Err(_) => push_once(&mut reader.outcome.skips, Skip::CorruptPdf),
        }
    }
    let Reader {
        mut outcome,
        images,
        unmapped,
        ..
    } = reader;
    if unmapped {
        push_once(&mut outcome.skips, Skip::UnmappedPdfText);
    }
    // Nothing read: the document is skipped, for what stopped it or for having only images.
    if !outcome.handed {
        if let Some(&skip) = outcome.skips.first() {
            return Err(skip);
        }
        if images {
            return Err(Skip::ImageOnlyPdf);
        }
    }
    Ok(outcome)
}

/// The parsed document, or why it cannot be read.
fn load(bytes: &[u8]) -> Result<Document, Skip> {
    let options = LoadOptions {
        max_decompressed_size: Some(MAX_STREAM),
        filter: Some(without_images),
        ..LoadOptions::default()
    };
    let document = catch_unwind(AssertUnwindSafe(|| {
        Document::load_mem_with_options(bytes, options)
    }))
    .map_err(|_| Skip::CorruptPdf)?
    .map_err(|e| match e {
        lopdf::Error::Decompress(DecompressError::MemoryLimitExceeded { .. }) => Skip::PdfLimit,
        lopdf::Error::Decryption(_) | lopdf::Error::UnsupportedSecurityHandler(_) => {
            Skip::EncryptedPdf
        }
        _ => Skip::CorruptPdf,
    })?;
    // A document the empty password opened is decrypted, its `Encrypt` entry gone; one that
    // still has it waits for a password this scan does not have.
    if document.is_encrypted() {
        return Err(Skip::EncryptedPdf);
    }
    Ok(document)
}

/// Every object as the file has it, but an image's data: no text is read from it, and a
/// scan's pages of images would otherwise be held twice, in the file and in its objects. The
/// image's dictionary stays, so that a page is still seen drawing one. `lopdf` keeps a file's
/// object as the filter left it, and an object stream's member as the filter returns it (a
/// member is never a stream, and is small): both are the object without its image data.
fn without_images(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    if let Object::Stream(stream) = object {
        if stream.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image") {
            stream.content = Vec::new();
        }
        // A file's stream is kept in place; what is returned is not read.
        return Some((id, Object::Null));
    }
    Some((id, object.clone()))
}

fn push_once(skips: &mut Vec<Skip>, skip: Skip) {
    if !skips.contains(&skip) {
        skips.push(skip);
    }
}

/// One document's reading: its allowance of inflated content, shared by every page, and the
/// encodings of the fonts read so far.
struct Reader<'d> {
    document: &'d Document,
    /// Bytes of content streams that may still be inflated: the file's length times the
    /// ratio limit, so that pages sharing one hostile stream cannot multiply it.
    allowance: u64,
    /// Each font's encoding by the font dictionary's address (`None`: its text cannot be
    /// mapped back to characters).
    encodings: HashMap<usize, Option<Rc<Encoding<'d>>>>,
    outcome: TableRead,
    /// Whether any page draws an image.
    images: bool,
    /// Whether any text was shown in a font with no way back to characters.
    unmapped: bool,
}

impl<'d> Reader<'d> {
    /// Reads one page's content and its form fields' values into `lines`.
    fn page(&mut self, page: ObjectId, lines: &mut Page<'_>) -> Result<(), Skip> {
        let (direct, referenced) = self
            .document
            .get_page_resources(page)
            .map_err(|_| Skip::CorruptPdf)?;
        let mut resources: Vec<&'d Dictionary> = direct.into_iter().collect();
        resources.extend(
            referenced
                .into_iter()
                .filter_map(|id| self.document.get_dictionary(id).ok()),
        );
        // The content's stored bytes are paid for before they are inflated, each stream as often
        // as the page names it.
        for id in self.document.get_page_contents(page) {
            let stored = self
                .document
                .get_object(id)
                .and_then(Object::as_stream)
                .map_or(0, |s| s.content.len());
            self.spend(stored.max(VISIT))?;
        }
        let limit = self.stream_limit();
        let content = self
            .document
            .get_page_content_with_limit(page, limit)
            .map_err(|e| self.failed(&e, limit))?;
        self.spend(content.len().max(VISIT))?;
        let result = text::run(self, &content, &resources, lines, text::IDENTITY, 0);
        self.fields(page, lines)?;
        result
    }

    /// The most the next stream may inflate to.
    fn stream_limit(&self) -> usize {
        (self.allowance.min(MAX_STREAM as u64) as usize).max(1)
    }

    /// The skip a failed inflation stands for: a limit, whose work (`limit` bytes inflated)
    /// is taken from the allowance, or damage.
    fn failed(&mut self, e: &lopdf::Error, limit: usize) -> Skip {
        match e {
            lopdf::Error::Decompress(DecompressError::MemoryLimitExceeded { .. }) => {
                let _ = self.spend(limit);
                Skip::PdfLimit
            }
            _ => Skip::CorruptPdf,
        }
    }

    /// Takes `amount` inflated bytes from the allowance.
    fn spend(&mut self, amount: usize) -> Result<(), Skip> {
        match self.allowance.checked_sub(amount as u64) {
            Some(left) => {
                self.allowance = left;
                Ok(())
            }
            None => {
                self.allowance = 0;
                Err(Skip::PdfLimit)
            }
        }
    }

    /// The encoding of the font `name` in `resources` (the innermost first), if its text maps
    /// back to characters. A font the resources do not hold is damage: the page is read on,
    /// and reported `corrupt_pdf`.
    fn encoding(&mut self, resources: &[&'d Dictionary], name: &[u8]) -> Result<Font<'d>, Skip> {
        let document = self.document;
        let Some(font) = resources.iter().find_map(|r| {
            let fonts = r.get_deref(b"Font", document).ok()?.as_dict().ok()?;
            fonts.get_deref(name, document).ok()?.as_dict().ok()
        }) else {
            push_once(&mut self.outcome.skips, Skip::CorruptPdf);
            return Ok(Font::Missing);
        };
        let key = std::ptr::from_ref(font) as usize;
        if !self.encodings.contains_key(&key) {
            if self.encodings.len() >= MAX_FONTS {
                return Err(Skip::PdfLimit);
            }
            let encoding = if mapped(font, document) && self.map_is_sane(font)? {
                match font.get_font_encoding_with_limit(document, MAX_CMAP) {
                    Ok(encoding) => Some(Rc::new(encoding)),
                    Err(_) => None,
                }
            } else {
                None
            };
            // A font whose encoding failed is remembered as such, not read again per page.
            self.encodings.insert(key, encoding);
        }
        Ok(match self.encodings.get(&key).cloned().flatten() {
            Some(encoding) => Font::Mapped(encoding),
            None => Font::Unmapped,
        })
    }

    /// Whether the font's `ToUnicode` map, if it has one, is one `lopdf` may read
    /// ([`cmap::sane`]); reading it is paid for from the allowance, its stored bytes first.
    fn map_is_sane(&mut self, font: &Dictionary) -> Result<bool, Skip> {
        let Ok(map) = font
            .get_deref(b"ToUnicode", self.document)
            .and_then(Object::as_stream)
        else {
            return Ok(true);
        };
        self.spend(map.content.len().max(VISIT))?;
        let Ok(bytes) = map.decompressed_content_with_limit(MAX_CMAP) else {
            // Past its limit or damaged: `lopdf` would fail on it too.
            self.spend(MAX_CMAP)?;
            return Ok(false);
        };
        self.spend(bytes.len())?;
        Ok(cmap::sane(&bytes))
    }

    /// A form `name` in `resources` draws: its content, inflated within the allowance, its
    /// own resources, and its matrix.
    fn form(
        &mut self,
        resources: &[&'d Dictionary],
        name: &[u8],
    ) -> Result<Option<Form<'d>>, Skip> {
        let document = self.document;
        let Some(stream) = resources.iter().find_map(|r| {
            let objects = r.get_deref(b"XObject", document).ok()?.as_dict().ok()?;
            objects.get_deref(name, document).ok()?.as_stream().ok()
        }) else {
            return Ok(None);
        };
        match stream.dict.get(b"Subtype").and_then(Object::as_name) {
            Ok(b"Form") => {}
            Ok(b"Image") => {
                self.images = true;
                return Ok(None);
            }
            _ => return Ok(None),
        }
        // Its stored bytes are paid for before they are inflated: a stream of empty deflate
        // blocks inflates to nothing, and costs the time to read it each time it is drawn.
        self.spend(stream.content.len())?;
        let limit = self.stream_limit();
        let content = stream
            .decompressed_content_with_limit(limit)
            .map_err(|e| self.failed(&e, limit))?;
        self.spend(content.len().max(VISIT))?;
        let own = stream
            .dict
            .get_deref(b"Resources", document)
            .and_then(Object::as_dict)
            .ok();
        let matrix = stream
            .dict
            .get(b"Matrix")
            .and_then(Object::as_array)
            .ok()
            .and_then(|m| text::matrix(m));
        Ok(Some(Form {
            content,
            resources: own,
            matrix,
        }))
    }

    /// The values of the text fields whose widgets sit on `page`: a filled form's answers,
    /// which live in the field, not in the page's content.
    fn fields(&mut self, page: ObjectId, lines: &mut Page<'_>) -> Result<(), Skip> {
        let document = self.document;
        let Ok(annotations) = document
            .get_dictionary(page)
            .and_then(|p| p.get_deref(b"Annots", document))
            .and_then(Object::as_array)
        else {
            return Ok(());
        };
        for annotation in annotations {
            // Pages may share one long array: each visit is paid for.
            self.spend(VISIT)?;
            let Ok(widget) = document
                .dereference(annotation)
                .and_then(|(_, o)| o.as_dict())
            else {
                continue;
            };
            if let Some(value) = field_value(widget, document) {
                lines.field(&value);
            }
        }
        Ok(())
    }
}

/// A font a page selects.
pub(super) enum Font<'d> {
    Mapped(Rc<Encoding<'d>>),
    /// Its text does not map back to characters.
    Unmapped,
    /// The page's resources do not hold it.
    Missing,
}

/// A form XObject about to be drawn.
pub(super) struct Form<'d> {
    pub content: Vec<u8>,
    pub resources: Option<&'d Dictionary>,
    pub matrix: Option<[f32; 6]>,
}

/// The depth past which forms inside forms are not drawn.
pub(super) const fn max_form_depth() -> usize {
    MAX_FORM_DEPTH
}

/// The text value (`V`) of the field a widget belongs to, looking up its parents as a field's
/// value is inherited.
fn field_value(widget: &Dictionary, document: &Document) -> Option<String> {
    let mut node = widget;
    for _ in 0..MAX_FORM_DEPTH {
        if let Ok(value) = node.get_deref(b"V", document) {
            return match value {
                Object::String(..) => lopdf::decode_text_string(value)
                    .ok()
                    .filter(|v| !v.trim().is_empty()),
                _ => None,
            };
        }
        node = node
            .get_deref(b"Parent", document)
            .and_then(Object::as_dict)
            .ok()?;
    }
    None
}

/// Whether a font's shown bytes map back to characters: a composite font (`Type0`) does only
/// through a `ToUnicode` map or a Unicode encoding; its bytes are glyph numbers otherwise,
/// which `lopdf` would read as Latin letters.
fn mapped(font: &Dictionary, document: &Document) -> bool {
    if font.get(b"Subtype").and_then(Object::as_name).ok() != Some(b"Type0") {
        return true;
    }
    if font.has(b"ToUnicode") {
        return true;
    }
    matches!(
        font.get_deref(b"Encoding", document)
            .and_then(Object::as_name),
        Ok(b"UniGB-UCS2-H" | b"UniGB-UTF16-H")
    )
}

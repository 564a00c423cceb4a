//! OpenDocument packages (ODS, ODT, ODP): which one a ZIP is, by its `mimetype` member (ODF
//! 1.2 part 3, 3.3), and whether its parts are encrypted, by its manifest.

use std::io::{BufReader, Read, Seek};

use quick_xml::events::Event;

/// The member naming an OpenDocument package's type.
const MIMETYPE: &str = "mimetype";
/// The most of it read: the longest type is under 64 bytes.
const MAX_MIMETYPE: u64 = 128;
const MANIFEST: &str = "META-INF/manifest.xml";
/// The part holding an OpenDocument package's body.
pub(crate) const CONTENT: &str = "content.xml";

/// What an OpenDocument package holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Package {
    Spreadsheet,
    Text,
    Presentation,
}

/// The OpenDocument package the ZIP `archive` is, its templates included, or `None`.
pub(crate) fn package<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> Option<Package> {
    let member = archive.by_name(MIMETYPE).ok()?;
    let mut head = Vec::new();
    member.take(MAX_MIMETYPE).read_to_end(&mut head).ok()?;
    let kind = std::str::from_utf8(&head)
        .ok()?
        .trim()
        .strip_prefix("application/vnd.oasis.opendocument.")?;
    match kind.strip_suffix("-template").unwrap_or(kind) {
        "spreadsheet" => Some(Package::Spreadsheet),
        "text" => Some(Package::Text),
        "presentation" => Some(Package::Presentation),
        _ => None,
    }
}

/// Whether the manifest says that any part is encrypted (a `manifest:encryption-data`): a
/// package saved with a password, whose parts are ciphertext.
pub(crate) fn encrypted<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> bool {
    let Ok(manifest) = archive.by_name(MANIFEST) else {
        return false;
    };
    let mut reader = quick_xml::Reader::from_reader(BufReader::new(manifest));
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e) | Event::Empty(e))
                if e.local_name().as_ref() == "encryption-data" =>
            {
                return true;
            }
            Ok(Event::Eof) => return false,
            Ok(_) => {}
            // A manifest that cannot be read says nothing of encryption: the parts tell.
            Err(_) => return false,
        }
        buf.clear();
    }
}

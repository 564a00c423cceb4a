//! What the XML readers (documents, ODS) share.

use quick_xml::events::BytesRef;

/// The character an entity or character reference in text stands for.
pub(crate) fn reference(r: &BytesRef<'_>) -> Option<char> {
    match r.resolve_char_ref() {
        Ok(Some(c)) => Some(c),
        _ => match r.as_ref() {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => None,
        },
    }
}

//! The user-metadata entry a rewrite leaves on the object: the id of the request that wrote it
//! (S3 `x-amz-meta-dps_remediation`, Azure `x-ms-meta-dps_remediation`, GCS `metadata`). A
//! request whose write is refused by its own earlier, unanswered attempt tells it by this mark
//! from another request's identical write.

use connectors::cloud::Properties;
use uuid::Uuid;

/// The entry's name: one that Azure takes too (a C# identifier) and S3 does not change (lower
/// case).
pub(crate) const MARK: &str = "dps_remediation";

/// The user metadata the strictest store (S3) takes, names and values together, in bytes.
const MAX_METADATA_BYTES: usize = 2048;

/// `properties` with this request's mark, and the mark the write will carry. An object whose
/// metadata leaves no room for it (S3's 2 KB) is written without it, rather than refused for
/// good: the mark it carries is then whatever it had.
pub(crate) fn marked(mut properties: Properties, request: Uuid) -> (Properties, Option<String>) {
    let mark = request.to_string();
    let used: usize = properties
        .metadata
        .iter()
        .filter(|(name, _)| name.as_str() != MARK)
        .map(|(name, value)| name.len() + value.len())
        .sum();
    if used + MARK.len() + mark.len() <= MAX_METADATA_BYTES {
        properties.metadata.insert(MARK.to_owned(), mark);
    }
    let carried = of(&properties).map(str::to_owned);
    (properties, carried)
}

/// The mark an object carries, if any.
pub(crate) fn of(properties: &Properties) -> Option<&str> {
    properties.metadata.get(MARK).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_is_added_where_it_fits_and_replaces_an_earlier_one() {
        let request = Uuid::now_v7();
        let mut earlier = Properties::default();
        earlier
            .metadata
            .insert(MARK.into(), Uuid::now_v7().to_string());
        earlier.metadata.insert("owner".into(), "hr".into());
        let (written, carried) = marked(earlier, request);
        assert_eq!(carried, Some(request.to_string()));
        assert_eq!(of(&written), Some(request.to_string().as_str()));
        assert_eq!(written.metadata.len(), 2);
    }

    #[test]
    fn a_full_object_is_written_without_it() {
        let mut full = Properties::default();
        full.metadata.insert("notes".into(), "x".repeat(2000));
        let (written, carried) = marked(full.clone(), Uuid::now_v7());
        assert_eq!(written, full);
        assert_eq!(carried, None);
    }
}

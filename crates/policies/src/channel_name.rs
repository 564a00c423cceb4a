//! What a channel name may be: policies name channels, so the document's schema checks names
//! by the same rule the channels use.

/// The longest channel name.
pub const MAX_NAME_CHARS: usize = 64;

/// What a channel name may hold, as the validation reason says it.
pub const NAME_RULE: &str =
    "must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit";

/// A channel name appears in policies and in the path of `DELETE /governance/channels/:name`,
/// so it is plain: lower-case letters, digits, `-` and `_`, starting with a letter or digit.
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=MAX_NAME_CHARS).contains(&bytes.len())
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

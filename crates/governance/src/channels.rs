//! Alert channels: where a policy's alerts go. A channel has a name the policies refer to, a
//! type (`webhook`) and a URL.

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
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

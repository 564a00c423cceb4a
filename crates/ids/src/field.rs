//! Field names a client sent, as error messages may repeat them.

/// Whether `name`, a field a client sent, looks like a field name and may be repeated in an
/// error message: 1 to 64 ASCII letters, digits, `_` or `-`, with fewer than five digits. A
/// client may send a value as a key (`{"219-09-9999": …}`), and an error message must not carry
/// it back into logs and responses.
pub fn field_name_like(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && name.bytes().filter(u8::is_ascii_digit).count() < 5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_pass_and_values_do_not() {
        for name in ["note", "denied_safety_classes", "x-request", "field2"] {
            assert!(field_name_like(name), "{name}");
        }
        for value in [
            "",
            "Ann Lee",
            "ann@example.com",
            "219-09-9999",
            "123456789",
            "x\0",
        ] {
            assert!(!field_name_like(value), "{value}");
        }
        assert!(!field_name_like(&"a".repeat(65)));
    }
}

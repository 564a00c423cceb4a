//! RFC 8785, the JSON Canonicalization Scheme (JCS): the one byte string that a receipt's
//! signatures cover, whichever program wrote or reformatted the document since.
//!
//! JCS is what ECMAScript's `JSON.stringify` produces when every object's members are sorted,
//! so a customer can recompute the bytes with a few lines of JavaScript or any RFC 8785 library.
//! Each rule below is the RFC's:
//!
//! - no whitespace between tokens;
//! - object members sorted by their names as arrays of UTF-16 code units (not by UTF-8 bytes,
//!   not by Unicode scalar values: the two differ once a name holds a character above U+FFFF);
//! - strings escaped as `JSON.stringify` escapes them: `"` and `\`, the control characters
//!   below U+0020 (`\b \t \n \f \r` in their short forms, the others as `\u00xx` in lowercase
//!   hex), and nothing else: not `/`, not U+007F, not non-ASCII text;
//! - numbers written as ECMAScript's `Number.prototype.toString` writes an IEEE 754 double
//!   (see [`crate::number`]).
//!
//! Strings need no check for lone surrogates (which JCS forbids): a Rust string cannot hold one,
//! and `serde_json` refuses them when it parses.

use serde_json::{Number, Value};

use crate::error::CanonicalError;
use crate::number;

/// The RFC 8785 canonical form of `value`, as UTF-8 bytes.
///
/// Recursion follows the value's nesting; values parsed by `serde_json` are at most 128 levels
/// deep, and receipts built in code are shallow.
pub fn canonical(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(256);
    write_value(value, &mut out)?;
    Ok(out)
}

fn write_value(value: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            // serde_json's map may iterate in byte order or in insertion order (the
            // `preserve_order` feature); JCS wants UTF-16 order either way.
            sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push(b'{');
            for (i, (name, member)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(name, out);
                out.push(b':');
                write_value(member, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// Integers are written through the same double formatting as every other number, once it is
/// certain that the double is the integer itself: for |n| < 2^53 that is always so and gives the
/// plain digits; beyond, it gives what JavaScript would (2^60 is `1152921504606847000`).
fn write_number(n: &Number, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    let double = if let Some(u) = n.as_u64() {
        exact_u64(u).ok_or_else(|| CanonicalError::InexactInteger(u.to_string()))?
    } else if let Some(i) = n.as_i64() {
        exact_u64(i.unsigned_abs())
            .map(|d| if i < 0 { -d } else { d })
            .ok_or_else(|| CanonicalError::InexactInteger(i.to_string()))?
    } else {
        n.as_f64().ok_or(CanonicalError::NotFinite)?
    };
    number::write(double, out)
}

/// The double equal to `u`, if there is one: `u` without its trailing zero bits must fit the 53
/// bits of a double's significand.
fn exact_u64(u: u64) -> Option<f64> {
    if u == 0 {
        return Some(0.0);
    }
    let significand = u >> u.trailing_zeros();
    // The cast is exact: checked just above.
    (significand < 1 << 53).then_some(u as f64)
}

/// Writes `s` quoted, escaped exactly as JCS requires. Bytes of multi-byte UTF-8 sequences are
/// all at least 0x80, so they pass through untouched.
fn write_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &byte in s.as_bytes() {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x00..=0x1f => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0x0f)],
            ]),
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use serde_json::json;

    use super::*;

    fn text(value: &Value) -> String {
        String::from_utf8(canonical(value).unwrap()).unwrap()
    }

    #[test]
    fn integers_are_exact_or_refused() {
        assert_eq!(
            text(&json!([0, -1, 42, 9007199254740991_u64])),
            "[0,-1,42,9007199254740991]"
        );
        assert_eq!(text(&json!(-9007199254740992_i64)), "-9007199254740992");
        // Exactly a double, so allowed, and written as JavaScript writes that double.
        assert_eq!(text(&json!(1_u64 << 60)), "1152921504606847000");
        assert_eq!(text(&json!(i64::MIN)), "-9223372036854776000");
        for inexact in [
            json!(9007199254740993_u64),
            json!(u64::MAX),
            json!(i64::MAX),
        ] {
            assert!(matches!(
                canonical(&inexact),
                Err(CanonicalError::InexactInteger(_))
            ));
        }
        assert_eq!(
            canonical(&json!(-9007199254740993_i64)),
            Err(CanonicalError::InexactInteger("-9007199254740993".into()))
        );
    }

    #[test]
    fn control_characters_use_short_forms_or_lowercase_hex() {
        let all: String = (0u8..0x20).map(char::from).collect();
        assert_eq!(
            text(&json!(all)),
            "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\
             \\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\
             \\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\""
        );
        assert_eq!(text(&json!("/\u{7f}é€😀")), "\"/\u{7f}é€😀\"");
    }
}

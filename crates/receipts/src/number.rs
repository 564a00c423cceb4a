//! ECMAScript's `Number.prototype.toString` for finite doubles (ECMA-262, Number::toString with
//! radix 10), which RFC 8785 section 3.2.2.3 makes the canonical form of a JSON number.
//!
//! The algorithm needs the shortest decimal digits `s` (k of them) and the exponent `n` such
//! that `s × 10^(n−k)` reads back as the double, the closest such digits where there is a
//! choice and the even ones on a tie (see [`shortest`]), laid out by these rules:
//!
//! | when              | form                                   | example                 |
//! |-------------------|----------------------------------------|-------------------------|
//! | k ≤ n ≤ 21        | the digits, then n − k zeros           | `100`                   |
//! | 0 < n ≤ 21        | n digits, `.`, the rest                | `333333333.3333333`     |
//! | −6 < n ≤ 0        | `0.`, −n zeros, the digits             | `0.000001`              |
//! | otherwise         | d[`.`ddd]`e`±(n − 1)                   | `1e+21`, `9.99e-7`      |
//!
//! Negative zero is written `0`. The crate's tests check the result against the published
//! SHA-256 of the first 100,000 lines of the JCS reference test file of 100 million numbers.

use crate::error::CanonicalError;

/// Appends the ECMAScript form of `x` to `out`.
pub(crate) fn write(x: f64, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    if !x.is_finite() {
        return Err(CanonicalError::NotFinite);
    }
    // Both zeros.
    if x == 0.0 {
        out.push(b'0');
        return Ok(());
    }
    if x < 0.0 {
        out.push(b'-');
    }
    let (digits, n) = shortest(x.abs());
    let k = digits.len() as i32;
    if k <= n && n <= 21 {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    } else if -6 < n && n <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-n) as usize));
        out.extend_from_slice(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.extend_from_slice(first);
        if !rest.is_empty() {
            out.push(b'.');
            out.extend_from_slice(rest);
        }
        let e = n - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        out.extend_from_slice(e.unsigned_abs().to_string().as_bytes());
    }
    Ok(())
}

/// The digits ECMAScript asks for, for a finite positive `x`: the fewest decimal digits that
/// read back as `x` (1 to 17 ASCII digits, the first not zero), and among those the ones
/// closest to `x`, an exact tie going to the even last digit. Returned with n, the position of
/// the decimal point relative to them: `x = 0.d1d2…dk × 10^n`.
///
/// Rust's shortest formatting (`{:e}`) gives the fewest digits, but breaks an exact tie upwards:
/// 0x43143ff3c1cb0959 is 1424953923781206.25, which it writes `…206.3` where ECMAScript
/// writes `…206.2`. So the count k comes from it, and the digits from Rust's exact formatting
/// to k digits, which rounds the exact value of `x` to the nearest, ties to even, and so gives
/// the closest k digits; they are taken when they read back as `x` (the closest k digits could
/// miss only where the gap below `x` is half the gap above, at a power of two).
fn shortest(x: f64) -> (Vec<u8>, i32) {
    let (digits, n) = decompose(&format!("{x:e}"));
    if digits.len() > 1 {
        let closest = format!("{x:.precision$e}", precision = digits.len() - 1);
        if closest.parse::<f64>() == Ok(x) {
            return decompose(&closest);
        }
    }
    (digits, n)
}

/// Splits `{:e}` text, `d[.ddd]e[-]N` meaning `d.ddd × 10^N`, into its digits (trailing zeros
/// trimmed, which changes neither the value nor n) and n = N + 1. The text is read byte by
/// byte rather than split, so that no form of it can panic.
fn decompose(text: &str) -> (Vec<u8>, i32) {
    let mut digits = Vec::with_capacity(17);
    let mut exponent: i32 = 0;
    let mut negative = false;
    let mut in_exponent = false;
    for byte in text.bytes() {
        match byte {
            b'e' => in_exponent = true,
            b'-' if in_exponent => negative = true,
            b'0'..=b'9' if in_exponent => {
                exponent = exponent * 10 + i32::from(byte - b'0');
            }
            b'0'..=b'9' => digits.push(byte),
            _ => {}
        }
    }
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    let exponent = if negative { -exponent } else { exponent };
    (digits, exponent + 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use super::*;

    fn es(x: f64) -> String {
        let mut out = Vec::new();
        write(x, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_layout_rule() {
        assert_eq!(es(100.0), "100");
        assert_eq!(es(123e18), "123000000000000000000");
        assert_eq!(es(1e21), "1e+21");
        assert_eq!(es(1.5), "1.5");
        assert_eq!(es(-0.5), "-0.5");
        assert_eq!(es(0.000001), "0.000001");
        assert_eq!(es(1e-7), "1e-7");
        assert_eq!(es(1.25e-7), "1.25e-7");
        assert_eq!(es(-0.0), "0");
        assert_eq!(es(f64::MIN_POSITIVE), "2.2250738585072014e-308");
        // An exact tie between two shortest candidates goes to the even digit.
        assert_eq!(es(f64::from_bits(0x43143ff3c1cb0959)), "1424953923781206.2");
        assert!(write(f64::NAN, &mut Vec::new()).is_err());
        assert!(write(f64::NEG_INFINITY, &mut Vec::new()).is_err());
    }
}

//! Numeric identifiers: US SSN, Canadian SIN, US passport, Canadian passport.

use crate::error::ValueError;

/// The `len` ASCII digits of `raw` once every character in `separators` is left out; `None`
/// when anything else is there, or another number of digits. One allocation, of `len` bytes.
fn digits_only(raw: &str, len: usize, separators: &[char]) -> Option<String> {
    let mut kept = String::with_capacity(len);
    for c in raw.chars().filter(|c| !separators.contains(c)) {
        if !c.is_ascii_digit() || kept.len() == len {
            return None;
        }
        kept.push(c);
    }
    (kept.len() == len).then_some(kept)
}

/// The SSA's rules for a number that can have been issued: the area (first three digits) is
/// not 000, 666 or 900-999 (the 9xx range holds ITINs, which are not SSNs); the group (next
/// two) is not 00; the serial (last four) is not 0000.
pub fn ssn_is_issuable(digits: &[u8]) -> bool {
    if digits.len() != 9 {
        return false;
    }
    let area = &digits[0..3];
    area != b"000"
        && area != b"666"
        && area[0] != b'9'
        && &digits[3..5] != b"00"
        && &digits[5..9] != b"0000"
}

pub fn us_ssn(raw: &str) -> Result<String, ValueError> {
    // Dots too (`078.05.1123`): detection finds SSNs written so, and remediation tokenizes what
    // detection found, as it was written.
    let digits = digits_only(raw, 9, &['-', ' ', '.']).ok_or(ValueError::invalid(
        "a US SSN is 9 digits, optionally grouped with dashes, spaces or dots",
    ))?;
    let d = digits.as_bytes();
    if &d[0..3] == b"000" || &d[0..3] == b"666" {
        return Err(ValueError::invalid(
            "a US SSN's area number is never 000 or 666",
        ));
    }
    if d[0] == b'9' {
        return Err(ValueError::invalid(
            "a US SSN's area number is never in 900-999 (that range holds ITINs)",
        ));
    }
    if &d[3..5] == b"00" {
        return Err(ValueError::invalid("a US SSN's group number is never 00"));
    }
    if &d[5..9] == b"0000" {
        return Err(ValueError::invalid(
            "a US SSN's serial number is never 0000",
        ));
    }
    Ok(digits)
}

/// Whether nine digits can be a SIN issued to a person: Luhn-valid, and a first digit that
/// Service Canada assigns to people (1 to 7 by province, 9 for temporary residents; 0 and 8
/// are not used for individuals).
pub fn sin_is_issuable(digits: &[u8]) -> bool {
    digits.len() == 9 && matches!(digits[0], b'1'..=b'7' | b'9') && luhn_valid(digits)
}

/// The Luhn check over ASCII digits: false for an empty slice.
pub fn luhn_valid(digits: &[u8]) -> bool {
    !digits.is_empty() && luhn_sum(digits).is_multiple_of(10)
}

fn luhn_sum(digits: &[u8]) -> u32 {
    digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            let d = u32::from(d - b'0');
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum()
}

/// The digit that, appended to `payload`, makes it Luhn-valid.
pub fn luhn_check_digit(payload: &[u8]) -> u8 {
    // Appending a digit shifts every payload digit one place left, so compute the sum as if a
    // zero check digit were already there.
    let mut with_zero = payload.to_vec();
    with_zero.push(b'0');
    let sum = luhn_sum(&with_zero);
    b'0' + ((10 - sum % 10) % 10) as u8
}

pub fn ca_sin(raw: &str) -> Result<String, ValueError> {
    let digits = digits_only(raw, 9, &['-', ' ']).ok_or(ValueError::invalid(
        "a Canadian SIN is 9 digits, optionally grouped with dashes or spaces",
    ))?;
    if digits.bytes().all(|b| b == b'0') {
        return Err(ValueError::invalid("a Canadian SIN is never all zeros"));
    }
    if !luhn_valid(digits.as_bytes()) {
        return Err(ValueError::invalid(
            "a Canadian SIN must pass the Luhn check",
        ));
    }
    Ok(digits)
}

pub fn passport_us(raw: &str) -> Result<String, ValueError> {
    let kept: String = raw.chars().filter(|c| *c != ' ').collect();
    if kept.len() == 9 && kept.bytes().all(|b| b.is_ascii_digit()) {
        Ok(kept)
    } else {
        Err(ValueError::invalid("a US passport number is 9 digits"))
    }
}

pub fn passport_ca(raw: &str) -> Result<String, ValueError> {
    let kept: String = raw
        .chars()
        .filter(|c| *c != ' ')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let b = kept.as_bytes();
    if b.len() == 8
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..].iter().all(u8::is_ascii_digit)
    {
        Ok(kept)
    } else {
        Err(ValueError::invalid(
            "a Canadian passport number is 2 letters followed by 6 digits",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssn_rules() {
        assert_eq!(us_ssn("123-45-6789").unwrap(), "123456789");
        assert_eq!(us_ssn(" 123 45 6789 ".trim()).unwrap(), "123456789");
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "900-12-3456",
            "999-12-3456",
            "123-00-4567",
            "123-45-0000",
            "12345678",
            "1234567890",
            "123-45-678a",
            "123,45,6789",
            "١٢٣-45-6789",
            "123-45-67890",
        ] {
            assert!(us_ssn(bad).is_err(), "{bad}");
        }
        assert_eq!(us_ssn("078.05.1123").unwrap(), "078051123");
    }

    #[test]
    fn sin_rules() {
        assert_eq!(ca_sin("046 454 286").unwrap(), "046454286");
        assert!(ca_sin("046 454 287").is_err());
        assert!(ca_sin("000 000 000").is_err());
        // Dots are an SSN's separator only.
        assert!(ca_sin("046.454.286").is_err());
        assert!(sin_is_issuable(b"130692544"));
        assert!(
            !sin_is_issuable(b"046454286"),
            "0 is not a first digit for people"
        );
        assert!(!sin_is_issuable(b"130692545"));
        for payload in ["04645428", "12345678", "99999999"] {
            let mut full = payload.as_bytes().to_vec();
            full.push(luhn_check_digit(payload.as_bytes()));
            assert!(luhn_valid(&full), "{payload}");
        }
    }

    #[test]
    fn passports() {
        assert_eq!(passport_us("123456789").unwrap(), "123456789");
        assert!(passport_us("A12345678").is_err());
        assert_eq!(passport_ca("ab 123456").unwrap(), "AB123456");
        assert!(passport_ca("A1234567").is_err());
        assert!(passport_ca("ABC12345").is_err());
    }
}

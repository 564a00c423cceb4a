//! Phone numbers, through the libphonenumber port (`phonenumber`).

use phonenumber::country::Id;

use crate::error::ValueError;

mod valid;

/// A valid phone number: its E.164 form, and how many of its written digits (from the end)
/// are the national significant number and the extension, which format-preserving tokens
/// replace. The digits before them (country code, trunk or international prefix) are kept.
pub struct Phone {
    pub e164: String,
    pub variable_digits: usize,
    /// Whether the written digits end with the national number and extension as parsed, so
    /// that a token keeping the written layout enciphers exactly them. A vanity number
    /// (`253-CALL`: the letters are digits) or digits the parser left out are not: a token in
    /// the written layout would keep digits of the number in clear, so it is written in the
    /// E.164 form instead.
    pub layout_holds_number: bool,
    /// The national significant number's digits: those of the E.164 form after the country
    /// code.
    pub national_digits: usize,
}

/// Parses `raw`, reading a number without a country code as a number of `region`.
pub fn phone(raw: &str, region: Id) -> Result<Phone, ValueError> {
    if raw.len() > 64 {
        return Err(ValueError::invalid(
            "a phone number is at most 64 characters",
        ));
    }
    // A number written with `+` names its country itself. Passing the default region anyway
    // makes phonenumber 0.3 strip that region's national prefix from the number after the
    // country code: with US, `+33 1 42 68 53 00` loses its `1` and turns invalid.
    let written = raw.trim_start();
    let region = if written.starts_with('+') {
        // Without a region, the crate finds which region of the North American plan a `+1`
        // number belongs to by trying each one's patterns, the slowest part of parsing it.
        // Read as a US number it parses the same (the tests compare both), as long as its
        // national number does not begin with `1`, the trunk prefix a US reading would strip.
        north_american_without_trunk(written).then_some(Id::US)
    } else {
        Some(region)
    };
    let number =
        phonenumber::parse(region, raw).map_err(|_| ValueError::invalid("not a phone number"))?;
    if !valid::is_valid(&number) {
        return Err(ValueError::invalid(
            "not a valid phone number for its country",
        ));
    }
    let e164 = number.format().mode(phonenumber::Mode::E164).to_string();
    // Display includes the leading zeros some countries keep (Italy).
    let national = number.national().to_string();
    let extension = number
        .extension()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let written: String = raw.chars().filter(char::is_ascii_digit).collect();
    let layout_holds_number = written.ends_with(&format!("{national}{extension}"));
    Ok(Phone {
        e164,
        variable_digits: national.len() + extension.len(),
        layout_holds_number,
        national_digits: national.len(),
    })
}

/// Whether `written` (which starts with `+`) is `+1` and a national number whose first digit
/// is 2 to 9, whatever separators stand between them.
fn north_american_without_trunk(written: &str) -> bool {
    let mut digits = written[1..]
        .bytes()
        .filter(|b| !matches!(b, b' ' | b'-' | b'.' | b'(' | b')'));
    digits.next() == Some(b'1') && digits.next().is_some_and(|d| (b'2'..=b'9').contains(&d))
}

/// Digits from a small deterministic generator (xorshift), for the tests: a failure names a
/// number that fails again.
#[cfg(test)]
struct Digits(u64);

#[cfg(test)]
impl Digits {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn string(&mut self, length: usize) -> String {
        (0..length)
            .map(|_| char::from(b'0' + (self.next() % 10) as u8))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every North American writing the shortcut takes parses to the same number with and
    /// without the US region, valid or not.
    #[test]
    fn north_american_numbers_read_the_same_with_the_us_region() {
        let mut digits = Digits(0x853c_49e6_748f_ea9b);
        let mut taken = 0;
        for n in 0..4_000 {
            let length = [10, 10, 10, 9, 11][n % 5];
            let national = digits.string(length);
            let (a, b) = national.split_at(3.min(national.len()));
            let (b, c) = b.split_at(3.min(b.len()));
            for written in [
                format!("+1 {national}"),
                format!("+1{national}"),
                format!("+1 ({a}) {b}-{c}"),
                format!("+1-{a}-{b}-{c}"),
                format!("+1.{a}.{b}.{c}"),
                format!("+1 {a} {b} {c} ext. 12"),
            ] {
                if !north_american_without_trunk(&written) {
                    continue;
                }
                taken += 1;
                let plain = phonenumber::parse(None, &written);
                let us = phonenumber::parse(Some(Id::US), &written);
                match (plain, us) {
                    (Ok(plain), Ok(us)) => {
                        assert_eq!(plain.code().value(), us.code().value(), "{written}");
                        assert_eq!(plain.national(), us.national(), "{written}");
                        assert_eq!(plain.extension(), us.extension(), "{written}");
                        assert_eq!(
                            plain.format().mode(phonenumber::Mode::E164).to_string(),
                            us.format().mode(phonenumber::Mode::E164).to_string(),
                            "{written}"
                        );
                        assert_eq!(valid::is_valid(&plain), valid::is_valid(&us), "{written}");
                    }
                    (Err(_), Err(_)) => {}
                    (plain, us) => panic!("{written}: {plain:?} without a region, {us:?} with US"),
                }
            }
        }
        assert!(taken > 15_000, "{taken} writings compared");
        for (written, takes) in [
            ("+1 202 555 0123", true),
            ("+12025550123", true),
            ("+1 (202) 555-0123", true),
            ("+1 102 555 0123", false),
            ("+1 1202 555 0123", false),
            ("+44 20 7946 0958", false),
            ("+12", true),
            ("+1", false),
        ] {
            assert_eq!(north_american_without_trunk(written), takes, "{written}");
        }
    }

    #[test]
    fn phones_become_e164() {
        assert_eq!(
            phone("(202) 555-0123", Id::US).unwrap().e164,
            "+12025550123"
        );
        assert_eq!(
            phone("+1 202 555 0123", Id::FR).unwrap().e164,
            "+12025550123"
        );
        assert_eq!(
            phone("01 42 68 53 00", Id::FR).unwrap().e164,
            "+33142685300"
        );
        assert_eq!(
            phone("+44 20 7946 0958", Id::US).unwrap().e164,
            "+442079460958"
        );
        assert_eq!(phone("(202) 555-0123", Id::US).unwrap().variable_digits, 10);
        assert!(phone("123", Id::US).is_err());
        assert!(phone("+1 000 000 0000", Id::US).is_err());
        assert!(phone("not a number", Id::US).is_err());
    }
}

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
    let region = if raw.trim_start().starts_with('+') {
        None
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
    let national = number.national();
    // Display includes the leading zeros some countries keep (Italy).
    let extension = number.extension().map_or(0, |e| e.to_string().len());
    Ok(Phone {
        e164,
        variable_digits: national.to_string().len() + extension,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! Parsing and normalization: a raw value of a PII type becomes its canonical form, or a
//! precise refusal that never repeats the value.

mod date;
mod ids;
mod money;
mod phone;
mod text;

pub use date::{
    DateLayout, DaySuffix, MonthCase, MonthStyle, NamedTemplate, Ymd, days_in_month,
    render as render_date,
};
pub use ids::{luhn_check_digit, luhn_valid, sin_is_issuable, ssn_is_issuable};
pub use phonenumber::country::Id as Region;
pub use text::email_ok;

use crate::error::ValueError;
use crate::pii::PiiType;
use crate::secret::Secret;

/// Loads what the first phone number would otherwise load: libphonenumber's metadata, about
/// 300 ms of parsing, once per process. Services call it at start so that no request pays it.
pub fn warm_up() {
    let _ = phone::phone("+1 202 555 0123", Region::US);
}

/// Parses a written date without normalizing it: for detection, which only needs to know
/// whether text is a calendar date.
pub fn is_date(raw: &str) -> bool {
    // Either reading: a numeric date both readings take is a date in both.
    date::date(raw.trim(), true).is_ok()
}

/// Whether a word is a month name or abbreviation that written dates may use, in English or
/// French (`March`, `mar.`, `sept`, `février`, `fevrier`, `déc`): the same words the date
/// parser accepts.
pub fn is_month_name(word: &str) -> bool {
    date::month_named(word).is_some()
}

/// What normalization needs beyond the value: the policy's settings.
#[derive(Debug, Clone, Copy)]
pub struct NormalizeOptions {
    /// How to read a phone number without a country code (the policy's `default_region`).
    pub default_region: Region,
}

impl Default for NormalizeOptions {
    fn default() -> Self {
        Self {
            default_region: Region::US,
        }
    }
}

/// A validated value in canonical form, with what format-preserving tokenization needs to keep
/// the shape of the value as it was written.
#[derive(Debug, Clone)]
pub struct Normalized {
    /// The type the value was validated as.
    pub pii_type: PiiType,
    /// The canonical form: what deterministic tokens are computed over and what the vault keeps.
    pub value: Secret,
    /// The written form whose shape a format-preserving token keeps.
    pub(crate) layout: Secret,
    pub(crate) detail: Detail,
    /// The ISO 4217 code a monetary value carried, if any. Not secret on its own.
    pub currency: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) enum Detail {
    None,
    /// How many digits at the end of the layout are the national number and extension.
    Phone {
        variable_digits: usize,
    },
    Date {
        layout: DateLayout,
    },
}

/// Parses `raw` as a value of `pii_type`.
pub fn normalize(
    pii_type: PiiType,
    raw: &str,
    options: &NormalizeOptions,
) -> Result<Normalized, ValueError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(ValueError::EMPTY);
    }
    if trimmed.len() > 256 {
        return Err(ValueError::invalid("the value is longer than 256 bytes"));
    }
    let plain = |value: String, layout: &str| Normalized {
        pii_type,
        value: Secret::new(value),
        layout: Secret::from(layout),
        detail: Detail::None,
        currency: None,
    };
    Ok(match pii_type {
        PiiType::UsSsn => plain(ids::us_ssn(trimmed)?, trimmed),
        PiiType::CaSin => plain(ids::ca_sin(trimmed)?, trimmed),
        PiiType::PassportUs => plain(ids::passport_us(trimmed)?, trimmed),
        PiiType::PassportCa => {
            let value = ids::passport_ca(trimmed)?;
            let layout = value.clone();
            plain(value, &layout)
        }
        PiiType::Email => {
            let value = text::email(trimmed)?;
            let layout = value.clone();
            plain(value, &layout)
        }
        PiiType::CaseNumber => {
            let value = text::case_number(trimmed)?;
            let layout = value.clone();
            plain(value, &layout)
        }
        PiiType::Phone => {
            let parsed = phone::phone(trimmed, options.default_region)?;
            // A token keeps the written layout only where its digits are the number's; else
            // it is written as E.164, whose digits after the country code are the national
            // number (any extension is not part of the value).
            let (layout, variable_digits) = if parsed.layout_holds_number {
                (Secret::from(trimmed), parsed.variable_digits)
            } else {
                (Secret::new(parsed.e164.clone()), parsed.national_digits)
            };
            Normalized {
                pii_type,
                value: Secret::new(parsed.e164),
                layout,
                detail: Detail::Phone { variable_digits },
                currency: None,
            }
        }
        PiiType::Date | PiiType::Dob => {
            let (ymd, layout) = date::date(trimmed, date::month_first(options.default_region))?;
            Normalized {
                pii_type,
                value: Secret::new(ymd.iso()),
                layout: Secret::from(trimmed),
                detail: Detail::Date { layout },
                currency: None,
            }
        }
        PiiType::Monetary => {
            let parsed = money::money(trimmed)?;
            Normalized {
                pii_type,
                value: Secret::new(parsed.amount),
                layout: Secret::from(trimmed),
                detail: Detail::None,
                currency: parsed.currency,
            }
        }
    })
}

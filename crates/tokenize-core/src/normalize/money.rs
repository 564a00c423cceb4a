//! Money amounts: `$1,234.50`, `1.234,50 €`, `USD 1 234.50`, `-12.5`.
//!
//! The decimal separator is the last `.` or `,` when both appear. When only one kind appears,
//! it is the decimal separator if it appears once and is followed by one, two or four digits,
//! and grouping otherwise: `1,234` and `1.234` are one thousand two hundred thirty-four. Spaces,
//! no-break spaces, thin spaces and apostrophes are grouping. Grouping must come in threes.
//!
//! The written scale is kept (`5` and `5.00` are two values, as ledgers tell them apart), and a
//! cent sign scales the amount (`50¢` is `0.50`). A currency is named by an unambiguous symbol
//! or any three capital letters (the ISO 4217 list changes; the code is kept as written).

use crate::error::ValueError;

/// A normalized amount, with the currency when the value named one.
pub struct Money {
    /// Digits, an optional `-`, an optional `.` and fraction: `1234.50`.
    pub amount: String,
    /// An ISO 4217 code, when the value carried one or an unambiguous symbol.
    pub currency: Option<String>,
}

const SYMBOLS: &[(char, Option<&str>)] = &[
    ('$', None),
    ('€', Some("EUR")),
    ('£', Some("GBP")),
    ('¥', Some("JPY")),
    ('₹', Some("INR")),
    ('₩', Some("KRW")),
    ('₽', Some("RUB")),
    // The French franc's sign, not the Swiss franc's (CHF has none): the currency is not
    // known from it.
    ('₣', None),
    ('¢', None),
];

fn is_group_space(c: char) -> bool {
    matches!(c, ' ' | '\u{a0}' | '\u{202f}' | '\u{2009}' | '\'' | '’')
}

pub fn money(raw: &str) -> Result<Money, ValueError> {
    const SHAPE: ValueError = ValueError::invalid("not a money amount");
    if raw.chars().count() > 64 {
        return Err(ValueError::invalid(
            "a money amount is at most 64 characters",
        ));
    }
    let mut currency: Option<String> = None;
    let mut symbol_seen = false;
    // `50¢` is half a unit of its currency: the amount is scaled, never read as 50.
    let mut cents = false;
    let mut negative = false;
    let mut body = String::new();
    let chars: Vec<char> = raw.trim().chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_uppercase() {
            // A three-letter ISO 4217 code, before or after the number.
            let code: String = chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_uppercase())
                .collect();
            if code.len() != 3 || currency.is_some() {
                return Err(SHAPE);
            }
            currency = Some(code);
            i += 3;
            continue;
        }
        if let Some((_, code)) = SYMBOLS.iter().find(|(s, _)| *s == c) {
            if symbol_seen {
                return Err(SHAPE);
            }
            symbol_seen = true;
            cents = c == '¢';
            if let (Some(code), None) = (code, &currency) {
                currency = Some((*code).to_owned());
            }
        } else if c == '-' || c == '−' {
            // A sign stands before the digits; a space after a symbol or code (`USD -5.00`)
            // is not a digit.
            if negative || has_digits(&body) {
                return Err(SHAPE);
            }
            negative = true;
        } else if c == '+' {
            if has_digits(&body) {
                return Err(SHAPE);
            }
        } else if c.is_ascii_digit() || c == '.' || c == ',' || is_group_space(c) {
            body.push(c);
        } else {
            return Err(SHAPE);
        }
        i += 1;
    }
    let body = body.trim_matches(is_group_space);
    if !body.bytes().any(|b| b.is_ascii_digit()) {
        return Err(SHAPE);
    }
    let dots = body.matches('.').count();
    let commas = body.matches(',').count();
    let decimal = match (dots, commas) {
        (0, 0) => None,
        (_, 0) | (0, _) => {
            let sep = if dots > 0 { '.' } else { ',' };
            let count = dots + commas;
            let after = body.rsplit(sep).next().unwrap_or("");
            (count == 1 && matches!(after.len(), 1 | 2 | 4)).then_some(sep)
        }
        _ => body
            .rfind(['.', ','])
            .and_then(|i| body[i..].chars().next()),
    };
    let (int_part, frac_part) = match decimal {
        Some(sep) => body.rsplit_once(sep).unwrap_or((body, "")),
        None => (body, ""),
    };
    if !frac_part.bytes().all(|b| b.is_ascii_digit()) || (decimal.is_some() && frac_part.is_empty())
    {
        return Err(SHAPE);
    }
    // The integer part: digits with optional grouping, in groups of three after the first.
    let groups: Vec<&str> = int_part
        .split(|c: char| c == '.' || c == ',' || is_group_space(c))
        .collect();
    let grouped = groups.len() > 1;
    if groups
        .iter()
        .any(|g| !g.bytes().all(|b| b.is_ascii_digit()))
        || (groups[0].is_empty() && grouped)
        || (grouped && (groups[0].len() > 3 || groups[1..].iter().any(|g| g.len() != 3)))
    {
        return Err(SHAPE);
    }
    let digits: String = groups.concat();
    let (digits, frac_part) = if cents {
        // Two more places of fraction: the last two integer digits move after the point.
        let mut all = format!("{digits}{frac_part}");
        let places = frac_part.len() + 2;
        while all.len() <= places {
            all.insert(0, '0');
        }
        let (int, frac) = all.split_at(all.len() - places);
        (int.to_owned(), frac.to_owned())
    } else {
        (digits, frac_part.to_owned())
    };
    let frac_part = frac_part.as_str();
    let digits = digits.trim_start_matches('0');
    let int_digits = if digits.is_empty() { "0" } else { digits };
    if int_digits.len() > 18 || frac_part.len() > 6 {
        return Err(ValueError::invalid(
            "a money amount has at most 18 integer and 6 decimal digits",
        ));
    }
    let mut amount = String::new();
    if negative {
        amount.push('-');
    }
    amount.push_str(int_digits);
    if !frac_part.is_empty() {
        amount.push('.');
        amount.push_str(frac_part);
    }
    Ok(Money { amount, currency })
}

/// Whether the number's text so far holds anything but group spaces.
fn has_digits(body: &str) -> bool {
    !body.trim_matches(is_group_space).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(raw: &str) -> (String, Option<String>) {
        money(raw)
            .map(|m| (m.amount, m.currency))
            .unwrap_or_else(|e| (format!("error: {e}"), None))
    }

    #[test]
    fn amounts() {
        assert_eq!(norm("$1,234.50"), ("1234.50".into(), None));
        assert_eq!(norm("1.234,50 €"), ("1234.50".into(), Some("EUR".into())));
        assert_eq!(norm("USD 1,234.50"), ("1234.50".into(), Some("USD".into())));
        assert_eq!(norm("1 234,50 CAD"), ("1234.50".into(), Some("CAD".into())));
        assert_eq!(norm("CHF 1'234.50"), ("1234.50".into(), Some("CHF".into())));
        assert_eq!(norm("£12"), ("12".into(), Some("GBP".into())));
        assert_eq!(norm("-$5.00"), ("-5.00".into(), None));
        assert_eq!(norm("1,234"), ("1234".into(), None));
        assert_eq!(norm("12,5"), ("12.5".into(), None));
        assert_eq!(norm("0.99"), ("0.99".into(), None));
        assert_eq!(norm("1,234,567.89"), ("1234567.89".into(), None));
        // A sign after a symbol or code and a space.
        assert_eq!(norm("USD -5.00"), ("-5.00".into(), Some("USD".into())));
        assert_eq!(norm("€ -5,00"), ("-5.00".into(), Some("EUR".into())));
        assert_eq!(norm("$ -5"), ("-5".into(), None));
        // Cents are hundredths.
        assert_eq!(norm("50¢"), ("0.50".into(), None));
        assert_eq!(norm("5.5¢"), ("0.055".into(), None));
        assert_eq!(norm("1,250¢"), ("12.50".into(), None));
    }

    #[test]
    fn malformed_amounts() {
        for bad in [
            "",
            "$",
            "abc",
            "1,23,4.00",
            "12..5",
            "1.2.3,4,5",
            "$$5",
            "5-",
            "5 -3",
            "US 5",
            "1.234.",
            "12a",
        ] {
            assert!(money(bad).is_err(), "{bad}");
        }
    }
}

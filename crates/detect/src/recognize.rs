//! The built-in recognizers. Each starts from an anchor the scanner found (an `@`, or the
//! first digit of a number), reads the candidate's shape, validates it with `tokenize-core`'s
//! parsers and returns unscored candidates; dates are in [`dates`](crate::dates).

use tokenize_core::normalize::{
    NormalizeOptions, Region, email_ok, sin_is_issuable, ssn_is_issuable,
};
use tokenize_core::{PiiType, normalize};

use crate::dates::{month_word_beside, named_date, numeric_date, time_follows};
use crate::types::{Candidate, Kind};

/// The longest local part and domain of an email address.
const MAX_EMAIL_LOCAL: usize = 64;
const MAX_EMAIL_DOMAIN: usize = 255;

/// ISO 4217 codes recognized next to an amount.
const CURRENCY_CODES: &[&str] = &[
    "USD", "EUR", "CAD", "GBP", "JPY", "CHF", "AUD", "NZD", "CNY", "INR", "MXN", "BRL", "SEK",
    "NOK", "DKK", "PLN", "CZK", "HUF", "ZAR", "SGD", "HKD", "KRW",
];

/// The recognizers, reading numbers the way the detector was told to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recognizers<'d> {
    /// How numbers without a country code are read (the tenant policy's default region).
    pub normalize: &'d NormalizeOptions,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// Whether a no-break space (U+00A0, or the narrow U+202F) starts at `i`: a separator, as
/// French typesetting writes one before `€` and between thousands.
fn no_break_space(bytes: &[u8], i: usize) -> bool {
    let rest = &bytes[i.min(bytes.len())..];
    rest.starts_with("\u{a0}".as_bytes()) || rest.starts_with("\u{202f}".as_bytes())
}

/// Whether the letter at `i` ends a backslash escape (`\n`, `\t`, `\r`, `\b`, `\f`), as JSON
/// strings, CSV exports and log lines write line breaks and tabs: an odd run of backslashes
/// just before it. Such a letter is a separator, not part of the value beside it.
fn escape_letter(bytes: &[u8], i: usize) -> bool {
    if !bytes.get(i).is_some_and(|b| b"bfnrt".contains(b)) {
        return false;
    }
    let run = bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count();
    run % 2 == 1
}

impl Recognizers<'_> {
    pub(crate) fn email_at(&self, text: &str, at: usize) -> Vec<Candidate> {
        let bytes = text.as_bytes();
        let local = |b: u8| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-' | b'\'')
        };
        let domain = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
        // RFC 5321 limits: 64 bytes of local part, 255 of domain.
        let mut start = at;
        while start > 0 && at - start < MAX_EMAIL_LOCAL && local(bytes[start - 1]) {
            start -= 1;
        }
        if start > 0 && local(bytes[start - 1]) {
            return Vec::new();
        }
        // `"Contact:\nann@example.com"`: the `n` belongs to the escape, not the address.
        if start < at && escape_letter(bytes, start) {
            start += 1;
        }
        let mut end = at + 1;
        while end < bytes.len() && end - at <= MAX_EMAIL_DOMAIN && domain(bytes[end]) {
            end += 1;
        }
        while end > at + 1 && bytes[end - 1] == b'.' {
            end -= 1;
        }
        // Dots, and quotes that open a quoted string ('ann@example.com' in SQL or code), are
        // not the address's.
        while start < at && matches!(bytes[start], b'.' | b'\'') {
            start += 1;
        }
        if start == at || end == at + 1 {
            return Vec::new();
        }
        let candidate = &text[start..end];
        // What normalization would accept (it takes at most 256 bytes), without building the
        // address: tokenize and mask normalize it again.
        if candidate.len() > 256 || !email_ok(candidate) {
            return Vec::new();
        }
        vec![Candidate {
            kind: Kind::Email,
            pii_type: PiiType::Email,
            start,
            end,
            base: 0.9,
            pattern: "email",
            validator: Some("email_syntax"),
            normalized: None,
        }]
    }

    /// Candidates anchored at the first digit of a number, and where the whole numeric sequence
    /// ends (to skip it when it is nothing).
    pub(crate) fn number_at(&self, text: &str, first: usize) -> (Vec<Candidate>, usize) {
        let bytes = text.as_bytes();
        // The numeric span: digits, with one separator (or ") " / " (") between digit groups.
        let is_sep = |b: u8| matches!(b, b'-' | b'.' | b',' | b' ' | b'/' | b'(' | b')');
        let mut end = first;
        let mut digits = 0usize;
        // Where the span could end instead, before each space between groups, with the digit
        // count there: "415 555 0132 212 555 0199" is two phone numbers, not one long number.
        let mut cuts = [(0usize, 0usize); 8];
        let mut cut_count = 0;
        while end < bytes.len() {
            if bytes[end].is_ascii_digit() {
                digits += 1;
                end += 1;
                if digits > 16 {
                    let Some(&(cut, cut_digits)) = cuts[..cut_count].last() else {
                        return (Vec::new(), sequence_end(bytes, first));
                    };
                    // Too long as one number: the groups before the last space may still be,
                    // whether or not this digit ends its group ("123-45-6789 987-65-4321" is
                    // two SSNs; the rest is read from the cut on).
                    if cut_digits < 6 {
                        return (Vec::new(), sequence_end(bytes, first));
                    }
                    (end, digits) = (cut, cut_digits);
                    cut_count -= 1;
                    break;
                }
                continue;
            }
            let mut k = end;
            while k < bytes.len() && k - end < 2 && is_sep(bytes[k]) {
                k += 1;
            }
            let joint = &bytes[end..k];
            let allowed = match joint {
                // A comma groups thousands or marks decimals, in a plain amount only; anywhere
                // else it separates values (CSV cells, lists).
                b"," => {
                    let group = bytes[k..]
                        .iter()
                        .take(4)
                        .take_while(|b| b.is_ascii_digit())
                        .count();
                    // A thousands group ends the number or goes on with `.`, `,` or a space.
                    let after = bytes.get(k + group);
                    group <= 3
                        && !after.is_some_and(|b| matches!(b, b'-' | b'/'))
                        && bytes[first..end]
                            .iter()
                            .all(|b| b.is_ascii_digit() || matches!(b, b',' | b'.' | b' '))
                        // "1.234.567,89": groups of three after the first; `306.484.5982`
                        // is a phone number and the comma after it ends a CSV cell.
                        && bytes[first..end]
                            .split(|b| matches!(b, b',' | b'.' | b' '))
                            .skip(1)
                            .all(|g| g.len() == 3)
                        // After space-grouped thousands only a decimal part: "5 883,23".
                        && (!bytes[first..end].contains(&b' ') || group == 2)
                }
                // "(415)555-0132": the parenthesis closes an area code opened just before.
                b")" => {
                    (first > 0 && bytes[first - 1] == b'(' && end - first == 3)
                        // "+44 (0)20 7946 0958": the trunk zero after a country code.
                        || (first > 0
                            && bytes[first - 1] == b'+'
                            && bytes[..end].ends_with(b" (0"))
                }
                [b] => *b != b'(' && *b != b')',
                _ => joint == b") " || joint == b" (",
            };
            if allowed && k < bytes.len() && bytes[k].is_ascii_digit() {
                if joint == b" " && cut_count < cuts.len() {
                    cuts[cut_count] = (end, digits);
                    cut_count += 1;
                }
                end = k;
            } else {
                break;
            }
        }
        let out = self.span_candidates(text, first, end, digits);
        if !out.is_empty() {
            return (out, end);
        }
        // Nothing as a whole: the longest shorter span ending at a space that is something.
        for &(cut, cut_digits) in cuts[..cut_count].iter().rev() {
            if cut_digits < 6 {
                break;
            }
            let out = self.span_candidates(text, first, cut, cut_digits);
            if !out.is_empty() {
                return (out, cut);
            }
        }
        (Vec::new(), sequence_end(bytes, first))
    }

    /// Candidates for the numeric span from the digit at `first` to `end`.
    fn span_candidates(
        &self,
        text: &str,
        first: usize,
        end: usize,
        digits: usize,
    ) -> Vec<Candidate> {
        let bytes = text.as_bytes();
        let mut start = first;
        // A phone number may open with + or (.
        if start > 0 && matches!(bytes[start - 1], b'+' | b'(') {
            start -= 1;
            if start > 0 && bytes[start] == b'(' && bytes[start - 1] == b'+' {
                start -= 1;
            }
        }
        let out = self.candidates_from(text, start, end, digits);
        // An opening parenthesis that begins no phone number is punctuation around the value:
        // "Jane Roe (219-09-9999)", "(1,234.50 USD)".
        if out.is_empty() && start < first && bytes[first - 1] == b'(' {
            return self.candidates_from(text, first, end, digits);
        }
        out
    }

    /// Candidates for the numeric span from `start` (its first digit, or a `+` or `(` before
    /// it) to `end`.
    fn candidates_from(
        &self,
        text: &str,
        start: usize,
        end: usize,
        digits: usize,
    ) -> Vec<Candidate> {
        let bytes = text.as_bytes();
        // Fewer than six digits can only be an amount next to a currency or a day next to a
        // month name; most numbers in running text end here, cheaply.
        if digits < 6 {
            let mut out = Vec::new();
            if !bytes.get(end).is_some_and(|b| b.is_ascii_alphabetic()) {
                self.money(text, start, end, &text[start..end], &mut out);
            }
            day_and_month(text, start, end, &mut out);
            // Short case numbers: "T-351-11", "IMM-569-23".
            if start >= 2
                && bytes[start - 1] == b'-'
                && bytes[start - 2].is_ascii_uppercase()
                && !bytes.get(end).is_some_and(|b| is_word(*b))
            {
                let mut shape_buf = [0u8; 48];
                let span = &bytes[start..end];
                for (slot, b) in shape_buf.iter_mut().zip(span) {
                    *slot = if b.is_ascii_digit() { b'd' } else { *b };
                }
                let shape = std::str::from_utf8(&shape_buf[..span.len().min(48)]).unwrap_or("");
                self.prefixed(text, start, end, shape, &mut out);
            }
            // US federal dockets: "3:12-cv-20112".
            if digits == 1 && bytes.get(end) == Some(&b':') {
                self.docket(text, start, &mut out);
            }
            return out;
        }
        let span = &text[start..end];
        let after = bytes.get(end).copied();
        // An escape's letter (`\t219-09-9999`) separates like the whitespace it stands for.
        let before = start
            .checked_sub(1)
            .filter(|&i| !escape_letter(bytes, i))
            .map(|i| bytes[i]);
        // Part of a longer token: letters or digits glued on either side, a hyphenated
        // identifier (UUIDs, SKUs), a version (v1.2.3), a timestamp (2024-01-02T10:00).
        let glued_after = (after.is_some_and(is_word) && !no_break_space(bytes, end))
            || (after.is_some_and(|a| a == b'-' || a == b'.' || a == b':' || a == b'_')
                && bytes.get(end + 1).is_some_and(|b| is_word(*b)));
        let glued_before = before.is_some_and(|b| b == b'-' || b == b'_' || b == b'.')
            && start >= 2
            && is_word(bytes[start - 2]);
        let letters_before = before.is_some_and(|b| b.is_ascii_alphabetic());
        // The span's shape, digits as `d`: at most 16 digits and their separators.
        let mut shape_buf = [0u8; 48];
        let shape_len = span.len().min(shape_buf.len());
        for (slot, b) in shape_buf.iter_mut().zip(span.bytes()) {
            *slot = if b.is_ascii_digit() { b'd' } else { b };
        }
        // The span is ASCII (digits, separators, + and parentheses), so this cannot fail.
        let shape = std::str::from_utf8(&shape_buf[..shape_len]).unwrap_or("");
        let mut out = Vec::new();
        if !glued_after && !glued_before && !letters_before {
            self.numeric(text, start, end, span, shape, &mut out);
        }
        if !glued_after {
            self.prefixed(text, start, end, shape, &mut out);
        }
        out
    }

    /// Shapes made of digits and separators only.
    fn numeric(
        &self,
        text: &str,
        start: usize,
        end: usize,
        span: &str,
        shape: &str,
        out: &mut Vec<Candidate>,
    ) {
        let mut digit_buf = [0u8; 16];
        let mut count = 0;
        for b in span.bytes().filter(u8::is_ascii_digit) {
            if let Some(slot) = digit_buf.get_mut(count) {
                *slot = b;
                count += 1;
            }
        }
        let digits = &digit_buf[..count];
        let candidate = |kind, pii_type, base, pattern, validator| Candidate {
            kind,
            pii_type,
            start,
            end,
            base,
            pattern,
            validator,
            normalized: None,
        };
        match shape {
            "ddd-dd-dddd" | "ddd dd dddd" | "ddd.dd.dddd" if ssn_is_issuable(digits) => {
                out.push(candidate(
                    Kind::UsSsn,
                    PiiType::UsSsn,
                    0.6,
                    "ssn_grouped",
                    Some("ssa_rules"),
                ))
            }
            "ddd-ddd-ddd" | "ddd ddd ddd" if sin_is_issuable(digits) => out.push(candidate(
                Kind::CaSin,
                PiiType::CaSin,
                0.6,
                "sin_grouped",
                Some("luhn"),
            )),
            "ddddddddd" => {
                // A bare nine-digit number is weak evidence of anything: context decides.
                if ssn_is_issuable(digits) {
                    out.push(candidate(
                        Kind::UsSsn,
                        PiiType::UsSsn,
                        0.3,
                        "ssn_bare",
                        Some("ssa_rules"),
                    ));
                }
                if sin_is_issuable(digits) {
                    out.push(candidate(
                        Kind::CaSin,
                        PiiType::CaSin,
                        0.3,
                        "sin_bare",
                        Some("luhn"),
                    ));
                }
                out.push(candidate(
                    Kind::Passport,
                    PiiType::PassportUs,
                    0.2,
                    "passport_us",
                    None,
                ));
            }
            _ => {}
        }
        // Dates written with digits and separators.
        if (6..=8).contains(&digits.len())
            && numeric_date(span)
            && !time_follows(text.as_bytes(), end)
        {
            out.push(candidate(
                Kind::Date,
                PiiType::Date,
                0.55,
                "date_numeric",
                Some("calendar"),
            ));
        }
        // Phone numbers: 10 to 15 digits, or a + prefix.
        let phone_like = (10..=15).contains(&digits.len())
            || (span.starts_with('+') && (8..=15).contains(&digits.len()));
        if phone_like
            && self.phone_grouping(span)
            && let Ok(phone) = normalize(PiiType::Phone, span, self.normalize)
        {
            let formatted = span.starts_with('+')
                || span.starts_with('(')
                || shape.contains(['-', ' ', '.', ')']);
            // Ten bare digits that libphonenumber takes for a North American number, with an
            // area code and an exchange that can be dialled, are a phone number more often
            // than not; words against (order, invoice, ...) still outweigh them.
            let nanp = !formatted && digits.len() == 10 && nanp_dialable(digits);
            out.push(Candidate {
                normalized: Some(phone.value.expose().to_owned()),
                ..candidate(
                    Kind::Phone,
                    PiiType::Phone,
                    if formatted {
                        0.6
                    } else if nanp {
                        0.5
                    } else {
                        0.35
                    },
                    if formatted {
                        "phone_formatted"
                    } else {
                        "phone_bare"
                    },
                    Some("libphonenumber"),
                )
            });
        }
        self.money(text, start, end, span, out);
        day_and_month(text, start, end, out);
    }

    /// Whether a number without `+` is grouped the way phone numbers of the detector's region
    /// are written. libphonenumber validates digits in any grouping, so without this an IP
    /// address, an ISBN or a browser version can read as a phone number.
    fn phone_grouping(&self, span: &str) -> bool {
        if span.starts_with('+') {
            return true;
        }
        let mut groups = [0usize; 8];
        let mut count = 0;
        let mut separator = None;
        let mut consistent = true;
        // Spaces, then a dash before the line number: `514 507-9129`, as Quebec writes it.
        let mut spaces_then_dash = true;
        let mut in_group = false;
        for b in span.bytes() {
            if b.is_ascii_digit() {
                if !in_group {
                    if count == groups.len() {
                        return false;
                    }
                    count += 1;
                    in_group = true;
                }
                groups[count - 1] += 1;
            } else {
                in_group = false;
                if matches!(b, b'-' | b'.' | b' ' | b'/') {
                    consistent &= separator.is_none_or(|s| s == b);
                    spaces_then_dash &= separator.is_none_or(|s| s == b' ');
                    separator = Some(b);
                }
            }
        }
        let groups = &groups[..count];
        let region = self.normalize.default_region;
        if region == Region::US || region == Region::CA {
            // North American numbering: 10 digits (or 1 and 10) as one run, 3-3-4 or 3-7.
            let leading_one = span.trim_start_matches('(').starts_with('1');
            return match groups {
                [10] | [3, 3, 4] | [3, 7] => true,
                [11] | [1, 3, 3, 4] | [1, 3, 7] => leading_one,
                _ => false,
            } && (consistent
                || span.contains(')')
                || (spaces_then_dash && separator == Some(b'-')));
        }
        consistent && separator != Some(b'/')
    }

    /// Money: an amount with a currency sign right before (or a euro sign after), or an ISO
    /// code around it.
    fn money(&self, text: &str, start: usize, end: usize, span: &str, out: &mut Vec<Candidate>) {
        let bytes = text.as_bytes();
        // A cheap look at the neighbouring bytes first: a sign ends right before the amount
        // ($, or the last byte of €, £, ¥), or a space and a capital letter or € sit on either
        // side.
        let prev = start.checked_sub(1).map(|i| bytes[i]);
        let next = bytes.get(end).copied();
        // A no-break space (U+00A0, U+202F) may stand where a space does, as French typesetting
        // puts one before `€` and `$`.
        let plausible = matches!(prev, Some(b'$' | 0xAC | 0xA3 | 0xA5 | 0xA0 | 0xAF))
            || (prev == Some(b' ')
                && start >= 2
                && (bytes[start - 2].is_ascii_uppercase() || bytes[start - 2] == b'$'))
            || (next == Some(b' ')
                && bytes
                    .get(end + 1)
                    .is_some_and(|b| b.is_ascii_uppercase() || *b == 0xE2 || *b == b'$'))
            || matches!(next, Some(0xE2 | 0xC2 | b'$'));
        if !plausible {
            return;
        }
        let is_sign = |c: char| matches!(c, '$' | '€' | '£' | '¥');
        // "$1,234.50", or "$ 1,234.50" with a space after the sign.
        let spaced = text[..start]
            .strip_suffix([' ', '\u{a0}', '\u{202f}'])
            .unwrap_or(&text[..start]);
        let sign_before = spaced.chars().next_back().is_some_and(is_sign);
        let code_near = |s: &str| CURRENCY_CODES.contains(&s);
        let code_before = start >= 4
            && bytes[start - 1] == b' '
            && text.get(start - 4..start - 1).is_some_and(code_near);
        let code_after =
            bytes.get(end) == Some(&b' ') && text.get(end + 1..end + 4).is_some_and(code_near);
        // "1.234,50 €", or the Quebec "2 500,00 $".
        let sign_after = text[end..]
            .trim_start_matches([' ', '\u{a0}', '\u{202f}'])
            .starts_with(['€', '$']);
        if (sign_before || code_before || code_after || sign_after)
            && normalize(PiiType::Monetary, span, &NormalizeOptions::default()).is_ok()
        {
            let from = if sign_before {
                spaced.len() - spaced.chars().next_back().map_or(0, char::len_utf8)
            } else {
                start
            };
            out.push(Candidate {
                kind: Kind::Monetary,
                pii_type: PiiType::Monetary,
                start: from,
                end,
                base: 0.7,
                pattern: "money",
                validator: Some("amount"),
                normalized: None,
            });
        }
    }

    /// A US federal docket number: office digit, `:`, two-digit year, `-`, two to three
    /// lower-case letters for the case type, `-`, three to five digits (`3:12-cv-20112`).
    fn docket(&self, text: &str, start: usize, out: &mut Vec<Candidate>) {
        let bytes = text.as_bytes();
        let rest = &bytes[start..];
        let digits = |from: usize| {
            rest[from.min(rest.len())..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        if rest.get(1) != Some(&b':') || digits(2) != 2 || rest.get(4) != Some(&b'-') {
            return;
        }
        let letters = rest[5..]
            .iter()
            .take_while(|b| b.is_ascii_lowercase())
            .count();
        if !(2..=3).contains(&letters) || rest.get(5 + letters) != Some(&b'-') {
            return;
        }
        let number = digits(6 + letters);
        let end = 6 + letters + number;
        if !(3..=5).contains(&number) || rest.get(end).is_some_and(|b| is_word(*b)) {
            return;
        }
        if start > 0 && is_word(bytes[start - 1]) {
            return;
        }
        out.push(Candidate {
            kind: Kind::CaseNumber,
            pii_type: PiiType::CaseNumber,
            start,
            end: start + end,
            base: 0.45,
            pattern: "case_number_docket",
            validator: None,
            normalized: None,
        });
    }

    /// Shapes that start with letters: Canadian passports (AB123456) and case numbers
    /// (CV-2023-001234).
    fn prefixed(
        &self,
        text: &str,
        start: usize,
        end: usize,
        shape: &str,
        out: &mut Vec<Candidate>,
    ) {
        let bytes = text.as_bytes();
        let letters = bytes[..start]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        if shape == "dddddd" && letters == 2 {
            let from = start - 2;
            if from == 0 || !is_word(bytes[from - 1]) {
                out.push(Candidate {
                    kind: Kind::Passport,
                    pii_type: PiiType::PassportCa,
                    start: from,
                    end,
                    base: 0.3,
                    pattern: "passport_ca",
                    validator: None,
                    normalized: None,
                });
            }
        }
        // Case numbers: 1 to 4 capitals, a hyphen, then digit groups joined by hyphens.
        if start >= 2 && bytes[start - 1] == b'-' {
            let caps = bytes[..start - 1]
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_uppercase())
                .count();
            let from = start - 1 - caps;
            if (1..=4).contains(&caps)
                && (from == 0 || !is_word(bytes[from - 1]))
                && shape.bytes().all(|b| b == b'd' || b == b'-')
                && shape.len() >= 4
            {
                out.push(Candidate {
                    kind: Kind::CaseNumber,
                    pii_type: PiiType::CaseNumber,
                    start: from,
                    end,
                    base: 0.45,
                    pattern: "case_number",
                    validator: None,
                    normalized: None,
                });
            }
        }
    }
}

/// The end of the numeric sequence that starts at `from`: digits and the separators between
/// them, but never across a comma, which separates values in CSV and lists.
fn sequence_end(bytes: &[u8], mut from: usize) -> usize {
    while from < bytes.len() {
        let joins = matches!(bytes[from], b' ' | b'-' | b'.' | b'/')
            && bytes.get(from + 1).is_some_and(u8::is_ascii_digit);
        if !(bytes[from].is_ascii_digit() || joins) {
            break;
        }
        from += 1;
    }
    from
}

/// Whether ten digits are a North American number as dialled: an area code and an exchange
/// that each start with 2 to 9 and are not an N11 service code.
fn nanp_dialable(digits: &[u8]) -> bool {
    let code = |d: &[u8]| (b'2'..=b'9').contains(&d[0]) && !(d[1] == b'1' && d[2] == b'1');
    digits.len() == 10 && code(&digits[0..3]) && code(&digits[3..6])
}

/// Dates with a month name around a day number: "March 4, 2020", "4 mars 2020". Without a
/// comma the day and the year are one numeric span ("March 29 2003"): its first group is the
/// day.
fn day_and_month(text: &str, start: usize, end: usize, out: &mut Vec<Candidate>) {
    let span = &text.as_bytes()[start..end];
    let day = span.iter().take_while(|b| b.is_ascii_digit()).count();
    let alone = day == span.len() || span.get(day) == Some(&b' ');
    if (1..=2).contains(&day) && alone && month_word_beside(text, start, start + day) {
        named_date(text, start, start + day, out);
    }
}

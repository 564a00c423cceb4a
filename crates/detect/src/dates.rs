//! Dates: numeric dates checked against the calendar without allocating, and dates written
//! with a month name (English or French) around a day number. Free functions over the text,
//! used by the recognizers.

use tokenize_core::PiiType;
use tokenize_core::normalize::{days_in_month, is_date, is_month_name};

use crate::types::{Candidate, Kind};

/// Dates with a month name around a day number: "March 4, 2020", "4 mars 2020".
pub(crate) fn named_date(text: &str, start: usize, end: usize, out: &mut Vec<Candidate>) {
    // "Month D, YYYY": the month word ends one space before the day.
    let head = text[..start].trim_end_matches(' ');
    let month_start = head
        .rfind(|c: char| !c.is_alphabetic() && c != '.')
        .map_or(0, |i| {
            i + head[i..].chars().next().map_or(1, char::len_utf8)
        });
    // No month word before the day: only "D Month YYYY" is possible.
    let month_start = if head[month_start..].chars().any(char::is_alphabetic) {
        month_start
    } else {
        start
    };
    // An ordinal suffix after the day: "December 18th, 2020".
    let ordinal = text.as_bytes()[end..]
        .iter()
        .take(2)
        .take_while(|b| b.is_ascii_lowercase())
        .count();
    for from in [month_start, start] {
        // "Month D, YYYY": the year follows the day; "D Month YYYY": it follows the month.
        let skip = if from == start { 16 } else { 3 + ordinal };
        let Some(to) = year_end(text, end, skip) else {
            continue;
        };
        if from >= to
            || !text.is_char_boundary(from)
            || !text.is_char_boundary(to)
            || time_follows(text.as_bytes(), to)
        {
            continue;
        }
        let candidate = &text[from..to];
        if candidate.len() > 30 {
            continue;
        }
        if is_date(candidate) {
            out.push(Candidate {
                kind: Kind::Date,
                pii_type: PiiType::Date,
                start: from,
                end: to,
                base: 0.6,
                pattern: "date_named",
                validator: Some("calendar"),
                normalized: None,
            });
            return;
        }
    }
}

/// Whether digits and separators are a calendar date, read as tokenize-core reads them (its
/// `is_date` is the reference, and a test holds the two together) but without allocating:
/// - `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYY.MM.DD` (month and day of one or two digits): year,
///   month, day;
/// - `M/D/YYYY` and `M-D-YYYY` (one or two digits each): month first, unless the first number
///   is above 12 and the second is not;
/// - `D.M.YYYY`: day first.
pub(crate) fn numeric_date(span: &str) -> bool {
    let mut groups = [0u32; 3];
    let mut lens = [0usize; 3];
    let mut separator = 0u8;
    let mut g = 0;
    for &b in span.as_bytes() {
        if b.is_ascii_digit() {
            groups[g] = groups[g] * 10 + u32::from(b - b'0');
            lens[g] += 1;
        } else if g < 2 && matches!(b, b'-' | b'/' | b'.') && (g == 0 || b == separator) {
            separator = b;
            g += 1;
        } else {
            return false;
        }
    }
    if g != 2 {
        return false;
    }
    let (year, month, day) = match (lens, separator) {
        ([4, 1 | 2, 1 | 2], _) => (groups[0], groups[1], groups[2]),
        ([1 | 2, 1 | 2, 4], b'.') => (groups[2], groups[1], groups[0]),
        ([1 | 2, 1 | 2, 4], _) if groups[0] > 12 && groups[1] <= 12 => {
            (groups[2], groups[1], groups[0])
        }
        ([1 | 2, 1 | 2, 4], _) => (groups[2], groups[0], groups[1]),
        _ => return false,
    };
    (1000..=9999).contains(&year)
        && (1..=12).contains(&month)
        && day >= 1
        && u8::try_from(day).is_ok_and(|d| d <= days_in_month(year as u16, month as u8))
}

/// Whether the first three letters (lower case) begin a month word: a cheap test that rejects
/// almost every other word before the full comparison.
fn is_month_prefix(prefix: [u8; 3]) -> bool {
    matches!(
        &prefix,
        b"jan"
            | b"feb"
            | b"mar"
            | b"apr"
            | b"may"
            | b"jun"
            | b"jul"
            | b"aug"
            | b"sep"
            | b"oct"
            | b"nov"
            | b"dec"
            | b"fev"
            | b"avr"
            | b"mai"
            | b"jui"
            | b"aou"
    )
}

/// Whether a byte can start a month word, in either language and either case.
fn is_month_initial(b: u8) -> bool {
    matches!(
        b | 0x20,
        b'j' | b'f' | b'm' | b'a' | b's' | b'o' | b'n' | b'd'
    )
}

fn is_month(word: &str) -> bool {
    let word = word.trim_end_matches('.');
    if word.len() < 3 || word.len() > 10 {
        return false;
    }
    let head = word.as_bytes();
    let prefix = [
        head[0].to_ascii_lowercase(),
        head[1].to_ascii_lowercase(),
        head[2].to_ascii_lowercase(),
    ];
    // Words with accents in their first three letters (février, août, décembre) skip the
    // prefix test.
    if head[..3].is_ascii() && !is_month_prefix(prefix) {
        return false;
    }
    // The date parser's own list, so the two never disagree about what a month is.
    is_month_name(word)
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic() || b >= 0x80
}

/// Whether a month name sits just before the day number (`March 4`) or just after it
/// (`4 mars`): the cheap test before any date parsing.
pub(crate) fn month_word_beside(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    // The word before: at most two spaces back (and an optional dot), then letters.
    let mut to = start;
    while to > 0 && start - to < 2 && bytes[to - 1] == b' ' {
        to -= 1;
    }
    if to < start {
        let word_end = if to > 0 && bytes[to - 1] == b'.' {
            to - 1
        } else {
            to
        };
        let mut from = word_end;
        while from > 0 && word_end - from < 12 && is_letter(bytes[from - 1]) {
            from -= 1;
        }
        if from < word_end
            && is_month_initial(bytes[from])
            && let Some(word) = text.get(from..word_end)
            && is_month(word)
        {
            return true;
        }
    }
    // The word after: an optional ordinal suffix and separators, then letters.
    let mut from = end;
    while from < bytes.len() && from - end < 3 && bytes[from].is_ascii_lowercase() {
        from += 1;
    }
    while from < bytes.len() && from - end < 5 && matches!(bytes[from], b' ' | b'-' | b'.') {
        from += 1;
    }
    if !bytes.get(from).is_some_and(|b| is_month_initial(*b)) {
        return false;
    }
    let mut to = from;
    while to < bytes.len() && to - from < 12 && is_letter(bytes[to]) {
        to += 1;
    }
    text.get(from..to).is_some_and(is_month)
}

/// Whether a time of day follows a date (`2023-10-13 02:38:16`, `16 Nov 2024 12:22:01`): a
/// timestamp, like the glued `T` form, not a person's date.
pub(crate) fn time_follows(bytes: &[u8], end: usize) -> bool {
    let rest = &bytes[end.min(bytes.len())..];
    let Some(rest) = rest.strip_prefix(b" ") else {
        return false;
    };
    let hours = rest
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .count();
    (1..=2).contains(&hours)
        && rest.get(hours) == Some(&b':')
        && rest.get(hours + 1).is_some_and(u8::is_ascii_digit)
        && rest.get(hours + 2).is_some_and(u8::is_ascii_digit)
}

/// The end of the first run of digits (the year) within `skip` characters after `from`.
fn year_end(text: &str, from: usize, skip: usize) -> Option<usize> {
    let (offset, _) = text[from..]
        .char_indices()
        .take(skip + 1)
        .find(|(_, c)| c.is_ascii_digit())?;
    let digits = text.as_bytes()[from + offset..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    Some(from + offset + digits)
}

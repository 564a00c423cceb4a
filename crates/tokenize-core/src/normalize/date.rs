//! Dates, read from the common written forms and normalized to ISO 8601 `YYYY-MM-DD`.
//!
//! How ambiguous forms are read:
//! - `YYYY-MM-DD`, `YYYY/MM/DD`, `YYYY.MM.DD` and `YYYYMMDD` are year, month, day.
//! - `NN/NN/YYYY` and `NN-NN-YYYY` are month/day/year where the policy's region writes dates
//!   so (the US and a few others: [`month_first`]), and day/month/year everywhere else, unless
//!   only the other reading is a date (`13/04/2020` can only be April 13, `04/13/2020` only
//!   April 13). So `03/04/2020` is March 4 under a US policy and April 3 under a French one.
//! - `NN.NN.YYYY` is day.month.year (dots are the European form).
//! - Month names in English or French, full or abbreviated: `March 4, 2020`, `4 March 2020`,
//!   `4 mars 2020`, `04-Mar-2020`, `1er mai 2020`.
//! - Two-digit years are refused: the century would be a guess.
//! - Impossible dates (`2023-02-29`, `2020-13-01`) are refused. Years run from 1000 to 9999.

use crate::error::ValueError;

/// How a date was written, so that a surrogate date can be written the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DateLayout {
    /// Year, month, day with a separator (`-`, `/`, `.`) or none.
    Ymd {
        /// The separator, or `None` for `YYYYMMDD`.
        sep: Option<char>,
        /// Whether month and day are written with two digits.
        pad: bool,
    },
    /// Month, day, year.
    Mdy {
        /// The separator: `-` or `/` (dots are always day first).
        sep: char,
        /// Whether month and day are written with two digits.
        pad: bool,
    },
    /// Day, month, year.
    Dmy {
        /// The separator: `-`, `/` or `.`.
        sep: char,
        /// Whether day and month are written with two digits.
        pad: bool,
    },
    /// With a month name: `template` holds the separators, the day's padding and ordinal
    /// suffix, and the month's capitalization of the written form.
    Named {
        /// Whether the day comes before the month (`4 March 2020`).
        day_first: bool,
        /// The language of the month name and whether it is abbreviated.
        month_style: MonthStyle,
        /// The rest of the written form.
        template: NamedTemplate,
    },
}

/// The written form of a named-month date, minus the values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTemplate {
    /// Separators between the parts, in order: before the second part and before the third.
    pub seps: [String; 2],
    /// Whether the day is written with two digits.
    pub pad_day: bool,
    /// The ordinal ending after the day, if any.
    pub suffix: DaySuffix,
    /// How the month name is capitalized.
    pub month_case: MonthCase,
}

/// How the month name was capitalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonthCase {
    /// All lower case: `march`.
    Lower,
    /// An upper-case first letter: `March`.
    Capitalized,
    /// All upper case: `MARCH`.
    Upper,
}

impl MonthCase {
    fn of(word: &str) -> Self {
        let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
        if letters.len() > 1 && letters.iter().all(|c| c.is_uppercase()) {
            MonthCase::Upper
        } else if letters.first().is_some_and(|c| c.is_uppercase()) {
            MonthCase::Capitalized
        } else {
            MonthCase::Lower
        }
    }

    fn apply(self, name: &str) -> String {
        match self {
            MonthCase::Lower => name.to_owned(),
            MonthCase::Upper => name.to_uppercase(),
            MonthCase::Capitalized => {
                let mut chars = name.chars();
                chars
                    .next()
                    .map(|first| first.to_uppercase().chain(chars).collect())
                    .unwrap_or_default()
            }
        }
    }
}

/// An ordinal ending written after the day: `4th`, `1er`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DaySuffix {
    /// No ending: `4`.
    None,
    /// `st`, `nd`, `rd` or `th`: `4th`.
    English,
    /// `er` on the first of the month: `1er`.
    French,
}

fn ordinal(day: u8, suffix: DaySuffix) -> &'static str {
    match suffix {
        DaySuffix::None => "",
        DaySuffix::French => {
            if day == 1 {
                "er"
            } else {
                ""
            }
        }
        DaySuffix::English => match (day % 10, day) {
            (_, 11..=13) => "th",
            (1, _) => "st",
            (2, _) => "nd",
            (3, _) => "rd",
            _ => "th",
        },
    }
}

/// The language of a month name and whether it is abbreviated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonthStyle {
    /// The full English name: `March`.
    EnglishFull,
    /// The first three letters of the English name: `Mar`.
    EnglishShort,
    /// The full French name: `mars`.
    FrenchFull,
    /// The French abbreviation: `févr`.
    FrenchShort,
}

/// A calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ymd {
    /// The year, 1000 to 9999.
    pub year: u16,
    /// The month, 1 to 12.
    pub month: u8,
    /// The day of the month, from 1.
    pub day: u8,
}

impl Ymd {
    /// The date in ISO 8601 form: `YYYY-MM-DD`.
    pub fn iso(self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// Whether `year` is a leap year in the Gregorian calendar.
pub fn is_leap(year: u16) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

/// The number of days in `month` of `year`, or 0 when `month` is not 1 to 12.
pub fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

fn checked(year: u32, month: u32, day: u32) -> Result<Ymd, ValueError> {
    if !(1000..=9999).contains(&year) {
        return Err(ValueError::invalid("the year must have four digits"));
    }
    let not_a_date = || ValueError::invalid("not a calendar date");
    // Checked before narrowing: month 257 must not wrap to January.
    let year = u16::try_from(year).map_err(|_| not_a_date())?;
    let month = u8::try_from(month).map_err(|_| not_a_date())?;
    let day = u8::try_from(day).map_err(|_| not_a_date())?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(not_a_date());
    }
    Ok(Ymd { year, month, day })
}

const ENGLISH: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const FRENCH: [&str; 12] = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
];
const FRENCH_SHORT: [&str; 12] = [
    "janv", "févr", "mars", "avr", "mai", "juin", "juil", "août", "sept", "oct", "nov", "déc",
];

pub(crate) fn month_named(word: &str) -> Option<(u8, MonthStyle)> {
    let w = word.trim_end_matches('.').to_lowercase();
    for (i, name) in ENGLISH.iter().enumerate() {
        if w == *name {
            return Some((i as u8 + 1, MonthStyle::EnglishFull));
        }
        if w.len() >= 3 && w == name[..3] || (w == "sept" && i == 8) {
            return Some((i as u8 + 1, MonthStyle::EnglishShort));
        }
    }
    for (i, name) in FRENCH.iter().enumerate() {
        if w == *name
            || (i == 1 && w == "fevrier")
            || (i == 7 && w == "aout")
            || (i == 11 && w == "decembre")
        {
            return Some((i as u8 + 1, MonthStyle::FrenchFull));
        }
    }
    for (i, name) in FRENCH_SHORT.iter().enumerate() {
        if w == *name || (i == 1 && w == "fevr") || (i == 11 && w == "dec") {
            return Some((i as u8 + 1, MonthStyle::FrenchShort));
        }
    }
    None
}

/// The name of `month` (1 to 12, clamped) in `style`, lower case.
pub fn month_name(month: u8, style: MonthStyle) -> &'static str {
    let i = usize::from(month.clamp(1, 12) - 1);
    match style {
        MonthStyle::EnglishFull => ENGLISH[i],
        MonthStyle::EnglishShort => &ENGLISH[i][..3],
        MonthStyle::FrenchFull => FRENCH[i],
        MonthStyle::FrenchShort => FRENCH_SHORT[i],
    }
}

fn number(s: &str) -> Option<u32> {
    (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Parses a written date.
/// Whether `region` writes numeric dates month first (`03/04/2020` is March 4): the United
/// States and its territories, the Philippines, Micronesia, the Marshall Islands, Palau and
/// Belize. Everywhere else writes the day first. Canada writes both; it keeps the US reading
/// the service always had.
pub fn month_first(region: phonenumber::country::Id) -> bool {
    use phonenumber::country::Id as R;
    matches!(
        region,
        R::US
            | R::PR
            | R::GU
            | R::VI
            | R::AS
            | R::MP
            | R::PH
            | R::FM
            | R::MH
            | R::PW
            | R::BZ
            | R::CA
    )
}

/// Reads a written date; `month_first` says how `NN/NN/YYYY` is read when both readings are
/// dates ([`month_first`] of the policy's region).
pub fn date(raw: &str, month_first: bool) -> Result<(Ymd, DateLayout), ValueError> {
    const UNREADABLE: ValueError = ValueError::invalid(
        "not a date in a supported form (for example 2020-03-04 or March 4, 2020)",
    );
    if raw.len() > 40 {
        return Err(UNREADABLE);
    }
    let b = raw.as_bytes();
    // YYYYMMDD
    if b.len() == 8 && b.iter().all(u8::is_ascii_digit) {
        let ymd = checked(
            number(&raw[0..4]).unwrap_or(0),
            number(&raw[4..6]).unwrap_or(0),
            number(&raw[6..8]).unwrap_or(0),
        )?;
        return Ok((
            ymd,
            DateLayout::Ymd {
                sep: None,
                pad: true,
            },
        ));
    }
    // Numeric with one kind of separator.
    for sep in ['-', '/', '.'] {
        let parts: Vec<&str> = raw.split(sep).collect();
        if parts.len() == 3 && parts.iter().all(|p| number(p).is_some()) {
            let n: Vec<u32> = parts.iter().filter_map(|p| number(p)).collect();
            let pad = parts.iter().all(|p| p.len() >= 2);
            if parts[0].len() == 4 {
                let ymd = checked(n[0], n[1], n[2])?;
                return Ok((
                    ymd,
                    DateLayout::Ymd {
                        sep: Some(sep),
                        pad,
                    },
                ));
            }
            if parts[2].len() != 4 || parts[0].len() > 2 || parts[1].len() > 2 {
                return Err(ValueError::invalid("the year must have four digits"));
            }
            // Dots are day first; otherwise the region's order, unless only the other
            // reading is a date.
            let only_day_first = n[0] > 12 && n[1] <= 12;
            let only_month_first = n[1] > 12 && n[0] <= 12;
            let day_first = sep == '.' || only_day_first || (!month_first && !only_month_first);
            return if day_first {
                Ok((checked(n[2], n[1], n[0])?, DateLayout::Dmy { sep, pad }))
            } else {
                Ok((checked(n[2], n[0], n[1])?, DateLayout::Mdy { sep, pad }))
            };
        }
    }
    // With a month name: alternating words and separators.
    let mut words: Vec<String> = Vec::new();
    let mut seps: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut sep = String::new();
    for c in raw.trim().chars() {
        if c.is_alphanumeric() {
            if !sep.is_empty() {
                seps.push(std::mem::take(&mut sep));
            }
            word.push(c);
        } else {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            sep.push(c);
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    if words.len() != 3 || seps.len() != 2 || !sep.is_empty() {
        return Err(UNREADABLE);
    }
    let year = number(&words[2])
        .filter(|_| words[2].len() == 4)
        .ok_or(UNREADABLE)?;
    let (day_first, day_word, month_word, (month, month_style)) =
        if let Some(m) = month_named(&words[0]) {
            (false, &words[1], &words[0], m)
        } else if let Some(m) = month_named(&words[1]) {
            (true, &words[0], &words[1], m)
        } else {
            return Err(UNREADABLE);
        };
    let digits: String = day_word.chars().take_while(char::is_ascii_digit).collect();
    let suffix = match &day_word[digits.len()..] {
        "" => DaySuffix::None,
        "st" | "nd" | "rd" | "th" => DaySuffix::English,
        "er" => DaySuffix::French,
        _ => return Err(UNREADABLE),
    };
    let day = number(&digits)
        .filter(|_| digits.len() <= 2)
        .ok_or(UNREADABLE)?;
    let ymd = checked(year, u32::from(month), day)?;
    let template = NamedTemplate {
        seps: [seps[0].clone(), seps[1].clone()],
        pad_day: digits.len() == 2,
        suffix,
        month_case: MonthCase::of(month_word),
    };
    Ok((
        ymd,
        DateLayout::Named {
            day_first,
            month_style,
            template,
        },
    ))
}

/// Writes `date` the way `layout` says.
pub fn render(date: Ymd, layout: &DateLayout) -> String {
    let two = |n: u8, pad: bool| {
        if pad {
            format!("{n:02}")
        } else {
            n.to_string()
        }
    };
    match layout {
        DateLayout::Ymd { sep: None, .. } => {
            format!("{:04}{:02}{:02}", date.year, date.month, date.day)
        }
        DateLayout::Ymd { sep: Some(s), pad } => {
            format!(
                "{:04}{s}{}{s}{}",
                date.year,
                two(date.month, *pad),
                two(date.day, *pad)
            )
        }
        DateLayout::Mdy { sep, pad } => {
            format!(
                "{}{sep}{}{sep}{:04}",
                two(date.month, *pad),
                two(date.day, *pad),
                date.year
            )
        }
        DateLayout::Dmy { sep, pad } => {
            format!(
                "{}{sep}{}{sep}{:04}",
                two(date.day, *pad),
                two(date.month, *pad),
                date.year
            )
        }
        DateLayout::Named {
            day_first,
            month_style,
            template,
        } => {
            let day = format!(
                "{}{}",
                two(date.day, template.pad_day),
                ordinal(date.day, template.suffix)
            );
            let month = template
                .month_case
                .apply(month_name(date.month, *month_style));
            let [s1, s2] = &template.seps;
            if *day_first {
                format!("{day}{s1}{month}{s2}{:04}", date.year)
            } else {
                format!("{month}{s1}{day}{s2}{:04}", date.year)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(raw: &str) -> String {
        date(raw, true)
            .map(|(d, _)| d.iso())
            .unwrap_or_else(|e| format!("error: {e}"))
    }

    #[test]
    fn a_day_first_region_reads_ambiguous_numeric_dates_day_first() {
        let read = |raw: &str, month_first: bool| date(raw, month_first).unwrap().0.iso();
        assert_eq!(read("03/04/2020", true), "2020-03-04");
        assert_eq!(read("03/04/2020", false), "2020-04-03");
        // Only one reading is a date: that one, whatever the region.
        assert_eq!(read("13/04/2020", true), "2020-04-13");
        assert_eq!(read("04/13/2020", false), "2020-04-13");
        assert!(month_first(phonenumber::country::Id::US));
        assert!(!month_first(phonenumber::country::Id::FR));
    }

    #[test]
    fn written_forms() {
        assert_eq!(iso("2020-03-04"), "2020-03-04");
        assert_eq!(iso("2020/3/4"), "2020-03-04");
        assert_eq!(iso("20200304"), "2020-03-04");
        assert_eq!(iso("03/04/2020"), "2020-03-04");
        assert_eq!(iso("13/04/2020"), "2020-04-13");
        assert_eq!(iso("04.03.2020"), "2020-03-04");
        assert_eq!(iso("March 4, 2020"), "2020-03-04");
        assert_eq!(iso("Mar 4 2020"), "2020-03-04");
        assert_eq!(iso("4 March 2020"), "2020-03-04");
        assert_eq!(iso("04-Mar-2020"), "2020-03-04");
        assert_eq!(iso("4 mars 2020"), "2020-03-04");
        assert_eq!(iso("1er mai 2020"), "2020-05-01");
        assert_eq!(iso("12 décembre 1999"), "1999-12-12");
        assert_eq!(iso("July 4th, 1976"), "1976-07-04");
    }

    #[test]
    fn impossible_and_ambiguous_dates_are_refused() {
        for bad in [
            "2023-02-29",
            "2020-13-01",
            "2020-00-10",
            "31/04/2020",
            "03/04/20",
            "2020-03",
            "tomorrow",
            "March 32, 2020",
            "Smarch 4, 2020",
            "0999-01-01",
            // Parts too large for their field are refused, not wrapped (257 is 1 mod 256).
            "2020-257-4",
            "2020-03-260",
            "2020/769/1",
            "March 260, 2020",
        ] {
            assert!(date(bad, true).is_err(), "{bad}");
        }
        assert_eq!(iso("2024-02-29"), "2024-02-29");
    }

    #[test]
    fn rendering_keeps_the_layout() {
        for raw in [
            "2020-03-04",
            "2020/3/4",
            "20200304",
            "03/04/2020",
            "04.03.2020",
            "March 4, 2020",
            "4 mars 2020",
            "04-Mar-2020",
            "July 4th, 1976",
            "1er mai 2020",
            "Mar. 4, 2020",
        ] {
            let (d, layout) = date(raw, true).unwrap();
            assert_eq!(render(d, &layout), raw);
        }
    }
}

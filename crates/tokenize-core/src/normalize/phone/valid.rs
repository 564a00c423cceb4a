//! Whether a parsed number is valid: `phonenumber::is_valid`, decided from the same metadata
//! and the same patterns, compiled once per country calling code.
//!
//! The crate keeps its compiled patterns in one cache behind a mutex, keyed by their source
//! text, and looks every pattern up there on every match: it hashes the source of each (up to
//! a few kilobytes for North American fixed lines) with SipHash under the lock, about ten times
//! per number. That was a third of the time of validating a number, and a fifth of detection's
//! time on log lines that carry phone numbers. Here each country code's patterns are compiled
//! the first time a number of that code is validated, and kept without a lock.
//!
//! The decision is the crate's, step by step (its `validator::is_valid_with`, `source_for` and
//! `number_type`), and the tests compare the two on every region's example numbers, their
//! neighbours and random numbers.

use std::sync::OnceLock;

use phonenumber::PhoneNumber;
use phonenumber::metadata::{DATABASE, Descriptor, Metadata};
use regex::{Regex, RegexBuilder};

/// Country calling codes are one to three digits.
const CODES: usize = 1000;

/// Each code's compiled metadata, `None` where the code has none (or, which the crate's own
/// patterns rule out, a pattern this crate's compiler refuses: those numbers are then left to
/// `phonenumber::is_valid`).
static COMPILED: [OnceLock<Option<Code>>; CODES] = [const { OnceLock::new() }; CODES];

/// Whether `number` is valid for its country: the same answer as `phonenumber::is_valid`.
pub fn is_valid(number: &PhoneNumber) -> bool {
    let code = number.code().value();
    let compiled = COMPILED
        .get(usize::from(code))
        .and_then(|slot| slot.get_or_init(|| Code::compile(code)).as_ref());
    match compiled {
        Some(compiled) => compiled.is_valid(&number.national().to_string()),
        None if usize::from(code) >= CODES || DATABASE.region(&code).is_some() => {
            phonenumber::is_valid(number)
        }
        None => false,
    }
}

/// The regions that share a calling code, in the crate's order.
enum Code {
    /// One region, or a non-geographic entity (`001`).
    One(Region),
    /// Several (`1`: the United States, Canada and the Caribbean): the first whose leading
    /// digits match the number decides, and a region without leading digits claims the number
    /// if it is a valid number there.
    Shared(Vec<Region>),
    /// The code's single region is not a region the crate knows: no number is valid.
    Unknown,
}

impl Code {
    fn compile(code: u16) -> Option<Code> {
        let regions = DATABASE.region(&code)?;
        if let [only] = regions.as_slice() {
            let metadata = if *only == "001" {
                DATABASE.by_code(&code)?.into_iter().next()
            } else if only.parse::<phonenumber::country::Id>().is_ok() {
                DATABASE.by_id(*only)
            } else {
                return Some(Code::Unknown);
            };
            return match metadata {
                Some(metadata) => Region::compile(metadata).map(Code::One),
                None => Some(Code::Unknown),
            };
        }
        regions
            .iter()
            .map(|id| DATABASE.by_id(*id).and_then(Region::compile))
            .collect::<Option<Vec<_>>>()
            .map(Code::Shared)
    }

    fn is_valid(&self, national: &str) -> bool {
        match self {
            Code::One(region) => region.is_valid(national),
            Code::Shared(regions) => {
                for region in regions {
                    match &region.leading_digits {
                        Some(leading) => {
                            if starts_with_match(leading, national) {
                                return region.is_valid(national);
                            }
                        }
                        None => {
                            if region.is_valid(national) {
                                return true;
                            }
                        }
                    }
                }
                false
            }
            Code::Unknown => false,
        }
    }
}

/// One region's patterns.
struct Region {
    leading_digits: Option<Regex>,
    general: Pattern,
    /// Every number type the crate tells apart (premium rate, toll free, shared cost, VoIP,
    /// personal, pager, UAN, voicemail, fixed line, mobile): a number of any of them, within
    /// the general pattern, is valid.
    types: Vec<Pattern>,
}

/// The number types the crate tells apart, in the order its `number_type` tries them.
fn number_types(metadata: &Metadata) -> [Option<&Descriptor>; 10] {
    let d = metadata.descriptors();
    [
        d.premium_rate(),
        d.toll_free(),
        d.shared_cost(),
        d.voip(),
        d.personal_number(),
        d.pager(),
        d.uan(),
        d.voicemail(),
        d.fixed_line(),
        d.mobile(),
    ]
}

impl Region {
    fn compile(metadata: &Metadata) -> Option<Region> {
        let d = metadata.descriptors();
        let types = number_types(metadata);
        Some(Region {
            leading_digits: match metadata.leading_digits() {
                Some(leading) => Some(compile(leading.as_str())?),
                None => None,
            },
            general: Pattern::compile(d.general())?,
            types: types
                .into_iter()
                .flatten()
                .map(Pattern::compile)
                .collect::<Option<_>>()?,
        })
    }

    /// The crate's `number_type(..) != Unknown`.
    fn is_valid(&self, national: &str) -> bool {
        self.general.matches(national) && self.types.iter().any(|t| t.matches(national))
    }
}

/// A descriptor: its national number pattern and the lengths it allows (none: any).
struct Pattern {
    regex: Regex,
    lengths: Vec<u16>,
}

impl Pattern {
    fn compile(descriptor: &Descriptor) -> Option<Pattern> {
        Some(Pattern {
            regex: compile(descriptor.national_number().as_str())?,
            lengths: descriptor.possible_length().to_vec(),
        })
    }

    /// The crate's `Descriptor::is_match`: a length it allows, and a match at the start.
    fn matches(&self, national: &str) -> bool {
        let length = u16::try_from(national.len()).unwrap_or(u16::MAX);
        (self.lengths.is_empty() || self.lengths.contains(&length))
            && starts_with_match(&self.regex, national)
    }
}

/// The crate compiles every metadata pattern with whitespace ignored.
fn compile(source: &str) -> Option<Regex> {
    RegexBuilder::new(source)
        .ignore_whitespace(true)
        .build()
        .ok()
}

/// The crate's test: the leftmost match starts at the first digit.
fn starts_with_match(regex: &Regex, text: &str) -> bool {
    regex.find(text).is_some_and(|m| m.start() == 0)
}

#[cfg(test)]
mod tests {
    use super::super::Digits;
    use super::*;

    /// Both answers for one written number, if it parses.
    fn agree(written: &str) -> Result<(), String> {
        let Ok(number) = phonenumber::parse(None, written) else {
            return Ok(());
        };
        let (ours, theirs) = (is_valid(&number), phonenumber::is_valid(&number));
        if ours == theirs {
            Ok(())
        } else {
            Err(format!("{written}: ours {ours}, phonenumber {theirs}"))
        }
    }

    #[test]
    fn every_regions_examples_and_their_neighbours_get_the_crates_answer() {
        let mut digits = Digits(0x9e37_79b9_7f4a_7c15);
        let mut disagreements = Vec::new();
        let mut checked = 0;
        for code in 1..CODES as u16 {
            let Some(regions) = DATABASE.region(&code) else {
                continue;
            };
            for id in regions {
                let metadata = match DATABASE.by_id(id) {
                    Some(m) => m,
                    None => match DATABASE.by_code(&code).and_then(|m| m.into_iter().next()) {
                        Some(m) => m,
                        None => continue,
                    },
                };
                let examples = std::iter::once(Some(metadata.descriptors().general()))
                    .chain(number_types(metadata))
                    .flatten()
                    .filter_map(|d| d.example());
                for example in examples {
                    let last = example.len() - 1;
                    let bumped = (example.as_bytes()[last] - b'0' + 1) % 10;
                    let variants = [
                        example.to_owned(),
                        format!("{}{bumped}", &example[..last]),
                        example[..last].to_owned(),
                        format!("{example}{}", digits.string(1)),
                        format!(
                            "{}{}",
                            &example[..example.len().min(3)],
                            digits.string(last.saturating_sub(2))
                        ),
                        digits.string(example.len()),
                    ];
                    for national in variants {
                        checked += 1;
                        if let Err(e) = agree(&format!("+{code} {national}")) {
                            disagreements.push(e);
                        }
                    }
                }
            }
        }
        assert!(checked > 5_000, "{checked} numbers checked");
        assert!(disagreements.is_empty(), "{disagreements:#?}");
    }

    #[test]
    fn north_american_numbers_get_the_crates_answer() {
        // The numbers detection validates most: ten digits, every area code and exchange
        // shape, and the same with other country codes that share a region list.
        let mut digits = Digits(0x2545_f491_4f6c_dd1d);
        let mut disagreements = Vec::new();
        for n in 0..5_000 {
            let national = digits.string(10);
            for written in [
                format!("+1 {national}"),
                format!(
                    "+1 ({}) {}-{}",
                    &national[..3],
                    &national[3..6],
                    &national[6..]
                ),
                format!("+{} {}", 7 + n % 2 * 37, &national),
            ] {
                if let Err(e) = agree(&written) {
                    disagreements.push(e);
                }
            }
        }
        assert!(disagreements.is_empty(), "{disagreements:#?}");
    }

    #[test]
    fn unknown_codes_are_invalid_as_the_crate_says() {
        for written in [
            "+999 1234567",
            "+0 1234567",
            "+888 12345678",
            "+979 123456789",
        ] {
            agree(written).unwrap();
        }
    }
}

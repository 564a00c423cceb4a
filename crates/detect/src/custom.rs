//! Custom classifiers, a tenant's own data identifiers (Macie's custom data identifiers are the
//! model): a regular expression, optional keywords that must be near for full confidence, words
//! that disqualify a match, an optional validator and a base confidence. All of a detector's
//! classifiers compile into one multi-pattern automaton, which the scan loop advances alongside
//! the built-in anchors.

use std::borrow::Cow;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex_automata::meta::Regex;
use regex_automata::{Input, Span};
use serde::{Deserialize, Serialize};
use tokenize_core::Category;
use tokenize_core::normalize::{luhn_valid, ssn_is_issuable};

/// The most classifiers one detector holds.
pub const MAX_CLASSIFIERS: usize = 100;
/// The longest regular expression accepted, in bytes.
pub const MAX_REGEX_LEN: usize = 1000;
/// The most keywords (and ignore words) per classifier.
pub const MAX_WORDS: usize = 50;
/// Matches longer than this are not reported: a classifier names values, not passages, and
/// streaming windows overlap by a fixed amount.
pub const MAX_MATCH_LEN: usize = 256;
/// The farthest a keyword may be from the match, in bytes, and the default.
pub const MAX_MATCH_DISTANCE: usize = 300;
/// How far before a match a keyword may be when the classifier does not say.
pub const DEFAULT_MATCH_DISTANCE: usize = 50;
/// The confidence of a match without keywords when the classifier does not say.
pub const DEFAULT_CONFIDENCE: f32 = 0.6;

/// A check a match must pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validator {
    /// The digits pass the Luhn checksum (card numbers, SINs, many account numbers).
    Luhn,
    /// Nine digits that are an issuable SSN.
    SsaRules,
}

impl Validator {
    pub const ALL: [Validator; 2] = [Validator::Luhn, Validator::SsaRules];

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Validator::Luhn => "luhn",
            Validator::SsaRules => "ssa_rules",
        }
    }

    fn passes(self, matched: &str) -> bool {
        let digits: Vec<u8> = matched.bytes().filter(u8::is_ascii_digit).collect();
        match self {
            Validator::Luhn => digits.len() >= 2 && luhn_valid(&digits),
            Validator::SsaRules => digits.len() == 9 && ssn_is_issuable(&digits),
        }
    }
}

/// A classifier as a tenant writes it, in JSON or YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierSpec {
    /// Lower-case letters, digits and underscores, 1 to 64; findings name it as their type.
    pub name: String,
    /// The category governance conditions match it by: government_id, contact, personal,
    /// financial or legal_medical.
    #[serde(with = "category")]
    pub category: Category,
    /// A regular expression (Rust `regex` syntax, no look-around or backreferences).
    pub regex: String,
    /// Words or phrases that raise a match's confidence when they end within
    /// `max_match_distance` bytes before it (as in Macie), or name its CSV column or JSON key.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// A match containing any of these (case-insensitive) is not reported.
    #[serde(default)]
    pub ignore_words: Vec<String>,
    #[serde(default)]
    pub validator: Option<Validator>,
    /// The confidence of a match without keywords, 0 to 1. Below the scan's threshold, a match
    /// is reported only with a keyword near.
    #[serde(default = "default_confidence")]
    pub confidence: f32,
    /// How far before the match a keyword may be, in bytes, up to 300.
    #[serde(default = "default_distance")]
    pub max_match_distance: usize,
}

mod category {
    use serde::{Deserialize, Deserializer, Serializer};
    use tokenize_core::Category;

    pub fn serialize<S: Serializer>(category: &Category, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(category.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Category, D::Error> {
        let name = String::deserialize(d)?;
        Category::parse(&name).ok_or_else(|| {
            serde::de::Error::custom(
                "category must be one of government_id, contact, personal, financial, \
                 legal_medical",
            )
        })
    }
}

fn default_confidence() -> f32 {
    DEFAULT_CONFIDENCE
}

fn default_distance() -> usize {
    DEFAULT_MATCH_DISTANCE
}

/// What is wrong with a classifier, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifierError {
    /// The classifier's position in the list, when there is a list.
    pub index: Option<usize>,
    pub field: &'static str,
    pub message: String,
}

impl std::fmt::Display for ClassifierError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(index) => write!(f, "classifiers[{index}].{}: {}", self.field, self.message),
            None => write!(f, "{}: {}", self.field, self.message),
        }
    }
}

impl std::error::Error for ClassifierError {}

fn invalid(field: &'static str, message: impl Into<String>) -> ClassifierError {
    ClassifierError {
        index: None,
        field,
        message: message.into(),
    }
}

impl ClassifierSpec {
    /// One classifier from JSON.
    pub fn from_json(text: &str) -> Result<Self, ClassifierError> {
        serde_json::from_str(text).map_err(|e| invalid("body", format!("invalid JSON: {e}")))
    }

    /// One classifier from YAML.
    pub fn from_yaml(text: &str) -> Result<Self, ClassifierError> {
        serde_norway::from_str(text).map_err(|e| invalid("body", format!("invalid YAML: {e}")))
    }

    /// A list of classifiers from YAML, or JSON (which YAML reads too).
    pub fn list_from_yaml(text: &str) -> Result<Vec<Self>, ClassifierError> {
        serde_norway::from_str(text).map_err(|e| invalid("body", format!("invalid YAML: {e}")))
    }

    /// Checks every field and compiles the expression alone.
    pub fn validate(&self) -> Result<(), ClassifierError> {
        let name_ok = (1..=64).contains(&self.name.len())
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !name_ok {
            return Err(invalid(
                "name",
                "must be 1 to 64 lower-case letters, digits or underscores",
            ));
        }
        if self.regex.is_empty() || self.regex.len() > MAX_REGEX_LEN {
            return Err(invalid(
                "regex",
                format!("must be 1 to {MAX_REGEX_LEN} bytes"),
            ));
        }
        let regex = build(std::slice::from_ref(&self.regex))
            .map_err(|e| invalid("regex", format!("does not compile: {e}")))?;
        if regex.is_match("") {
            return Err(invalid("regex", "matches the empty string"));
        }
        // Nor an empty match anywhere else (`\b`, `\d*\b`): every word boundary would be a
        // finding with no value.
        let can_be_empty = regex_automata::util::syntax::parse(&self.regex)
            .map(|hir| hir.properties().minimum_len() == Some(0))
            .unwrap_or(true);
        if can_be_empty {
            return Err(invalid("regex", "can match an empty piece of text"));
        }
        if !(0.0..=1.0).contains(&self.confidence) {
            return Err(invalid("confidence", "must be between 0 and 1"));
        }
        if self.max_match_distance > MAX_MATCH_DISTANCE {
            return Err(invalid(
                "max_match_distance",
                format!("must be at most {MAX_MATCH_DISTANCE}"),
            ));
        }
        for (field, words) in [
            ("keywords", &self.keywords),
            ("ignore_words", &self.ignore_words),
        ] {
            if words.len() > MAX_WORDS {
                return Err(invalid(field, format!("at most {MAX_WORDS} entries")));
            }
            if words.iter().any(|w| w.trim().is_empty() || w.len() > 90) {
                return Err(invalid(
                    field,
                    "entries must be 1 to 90 bytes and not blank",
                ));
            }
        }
        Ok(())
    }
}

/// Compiles expressions with limits that keep a hostile pattern from exhausting memory.
fn build(patterns: &[String]) -> Result<Regex, String> {
    Regex::builder()
        .configure(
            Regex::config()
                .nfa_size_limit(Some(8 << 20))
                .hybrid_cache_capacity(2 << 20),
        )
        .build_many(patterns)
        .map_err(|e| e.to_string())
}

/// A detector's classifiers, validated and compiled together.
#[derive(Debug, Clone)]
pub struct Classifiers {
    specs: Vec<Compiled>,
    regex: Regex,
    /// Every classifier's keywords in one automaton; `keyword_owner[pattern]` is the classifier.
    keywords: Option<AhoCorasick>,
    keyword_owner: Vec<(usize, Arc<str>)>,
}

#[derive(Debug, Clone)]
struct Compiled {
    name: crate::types::FindingType,
    category: Category,
    ignore_words: Vec<String>,
    validator: Option<Validator>,
    confidence: f32,
    distance: usize,
}

/// A custom match, scored.
pub(crate) struct Scored {
    pub name: crate::types::FindingType,
    pub category: Category,
    pub start: usize,
    pub end: usize,
    pub confidence: f32,
    pub validator: Option<&'static str>,
    pub context: Vec<Cow<'static, str>>,
}

impl Classifiers {
    /// Validates and compiles a tenant's classifiers; names must be unique.
    pub fn compile(specs: &[ClassifierSpec]) -> Result<Self, ClassifierError> {
        if specs.len() > MAX_CLASSIFIERS {
            return Err(invalid(
                "classifiers",
                format!("at most {MAX_CLASSIFIERS} per tenant"),
            ));
        }
        for (index, spec) in specs.iter().enumerate() {
            spec.validate().map_err(|e| ClassifierError {
                index: Some(index),
                ..e
            })?;
            if specs[..index].iter().any(|s| s.name == spec.name) {
                return Err(ClassifierError {
                    index: Some(index),
                    field: "name",
                    message: "is used by another classifier".into(),
                });
            }
        }
        let patterns: Vec<String> = specs.iter().map(|s| s.regex.clone()).collect();
        let regex = build(&patterns)
            .map_err(|e| invalid("classifiers", format!("do not compile together: {e}")))?;
        let mut keyword_owner: Vec<(usize, Arc<str>)> = Vec::new();
        for (index, spec) in specs.iter().enumerate() {
            for word in &spec.keywords {
                keyword_owner.push((index, Arc::from(word.trim().to_lowercase())));
            }
        }
        let keywords = if keyword_owner.is_empty() {
            None
        } else {
            let automaton = AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostLongest)
                .build(keyword_owner.iter().map(|(_, w)| w.as_ref()))
                .map_err(|e| invalid("keywords", format!("do not compile: {e}")))?;
            Some(automaton)
        };
        let specs = specs
            .iter()
            .map(|s| Compiled {
                name: crate::types::FindingType::custom(&s.name),
                category: s.category,
                ignore_words: s.ignore_words.iter().map(|w| w.to_lowercase()).collect(),
                validator: s.validator,
                confidence: s.confidence,
                distance: s.max_match_distance,
            })
            .collect();
        Ok(Self {
            specs,
            regex,
            keywords,
            keyword_owner,
        })
    }

    pub fn len(&self) -> usize {
        self.specs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The next match at or after `from` in `text`, as (classifier, start, end).
    pub(crate) fn next_match(&self, text: &str, from: usize) -> Option<(usize, usize, usize)> {
        if from > text.len() {
            return None;
        }
        let input = Input::new(text).span(Span {
            start: from,
            end: text.len(),
        });
        let m = self.regex.search(&input)?;
        Some((m.pattern().as_usize(), m.start(), m.end()))
    }

    /// Scores a match with its keywords, or drops it (too long, an ignore word, a failed
    /// validator).
    pub(crate) fn score(
        &self,
        text: &str,
        classifier: usize,
        start: usize,
        end: usize,
        label: Option<&str>,
        boost: f32,
    ) -> Option<Scored> {
        let spec = &self.specs[classifier];
        if end - start > MAX_MATCH_LEN {
            return None;
        }
        let matched = &text[start..end];
        if !spec.ignore_words.is_empty() {
            let lower = matched.to_lowercase();
            if spec.ignore_words.iter().any(|w| lower.contains(w.as_str())) {
                return None;
            }
        }
        if let Some(validator) = spec.validator
            && !validator.passes(matched)
        {
            return None;
        }
        let mut context = Vec::new();
        if let Some(keywords) = &self.keywords {
            let before = crate::types::window(text, start.saturating_sub(spec.distance), start);
            let label = label.map(crate::context::label_words).unwrap_or_default();
            for part in [before, label.as_str()] {
                let bytes = part.as_bytes();
                for m in keywords.find_iter(part) {
                    let (owner, word) = &self.keyword_owner[m.pattern().as_usize()];
                    let bounded = (m.start() == 0 || !bytes[m.start() - 1].is_ascii_alphanumeric())
                        && (m.end() == bytes.len() || !bytes[m.end()].is_ascii_alphanumeric());
                    let word: Cow<'static, str> = Cow::Owned(word.to_string());
                    if *owner == classifier && bounded && !context.contains(&word) {
                        context.push(word);
                    }
                }
            }
        }
        let confidence = if context.is_empty() {
            spec.confidence
        } else {
            (spec.confidence + boost).min(1.0)
        };
        Some(Scored {
            name: spec.name.clone(),
            category: spec.category,
            start,
            end,
            confidence,
            validator: spec.validator.map(Validator::as_str),
            context,
        })
    }
}

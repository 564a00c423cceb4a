//! The confidence model (docs/detection.md): each candidate's base confidence, raised by
//! context words in favour and lowered by words against, and the most confident candidate of a
//! numeric sequence kept.

use std::borrow::Cow;

use tokenize_core::PiiType;

use crate::context::{self, Context, Hits};
use crate::types::{Candidate, Evidence, Finding, FindingType, Kind, Location, window};

/// What a context word in favour adds, and what a word against takes away.
pub(crate) const CONTEXT_BOOST: f32 = 0.35;
const CONTEXT_PENALTY: f32 = 0.4;

/// Scores candidates with their context and keeps the most confident one.
pub(crate) fn best(
    keywords: &Context,
    text: &str,
    candidates: Vec<Candidate>,
    label: Option<Hits>,
) -> Option<Finding> {
    let start = candidates.iter().map(|c| c.start).min()?;
    let end = candidates.iter().map(|c| c.end).max()?;
    let mut from = start.saturating_sub(context::BEFORE);
    if label.is_some() {
        // Structured content. In a CSV row or a JSON line the header or key speaks for the value; earlier lines
        // (the header row itself, other records) are not its context.
        if let Some(newline) = memchr::memrchr(b'\n', &text.as_bytes()[from..start]) {
            from += newline + 1;
        }
    }
    let before = window(text, from, start);
    let after = window(text, end, (end + context::AFTER).min(text.len()));
    let mut hits = keywords.hits(before, after);
    if let Some(label) = label {
        hits.merge(label);
    }
    let against = hits.against();
    let (confidence, pii_type, winner) = candidates
        .iter()
        .map(|c| {
            let mut confidence = c.base;
            if hits.supports(c.kind) {
                confidence += CONTEXT_BOOST;
            }
            // Words against say a number is something else (an order, a version); an
            // email address is one whatever is near it.
            if against && c.kind != Kind::Email {
                confidence -= CONTEXT_PENALTY;
            }
            // A date next to birth words is a date of birth.
            let pii_type = if c.kind == Kind::Date && hits.supports(Kind::Dob) {
                confidence += CONTEXT_BOOST;
                PiiType::Dob
            } else {
                c.pii_type
            };
            (confidence.clamp(0.0, 1.0), pii_type, c)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(Finding {
        pii_type: FindingType::Pii(pii_type),
        category: pii_type.category(),
        start: winner.start,
        end: winner.end,
        confidence,
        location: Location::Line { line: 0, column: 0 },
        evidence: Evidence {
            pattern: Cow::Borrowed(winner.pattern),
            validator: winner.validator,
            context: hits.words.into_iter().map(Cow::Borrowed).collect(),
        },
        value: None,
        normalized: winner.normalized.clone(),
    })
}

//! The confidence model (docs/detection.md): each candidate's base confidence, raised by
//! context words in favour and lowered by words against, and the most confident candidate of a
//! numeric sequence kept.
//!
//! Evidence is weighed, not vetoed. A word against (order, account, invoice) lowers a value
//! only when it speaks for the value more than any word of the value's own type: it names the
//! value (`Order #`, the value's own field name), or the value's only evidence is its shape
//! (bare digits, a passport's letters and digits) and the word is nearer than any keyword. A
//! currency and an address's `@` are evidence no word outweighs.

use std::borrow::Cow;

use tokenize_core::PiiType;

use crate::context::{self, Context, Hint, Hit, Hits};
use crate::structure::{Close, Field};
use crate::types::{Candidate, Evidence, Finding, FindingType, Kind, Location, window};

/// What a context word in favour adds, and what a word against takes away.
pub(crate) const CONTEXT_BOOST: f32 = 0.35;
const CONTEXT_PENALTY: f32 = 0.4;

/// The structured field a value sits in: where it starts and ends, and what its names say
/// ([`Labels::named`](context::Labels::named)), which is its context instead of the text of
/// other fields.
pub(crate) struct Scope<'a> {
    pub field: Field,
    pub named: Option<&'a Hits>,
}

/// Shapes whose only evidence is the digits' count and the letters' places.
fn shape_only(c: &Candidate) -> bool {
    matches!(
        c.pattern,
        "ssn_bare" | "sin_bare" | "passport_us" | "passport_ca" | "phone_bare"
    )
}

/// Scores candidates with their context and keeps the most confident one. `text` is the
/// window and `base` its absolute offset.
pub(crate) fn best(
    keywords: &Context,
    text: &str,
    base: usize,
    candidates: Vec<Candidate>,
    scope: Option<Scope<'_>>,
) -> Option<Finding> {
    let start = candidates.iter().map(|c| c.start).min()?;
    let end = candidates.iter().map(|c| c.end).max()?;
    let mut from = start.saturating_sub(context::BEFORE);
    let mut to = (end + context::AFTER).min(text.len());
    if let Some(scope) = &scope {
        // Structured content: the value's own field is its text context, and its names speak
        // for it; a sibling field (a `note` beside an `ssn`) and other records do not.
        from = from.max(scope.field.start.saturating_sub(base).min(start));
        let rest = &text.as_bytes()[end..to];
        to = end
            + match scope.field.close {
                Close::Quote => memchr::memchr(b'"', rest).unwrap_or(rest.len()),
                Close::Cell(delimiter) => {
                    memchr::memchr2(delimiter, b'\n', rest).unwrap_or(rest.len())
                }
                Close::Token => 0,
                Close::Whole => rest.len(),
            };
    }
    let before = window(text, from, start);
    let after = window(text, end, to);
    let mut hits = keywords.hits(before, after);
    if let Some(scope) = &scope {
        let fills = before
            .trim_matches(|c: char| c.is_whitespace() || c == '"')
            .is_empty()
            && after.trim().is_empty();
        if let Some(named) = scope.named {
            hits.add_field(named, fills);
        }
    }
    // Between candidates of different types (a bare nine-digit number is an SSN, a SIN or a
    // passport), the keyword that speaks best for the value decides: `Passport no.` before it
    // beats an `SSN` on the line above.
    let best_keyword = candidates
        .iter()
        .filter_map(|c| keyword(&hits, c).map(|k| k.rank()))
        .min();
    let (confidence, pii_type, winner) = candidates
        .iter()
        .map(|c| {
            let (confidence, pii_type) = weigh(&hits, c, best_keyword);
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
            context: hits.words,
        },
        value: None,
        normalized: winner.normalized.clone(),
    })
}

/// The word that speaks best for a candidate's type (for a date, birth words too).
fn keyword(hits: &Hits, c: &Candidate) -> Option<Hit> {
    hits.nearest(|hint| {
        hint == Hint::For(c.kind) || (c.kind == Kind::Date && hint == Hint::For(Kind::Dob))
    })
}

/// One candidate's confidence and type given the words around it, and the rank of the best
/// keyword any candidate of the value has.
fn weigh(hits: &Hits, c: &Candidate, best_keyword: Option<(bool, usize)>) -> (f32, PiiType) {
    // A date speaks for itself; birth words make it a date of birth.
    let dob = c.kind == Kind::Date && hits.supports(Kind::Dob);
    let keyword = keyword(hits, c).filter(|k| Some(k.rank()) == best_keyword);
    let against = hits.nearest(|hint| hint == Hint::Against);
    let mut confidence = c.base;
    if keyword.is_some_and(|k| k.hint == Hint::For(c.kind)) {
        confidence += CONTEXT_BOOST;
    }
    if dob {
        confidence += CONTEXT_BOOST;
    }
    // The word that names the value, else the nearer one, speaks for it; a keyword farther
    // than a word against still counts, and the two weigh against each other.
    let keyword_wins = match (keyword, against) {
        (Some(k), Some(a)) => k.rank() <= a.rank(),
        _ => keyword.is_some(),
    };
    // A currency sign or code, an address's syntax and a calendar date are evidence no word
    // outweighs: an invoice's due date is a date.
    let intrinsic = matches!(c.kind, Kind::Email | Kind::Monetary | Kind::Date);
    if let Some(a) = against
        && !keyword_wins
        && !intrinsic
        && (a.naming || shape_only(c))
    {
        confidence -= CONTEXT_PENALTY;
    }
    (confidence, if dob { PiiType::Dob } else { c.pii_type })
}

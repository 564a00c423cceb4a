//! Tokens: deterministic (a keyed MAC), randomized, and format-preserving (FF1, or a random
//! surrogate of the same shape where the domain is too small for FF1).

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use crate::fpe::{self, FpeKey};
use crate::normalize::{
    DateLayout, Detail, Normalized, Ymd, days_in_month, luhn_check_digit, render_date,
    ssn_is_issuable,
};
use crate::pii::{Mode, PiiType};
use crate::shape::Shape;

/// The prefix of every deterministic token. Never change it: stored tokens carry it, and it
/// lets scanners recognize tokens in data.
pub const DETERMINISTIC_PREFIX: &str = "dtk_";
/// The prefix of every randomized token (same family as [`DETERMINISTIC_PREFIX`]).
pub const RANDOMIZED_PREFIX: &str = "rtk_";

/// Bytes of MAC or randomness in a token: 160 bits, 32 base32 characters.
pub(crate) const TOKEN_BYTES: usize = 20;

/// A tenant's MAC key, for deterministic tokens and for the vault's lookup fingerprints (each
/// under its own key).
pub struct MacKey(hmac::Key);

impl MacKey {
    /// An HMAC-SHA256 key from 32 bytes of secret key material; the service derives them per
    /// tenant and per use.
    pub fn new(key: &[u8; 32]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, key))
    }

    /// HMAC-SHA256 over `fields`, each preceded by its length, so that no two different field
    /// lists give the same input.
    pub fn mac(&self, fields: &[&[u8]]) -> [u8; 32] {
        let mut ctx = hmac::Context::with_key(&self.0);
        for field in fields {
            ctx.update(&(field.len() as u64).to_be_bytes());
            ctx.update(field);
        }
        let tag = ctx.sign();
        let mut out = [0u8; 32];
        out.copy_from_slice(tag.as_ref());
        out
    }
}

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(<redacted>)")
    }
}

/// The system random generator failed; nothing can be tokenized safely.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the system random generator failed")]
pub struct RandomError;

pub(crate) const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// `prefix`, then `bytes` in lowercase base32 without padding, in one allocation.
pub(crate) fn prefixed_base32(prefix: &str, bytes: &[u8]) -> String {
    let mut out = String::with_capacity(prefix.len() + bytes.len() * 8 / 5 + 1);
    out.push_str(prefix);
    let mut buffer = 0u32;
    let mut bits = 0;
    for b in bytes {
        buffer = (buffer << 8) | u32::from(*b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(BASE32[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(BASE32[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// Whether `token` has the form of a deterministic or randomized token.
pub fn looks_like_token(token: &str) -> bool {
    [DETERMINISTIC_PREFIX, RANDOMIZED_PREFIX].iter().any(|p| {
        token
            .strip_prefix(p)
            .is_some_and(|body| body.len() == 32 && body.bytes().all(|b| BASE32.contains(&b)))
    })
}

/// The deterministic token of a value: the same type, value and scope always give the same
/// token under the same key. `scope` is `global` or `policy:<policy_id>`: use
/// [`crate::Policy::scope_key`], as the vault does, to get the service's tokens.
pub fn deterministic_token(key: &MacKey, scope: &str, value: &Normalized) -> String {
    let currency = currency_field(value);
    let fields: [&[u8]; 5] = [
        b"dps-token-v1",
        value.pii_type.as_str().as_bytes(),
        scope.as_bytes(),
        value.value.expose().as_bytes(),
        currency.unwrap_or_default(),
    ];
    // Without a currency the fifth field is left out, not written empty: the tokens issued
    // before currencies existed stay the same.
    let mac = key.mac(&fields[..4 + usize::from(currency.is_some())]);
    prefixed_base32(DETERMINISTIC_PREFIX, &mac[..TOKEN_BYTES])
}

/// The vault's lookup fingerprint of a value, under the fingerprint key (never the token key):
/// what finds the existing entry of a deterministic or format-preserving value.
pub fn fingerprint(key: &MacKey, mode: Mode, scope: &str, value: &Normalized) -> [u8; 32] {
    let currency = currency_field(value);
    let fields: [&[u8]; 6] = [
        b"dps-fingerprint-v1",
        mode.as_str().as_bytes(),
        value.pii_type.as_str().as_bytes(),
        scope.as_bytes(),
        value.value.expose().as_bytes(),
        currency.unwrap_or_default(),
    ];
    key.mac(&fields[..5 + usize::from(currency.is_some())])
}

/// An amount's currency is part of the value: `€100.00` and `£100.00` are two values, with two
/// tokens and two entries. A value without a currency adds nothing, so its token is the one it
/// always had.
fn currency_field(value: &Normalized) -> Option<&[u8]> {
    value.currency.as_deref().map(str::as_bytes)
}

/// The lookup fingerprint of a format-preserving value. It covers the value as written,
/// because a format-preserving token keeps the written shape: `123-45-6789` and `123456789`
/// have different tokens, so they are different entries.
pub fn fingerprint_as_written(key: &MacKey, value: &Normalized) -> [u8; 32] {
    key.mac(&[
        b"dps-fingerprint-v1",
        Mode::FormatPreserving.as_str().as_bytes(),
        value.pii_type.as_str().as_bytes(),
        value.layout.expose().as_bytes(),
    ])
}

/// The lookup fingerprint of a surrogate whose written form does not settle its value: a phone
/// number reads differently by region (`0169772345` is British under `GB` and another number,
/// or none, elsewhere), so a fingerprint of the written form alone would let two numbers
/// share an entry. It covers the written form and the value read from it. The vault uses it
/// for phone surrogates and for any value whose enciphered token names another value.
pub fn fingerprint_as_read(key: &MacKey, value: &Normalized) -> [u8; 32] {
    key.mac(&[
        b"dps-fingerprint-v2",
        Mode::FormatPreserving.as_str().as_bytes(),
        value.pii_type.as_str().as_bytes(),
        value.layout.expose().as_bytes(),
        value.value.expose().as_bytes(),
    ])
}

fn random_bytes<const N: usize>(rng: &SystemRandom) -> Result<[u8; N], RandomError> {
    let mut bytes = [0u8; N];
    rng.fill(&mut bytes).map_err(|_| RandomError)?;
    Ok(bytes)
}

/// A fresh random token.
pub fn randomized_token(rng: &SystemRandom) -> Result<String, RandomError> {
    let bytes: [u8; TOKEN_BYTES] = random_bytes(rng)?;
    Ok(prefixed_base32(RANDOMIZED_PREFIX, &bytes))
}

/// A uniform number below `n` (n ≤ 2^16), by rejection.
fn random_below(rng: &SystemRandom, n: u32) -> Result<u32, RandomError> {
    let limit = (u32::from(u16::MAX) + 1) / n * n;
    loop {
        let v = u32::from(u16::from_be_bytes(random_bytes(rng)?));
        if v < limit {
            return Ok(v % n);
        }
    }
}

/// What format-preserving tokenization produced.
#[derive(Debug, Clone)]
pub enum FormatPreserving {
    /// The FF1 token: the same value, written the same way, always gives it.
    Enciphered(String),
    /// The domain is below FF1's floor: the caller draws surrogates until the vault finds one
    /// that is unique in the tenant.
    Surrogate(Surrogate),
    /// The value is written with letters or digits outside ASCII where the token would keep
    /// them as they are: no format-preserving token is made, since it would carry them.
    Unshapeable,
}

/// Draws random tokens of one value's shape.
#[derive(Debug, Clone)]
pub struct Surrogate {
    kind: SurrogateKind,
    /// The value as written, which a surrogate must never equal.
    original: crate::Secret,
}

#[derive(Debug, Clone)]
enum SurrogateKind {
    Slots { shape: Shape, pii_type: PiiType },
    Date { layout: DateLayout },
}

/// Dates drawn for surrogates lie in this range of years.
const SURROGATE_YEARS: (u16, u16) = (1900, 2099);

impl Surrogate {
    /// How many different surrogates this shape has (saturating).
    pub fn space(&self) -> u128 {
        match &self.kind {
            SurrogateKind::Slots { shape, .. } => shape.domain(),
            SurrogateKind::Date { .. } => 200 * 365,
        }
    }

    /// One random surrogate, never equal to the original value.
    pub fn draw(&self, rng: &SystemRandom) -> Result<String, RandomError> {
        loop {
            let candidate = match &self.kind {
                SurrogateKind::Date { layout } => {
                    let year = SURROGATE_YEARS.0
                        + random_below(rng, u32::from(SURROGATE_YEARS.1 - SURROGATE_YEARS.0) + 1)?
                            as u16;
                    let month = random_below(rng, 12)? as u8 + 1;
                    let day = random_below(rng, u32::from(days_in_month(year, month)))? as u8 + 1;
                    render_date(Ymd { year, month, day }, layout)
                }
                SurrogateKind::Slots { shape, pii_type } => {
                    let mut values = Vec::with_capacity(shape.slots().len());
                    for (_, slot) in shape.slots() {
                        values.push(random_below(rng, slot.radix())?);
                    }
                    if !acceptable(*pii_type, &values) {
                        continue;
                    }
                    let text = shape.render(&values);
                    if *pii_type == PiiType::CaSin {
                        with_sin_check_digit(&text)
                    } else {
                        text
                    }
                }
            };
            if candidate != self.original.expose() || self.space() <= 1 {
                return Ok(candidate);
            }
        }
    }
}

/// Whether slot values make a token the type's rules allow: an SSN token is itself an
/// issuable SSN (so systems that validate SSNs accept it). A SIN's check digit is not a slot;
/// it is computed after.
fn acceptable(pii_type: PiiType, values: &[u32]) -> bool {
    match pii_type {
        PiiType::UsSsn => {
            let digits: Vec<u8> = values.iter().map(|v| b'0' + *v as u8).collect();
            ssn_is_issuable(&digits)
        }
        _ => true,
    }
}

#[cfg(test)]
pub(crate) fn shape_of_for_tests(value: &Normalized) -> Shape {
    shape_of(value)
}

/// The shape a format-preserving token of `value` keeps.
fn shape_of(value: &Normalized) -> Shape {
    let layout = value.layout.expose();
    match (&value.detail, value.pii_type) {
        (Detail::Phone { variable_digits }, _) => {
            // Keep the leading digits (country code, trunk or international prefix).
            let total = layout.chars().filter(char::is_ascii_digit).count();
            let keep = total.saturating_sub(*variable_digits);
            let mut seen = 0;
            let digit_index: Vec<Option<usize>> = layout
                .chars()
                .map(|c| {
                    c.is_ascii_digit().then(|| {
                        seen += 1;
                        seen - 1
                    })
                })
                .collect();
            Shape::new(layout, |i, c| {
                !c.is_ascii_digit()
                    || digit_index
                        .get(i)
                        .copied()
                        .flatten()
                        .is_some_and(|d| d < keep)
            })
        }
        (_, PiiType::Email) => {
            let at = layout
                .find('@')
                .map_or(usize::MAX, |b| layout[..b].chars().count());
            Shape::new(layout, |i, _| i >= at)
        }
        (_, PiiType::CaSin) => {
            // The last digit is the check digit, computed from the others.
            let last = layout
                .char_indices()
                .filter(|(_, c)| c.is_ascii_digit())
                .count()
                - 1;
            let mut seen = 0;
            let flags: Vec<bool> = layout
                .chars()
                .map(|c| {
                    if c.is_ascii_digit() {
                        seen += 1;
                        seen - 1 == last
                    } else {
                        false
                    }
                })
                .collect();
            Shape::new(layout, |i, _| flags.get(i).copied().unwrap_or(true))
        }
        (_, PiiType::UsSsn | PiiType::PassportUs | PiiType::Monetary) => {
            Shape::new(layout, |_, c| !c.is_ascii_digit())
        }
        _ => Shape::new(layout, |_, _| false),
    }
}

/// Writes a SIN's check digit into its layout after the other digits changed.
fn with_sin_check_digit(text: &str) -> String {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_digit).collect();
    let Some((_, payload)) = digits.split_last() else {
        return text.to_owned();
    };
    let check = char::from(luhn_check_digit(payload));
    let last = text.rfind(|c: char| c.is_ascii_digit()).unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..last]);
    out.push(check);
    out.push_str(&text[last + 1..]);
    out
}

/// The format-preserving token of `value`: FF1 under `key` with the pii_type as the tweak, or
/// a surrogate when the shape's domain is below NIST's floor of a million values. Dates and
/// dates of birth always take surrogates: the valid dates of any written shape are fewer than
/// a million.
pub fn format_preserving(key: &FpeKey, value: &Normalized) -> FormatPreserving {
    if let Detail::Date { .. } = &value.detail {
        return FormatPreserving::Surrogate(surrogate_for(value));
    }
    let shape = shape_of(value);
    if shape.copies_foreign_characters() {
        return FormatPreserving::Unshapeable;
    }
    let pii_type = value.pii_type;
    let enciphered = fpe::encipher(key, pii_type.as_str().as_bytes(), &shape, |values| {
        acceptable(pii_type, values)
    });
    match enciphered {
        Some(values) => {
            let text = shape.render(&values);
            let text = if pii_type == PiiType::CaSin {
                with_sin_check_digit(&text)
            } else {
                text
            };
            // A permutation has fixed points: about one value in a domain's size is its own
            // token. A token must never be its value, so such a value takes a surrogate.
            if text == value.layout.expose() {
                return FormatPreserving::Surrogate(surrogate_for(value));
            }
            FormatPreserving::Enciphered(text)
        }
        None => FormatPreserving::Surrogate(Surrogate {
            kind: SurrogateKind::Slots { shape, pii_type },
            original: value.layout.clone(),
        }),
    }
}

/// Random surrogates of `value`'s shape. [`format_preserving`] gives them where FF1 cannot
/// serve the shape; a vault also needs them where the FF1 token of `value` already names
/// another value. That can happen for phone numbers only: which leading digits a phone token
/// keeps depends on how the number parses, so two numbers written with the same layout are
/// enciphered in different shapes when one keeps a prefix and the other does not (German
/// `0301234567` keeps its trunk `0` and enciphers nine digits, `3012345678` enciphers ten; a
/// US `2025550123` and a British `0169772345` likewise), and their tokens can coincide.
pub fn surrogate_for(value: &Normalized) -> Surrogate {
    let original = value.layout.clone();
    match &value.detail {
        Detail::Date { layout } => Surrogate {
            kind: SurrogateKind::Date {
                layout: layout.clone(),
            },
            original,
        },
        _ => Surrogate {
            kind: SurrogateKind::Slots {
                shape: shape_of(value),
                pii_type: value.pii_type,
            },
            original,
        },
    }
}

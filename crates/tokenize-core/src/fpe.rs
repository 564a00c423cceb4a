//! Format-preserving encryption: FF1 (NIST SP 800-38G) with AES-256, over the slots of a
//! [`Shape`].
//!
//! A shape mixes digits and letters, and FF1 works over one radix. So the slots are ranked as
//! one mixed-radix number in `[0, N)`, that number is enciphered with FF1 over its bits (radix
//! 2, `bits(N - 1)` numerals), and the result is walked through the cipher again until it is
//! below `N` and acceptable to the type (a valid SSN, for example). Cycle walking keeps the map
//! a permutation of the acceptable values, so two different values of the same shape never
//! share a token. Because `N / 2^bits > 1/2`, the expected number of FF1 calls is below two
//! when every value is acceptable.

use aes::Aes256;
use fpe::ff1::{FF1, FlexibleNumeralString};
use num_bigint::BigUint;
use num_integer::Integer as _;

use crate::shape::Shape;

/// NIST SP 800-38G's floor: a domain must hold at least a million values.
pub const FPE_MIN_DOMAIN: u128 = 1_000_000;

/// How many FF1 calls one value may take before giving up. Reaching it would take an
/// acceptable fraction far below anything a supported type has.
const MAX_WALK: usize = 1_000;

/// A tenant's format-preserving key. The AES key schedule is computed once.
pub struct FpeKey {
    binary: FF1<Aes256>,
}

impl std::fmt::Debug for FpeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FpeKey(<redacted>)")
    }
}

impl FpeKey {
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            // Radix 2 is within FF1's [2, 2^16]; `new` fails only outside it.
            binary: FF1::<Aes256>::new(key, 2).unwrap_or_else(|_| unreachable!("radix 2 is valid")),
        }
    }
}

fn rank(shape: &Shape, values: &[u32]) -> BigUint {
    shape
        .slots()
        .iter()
        .zip(values)
        .fold(BigUint::from(0u32), |acc, ((_, slot), v)| {
            acc * slot.radix() + *v
        })
}

fn unrank(shape: &Shape, mut x: BigUint) -> Vec<u32> {
    let mut values = vec![0u32; shape.slots().len()];
    for (i, (_, slot)) in shape.slots().iter().enumerate().rev() {
        let (q, r) = x.div_rem(&BigUint::from(slot.radix()));
        values[i] = r.to_u32_digits().first().copied().unwrap_or(0);
        x = q;
    }
    values
}

fn to_bits(x: &BigUint, bits: u64) -> Vec<u16> {
    (0..bits).rev().map(|i| u16::from(x.bit(i))).collect()
}

fn from_bits(bits: &[u16]) -> BigUint {
    let mut x = BigUint::from(0u32);
    for b in bits {
        x = (x << 1u32) + u32::from(*b);
    }
    x
}

/// Enciphers the slots of `shape` under `key` and `tweak`, keeping only results `accept`
/// likes. `None` when the domain is below the floor (the caller then makes a surrogate) or the
/// walk does not end.
pub(crate) fn encipher(
    key: &FpeKey,
    tweak: &[u8],
    shape: &Shape,
    accept: impl Fn(&[u32]) -> bool,
) -> Option<Vec<u32>> {
    let domain = shape
        .slots()
        .iter()
        .fold(BigUint::from(1u32), |n, (_, s)| n * s.radix());
    if domain < BigUint::from(FPE_MIN_DOMAIN) {
        return None;
    }
    let bits = (&domain - 1u32).bits().max(20);
    let mut x = rank(shape, &shape.values());
    for _ in 0..MAX_WALK {
        let numerals = FlexibleNumeralString::from(to_bits(&x, bits));
        let out = key.binary.encrypt(tweak, &numerals).ok()?;
        x = from_bits(&Vec::<u16>::from(out));
        if x < domain {
            let values = unrank(shape, x.clone());
            if accept(&values) {
                return Some(values);
            }
        }
    }
    None
}

/// The inverse of [`encipher`] for the same key, tweak, shape and `accept`: walks the
/// decryption the same way. Detokenization never uses it (it reads the vault); tests do, to
/// show the map is a permutation.
#[cfg(test)]
pub(crate) fn decipher(
    key: &FpeKey,
    tweak: &[u8],
    shape: &Shape,
    accept: impl Fn(&[u32]) -> bool,
) -> Option<Vec<u32>> {
    let domain = shape
        .slots()
        .iter()
        .fold(BigUint::from(1u32), |n, (_, s)| n * s.radix());
    let bits = (&domain - 1u32).bits().max(20);
    let mut x = rank(shape, &shape.values());
    for _ in 0..MAX_WALK {
        let numerals = FlexibleNumeralString::from(to_bits(&x, bits));
        let out = key.binary.decrypt(tweak, &numerals).ok()?;
        x = from_bits(&Vec::<u16>::from(out));
        if x < domain {
            let values = unrank(shape, x.clone());
            if accept(&values) {
                return Some(values);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use fpe::ff1::{FF1, FlexibleNumeralString};

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn numerals(s: &str, radix: u32) -> FlexibleNumeralString {
        FlexibleNumeralString::from(
            s.chars()
                .map(|c| c.to_digit(radix).unwrap() as u16)
                .collect::<Vec<_>>(),
        )
    }

    fn text(ns: FlexibleNumeralString, radix: u32) -> String {
        Vec::<u16>::from(ns)
            .into_iter()
            .map(|d| char::from_digit(u32::from(d), radix).unwrap())
            .collect()
    }

    /// NIST SP 800-38G sample vectors 7, 8 and 9 (FF1-AES256): the cipher this crate uses.
    #[test]
    fn ff1_aes256_matches_the_nist_samples() {
        let key = hex("2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94");
        let cases = [
            ("", 10, "0123456789", "6657667009"),
            ("39383736353433323130", 10, "0123456789", "1001623463"),
            (
                "3737373770717273373737",
                36,
                "0123456789abcdefghi",
                "xs8a0azh2avyalyzuwd",
            ),
        ];
        for (tweak, radix, plain, cipher) in cases {
            let ff1 = FF1::<Aes256>::new(&key, radix).unwrap();
            let out = ff1.encrypt(&hex(tweak), &numerals(plain, radix)).unwrap();
            assert_eq!(text(out, radix), cipher);
            let back = ff1.decrypt(&hex(tweak), &numerals(cipher, radix)).unwrap();
            assert_eq!(text(back, radix), plain);
        }
    }

    #[test]
    fn rank_and_unrank_are_inverse() {
        let shape = Shape::new("AB-123456", |_, _| false);
        let values = shape.values();
        assert_eq!(unrank(&shape, rank(&shape, &values)), values);
        assert_eq!(shape.domain(), 26 * 26 * 1_000_000);
    }
}

//! Format-preserving encryption: FF1 (NIST SP 800-38G) with AES-256, over the slots of a
//! [`Shape`].
//!
//! A shape mixes digits and letters, and FF1 works over one radix. So the slots are ranked as
//! one mixed-radix number in `[0, N)`, written as `n` numerals of a radix `r` chosen so that
//! `r^n` is just above `N` (`n = max(2, ceil(bits(N) / 16))`, `r = floor((N-1)^(1/n)) + 1`,
//! so `r <= 2^16` as FF1 requires), enciphered with FF1, and walked through the cipher again
//! until the result is below `N` and acceptable to the type (a valid SSN, for example). Cycle
//! walking keeps the map a permutation of the acceptable values, so two different values of
//! the same shape never share a token. `r^n / N` is close to 1, so a value takes about one FF1
//! call; few, wide numerals also keep FF1's big-number arithmetic per round small.

use aes::Aes256;
use fpe::ff1::{FF1, FlexibleNumeralString};
use num_bigint::BigUint;
use num_integer::Integer as _;

use crate::ff1::Ff1;
use crate::numerals::SmallNumerals;
use crate::shape::Shape;

/// NIST SP 800-38G's floor: a domain must hold at least a million values.
pub const FPE_MIN_DOMAIN: u128 = 1_000_000;

/// How many FF1 calls one value may take before giving up. Reaching it would take an
/// acceptable fraction far below anything a supported type has.
const MAX_WALK: usize = 1_000;

/// A tenant's format-preserving key, with its AES key schedule expanded once.
pub struct FpeKey {
    key: [u8; 32],
    ff1: Ff1,
}

impl std::fmt::Debug for FpeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FpeKey(<redacted>)")
    }
}

impl FpeKey {
    /// A key from 32 bytes of secret key material; the service derives them per tenant.
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            key: *key,
            ff1: Ff1::new(key),
        }
    }

    fn cipher(&self, radix: u32) -> Option<FF1<Aes256>> {
        FF1::<Aes256>::new(&self.key, radix).ok()
    }
}

impl Drop for FpeKey {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.key);
    }
}

/// The FF1 parameters for a domain of `domain` values: `n` numerals of radix `r`, `r^n >= N`.
fn numeral_layout(domain: &BigUint) -> (u32, usize) {
    let top = domain - 1u32;
    let n = top.bits().div_ceil(16).max(2);
    let root = top.nth_root(u32::try_from(n).unwrap_or(u32::MAX));
    // root < 2^16 because top < 2^(16n); so the radix is at most 2^16.
    let radix = root.to_u32_digits().first().copied().unwrap_or(0) + 1;
    (radix.max(2), usize::try_from(n).unwrap_or(usize::MAX))
}

/// [`numeral_layout`] for a domain that fits a `u128`, without big integers.
fn small_layout(domain: u128) -> (u32, usize) {
    let top = domain - 1;
    let bits = (128 - top.leading_zeros()) as usize;
    let n = bits.div_ceil(16).max(2);
    let exp = u32::try_from(n).unwrap_or(u32::MAX);
    // The float root is within one of the integer root; the loops make it exact.
    let mut root = (top as f64).powf(1.0 / n as f64) as u128;
    while root
        .checked_add(1)
        .and_then(|r| r.checked_pow(exp))
        .is_some_and(|p| p <= top)
    {
        root += 1;
    }
    while root > 0 && root.checked_pow(exp).is_none_or(|p| p > top) {
        root -= 1;
    }
    // root < 2^16 because top < 2^(16n); so the radix is at most 2^16.
    let radix = u32::try_from(root + 1).unwrap_or(u32::MAX);
    (radix.max(2), n)
}

/// The integer arithmetic ranking needs: `u128` for every domain that fits (nearly all), big
/// integers for the rest.
trait Number: Clone + PartialOrd {
    fn zero() -> Self;
    /// `self * radix + digit`.
    fn mul_add(self, radix: u32, digit: u32) -> Self;
    /// `(self / radix, self % radix)`.
    fn div_rem_small(self, radix: u32) -> (Self, u32);
}

impl Number for u128 {
    fn zero() -> Self {
        0
    }
    fn mul_add(self, radix: u32, digit: u32) -> Self {
        self * u128::from(radix) + u128::from(digit)
    }
    fn div_rem_small(self, radix: u32) -> (Self, u32) {
        // The remainder is below the radix, which is a u32.
        (self / u128::from(radix), (self % u128::from(radix)) as u32)
    }
}

impl Number for BigUint {
    fn zero() -> Self {
        BigUint::from(0u32)
    }
    fn mul_add(self, radix: u32, digit: u32) -> Self {
        self * radix + digit
    }
    fn div_rem_small(self, radix: u32) -> (Self, u32) {
        let (q, r) = self.div_rem(&BigUint::from(radix));
        (q, r.to_u32_digits().first().copied().unwrap_or(0))
    }
}

fn to_numerals<N: Number>(x: &N, radix: u32, n: usize) -> Vec<u16> {
    let mut x = x.clone();
    let mut numerals = vec![0u16; n];
    for slot in numerals.iter_mut().rev() {
        let (q, r) = x.div_rem_small(radix);
        // r < radix <= 2^16.
        *slot = r as u16;
        x = q;
    }
    numerals
}

fn from_numerals<N: Number>(numerals: &[u16], radix: u32) -> N {
    numerals
        .iter()
        .fold(N::zero(), |acc, d| acc.mul_add(radix, u32::from(*d)))
}

fn rank<N: Number>(shape: &Shape, values: &[u32]) -> N {
    shape
        .slots()
        .iter()
        .zip(values)
        .fold(N::zero(), |acc, ((_, slot), v)| {
            acc.mul_add(slot.radix(), *v)
        })
}

fn unrank<N: Number>(shape: &Shape, mut x: N) -> Vec<u32> {
    let mut values = vec![0u32; shape.slots().len()];
    for (i, (_, slot)) in shape.slots().iter().enumerate().rev() {
        let (q, r) = x.div_rem_small(slot.radix());
        values[i] = r;
        x = q;
    }
    values
}

#[derive(Clone, Copy)]
enum Direction {
    Encrypt,
    #[cfg(test)]
    Decrypt,
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
    walk(key, tweak, shape, accept, Direction::Encrypt)
}

/// The inverse of [`encipher`] for the same key, tweak, shape and `accept`. Detokenization
/// never uses it (it reads the vault); tests do, to show the map is a permutation.
#[cfg(test)]
pub(crate) fn decipher(
    key: &FpeKey,
    tweak: &[u8],
    shape: &Shape,
    accept: impl Fn(&[u32]) -> bool,
) -> Option<Vec<u32>> {
    walk(key, tweak, shape, accept, Direction::Decrypt)
}

fn walk(
    key: &FpeKey,
    tweak: &[u8],
    shape: &Shape,
    accept: impl Fn(&[u32]) -> bool,
    direction: Direction,
) -> Option<Vec<u32>> {
    // r^n < 2 * N, so a domain below 2^126 keeps every value inside a u128: that path needs
    // no big integer at all.
    let small = shape
        .slots()
        .iter()
        .try_fold(1u128, |n, (_, s)| n.checked_mul(u128::from(s.radix())))
        .filter(|n| *n < 1 << 126);
    if let Some(domain) = small {
        if domain < FPE_MIN_DOMAIN {
            return None;
        }
        let (radix, n) = small_layout(domain);
        if Ff1::fits(radix, n) {
            return walk_fast(key, tweak, shape, &accept, direction, domain, radix, n);
        }
    }
    let domain = shape
        .slots()
        .iter()
        .fold(BigUint::from(1u32), |n, (_, s)| n * s.radix());
    if domain < BigUint::from(FPE_MIN_DOMAIN) {
        return None;
    }
    let (radix, n) = numeral_layout(&domain);
    walk_in(key, tweak, shape, &accept, direction, domain, radix, n)
}

/// The walk of nearly every value: FF1 on integers ([`Ff1`]), with no numeral vectors.
#[expect(clippy::too_many_arguments, reason = "one private step of `walk`")]
fn walk_fast(
    key: &FpeKey,
    tweak: &[u8],
    shape: &Shape,
    accept: &impl Fn(&[u32]) -> bool,
    direction: Direction,
    domain: u128,
    radix: u32,
    n: usize,
) -> Option<Vec<u32>> {
    let call = key.ff1.call(radix, n, tweak);
    let mut x: u128 = rank(shape, &shape.values());
    for _ in 0..MAX_WALK {
        x = match direction {
            Direction::Encrypt => call.encrypt(x),
            #[cfg(test)]
            Direction::Decrypt => call.decrypt(x),
        };
        if x < domain {
            let values = unrank(shape, x);
            if accept(&values) {
                return Some(values);
            }
        }
    }
    None
}

/// The walk of domains too wide for [`Ff1`]: `fpe`'s FF1 on numeral strings.
#[expect(clippy::too_many_arguments, reason = "one private step of `walk`")]
fn walk_in(
    key: &FpeKey,
    tweak: &[u8],
    shape: &Shape,
    accept: &impl Fn(&[u32]) -> bool,
    direction: Direction,
    domain: BigUint,
    radix: u32,
    n: usize,
) -> Option<Vec<u32>> {
    let cipher = key.cipher(radix)?;
    let small = crate::ff1::half_bytes(radix, n) <= crate::ff1::MAX_HALF_BYTES;
    let mut x: BigUint = rank(shape, &shape.values());
    for _ in 0..MAX_WALK {
        let input = to_numerals(&x, radix, n);
        let out: Vec<u16> = if small {
            let numerals = SmallNumerals(input);
            match direction {
                Direction::Encrypt => cipher.encrypt(tweak, &numerals).ok()?.0,
                #[cfg(test)]
                Direction::Decrypt => cipher.decrypt(tweak, &numerals).ok()?.0,
            }
        } else {
            let numerals = FlexibleNumeralString::from(input);
            match direction {
                Direction::Encrypt => cipher.encrypt(tweak, &numerals).ok()?.into(),
                #[cfg(test)]
                Direction::Decrypt => cipher.decrypt(tweak, &numerals).ok()?.into(),
            }
        };
        x = from_numerals(&out, radix);
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

    /// The u128 numeral string computes exactly what fpe's big-integer one does.
    #[test]
    fn small_numerals_match_the_flexible_ones() {
        let key = [42u8; 32];
        for (radix, n) in [
            (1000u32, 2usize),
            (31_623, 2),
            (2155, 3),
            (65_536, 4),
            (10, 9),
            (26, 6),
            (65_536, 12),
        ] {
            let ff1 = FF1::<Aes256>::new(&key, radix).unwrap();
            assert!(crate::ff1::half_bytes(radix, n) <= crate::ff1::MAX_HALF_BYTES);
            for seed in 0..50u32 {
                let input: Vec<u16> = (0..n)
                    .map(|i| {
                        ((seed
                            .wrapping_mul(2_654_435_761)
                            .wrapping_add(i as u32 * 40_503))
                            % radix) as u16
                    })
                    .collect();
                let small = ff1
                    .encrypt(b"tweak", &SmallNumerals(input.clone()))
                    .unwrap()
                    .0;
                let flexible: Vec<u16> = ff1
                    .encrypt(b"tweak", &FlexibleNumeralString::from(input.clone()))
                    .unwrap()
                    .into();
                assert_eq!(small, flexible, "radix {radix}, n {n}");
                let back = ff1.decrypt(b"tweak", &SmallNumerals(small)).unwrap().0;
                assert_eq!(back, input);
            }
        }
    }

    #[test]
    fn numeral_layouts_cover_the_domain_tightly() {
        for domain in [
            1_000_000u128,
            676_000_000,
            1_000_000_000,
            10_000_000_000,
            26u128.pow(20),
        ] {
            let big = BigUint::from(domain);
            let (radix, n) = numeral_layout(&big);
            assert!((2..=65_536).contains(&radix) && n >= 2, "{domain}");
            let covered = BigUint::from(radix).pow(n as u32);
            assert!(covered >= big, "{domain}");
            // Less than twice the domain, so a walk takes few steps.
            assert!(covered < big * 2u32, "{domain}: {radix}^{n}");
        }
    }

    #[test]
    fn the_small_layout_is_the_big_one() {
        let mut domain = 1_000_000u128;
        while domain < 1 << 126 {
            for d in [domain, domain + 1, domain * 3 / 2, domain * 2 - 1] {
                assert_eq!(small_layout(d), numeral_layout(&BigUint::from(d)), "{d}");
            }
            domain = domain * 7 / 3;
        }
        for (radix, n) in [(31_623u128, 2u32), (1000, 3), (65_536, 7)] {
            let exact = radix.pow(n);
            for d in [exact - 1, exact, exact + 1] {
                assert_eq!(small_layout(d), numeral_layout(&BigUint::from(d)), "{d}");
            }
        }
    }

    #[test]
    fn rank_and_unrank_are_inverse() {
        let shape = Shape::new("AB-123456", |_, _| false);
        let values = shape.values();
        assert_eq!(unrank(&shape, rank::<BigUint>(&shape, &values)), values);
        assert_eq!(unrank(&shape, rank::<u128>(&shape, &values)), values);
        assert_eq!(shape.domain(), 26 * 26 * 1_000_000);
    }
}

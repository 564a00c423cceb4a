//! A numeral string for `fpe`'s FF1 whose halves fit in 96 bits, computed with `u128`
//! arithmetic instead of the big integers of `fpe`'s `FlexibleNumeralString`. Domains below
//! 2^126 (every shape of a supported PII type) go through [`crate::ff1`] instead; this serves
//! wider domains whose halves still fit, and `FlexibleNumeralString` the rest.

use fpe::ff1::{NumeralString, Operations};

#[derive(Debug, Clone)]
pub struct SmallNumerals(pub Vec<u16>);

fn value(numerals: &[u16], radix: u32) -> u128 {
    numerals
        .iter()
        .fold(0u128, |acc, n| acc * u128::from(radix) + u128::from(*n))
}

fn numerals(mut x: u128, radix: u32, m: usize) -> Vec<u16> {
    let mut out = vec![0u16; m];
    for slot in out.iter_mut().rev() {
        // The remainder is below the radix, at most 2^16.
        *slot = (x % u128::from(radix)) as u16;
        x /= u128::from(radix);
    }
    out
}

fn modulus(radix: u32, m: usize) -> u128 {
    (0..m).fold(1u128, |acc, _| acc * u128::from(radix))
}

fn bytes_value(bytes: impl Iterator<Item = u8>) -> u128 {
    bytes.fold(0u128, |acc, b| (acc << 8) | u128::from(b))
}

/// A big-endian byte string of at most 16 bytes.
#[derive(Debug, Clone, Copy)]
pub struct ShortBytes {
    buf: [u8; 16],
    len: usize,
}

impl AsRef<[u8]> for ShortBytes {
    fn as_ref(&self) -> &[u8] {
        &self.buf[16 - self.len..]
    }
}

impl Operations for SmallNumerals {
    type Bytes = ShortBytes;

    fn numeral_count(&self) -> usize {
        self.0.len()
    }

    fn to_be_bytes(&self, radix: u32, b: usize) -> ShortBytes {
        ShortBytes {
            buf: value(&self.0, radix).to_be_bytes(),
            len: b.min(16),
        }
    }

    fn add_mod_exp(self, other: impl Iterator<Item = u8>, radix: u32, m: usize) -> Self {
        let modulus = modulus(radix, m);
        let y = bytes_value(other) % modulus;
        let a = value(&self.0, radix) % modulus;
        // a, y < 2^96, so the sum cannot overflow.
        SmallNumerals(numerals((a + y) % modulus, radix, m))
    }

    fn sub_mod_exp(self, other: impl Iterator<Item = u8>, radix: u32, m: usize) -> Self {
        let modulus = modulus(radix, m);
        let y = bytes_value(other) % modulus;
        let a = value(&self.0, radix) % modulus;
        SmallNumerals(numerals((a + modulus - y) % modulus, radix, m))
    }
}

impl NumeralString for SmallNumerals {
    type Ops = Self;

    fn is_valid(&self, radix: u32) -> bool {
        self.0.iter().all(|n| u32::from(*n) < radix)
    }

    fn numeral_count(&self) -> usize {
        self.0.len()
    }

    fn split(&self) -> (Self, Self) {
        let mut front = self.0.clone();
        let back = front.split_off(self.0.len() / 2);
        (SmallNumerals(front), SmallNumerals(back))
    }

    fn concat(mut a: Self, mut b: Self) -> Self {
        a.0.append(&mut b.0);
        a
    }
}

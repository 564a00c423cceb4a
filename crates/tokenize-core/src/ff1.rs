//! FF1 (NIST SP 800-38G, Algorithms 7 and 8) with AES-256, for numeral strings short enough
//! that both halves and every round's output fit in a `u128`: every shape of a supported PII
//! type. Longer strings go through the `fpe` crate (see [`crate::fpe`]).
//!
//! The halves are carried as integers, never as numeral vectors: with `X = A·r^v + B`, a
//! round's `NUM(A)`, `STR(c)` and the final concatenation are plain arithmetic. The AES key
//! schedule is expanded once per key, and the CBC-MAC of `P` and of the tweak's whole blocks
//! once per call, so each of the ten rounds costs one AES block. Tests check the result
//! against NIST's FF1-AES256 samples and against `fpe` for every layout the crate uses.

use aes::Aes256Enc;
use aes::cipher::{BlockEncrypt as _, KeyInit as _};

/// The largest half, in bytes (`b`), this module computes: `d = 4·ceil(b/4) + 4` then stays
/// within one AES block, and `r^v < 2^96`.
pub(crate) const MAX_HALF_BYTES: usize = 12;

/// FF1's `b` for the longer half of `n` numerals of `radix`: `ceil(v·log2(radix) / 8)`,
/// computed as `fpe` does (exactly for powers of two), so that both give the same tokens.
pub(crate) fn half_bytes(radix: u32, n: usize) -> usize {
    let v = n - n / 2;
    if radix.is_power_of_two() {
        (v * radix.trailing_zeros() as usize).div_ceil(8)
    } else {
        (v as f64 * f64::from(radix).log2() / 8.0).ceil() as usize
    }
}

/// An FF1-AES256 key with its schedule expanded. The schedule is zeroized when dropped.
pub(crate) struct Ff1 {
    aes: Aes256Enc,
}

/// FF1 under one key for one radix, length and tweak: the layout, and the CBC-MAC state
/// after `P || T || pad` up to the last whole block, with the bytes that share the round
/// block. A cycle walk makes it once and enciphers with it as often as it needs.
pub(crate) struct Call<'k> {
    ff1: &'k Ff1,
    b: usize,
    d: usize,
    pow_u: u128,
    pow_v: u128,
    state: [u8; 16],
    tail: [u8; 16],
    tail_len: usize,
}

impl Ff1 {
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        Self {
            aes: Aes256Enc::new(key.into()),
        }
    }

    fn encrypt_block(&self, block: &mut [u8; 16]) {
        self.aes.encrypt_block(block.into());
    }

    /// Whether `n` numerals of `radix` are in this module's range.
    pub(crate) fn fits(radix: u32, n: usize) -> bool {
        (2..=65_536).contains(&radix)
            && n >= 2
            && half_bytes(radix, n) <= MAX_HALF_BYTES
            && u128::from(radix)
                .checked_pow(u32::try_from(n).unwrap_or(u32::MAX))
                .is_some()
    }

    pub(crate) fn call(&self, radix: u32, n: usize, tweak: &[u8]) -> Call<'_> {
        let u = n / 2;
        let v = n - u;
        let b = half_bytes(radix, n);
        let d = 4 * b.div_ceil(4) + 4;
        let pow = |k: usize| (0..k).fold(1u128, |acc, _| acc * u128::from(radix));
        // 5. P = [1]^1 || [2]^1 || [1]^1 || [radix]^3 || [10]^1 || [u mod 256]^1 || [n]^4 || [t]^4.
        let mut state = [1, 2, 1, 0, 0, 0, 10, u as u8, 0, 0, 0, 0, 0, 0, 0, 0];
        state[3..6].copy_from_slice(&radix.to_be_bytes()[1..]);
        state[8..12].copy_from_slice(&(n as u32).to_be_bytes());
        state[12..16].copy_from_slice(&(tweak.len() as u32).to_be_bytes());
        self.encrypt_block(&mut state);
        // Q = T || [0]^((-t-b-1) mod 16) || [i]^1 || [NUM(B)]^b: T and the padding are the
        // same in every round, so their whole blocks are chained in once.
        let pad = (16 - (tweak.len() + b + 1) % 16) % 16;
        let prefix_len = tweak.len() + pad;
        let whole = prefix_len / 16 * 16;
        let prefix = |k: usize| tweak.get(k).copied().unwrap_or(0);
        for chunk in (0..whole).step_by(16) {
            for (k, byte) in state.iter_mut().enumerate() {
                *byte ^= prefix(chunk + k);
            }
            self.encrypt_block(&mut state);
        }
        let mut tail = [0u8; 16];
        let tail_len = prefix_len - whole;
        for (k, byte) in tail.iter_mut().enumerate().take(tail_len) {
            *byte = prefix(whole + k);
        }
        Call {
            ff1: self,
            b,
            d,
            pow_u: pow(u),
            pow_v: pow(v),
            state,
            tail,
            tail_len,
        }
    }
}

impl Call<'_> {
    /// `NUM(S)` for round `i` whose hashed half is `half`: the first `d` bytes of
    /// `PRF(P || Q)`.
    fn round(&self, i: u8, half: u128) -> u128 {
        let mut block = self.tail;
        block[self.tail_len] = i;
        // half < r^v < 2^(8b), so its low b bytes are all of it.
        block[16 - self.b..].copy_from_slice(&half.to_be_bytes()[16 - self.b..]);
        for (byte, chained) in block.iter_mut().zip(self.state) {
            *byte ^= chained;
        }
        self.ff1.encrypt_block(&mut block);
        u128::from_be_bytes(block) >> (8 * (16 - self.d))
    }

    /// Enciphers `x`, the value of the call's numerals (`x < radix^n`).
    pub(crate) fn encrypt(&self, x: u128) -> u128 {
        let (mut a, mut b) = (x / self.pow_v, x % self.pow_v);
        for i in 0..10u8 {
            let modulus = if i % 2 == 0 { self.pow_u } else { self.pow_v };
            let y = self.round(i, b) % modulus;
            // a < modulus and y < modulus, both below 2^96: no overflow.
            let c = (a + y) % modulus;
            a = b;
            b = c;
        }
        a * self.pow_v + b
    }

    /// Deciphers what [`Call::encrypt`] gave. Tokens are never deciphered (the vault keeps
    /// the values); tests use it to show the map is a permutation.
    #[cfg(test)]
    pub(crate) fn decrypt(&self, x: u128) -> u128 {
        let (mut a, mut b) = (x / self.pow_v, x % self.pow_v);
        for i in (0..10u8).rev() {
            let modulus = if i % 2 == 0 { self.pow_u } else { self.pow_v };
            let y = self.round(i, a) % modulus;
            let c = (b % modulus + modulus - y) % modulus;
            b = a;
            a = c;
        }
        a * self.pow_v + b
    }
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

    fn value(text: &str, radix: u32) -> u128 {
        text.chars().fold(0u128, |acc, c| {
            acc * u128::from(radix) + u128::from(c.to_digit(radix).unwrap())
        })
    }

    fn text(mut x: u128, radix: u32, n: usize) -> String {
        let mut out = vec!['0'; n];
        for slot in out.iter_mut().rev() {
            *slot = char::from_digit((x % u128::from(radix)) as u32, radix).unwrap();
            x /= u128::from(radix);
        }
        out.into_iter().collect()
    }

    /// NIST SP 800-38G FF1-AES256 samples 7, 8 and 9.
    #[test]
    fn matches_the_nist_samples() {
        let key: [u8; 32] = hex("2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94")
            .try_into()
            .unwrap();
        let ff1 = Ff1::new(&key);
        for (tweak, radix, plain, cipher) in [
            ("", 10, "0123456789", "6657667009"),
            ("39383736353433323130", 10, "0123456789", "1001623463"),
            (
                "3737373770717273373737",
                36,
                "0123456789abcdefghi",
                "xs8a0azh2avyalyzuwd",
            ),
        ] {
            let n = plain.len();
            assert!(Ff1::fits(radix, n));
            let call = ff1.call(radix, n, &hex(tweak));
            let out = call.encrypt(value(plain, radix));
            assert_eq!(text(out, radix, n), cipher);
            let back = call.decrypt(out);
            assert_eq!(text(back, radix, n), plain);
        }
    }

    /// The same output as `fpe` for the layouts PII shapes take and for tweaks of every length
    /// around a block boundary.
    #[test]
    fn matches_fpe_on_every_layout_and_tweak_length() {
        let key = [42u8; 32];
        let ff1 = Ff1::new(&key);
        for (radix, n) in [
            (1000u32, 2usize),
            (31_623, 2),
            (2155, 3),
            (65_536, 4),
            (10, 9),
            (10, 19),
            (26, 6),
            (36, 19),
            (65_536, 7),
            (2, 20),
            (256, 10),
        ] {
            assert!(Ff1::fits(radix, n), "{radix}^{n}");
            let reference = FF1::<aes::Aes256>::new(&key, radix).unwrap();
            for seed in 0..40u32 {
                let tweak: Vec<u8> = (0..(seed as usize % 37)).map(|k| k as u8 ^ 0x5A).collect();
                let input: Vec<u16> = (0..n)
                    .map(|i| {
                        ((seed
                            .wrapping_mul(2_654_435_761)
                            .wrapping_add(i as u32 * 40_503))
                            % radix) as u16
                    })
                    .collect();
                let x = input
                    .iter()
                    .fold(0u128, |acc, d| acc * u128::from(radix) + u128::from(*d));
                let expected: Vec<u16> = reference
                    .encrypt(&tweak, &FlexibleNumeralString::from(input.clone()))
                    .unwrap()
                    .into();
                let expected = expected
                    .iter()
                    .fold(0u128, |acc, d| acc * u128::from(radix) + u128::from(*d));
                let call = ff1.call(radix, n, &tweak);
                let out = call.encrypt(x);
                assert_eq!(out, expected, "radix {radix}, n {n}, tweak {}", tweak.len());
                assert_eq!(call.decrypt(out), x);
            }
        }
    }

    #[test]
    fn fits_refuses_what_a_u128_cannot_carry() {
        assert!(Ff1::fits(31_623, 2));
        assert!(!Ff1::fits(65_536, 26), "b = 26 bytes");
        assert!(!Ff1::fits(1, 8));
        assert!(!Ff1::fits(10, 1));
    }
}

//! Randomized tokens derived from vault token ids.
//!
//! A randomized token must say nothing about its value and must not be guessable, and the
//! vault must find its entry. Drawing it at random meets the first two but needs an index on
//! the token, random-keyed, which is the costliest thing a vault insert maintains. Enciphering
//! the entry's own id instead meets all three with no index: the token is
//! `rtk_` + base32(`C || tag`), where `C = AES-256(key, token_id)` and `tag` is the first 4
//! bytes of `AES-256(key, C ⊕ TAG_MASK)`. Without the key a token is 160 bits no one can
//! predict; with it the vault reads the id back and checks the tag, so a token it never issued
//! (or one drawn at random before tokens were derived) is told apart without a query.

use aes::cipher::{BlockDecrypt as _, BlockEncrypt as _, KeyInit as _};
use aes::{Aes256Dec, Aes256Enc};

use crate::token::{BASE32, RANDOMIZED_PREFIX, TOKEN_BYTES, prefixed_base32};

/// XORed into the enciphered id before the tag is taken, so the tag is not `C` enciphered again.
const TAG_MASK: [u8; 16] = *b"dps-rtk-tag-v1\0\0";

/// A tenant's key for randomized tokens. Its schedules are zeroized when dropped.
pub struct TokenIdCipher {
    enc: Aes256Enc,
    dec: Aes256Dec,
}

impl std::fmt::Debug for TokenIdCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenIdCipher(<redacted>)")
    }
}

impl TokenIdCipher {
    /// An AES-256 cipher from 32 bytes of secret key material; the service derives them per
    /// tenant.
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            enc: Aes256Enc::new(key.into()),
            dec: Aes256Dec::new(key.into()),
        }
    }

    fn tag(&self, enciphered: &[u8; 16]) -> [u8; 4] {
        let mut block = *enciphered;
        for (b, m) in block.iter_mut().zip(TAG_MASK) {
            *b ^= m;
        }
        self.enc.encrypt_block((&mut block).into());
        [block[0], block[1], block[2], block[3]]
    }

    /// The randomized token of the vault entry `token_id`.
    pub fn token(&self, token_id: &[u8; 16]) -> String {
        let mut enciphered = *token_id;
        self.enc.encrypt_block((&mut enciphered).into());
        let mut body = [0u8; TOKEN_BYTES];
        body[..16].copy_from_slice(&enciphered);
        body[16..].copy_from_slice(&self.tag(&enciphered));
        prefixed_base32(RANDOMIZED_PREFIX, &body)
    }

    /// The token id `token` was derived from, when this key derived it.
    pub fn token_id(&self, token: &str) -> Option<[u8; 16]> {
        let body = unbase32(token.strip_prefix(RANDOMIZED_PREFIX)?)?;
        let enciphered: [u8; 16] = body[..16].try_into().ok()?;
        if body[16..] != self.tag(&enciphered) {
            return None;
        }
        let mut id = enciphered;
        self.dec.decrypt_block((&mut id).into());
        Some(id)
    }
}

/// The 20 bytes of a 32-character token body.
fn unbase32(text: &str) -> Option<[u8; TOKEN_BYTES]> {
    if text.len() != 32 {
        return None;
    }
    let mut out = [0u8; TOKEN_BYTES];
    let (mut buffer, mut bits, mut at) = (0u64, 0, 0);
    for c in text.bytes() {
        let v = BASE32.iter().position(|b| *b == c)? as u64;
        buffer = (buffer << 5) | v;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out[at] = (buffer >> bits) as u8;
            at += 1;
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_gives_back_its_id_and_only_under_its_key() {
        let cipher = TokenIdCipher::new(&[7u8; 32]);
        let other = TokenIdCipher::new(&[8u8; 32]);
        for n in 0..200u128 {
            let id = n
                .wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
                .to_be_bytes();
            let token = cipher.token(&id);
            assert!(crate::looks_like_token(&token), "{token}");
            assert_eq!(cipher.token_id(&token), Some(id));
            assert_eq!(other.token_id(&token), None, "another tenant's key");
        }
    }

    #[test]
    fn consecutive_ids_give_unrelated_tokens() {
        let cipher = TokenIdCipher::new(&[7u8; 32]);
        let a = cipher.token(&1u128.to_be_bytes());
        let b = cipher.token(&2u128.to_be_bytes());
        let shared = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        assert_eq!(shared, RANDOMIZED_PREFIX.len(), "{a} {b}");
    }

    #[test]
    fn anything_else_is_not_a_derived_token() {
        let cipher = TokenIdCipher::new(&[7u8; 32]);
        let token = cipher.token(&[1u8; 16]);
        let mut changed = token.clone().into_bytes();
        let last = changed.len() - 1;
        changed[last] = if changed[last] == b'a' { b'b' } else { b'a' };
        for text in [
            String::from_utf8(changed).unwrap(),
            token.replacen("rtk_", "dtk_", 1),
            token[..token.len() - 1].to_owned(),
            format!("{token}a"),
            "rtk_".to_owned() + &"A".repeat(32),
            String::new(),
        ] {
            assert_eq!(cipher.token_id(&text), None, "{text}");
        }
    }
}

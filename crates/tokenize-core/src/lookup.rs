//! The vault's lookup key of a deterministic or format-preserving token (and of a surrogate):
//! the first 16 bytes of SHA-256 over the tenant, the type and the token, each written as
//! `<byte length>:<text>` after `dps-lookup-v1|`. The migration that added the column computes
//! the same formula in SQL for the rows it found; a test holds the two together.
//!
//! It is not keyed: the token is stored beside it in the clear, so a digest of it tells no
//! one anything more. It includes the tenant, so one index serves every tenant without a
//! tenant column, and two tenants never share a key.

use uuid::Uuid;

/// The lookup key of `token`, of type `pii_type`, in `tenant`'s vault.
pub fn lookup(tenant: &str, pii_type: &str, token: &str) -> Uuid {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"dps-lookup-v1|");
    for field in [tenant, pii_type, token] {
        ctx.update(decimal(field.len(), &mut [0; 21]));
        ctx.update(field.as_bytes());
    }
    let digest = ctx.finish();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    Uuid::from_bytes(bytes)
}

/// `n` in decimal, then `:`, written at the end of `buf`: the length prefix of a field, with no
/// allocation (a batch computes thousands of lookup keys).
fn decimal(mut n: usize, buf: &mut [u8; 21]) -> &[u8] {
    let mut at = buf.len() - 1;
    buf[at] = b':';
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_prefixes_are_decimal_then_a_colon() {
        for n in [0, 7, 9, 10, 32, 99, 100, 4096, usize::MAX] {
            assert_eq!(decimal(n, &mut [0; 21]), format!("{n}:").as_bytes());
        }
    }
}

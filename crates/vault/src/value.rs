//! How a value is framed and bound before it is sealed into a vault entry.

use ids::TenantId;
use tokenize_core::Secret;
use uuid::Uuid;

use crate::VaultError;

/// The associated data of a vault value: the tenant and the token id, so that a ciphertext
/// moved to another row or tenant does not open.
pub(crate) fn value_aad(tenant: &TenantId, token_id: Uuid) -> Vec<u8> {
    let mut aad = b"dps-vault-v1\0".to_vec();
    aad.extend_from_slice(tenant.as_str().as_bytes());
    aad.push(0);
    aad.extend_from_slice(token_id.as_bytes());
    aad
}

/// [`value_aad`] for one token id after another, in one buffer: a batch seals hundreds of
/// values under the same tenant.
pub(crate) struct ValueAad(Vec<u8>);

impl ValueAad {
    pub(crate) fn new(tenant: &TenantId) -> Self {
        Self(value_aad(tenant, Uuid::nil()))
    }

    /// The associated data of `token_id`'s value, as [`value_aad`] makes it.
    pub(crate) fn of(&mut self, token_id: Uuid) -> &[u8] {
        let at = self.0.len() - 16;
        self.0[at..].copy_from_slice(token_id.as_bytes());
        &self.0
    }
}

/// The sealed payload: a format byte, the currency code (length-prefixed, maybe empty), then
/// the value.
pub(crate) fn payload(value: &str, currency: Option<&str>) -> Secret {
    let currency = currency.unwrap_or("");
    let mut text = String::with_capacity(2 + currency.len() + value.len());
    text.push('\u{1}');
    text.push(char::from(u8::try_from(currency.len()).unwrap_or(0)));
    text.push_str(currency);
    text.push_str(value);
    Secret::new(text)
}

/// A revealed value and the currency it was tokenized with.
#[derive(Debug)]
pub struct Revealed {
    pub value: Secret,
    pub currency: Option<String>,
}

/// Reads a payload [`payload`] framed, once opened.
pub(crate) fn decode(plain: Vec<u8>) -> Result<Revealed, VaultError> {
    let secret = Secret::new(String::from_utf8(plain).map_err(|_| VaultError::Crypto)?);
    let bytes = secret.expose().as_bytes();
    if bytes.len() < 2 || bytes[0] != 1 {
        return Err(VaultError::Crypto);
    }
    let currency_len = usize::from(bytes[1]);
    let rest = secret.expose().get(2..).ok_or(VaultError::Crypto)?;
    let currency = rest.get(..currency_len).ok_or(VaultError::Crypto)?;
    let value = rest.get(currency_len..).ok_or(VaultError::Crypto)?;
    Ok(Revealed {
        value: Secret::new(value.to_owned()),
        currency: (!currency.is_empty()).then(|| currency.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_aad_is_the_aad_of_each_id() {
        let tenant: TenantId = "acme".parse().unwrap();
        let mut aad = ValueAad::new(&tenant);
        for id in [Uuid::now_v7(), Uuid::new_v4(), Uuid::nil()] {
            assert_eq!(aad.of(id), value_aad(&tenant, id).as_slice());
        }
    }

    #[test]
    fn payloads_round_trip_with_and_without_a_currency() {
        let framed = payload("12.50", Some("EUR"));
        let back = decode(framed.expose().as_bytes().to_vec()).unwrap();
        assert_eq!(back.value.expose(), "12.50");
        assert_eq!(back.currency.as_deref(), Some("EUR"));
        let framed = payload("123456789", None);
        let back = decode(framed.expose().as_bytes().to_vec()).unwrap();
        assert_eq!(back.value.expose(), "123456789");
        assert_eq!(back.currency, None);
        assert!(decode(b"\x02xx".to_vec()).is_err());
    }
}

//! The AWS external id of a tenant: what a customer's role must require of the platform's
//! principal (`sts:ExternalId` in its trust policy) before the platform may assume it.
//!
//! AWS's answer to the confused deputy is an external id the provider generates, one per
//! customer, that no other customer can make the provider present. An id a tenant typed would
//! let one tenant name another's role with the other's id (ids are not secrets: they are shown
//! with the connector), and the platform would assume that role for the wrong tenant. So the id
//! is derived from the tenant under a key only the platform holds, and a connector must carry
//! its own tenant's.

use ids::TenantId;

/// `dps-` and 32 hex digits of an HMAC of the tenant under `key` (the master key's
/// `aws-external-id` derivation): stable for a tenant, unknowable for any other.
pub fn external_id(key: &[u8; 32], tenant: &TenantId) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let tag = ring::hmac::sign(&key, tenant.as_str().as_bytes());
    let hex: String = tag.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("dps-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tenant_has_its_own_stable_id() {
        let key = [7u8; 32];
        let acme: TenantId = "acme".parse().unwrap();
        let globex: TenantId = "globex".parse().unwrap();
        let id = external_id(&key, &acme);
        assert_eq!(id, external_id(&key, &acme));
        assert_ne!(id, external_id(&key, &globex));
        assert_ne!(id, external_id(&[8u8; 32], &acme));
        assert!(id.starts_with("dps-") && id.len() == 36, "{id}");
    }
}

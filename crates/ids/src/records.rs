//! One newtype per kind of record. Each wraps a UUID; the database stores the UUID, and the
//! repository code converts at its edge with [`from_uuid`](ScanId::from_uuid) and
//! [`as_uuid`](ScanId::as_uuid).

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

macro_rules! record_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            /// A new, time-ordered id (UUIDv7), so that ids sort in creation order.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            pub const fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }

            pub const fn as_uuid(&self) -> Uuid {
                self.0
            }

            pub fn as_bytes(&self) -> &[u8; 16] {
                self.0.as_bytes()
            }

            /// Parses an id from a path, query or body. Anything that is not a UUID names no
            /// record, which callers answer as "not found".
            pub fn parse(raw: &str) -> Option<Self> {
                Uuid::parse_str(raw.trim()).ok().map(Self)
            }

            /// Like [`parse`](Self::parse), but what cannot be an id becomes the nil id, which
            /// names no record: the request is then answered "not found" at the same step, and
            /// with the same answer, as an unknown id would be, so an answer never tells a
            /// malformed id from another tenant's.
            pub fn parse_or_nil(raw: &str) -> Self {
                Self::parse(raw).unwrap_or(Self(Uuid::nil()))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

record_id!(
    /// A scan of one or several connectors.
    ScanId
);
record_id!(
    /// A cloud storage connector.
    ConnectorId
);
record_id!(
    /// A finding: one detected value in one object, stored without the value.
    FindingId
);
record_id!(
    /// A governance policy (Area B).
    PolicyId
);
record_id!(
    /// A tokenization policy (Area A), named `policy_id` on the wire.
    TokenPolicyId
);
record_id!(
    /// A tenant's custom classifier.
    ClassifierId
);
record_id!(
    /// A vault entry, named `token_id` on the wire.
    TokenId
);
record_id!(
    /// A remediation request: one action on one object version, from plan to receipt.
    RemediationId
);
record_id!(
    /// A reconciliation: governance evaluated again on request.
    ReconciliationId
);
record_id!(
    /// A drift event in the tenant's timeline.
    DriftEventId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_only_uuids_and_keep_their_kind() {
        let scan = ScanId::new();
        assert_eq!(ScanId::parse(&scan.to_string()), Some(scan));
        assert_eq!(ScanId::parse("not-a-uuid"), None);
        assert_eq!(ScanId::parse_or_nil("not-a-uuid").as_uuid(), Uuid::nil());
        assert_eq!(ScanId::parse_or_nil(&scan.to_string()), scan);
        let connector = ConnectorId::from_uuid(scan.as_uuid());
        assert_eq!(connector.as_uuid(), scan.as_uuid());
        assert!(ScanId::new() > scan, "new ids sort after older ones");
    }
}

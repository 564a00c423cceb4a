#![doc = include_str!("../README.md")]

mod field;
mod identity;
mod records;

pub use field::field_name_like;
pub use identity::{IdentityError, Principal, Role, TenantId, UserId};
pub use records::{
    ClassifierId, ConnectorId, DriftEventId, FindingId, PolicyId, ReconciliationId, RemediationId,
    ScanId, TokenId, TokenPolicyId,
};

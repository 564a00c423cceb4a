#![doc = include_str!("../README.md")]

mod identity;
mod records;

pub use identity::{IdentityError, Principal, Role, TenantId, UserId};
pub use records::{ClassifierId, ConnectorId, FindingId, PolicyId, ScanId, TokenId, TokenPolicyId};

//! The policy document: what an admin writes, in YAML or JSON, and how it is checked before
//! anything is stored.
//!
//! ```yaml
//! apiVersion: governance.dps/v1
//! kind: Policy
//! metadata:
//!   name: ssn-in-exports
//!   description: SSNs must not sit in clear text in export buckets
//!   tags: [pci, exports]
//! spec:
//!   mode: dry-run              # or enforced
//!   scope:
//!     connectors: []           # absent or empty: every connector of the tenant
//!   conditions:                # a finding matches when it matches any condition
//!     - category: us_ssn       # a pii type, a category, or custom:<classifier>
//!       min_confidence: 0.8
//!   actions:
//!     - type: alert
//!       config: { channels: [security], severity: high }
//!     - type: tokenize
//!       config: { tokenization_policy_id: 0190...}
//! ```
//!
//! Checks run in layers, like Cloud Custodian's: syntax ([`docread`]: size, depth, one document,
//! duplicate keys, no anchors, aliases or tags), then [`schema`] (every field at every level:
//! unknown fields, types, required fields, enums, ranges), then [`semantic`] (what the names
//! and ids refer to in the tenant). Each layer reports every problem it finds, as a JSON pointer
//! and a reason that never holds a value from the document. Problems of the first two layers
//! are reported together where the first could still read the document.

mod model;
mod schema;
mod semantic;

pub use docread::Syntax;
pub use model::{
    API_VERSION, Action, ActionType, AlertConfig, Condition, Destination, MaskConfig, Metadata,
    Mode, Pointer, PolicyDocument, Problem, QuarantineConfig, Scope, Severity, Spec,
    TokenizeConfig,
};
pub use schema::from_value;
pub use semantic::{Context, check as check_references};

/// The largest policy document accepted, in bytes.
pub const MAX_BYTES: usize = 64 * 1024;

/// The deepest nesting a policy document may have; the top-level mapping is level 1.
pub const MAX_DEPTH: usize = 32;

/// Reads and checks a document's syntax and structure: everything that does not depend on
/// the tenant. Every problem found is returned.
pub fn parse(bytes: &[u8], syntax: Syntax) -> Result<PolicyDocument, Vec<Problem>> {
    let limits = docread::Limits {
        max_bytes: MAX_BYTES,
        max_depth: MAX_DEPTH,
    };
    let (value, mut problems) = docread::read(bytes, syntax, limits)?;
    match from_value(&value) {
        Ok(document) if problems.is_empty() => Ok(document),
        Ok(_) => Err(problems),
        Err(more) => {
            problems.extend(more);
            Err(problems)
        }
    }
}

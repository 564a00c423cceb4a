//! Custom classifiers: a tenant's own data identifiers, which its scans run beside the
//! built-in recognizers. Bodies are JSON or YAML.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// POST /classifiers and PUT /classifiers/:id (the full definition).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassifierRequest {
    /// 1 to 64 lower-case letters, digits and underscores, unique in the tenant. Findings name
    /// it as their type: `custom:<name>`.
    #[schema(pattern = "^[a-z0-9_]{1,64}$")]
    pub name: String,
    /// government_id, contact, personal, financial or legal_medical.
    #[schema(value_type = crate::values::Category, inline)]
    pub category: String,
    /// A regular expression (Rust regex syntax: no look-around or backreferences), up to 1000
    /// bytes, that does not match the empty string.
    #[schema(min_length = 1, max_length = 1000)]
    pub regex: String,
    /// Words that raise a match's confidence when they end within max_match_distance bytes
    /// before it, or name its CSV column or JSON key. Up to 50.
    #[serde(default)]
    #[schema(value_type = Vec<crate::values::Word>, inline, max_items = 50)]
    pub keywords: Vec<String>,
    /// A match containing any of these (case-insensitive) is not reported. Up to 50.
    #[serde(default)]
    #[schema(value_type = Vec<crate::values::Word>, inline, max_items = 50)]
    pub ignore_words: Vec<String>,
    /// luhn or ssa_rules.
    #[serde(default)]
    #[schema(value_type = Option<crate::values::Validator>, inline)]
    pub validator: Option<String>,
    /// Confidence of a match without a keyword near, 0 to 1; default 0.6.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub confidence: Option<f32>,
    /// How far before the match a keyword may end, in bytes, up to 300; default 50.
    #[serde(default)]
    #[schema(maximum = 300)]
    pub max_match_distance: Option<u32>,
}

/// A stored classifier.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Classifier {
    pub id: String,
    pub name: String,
    /// The type findings carry: `custom:<name>`.
    pub finding_type: String,
    pub category: String,
    pub regex: String,
    pub keywords: Vec<String>,
    pub ignore_words: Vec<String>,
    pub validator: Option<String>,
    pub confidence: f32,
    pub max_match_distance: u32,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

/// The answer to DELETE /classifiers/:id.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ClassifierDeleted {
    pub id: String,
    pub deleted: bool,
}

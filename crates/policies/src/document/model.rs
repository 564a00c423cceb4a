//! The types of a policy document, its problems and the pointers that locate them.

use detect::Selector;
use ids::{ConnectorId, TokenPolicyId};
use serde::Serialize;

pub use docread::{Pointer, Problem};
use serde::ser::SerializeStruct;

/// The one `apiVersion` this service reads.
pub const API_VERSION: &str = "governance.dps/v1";

/// A checked policy document. It serializes to its canonical JSON, with every default
/// written out; that is what is stored and what `GET` returns as `document`.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyDocument {
    pub metadata: Metadata,
    pub spec: Spec,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metadata {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spec {
    pub mode: Mode,
    pub scope: Scope,
    pub conditions: Vec<Condition>,
    pub actions: Vec<Action>,
}

/// `enforced` runs the actions; `dry-run` records what they would have done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Mode {
    #[serde(rename = "enforced")]
    Enforced,
    #[serde(rename = "dry-run")]
    DryRun,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Enforced, Mode::DryRun];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforced => "enforced",
            Mode::DryRun => "dry-run",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Mode::ALL.into_iter().find(|m| m.as_str() == raw)
    }
}

/// Which connectors a policy looks at; empty means all of the tenant's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Scope {
    #[serde(serialize_with = "ids_as_strings")]
    pub connectors: Vec<ConnectorId>,
}

fn ids_as_strings<S: serde::Serializer>(ids: &[ConnectorId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ids.iter().map(ToString::to_string))
}

/// A finding matches a condition when its type or category is the selector's and its
/// confidence is at least `min_confidence`.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub category: Selector,
    pub min_confidence: f64,
}

impl Serialize for Condition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Condition", 2)?;
        st.serialize_field("category", &self.category.code())?;
        st.serialize_field("min_confidence", &self.min_confidence)?;
        st.end()
    }
}

/// What a policy does with a matching finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "config", rename_all = "snake_case")]
pub enum Action {
    Alert(AlertConfig),
    Tokenize(TokenizeConfig),
    Mask(MaskConfig),
    Quarantine(QuarantineConfig),
}

/// The action types, as `action_type` names them in the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActionType {
    Alert,
    Tokenize,
    Mask,
    Quarantine,
}

impl ActionType {
    pub const ALL: [ActionType; 4] = [
        ActionType::Alert,
        ActionType::Tokenize,
        ActionType::Mask,
        ActionType::Quarantine,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActionType::Alert => "alert",
            ActionType::Tokenize => "tokenize",
            ActionType::Mask => "mask",
            ActionType::Quarantine => "quarantine",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        ActionType::ALL.into_iter().find(|t| t.as_str() == raw)
    }

    /// The action's safety class, which the tenant's remediation policy may deny.
    pub fn safety_class(self) -> vocab::SafetyClass {
        match self {
            ActionType::Alert => vocab::SafetyClass::ReadOnly,
            ActionType::Tokenize | ActionType::Quarantine => vocab::SafetyClass::Reversible,
            ActionType::Mask => vocab::SafetyClass::Destructive,
        }
    }

    /// Whether the action changes the customer's object (and so becomes a remediation
    /// request) rather than only telling someone.
    pub fn changes_objects(self) -> bool {
        self != ActionType::Alert
    }
}

// Stored as its name (ledger, remediation requests); an unknown name read back is an error.
db::text_enum!(ActionType);

impl Action {
    pub fn action_type(&self) -> ActionType {
        match self {
            Action::Alert(_) => ActionType::Alert,
            Action::Tokenize(_) => ActionType::Tokenize,
            Action::Mask(_) => ActionType::Mask,
            Action::Quarantine(_) => ActionType::Quarantine,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub const ALL: [Severity; 4] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Severity::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

// Drift events keep it as its name; an unknown name read back is an error.
db::text_enum!(Severity);

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertConfig {
    pub channels: Vec<String>,
    pub severity: Severity,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenizeConfig {
    #[serde(serialize_with = "id_as_string")]
    pub tokenization_policy_id: TokenPolicyId,
}

fn id_as_string<S: serde::Serializer>(id: &TokenPolicyId, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

/// Replaces each value with `char`, keeping its last `keep_last` characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MaskConfig {
    pub keep_last: u8,
    pub char: char,
}

impl Default for MaskConfig {
    fn default() -> Self {
        MaskConfig {
            keep_last: 0,
            char: '*',
        }
    }
}

/// Where quarantined objects go: a bucket (S3, GCS) or container (Azure) reachable with the
/// same connector, and a key prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuarantineConfig {
    pub destination: Destination,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Destination {
    /// The bucket or container.
    pub bucket: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

impl Serialize for PolicyDocument {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PolicyDocument", 4)?;
        st.serialize_field("apiVersion", API_VERSION)?;
        st.serialize_field("kind", "Policy")?;
        st.serialize_field("metadata", &self.metadata)?;
        st.serialize_field("spec", &self.spec)?;
        st.end()
    }
}

impl PolicyDocument {
    /// The document as canonical JSON: what is stored.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The document as YAML, for a document first written in JSON.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).unwrap_or_default()
    }

    /// The actions as evaluation takes them: the first of each type, in document order. The
    /// ledger holds one action per type for an object version, so a policy's alerts are one
    /// action, delivered to all their channels ([`PolicyDocument::alert_targets`]); taken one by
    /// one, every alert after the first found its objects already claimed and sent nothing.
    pub fn acted(&self) -> Vec<&Action> {
        let mut seen = Vec::new();
        self.spec
            .actions
            .iter()
            .filter(|a| {
                let kind = a.action_type();
                let first = !seen.contains(&kind);
                seen.push(kind);
                first
            })
            .collect()
    }

    /// Every channel the policy's alerts name, once, at the highest severity an alert gives it,
    /// in the order first named.
    pub fn alert_targets(&self) -> Vec<(&str, Severity)> {
        let mut targets: Vec<(&str, Severity)> = Vec::new();
        for action in &self.spec.actions {
            let Action::Alert(alert) = action else {
                continue;
            };
            for channel in &alert.channels {
                match targets.iter_mut().find(|(c, _)| *c == channel.as_str()) {
                    Some((_, severity)) => *severity = (*severity).max(alert.severity),
                    None => targets.push((channel.as_str(), alert.severity)),
                }
            }
        }
        targets
    }

    /// Whether any action changes objects.
    pub fn changes_objects(&self) -> bool {
        self.spec
            .actions
            .iter()
            .any(|a| a.action_type().changes_objects())
    }
}

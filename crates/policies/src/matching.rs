//! Which findings a policy matches: pure, so it is tested without a database.

use std::collections::BTreeMap;

use detect::Selector;
use uuid::Uuid;

use crate::document::{Condition, PolicyDocument};

/// A finding as evaluation reads it: where, what type, how sure. Never the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub id: Uuid,
    pub bucket: String,
    pub object_key: String,
    /// The object's ETag when it was scanned; empty when the provider gave none.
    pub etag: String,
    /// `us_ssn`, or `custom:<name>`.
    pub pii_type: String,
    pub category: String,
    /// The highest confidence of its values.
    pub confidence: f32,
    /// How many values: a finding is one type in one field of one object version.
    pub occurrences: u32,
    /// The value is a token the tenant's vault issued (a remediated object scanned again): no
    /// policy acts on it, and risk counts it as covered.
    pub tokenized: bool,
}

impl From<scans::findings::OpenFinding> for Finding {
    fn from(f: scans::findings::OpenFinding) -> Self {
        Finding {
            id: f.finding_id,
            bucket: f.bucket,
            object_key: f.object_key,
            etag: f.etag,
            pii_type: f.pii_type,
            category: f.category,
            confidence: f.confidence,
            occurrences: u32::try_from(f.occurrences).unwrap_or(1).max(1),
            tokenized: f.tokenized,
        }
    }
}

/// How many values `findings` stand for: what every findings count counts.
pub fn values<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> usize {
    findings.into_iter().map(|f| f.occurrences as usize).sum()
}

/// Whether a condition names a finding of this type and category: its type, its category or
/// its custom classifier is the condition's.
pub fn names(condition: &Condition, pii_type: &str, category: &str) -> bool {
    match &condition.category {
        Selector::Type(t) => pii_type == t.as_str(),
        Selector::Category(c) => category == c.as_str(),
        Selector::Custom(name) => pii_type.strip_prefix("custom:").is_some_and(|n| n == name),
    }
}

/// The confidence a finding of this type and category needs to meet some of `conditions`: the
/// lowest `min_confidence` of those that name it, in f32 as confidences are stored. `None` when
/// no condition names it.
pub fn threshold(conditions: &[Condition], pii_type: &str, category: &str) -> Option<f32> {
    conditions
        .iter()
        .filter(|c| names(c, pii_type, category))
        .map(|c| c.min_confidence as f32)
        .reduce(f32::min)
}

/// Whether a finding meets one condition: the condition names it, and its confidence is at
/// least the condition's minimum.
pub fn meets(condition: &Condition, finding: &Finding) -> bool {
    // Confidences are stored as f32; compare in f32 so that 0.8 meets min_confidence 0.8.
    names(condition, &finding.pii_type, &finding.category)
        && finding.confidence >= condition.min_confidence as f32
}

/// Whether a finding matches a policy: it meets any of its conditions.
pub fn matches(document: &PolicyDocument, finding: &Finding) -> bool {
    document.spec.conditions.iter().any(|c| meets(c, finding))
}

/// One object version and the findings of it a policy matched.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectMatch<'a> {
    pub bucket: &'a str,
    pub object_key: &'a str,
    pub etag: &'a str,
    pub findings: Vec<&'a Finding>,
}

impl ObjectMatch<'_> {
    /// `bucket/key`, as audit entries and alerts name the object.
    pub fn resource(&self) -> String {
        format!("{}/{}", self.bucket, self.object_key)
    }

    /// The matched findings' types, sorted, each once.
    pub fn pii_types(&self) -> Vec<&str> {
        let mut types: Vec<&str> = self.findings.iter().map(|f| f.pii_type.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        types
    }

    /// Matched values per type (a finding counts its occurrences, as every count does).
    pub fn counts(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for f in &self.findings {
            *counts.entry(f.pii_type.as_str()).or_default() += f.occurrences as usize;
        }
        counts
    }

    /// Matched values, over every type.
    pub fn values(&self) -> usize {
        values(self.findings.iter().copied())
    }

    pub fn finding_ids(&self) -> Vec<Uuid> {
        self.findings.iter().map(|f| f.id).collect()
    }
}

/// The objects with findings the policy matches, in (bucket, key) order. Tokens are never
/// acted on again.
pub fn by_object<'a>(document: &PolicyDocument, findings: &'a [Finding]) -> Vec<ObjectMatch<'a>> {
    let mut objects: BTreeMap<(&str, &str, &str), Vec<&Finding>> = BTreeMap::new();
    for f in findings
        .iter()
        .filter(|f| !f.tokenized && matches(document, f))
    {
        objects
            .entry((f.bucket.as_str(), f.object_key.as_str(), f.etag.as_str()))
            .or_default()
            .push(f);
    }
    objects
        .into_iter()
        .map(|((bucket, object_key, etag), findings)| ObjectMatch {
            bucket,
            object_key,
            etag,
            findings,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::document::{API_VERSION, from_value};

    fn finding(key: &str, pii_type: &str, category: &str, confidence: f32) -> Finding {
        Finding {
            id: Uuid::now_v7(),
            bucket: "b".into(),
            object_key: key.into(),
            etag: "e1".into(),
            pii_type: pii_type.into(),
            category: category.into(),
            confidence,
            occurrences: 1,
            tokenized: false,
        }
    }

    fn policy(conditions: serde_json::Value) -> PolicyDocument {
        from_value(&json!({
            "apiVersion": API_VERSION, "kind": "Policy", "metadata": {"name": "p"},
            "spec": {"mode": "enforced", "conditions": conditions, "actions": [{"type": "mask"}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_finding_matches_any_condition_at_or_above_its_confidence() {
        let p = policy(json!([
            {"category": "us_ssn", "min_confidence": 0.8},
            {"category": "contact", "min_confidence": 0.5},
            {"category": "custom:badge", "min_confidence": 0.0}
        ]));
        assert!(matches(&p, &finding("a", "us_ssn", "government_id", 0.8)));
        assert!(!matches(&p, &finding("a", "us_ssn", "government_id", 0.79)));
        assert!(matches(&p, &finding("a", "email", "contact", 0.5)));
        assert!(matches(&p, &finding("a", "custom:badge", "personal", 0.1)));
        assert!(!matches(
            &p,
            &finding("a", "custom:badger", "personal", 0.9)
        ));
        assert!(!matches(&p, &finding("a", "ca_sin", "government_id", 1.0)));
        // A category names custom classifiers of that category too.
        let q = policy(json!([{"category": "personal", "min_confidence": 0.5}]));
        assert!(matches(&q, &finding("a", "custom:badge", "personal", 0.9)));
    }

    #[test]
    fn matches_are_grouped_by_object_with_their_counts() {
        let p = policy(json!([{"category": "government_id", "min_confidence": 0.5}]));
        let findings = vec![
            finding("x.csv", "us_ssn", "government_id", 0.9),
            finding("a.csv", "us_ssn", "government_id", 0.9),
            finding("x.csv", "ca_sin", "government_id", 0.9),
            finding("x.csv", "us_ssn", "government_id", 0.9),
            finding("y.csv", "email", "contact", 0.9),
        ];
        let objects = by_object(&p, &findings);
        let keys: Vec<&str> = objects.iter().map(|o| o.object_key).collect();
        assert_eq!(keys, ["a.csv", "x.csv"]);
        // A token in an object is never acted on again.
        let mut tokens = findings.clone();
        tokens[1].tokenized = true;
        let keys: Vec<&str> = by_object(&p, &tokens)
            .iter()
            .map(|o| o.object_key)
            .collect();
        assert_eq!(keys, ["x.csv"]);
        assert_eq!(objects[1].pii_types(), ["ca_sin", "us_ssn"]);
        assert_eq!(objects[1].counts()["us_ssn"], 2);
        assert_eq!(objects[1].resource(), "b/x.csv");
    }
}

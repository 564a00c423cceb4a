//! The third layer: what a structurally valid document refers to must exist in the tenant.
//!
//! The caller reads, for the names and ids the document uses ([`Context::wanted`]), which of
//! them the tenant has; [`check`] then names every reference that is missing. A connector of
//! another tenant reads exactly like one that does not exist.

use std::collections::BTreeSet;

use detect::Selector;
use ids::{ConnectorId, TokenPolicyId};

use super::{Action, Pointer, PolicyDocument, Problem};

/// What a document refers to, or (filled by the caller) which of those the tenant has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    pub connectors: BTreeSet<ConnectorId>,
    pub channels: BTreeSet<String>,
    pub token_policies: BTreeSet<TokenPolicyId>,
    /// Custom classifier names, without `custom:`.
    pub classifiers: BTreeSet<String>,
}

impl Context {
    /// Everything the document refers to.
    pub fn wanted(document: &PolicyDocument) -> Context {
        let mut wanted = Context {
            connectors: document.spec.scope.connectors.iter().copied().collect(),
            ..Context::default()
        };
        for condition in &document.spec.conditions {
            if let Selector::Custom(name) = &condition.category {
                wanted.classifiers.insert(name.clone());
            }
        }
        for action in &document.spec.actions {
            match action {
                Action::Alert(alert) => wanted.channels.extend(alert.channels.iter().cloned()),
                Action::Tokenize(t) => {
                    wanted.token_policies.insert(t.tokenization_policy_id);
                }
                Action::Mask(_) | Action::Quarantine(_) => {}
            }
        }
        wanted
    }
}

/// Every reference of `document` that `found` lacks.
pub fn check(document: &PolicyDocument, found: &Context) -> Vec<Problem> {
    let mut problems = Vec::new();
    let spec = Pointer::root().key("spec");
    let scope = spec.key("scope").key("connectors");
    for (i, id) in document.spec.scope.connectors.iter().enumerate() {
        if !found.connectors.contains(id) {
            problems.push(Problem::at(
                &scope.index(i),
                "no connector with this id in the tenant",
            ));
        }
    }
    let conditions = spec.key("conditions");
    for (i, condition) in document.spec.conditions.iter().enumerate() {
        if let Selector::Custom(name) = &condition.category
            && !found.classifiers.contains(name)
        {
            problems.push(Problem::at(
                &conditions.index(i).key("category"),
                "no custom classifier with this name in the tenant",
            ));
        }
    }
    let actions = spec.key("actions");
    for (i, action) in document.spec.actions.iter().enumerate() {
        let config = actions.index(i).key("config");
        match action {
            Action::Alert(alert) => {
                for (j, name) in alert.channels.iter().enumerate() {
                    if !found.channels.contains(name) {
                        problems.push(Problem::at(
                            &config.key("channels").index(j),
                            "no alert channel with this name in the tenant",
                        ));
                    }
                }
            }
            Action::Tokenize(t) => {
                if !found.token_policies.contains(&t.tokenization_policy_id) {
                    problems.push(Problem::at(
                        &config.key("tokenization_policy_id"),
                        "no tokenization policy with this id in the tenant",
                    ));
                }
            }
            Action::Mask(_) | Action::Quarantine(_) => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::document::{API_VERSION, from_value};

    #[test]
    fn each_missing_reference_is_named() {
        let connector = ConnectorId::new();
        let token_policy = TokenPolicyId::new();
        let doc = from_value(&json!({
            "apiVersion": API_VERSION, "kind": "Policy", "metadata": {"name": "p"},
            "spec": {
                "mode": "dry-run",
                "scope": {"connectors": [connector.to_string()]},
                "conditions": [{"category": "custom:badge", "min_confidence": 0.5}],
                "actions": [
                    {"type": "alert", "config": {"channels": ["sec", "ops"], "severity": "low"}},
                    {"type": "tokenize", "config": {"tokenization_policy_id": token_policy.to_string()}}
                ]
            }
        }))
        .unwrap();
        let wanted = Context::wanted(&doc);
        assert_eq!(wanted.channels.len(), 2);
        assert!(check(&doc, &wanted).is_empty());

        let mut found = wanted.clone();
        found.channels.remove("ops");
        found.connectors.clear();
        found.token_policies.clear();
        found.classifiers.clear();
        let pointers: Vec<String> = check(&doc, &found).into_iter().map(|p| p.pointer).collect();
        assert_eq!(
            pointers,
            [
                "/spec/scope/connectors/0",
                "/spec/conditions/0/category",
                "/spec/actions/0/config/channels/1",
                "/spec/actions/1/config/tokenization_policy_id",
            ]
        );
    }
}

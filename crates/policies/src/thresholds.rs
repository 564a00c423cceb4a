//! A policy's confidence thresholds over the (pii type, category) pairs present in a tenant's
//! open findings: what lets reconciliation's plan and risk's coverage meet findings and
//! policies by one hash join on equal columns, at most once. Pure.

use std::collections::HashMap;

use ids::ConnectorId;
use scans::findings::TypeCount;
use uuid::Uuid;

use crate::store::Active;

/// A policy's thresholds over the pairs present: one per (connector, or `None` for every
/// connector; pii type; category) it matches, with the confidence it needs.
pub fn policy_thresholds<'a>(
    policy: &Active,
    pairs: &'a [TypeCount],
    scope: &[ConnectorId],
) -> Vec<(Option<Uuid>, &'a str, &'a str, f32)> {
    let targets: Vec<Option<Uuid>> = match policy_connectors(policy, scope) {
        None => vec![None],
        Some(list) => list.into_iter().map(Some).collect(),
    };
    let mut out = Vec::new();
    for pair in pairs {
        let Some(min) = threshold(policy, &pair.pii_type, &pair.category) else {
            continue;
        };
        for connector in &targets {
            out.push((
                *connector,
                pair.pii_type.as_str(),
                pair.category.as_str(),
                min,
            ));
        }
    }
    out
}

/// The lowest threshold at which some policy matches a finding, per (connector, or `None` for
/// every connector; pii type; category): "matched by any of them".
pub fn lowest_thresholds<'a>(
    policies: &[Active],
    pairs: &'a [TypeCount],
    scope: &[ConnectorId],
) -> HashMap<(Option<Uuid>, &'a str, &'a str), f32> {
    let mut any = HashMap::new();
    for policy in policies {
        for (connector, pii_type, category, min) in policy_thresholds(policy, pairs, scope) {
            any.entry((connector, pii_type, category))
                .and_modify(|m: &mut f32| *m = m.min(min))
                .or_insert(min);
        }
    }
    any
}

/// The lowest `min_confidence` of the policy's conditions that name the pair, in f32 as
/// confidences are stored.
fn threshold(policy: &Active, pii_type: &str, category: &str) -> Option<f32> {
    crate::matching::threshold(&policy.document.spec.conditions, pii_type, category)
}

/// The connectors a policy looks at within the reconciliation's scope: `None` for all of them
/// (both unscoped), else the list (possibly empty: it looks at none in scope).
fn policy_connectors(policy: &Active, scope: &[ConnectorId]) -> Option<Vec<Uuid>> {
    let own = &policy.document.spec.scope.connectors;
    match (own.is_empty(), scope.is_empty()) {
        (true, true) => None,
        (true, false) => Some(scope.iter().map(ConnectorId::as_uuid).collect()),
        (false, true) => Some(own.iter().map(ConnectorId::as_uuid).collect()),
        (false, false) => Some(
            own.iter()
                .filter(|c| scope.contains(c))
                .map(ConnectorId::as_uuid)
                .collect(),
        ),
    }
}

//! Evaluation's decisions, table-driven over modes, gates, action types, thresholds, tokens,
//! scopes and object versions. No database: that is the point of [`decide`].

use serde_json::{Value, json};
use uuid::Uuid;

use super::*;
use policies::document::{API_VERSION, from_value};

/// A policy of `mode` over US SSNs at 0.8, taking `actions` (comma-separated types), in
/// `scope`.
fn policy(name: &str, mode: &str, actions: &str, scope: &[ConnectorId]) -> Active {
    let one = |kind: &str| -> Value {
        match kind {
            "alert" => {
                json!({"type": "alert", "config": {"channels": ["sec"], "severity": "high"}})
            }
            "tokenize" => json!({"type": "tokenize",
                "config": {"tokenization_policy_id": Uuid::now_v7().to_string()}}),
            "mask" => json!({"type": "mask", "config": {}}),
            "quarantine" => json!({"type": "quarantine",
                "config": {"destination": {"bucket": "quarantine"}}}),
            other => panic!("no action {other}"),
        }
    };
    let actions: Vec<Value> = actions.split(',').map(one).collect();
    let document = from_value(&json!({
        "apiVersion": API_VERSION, "kind": "Policy", "metadata": {"name": name},
        "spec": {
            "mode": mode,
            "scope": {"connectors": scope.iter().map(ToString::to_string).collect::<Vec<_>>()},
            "conditions": [{"category": "us_ssn", "min_confidence": 0.8}],
            "actions": actions,
        }
    }))
    .expect("a valid policy");
    Active {
        id: ids::PolicyId::new(),
        version: 1,
        document,
        acts_from_txid: 0,
    }
}

fn finding(key: &str, etag: &str, pii_type: &str, confidence: f32, tokenized: bool) -> Finding {
    Finding {
        id: Uuid::now_v7(),
        bucket: "exports".into(),
        object_key: key.into(),
        etag: etag.into(),
        pii_type: pii_type.into(),
        category: "government_id".into(),
        confidence,
        occurrences: 1,
        tokenized,
    }
}

fn ssn(key: &str) -> Finding {
    finding(key, "e1", "us_ssn", 0.95, false)
}

fn gates(gate: Gate) -> Gates {
    ActionType::ALL
        .into_iter()
        .map(|kind| (kind, gate))
        .collect()
}

fn outcomes(decision: &PolicyDecision<'_>) -> Vec<(ActionType, Outcome)> {
    decision
        .actions
        .iter()
        .map(|a| (a.kind, a.outcome))
        .collect()
}

#[test]
fn every_mode_gate_and_action_type_has_its_outcome() {
    use Outcome::{Blocked, Planned, Queued, Simulated};
    let connector = ConnectorId::new();
    let findings = [ssn("people.csv")];
    // (policy mode, reconciliation enforces, gate) → outcome of the alert and of the change.
    // Every combination is listed.
    let table = [
        ("enforced", true, Gate::Allowed, (Queued, Planned)),
        ("enforced", true, Gate::Denied, (Blocked, Blocked)),
        (
            "enforced",
            true,
            Gate::AllowedPolicyUnreadable,
            (Queued, Planned),
        ),
        ("enforced", false, Gate::Allowed, (Simulated, Simulated)),
        ("enforced", false, Gate::Denied, (Simulated, Simulated)),
        (
            "enforced",
            false,
            Gate::AllowedPolicyUnreadable,
            (Simulated, Simulated),
        ),
        ("dry-run", true, Gate::Allowed, (Simulated, Simulated)),
        ("dry-run", true, Gate::Denied, (Simulated, Simulated)),
        (
            "dry-run",
            true,
            Gate::AllowedPolicyUnreadable,
            (Simulated, Simulated),
        ),
        ("dry-run", false, Gate::Allowed, (Simulated, Simulated)),
        ("dry-run", false, Gate::Denied, (Simulated, Simulated)),
        (
            "dry-run",
            false,
            Gate::AllowedPolicyUnreadable,
            (Simulated, Simulated),
        ),
    ];
    assert_eq!(table.len(), 2 * 2 * Gate::ALL.len());
    // A policy changes an object one way only: each change type in turn.
    let changes = [
        ActionType::Tokenize,
        ActionType::Mask,
        ActionType::Quarantine,
    ];
    for (mode, enforce, gate, (alert, change)) in table {
        for kind in changes {
            // The alert named twice is one action, decided once.
            let actions = format!("alert,{},alert", kind.as_str());
            let policies = [policy("p", mode, &actions, &[])];
            let decisions = decide(connector, &findings, &policies, &gates(gate), enforce);
            let case = format!("{mode}, enforce {enforce}, {gate:?}, {kind:?}");
            assert_eq!(decisions.len(), 1, "{case}");
            assert_eq!(
                outcomes(&decisions[0]),
                [(ActionType::Alert, alert), (kind, change)],
                "{case}"
            );
            assert_eq!(
                decisions[0].simulated,
                mode == "dry-run" || !enforce,
                "{case}"
            );
            for action in &decisions[0].actions {
                assert_eq!(action.gate, gate, "{case}");
            }
        }
    }
}

#[test]
fn each_action_type_follows_its_own_gate() {
    let connector = ConnectorId::new();
    let findings = [ssn("people.csv")];
    // Destructive denied, reversible unread, read-only allowed.
    let gates: Gates = [
        (ActionType::Mask, Gate::Denied),
        (ActionType::Tokenize, Gate::AllowedPolicyUnreadable),
        (ActionType::Quarantine, Gate::AllowedPolicyUnreadable),
    ]
    .into_iter()
    .collect();
    let table = [
        ("alert,mask", Outcome::Blocked, Gate::Denied),
        (
            "alert,tokenize",
            Outcome::Planned,
            Gate::AllowedPolicyUnreadable,
        ),
        (
            "alert,quarantine",
            Outcome::Planned,
            Gate::AllowedPolicyUnreadable,
        ),
    ];
    for (actions, outcome, gate) in table {
        let policies = [policy("p", "enforced", actions, &[])];
        let decisions = decide(connector, &findings, &policies, &gates, true);
        let alert = &decisions[0].actions[0];
        assert_eq!(
            (alert.outcome, alert.gate),
            (Outcome::Queued, Gate::Allowed)
        );
        let change = &decisions[0].actions[1];
        assert_eq!((change.outcome, change.gate), (outcome, gate), "{actions}");
    }
}

#[test]
fn the_ledger_records_a_denied_change_as_planned_and_a_denied_alert_as_blocked() {
    let table = [
        (Outcome::Simulated, ActionType::Alert, "simulated"),
        (Outcome::Simulated, ActionType::Mask, "simulated"),
        (Outcome::Blocked, ActionType::Alert, "blocked"),
        (Outcome::Blocked, ActionType::Tokenize, "planned"),
        (Outcome::Blocked, ActionType::Mask, "planned"),
        (Outcome::Blocked, ActionType::Quarantine, "planned"),
        (Outcome::Queued, ActionType::Alert, "queued"),
        (Outcome::Planned, ActionType::Quarantine, "planned"),
    ];
    for (outcome, kind, claimed) in table {
        assert_eq!(outcome.claimed(kind), claimed, "{outcome:?} {kind:?}");
    }
}

#[test]
fn a_finding_is_matched_at_its_threshold_never_below_and_never_as_a_token() {
    let connector = ConnectorId::new();
    let policies = [policy("p", "enforced", "mask", &[])];
    let below = f32::from_bits(0.8_f32.to_bits() - 1);
    // (confidence, tokenized, type) → matched
    let table = [
        (0.8_f32, false, "us_ssn", true),
        (1.0, false, "us_ssn", true),
        (below, false, "us_ssn", false),
        (0.0, false, "us_ssn", false),
        (0.99, true, "us_ssn", false),
        (0.99, false, "ca_sin", false),
    ];
    for (confidence, tokenized, pii_type, matched) in table {
        let findings = [finding("a.csv", "e1", pii_type, confidence, tokenized)];
        let decisions = decide(connector, &findings, &policies, &gates(Gate::Allowed), true);
        let case = format!("{confidence} {tokenized} {pii_type}");
        assert_eq!(
            decisions[0].findings_matched(),
            usize::from(matched),
            "{case}"
        );
        assert_eq!(decisions[0].objects.len(), usize::from(matched), "{case}");
        // The decision to act stands either way; the ledger gets one claim per object.
        assert_eq!(decisions[0].actions.len(), 1, "{case}");
    }
}

#[test]
fn a_policy_decides_only_for_the_connectors_in_its_scope() {
    let (here, there) = (ConnectorId::new(), ConnectorId::new());
    let findings = [ssn("a.csv")];
    let policies = [
        policy("everywhere", "enforced", "mask", &[]),
        policy("here", "enforced", "mask", &[here]),
        policy("there", "enforced", "mask", &[there]),
    ];
    let names = |connector| -> Vec<String> {
        decide(connector, &findings, &policies, &gates(Gate::Allowed), true)
            .iter()
            .map(|d| d.policy.document.metadata.name.clone())
            .collect()
    };
    assert_eq!(names(here), ["everywhere", "here"]);
    assert_eq!(names(there), ["everywhere", "there"]);
    assert_eq!(names(ConnectorId::new()), ["everywhere"]);
}

#[test]
fn each_object_version_is_one_object_with_all_its_matched_findings() {
    let connector = ConnectorId::new();
    let findings = [
        finding("b.csv", "e2", "us_ssn", 0.9, false),
        finding("a.csv", "e1", "us_ssn", 0.9, false),
        finding("b.csv", "e1", "us_ssn", 0.9, false),
        finding("a.csv", "e1", "us_ssn", 0.85, false),
        finding("a.csv", "e1", "us_ssn", 0.5, false),
        finding("a.csv", "e1", "us_ssn", 0.9, true),
    ];
    let policies = [policy("p", "enforced", "mask", &[])];
    let decisions = decide(connector, &findings, &policies, &gates(Gate::Allowed), true);
    let objects: Vec<(&str, &str, usize)> = decisions[0]
        .objects
        .iter()
        .map(|o| (o.object_key, o.etag, o.findings.len()))
        .collect();
    // Two versions of b.csv in one batch are two objects; the low-confidence finding and the
    // token in a.csv are not matched.
    assert_eq!(
        objects,
        [("a.csv", "e1", 2), ("b.csv", "e1", 1), ("b.csv", "e2", 1)]
    );
    assert_eq!(decisions[0].findings_matched(), 4);
    assert_eq!(
        decisions[0].objects[0].finding_ids(),
        [findings[1].id, findings[3].id]
    );
    // Drift sees objects, not versions: b.csv once.
    let statuses = object_statuses(&decisions);
    assert_eq!(statuses.len(), 2);
}

#[test]
fn an_objects_status_is_pending_over_dry_run_over_none_whatever_the_order() {
    use RemediationStatus::{DryRun, None, Pending};
    let connector = ConnectorId::new();
    let findings = [ssn("a.csv")];
    let masks = || policy("masks", "enforced", "mask", &[]);
    let tries = || policy("tries", "dry-run", "mask", &[]);
    let alerts = || policy("alerts", "enforced", "alert", &[]);
    // (policies, gate, enforce) → status of a.csv
    let table: Vec<(Vec<Active>, Gate, bool, RemediationStatus)> = vec![
        (vec![masks()], Gate::Allowed, true, Pending),
        (vec![masks()], Gate::Denied, true, None),
        (vec![masks()], Gate::Allowed, false, DryRun),
        (vec![tries()], Gate::Allowed, true, DryRun),
        (vec![alerts()], Gate::Allowed, true, None),
        (vec![tries(), masks()], Gate::Allowed, true, Pending),
        (vec![masks(), tries()], Gate::Allowed, true, Pending),
        (vec![alerts(), tries()], Gate::Allowed, true, DryRun),
        (vec![masks(), tries()], Gate::Denied, true, DryRun),
    ];
    for (policies, gate, enforce, expected) in table {
        let decisions = decide(connector, &findings, &policies, &gates(gate), enforce);
        let statuses = object_statuses(&decisions);
        let (names, status) = &statuses[&("exports".to_owned(), "a.csv".to_owned())];
        let all: Vec<&str> = policies
            .iter()
            .map(|p| p.document.metadata.name.as_str())
            .collect();
        assert_eq!(names, &all, "{all:?} {gate:?} {enforce}");
        assert_eq!(*status, expected, "{all:?} {gate:?} {enforce}");
    }
}

#[test]
fn nothing_matched_is_no_object_and_no_status() {
    let connector = ConnectorId::new();
    let policies = [policy("p", "enforced", "alert,mask", &[])];
    for findings in [vec![], vec![finding("a.csv", "e1", "email", 1.0, false)]] {
        let decisions = decide(connector, &findings, &policies, &gates(Gate::Allowed), true);
        assert_eq!(decisions[0].findings_matched(), 0);
        assert!(decisions[0].objects.is_empty());
        assert!(object_statuses(&decisions).is_empty());
    }
}

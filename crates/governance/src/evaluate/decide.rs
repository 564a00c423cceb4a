//! What a batch of findings makes each policy do: policy × findings → decisions, with no I/O.
//!
//! It is the one place that decides, for a scan's batches and a reconciliation's steps alike
//! ([`decide`]), and for a reconciliation's plan, which counts in SQL what it would match but
//! asks [`Outcome::of`] what each action would do. The ledger, the outbox and the remediation
//! requests sit around it ([`super::plan`]), and only they know what was done before.

use std::collections::HashMap;

use ids::ConnectorId;
use policies::document::{Action, ActionType, Mode};
use policies::matching::{Finding, ObjectMatch, by_object};
use policies::store::Active;
use posture::drift::Decisions;
use posture::findings::RemediationStatus;
use settings::Gate;

/// What the safety-class gate said for each action type, read before evaluation's transaction
/// (a failed read must not abort it: the gate fails open).
#[derive(Debug, Clone, Default)]
pub struct Gates(pub(super) HashMap<ActionType, Gate>);

impl Gates {
    /// The gate of `kind`: one that was not read, because no enforced policy takes the action,
    /// allows.
    pub fn of(&self, kind: ActionType) -> Gate {
        self.0.get(&kind).copied().unwrap_or(Gate::Allowed)
    }
}

impl FromIterator<(ActionType, Gate)> for Gates {
    fn from_iter<I: IntoIterator<Item = (ActionType, Gate)>>(gates: I) -> Self {
        Gates(gates.into_iter().collect())
    }
}

/// What evaluation decides an action does to each object a policy matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A dry-run policy's action, or any action of a dry-run reconciliation: recorded, not done.
    Simulated,
    /// The tenant denies the action's safety class.
    Blocked,
    /// An alert, queued in the outbox.
    Queued,
    /// A remediation request for the executor.
    Planned,
}

impl Outcome {
    /// The rule: a simulated action is only recorded; a denied one is blocked; an allowed
    /// alert is queued and an allowed change planned. A gate that could not be read allows
    /// (`Gate::AllowedPolicyUnreadable`), and says so on the request.
    pub fn of(simulated: bool, gate: Gate, kind: ActionType) -> Self {
        if simulated {
            Outcome::Simulated
        } else if !gate.permits() {
            Outcome::Blocked
        } else if kind.changes_objects() {
            Outcome::Planned
        } else {
            Outcome::Queued
        }
    }

    /// As audit entries and plans name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Simulated => "simulated",
            Outcome::Blocked => "blocked",
            Outcome::Queued => "queued",
            Outcome::Planned => "planned",
        }
    }

    /// What the ledger records when the action is claimed. A denied change is a request too,
    /// which its executor ends `blocked` with its receipt: `planned` until then, since only an
    /// ended request may be planned again. A denied alert has no executor: blocked at once.
    pub fn claimed(self, kind: ActionType) -> &'static str {
        match self {
            Outcome::Blocked if kind.changes_objects() => "planned",
            outcome => outcome.as_str(),
        }
    }
}

/// One action of a policy, decided.
#[derive(Debug, Clone)]
pub struct ActionDecision<'a> {
    pub action: &'a Action,
    pub kind: ActionType,
    pub gate: Gate,
    pub outcome: Outcome,
}

/// What one policy decides about a batch: the object versions it matched, and what each of
/// its actions does to every one of them.
#[derive(Debug, Clone)]
pub struct PolicyDecision<'a> {
    pub policy: &'a Active,
    /// Its actions are only recorded.
    pub simulated: bool,
    /// In (bucket, key, etag) order, each with the findings the policy matched in it.
    pub objects: Vec<ObjectMatch<'a>>,
    /// One per action type, in the document's order.
    pub actions: Vec<ActionDecision<'a>>,
}

impl PolicyDecision<'_> {
    /// The values the policy matched, over all its objects (each finding counts its
    /// occurrences, as every findings count does).
    pub fn findings_matched(&self) -> usize {
        self.objects.iter().map(ObjectMatch::values).sum()
    }
}

/// Decides what `policies` do about `findings`, one connector's: a policy whose scope leaves
/// the connector out decides nothing; each other matches the findings it names at or above
/// their minimum confidence, never a token, per object version; its actions are simulated
/// when it is a dry-run policy or when `enforce` is false (a dry-run reconciliation), and
/// otherwise follow the tenant's `gates`.
pub fn decide<'a>(
    connector: ConnectorId,
    findings: &'a [Finding],
    policies: &'a [Active],
    gates: &Gates,
    enforce: bool,
) -> Vec<PolicyDecision<'a>> {
    policies
        .iter()
        .filter(|policy| policy.covers(connector))
        .map(|policy| {
            let simulated = policy.document.spec.mode == Mode::DryRun || !enforce;
            let actions = policy
                .document
                .acted()
                .into_iter()
                .map(|action| {
                    let kind = action.action_type();
                    let gate = gates.of(kind);
                    ActionDecision {
                        action,
                        kind,
                        gate,
                        outcome: Outcome::of(simulated, gate, kind),
                    }
                })
                .collect();
            PolicyDecision {
                policy,
                simulated,
                objects: by_object(&policy.document, findings),
                actions,
            }
        })
        .collect()
}

/// Per object (bucket, key), as drift events record it: the names of the policies that
/// matched it, and `pending` when some policy planned a change to it, else `dry_run` when
/// some policy simulated an action on it, else `none` (every action was blocked, or queued an
/// alert).
pub fn object_statuses(decisions: &[PolicyDecision<'_>]) -> Decisions {
    let mut statuses = Decisions::new();
    for decision in decisions {
        let planned = decision
            .actions
            .iter()
            .any(|a| a.outcome == Outcome::Planned);
        let simulated = decision
            .actions
            .iter()
            .any(|a| a.outcome == Outcome::Simulated);
        for object in &decision.objects {
            let (names, status) = statuses
                .entry((object.bucket.to_owned(), object.object_key.to_owned()))
                .or_insert_with(|| (Vec::new(), RemediationStatus::None));
            names.push(decision.policy.document.metadata.name.clone());
            if planned {
                *status = RemediationStatus::Pending;
            } else if simulated && *status == RemediationStatus::None {
                *status = RemediationStatus::DryRun;
            }
        }
    }
    statuses
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;

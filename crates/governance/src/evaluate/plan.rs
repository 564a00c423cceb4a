//! What [`decide`](super::decide) decided for a batch, written in the caller's transaction:
//!
//! - a `policy_evaluated` audit entry per policy with the batch's counts, and the policy's
//!   `findings_matched` and `last_triggered`;
//! - for a dry-run policy, each action it would take, as `action_simulated`;
//! - for an enforced policy, each alert as a delivery in the outbox (`action_planned`,
//!   queued), or, when the tenant denies `read_only`, no delivery and an `action_blocked`
//!   entry; and each tokenize, mask or quarantine as a remediation request: `action_planned`,
//!   or, when the tenant denies its safety class, a request marked `gate = 'denied'` that the
//!   executor ends `blocked` with its receipt and its `action_blocked` entry.
//!
//! The ledger `governance_actions` holds one row per (object version, policy version,
//! action, simulated): what is in it is not done again, so a batch read twice, or findings
//! evaluated again by a scan, do nothing twice. An enforced reconciliation is the exception
//! the spec asks for ("runs remediation on all matching findings, including those processed
//! before"): it plans again the remediations that ended `blocked` or `failed`, and the alerts
//! that ended `blocked`. What ran, or is running, is never done twice; what was undone waits
//! for a new policy version.

use std::collections::{BTreeMap, HashMap};

use diesel::result::Error as DieselError;
use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, PolicyId, ScanId, TenantId};
use policies::document::{Action, ActionType, Mode};
use policies::ledger::{Claim, claim};
use policies::matching::{Finding, ObjectMatch};
use policies::store::{Active, count_matches};
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use super::decide::{Gates, Outcome, PolicyDecision, decide, object_statuses};
use posture::drift::Decisions;

impl Gates {
    /// Reads the gate of every action type an enforced policy of `policies` takes. Call it
    /// outside evaluation's transaction: a failed read allows, and must not abort it.
    pub async fn read(
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        policies: &[Active],
    ) -> Self {
        let mut gates = HashMap::new();
        for policy in policies
            .iter()
            .filter(|p| p.document.spec.mode == Mode::Enforced)
        {
            for action in &policy.document.spec.actions {
                let kind = action.action_type();
                if let std::collections::hash_map::Entry::Vacant(entry) = gates.entry(kind) {
                    entry.insert(
                        settings::remediation_gate(conn, tenant, kind.safety_class()).await,
                    );
                }
            }
        }
        Gates(gates)
    }
}

/// Where a batch comes from, as its audit entries say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Scan(ScanId),
    Reconciliation(Uuid),
}

/// A batch of one connector's findings to evaluate.
#[derive(Debug, Clone)]
pub struct Batch<'a> {
    pub tenant: &'a TenantId,
    pub connector: ConnectorId,
    pub origin: Origin,
    /// Objects the batch covers, matched or not.
    pub objects: usize,
    pub findings: &'a [Finding],
    /// Run the actions of enforced policies (a dry-run reconciliation only simulates).
    pub enforce: bool,
}

/// What evaluating a batch did, summed over its policies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub findings_evaluated: u64,
    pub findings_matched: u64,
    pub planned: u64,
    /// Of `planned`, the object-changing ones (tokenize, mask, quarantine): what a
    /// reconciliation's `max_actions` limits.
    pub changes: u64,
    pub simulated: u64,
    pub blocked: u64,
    /// Already in the ledger: not done again.
    pub repeated: u64,
}

impl Tally {
    pub fn add(&mut self, other: Tally) {
        self.findings_evaluated += other.findings_evaluated;
        self.findings_matched += other.findings_matched;
        self.planned += other.planned;
        self.changes += other.changes;
        self.simulated += other.simulated;
        self.blocked += other.blocked;
        self.repeated += other.repeated;
    }
}

/// An alert's audit details: the channels it goes to and its highest severity.
fn alert_details(details: &mut Value, targets: &[(&str, policies::document::Severity)]) {
    details["channels"] = json!(targets.iter().map(|(c, _)| *c).collect::<Vec<_>>());
    if let Some(highest) = targets.iter().map(|(_, s)| *s).max() {
        details["severity"] = json!(highest.as_str());
    }
}

/// The alert payload: the policy, the severity, where, which types and how many. Never a
/// value or a preview.
fn alert_payload(
    delivery: Uuid,
    batch: &Batch<'_>,
    policy: &Active,
    severity: &str,
    object: &ObjectMatch<'_>,
    now: OffsetDateTime,
) -> Value {
    let (tenant, connector, origin) = (batch.tenant, batch.connector, batch.origin);
    let counts: BTreeMap<&str, usize> = object.counts();
    let mut payload = json!({
        "type": "governance.alert",
        "delivery_id": delivery.to_string(),
        "tenant_id": tenant.as_str(),
        "policy": {
            "id": policy.id.to_string(),
            "name": policy.document.metadata.name,
            "version": policy.version,
        },
        "severity": severity,
        "connector_id": connector.to_string(),
        "resource": object.resource(),
        "pii_types": object.pii_types(),
        "counts": { "findings": object.values(), "by_pii_type": counts },
        "created_at": audit::timestamp(now),
    });
    match origin {
        Origin::Scan(scan) => payload["scan_id"] = json!(scan.to_string()),
        Origin::Reconciliation(id) => payload["reconciliation_id"] = json!(id.to_string()),
    }
    payload
}

fn origin_details(origin: Origin) -> (&'static str, String) {
    match origin {
        Origin::Scan(scan) => ("scan_id", scan.to_string()),
        Origin::Reconciliation(id) => ("reconciliation_id", id.to_string()),
    }
}

/// Evaluates the batch against `policies` (those of the tenant; the ones whose scope leaves
/// the connector out are skipped) and writes everything it decided. Call it in a transaction.
pub async fn apply(
    conn: &mut AsyncPgConnection,
    batch: &Batch<'_>,
    policies: &[Active],
    gates: &Gates,
) -> Result<Tally, DieselError> {
    apply_with_decisions(conn, batch, policies, gates)
        .await
        .map(|(tally, _)| tally)
}

/// Like [`apply`], and also says, per object, which policies matched it and what remediation
/// follows (for drift events).
///
/// [`decide`] decides; then, one statement each whatever the batch's size: the ledger claims
/// every decision, and says which were done before; the channels of alerts queued again are
/// read; and the policies' counters, the alert deliveries, the remediation requests and the
/// audit entries are written.
pub async fn apply_with_decisions(
    conn: &mut AsyncPgConnection,
    batch: &Batch<'_>,
    policies: &[Active],
    gates: &Gates,
) -> Result<(Tally, Decisions), DieselError> {
    let now = OffsetDateTime::now_utc();
    let decisions = decide(
        batch.connector,
        batch.findings,
        policies,
        gates,
        batch.enforce,
    );
    let claims = claims(&decisions);
    let reconciliation = match batch.origin {
        Origin::Reconciliation(id) => Some(id),
        Origin::Scan(_) => None,
    };
    let claimed = claim(
        conn,
        batch.tenant,
        batch.connector,
        &claims,
        now,
        reconciliation,
    )
    .await?;
    // An alert queued again (it ended blocked) goes only to the channels it has not reached
    // and is not on its way to: a receiver that got it must not get it again under a new
    // delivery id.
    let again: Vec<Uuid> = claims
        .iter()
        .filter(|c| c.kind == ActionType::Alert)
        .filter_map(|c| claimed.get(&c.id).filter(|action| **action != c.id))
        .copied()
        .collect();
    let reached = alerts::queue::reached(conn, batch.tenant, &again).await?;
    let effects = effects(batch, &decisions, &claims, &claimed, &reached, now);
    count_matches(conn, batch.tenant, &effects.matched, now).await?;
    alerts::queue::queue(conn, batch.tenant, &effects.deliveries, now).await?;
    remediation::store::plan(conn, batch.tenant, &effects.requests, now).await?;
    audit::append(conn, batch.tenant, &effects.entries).await?;
    Ok((effects.tally, object_statuses(&decisions)))
}

/// One ledger claim per decision's action and object, in that order (policy, action,
/// object), which [`effects`] walks again.
fn claims<'a>(decisions: &'a [PolicyDecision<'a>]) -> Vec<Claim<'a>> {
    decisions
        .iter()
        .flat_map(|decision| {
            decision.actions.iter().flat_map(move |action| {
                decision.objects.iter().map(move |object| Claim {
                    id: Uuid::now_v7(),
                    policy: decision.policy,
                    kind: action.kind,
                    simulated: decision.simulated,
                    object,
                    outcome: action.outcome.claimed(action.kind),
                })
            })
        })
        .collect()
}

/// What a batch's decisions write, once the ledger said which are new.
#[derive(Default)]
struct Effects {
    tally: Tally,
    /// Findings matched per policy that matched any.
    matched: Vec<(PolicyId, i64)>,
    deliveries: Vec<alerts::queue::NewDelivery>,
    requests: Vec<remediation::store::NewRequest>,
    /// Per policy, its `policy_evaluated` entry, then its actions' entries.
    entries: Vec<audit::NewEntry>,
}

/// The writes that follow from `decisions`: for each claim the ledger returned in `claimed`
/// (claim id → action id), its delivery or request and its audit entry; for each policy, its
/// counts. `reached` holds the channels of the alerts queued again. No I/O.
fn effects(
    batch: &Batch<'_>,
    decisions: &[PolicyDecision<'_>],
    claims: &[Claim<'_>],
    claimed: &HashMap<Uuid, Uuid>,
    reached: &HashMap<Uuid, Vec<String>>,
    now: OffsetDateTime,
) -> Effects {
    let mut effects = Effects::default();
    let (origin_key, origin_id) = origin_details(batch.origin);
    let mut claims = claims.iter();
    for decision in decisions {
        let policy = decision.policy;
        let matched = decision.findings_matched();
        let mut tally = Tally {
            findings_evaluated: policies::matching::values(batch.findings) as u64,
            findings_matched: matched as u64,
            ..Tally::default()
        };
        let mut by_action: BTreeMap<&str, u64> = BTreeMap::new();
        let mut entries = Vec::new();
        for action in &decision.actions {
            let (kind, outcome) = (action.kind, action.outcome);
            let fresh: Vec<(&ObjectMatch<'_>, Uuid)> = decision
                .objects
                .iter()
                .zip(claims.by_ref())
                .filter_map(|(object, c)| claimed.get(&c.id).map(|id| (object, *id)))
                .collect();
            tally.repeated += (decision.objects.len() - fresh.len()) as u64;
            *by_action.entry(kind.as_str()).or_default() += fresh.len() as u64;
            for (object, action_id) in fresh {
                // A denied remediation is a request too, whose entry the executor writes with
                // its receipt when it ends it `blocked`: none here. A denied alert ends here.
                let entry_kind = match outcome {
                    Outcome::Simulated => {
                        tally.simulated += 1;
                        Some(audit::Kind::ActionSimulated)
                    }
                    Outcome::Blocked => {
                        tally.blocked += 1;
                        (!kind.changes_objects()).then_some(audit::Kind::ActionBlocked)
                    }
                    Outcome::Queued | Outcome::Planned => {
                        tally.planned += 1;
                        if kind.changes_objects() {
                            tally.changes += 1;
                        }
                        Some(audit::Kind::ActionPlanned)
                    }
                };
                let mut details = json!({
                    origin_key: origin_id,
                    "action_id": action_id.to_string(),
                    "findings": object.values(),
                    "pii_types": object.pii_types(),
                });
                match (action.action, outcome) {
                    (Action::Alert(_), Outcome::Queued) => {
                        let targets = policy.document.alert_targets();
                        alert_details(&mut details, &targets);
                        let reached = reached.get(&action_id).map_or(&[][..], Vec::as_slice);
                        for &(channel, severity) in &targets {
                            if reached.iter().any(|r| r == channel) {
                                continue;
                            }
                            let delivery = Uuid::now_v7();
                            effects.deliveries.push(alerts::queue::NewDelivery {
                                delivery_id: delivery,
                                channel: channel.to_owned(),
                                action_id,
                                payload: alert_payload(
                                    delivery,
                                    batch,
                                    policy,
                                    severity.as_str(),
                                    object,
                                    now,
                                ),
                            });
                        }
                    }
                    (Action::Alert(_), Outcome::Blocked) => {
                        alert_details(&mut details, &policy.document.alert_targets());
                        details["gate"] = json!("denied");
                        details["safety_class"] = json!(kind.safety_class().as_str());
                    }
                    (_, Outcome::Planned | Outcome::Blocked) => {
                        let request = Uuid::now_v7();
                        effects.requests.push(remediation::store::NewRequest {
                            request_id: request,
                            action_id,
                            gate: action.gate,
                        });
                        details["request_id"] = json!(request.to_string());
                        details["gate"] = json!(action.gate.as_str());
                        details["safety_class"] = json!(kind.safety_class().as_str());
                    }
                    _ => {}
                }
                let Some(entry_kind) = entry_kind else {
                    continue;
                };
                entries.push(
                    audit::NewEntry::new(entry_kind, audit::Actor::System)
                        .policy(policy.id, policy.version)
                        .action(kind.as_str())
                        .connector(batch.connector)
                        .resource(object.resource())
                        .simulated(decision.simulated)
                        .outcome(outcome.as_str())
                        .details(details),
                );
            }
        }
        if matched > 0 {
            effects.matched.push((policy.id, matched as i64));
        }
        // The evaluation entry goes before the actions it led to.
        effects.entries.push(
            audit::NewEntry::new(audit::Kind::PolicyEvaluated, audit::Actor::System)
                .policy(policy.id, policy.version)
                .connector(batch.connector)
                .simulated(decision.simulated)
                .outcome("success")
                .details(json!({
                    origin_key: origin_id,
                    "mode": policy.document.spec.mode.as_str(),
                    "objects_evaluated": batch.objects,
                    "objects_matched": decision.objects.len(),
                    "findings_evaluated": tally.findings_evaluated,
                    "findings_matched": matched,
                    "actions": by_action,
                    "repeated": tally.repeated,
                })),
        );
        effects.entries.append(&mut entries);
        effects.tally.add(tally);
    }
    effects
}

//! What a batch of findings makes each policy do, written in the caller's transaction:
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
use ids::{ConnectorId, ScanId, TenantId};
use policies::document::{Action, ActionType, Mode};
use policies::ledger::{Claim, claim};
use policies::matching::{Finding, ObjectMatch, by_object};
use policies::store::{Active, count_matches};
use serde_json::{Value, json};
use settings::Gate;
use time::OffsetDateTime;
use uuid::Uuid;

use posture::drift::Decisions;
use posture::findings::RemediationStatus;

/// What the safety-class gate said for each action type, read before the transaction (a failed
/// read must not abort it: the gate fails open).
#[derive(Debug, Clone, Default)]
pub struct Gates(HashMap<ActionType, Gate>);

impl Gates {
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

    pub(crate) fn of(&self, kind: ActionType) -> Gate {
        self.0.get(&kind).copied().unwrap_or(Gate::Allowed)
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
        "counts": { "findings": object.findings.len(), "by_pii_type": counts },
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
pub async fn apply_with_decisions(
    conn: &mut AsyncPgConnection,
    batch: &Batch<'_>,
    policies: &[Active],
    gates: &Gates,
) -> Result<(Tally, Decisions), DieselError> {
    let mut decisions = Decisions::new();
    let now = OffsetDateTime::now_utc();
    let mut entries: Vec<audit::NewEntry> = Vec::new();
    let mut deliveries: Vec<alerts::queue::NewDelivery> = Vec::new();
    let mut requests: Vec<remediation::store::NewRequest> = Vec::new();
    let mut total = Tally::default();
    let (origin_key, origin_id) = origin_details(batch.origin);
    for policy in policies.iter().filter(|p| p.covers(batch.connector)) {
        let objects = by_object(&policy.document, batch.findings);
        for object in &objects {
            let decision = decisions
                .entry((object.bucket.to_owned(), object.object_key.to_owned()))
                .or_insert_with(|| (Vec::new(), RemediationStatus::None));
            decision.0.push(policy.document.metadata.name.clone());
        }
        let matched: usize = objects.iter().map(|o| o.findings.len()).sum();
        let simulate = policy.document.spec.mode == Mode::DryRun || !batch.enforce;
        let mut tally = Tally {
            findings_evaluated: batch.findings.len() as u64,
            findings_matched: matched as u64,
            ..Tally::default()
        };
        let mut by_action: BTreeMap<&str, u64> = BTreeMap::new();
        let first_entry = entries.len();
        for action in policy.document.acted() {
            let kind = action.action_type();
            let gate = gates.of(kind);
            let outcome = if simulate {
                "simulated"
            } else if !gate.permits() {
                "blocked"
            } else if kind == ActionType::Alert {
                "queued"
            } else {
                "planned"
            };
            for object in &objects {
                if let Some(decision) =
                    decisions.get_mut(&(object.bucket.to_owned(), object.object_key.to_owned()))
                {
                    match outcome {
                        "planned" => decision.1 = RemediationStatus::Pending,
                        "simulated" if decision.1 == RemediationStatus::None => {
                            decision.1 = RemediationStatus::DryRun;
                        }
                        _ => {}
                    }
                }
            }
            let claims: Vec<Claim<'_>> = objects
                .iter()
                .map(|object| Claim {
                    id: Uuid::now_v7(),
                    object,
                    outcome,
                })
                .collect();
            let new = claim(
                conn,
                batch.tenant,
                batch.connector,
                policy,
                kind,
                simulate,
                &claims,
                now,
                match batch.origin {
                    Origin::Reconciliation(id) => Some(id),
                    Origin::Scan(_) => None,
                },
            )
            .await?;
            tally.repeated += (claims.len() - new.len()) as u64;
            let fresh: Vec<(&Claim<'_>, Uuid)> = claims
                .iter()
                .filter_map(|c| new.get(&c.id).map(|action| (c, *action)))
                .collect();
            *by_action.entry(kind.as_str()).or_default() += fresh.len() as u64;
            for &(c, action_id) in &fresh {
                // A denied remediation is a request too, whose entry the executor writes with
                // its receipt when it ends it `blocked`: none here. A denied alert ends here.
                let entry_kind = match outcome {
                    "simulated" => {
                        tally.simulated += 1;
                        Some(audit::Kind::ActionSimulated)
                    }
                    "blocked" => {
                        tally.blocked += 1;
                        (kind == ActionType::Alert).then_some(audit::Kind::ActionBlocked)
                    }
                    _ => {
                        tally.planned += 1;
                        if kind != ActionType::Alert {
                            tally.changes += 1;
                        }
                        Some(audit::Kind::ActionPlanned)
                    }
                };
                let mut details = json!({
                    origin_key: origin_id,
                    "action_id": action_id.to_string(),
                    "findings": c.object.findings.len(),
                    "pii_types": c.object.pii_types(),
                });
                match (action, outcome) {
                    (Action::Alert(_), "queued") => {
                        let targets = policy.document.alert_targets();
                        alert_details(&mut details, &targets);
                        // An alert queued again (it ended blocked) goes only to the channels
                        // it has not reached and is not on its way to: a receiver that got it
                        // must not get it again under a new delivery id.
                        let reached: Vec<String> = if action_id == c.id {
                            Vec::new()
                        } else {
                            alerts::queue::reached(conn, batch.tenant, action_id).await?
                        };
                        for &(channel, severity) in &targets {
                            if reached.iter().any(|r| r == channel) {
                                continue;
                            }
                            let delivery = Uuid::now_v7();
                            deliveries.push(alerts::queue::NewDelivery {
                                delivery_id: delivery,
                                channel: channel.to_owned(),
                                action_id,
                                payload: alert_payload(
                                    delivery,
                                    batch,
                                    policy,
                                    severity.as_str(),
                                    c.object,
                                    now,
                                ),
                            });
                        }
                    }
                    (Action::Alert(_), "blocked") => {
                        alert_details(&mut details, &policy.document.alert_targets());
                        details["gate"] = json!("denied");
                        details["safety_class"] = json!(kind.safety_class().as_str());
                    }
                    (_, "planned" | "blocked") => {
                        let request = Uuid::now_v7();
                        requests.push(remediation::store::NewRequest {
                            request_id: request,
                            action_id,
                            policy: policy.id,
                            policy_version: policy.version,
                            action: kind,
                            connector: batch.connector,
                            bucket: c.object.bucket.to_owned(),
                            object_key: c.object.object_key.to_owned(),
                            etag: c.object.etag.to_owned(),
                            finding_ids: c.object.finding_ids(),
                            gate,
                        });
                        details["request_id"] = json!(request.to_string());
                        details["gate"] = json!(gate.as_str());
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
                        .resource(c.object.resource())
                        .simulated(simulate)
                        .outcome(outcome)
                        .details(details),
                );
            }
        }
        if matched > 0 {
            count_matches(conn, batch.tenant, policy.id, matched as i64, now).await?;
        }
        let mut evaluated =
            audit::NewEntry::new(audit::Kind::PolicyEvaluated, audit::Actor::System)
                .policy(policy.id, policy.version)
                .connector(batch.connector)
                .simulated(simulate)
                .outcome("success")
                .details(json!({
                    origin_key: origin_id,
                    "mode": policy.document.spec.mode.as_str(),
                    "objects_evaluated": batch.objects,
                    "objects_matched": objects.len(),
                    "findings_evaluated": batch.findings.len(),
                    "findings_matched": matched,
                    "actions": by_action,
                    "repeated": tally.repeated,
                }));
        // The evaluation entry goes before the actions it led to.
        evaluated.simulated = simulate;
        entries.insert(first_entry, evaluated);
        total.add(tally);
    }
    alerts::queue::queue(conn, batch.tenant, &deliveries, now).await?;
    remediation::store::plan(conn, batch.tenant, &requests, now).await?;
    audit::append(conn, batch.tenant, &entries).await?;
    Ok((total, decisions))
}

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

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, Bool, Integer, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, ScanId, TenantId};
use serde_json::{Value, json};
use settings::Gate;
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{governance_deliveries, remediation_requests};

use crate::drift::Decisions;
use crate::findings::RemediationStatus;
use policies::document::{Action, ActionType, Mode};
use policies::matching::{Finding, ObjectMatch, by_object};
use policies::store::{Active, count_matches};

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

/// One ledger row to claim.
struct Claim<'a> {
    id: Uuid,
    object: &'a ObjectMatch<'a>,
    outcome: &'static str,
}

#[derive(QueryableByName)]
struct Reopened {
    #[diesel(sql_type = SqlUuid)]
    action_id: Uuid,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Text)]
    etag: String,
}

/// Writes ledger rows for the claims and returns, for each claim that is to be acted on, its
/// id and the ledger's id of the action: the claim's own for a new row, the existing row's for
/// a remediation an enforced reconciliation plans again.
#[allow(clippy::too_many_arguments, reason = "one row's columns")]
async fn claim(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    policy: &Active,
    kind: ActionType,
    simulated: bool,
    claims: &[Claim<'_>],
    now: OffsetDateTime,
    reconciliation: Option<Uuid>,
) -> Result<HashMap<Uuid, Uuid>, DieselError> {
    if claims.is_empty() {
        return Ok(HashMap::new());
    }
    // Only an enforced reconciliation plans an action again: a remediation that ended blocked
    // or failed, an alert that ended blocked (the conflict's update locks the row; scans keep
    // `DO NOTHING`). A failed alert was tried for a day; a queued one is on its way.
    let statement = match (reconciliation.is_some() && !simulated, kind) {
        (false, _) => CLAIM,
        (true, ActionType::Alert) => REPLAN_ALERT,
        (true, _) => REPLAN,
    };
    let ids: Vec<Uuid> = claims.iter().map(|c| c.id).collect();
    let buckets: Vec<&str> = claims.iter().map(|c| c.object.bucket).collect();
    let keys: Vec<&str> = claims.iter().map(|c| c.object.object_key).collect();
    let etags: Vec<&str> = claims.iter().map(|c| c.object.etag).collect();
    // A denied remediation is planned in the ledger: it is `blocked` once the executor ended
    // its request, and only an ended request may be planned again. A denied alert has no
    // executor: it is blocked at once.
    let outcomes: Vec<&str> = claims
        .iter()
        .map(|c| match c.outcome {
            "blocked" if kind != ActionType::Alert => "planned",
            outcome => outcome,
        })
        .collect();
    // Finding ids travel as one text array of comma-joined ids per row (arrays of arrays
    // cannot be ragged).
    let findings: Vec<String> = claims
        .iter()
        .map(|c| {
            c.object
                .finding_ids()
                .iter()
                .map(Uuid::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let rows: Vec<Reopened> = db::sql(statement)
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(policy.id.as_uuid())
        .bind::<Integer, _>(policy.version)
        .bind::<Text, _>(kind.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Bool, _>(simulated)
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<Array<Text>, _>(&buckets)
        .bind::<Array<Text>, _>(&keys)
        .bind::<Array<Text>, _>(&etags)
        .bind::<Array<Text>, _>(&outcomes)
        .bind::<diesel::sql_types::Timestamptz, _>(now)
        .bind::<Array<Text>, _>(&findings)
        .bind::<diesel::sql_types::Nullable<SqlUuid>, _>(reconciliation)
        .load(conn)
        .await?;
    // A batch holds each object version once, so the version names the claim.
    let by_version: HashMap<(&str, &str, &str), Uuid> = claims
        .iter()
        .map(|c| ((c.object.bucket, c.object.object_key, c.object.etag), c.id))
        .collect();
    Ok(rows
        .iter()
        .filter_map(|r| {
            by_version
                .get(&(r.bucket.as_str(), r.object_key.as_str(), r.etag.as_str()))
                .map(|claim| (*claim, r.action_id))
        })
        .collect())
}

/// The claims' ledger rows, inserted where no row holds their object version yet (an undone
/// remediation is not applied again until the policy version changes), then `$conflict`.
macro_rules! claim_sql {
    ($conflict:expr) => {
        concat!(
            "INSERT INTO governance_actions (tenant_id, action_id, policy_id, policy_version,
                    action_type, connector_id, bucket, object_key, etag, simulated, outcome,
                    finding_ids, created_at, updated_at, reconciliation_id)
             SELECT $1, a.id, $2, $3, $4, $5, a.bucket, a.object_key, a.etag, $6, a.outcome,
                    string_to_array(a.findings, ',')::uuid[], $12, $12, $14
               FROM unnest($7::uuid[], $8::text[], $9::text[], $10::text[], $11::text[],
                           $13::text[]) AS a(id, bucket, object_key, etag, outcome, findings)
              WHERE $6 OR NOT EXISTS (
                    SELECT 1 FROM remediation_requests r
                     WHERE r.tenant_id = $1 AND r.connector_id = $5 AND r.bucket = a.bucket
                       AND r.object_key = a.object_key AND r.policy_id = $2
                       AND r.policy_version = $3 AND r.action_type = $4
                       AND r.status = 'undone') ",
            $conflict,
            " RETURNING action_id, bucket, object_key, etag"
        )
    };
}

/// New rows only.
const CLAIM: &str = claim_sql!("ON CONFLICT DO NOTHING");

/// New rows, and a row whose outcome is one of `$outcomes` taken again under its own action
/// id.
macro_rules! replan_sql {
    ($outcomes:literal) => {
        claim_sql!(concat!(
            "ON CONFLICT (tenant_id, connector_id, bucket, object_key, etag, policy_id,
                          policy_version, action_type, simulated)
             DO UPDATE SET outcome = EXCLUDED.outcome, finding_ids = EXCLUDED.finding_ids,
                           updated_at = EXCLUDED.updated_at,
                           reconciliation_id = EXCLUDED.reconciliation_id
              WHERE governance_actions.outcome IN ",
            $outcomes
        ))
    };
}

/// A remediation that ended blocked or failed is planned again.
const REPLAN: &str = replan_sql!("('blocked', 'failed')");

/// An alert that ended blocked is queued again.
const REPLAN_ALERT: &str = replan_sql!("('blocked')");

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
                        Some("action_simulated")
                    }
                    "blocked" => {
                        tally.blocked += 1;
                        (kind == ActionType::Alert).then_some("action_blocked")
                    }
                    _ => {
                        tally.planned += 1;
                        if kind != ActionType::Alert {
                            tally.changes += 1;
                        }
                        Some("action_planned")
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
                            governance_deliveries::table
                                .filter(governance_deliveries::tenant_id.eq(batch.tenant.as_str()))
                                .filter(governance_deliveries::action_id.eq(action_id))
                                .filter(
                                    governance_deliveries::status.eq_any(["delivered", "pending"]),
                                )
                                .select(governance_deliveries::channel)
                                .load(conn)
                                .await?
                        };
                        for &(channel, severity) in &targets {
                            if reached.iter().any(|r| r == channel) {
                                continue;
                            }
                            let delivery = Uuid::now_v7();
                            let payload = alert_payload(
                                delivery,
                                batch,
                                policy,
                                severity.as_str(),
                                c.object,
                                now,
                            );
                            diesel::insert_into(governance_deliveries::table)
                                .values((
                                    governance_deliveries::tenant_id.eq(batch.tenant.as_str()),
                                    governance_deliveries::delivery_id.eq(delivery),
                                    governance_deliveries::channel.eq(channel),
                                    governance_deliveries::action_id.eq(action_id),
                                    governance_deliveries::payload.eq(payload),
                                    governance_deliveries::next_attempt_at.eq(now),
                                    governance_deliveries::created_at.eq(now),
                                ))
                                .execute(conn)
                                .await?;
                        }
                    }
                    (Action::Alert(_), "blocked") => {
                        alert_details(&mut details, &policy.document.alert_targets());
                        details["gate"] = json!("denied");
                        details["safety_class"] = json!(kind.safety_class().as_str());
                    }
                    (_, "planned" | "blocked") => {
                        let request = Uuid::now_v7();
                        let gate_said = match gate {
                            Gate::Denied => "denied",
                            Gate::AllowedPolicyUnreadable => "gate_unavailable",
                            Gate::Allowed => "allowed",
                        };
                        diesel::insert_into(remediation_requests::table)
                            .values((
                                remediation_requests::tenant_id.eq(batch.tenant.as_str()),
                                remediation_requests::request_id.eq(request),
                                remediation_requests::action_id.eq(action_id),
                                remediation_requests::policy_id.eq(policy.id.as_uuid()),
                                remediation_requests::policy_version.eq(policy.version),
                                remediation_requests::action_type.eq(kind.as_str()),
                                remediation_requests::connector_id.eq(batch.connector.as_uuid()),
                                remediation_requests::bucket.eq(c.object.bucket),
                                remediation_requests::object_key.eq(c.object.object_key),
                                remediation_requests::etag.eq(c.object.etag),
                                remediation_requests::finding_ids.eq(c.object.finding_ids()),
                                remediation_requests::gate.eq(gate_said),
                                remediation_requests::created_at.eq(now),
                                remediation_requests::updated_at.eq(now),
                            ))
                            .execute(conn)
                            .await?;
                        details["request_id"] = json!(request.to_string());
                        details["gate"] = json!(gate_said);
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
        let mut evaluated = audit::NewEntry::new("policy_evaluated", audit::Actor::System)
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
    audit::append(conn, batch.tenant, &entries).await?;
    Ok((total, decisions))
}

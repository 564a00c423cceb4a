//! Reconciliation: every open finding in scope evaluated again, on request.
//!
//! `POST /governance/reconcile` queues one ([`request`]); a background task runs it
//! ([`run::spawn`]). A run first computes its plan with set-based SQL ([`preview`]): per
//! policy and action, the objects and findings it matches and how many of those actions the
//! ledger says were already taken. A dry-run reconciliation stops there: the plan is the
//! answer, and nothing is claimed, queued or changed. An enforced one checks the plan against
//! its blast-radius limit (object-changing actions it would newly plan), and either ends
//! `blocked_by_limit` having done nothing, or walks the findings object by object through the
//! same evaluation as a scan's batches ([`crate::evaluate::apply`]), whose ledger keeps every
//! action to once per object version and policy version. The limit holds while it walks too:
//! a step that would take it over (requests that failed since the plan, planned again) is
//! rolled back and the run ends `blocked_by_limit` part-way, what it planned before standing.

pub mod preview;
pub mod run;

use std::collections::BTreeSet;

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, PolicyId, ReconciliationId, TenantId, UserId};
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{governance_actions, governance_policies, governance_reconciliations};

use policies::document::{Pointer, Problem};

/// The limit when neither the request nor `DPS_RECONCILE_MAX_ACTIONS` sets one.
pub const DEFAULT_MAX_ACTIONS: u32 = 1000;
/// The highest limit a request may set.
pub const MAX_MAX_ACTIONS: u32 = 1_000_000;
/// Connectors or policies a scope may name.
pub const MAX_SCOPE_IDS: usize = 100;

/// dry-run previews; enforced acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    DryRun,
    Enforced,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::DryRun => "dry-run",
            Mode::Enforced => "enforced",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "dry-run" => Some(Mode::DryRun),
            "enforced" => Some(Mode::Enforced),
            _ => None,
        }
    }
}

// Mode and status are stored as their names; an unknown name read back is an error.
db::text_enum!(Mode);
db::text_enum!(Status);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Queued,
    Running,
    Completed,
    BlockedByLimit,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::BlockedByLimit => "blocked_by_limit",
            Status::Failed => "failed",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [
            Status::Queued,
            Status::Running,
            Status::Completed,
            Status::BlockedByLimit,
            Status::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == raw)
    }
}

/// What a reconciliation looks at; an empty list means all of the tenant's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub connectors: Vec<ConnectorId>,
    pub policies: Vec<PolicyId>,
}

impl Scope {
    fn to_value(&self) -> Value {
        json!({
            "connectors": self.connectors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "policies": self.policies.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })
    }

    fn from_value(value: &Value) -> Option<Self> {
        let ids = |key: &str| -> Option<Vec<Uuid>> {
            value
                .get(key)?
                .as_array()?
                .iter()
                .map(|v| v.as_str().and_then(|s| Uuid::parse_str(s).ok()))
                .collect()
        };
        Some(Scope {
            connectors: ids("connectors")?
                .into_iter()
                .map(ConnectorId::from_uuid)
                .collect(),
            policies: ids("policies")?
                .into_iter()
                .map(PolicyId::from_uuid)
                .collect(),
        })
    }
}

/// A request to reconcile.
#[derive(Debug, Clone)]
pub struct Request {
    pub mode: Mode,
    pub scope: Scope,
    /// Object-changing actions an enforced run may newly plan; more executes nothing.
    pub max_actions: u32,
}

/// How far a reconciliation got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Counts {
    /// Open findings in scope.
    pub findings_evaluated: u64,
    /// Of those, findings some policy in scope matches.
    pub findings_matched: u64,
    pub actions_planned: u64,
    pub actions_executed: u64,
    pub actions_simulated: u64,
    pub actions_blocked: u64,
    pub actions_failed: u64,
    /// Matched, but the ledger says already taken for this object and policy version.
    pub actions_repeated: u64,
    /// Object-changing actions the plan would newly take when enforced: what the limit is
    /// checked against.
    pub changes_planned: u64,
    /// Object-changing actions of the policies in scope that another path (a scan's
    /// evaluation of findings recorded after the policy) planned while an enforced run went:
    /// not this reconciliation's, and not counted against its limit.
    pub changes_planned_elsewhere: u64,
}

/// One line of a plan: what one action of one policy would do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanItem {
    pub policy_id: String,
    pub policy_name: String,
    pub policy_version: i32,
    pub action_type: String,
    /// simulated (a dry-run policy), queued (an alert), planned, or blocked (the tenant's
    /// remediation policy denies the action's safety class): what an enforced run does.
    pub outcome: String,
    pub objects: u64,
    pub findings: u64,
    /// Objects for which the ledger holds this action already.
    pub repeated: u64,
}

/// A reconciliation, as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciliation {
    pub id: Uuid,
    pub mode: Mode,
    pub scope: Scope,
    pub max_actions: u32,
    pub status: Status,
    pub requested_by: String,
    pub counts: Counts,
    pub plan: Vec<PlanItem>,
    pub error: Option<String>,
    pub created_at: OffsetDateTime,
    pub started_at: Option<OffsetDateTime>,
    pub ended_at: Option<OffsetDateTime>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("the request is invalid")]
    Invalid(Vec<Problem>),
    #[error("a reconciliation is already queued or running for this tenant")]
    Busy(Uuid),
    #[error("no reconciliation with this id in the tenant")]
    NotFound,
    #[error("a stored reconciliation is unreadable")]
    CorruptRow,
    #[error("database error")]
    Database(#[from] DieselError),
}

/// Queues a reconciliation after checking that its scope names only the tenant's connectors
/// and policies. One per tenant at a time: another queued or running one is
/// [`ReconcileError::Busy`].
pub async fn request(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    user: &UserId,
    request: &Request,
) -> Result<Reconciliation, ReconcileError> {
    let problems = check_scope(conn, tenant, &request.scope).await?;
    if !problems.is_empty() {
        return Err(ReconcileError::Invalid(problems));
    }
    let id = Uuid::now_v7();
    let now = OffsetDateTime::now_utc();
    let scope = request.scope.to_value();
    let max_actions = i32::try_from(request.max_actions).unwrap_or(i32::MAX);
    let inserted = conn
        .transaction(async |conn| {
            diesel::insert_into(governance_reconciliations::table)
                .values((
                    governance_reconciliations::tenant_id.eq(tenant.as_str()),
                    governance_reconciliations::reconciliation_id.eq(id),
                    governance_reconciliations::mode.eq(request.mode.as_str()),
                    governance_reconciliations::scope.eq(&scope),
                    governance_reconciliations::max_actions.eq(max_actions),
                    governance_reconciliations::requested_by.eq(user.as_str()),
                    governance_reconciliations::created_at.eq(now),
                ))
                .execute(conn)
                .await?;
            audit::append(
                conn,
                tenant,
                &[audit::NewEntry::new(
                    audit::Kind::ReconciliationStarted,
                    audit::Actor::User(user.clone()),
                )
                .simulated(request.mode == Mode::DryRun)
                .outcome("queued")
                .details(json!({
                    "reconciliation_id": id.to_string(),
                    "mode": request.mode.as_str(),
                    "scope": scope,
                    "max_actions": request.max_actions,
                }))],
            )
            .await?;
            Ok::<_, DieselError>(())
        })
        .await;
    match inserted {
        Ok(()) => {}
        Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
            let busy: Uuid = governance_reconciliations::table
                .filter(governance_reconciliations::tenant_id.eq(tenant.as_str()))
                .filter(governance_reconciliations::status.eq_any(["queued", "running"]))
                .select(governance_reconciliations::reconciliation_id)
                .first(conn)
                .await
                .optional()?
                .unwrap_or(Uuid::nil());
            return Err(ReconcileError::Busy(busy));
        }
        Err(e) => return Err(e.into()),
    }
    // The answer says what this request did, queue it, whatever a runner (another task, or
    // another replica) has done with it since the commit.
    let mut created = get(conn, tenant, ReconciliationId::from_uuid(id)).await?;
    created.status = Status::Queued;
    Ok(created)
}

/// Names every connector and policy of the scope the tenant lacks, and a scope too large.
async fn check_scope(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scope: &Scope,
) -> Result<Vec<Problem>, DieselError> {
    let mut problems = Vec::new();
    let found = connectors::store::existing(conn, tenant, &scope.connectors).await?;
    for (i, id) in scope.connectors.iter().enumerate() {
        if !found.contains(id) {
            problems.push(Problem::at(
                &Pointer::root().key("scope").key("connectors").index(i),
                "no connector with this id in the tenant",
            ));
        }
    }
    let wanted: Vec<Uuid> = scope.policies.iter().map(PolicyId::as_uuid).collect();
    let policies: BTreeSet<Uuid> = if wanted.is_empty() {
        BTreeSet::new()
    } else {
        governance_policies::table
            .filter(governance_policies::tenant_id.eq(tenant.as_str()))
            .filter(governance_policies::policy_id.eq_any(&wanted))
            .select(governance_policies::policy_id)
            .load::<Uuid>(conn)
            .await?
            .into_iter()
            .collect()
    };
    for (i, id) in wanted.iter().enumerate() {
        if !policies.contains(id) {
            problems.push(Problem::at(
                &Pointer::root().key("scope").key("policies").index(i),
                "no governance policy with this id in the tenant",
            ));
        }
    }
    Ok(problems)
}

type Row = (
    Uuid,
    Mode,
    Value,
    i32,
    Status,
    String,
    Value,
    Value,
    Option<String>,
    OffsetDateTime,
    Option<OffsetDateTime>,
    Option<OffsetDateTime>,
);

/// One reconciliation of the tenant, with its executed and failed counts as they stand: the
/// alerts it queued are delivered, and its remediation requests executed, after it ends.
pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ReconciliationId,
) -> Result<Reconciliation, ReconcileError> {
    let id = id.as_uuid();
    let row: Option<Row> = governance_reconciliations::table
        .filter(governance_reconciliations::tenant_id.eq(tenant.as_str()))
        .filter(governance_reconciliations::reconciliation_id.eq(id))
        .select((
            governance_reconciliations::reconciliation_id,
            governance_reconciliations::mode,
            governance_reconciliations::scope,
            governance_reconciliations::max_actions,
            governance_reconciliations::status,
            governance_reconciliations::requested_by,
            governance_reconciliations::counts,
            governance_reconciliations::plan,
            governance_reconciliations::error,
            governance_reconciliations::created_at,
            governance_reconciliations::started_at,
            governance_reconciliations::ended_at,
        ))
        .first(conn)
        .await
        .optional()?;
    let row = row.ok_or(ReconcileError::NotFound)?;
    let mut reconciliation = from_row(row).ok_or(ReconcileError::CorruptRow)?;
    let outcomes: Vec<(String, i64)> = governance_actions::table
        .filter(governance_actions::tenant_id.eq(tenant.as_str()))
        .filter(governance_actions::reconciliation_id.eq(id))
        .filter(governance_actions::outcome.eq_any(["executed", "failed"]))
        .group_by(governance_actions::outcome)
        .select((governance_actions::outcome, diesel::dsl::count_star()))
        .load(conn)
        .await?;
    for (outcome, n) in outcomes {
        let n = u64::try_from(n).unwrap_or(0);
        match outcome.as_str() {
            "executed" => reconciliation.counts.actions_executed = n,
            _ => reconciliation.counts.actions_failed = n,
        }
    }
    Ok(reconciliation)
}

fn from_row(row: Row) -> Option<Reconciliation> {
    let (id, mode, scope, max, status, by, counts, plan, error, created, started, ended) = row;
    Some(Reconciliation {
        id,
        mode,
        scope: Scope::from_value(&scope)?,
        max_actions: u32::try_from(max).ok()?,
        status,
        requested_by: by,
        counts: serde_json::from_value(counts).ok()?,
        plan: serde_json::from_value(plan).ok()?,
        error,
        created_at: created,
        started_at: started,
        ended_at: ended,
    })
}

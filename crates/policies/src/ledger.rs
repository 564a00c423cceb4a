//! The ledger `governance_actions`: one row per (object version, policy version, action,
//! simulated), what evaluation decided and, once the doer has acted, its outcome. What is in it
//! is not done again, so a batch read twice, or findings evaluated again by a scan, do nothing
//! twice. An enforced reconciliation is the exception the spec asks for: it plans again the
//! remediations that ended `blocked` or `failed`, and the alerts that ended `blocked`.
//!
//! Evaluation claims rows ([`claim`]); the doers record outcomes: alert delivery through
//! [`set_outcome`], remediation inside the statement of its own transition, composed with
//! [`ledger_outcome_sql!`](crate::ledger_outcome_sql) so that the ledger follows the request
//! atomically.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, Bool, Integer, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::governance_actions;

use crate::document::ActionType;
use crate::matching::ObjectMatch;
use crate::store::Active;

/// One ledger row to claim.
#[derive(Debug)]
pub struct Claim<'a> {
    pub id: Uuid,
    pub object: &'a ObjectMatch<'a>,
    pub outcome: &'static str,
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
pub async fn claim(
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

/// Records the outcome of an action its doer ended (an alert delivered, failed or blocked).
pub async fn set_outcome(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    action_id: Uuid,
    outcome: &str,
    now: OffsetDateTime,
) -> Result<(), DieselError> {
    diesel::update(governance_actions::table)
        .filter(governance_actions::tenant_id.eq(tenant.as_str()))
        .filter(governance_actions::action_id.eq(action_id))
        .set((
            governance_actions::outcome.eq(outcome),
            governance_actions::updated_at.eq(now),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// The ledger's part of a remediation's transition, as a data-modifying CTE body: sets the
/// outcome `$outcome` (a text placeholder; nothing when it is NULL) of the actions of the rows
/// of `$moved` (a CTE with `tenant_id` and `action_id`). For `concat!`, so that the statement
/// stays static text that each connection prepares once.
#[macro_export]
macro_rules! ledger_outcome_sql {
    ($moved:literal, $outcome:literal) => {
        concat!(
            "UPDATE governance_actions a SET outcome = ",
            $outcome,
            ", updated_at = now()
                  FROM ",
            $moved,
            "
                 WHERE ",
            $outcome,
            "::text IS NOT NULL
                   AND a.tenant_id = ",
            $moved,
            ".tenant_id AND a.action_id = ",
            $moved,
            ".action_id"
        )
    };
}

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

/// One ledger row to claim: an action of a policy version on one object version.
#[derive(Debug)]
pub struct Claim<'a> {
    pub id: Uuid,
    pub policy: &'a Active,
    pub kind: ActionType,
    pub simulated: bool,
    pub object: &'a ObjectMatch<'a>,
    /// What the ledger records now (`planned`, `queued`, `simulated` or `blocked`).
    pub outcome: &'static str,
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = SqlUuid)]
    action_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    policy_id: Uuid,
    #[diesel(sql_type = Text)]
    action_type: ActionType,
    #[diesel(sql_type = Bool)]
    simulated: bool,
    #[diesel(sql_type = Text)]
    bucket: String,
    #[diesel(sql_type = Text)]
    object_key: String,
    #[diesel(sql_type = Text)]
    etag: String,
}

/// Writes the ledger rows of `claims`, all of one connector's batch, in one statement, and
/// returns, for each claim that is to be acted on, its id and the ledger's id of the action:
/// the claim's own for a new row, the existing row's for an action an enforced
/// reconciliation (`reconciliation`, with some claim not simulated) plans again. What is not
/// returned was done before: it is not done again.
pub async fn claim(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    claims: &[Claim<'_>],
    now: OffsetDateTime,
    reconciliation: Option<Uuid>,
) -> Result<HashMap<Uuid, Uuid>, DieselError> {
    if claims.is_empty() {
        return Ok(HashMap::new());
    }
    // Only an enforced reconciliation plans an action again (the conflict's update locks the
    // row; scans keep `DO NOTHING`).
    let statement = if reconciliation.is_some() && claims.iter().any(|c| !c.simulated) {
        REPLAN
    } else {
        CLAIM
    };
    let ids: Vec<Uuid> = claims.iter().map(|c| c.id).collect();
    let policies: Vec<Uuid> = claims.iter().map(|c| c.policy.id.as_uuid()).collect();
    let versions: Vec<i32> = claims.iter().map(|c| c.policy.version).collect();
    let kinds: Vec<&str> = claims.iter().map(|c| c.kind.as_str()).collect();
    let simulated: Vec<bool> = claims.iter().map(|c| c.simulated).collect();
    let buckets: Vec<&str> = claims.iter().map(|c| c.object.bucket).collect();
    let keys: Vec<&str> = claims.iter().map(|c| c.object.object_key).collect();
    let etags: Vec<&str> = claims.iter().map(|c| c.object.etag).collect();
    let outcomes: Vec<&str> = claims.iter().map(|c| c.outcome).collect();
    // Finding ids travel as one text array of comma-joined ids per row (arrays of arrays
    // cannot be ragged). A remediation request takes its findings from its ledger row.
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
    let rows: Vec<Claimed> = db::sql(statement)
        .bind::<Text, _>(tenant.as_str())
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<diesel::sql_types::Timestamptz, _>(now)
        .bind::<diesel::sql_types::Nullable<SqlUuid>, _>(reconciliation)
        .bind::<Array<SqlUuid>, _>(&ids)
        .bind::<Array<SqlUuid>, _>(&policies)
        .bind::<Array<Integer>, _>(&versions)
        .bind::<Array<Text>, _>(&kinds)
        .bind::<Array<Bool>, _>(&simulated)
        .bind::<Array<Text>, _>(&buckets)
        .bind::<Array<Text>, _>(&keys)
        .bind::<Array<Text>, _>(&etags)
        .bind::<Array<Text>, _>(&outcomes)
        .bind::<Array<Text>, _>(&findings)
        .load(conn)
        .await?;
    // A batch holds each object version once per policy, and a policy each action type once
    // (`PolicyDocument::acted`): the row's key names its claim.
    type Key<'k> = (Uuid, ActionType, bool, &'k str, &'k str, &'k str);
    let by_key: HashMap<Key<'_>, Uuid> = claims
        .iter()
        .map(|c| {
            let o = c.object;
            let key = (
                c.policy.id.as_uuid(),
                c.kind,
                c.simulated,
                o.bucket,
                o.object_key,
                o.etag,
            );
            (key, c.id)
        })
        .collect();
    Ok(rows
        .iter()
        .filter_map(|r| {
            let key = (
                r.policy_id,
                r.action_type,
                r.simulated,
                r.bucket.as_str(),
                r.object_key.as_str(),
                r.etag.as_str(),
            );
            by_key.get(&key).map(|claim| (*claim, r.action_id))
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
             SELECT $1, a.id, a.policy_id, a.version, a.kind, $2, a.bucket, a.object_key,
                    a.etag, a.simulated, a.outcome, string_to_array(a.findings, ',')::uuid[],
                    $3, $3, $4
               FROM unnest($5::uuid[], $6::uuid[], $7::int4[], $8::text[], $9::bool[],
                           $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
                    AS a(id, policy_id, version, kind, simulated, bucket, object_key, etag,
                         outcome, findings)
              WHERE a.simulated OR NOT EXISTS (
                    SELECT 1 FROM remediation_requests r
                     WHERE r.tenant_id = $1 AND r.connector_id = $2 AND r.bucket = a.bucket
                       AND r.object_key = a.object_key AND r.policy_id = a.policy_id
                       AND r.policy_version = a.version AND r.action_type = a.kind
                       AND r.status = 'undone') ",
            $conflict,
            " RETURNING action_id, policy_id, action_type, simulated, bucket, object_key, etag"
        )
    };
}

/// New rows only.
const CLAIM: &str = claim_sql!("ON CONFLICT DO NOTHING");

/// New rows, and, taken again under its own action id, an enforced action's row that ended
/// without effect: a remediation that ended blocked or failed, an alert that ended blocked (a
/// failed alert was tried for a day; a queued one is on its way).
const REPLAN: &str = claim_sql!(
    "ON CONFLICT (tenant_id, connector_id, bucket, object_key, etag, policy_id, policy_version,
                  action_type, simulated)
     DO UPDATE SET outcome = EXCLUDED.outcome, finding_ids = EXCLUDED.finding_ids,
                   updated_at = EXCLUDED.updated_at,
                   reconciliation_id = EXCLUDED.reconciliation_id
      WHERE NOT EXCLUDED.simulated
        AND (governance_actions.outcome = 'blocked'
             OR (EXCLUDED.action_type <> 'alert' AND governance_actions.outcome = 'failed'))"
);

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

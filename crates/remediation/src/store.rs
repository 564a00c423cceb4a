//! The remediation state machine's rows: taking a due request, and each transition with the
//! ledger, the audit entry and the receipt that go with it, in one transaction each.
//!
//! ```text
//! planned -> snapshotted -> written -> receipted -> undone
//! planned -> blocked
//! planned | snapshotted -> failed
//! ```
//!
//! A request is taken with a lease (`next_attempt_at` pushed five minutes ahead, under `FOR
//! UPDATE SKIP LOCKED`), so two replicas never run the same step, and a process killed mid-step
//! leaves a request another takes again when the lease ends.

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{
    Array, Bytea, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, PolicyId, TenantId};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use policies::document::ActionType;
use settings::Gate;

/// How long a taken request is the taker's alone.
pub(crate) const LEASE_SECONDS: i32 = 300;
/// Attempts after which a request that keeps failing for transient reasons fails for good.
pub(crate) const MAX_ATTEMPTS: i32 = 8;

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Planned,
    Snapshotted,
    Written,
    Receipted,
    Blocked,
    Failed,
    Undone,
}

impl State {
    pub const ALL: [State; 7] = [
        State::Planned,
        State::Snapshotted,
        State::Written,
        State::Receipted,
        State::Blocked,
        State::Failed,
        State::Undone,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Planned => "planned",
            State::Snapshotted => "snapshotted",
            State::Written => "written",
            State::Receipted => "receipted",
            State::Blocked => "blocked",
            State::Failed => "failed",
            State::Undone => "undone",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        State::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

// An unknown status read back is an error, never a default.
db::text_enum!(State);

/// A request with what its execution recorded so far.
#[derive(Debug, Clone, QueryableByName)]
pub struct Row {
    #[diesel(sql_type = Text)]
    pub tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    pub request_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub action_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub policy_id: Uuid,
    #[diesel(sql_type = Integer)]
    pub policy_version: i32,
    #[diesel(sql_type = Text)]
    pub action_type: ActionType,
    #[diesel(sql_type = SqlUuid)]
    pub connector_id: Uuid,
    #[diesel(sql_type = Text)]
    pub bucket: String,
    #[diesel(sql_type = Text)]
    pub object_key: String,
    #[diesel(sql_type = Text)]
    pub etag: String,
    #[diesel(sql_type = Array<SqlUuid>)]
    pub finding_ids: Vec<Uuid>,
    #[diesel(sql_type = Text)]
    pub gate: Gate,
    #[diesel(sql_type = Text)]
    pub status: State,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: OffsetDateTime,
    /// When a taker may take the request next. A take sets it to the end of the taker's lease,
    /// so it also says which taker holds the request: one whose value no longer matches lost
    /// its lease to another, and must not move the request.
    #[diesel(sql_type = Timestamptz)]
    pub next_attempt_at: OffsetDateTime,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    #[diesel(sql_type = Nullable<Text>)]
    pub reason: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub lkg_bucket: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub lkg_key: Option<String>,
    #[diesel(sql_type = Nullable<Bytea>)]
    pub sha256_before: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Text>)]
    pub etag_after: Option<String>,
    #[diesel(sql_type = Nullable<Bytea>)]
    pub sha256_after: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub executed_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub undo_until: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub undone_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Text>)]
    pub undone_by: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub lkg_deleted_at: Option<OffsetDateTime>,
    /// What the bucket keeps of the replaced content (`kept`, `not_kept`, `unknown`), once
    /// written.
    #[diesel(sql_type = Nullable<Text>)]
    pub prior_versions: Option<String>,
    /// Why the copy is kept for good, when it may be the original's last copy
    /// (`original_missing`, `original_changed`); the sweeper never takes it.
    #[diesel(sql_type = Nullable<Text>)]
    pub lkg_kept_reason: Option<String>,
    /// The customer-managed key the original was under when it was snapshotted
    /// (`connectors::cloud::Encryption::to_json`); null under the provider's own keys.
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub encryption: Option<Value>,
}

impl Row {
    pub fn tenant(&self) -> Result<TenantId, DieselError> {
        db::background::parse_column::<TenantId>(&self.tenant_id)
    }

    pub fn state(&self) -> State {
        self.status
    }

    pub fn kind(&self) -> ActionType {
        self.action_type
    }

    pub fn connector(&self) -> ConnectorId {
        ConnectorId::from_uuid(self.connector_id)
    }

    pub fn policy(&self) -> PolicyId {
        PolicyId::from_uuid(self.policy_id)
    }

    /// `bucket/key`, as audit entries name the object.
    pub fn resource(&self) -> String {
        format!("{}/{}", self.bucket, self.object_key)
    }
}

/// The columns of [`Row`], over `remediation_requests r LEFT JOIN remediation_runs u`.
macro_rules! columns {
    () => {
        "r.tenant_id, r.request_id, r.action_id, r.policy_id,
        r.policy_version, r.action_type, r.connector_id, r.bucket, r.object_key, r.etag,
        r.finding_ids, r.gate, r.status, r.created_at, r.updated_at, r.next_attempt_at,
        coalesce(u.attempts, 0) AS attempts, u.reason, u.lkg_bucket, u.lkg_key, u.sha256_before,
        u.etag_after, u.sha256_after, u.executed_at, u.undo_until, u.undone_at, u.undone_by,
        u.lkg_deleted_at, u.prior_versions, u.encryption,
        (SELECT k.reason FROM remediation_kept_copies k
          WHERE k.tenant_id = r.tenant_id AND k.request_id = r.request_id) AS lkg_kept_reason"
    };
}
pub(crate) const COLUMNS: &str = columns!();

/// A select that makes the statement's transaction commit without waiting for its WAL to reach
/// disk (`synchronous_commit = off` for that transaction alone), for steps whose loss in a
/// Postgres crash is redone safely: a lost lease is taken again (every transition is guarded by
/// the state it leaves, every storage write by an ETag), and a lost `written` leaves the
/// request `snapshotted`, whose resumption finds its own write in the object. The snapshot
/// (before the object is written) and the receipt are committed durably; so is everything
/// committed after a redoable step, whose WAL flush carries the earlier one with it.
macro_rules! redoable {
    () => {
        "SELECT set_config('synchronous_commit', 'off', true)"
    };
}

/// A receipt's row, as an `INSERT ... SELECT` of the given expressions (tenant, receipt id,
/// request id, kind, document, co-signing status), to which a caller may add `FROM` and
/// `WHERE`: the one statement text that writes receipts, alone or inside a transition.
macro_rules! insert_receipt {
    ($tenant:literal, $id:literal, $request:literal, $kind:literal, $document:literal, $cosign:literal) => {
        concat!(
            "INSERT INTO remediation_receipts (tenant_id, receipt_id, request_id, kind, document,
                    cosign_status, cosign_attempts, cosign_next_at, created_at)
             SELECT ",
            $tenant,
            ", ",
            $id,
            ", ",
            $request,
            ", ",
            $kind,
            ", ",
            $document,
            ", ",
            $cosign,
            ",
                    CASE WHEN ",
            $cosign,
            " = 'cosigned' THEN 1 ELSE 0 END,
                    CASE WHEN ",
            $cosign,
            " = 'pending' THEN now() END, now()"
        )
    };
}

/// A remediation request as evaluation plans it: for the ledger row `action_id` claimed in
/// the same transaction, which says what to do to which object version and its findings.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub request_id: Uuid,
    /// The ledger's id of the action.
    pub action_id: Uuid,
    /// What the safety-class gate said.
    pub gate: Gate,
}

/// Records `requests`, `planned` and due at once, in one statement, each from its ledger row.
/// Call it in the evaluation's transaction, after the ledger rows are claimed: a request
/// whose action has no ledger row is not recorded. Returns how many were.
pub async fn plan(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    requests: &[NewRequest],
    now: OffsetDateTime,
) -> Result<usize, DieselError> {
    if requests.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = requests.iter().map(|r| r.request_id).collect();
    let actions: Vec<Uuid> = requests.iter().map(|r| r.action_id).collect();
    let gates: Vec<&str> = requests.iter().map(|r| r.gate.as_str()).collect();
    db::sql(
        "INSERT INTO remediation_requests (tenant_id, request_id, action_id, policy_id,
                policy_version, action_type, connector_id, bucket, object_key, etag, finding_ids,
                gate, created_at, updated_at)
         SELECT $1, r.id, g.action_id, g.policy_id, g.policy_version, g.action_type,
                g.connector_id, g.bucket, g.object_key, g.etag, g.finding_ids, r.gate, $5, $5
           FROM unnest($2::uuid[], $3::uuid[], $4::text[]) AS r(id, action_id, gate)
           JOIN governance_actions g ON g.tenant_id = $1 AND g.action_id = r.action_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Array<SqlUuid>, _>(&ids)
    .bind::<Array<SqlUuid>, _>(&actions)
    .bind::<Array<Text>, _>(&gates)
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await
}

/// Takes the request due first, of any tenant, and counts the attempt: one statement, committed
/// without waiting for the disk (see `redoable!`).
/// A request just taken, and whether its policy or its connector has been deleted since it was
/// planned.
#[derive(QueryableByName)]
pub(crate) struct Taken {
    #[diesel(embed)]
    pub request: Row,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub policy_deleted: bool,
    /// The policy's current version no longer enforces this action: switched to dry-run, or
    /// the action taken out (or the policy deleted).
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub action_withdrawn: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub connector_deleted: bool,
}

pub(crate) async fn take(conn: &mut AsyncPgConnection) -> Result<Option<Taken>, DieselError> {
    db::sql(concat!(
        "WITH durability AS (",
        redoable!(),
        "),
         taken AS (
            UPDATE remediation_requests r
               SET next_attempt_at = now() + make_interval(secs => $1)
              FROM durability
             WHERE (r.tenant_id, r.request_id) = (
                   SELECT tenant_id, request_id FROM remediation_requests
                    WHERE status IN ('planned', 'snapshotted', 'written')
                      AND next_attempt_at <= now()
                    ORDER BY next_attempt_at
                    LIMIT 1
                      FOR UPDATE SKIP LOCKED)
            RETURNING r.*),
         run AS (
            INSERT INTO remediation_runs (tenant_id, request_id, attempts)
            SELECT tenant_id, request_id, 1 FROM taken
            ON CONFLICT (tenant_id, request_id)
            DO UPDATE SET attempts = remediation_runs.attempts + 1
            RETURNING *)
         SELECT ",
        columns!(),
        ", NOT EXISTS (SELECT 1 FROM governance_policies p
                        WHERE p.tenant_id = r.tenant_id AND p.policy_id = r.policy_id)
             AS policy_deleted,
             NOT EXISTS (SELECT 1 FROM governance_policies p
                        WHERE p.tenant_id = r.tenant_id AND p.policy_id = r.policy_id
                          AND p.mode = 'enforced'
                          AND p.document->'spec'->'actions'
                              @> jsonb_build_array(jsonb_build_object('type', r.action_type)))
             AS action_withdrawn,
             NOT EXISTS (SELECT 1 FROM connectors c
                        WHERE c.tenant_id = r.tenant_id AND c.connector_id = r.connector_id)
             AS connector_deleted
           FROM taken r JOIN run u ON true"
    ))
    .bind::<Integer, _>(LEASE_SECONDS)
    .get_result(conn)
    .await
    .optional()
}

/// One request of the tenant, with its run.
pub async fn one(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    request: Uuid,
) -> Result<Option<Row>, DieselError> {
    db::sql(concat!(
        "SELECT ",
        columns!(),
        " FROM remediation_requests r
           LEFT JOIN remediation_runs u
             ON u.tenant_id = r.tenant_id AND u.request_id = r.request_id
          WHERE r.tenant_id = $1 AND r.request_id = $2"
    ))
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(request)
    .get_result(conn)
    .await
    .optional()
}

/// planned → snapshotted: the object's bytes are safe at the last-known-good location. Returns
/// the request as it now is, or None when it was not `planned` any more (another taker moved
/// it: a lease that ran out).
///
/// The connector must still exist, and its row is locked (`FOR KEY SHARE`) until this commits:
/// a deletion that takes the row first makes this find nothing (the request then ends
/// `connector_deleted`), and one that comes after sees the request between its snapshot and its
/// receipt and refuses (`in_flight`). No request is ever snapshotted for a deleted connector.
pub(crate) async fn snapshotted(
    conn: &mut AsyncPgConnection,
    row: &Row,
    lkg: (&str, &str),
    sha256_before: &[u8],
    encryption: Option<&Value>,
) -> Result<Option<Row>, DieselError> {
    db::sql(concat!(
        "WITH live AS (
            SELECT 1 FROM connectors c
             WHERE c.tenant_id = $1 AND c.connector_id = $8
               FOR KEY SHARE),
         moved AS (
            UPDATE remediation_requests SET status = 'snapshotted', updated_at = now()
             WHERE tenant_id = $1 AND request_id = $2 AND status = 'planned'
               AND next_attempt_at = $6 AND EXISTS (SELECT 1 FROM live)
            RETURNING *),
         run AS (
            UPDATE remediation_runs u
               SET lkg_bucket = $3, lkg_key = $4, sha256_before = $5, reason = NULL,
                   encryption = $7
              FROM moved
             WHERE u.tenant_id = moved.tenant_id AND u.request_id = moved.request_id
            RETURNING u.*)
         SELECT ",
        columns!(),
        " FROM moved r JOIN run u ON true"
    ))
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .bind::<Text, _>(lkg.0)
    .bind::<Text, _>(lkg.1)
    .bind::<Bytea, _>(sha256_before)
    .bind::<Timestamptz, _>(row.next_attempt_at)
    .bind::<Nullable<Jsonb>, _>(encryption)
    .bind::<SqlUuid, _>(row.connector_id)
    .get_result(conn)
    .await
    .optional()
}

/// snapshotted → written: the object holds the remediated content (or is quarantined), and
/// `tokens` (the vault's lookup keys of the tokens written into it) are recorded for the object
/// in the same statement, so a rescan knows them for the platform's own (`written`).
/// Redoable (see `redoable!`). Returns the request as it now is, or None as
/// [`snapshotted`] does.
pub(crate) async fn written(
    conn: &mut AsyncPgConnection,
    row: &Row,
    etag_after: Option<&str>,
    sha256_after: Option<&[u8]>,
    retention_hours: u32,
    prior_versions: &str,
    tokens: &[Uuid],
) -> Result<Option<Row>, DieselError> {
    db::sql(concat!(
        "WITH durability AS (",
        redoable!(),
        "),
         moved AS (
            UPDATE remediation_requests SET status = 'written', updated_at = now()
              FROM durability
             WHERE tenant_id = $1 AND request_id = $2 AND status = 'snapshotted'
               AND next_attempt_at = $6
            RETURNING remediation_requests.*),
         run AS (
            UPDATE remediation_runs u
               SET etag_after = $3, sha256_after = $4, executed_at = now(),
                   undo_until = now() + make_interval(hours => $5), reason = NULL,
                   prior_versions = $7
              FROM moved
             WHERE u.tenant_id = moved.tenant_id AND u.request_id = moved.request_id
            RETURNING u.*),
         tokens AS (
            INSERT INTO remediation_written_tokens
                   (tenant_id, connector_id, object_ref, lookup, request_id)
            SELECT moved.tenant_id, moved.connector_id, $8, t.lookup, moved.request_id
              FROM moved, unnest($9::uuid[]) AS t(lookup)
            ON CONFLICT DO NOTHING)
         SELECT ",
        columns!(),
        " FROM moved r JOIN run u ON true"
    ))
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .bind::<Nullable<Text>, _>(etag_after)
    .bind::<Nullable<Bytea>, _>(sha256_after)
    .bind::<Integer, _>(i32::try_from(retention_hours).unwrap_or(i32::MAX))
    .bind::<Timestamptz, _>(row.next_attempt_at)
    .bind::<Text, _>(prior_versions)
    .bind::<SqlUuid, _>(scans::tokens::object_ref(&row.bucket, &row.object_key))
    .bind::<Array<SqlUuid>, _>(tokens)
    .get_result(conn)
    .await
    .optional()
}

/// What ends a request's execution: its state, the ledger outcome, the audit entry and, for
/// executed and blocked requests, the signed receipt.
pub(crate) struct Ending<'a> {
    pub from: State,
    pub to: State,
    /// The ledger's new outcome, if it changes.
    pub outcome: Option<&'static str>,
    pub reason: Option<crate::stop::Reason>,
    pub entry: audit::NewEntry,
    pub receipt: Option<StoredReceipt>,
    /// What the object's findings and risk become.
    pub changed: Option<posture::risk::rescore::Changed<'a>>,
}

/// A signed receipt to store with its request's transition.
#[derive(Debug, Clone)]
pub(crate) struct StoredReceipt {
    pub id: Uuid,
    pub kind: &'static str,
    pub document: Value,
    pub cosign_status: &'static str,
}

/// Ends a request; false when it was not in `from` any more (nothing is written then). The
/// transition, the run's reason, the ledger's outcome and the receipt are one statement; the
/// findings' and risk's change and the audit entry follow in the same transaction.
pub(crate) async fn end(
    conn: &mut AsyncPgConnection,
    row: &Row,
    ending: Ending<'_>,
) -> Result<bool, DieselError> {
    let tenant = row.tenant()?;
    let receipt = ending.receipt.as_ref();
    let undone_by = (ending.to == State::Undone).then(|| ending.entry.actor.as_str());
    let reason = ending.reason.map(|r| r.to_string());
    conn.transaction(async |conn| {
        let moved = db::sql(concat!(
            "WITH moved AS (
                UPDATE remediation_requests SET status = $4, updated_at = now()
                 WHERE tenant_id = $1 AND request_id = $2 AND status = $3
                RETURNING tenant_id, request_id, action_id),
             run AS (
                UPDATE remediation_runs u
                   SET reason = coalesce($5, u.reason),
                       undone_at = CASE WHEN $6::text IS NULL THEN u.undone_at ELSE now() END,
                       undone_by = coalesce($6, u.undone_by)
                  FROM moved
                 WHERE u.tenant_id = moved.tenant_id AND u.request_id = moved.request_id),
             ledger AS (",
            policies::ledger_outcome_sql!("moved", "$7"),
            "),
             receipt AS (",
            insert_receipt!(
                "moved.tenant_id",
                "$8",
                "moved.request_id",
                "$9",
                "$10",
                "$11"
            ),
            " FROM moved WHERE $8::uuid IS NOT NULL)
             SELECT 1 FROM moved",
        ))
        .bind::<Text, _>(&row.tenant_id)
        .bind::<SqlUuid, _>(row.request_id)
        .bind::<Text, _>(ending.from.as_str())
        .bind::<Text, _>(ending.to.as_str())
        .bind::<Nullable<Text>, _>(reason.as_deref())
        .bind::<Nullable<Text>, _>(undone_by)
        .bind::<Nullable<Text>, _>(ending.outcome)
        .bind::<Nullable<SqlUuid>, _>(receipt.map(|r| r.id))
        .bind::<Nullable<Text>, _>(receipt.map(|r| r.kind))
        .bind::<Nullable<Jsonb>, _>(receipt.map(|r| &r.document))
        .bind::<Nullable<Text>, _>(receipt.map(|r| r.cosign_status))
        .execute(conn)
        .await?;
        if moved != 1 {
            return Ok(false);
        }
        if let Some(changed) = &ending.changed {
            posture::risk::rescore::apply(conn, &tenant, changed).await?;
        }
        audit::append(conn, &tenant, std::slice::from_ref(&ending.entry)).await?;
        Ok(true)
    })
    .await
}

pub(crate) async fn insert_receipt(
    conn: &mut AsyncPgConnection,
    row: &Row,
    receipt: &StoredReceipt,
) -> Result<(), DieselError> {
    db::sql(insert_receipt!("$1", "$2", "$3", "$4", "$5", "$6"))
        .bind::<Text, _>(&row.tenant_id)
        .bind::<SqlUuid, _>(receipt.id)
        .bind::<SqlUuid, _>(row.request_id)
        .bind::<Text, _>(receipt.kind)
        .bind::<Jsonb, _>(&receipt.document)
        .bind::<Text, _>(receipt.cosign_status)
        .execute(conn)
        .await?;
    Ok(())
}

/// Renews the lease of a request this taker still holds (its lease is `row`'s), for the steps
/// that end it after a failure; returns the request as it now is, or None when another taker
/// holds it (this one's lease ran out while it worked).
pub(crate) async fn renew(
    conn: &mut AsyncPgConnection,
    row: &Row,
) -> Result<Option<Row>, DieselError> {
    db::sql(concat!(
        "WITH renewed AS (
            UPDATE remediation_requests SET next_attempt_at = now() + make_interval(secs => $4)
             WHERE tenant_id = $1 AND request_id = $2 AND next_attempt_at = $3
               AND status IN ('planned', 'snapshotted', 'written')
            RETURNING *)
         SELECT ",
        columns!(),
        " FROM renewed r JOIN remediation_runs u
             ON u.tenant_id = r.tenant_id AND u.request_id = r.request_id"
    ))
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .bind::<Timestamptz, _>(row.next_attempt_at)
    .bind::<Integer, _>(LEASE_SECONDS)
    .get_result(conn)
    .await
    .optional()
}

/// Gives a request back after a transient failure: it is due again after a backoff that grows
/// with its attempts (30 s, 1 min, 2 min, ... at most 30 min).
pub(crate) async fn retry_later(
    conn: &mut AsyncPgConnection,
    row: &Row,
    reason: crate::stop::Reason,
) -> Result<(), DieselError> {
    let backoff = 30_i32.saturating_mul(1 << row.attempts.clamp(1, 7).saturating_sub(1));
    db::sql(
        "WITH r AS (
            UPDATE remediation_requests SET next_attempt_at = now() + make_interval(secs => $3)
             WHERE tenant_id = $1 AND request_id = $2 AND next_attempt_at = $5
            RETURNING 1
         )
         UPDATE remediation_runs SET reason = $4
          WHERE tenant_id = $1 AND request_id = $2 AND EXISTS (SELECT 1 FROM r)",
    )
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .bind::<Integer, _>(backoff.min(1800))
    .bind::<Text, _>(reason.to_string())
    .bind::<Timestamptz, _>(row.next_attempt_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that the gate could not read the tenant's policy and let the action proceed.
pub(crate) async fn gate_unavailable(
    conn: &mut AsyncPgConnection,
    row: &Row,
) -> Result<(), DieselError> {
    db::sql(
        "UPDATE remediation_requests SET gate = 'gate_unavailable'
          WHERE tenant_id = $1 AND request_id = $2",
    )
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that a request's snapshot is deleted.
/// Keeps a failed request's snapshot for `hours` instead of deleting it: the object may have
/// lost the bytes it holds (the sweeper takes it once `undo_until` passes).
pub(crate) async fn keep_snapshot(
    conn: &mut AsyncPgConnection,
    row: &Row,
    hours: u32,
) -> Result<(), DieselError> {
    db::sql(
        "UPDATE remediation_runs SET undo_until = now() + make_interval(hours => $3)
          WHERE tenant_id = $1 AND request_id = $2",
    )
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .bind::<Integer, _>(i32::try_from(hours).unwrap_or(i32::MAX))
    .execute(conn)
    .await?;
    Ok(())
}

pub(crate) async fn snapshot_deleted(
    conn: &mut AsyncPgConnection,
    row: &Row,
) -> Result<(), DieselError> {
    db::sql(
        "UPDATE remediation_runs SET lkg_deleted_at = now()
          WHERE tenant_id = $1 AND request_id = $2",
    )
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Keeps a copy for good: it may be the last copy of the original (`reason`:
/// `original_missing`, `original_changed`). Records where it is, for a copy made but never
/// recorded (a request that stopped between its copy and its snapshot).
pub(crate) async fn keep_copy(
    conn: &mut AsyncPgConnection,
    row: &Row,
    location: (&str, &str),
    reason: &str,
) -> Result<(), DieselError> {
    db::sql(
        "WITH located AS (
            UPDATE remediation_runs
               SET lkg_bucket = coalesce(lkg_bucket, $3), lkg_key = coalesce(lkg_key, $4)
             WHERE tenant_id = $1 AND request_id = $2)
         INSERT INTO remediation_kept_copies (tenant_id, request_id, reason)
         VALUES ($1, $2, $5)
         ON CONFLICT (tenant_id, request_id) DO NOTHING",
    )
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .bind::<Text, _>(location.0)
    .bind::<Text, _>(location.1)
    .bind::<Text, _>(reason)
    .execute(conn)
    .await?;
    Ok(())
}

/// The connector's requests between their snapshot and their receipt: what its deletion waits
/// for (it answers 409 naming them). Call it holding the connector's row (`FOR UPDATE`), which
/// [`snapshotted`] needs to move a request there.
pub async fn in_flight(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Result<Vec<Uuid>, DieselError> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = SqlUuid)]
        request_id: Uuid,
    }
    let ids: Vec<Id> = db::sql(
        "SELECT request_id FROM remediation_requests
          WHERE tenant_id = $1 AND connector_id = $2 AND status IN ('snapshotted', 'written')
          ORDER BY request_id LIMIT 100",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .load(conn)
    .await?;
    Ok(ids.into_iter().map(|i| i.request_id).collect())
}

/// ETags compared as providers give them, with or without their quotes.
pub(crate) fn same_etag(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.trim_matches('"') == b.trim_matches('"'),
        _ => false,
    }
}

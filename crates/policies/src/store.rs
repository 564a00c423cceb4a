//! Governance policies in Postgres: create, replace, delete, read and list, each write with its
//! audit entry in the same transaction.
//!
//! A document is checked completely before anything is stored: its syntax and structure first
//! ([`document::parse`]), then, inside the transaction, what it refers to
//! ([`document::check_references`]). An invalid document changes nothing.

use std::collections::BTreeSet;

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::{PolicyId, TenantId, TokenPolicyId, UserId};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{governance_channels, governance_policies, governance_policy_versions};

use crate::document::{
    self, Action, ActionType, Condition, Context, Mode, PolicyDocument, Problem, Syntax,
};

/// The cursor list name.
const LIST: &str = "governance-policies";

/// The default page size of the policy list.
pub const DEFAULT_LIMIT: u32 = 20;

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("no governance policy with this id in the tenant")]
    NotFound,
    #[error("the tenant already has a governance policy with this name")]
    DuplicateName,
    #[error("the policy document is invalid")]
    Invalid(Vec<Problem>),
    #[error("the cursor is not valid for this list")]
    BadCursor,
    /// A stored document no longer reads as a policy (it was edited outside the service).
    #[error("a stored governance policy is unreadable")]
    CorruptRow,
    #[error("database error")]
    Database(#[source] DieselError),
}

impl From<DieselError> for PolicyError {
    fn from(e: DieselError) -> Self {
        match e {
            DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, ref info)
                if info.constraint_name() == Some("governance_policies_name_idx") =>
            {
                PolicyError::DuplicateName
            }
            e => PolicyError::Database(e),
        }
    }
}

impl From<BadCursor> for PolicyError {
    fn from(_: BadCursor) -> Self {
        PolicyError::BadCursor
    }
}

/// A policy as the list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySummary {
    pub id: PolicyId,
    pub name: String,
    pub description: Option<String>,
    pub mode: Mode,
    pub tags: Vec<String>,
    pub version: i32,
    pub conditions_count: i32,
    pub actions_count: i32,
    pub last_triggered: Option<OffsetDateTime>,
    pub findings_matched: i64,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// A policy with its document: the canonical JSON, and the text as it was sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub summary: PolicySummary,
    pub document: PolicyDocument,
    pub source: String,
    pub source_syntax: Syntax,
}

impl Policy {
    /// The document as YAML: the text as sent when it was YAML, else the canonical document.
    pub fn yaml(&self) -> String {
        match self.source_syntax {
            Syntax::Yaml => self.source.clone(),
            Syntax::Json => self.document.to_yaml(),
        }
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = governance_policies, check_for_backend(diesel::pg::Pg))]
struct Row {
    policy_id: Uuid,
    name: String,
    description: Option<String>,
    mode: String,
    tags: Vec<Option<String>>,
    version: i32,
    conditions_count: i32,
    actions_count: i32,
    findings_matched: i64,
    last_triggered: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

fn summary(row: Row) -> Result<PolicySummary, PolicyError> {
    Ok(PolicySummary {
        id: PolicyId::from_uuid(row.policy_id),
        name: row.name,
        description: row.description,
        mode: Mode::parse(&row.mode).ok_or(PolicyError::CorruptRow)?,
        tags: row.tags.into_iter().flatten().collect(),
        version: row.version,
        conditions_count: row.conditions_count,
        actions_count: row.actions_count,
        last_triggered: row.last_triggered,
        findings_matched: row.findings_matched,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

fn syntax_name(syntax: Syntax) -> &'static str {
    match syntax {
        Syntax::Json => "json",
        Syntax::Yaml => "yaml",
    }
}

/// What a document refers to, as the tenant has it.
async fn references(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    document: &PolicyDocument,
) -> Result<Context, DieselError> {
    let wanted = Context::wanted(document);
    let connectors: Vec<_> = wanted.connectors.iter().copied().collect();
    let classifiers: Vec<String> = wanted.classifiers.iter().cloned().collect();
    let channels: Vec<String> = wanted.channels.iter().cloned().collect();
    let token_policies: Vec<Uuid> = wanted
        .token_policies
        .iter()
        .map(TokenPolicyId::as_uuid)
        .collect();
    let found_channels: Vec<String> = if channels.is_empty() {
        Vec::new()
    } else {
        governance_channels::table
            .filter(governance_channels::tenant_id.eq(tenant.as_str()))
            .filter(governance_channels::name.eq_any(&channels))
            .select(governance_channels::name)
            // Held until the policy commits: a concurrent delete of the channel (which locks
            // it for update, then looks for the policies alerting it) either waits and then
            // sees this policy, or deleted it first, and the policy is refused.
            .for_share()
            .load(conn)
            .await?
    };
    Ok(Context {
        connectors: connectors::store::existing(conn, tenant, &connectors).await?,
        classifiers: scans::classifiers::existing_names(conn, tenant, &classifiers).await?,
        channels: found_channels.into_iter().collect(),
        token_policies: token_policies_of(conn, tenant, &token_policies).await?,
    })
}

/// Which of `ids` are tokenization policies of the tenant. Read straight from the vault's
/// table, which governance never writes: the vault crate is for the tokenize action alone.
async fn token_policies_of(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    ids: &[Uuid],
) -> Result<BTreeSet<TokenPolicyId>, DieselError> {
    use db::schema::tokenization_policies as tp;
    if ids.is_empty() {
        return Ok(BTreeSet::new());
    }
    let found: Vec<Uuid> = tp::table
        .filter(tp::tenant_id.eq(tenant.as_str()))
        .filter(tp::policy_id.eq_any(ids))
        .select(tp::policy_id)
        .load(conn)
        .await?;
    Ok(found.into_iter().map(TokenPolicyId::from_uuid).collect())
}

async fn check_references(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    document: &PolicyDocument,
) -> Result<(), PolicyError> {
    let found = references(conn, tenant, document).await?;
    let problems = document::check_references(document, &found);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PolicyError::Invalid(problems))
    }
}

fn counts(document: &PolicyDocument) -> (i32, i32) {
    let n = |len: usize| i32::try_from(len).unwrap_or(i32::MAX);
    (
        n(document.spec.conditions.len()),
        n(document.spec.actions.len()),
    )
}

fn audit_details(document: &PolicyDocument, version: i32) -> Value {
    json!({
        "name": document.metadata.name,
        "mode": document.spec.mode.as_str(),
        "version": version,
        "conditions_count": document.spec.conditions.len(),
        "actions": document.spec.actions.iter().map(|a| a.action_type().as_str()).collect::<Vec<_>>(),
    })
}

/// Reads, checks and stores a new policy at version 1.
/// Waits, until the transaction ends, for every transaction that records risk under the
/// tenant's policies as it read them (evaluation runs, rescores, coverage refreshes: each takes
/// [`lock_for_reading`] before it reads them), and keeps new ones from reading the policies
/// until this change commits. Take it first in a transaction that changes a policy, before any
/// other lock. Without it, a run that read the policies before the change could record
/// findings after the change's coverage refresh had passed them, under the old coverage.
async fn lock_for_change(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<(), DieselError> {
    db::sql("SELECT pg_advisory_xact_lock(hashtext('dps-policies:' || $1))")
        .bind::<diesel::sql_types::Text, _>(tenant.as_str())
        .execute(conn)
        .await
        .map(drop)
}

/// Holds the tenant's policies as they are now until the transaction ends: a change waits for
/// it (see [`lock_for_change`]). Take it before reading the policies that a transaction records
/// coverage under.
pub async fn lock_for_reading(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<(), DieselError> {
    db::sql("SELECT pg_advisory_xact_lock_shared(hashtext('dps-policies:' || $1))")
        .bind::<diesel::sql_types::Text, _>(tenant.as_str())
        .execute(conn)
        .await
        .map(drop)
}

pub async fn create(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    body: &[u8],
    syntax: Syntax,
) -> Result<Policy, PolicyError> {
    let document = document::parse(body, syntax).map_err(PolicyError::Invalid)?;
    let source = String::from_utf8_lossy(body).into_owned();
    let id = PolicyId::new();
    conn.transaction(async |conn| {
        lock_for_change(conn, tenant).await?;
        check_references(conn, tenant, &document).await?;
        let now = OffsetDateTime::now_utc();
        let (conditions, actions) = counts(&document);
        let canonical = document.to_value();
        diesel::insert_into(governance_policies::table)
            .values((
                governance_policies::tenant_id.eq(tenant.as_str()),
                governance_policies::policy_id.eq(id.as_uuid()),
                governance_policies::name.eq(&document.metadata.name),
                governance_policies::description.eq(&document.metadata.description),
                governance_policies::mode.eq(document.spec.mode.as_str()),
                governance_policies::tags.eq(&document.metadata.tags),
                governance_policies::version.eq(1),
                governance_policies::document.eq(&canonical),
                governance_policies::source.eq(&source),
                governance_policies::source_syntax.eq(syntax_name(syntax)),
                governance_policies::conditions_count.eq(conditions),
                governance_policies::actions_count.eq(actions),
                governance_policies::created_at.eq(now),
                governance_policies::updated_at.eq(now),
            ))
            .execute(conn)
            .await?;
        insert_version(conn, tenant, id, 1, &canonical, actor, now).await?;
        audit::append(
            conn,
            tenant,
            &[audit::NewEntry::new(
                audit::Kind::PolicyCreated,
                audit::Actor::User(actor.clone()),
            )
            .policy(id, 1)
            .outcome("success")
            .details(audit_details(&document, 1))],
        )
        .await?;
        crate::changes::request(conn, tenant).await?;
        Ok::<_, PolicyError>(())
    })
    .await?;
    get(conn, tenant, id).await
}

async fn insert_version(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: PolicyId,
    version: i32,
    canonical: &Value,
    actor: &UserId,
    now: OffsetDateTime,
) -> Result<(), DieselError> {
    diesel::insert_into(governance_policy_versions::table)
        .values((
            governance_policy_versions::tenant_id.eq(tenant.as_str()),
            governance_policy_versions::policy_id.eq(id.as_uuid()),
            governance_policy_versions::version.eq(version),
            governance_policy_versions::document.eq(canonical),
            governance_policy_versions::created_at.eq(now),
            governance_policy_versions::created_by.eq(actor.as_str()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Replaces a policy's document: checked exactly as on create, stored as the next version.
/// An invalid document changes nothing.
pub async fn update(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    id: PolicyId,
    body: &[u8],
    syntax: Syntax,
) -> Result<Policy, PolicyError> {
    let document = document::parse(body, syntax).map_err(PolicyError::Invalid)?;
    let source = String::from_utf8_lossy(body).into_owned();
    conn.transaction(async |conn| {
        lock_for_change(conn, tenant).await?;
        let current: i32 = governance_policies::table
            .filter(governance_policies::tenant_id.eq(tenant.as_str()))
            .filter(governance_policies::policy_id.eq(id.as_uuid()))
            .select(governance_policies::version)
            .for_update()
            .first(conn)
            .await
            .optional()?
            .ok_or(PolicyError::NotFound)?;
        check_references(conn, tenant, &document).await?;
        let version = current + 1;
        let now = OffsetDateTime::now_utc();
        let (conditions, actions) = counts(&document);
        let canonical = document.to_value();
        diesel::update(governance_policies::table)
            .filter(governance_policies::tenant_id.eq(tenant.as_str()))
            .filter(governance_policies::policy_id.eq(id.as_uuid()))
            .set((
                governance_policies::name.eq(&document.metadata.name),
                governance_policies::description.eq(&document.metadata.description),
                governance_policies::mode.eq(document.spec.mode.as_str()),
                governance_policies::tags.eq(&document.metadata.tags),
                governance_policies::version.eq(version),
                governance_policies::document.eq(&canonical),
                governance_policies::source.eq(&source),
                governance_policies::source_syntax.eq(syntax_name(syntax)),
                governance_policies::conditions_count.eq(conditions),
                governance_policies::actions_count.eq(actions),
                governance_policies::updated_at.eq(now),
            ))
            .execute(conn)
            .await?;
        insert_version(conn, tenant, id, version, &canonical, actor, now).await?;
        let mut details = audit_details(&document, version);
        details["previous_version"] = json!(current);
        audit::append(
            conn,
            tenant,
            &[audit::NewEntry::new(
                audit::Kind::PolicyUpdated,
                audit::Actor::User(actor.clone()),
            )
            .policy(id, version)
            .outcome("success")
            .details(details)],
        )
        .await?;
        crate::changes::request(conn, tenant).await?;
        Ok::<_, PolicyError>(())
    })
    .await?;
    get(conn, tenant, id).await
}

/// Deletes a policy: it is evaluated no more. Its versions, the actions it took and their
/// audit entries stay.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    id: PolicyId,
) -> Result<(), PolicyError> {
    conn.transaction(async |conn| {
        lock_for_change(conn, tenant).await?;
        let (name, version): (String, i32) = diesel::delete(governance_policies::table)
            .filter(governance_policies::tenant_id.eq(tenant.as_str()))
            .filter(governance_policies::policy_id.eq(id.as_uuid()))
            .returning((governance_policies::name, governance_policies::version))
            .get_result(conn)
            .await
            .optional()?
            .ok_or(PolicyError::NotFound)?;
        audit::append(
            conn,
            tenant,
            &[audit::NewEntry::new(
                audit::Kind::PolicyDeleted,
                audit::Actor::User(actor.clone()),
            )
            .policy(id, version)
            .outcome("success")
            .details(json!({ "name": name, "version": version }))],
        )
        .await?;
        crate::changes::request(conn, tenant).await?;
        Ok(())
    })
    .await
}

/// One policy with its document.
pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: PolicyId,
) -> Result<Policy, PolicyError> {
    let found: Option<(Row, Value, String, String)> = governance_policies::table
        .filter(governance_policies::tenant_id.eq(tenant.as_str()))
        .filter(governance_policies::policy_id.eq(id.as_uuid()))
        .select((
            Row::as_select(),
            governance_policies::document,
            governance_policies::source,
            governance_policies::source_syntax,
        ))
        .first(conn)
        .await
        .optional()?;
    let (row, canonical, source, syntax) = found.ok_or(PolicyError::NotFound)?;
    let document = document::from_value(&canonical).map_err(|_| PolicyError::CorruptRow)?;
    Ok(Policy {
        summary: summary(row)?,
        document,
        source,
        source_syntax: match syntax.as_str() {
            "yaml" => Syntax::Yaml,
            "json" => Syntax::Json,
            _ => return Err(PolicyError::CorruptRow),
        },
    })
}

/// Filters of the list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub mode: Option<Mode>,
    /// Policies carrying this tag.
    pub tag: Option<String>,
}

/// One page of the tenant's policies, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &Filter,
    page: PageRequest<'_>,
) -> Result<Page<PolicySummary>, PolicyError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Ascending)?;
    let mut query = governance_policies::table
        .filter(governance_policies::tenant_id.eq(tenant.as_str()))
        .select(Row::as_select())
        .order(governance_policies::policy_id)
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(mode) = filter.mode {
        query = query.filter(governance_policies::mode.eq(mode.as_str()));
    }
    if let Some(tag) = &filter.tag {
        query = query.filter(governance_policies::tags.contains(vec![tag.clone()]));
    }
    if let Some(after) = keyset.after_id::<governance_policies::policy_id, _>() {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    keyset
        .page(rows, |r| Position::id(r.policy_id))
        .try_map(summary)
}

/// A policy as evaluation uses it: its current version and document.
#[derive(Debug, Clone, PartialEq)]
pub struct Active {
    pub id: PolicyId,
    pub version: i32,
    pub document: PolicyDocument,
    /// The first transaction id whose recorded batches this version acts on through a scan's
    /// evaluation: the version's creation's snapshot xmax (0 for versions from before the rule).
    pub acts_from_txid: i64,
}

impl Active {
    /// Whether the policy looks at `connector`: an empty scope looks at all of them.
    pub fn covers(&self, connector: ids::ConnectorId) -> bool {
        let scope = &self.document.spec.scope.connectors;
        scope.is_empty() || scope.contains(&connector)
    }
}

/// The tenant's policies, each at its current version, oldest first. A stored document that
/// no longer reads is skipped and logged: one bad row must not stop every other policy.
pub async fn active(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<Vec<Active>, DieselError> {
    #[derive(diesel::QueryableByName)]
    struct Current {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        policy_id: Uuid,
        #[diesel(sql_type = diesel::sql_types::Integer)]
        version: i32,
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        document: Value,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        acts_from_txid: i64,
    }
    let rows: Vec<Current> = db::sql(
        "SELECT p.policy_id, p.version, p.document, v.acts_from_txid
           FROM governance_policies p
           JOIN governance_policy_versions v
             ON v.tenant_id = p.tenant_id AND v.policy_id = p.policy_id
            AND v.version = p.version
          WHERE p.tenant_id = $1
          ORDER BY p.policy_id",
    )
    .bind::<diesel::sql_types::Text, _>(tenant.as_str())
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| match document::from_value(&row.document) {
            Ok(document) => Some(Active {
                id: PolicyId::from_uuid(row.policy_id),
                version: row.version,
                document,
                acts_from_txid: row.acts_from_txid,
            }),
            Err(_) => {
                tracing::error!(tenant = %tenant, policy = %row.policy_id, "a stored policy is unreadable; it is not evaluated");
                None
            }
        })
        .collect())
}

/// The action of `kind` in a policy's document at `version` (kept after the policy changed or
/// was deleted), or None when there is no such version or action.
pub async fn action_at(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: PolicyId,
    version: i32,
    kind: ActionType,
) -> Result<Option<Action>, DieselError> {
    Ok(document_at(conn, tenant, id, version)
        .await?
        .and_then(|doc| {
            doc.spec
                .actions
                .into_iter()
                .find(|a| a.action_type() == kind)
        }))
}

/// The conditions of a policy's document at `version` (kept after the policy changed or was
/// deleted), or None when there is no such version.
pub async fn conditions_at(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: PolicyId,
    version: i32,
) -> Result<Option<Vec<Condition>>, DieselError> {
    Ok(document_at(conn, tenant, id, version)
        .await?
        .map(|doc| doc.spec.conditions))
}

/// A policy's document at `version`, or None when there is no such version or its stored
/// document no longer reads as a policy.
async fn document_at(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: PolicyId,
    version: i32,
) -> Result<Option<PolicyDocument>, DieselError> {
    let stored: Option<Value> = governance_policy_versions::table
        .filter(governance_policy_versions::tenant_id.eq(tenant.as_str()))
        .filter(governance_policy_versions::policy_id.eq(id.as_uuid()))
        .filter(governance_policy_versions::version.eq(version))
        .select(governance_policy_versions::document)
        .first(conn)
        .await
        .optional()?;
    Ok(stored.and_then(|canonical| document::from_value(&canonical).ok()))
}

/// Adds each policy's findings matched by a batch to its `findings_matched`, and sets its
/// `last_triggered` to `at`, in one statement. A policy that matched nothing is not named.
pub async fn count_matches(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    matched: &[(PolicyId, i64)],
    at: OffsetDateTime,
) -> Result<(), DieselError> {
    if matched.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = matched.iter().map(|(id, _)| id.as_uuid()).collect();
    let counts: Vec<i64> = matched.iter().map(|(_, n)| *n).collect();
    db::sql(
        "UPDATE governance_policies p
            SET findings_matched = p.findings_matched + m.n, last_triggered = $4
           FROM unnest($2::uuid[], $3::int8[]) AS m(policy_id, n)
          WHERE p.tenant_id = $1 AND p.policy_id = m.policy_id",
    )
    .bind::<diesel::sql_types::Text, _>(tenant.as_str())
    .bind::<diesel::sql_types::Array<diesel::sql_types::Uuid>, _>(&ids)
    .bind::<diesel::sql_types::Array<diesel::sql_types::BigInt>, _>(&counts)
    .bind::<diesel::sql_types::Timestamptz, _>(at)
    .execute(conn)
    .await
    .map(drop)
}

/// The tenant's policies per mode.
pub async fn count_by_mode(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<std::collections::HashMap<Mode, i64>, DieselError> {
    let rows: Vec<(String, i64)> = governance_policies::table
        .filter(governance_policies::tenant_id.eq(tenant.as_str()))
        .group_by(governance_policies::mode)
        .select((governance_policies::mode, diesel::dsl::count_star()))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(m, n)| Mode::parse(&m).map(|m| (m, n)))
        .collect())
}

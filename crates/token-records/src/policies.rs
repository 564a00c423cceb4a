//! Tokenization policies: validation, storage with versions, and the cursor-paginated list.
//! A policy names who may detokenize, but holds no value and needs no key.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use tokenize_core::policy::{MAX_TOKEN_TTL_SECONDS, parse_region};
use tokenize_core::{FailureMode, Mode, PiiType, Policy, Scope, TypeRule};
use uuid::Uuid;

use db::schema::{tokenization_policies, tokenization_policy_versions};
use ids::{TenantId, TokenPolicyId, UserId};

use crate::{FieldProblem, RecordsError};
use paging::{Keyset, Order, Page, PageRequest, Position};

const LIST: &str = "policies";

/// The rule for one PII type, as written: checked by [`validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleInput {
    pub mode: String,
    #[serde(default)]
    pub min_confidence: Option<f64>,
    #[serde(default)]
    pub deterministic_scope: Option<String>,
}

/// A policy definition as written, which is also how it is stored (the `definition` column,
/// with every default filled in). A PUT replaces the whole definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    pub name: String,
    /// Keyed by PII type code.
    pub type_rules: BTreeMap<String, RuleInput>,
    pub allowed_roles: Vec<String>,
    pub allowed_purposes: Vec<String>,
    #[serde(default)]
    pub require_reason: bool,
    #[serde(default)]
    pub failure_mode: Option<String>,
    #[serde(default)]
    pub token_ttl_seconds: Option<u64>,
    #[serde(default)]
    pub default_region: Option<String>,
}

/// A stored policy: its definition with every default written out, and its identity.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRecord {
    pub policy_id: TokenPolicyId,
    /// 1 on creation; each update adds one.
    pub version: i32,
    pub definition: Definition,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// The most entries `allowed_roles` and `allowed_purposes` may hold.
const MAX_LABELS: usize = 100;
/// More rules than PII types cannot all be valid; past this many, only the count is reported.
const MAX_TYPE_RULES: usize = 32;

fn problem(field: impl Into<String>, problem: &'static str) -> FieldProblem {
    FieldProblem {
        field: field.into(),
        problem,
    }
}

fn label_ok(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.chars().count() <= max
        && !s.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Checks a policy definition and fills in its defaults. Every problem is reported, each
/// naming its field.
pub fn validate(input: &Definition) -> Result<Policy, Vec<FieldProblem>> {
    let mut problems = Vec::new();
    let name = input.name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        problems.push(problem(
            "name",
            "must be 1 to 200 characters without control characters",
        ));
    }
    if input.type_rules.is_empty() {
        problems.push(problem(
            "type_rules",
            "must hold a rule for at least one PII type",
        ));
    }
    let mut type_rules = BTreeMap::new();
    if input.type_rules.len() > MAX_TYPE_RULES {
        problems.push(problem(
            "type_rules",
            "holds more rules than there are PII types",
        ));
    }
    for (code, rule) in input.type_rules.iter().take(MAX_TYPE_RULES) {
        // A client may write a value as a key: it is named back only when it looks like a
        // field name.
        let shown = if ids::field_name_like(code) {
            code.as_str()
        } else {
            "…"
        };
        let field = format!("type_rules.{shown}");
        let Ok(pii_type) = code.parse::<PiiType>() else {
            problems.push(problem(field, "is not a supported PII type"));
            continue;
        };
        let mode = rule.mode.parse::<Mode>();
        if mode.is_err() {
            problems.push(problem(
                format!("{field}.mode"),
                "must be deterministic, randomized or format_preserving",
            ));
        }
        let min_confidence = rule.min_confidence.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&min_confidence) {
            problems.push(problem(
                format!("{field}.min_confidence"),
                "must be between 0.0 and 1.0",
            ));
        }
        let scope = rule
            .deterministic_scope
            .as_deref()
            .unwrap_or("global")
            .parse::<Scope>();
        if scope.is_err() {
            problems.push(problem(
                format!("{field}.deterministic_scope"),
                "must be global or policy",
            ));
        }
        if let (Ok(mode), Ok(deterministic_scope)) = (mode, scope) {
            type_rules.insert(
                pii_type,
                TypeRule {
                    mode,
                    min_confidence,
                    deterministic_scope,
                },
            );
        }
    }
    let mut labels = |field: &str, values: &[String], max: usize| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if values.len() > MAX_LABELS {
            // One problem, whatever the length: a long list must not make a longer answer.
            problems.push(problem(field, "holds at most 100 entries"));
            return out;
        }
        for (i, v) in values.iter().enumerate() {
            if !label_ok(v, max) {
                problems.push(problem(
                    format!("{field}[{i}]"),
                    "must be 1 to 128 characters without spaces or control characters",
                ));
            } else if !out.contains(v) {
                out.push(v.clone());
            }
        }
        out
    };
    let allowed_roles = labels("allowed_roles", &input.allowed_roles, 128);
    let allowed_purposes = labels("allowed_purposes", &input.allowed_purposes, 128);
    let failure_mode = match input.failure_mode.as_deref() {
        None => Ok(FailureMode::FailClosed),
        Some(s) => s.parse::<FailureMode>(),
    };
    if failure_mode.is_err() {
        problems.push(problem("failure_mode", "must be fail-closed or fail-open"));
    }
    if let Some(ttl) = input.token_ttl_seconds
        && !(1..=MAX_TOKEN_TTL_SECONDS).contains(&ttl)
    {
        problems.push(problem(
            "token_ttl_seconds",
            "must be between 1 second and 10 years, or null",
        ));
    }
    let region = parse_region(input.default_region.as_deref().unwrap_or("US"));
    if region.is_none() {
        problems.push(problem(
            "default_region",
            "must be an ISO 3166 alpha-2 region code such as US or CA",
        ));
    }
    match (problems.is_empty(), failure_mode, region) {
        (true, Ok(failure_mode), Some(default_region)) => Ok(Policy {
            name: name.to_owned(),
            type_rules,
            allowed_roles,
            allowed_purposes,
            require_reason: input.require_reason,
            failure_mode,
            token_ttl_seconds: input.token_ttl_seconds,
            default_region,
        }),
        _ => Err(problems),
    }
}

/// The stored form of a policy: the input with every default written out.
fn stored(policy: &Policy) -> Value {
    let input = Definition {
        name: policy.name.clone(),
        type_rules: policy
            .type_rules
            .iter()
            .map(|(t, r)| {
                (
                    t.as_str().to_owned(),
                    RuleInput {
                        mode: r.mode.as_str().to_owned(),
                        min_confidence: Some(r.min_confidence),
                        deterministic_scope: Some(r.deterministic_scope.as_str().to_owned()),
                    },
                )
            })
            .collect(),
        allowed_roles: policy.allowed_roles.clone(),
        allowed_purposes: policy.allowed_purposes.clone(),
        require_reason: policy.require_reason,
        failure_mode: Some(policy.failure_mode.as_str().to_owned()),
        token_ttl_seconds: policy.token_ttl_seconds,
        default_region: Some(policy.default_region.as_ref().to_owned()),
    };
    serde_json::to_value(input).unwrap_or(Value::Null)
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = tokenization_policies, check_for_backend(diesel::pg::Pg))]
struct Row {
    policy_id: Uuid,
    version: i32,
    definition: Value,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

/// A policy as tokenization uses it.
#[derive(Debug, Clone)]
pub struct StoredPolicy {
    pub policy_id: TokenPolicyId,
    pub version: i32,
    pub policy: Policy,
}

fn view(row: Row) -> Result<PolicyRecord, RecordsError> {
    let mut definition: Definition =
        serde_json::from_value(row.definition).map_err(|_| RecordsError::CorruptPolicy)?;
    // Shown in the spec's spelling, whichever spelling was stored.
    let failure_mode = match definition.failure_mode.as_deref() {
        None => FailureMode::FailClosed,
        Some(s) => s.parse().map_err(|()| RecordsError::CorruptPolicy)?,
    };
    definition.failure_mode = Some(failure_mode.as_str().to_owned());
    definition
        .default_region
        .get_or_insert_with(|| "US".to_owned());
    Ok(PolicyRecord {
        policy_id: TokenPolicyId::from_uuid(row.policy_id),
        version: row.version,
        definition,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

pub async fn create(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    input: &Definition,
) -> Result<PolicyRecord, RecordsError> {
    let policy = validate(input).map_err(RecordsError::Invalid)?;
    let definition = stored(&policy);
    let policy_id = Uuid::now_v7();
    let row = conn
        .transaction(async |conn| {
            let row: Row = diesel::insert_into(tokenization_policies::table)
                .values((
                    tokenization_policies::tenant_id.eq(tenant.as_str()),
                    tokenization_policies::policy_id.eq(policy_id),
                    tokenization_policies::version.eq(1),
                    tokenization_policies::name.eq(&policy.name),
                    tokenization_policies::definition.eq(&definition),
                    tokenization_policies::created_by.eq(actor.as_str()),
                    tokenization_policies::updated_by.eq(actor.as_str()),
                ))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            record_version(conn, tenant, actor, policy_id, 1, &policy.name, &definition).await?;
            Ok::<_, RecordsError>(row)
        })
        .await?;
    view(row)
}

async fn record_version(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    policy_id: Uuid,
    version: i32,
    name: &str,
    definition: &Value,
) -> Result<(), RecordsError> {
    diesel::insert_into(tokenization_policy_versions::table)
        .values((
            tokenization_policy_versions::tenant_id.eq(tenant.as_str()),
            tokenization_policy_versions::policy_id.eq(policy_id),
            tokenization_policy_versions::version.eq(version),
            tokenization_policy_versions::name.eq(name),
            tokenization_policy_versions::definition.eq(definition),
            tokenization_policy_versions::created_by.eq(actor.as_str()),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Replaces a policy's whole definition after validating it, and bumps its version.
pub async fn update(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    policy_id: TokenPolicyId,
    input: &Definition,
) -> Result<PolicyRecord, RecordsError> {
    let policy = validate(input).map_err(RecordsError::Invalid)?;
    let definition = stored(&policy);
    let row = conn
        .transaction(async |conn| {
            let row: Option<Row> = diesel::update(
                tokenization_policies::table
                    .filter(tokenization_policies::tenant_id.eq(tenant.as_str()))
                    .filter(tokenization_policies::policy_id.eq(policy_id.as_uuid())),
            )
            .set((
                tokenization_policies::version.eq(tokenization_policies::version + 1),
                tokenization_policies::name.eq(&policy.name),
                tokenization_policies::definition.eq(&definition),
                tokenization_policies::updated_at.eq(diesel::dsl::now),
                tokenization_policies::updated_by.eq(actor.as_str()),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await
            .optional()?;
            let row = row.ok_or(RecordsError::PolicyNotFound)?;
            record_version(
                conn,
                tenant,
                actor,
                policy_id.as_uuid(),
                row.version,
                &policy.name,
                &definition,
            )
            .await?;
            Ok::<_, RecordsError>(row)
        })
        .await?;
    view(row)
}

/// One policy as stored, with every default written out: what an edit form starts from.
pub async fn find(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: TokenPolicyId,
) -> Result<PolicyRecord, RecordsError> {
    let row: Row = tokenization_policies::table
        .filter(tokenization_policies::tenant_id.eq(tenant.as_str()))
        .filter(tokenization_policies::policy_id.eq(id.as_uuid()))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or(RecordsError::PolicyNotFound)?;
    view(row)
}

/// The policy tokenization runs under.
pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: TokenPolicyId,
) -> Result<StoredPolicy, RecordsError> {
    let row: Row = tokenization_policies::table
        .filter(tokenization_policies::tenant_id.eq(tenant.as_str()))
        .filter(tokenization_policies::policy_id.eq(id.as_uuid()))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or(RecordsError::PolicyNotFound)?;
    let input: Definition =
        serde_json::from_value(row.definition).map_err(|_| RecordsError::CorruptPolicy)?;
    let policy = validate(&input).map_err(|_| RecordsError::CorruptPolicy)?;
    Ok(StoredPolicy {
        policy_id: TokenPolicyId::from_uuid(row.policy_id),
        version: row.version,
        policy,
    })
}

/// One page of the tenant's policies, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    page: PageRequest<'_>,
) -> Result<Page<PolicyRecord>, RecordsError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Ascending)?;
    let mut query = tokenization_policies::table
        .filter(tokenization_policies::tenant_id.eq(tenant.as_str()))
        .select(Row::as_select())
        .order((
            tokenization_policies::created_at,
            tokenization_policies::policy_id,
        ))
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(after) =
        keyset.after::<tokenization_policies::created_at, tokenization_policies::policy_id, _>()?
    {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    keyset
        .page(rows, |r| Position::at(r.created_at, r.policy_id))
        .try_map(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition(value: Value) -> Definition {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_long_list_is_one_problem_and_a_value_as_a_key_is_not_named_back() {
        let problems = validate(&definition(serde_json::json!({
            "name": "n",
            "type_rules": {"219-09-9999": {"mode": "deterministic"}},
            "allowed_roles": vec![""; 100_000],
            "allowed_purposes": vec![" "; 100],
        })))
        .unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields
                .iter()
                .filter(|f| f.starts_with("allowed_roles"))
                .count(),
            1
        );
        assert!(fields.contains(&"allowed_roles"), "{fields:?}");
        assert_eq!(
            fields
                .iter()
                .filter(|f| f.starts_with("allowed_purposes["))
                .count(),
            100,
            "within the limit, each bad entry is named"
        );
        assert!(fields.contains(&"type_rules.…"), "{fields:?}");
        assert!(!fields.iter().any(|f| f.contains("9999")), "{fields:?}");
    }
}

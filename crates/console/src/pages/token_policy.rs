//! A tokenization policy's form (the API's `tokenization_policies` group, admin by default):
//! new, or an existing one to edit, saved by the same domain calls as `POST` and
//! `PUT /tokens/policies` with the same validation; every problem is named beside the form,
//! which keeps what was typed.

use std::collections::BTreeMap;

use askama::Template;
use diesel_async::AsyncPgConnection;
use ids::TokenPolicyId;
use token_records::RecordsError;
use token_records::policies::{Definition, PolicyRecord, RuleInput};
use tokenize_core::PiiType;

use super::Failure;
use super::settings::Submitted;
use crate::layout::{Layout, Section};
use crate::view::Viewer;

const MODES: [&str; 3] = ["deterministic", "randomized", "format_preserving"];

/// One PII type's row of the form.
#[derive(Debug)]
pub struct RuleRow {
    pub pii_type: &'static str,
    /// Empty: not tokenized by this policy.
    pub mode: String,
    pub min_confidence: String,
    pub scope: String,
}

/// The form's fields, as typed.
#[derive(Debug)]
pub struct PolicyFields {
    pub name: String,
    pub rules: Vec<RuleRow>,
    pub allowed_roles: String,
    pub allowed_purposes: String,
    pub require_reason: bool,
    pub failure_mode: String,
    pub token_ttl_seconds: String,
    pub default_region: String,
}

#[derive(Template)]
#[template(path = "token_policy.html")]
struct PolicyPage {
    layout: Layout,
    /// The form's action.
    action: String,
    version: Option<i32>,
    fields: PolicyFields,
    modes: [&'static str; 3],
    problems: Vec<String>,
}

impl PolicyFields {
    fn empty() -> Self {
        PolicyFields {
            name: String::new(),
            rules: PiiType::ALL
                .iter()
                .map(|t| RuleRow {
                    pii_type: t.as_str(),
                    mode: String::new(),
                    min_confidence: String::new(),
                    scope: "global".into(),
                })
                .collect(),
            allowed_roles: String::new(),
            allowed_purposes: String::new(),
            require_reason: false,
            failure_mode: "fail-closed".into(),
            token_ttl_seconds: String::new(),
            default_region: "US".into(),
        }
    }

    fn of(record: &PolicyRecord) -> Self {
        let d = &record.definition;
        let mut fields = PolicyFields::empty();
        for row in &mut fields.rules {
            if let Some(rule) = d.type_rules.get(row.pii_type) {
                row.mode = rule.mode.clone();
                row.min_confidence = rule
                    .min_confidence
                    .map(|c| c.to_string())
                    .unwrap_or_default();
                row.scope = rule
                    .deterministic_scope
                    .clone()
                    .unwrap_or_else(|| "global".into());
            }
        }
        fields.name = d.name.clone();
        fields.allowed_roles = d.allowed_roles.join(" ");
        fields.allowed_purposes = d.allowed_purposes.join(" ");
        fields.require_reason = d.require_reason;
        fields.failure_mode = d
            .failure_mode
            .clone()
            .unwrap_or_else(|| "fail-closed".into());
        fields.token_ttl_seconds = d
            .token_ttl_seconds
            .map(|s| s.to_string())
            .unwrap_or_default();
        fields.default_region = d.default_region.clone().unwrap_or_else(|| "US".into());
        fields
    }

    /// The fields of a posted form (pairs, in order).
    pub fn posted(form: &[(String, String)]) -> Self {
        let get = |name: &str| {
            form.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let mut fields = PolicyFields::empty();
        for row in &mut fields.rules {
            row.mode = get(&format!("mode.{}", row.pii_type));
            row.min_confidence = get(&format!("min_confidence.{}", row.pii_type));
            row.scope = get(&format!("scope.{}", row.pii_type));
        }
        fields.name = get("name");
        fields.allowed_roles = get("allowed_roles");
        fields.allowed_purposes = get("allowed_purposes");
        fields.require_reason = !get("require_reason").is_empty();
        fields.failure_mode = get("failure_mode");
        fields.token_ttl_seconds = get("token_ttl_seconds");
        fields.default_region = get("default_region");
        fields
    }

    /// The definition the API would be sent, or the fields that are not numbers.
    fn definition(&self) -> Result<Definition, Vec<String>> {
        let mut problems = Vec::new();
        let mut type_rules = BTreeMap::new();
        for row in self.rules.iter().filter(|r| !r.mode.is_empty()) {
            let min_confidence = match row.min_confidence.trim() {
                "" => None,
                text => match text.parse::<f64>() {
                    Ok(c) => Some(c),
                    Err(_) => {
                        problems.push(format!(
                            "type_rules.{}.min_confidence: must be a number between 0.0 and 1.0",
                            row.pii_type
                        ));
                        None
                    }
                },
            };
            type_rules.insert(
                row.pii_type.to_owned(),
                RuleInput {
                    mode: row.mode.clone(),
                    min_confidence,
                    deterministic_scope: Some(row.scope.clone()).filter(|s| !s.is_empty()),
                },
            );
        }
        let token_ttl_seconds = match self.token_ttl_seconds.trim() {
            "" => None,
            text => match text.parse::<u64>() {
                Ok(s) => Some(s),
                Err(_) => {
                    problems.push(
                        "token_ttl_seconds: must be a whole number of seconds, or empty".into(),
                    );
                    None
                }
            },
        };
        let words = |s: &str| -> Vec<String> {
            s.split([',', ' ', '\n', '\r', '\t'])
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect()
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Definition {
            name: self.name.clone(),
            type_rules,
            allowed_roles: words(&self.allowed_roles),
            allowed_purposes: words(&self.allowed_purposes),
            require_reason: self.require_reason,
            failure_mode: Some(self.failure_mode.clone()).filter(|s| !s.is_empty()),
            token_ttl_seconds,
            default_region: Some(self.default_region.trim().to_owned()).filter(|s| !s.is_empty()),
        })
    }
}

fn render(
    viewer: &Viewer,
    id: Option<TokenPolicyId>,
    version: Option<i32>,
    fields: PolicyFields,
    problems: Vec<String>,
) -> Result<String, Failure> {
    let (title, action) = match id {
        Some(id) => (
            "Edit tokenization policy",
            format!("/console/tokenization/policies/{id}"),
        ),
        None => (
            "New tokenization policy",
            "/console/tokenization/policies".to_owned(),
        ),
    };
    Ok(PolicyPage {
        layout: Layout::new(viewer, Section::Tokenization, title),
        action,
        version,
        fields,
        modes: MODES,
        problems,
    }
    .render()?)
}

fn policy_id(id: &str) -> Result<TokenPolicyId, Failure> {
    TokenPolicyId::parse(id).ok_or(Failure::NotFound("policy"))
}

/// The form: empty for a new policy (`id` None), else the stored policy's.
pub async fn policy_form(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: Option<&str>,
) -> Result<String, Failure> {
    if !viewer.may.tokenization_policies {
        return Err(Failure::Forbidden);
    }
    match id {
        None => render(viewer, None, None, PolicyFields::empty(), Vec::new()),
        Some(id) => {
            let id = policy_id(id)?;
            let record = token_records::policies::find(conn, &viewer.principal.tenant_id, id)
                .await
                .map_err(records)?;
            render(
                viewer,
                Some(id),
                Some(record.version),
                PolicyFields::of(&record),
                Vec::new(),
            )
        }
    }
}

fn records(e: RecordsError) -> Failure {
    match e {
        RecordsError::PolicyNotFound => Failure::NotFound("policy"),
        other => Failure::Internal(format!("policies: {other}")),
    }
}

/// Creates (`id` None) or replaces a policy from the posted `fields`.
pub async fn save_policy(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: Option<&str>,
    fields: PolicyFields,
) -> Result<Submitted, Failure> {
    if !viewer.may.tokenization_policies {
        return Err(Failure::Forbidden);
    }
    let id = id.map(policy_id).transpose()?;
    let definition = match fields.definition() {
        Ok(definition) => definition,
        Err(problems) => {
            return Ok(Submitted::Refused(render(
                viewer, id, None, fields, problems,
            )?));
        }
    };
    let (tenant, actor) = (&viewer.principal.tenant_id, &viewer.principal.user_id);
    let saved = match id {
        None => token_records::policies::create(conn, tenant, actor, &definition).await,
        Some(id) => token_records::policies::update(conn, tenant, actor, id, &definition).await,
    };
    match saved {
        Ok(_) => Ok(Submitted::Saved),
        Err(RecordsError::Invalid(problems)) => {
            let problems = problems
                .into_iter()
                .map(|p| format!("{}: {}", p.field, p.problem))
                .collect();
            Ok(Submitted::Refused(render(
                viewer, id, None, fields, problems,
            )?))
        }
        Err(e) => Err(records(e)),
    }
}

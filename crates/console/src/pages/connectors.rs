//! Connectors: the list with each one's status, the form that creates one (with the tenant's
//! AWS external id and GCP subject beside a trust policy to paste), one connector with its
//! non-secret configuration and scan history, and its test, scan and (confirmed) delete. Each
//! action calls the domain function the API's handler calls.

use std::collections::HashMap;

use askama::Template;
use connectors::{ConnectorError, GcpTrust, NewConnector};
use diesel_async::AsyncPgConnection;
use ids::ConnectorId;
use keys::KeyRing;
use platform::connectors::ConnectorView;
use serde_json::{Map, Value, json};

use super::posted::Posted;
use super::{Failure, Listing, count, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// How a customer's cloud must trust the platform for this tenant: what
/// `GET /connectors/external-id` and `GET /connectors/gcp-subject` answer.
#[derive(Debug, Clone)]
pub struct Trust {
    pub external_id: String,
    pub gcp: GcpTrust,
}

pub struct Row {
    pub name: String,
    pub link: String,
    pub provider: String,
    pub status: &'static str,
    pub message: String,
    pub findings: String,
    pub risk: i32,
    pub last_scan: String,
}

#[derive(Template)]
#[template(path = "connectors.html")]
struct ListPage {
    layout: Layout,
    may_create: bool,
    problem: Option<String>,
    rows: Vec<Row>,
    next: Option<String>,
}

fn row(view: &ConnectorView) -> Row {
    let c = &view.connector;
    Row {
        name: c.name.clone(),
        link: format!("/console/connectors/{}", c.id),
        provider: c.provider.as_str().to_owned(),
        status: c.status.as_str(),
        message: c.status_message.clone().unwrap_or_default(),
        findings: count(view.findings_count),
        risk: view.risk_score,
        last_scan: view.last_scan.map(when).unwrap_or_default(),
    }
}

/// The tenant's connectors, a page at a time, as `GET /connectors` lists them.
pub async fn connectors(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    listing: Listing<'_, connectors::Filter>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let (problem, rows, next) = match listing.filter.clone() {
        Ok(filter) => match platform::connectors::list(conn, tenant, filter, listing.page).await {
            Ok(page) => (
                None,
                page.items.iter().map(row).collect(),
                page.pagination
                    .next_cursor
                    .map(|c| format!("/console/connectors?{}", listing.next(&c))),
            ),
            Err(platform::PlatformError::Connector(ConnectorError::BadCursor)) => (
                Some("That page is no longer available: start again.".to_owned()),
                Vec::new(),
                None,
            ),
            Err(e) => return Err(Failure::Internal(format!("connectors: {e}"))),
        },
        Err(problem) => (Some(problem), Vec::new(), None),
    };
    let page = ListPage {
        layout: Layout::new(viewer, Section::Connectors, "Connectors"),
        may_create: viewer.may.connectors,
        problem,
        rows,
        next,
    };
    Ok(page.render()?)
}

/// The create form's fields: (form name, label, the configuration's field).
const AWS_FIELDS: [(&str, &str, &str); 2] = [
    ("aws_role_arn", "Role ARN", "role_arn"),
    ("aws_region", "Region", "region"),
];
const GCP_FIELDS: [(&str, &str, &str); 3] = [
    ("gcp_project_id", "Project id", "project_id"),
    (
        "gcp_service_account_email",
        "Service account email",
        "service_account_email",
    ),
    (
        "gcp_wif_provider",
        "Workload identity provider",
        "wif_provider",
    ),
];
const AZURE_FIELDS: [(&str, &str, &str); 4] = [
    ("azure_tenant_id", "Directory (tenant) id", "tenant_id"),
    ("azure_client_id", "Application (client) id", "client_id"),
    ("azure_client_secret", "Client secret", "client_secret"),
    (
        "azure_storage_account",
        "Storage account",
        "storage_account",
    ),
];

/// A field of the form, with what was typed in it.
pub struct Field {
    pub name: &'static str,
    pub label: &'static str,
    pub value: String,
    pub secret: bool,
}

pub struct Choice {
    pub value: &'static str,
    pub label: &'static str,
    pub checked: bool,
}

#[derive(Template)]
#[template(path = "connectors_new.html")]
struct NewPage {
    layout: Layout,
    problems: Vec<String>,
    name: String,
    providers: Vec<Choice>,
    aws: Vec<Field>,
    gcp: Vec<Field>,
    azure: Vec<Field>,
    buckets: String,
    prefixes: String,
    external_id: String,
    aws_policy: String,
    gcp_mode: &'static str,
    gcp_issuer: String,
    gcp_subject: String,
    gcp_command: String,
}

fn fields(
    all: &[(&'static str, &'static str, &'static str)],
    form: &HashMap<String, String>,
) -> Vec<Field> {
    all.iter()
        .map(|(name, label, _)| {
            let secret = name.ends_with("secret");
            Field {
                name,
                label,
                // A secret is typed again, never sent back in a page.
                value: if secret {
                    String::new()
                } else {
                    form.get(*name).cloned().unwrap_or_default()
                },
                secret,
            }
        })
        .collect()
}

/// The AWS trust policy that lets the platform assume the customer's role with the tenant's
/// external id and nothing else.
fn aws_policy(external_id: &str) -> String {
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "AWS": "<the platform's AWS principal, from your operator>" },
            "Action": "sts:AssumeRole",
            "Condition": { "StringEquals": { "sts:ExternalId": external_id } }
        }]
    });
    serde_json::to_string_pretty(&policy).unwrap_or_default()
}

fn new_page(
    viewer: &Viewer,
    trust: &Trust,
    form: &HashMap<String, String>,
    problems: Vec<String>,
) -> Result<String, Failure> {
    let provider = form.get("provider").map_or("aws", String::as_str);
    let (gcp_mode, gcp_issuer, gcp_subject, gcp_command) = match &trust.gcp {
        GcpTrust::Subject {
            issuer, subject, ..
        } => (
            "tenant_subject",
            issuer.clone(),
            subject.clone(),
            format!(
                "gcloud iam workload-identity-pools providers create-oidc dps --location=global \\\n  --workload-identity-pool=POOL --issuer-uri=\"{issuer}\" \\\n  --attribute-mapping=\"google.subject=assertion.sub\" \\\n  --attribute-condition=\"assertion.sub == '{subject}'\""
            ),
        ),
        GcpTrust::SingleIdentity => (
            "single_identity",
            String::new(),
            String::new(),
            String::new(),
        ),
        GcpTrust::NotConfigured => (
            "not_configured",
            String::new(),
            String::new(),
            String::new(),
        ),
    };
    let page = NewPage {
        layout: Layout::new(viewer, Section::Connectors, "New connector"),
        problems,
        name: form.get("name").cloned().unwrap_or_default(),
        providers: [
            ("aws", "AWS S3"),
            ("gcp", "Google Cloud Storage"),
            ("azure", "Azure Blob Storage"),
        ]
        .into_iter()
        .map(|(value, label)| Choice {
            value,
            label,
            checked: value == provider,
        })
        .collect(),
        aws: fields(&AWS_FIELDS, form),
        gcp: fields(&GCP_FIELDS, form),
        azure: fields(&AZURE_FIELDS, form),
        buckets: form.get("buckets").cloned().unwrap_or_default(),
        prefixes: form.get("prefixes").cloned().unwrap_or_default(),
        external_id: trust.external_id.clone(),
        aws_policy: aws_policy(&trust.external_id),
        gcp_mode,
        gcp_issuer,
        gcp_subject,
        gcp_command,
    };
    Ok(page.render()?)
}

/// The empty create form.
pub fn new_connector(viewer: &Viewer, trust: &Trust) -> Result<String, Failure> {
    if !viewer.may.connectors {
        return Err(Failure::Forbidden);
    }
    new_page(viewer, trust, &HashMap::new(), Vec::new())
}

/// A list field: one item per line or comma, blanks dropped; absent when empty.
fn list(raw: Option<&String>) -> Option<Value> {
    let items: Vec<Value> = raw
        .map(String::as_str)
        .unwrap_or_default()
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| Value::String(s.to_owned()))
        .collect();
    (!items.is_empty()).then_some(Value::Array(items))
}

/// The request the form makes: the provider's fields (an AWS connector's external id is the
/// tenant's own), and the buckets and prefixes when given.
fn config(provider: &str, form: &HashMap<String, String>, trust: &Trust) -> Value {
    let chosen: &[(&str, &str, &str)] = match provider {
        "aws" => &AWS_FIELDS,
        "gcp" => &GCP_FIELDS,
        "azure" => &AZURE_FIELDS,
        _ => &[],
    };
    let mut config = Map::new();
    for (name, _, field) in chosen {
        let value = form.get(*name).map_or("", |v| v.trim());
        config.insert((*field).to_owned(), Value::String(value.to_owned()));
    }
    if provider == "aws" {
        config.insert(
            "external_id".into(),
            Value::String(trust.external_id.clone()),
        );
    }
    for (name, field) in [("buckets", "buckets"), ("prefixes", "prefixes")] {
        if let Some(items) = list(form.get(name)) {
            config.insert(field.into(), items);
        }
    }
    Value::Object(config)
}

/// A field's label on the form, for a problem the store names by its field.
fn label_of(field: &str) -> String {
    let bare = field.strip_prefix("config.").unwrap_or(field);
    AWS_FIELDS
        .iter()
        .chain(&GCP_FIELDS)
        .chain(&AZURE_FIELDS)
        .find(|(_, _, f)| *f == bare)
        .map(|(_, label, _)| (*label).to_owned())
        .unwrap_or_else(|| match bare {
            "name" => "Name".to_owned(),
            "provider" => "Provider".to_owned(),
            "buckets" => "Buckets".to_owned(),
            "prefixes" => "Prefixes".to_owned(),
            "external_id" => "External id".to_owned(),
            other => other.to_owned(),
        })
}

/// Creates a connector from the form as `POST /connectors` creates one; an invalid form is
/// the form again, with each problem and what was typed.
pub async fn create_connector(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    viewer: &Viewer,
    trust: &Trust,
    form: &HashMap<String, String>,
) -> Result<Posted, Failure> {
    if !viewer.may.connectors {
        return Err(Failure::Forbidden);
    }
    let provider = form.get("provider").map_or("", String::as_str);
    let name = form.get("name").map_or("", String::as_str);
    let config = config(provider, form, trust);
    let request = NewConnector {
        name,
        provider,
        config: &config,
        aws_external_id: &trust.external_id,
    };
    let tenant = &viewer.principal.tenant_id;
    let problems = match connectors::store::create(conn, keyring, tenant, &request).await {
        Ok(created) => {
            return Ok(Posted::Done(format!("/console/connectors/{}", created.id)));
        }
        Err(ConnectorError::Invalid(fields)) => fields
            .iter()
            .map(|f| format!("{}: {}", label_of(&f.field), f.message))
            .collect(),
        Err(ConnectorError::DuplicateName) => {
            vec!["Name: the tenant already has a connector with this name".to_owned()]
        }
        Err(e) => return Err(Failure::Internal(format!("connectors: {e}"))),
    };
    Ok(Posted::Again(new_page(viewer, trust, form, problems)?))
}

pub struct HistoryRow {
    pub link: String,
    pub status: String,
    pub started: String,
    pub completed: String,
    pub files: String,
    pub findings: String,
}

#[derive(Template)]
#[template(path = "connectors_detail.html")]
struct DetailPage {
    layout: Layout,
    problem: Option<String>,
    id: String,
    provider: String,
    status: &'static str,
    message: String,
    findings: String,
    risk: i32,
    last_scan: String,
    created: String,
    updated: String,
    config: Vec<(String, String)>,
    history: Vec<HistoryRow>,
    may_connectors: bool,
    may_scans: bool,
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

async fn get(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ConnectorId,
) -> Result<ConnectorView, Failure> {
    match platform::connectors::get(conn, &viewer.principal.tenant_id, id).await {
        Ok(view) => Ok(view),
        Err(platform::PlatformError::Connector(ConnectorError::NotFound)) => {
            Err(Failure::NotFound("connector"))
        }
        Err(e) => Err(Failure::Internal(format!("connectors: {e}"))),
    }
}

/// One connector, as `GET /connectors/:id` shows it; `problem` is why an action was refused.
pub async fn connector(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ConnectorId,
    problem: Option<String>,
) -> Result<String, Failure> {
    let view = get(conn, viewer, id).await?;
    let c = &view.connector;
    let page = DetailPage {
        layout: Layout::new(viewer, Section::Connectors, format!("Connector {}", c.name)),
        problem,
        id: c.id.to_string(),
        provider: c.provider.as_str().to_owned(),
        status: c.status.as_str(),
        message: c.status_message.clone().unwrap_or_default(),
        findings: count(view.findings_count),
        risk: view.risk_score,
        last_scan: view.last_scan.map(when).unwrap_or_default(),
        created: when(c.created_at),
        updated: when(c.updated_at),
        config: c
            .config
            .iter()
            .map(|(k, v)| (k.clone(), shown(v)))
            .collect(),
        history: view
            .history
            .iter()
            .flatten()
            .map(|h| HistoryRow {
                link: format!("/console/scans/{}", h.scan_id),
                status: h.status.clone(),
                started: h.started_at.map(when).unwrap_or_default(),
                completed: h.completed_at.map(when).unwrap_or_default(),
                files: count(h.files_processed),
                findings: count(h.findings_count),
            })
            .collect(),
        may_connectors: viewer.may.connectors,
        may_scans: viewer.may.scans,
    };
    Ok(page.render()?)
}

/// Tests the connection as `POST /connectors/:id/test` does, and records its status. No pooled
/// connection is held while the storage is called (up to 20 s).
pub async fn test_connector(
    pool: &db::Pool,
    cloud: &connectors::Cloud,
    keyring: &KeyRing,
    viewer: &Viewer,
    id: ConnectorId,
) -> Result<(), Failure> {
    if !viewer.may.connectors {
        return Err(Failure::Forbidden);
    }
    let tenant = &viewer.principal.tenant_id;
    let failed = |e: ConnectorError| match e {
        ConnectorError::NotFound => Failure::NotFound("connector"),
        e => Failure::Internal(format!("connection test: {e}")),
    };
    let unavailable = |e| Failure::Internal(format!("pool: {e}"));
    let config = {
        let mut conn = pool.get().await.map_err(unavailable)?;
        connectors::probe::test_config(&mut conn, keyring, tenant, id)
            .await
            .map_err(failed)?
    };
    let found = connectors::probe::probe(cloud, tenant, id, &config).await;
    let mut conn = pool.get().await.map_err(unavailable)?;
    connectors::probe::record_test(&mut conn, tenant, id, found)
        .await
        .map_err(failed)?;
    Ok(())
}

/// Starts a full scan of the connector as `POST /connectors/:id/scan` does with no body; a
/// refused request is the connector's page with the reason.
pub async fn scan_connector(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ConnectorId,
    token_key: &[u8; 32],
    tier: scans::Tier,
) -> Result<Posted, Failure> {
    if !viewer.may.scans {
        return Err(Failure::Forbidden);
    }
    let ids = [id.to_string()];
    let request = scans::store::NewScan {
        connectors: &ids,
        kind: Some("full"),
        options: None,
        tier,
        origin: scans::store::Origin::Connector,
    };
    let tenant = &viewer.principal.tenant_id;
    let problem = match scans::store::create(conn, tenant, token_key, &request).await {
        Ok(created) => return Ok(Posted::Done(format!("/console/scans/{}", created.id))),
        Err(scans::ScanError::ConnectorNotFound(_)) => return Err(Failure::NotFound("connector")),
        Err(scans::ScanError::Invalid(fields)) => fields
            .iter()
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => return Err(Failure::Internal(format!("scans: {e}"))),
    };
    Ok(Posted::Again(
        connector(
            conn,
            viewer,
            id,
            Some(format!("The scan was not started: {problem}")),
        )
        .await?,
    ))
}

#[derive(Template)]
#[template(path = "connectors_delete.html")]
struct DeletePage {
    layout: Layout,
    problem: Option<String>,
    id: String,
    name: String,
    findings: String,
}

async fn delete_page(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ConnectorId,
    problem: Option<String>,
) -> Result<String, Failure> {
    if !viewer.may.connectors {
        return Err(Failure::Forbidden);
    }
    let view = get(conn, viewer, id).await?;
    let page = DeletePage {
        layout: Layout::new(viewer, Section::Connectors, "Delete connector"),
        problem,
        id: view.connector.id.to_string(),
        name: view.connector.name.clone(),
        findings: count(view.findings_count),
    };
    Ok(page.render()?)
}

/// The confirmation a delete asks for, with what it takes away.
pub async fn confirm_delete(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ConnectorId,
) -> Result<String, Failure> {
    delete_page(conn, viewer, id, None).await
}

/// Deletes the connector with its scan history and findings, as `DELETE /connectors/:id`
/// does; remediations under way refuse it, said on the confirmation page.
pub async fn delete_connector(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    id: ConnectorId,
) -> Result<Posted, Failure> {
    use governance::offboard::DeleteError;
    if !viewer.may.connectors {
        return Err(Failure::Forbidden);
    }
    let problem = match governance::offboard::delete(conn, &viewer.principal.tenant_id, id).await {
        Ok(()) => return Ok(Posted::Done("/console/connectors".into())),
        Err(DeleteError::Connector(ConnectorError::NotFound)) => {
            return Err(Failure::NotFound("connector"));
        }
        Err(DeleteError::RemediationsUnderWay(_)) => "Remediations of this connector are \
            between their snapshot and their receipt: delete it once they end (usually within \
            seconds)."
            .to_owned(),
        Err(e) => return Err(Failure::Internal(format!("delete connector: {e}"))),
    };
    Ok(Posted::Again(
        delete_page(conn, viewer, id, Some(problem)).await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_makes_the_providers_request_with_the_tenants_external_id() {
        let trust = Trust {
            external_id: "dps-0123".into(),
            gcp: GcpTrust::NotConfigured,
        };
        let form: HashMap<String, String> = [
            ("aws_role_arn", " arn:aws:iam::123456789012:role/r "),
            ("aws_region", "us-east-1"),
            ("gcp_project_id", "ignored-here"),
            ("buckets", "a, b\nc\n\n"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(
            config("aws", &form, &trust),
            json!({
                "role_arn": "arn:aws:iam::123456789012:role/r",
                "region": "us-east-1",
                "external_id": "dps-0123",
                "buckets": ["a", "b", "c"],
            })
        );
        let gcp = config("gcp", &form, &trust);
        assert_eq!(gcp["project_id"], "ignored-here");
        assert!(gcp.get("external_id").is_none());
        assert_eq!(label_of("config.role_arn"), "Role ARN");
    }
}

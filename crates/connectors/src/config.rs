//! A connector's configuration, validated per provider. Every problem is reported at once, each
//! naming its field, and no message repeats a value (a secret may be among them).

use serde::Serialize;
use serde_json::{Map, Value};

/// The cloud a connector reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Aws,
    Gcp,
    Azure,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::Aws, Provider::Gcp, Provider::Azure];

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Aws => "aws",
            Provider::Gcp => "gcp",
            Provider::Azure => "azure",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Provider::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// The fields a configuration must have.
    fn required(self) -> &'static [&'static str] {
        match self {
            Provider::Aws => &["role_arn", "external_id", "region"],
            Provider::Gcp => &["project_id", "service_account_email", "wif_provider"],
            Provider::Azure => &["tenant_id", "client_id", "client_secret", "storage_account"],
        }
    }

    /// The fields that are secrets: stored encrypted, never returned.
    fn secrets(self) -> &'static [&'static str] {
        match self {
            Provider::Azure => &["client_secret"],
            Provider::Aws | Provider::Gcp => &[],
        }
    }
}

/// Optional fields every provider accepts.
const OPTIONAL: &[&str] = &["buckets", "prefixes", "file_types", "lkg_location"];

/// Limits on the optional lists.
const MAX_BUCKETS: usize = 100;
const MAX_PREFIXES: usize = 100;
/// At most this many file types, in a connector's configuration or a scan's options: every
/// listed object is checked against them, and they are stored and shown with the connector.
pub const MAX_FILE_TYPES: usize = 100;
const MAX_PREFIX_LEN: usize = 1024;

/// The file types the detection engine reads by their structure (`gz` for any of them
/// gzipped). A scan may name any other extension too ([`file_type`]): such objects are read as
/// text when they are text, and skipped with a reason when they are binary.
pub const FILE_TYPES: &[&str] = &[
    "txt", "log", "md", "csv", "tsv", "json", "ndjson", "jsonl", "gz",
];

/// The longest file extension accepted in `file_types`.
pub const MAX_FILE_TYPE_LEN: usize = 16;

/// A `file_types` entry as an extension to match: without its leading dots, in lower case;
/// None unless it is 1 to [`MAX_FILE_TYPE_LEN`] letters, digits, `_`, `+` or `-` (no dot, no
/// separator, no space).
pub fn file_type(raw: &str) -> Option<String> {
    let t = raw.trim_start_matches('.').to_ascii_lowercase();
    let valid = !t.is_empty()
        && t.len() <= MAX_FILE_TYPE_LEN
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-'));
    valid.then_some(t)
}

/// One problem with one field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// `config.role_arn`, `name`, ...
    pub field: String,
    pub message: String,
}

fn error(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: format!("config.{field}"),
        message: message.into(),
    }
}

/// A validated configuration, split into what may be shown and what is secret.
#[derive(Clone, PartialEq)]
pub struct Config {
    pub provider: Provider,
    /// Every non-secret field, as given: returned by the API and stored in the clear.
    pub public: Map<String, Value>,
    /// Secret fields by name: stored sealed under the tenant's data key, never returned.
    pub secrets: Map<String, Value>,
}

/// Shows the secrets' names, never their values.
impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("provider", &self.provider)
            .field("public", &self.public)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Config {
    /// Buckets (or Azure containers) to scan; empty means every one the identity can list.
    pub fn buckets(&self) -> Vec<String> {
        strings(self.public.get("buckets"))
    }

    pub fn prefixes(&self) -> Vec<String> {
        strings(self.public.get("prefixes"))
    }

    /// The extensions to scan, as matched: without leading dots, in lower case. The stored
    /// list keeps what was typed (`.CSV`), which matches no key as it stands.
    pub fn file_types(&self) -> Vec<String> {
        strings(self.public.get("file_types"))
            .iter()
            .filter_map(|t| file_type(t))
            .collect()
    }

    /// The bucket (Azure container) where remediation keeps its last-known-good snapshots;
    /// `None` keeps each snapshot in its object's own bucket.
    pub fn lkg_location(&self) -> Option<String> {
        self.public
            .get("lkg_location")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// A required text field (validated, so present).
    pub fn text(&self, field: &str) -> &str {
        self.public
            .get(field)
            .or_else(|| self.secrets.get(field))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Validates `config` for `provider`: every missing, unknown or malformed field is reported.
pub fn validate(provider: Provider, config: &Value) -> Result<Config, Vec<FieldError>> {
    let Some(object) = config.as_object() else {
        return Err(vec![FieldError {
            field: "config".into(),
            message: "must be an object".into(),
        }]);
    };
    let errors = field_errors(provider, object, true);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut public = Map::new();
    let mut secrets = Map::new();
    for (field, value) in object {
        if provider.secrets().contains(&field.as_str()) {
            secrets.insert(field.clone(), value.clone());
        } else {
            public.insert(field.clone(), value.clone());
        }
    }
    Ok(Config {
        provider,
        public,
        secrets,
    })
}

/// Checks the public part of a configuration, as a scan worker receives it from the platform
/// (secrets stay with the platform): the same rules as [`validate`], without requiring the
/// secrets. A worker must not build a storage URL from a field nobody checked: the platform
/// checked it when the connector was made, but the answer reaching the worker may not be the
/// platform's.
pub fn check_public(
    provider: Provider,
    public: &Map<String, Value>,
) -> Result<(), Vec<FieldError>> {
    let errors = field_errors(provider, public, false);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn field_errors(
    provider: Provider,
    object: &Map<String, Value>,
    require_secrets: bool,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in provider.required() {
        if !require_secrets && provider.secrets().contains(field) && !object.contains_key(*field) {
            continue;
        }
        match object.get(*field) {
            None | Some(Value::Null) => errors.push(error(field, "is required")),
            Some(Value::String(s)) => {
                if let Err(message) = check(field, s) {
                    errors.push(error(field, message));
                }
            }
            Some(_) => errors.push(error(field, "must be a string")),
        }
    }
    // Sorted, so the errors come in the same order whether or not serde_json keeps insertion
    // order (a feature another crate in the build may turn on).
    let mut others: Vec<(&String, &Value)> = object.iter().collect();
    others.sort_by(|a, b| a.0.cmp(b.0));
    let mut unknown = 0usize;
    for (field, value) in others {
        if provider.required().contains(&field.as_str()) {
            continue;
        }
        if !OPTIONAL.contains(&field.as_str()) {
            // A client may write a value as a key: it is named back only when it looks like
            // a field name, and only the first few are named.
            unknown += 1;
            if unknown <= MAX_UNKNOWN_NAMED {
                errors.push(error(
                    field_name(field),
                    format!("is not a {} configuration field", provider.as_str()),
                ));
            }
            continue;
        }
        let checked = if field == "lkg_location" {
            check_lkg_location(provider, value)
        } else {
            check_list(provider, field, value)
        };
        if let Err(message) = checked {
            errors.push(error(field, message));
        }
    }
    if unknown > MAX_UNKNOWN_NAMED {
        errors.push(FieldError {
            field: "config".into(),
            message: format!("holds {unknown} fields that are not configuration fields"),
        });
    }
    errors
}

/// Unknown fields named one by one; past this many, only their count.
pub const MAX_UNKNOWN_NAMED: usize = 10;

/// An unknown field's name as it may be shown: only when it looks like a field name (a client
/// may write a value as a key).
fn field_name(field: &str) -> &str {
    if ids::field_name_like(field) {
        field
    } else {
        "…"
    }
}

/// Checks one required text field.
fn check(field: &str, s: &str) -> Result<(), &'static str> {
    let ok = match field {
        "role_arn" => is_role_arn(s),
        "external_id" => {
            (2..=1224).contains(&s.len())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+=,.@:/-_".contains(&b))
        }
        "region" => is_aws_region(s),
        "project_id" => {
            (6..=30).contains(&s.len())
                && s.starts_with(|c: char| c.is_ascii_lowercase())
                && !s.ends_with('-')
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        }
        "service_account_email" => {
            s.len() <= 254
                && s.split_once('@').is_some_and(|(local, domain)| {
                    !local.is_empty()
                        && local.bytes().all(|b| {
                            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                        })
                        && domain.contains('.')
                        && domain.bytes().all(|b| {
                            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                        })
                })
        }
        "wif_provider" => is_wif_provider(s),
        "tenant_id" | "client_id" => is_guid(s),
        "client_secret" => !s.is_empty() && s.len() <= 1024,
        "storage_account" => {
            (3..=24).contains(&s.len())
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        }
        _ => true,
    };
    if ok {
        return Ok(());
    }
    Err(match field {
        "role_arn" => "must be an IAM role ARN: arn:aws:iam::<12-digit account>:role/<name>",
        "external_id" => "must be 2 to 1224 characters of letters, digits and +=,.@:/-_",
        "region" => "must be an AWS region such as us-east-1",
        "project_id" => "must be a GCP project id: 6 to 30 lower-case letters, digits or hyphens",
        "service_account_email" => "must be a service account email address",
        "wif_provider" => {
            "must be a workload identity provider: \
             projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>"
        }
        "tenant_id" | "client_id" => "must be a GUID",
        "client_secret" => "must be 1 to 1024 characters",
        "storage_account" => "must be 3 to 24 lower-case letters or digits",
        _ => "is invalid",
    })
}

/// `lkg_location`: one bucket (Azure container) name, valid for the provider.
fn check_lkg_location(provider: Provider, value: &Value) -> Result<(), String> {
    let valid = |b: &str| match provider {
        Provider::Azure => is_azure_container(b),
        Provider::Aws | Provider::Gcp => is_bucket_name(b),
    };
    match value.as_str() {
        Some(bucket) if valid(bucket) => Ok(()),
        Some(_) => Err("is not a valid bucket or container name".into()),
        None => Err("must be a bucket or container name (a string)".into()),
    }
}

fn check_list(provider: Provider, field: &str, value: &Value) -> Result<(), String> {
    let Some(items) = value.as_array() else {
        return Err("must be an array of strings".into());
    };
    let mut texts = Vec::with_capacity(items.len());
    for item in items {
        match item.as_str() {
            Some(s) => texts.push(s),
            None => return Err("must be an array of strings".into()),
        }
    }
    match field {
        "buckets" => {
            if texts.len() > MAX_BUCKETS {
                return Err(format!("at most {MAX_BUCKETS} entries"));
            }
            let valid = |b: &&str| match provider {
                Provider::Azure => is_azure_container(b),
                Provider::Aws | Provider::Gcp => is_bucket_name(b),
            };
            if let Some(index) = texts.iter().position(|b| !valid(b)) {
                return Err(format!(
                    "entry {index} is not a valid bucket or container name"
                ));
            }
        }
        "prefixes" => {
            if texts.len() > MAX_PREFIXES {
                return Err(format!("at most {MAX_PREFIXES} entries"));
            }
            if let Some(index) = texts
                .iter()
                .position(|p| p.len() > MAX_PREFIX_LEN || p.chars().any(char::is_control))
            {
                return Err(format!(
                    "entry {index} must be at most {MAX_PREFIX_LEN} bytes without control characters"
                ));
            }
        }
        "file_types" => {
            if texts.len() > MAX_FILE_TYPES {
                return Err(format!("at most {MAX_FILE_TYPES} entries"));
            }
            if let Some(index) = texts.iter().position(|t| file_type(t).is_none()) {
                return Err(format!(
                    "entry {index} must be a file extension: 1 to {MAX_FILE_TYPE_LEN} letters, \
                     digits, '_', '+' or '-', with or without a leading dot"
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

fn is_role_arn(s: &str) -> bool {
    let mut parts = s.splitn(6, ':');
    let (Some("arn"), Some(partition), Some("iam"), Some(""), Some(account), Some(resource)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let Some(name) = resource.strip_prefix("role/") else {
        return false;
    };
    matches!(partition, "aws" | "aws-cn" | "aws-us-gov")
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && (1..=512).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+=,.@_/-".contains(&b))
}

fn is_aws_region(s: &str) -> bool {
    // Partition prefix, optional qualifier (gov, iso, ...), direction, number: us-east-1,
    // us-gov-west-1, ap-southeast-2.
    let parts: Vec<&str> = s.split('-').collect();
    (3..=4).contains(&parts.len())
        && parts[0].len() == 2
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts[parts.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && !parts[parts.len() - 1].is_empty()
}

fn is_wif_provider(s: &str) -> bool {
    let s = s.strip_prefix("//iam.googleapis.com/").unwrap_or(s);
    let parts: Vec<&str> = s.split('/').collect();
    let id = |p: &str| {
        (4..=32).contains(&p.len())
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    matches!(
        parts.as_slice(),
        ["projects", number, "locations", "global", "workloadIdentityPools", pool, "providers", provider]
            if !number.is_empty()
                && number.bytes().all(|b| b.is_ascii_digit())
                && id(pool)
                && id(provider)
    )
}

fn is_guid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// S3 and GCS bucket names: 3 to 63 lower-case letters, digits, `-` and `.`, starting and
/// ending with a letter or digit.
fn is_bucket_name(s: &str) -> bool {
    (3..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// Azure container names: 3 to 63 lower-case letters, digits and single hyphens.
fn is_azure_container(s: &str) -> bool {
    (3..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !s.ends_with('-')
        && !s.contains("--")
}

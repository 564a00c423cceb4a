#![doc = include_str!("../README.md")]

pub mod history;
mod model;
mod store;

pub use model::events;
pub use model::{
    Cosigning, CosigningMode, CosigningUpdate, LkgRetention, LkgRetentionChange,
    PlatformCertificate, RemediationPolicy, SafetyClass,
};

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use ids::{TenantId, UserId};
use serde_json::{Value, json};

/// The values the rollback window may take, in hours.
pub const LKG_RETENTION_OPTIONS: [u32; 3] = [24, 72, 168];

/// The rollback window of a tenant that never set one. Three days: long enough to notice a bad
/// remediation over a weekend, short enough that last-known-good snapshots (which can hold the
/// data a remediation removed) do not linger.
pub const LKG_RETENTION_DEFAULT_HOURS: u32 = 72;

/// The classes whose denial the enforcement gate applies today. The others are accepted in the
/// deny-list, so a tenant can state its intent now, but no action consults them yet.
pub const ENFORCEABLE_SAFETY_CLASSES: [SafetyClass; 3] = [
    SafetyClass::Destructive,
    SafetyClass::ReadOnly,
    SafetyClass::Reversible,
];

/// The longest co-signing endpoint URL accepted.
const MAX_ENDPOINT_URL_LEN: usize = 2048;

/// Why a settings change was refused. None of the messages repeats a submitted value.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("retention_hours must be exactly 24, 72 or 168")]
    InvalidRetention,
    /// The remediation policy body is not `{"denied_safety_classes": [<class>, ...]}`.
    #[error("{message}")]
    InvalidSafetyClass {
        message: String,
        /// The position of the offending entry in `denied_safety_classes`, when it is one.
        index: Option<usize>,
    },
    #[error("endpoint_url {0}")]
    InvalidEndpoint(&'static str),
    #[error(
        "co-signing cannot be optional or required until the platform's client certificate is \
         provisioned"
    )]
    ProvisioningIncomplete,
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

/// The tenant's rollback window, with its recent changes.
pub async fn lkg_retention(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<LkgRetention, SettingsError> {
    let row = store::find(conn, tenant).await?;
    let change_log = store::lkg_changes(conn, tenant).await?;
    Ok(lkg_view(row.as_ref(), change_log))
}

/// The tenant's rollback window in hours, alone (no change log): what a remediation's
/// `undo_until` is computed from.
pub async fn retention_hours(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<u32, SettingsError> {
    let row = store::find(conn, tenant).await?;
    Ok(lkg_view(row.as_ref(), Vec::new()).retention_hours)
}

/// Sets the rollback window. A change of value records an `lkg_retention_changed` audit entry
/// in the same transaction; setting the current value again records nothing.
pub async fn set_lkg_retention(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    hours: i64,
) -> Result<LkgRetention, SettingsError> {
    let hours = u32::try_from(hours)
        .ok()
        .filter(|h| LKG_RETENTION_OPTIONS.contains(h))
        .ok_or(SettingsError::InvalidRetention)?;
    conn.transaction(async |conn| {
        let before = store::lock(conn, tenant).await?;
        let previous = before
            .lkg_retention_hours
            .map_or(LKG_RETENTION_DEFAULT_HOURS, |h| h.unsigned_abs());
        store::set_lkg(conn, tenant, actor, hours).await?;
        if previous != hours {
            store::audit(
                conn,
                tenant,
                actor,
                events::LKG_RETENTION_CHANGED,
                json!({ "from_hours": previous, "to_hours": hours }),
            )
            .await?;
        }
        Ok::<_, SettingsError>(())
    })
    .await?;
    lkg_retention(conn, tenant).await
}

/// The tenant's remediation policy. A tenant that never set one denies nothing.
pub async fn remediation_policy(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<RemediationPolicy, SettingsError> {
    let row = store::find(conn, tenant).await?;
    Ok(remediation_view(tenant, row.as_ref()))
}

/// Replaces the deny-list from a request body, which must be exactly
/// `{"denied_safety_classes": [<class>, ...]}`, and records a `remediation_policy_changed` audit
/// entry. Duplicates are dropped and the list is stored in the API's class order.
pub async fn set_remediation_policy(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    body: &Value,
) -> Result<RemediationPolicy, SettingsError> {
    let denied = parse_denied_classes(body)?;
    conn.transaction(async |conn| {
        let before = store::lock(conn, tenant).await?;
        let previous = denied_of(Some(&before));
        store::set_denied(conn, tenant, actor, &denied).await?;
        store::audit(
            conn,
            tenant,
            actor,
            events::REMEDIATION_POLICY_CHANGED,
            json!({
                "from_denied_safety_classes": previous,
                "denied_safety_classes": denied,
            }),
        )
        .await?;
        Ok::<_, SettingsError>(())
    })
    .await?;
    remediation_policy(conn, tenant).await
}

/// What the enforcement gate decided for one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The class is not denied, or its denial is not enforced yet.
    Allowed,
    /// The tenant denies this class: the action must not run.
    Denied,
    /// The policy could not be read, so the action proceeds: the gate fails open, as the spec
    /// requires, and the failure is logged.
    AllowedPolicyUnreadable,
}

impl Gate {
    pub const ALL: [Gate; 3] = [Gate::Allowed, Gate::Denied, Gate::AllowedPolicyUnreadable];

    pub fn permits(self) -> bool {
        !matches!(self, Gate::Denied)
    }

    /// As a remediation request records it: `allowed`, `denied` or `gate_unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Allowed => "allowed",
            Gate::Denied => "denied",
            Gate::AllowedPolicyUnreadable => "gate_unavailable",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Gate::ALL.into_iter().find(|g| g.as_str() == raw)
    }
}

db::text_enum!(Gate);

/// The remediation enforcement gate: may an automated action of `class` run for `tenant`?
///
/// It fails open. Blocking every remediation because the settings row is momentarily
/// unreadable would leave exposed data exposed; the deny-list is a brake an admin chose, not a
/// security boundary, so an unreadable policy lets the action proceed and says so.
pub async fn remediation_gate(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    class: SafetyClass,
) -> Gate {
    if !ENFORCEABLE_SAFETY_CLASSES.contains(&class) {
        return Gate::Allowed;
    }
    gate_of(&read(conn, tenant).await, tenant, class)
}

/// Everything a tenant set, read in one query: what a remediation consults (its gate, its
/// rollback window, its co-signing) when it runs, so that one run reads the row once.
#[derive(Debug, Clone)]
pub struct TenantSettings {
    row: Option<store::Row>,
}

impl TenantSettings {
    /// The rollback window in hours.
    pub fn retention_hours(&self) -> u32 {
        lkg_view(self.row.as_ref(), Vec::new()).retention_hours
    }

    /// The co-signing decision; `certificate` says whether the platform holds its client
    /// certificate.
    pub fn cosigning(&self, tenant: &TenantId, certificate: PlatformCertificate) -> Cosigning {
        cosigning_view(tenant, self.row.as_ref(), certificate)
    }
}

/// The tenant's settings, in one read.
pub async fn read(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
) -> Result<TenantSettings, SettingsError> {
    Ok(TenantSettings {
        row: store::find(conn, tenant).await?,
    })
}

/// The gate for an action of `class`, from settings as read (see [`remediation_gate`]): an
/// unreadable row lets the action proceed, and is logged.
pub fn gate_of(
    read: &Result<TenantSettings, SettingsError>,
    tenant: &TenantId,
    class: SafetyClass,
) -> Gate {
    if !ENFORCEABLE_SAFETY_CLASSES.contains(&class) {
        return Gate::Allowed;
    }
    match read {
        Ok(settings) if denied_of(settings.row.as_ref()).contains(&class) => Gate::Denied,
        Ok(_) => Gate::Allowed,
        Err(e) => {
            tracing::warn!(
                tenant = %tenant,
                class = class.as_str(),
                error = %e,
                "remediation policy unreadable; the gate fails open"
            );
            Gate::AllowedPolicyUnreadable
        }
    }
}

/// The tenant's co-signing decision. `certificate` says whether the platform holds its client
/// certificate (a deployment setting, not a tenant one).
pub async fn cosigning(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    certificate: PlatformCertificate,
) -> Result<Cosigning, SettingsError> {
    let row = store::find(conn, tenant).await?;
    Ok(cosigning_view(tenant, row.as_ref(), certificate))
}

/// Sets the co-signing decision. `optional` and `required` need an `https` endpoint and a
/// provisioned platform certificate. `reachable` says whether the service's outbound address
/// rules allow the endpoint (the platform's `egress`): a URL naming a private or metadata
/// address is refused here, not found out when every remediation fails `cosign_failed`. A
/// change records a `cosigning_changed` audit entry.
pub async fn set_cosigning(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    update: &CosigningUpdate,
    certificate: PlatformCertificate,
    reachable: impl Fn(&str) -> bool,
) -> Result<Cosigning, SettingsError> {
    // Before the endpoint is looked at: the spec answers optional or required with 422 while
    // the platform is not provisioned, whatever else the body holds.
    if update.mode != CosigningMode::Disabled && certificate == PlatformCertificate::Missing {
        return Err(SettingsError::ProvisioningIncomplete);
    }
    let endpoint = update
        .endpoint_url
        .as_deref()
        .map(validate_endpoint)
        .transpose()?;
    if endpoint.as_deref().is_some_and(|url| !reachable(url)) {
        return Err(SettingsError::InvalidEndpoint(
            "must not point at a private, loopback, link-local or reserved address",
        ));
    }
    if update.mode != CosigningMode::Disabled && endpoint.is_none() {
        return Err(SettingsError::InvalidEndpoint(
            "is required when mode is optional or required",
        ));
    }
    conn.transaction(async |conn| {
        let before = store::lock(conn, tenant).await?;
        store::set_cosigning(conn, tenant, actor, update.mode, endpoint.as_deref()).await?;
        if before.cosigning_mode != update.mode.as_str()
            || before.cosigning_endpoint_url.as_deref() != endpoint.as_deref()
        {
            store::audit(
                conn,
                tenant,
                actor,
                events::COSIGNING_CHANGED,
                // The endpoint's host only: any user of the tenant reads the audit log, which
                // cannot be scrubbed, and a URL's path may carry what only admins should see.
                json!({
                    "from_mode": before.cosigning_mode,
                    "mode": update.mode,
                    "endpoint_host": endpoint.as_deref().and_then(endpoint_host),
                }),
            )
            .await?;
        }
        Ok::<_, SettingsError>(())
    })
    .await?;
    cosigning(conn, tenant, certificate).await
}

fn lkg_view(row: Option<&store::Row>, change_log: Vec<LkgRetentionChange>) -> LkgRetention {
    let set = row.and_then(|r| r.lkg_retention_hours.map(|h| (h, r)));
    LkgRetention {
        retention_hours: set.map_or(LKG_RETENTION_DEFAULT_HOURS, |(h, _)| h.unsigned_abs()),
        allowed_options: LKG_RETENTION_OPTIONS.to_vec(),
        default_hours: LKG_RETENTION_DEFAULT_HOURS,
        updated_at: set.and_then(|(_, r)| r.lkg_updated_at),
        updated_by: set.and_then(|(_, r)| r.lkg_updated_by.clone()),
        change_log,
    }
}

/// The stored deny-list in API order. A class this build does not know fails the read of the
/// row (a CHECK constraint keeps any from being stored).
fn denied_of(row: Option<&store::Row>) -> Vec<SafetyClass> {
    let Some(row) = row else {
        return Vec::new();
    };
    SafetyClass::ALL
        .into_iter()
        .filter(|c| row.denied_safety_classes.contains(&Some(*c)))
        .collect()
}

fn remediation_view(tenant: &TenantId, row: Option<&store::Row>) -> RemediationPolicy {
    let denied = denied_of(row);
    RemediationPolicy {
        tenant_id: tenant.to_string(),
        allowed_safety_classes: SafetyClass::ALL
            .into_iter()
            .filter(|c| !denied.contains(c))
            .collect(),
        denied_safety_classes: denied,
        enforceable_safety_classes: ENFORCEABLE_SAFETY_CLASSES.to_vec(),
        updated_at: row.and_then(|r| r.remediation_updated_at),
        updated_by: row.and_then(|r| r.remediation_updated_by.clone()),
    }
}

fn cosigning_view(
    tenant: &TenantId,
    row: Option<&store::Row>,
    certificate: PlatformCertificate,
) -> Cosigning {
    Cosigning {
        tenant_id: tenant.to_string(),
        mode: row
            .and_then(|r| r.cosigning_mode.parse().ok())
            .unwrap_or(CosigningMode::Disabled),
        endpoint_url: row.and_then(|r| r.cosigning_endpoint_url.clone()),
        platform_provisioned: certificate == PlatformCertificate::Provisioned,
        updated_at: row.and_then(|r| r.cosigning_updated_at),
        updated_by: row.and_then(|r| r.cosigning_updated_by.clone()),
    }
}

fn invalid_class(message: impl Into<String>, index: Option<usize>) -> SettingsError {
    SettingsError::InvalidSafetyClass {
        message: message.into(),
        index,
    }
}

/// Reads `{"denied_safety_classes": [...]}` by hand rather than through serde, so that each
/// refusal names the field or position at fault and never repeats the submitted text.
fn parse_denied_classes(body: &Value) -> Result<Vec<SafetyClass>, SettingsError> {
    let expected = SafetyClass::ALL.map(SafetyClass::as_str).join(", ");
    let Some(object) = body.as_object() else {
        return Err(invalid_class(
            "the body must be an object with denied_safety_classes",
            None,
        ));
    };
    if let Some(unknown) = object.keys().find(|k| *k != "denied_safety_classes") {
        // Named back only when it looks like a field name: a client may send a value as a key.
        let message = if ids::field_name_like(unknown) {
            format!("unknown field `{unknown}`")
        } else {
            "unknown field".to_owned()
        };
        return Err(invalid_class(message, None));
    }
    let Some(list) = object.get("denied_safety_classes") else {
        return Err(invalid_class("missing field `denied_safety_classes`", None));
    };
    let Some(list) = list.as_array() else {
        return Err(invalid_class(
            "denied_safety_classes must be a list of safety classes",
            None,
        ));
    };
    let mut denied = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let class = entry
            .as_str()
            .and_then(|s| s.parse::<SafetyClass>().ok())
            .ok_or_else(|| {
                invalid_class(
                    format!(
                        "denied_safety_classes[{index}] is not a safety class; expected one of \
                         {expected}"
                    ),
                    Some(index),
                )
            })?;
        denied.push(class);
    }
    Ok(SafetyClass::ALL
        .into_iter()
        .filter(|c| denied.contains(c))
        .collect())
}

/// A co-signing endpoint must be an absolute `https` URL with a host and no credentials, query
/// or fragment: the platform authenticates with its client certificate, so a password or a
/// token in the URL is never needed and would be stored and shown.
fn validate_endpoint(raw: &str) -> Result<String, SettingsError> {
    if raw.len() > MAX_ENDPOINT_URL_LEN {
        return Err(SettingsError::InvalidEndpoint(
            "is longer than 2048 characters",
        ));
    }
    let url = url::Url::parse(raw)
        .map_err(|_| SettingsError::InvalidEndpoint("is not an absolute URL"))?;
    if url.scheme() != "https" {
        return Err(SettingsError::InvalidEndpoint("must use https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(SettingsError::InvalidEndpoint("must name a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SettingsError::InvalidEndpoint("must not carry credentials"));
    }
    if url.fragment().is_some() {
        return Err(SettingsError::InvalidEndpoint("must not carry a fragment"));
    }
    // A query is where URL-borne tokens live; the URL is stored in clear and written into the
    // audit log, which cannot be scrubbed, and mutual TLS needs no token.
    if url.query().is_some() {
        return Err(SettingsError::InvalidEndpoint(
            "must not carry a query string",
        ));
    }
    Ok(url.to_string())
}

/// The host of a validated endpoint URL.
fn endpoint_host(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_error(body: Value) -> (String, Option<usize>) {
        match parse_denied_classes(&body) {
            Err(SettingsError::InvalidSafetyClass { message, index }) => (message, index),
            other => panic!("expected invalid_safety_class, got {other:?}"),
        }
    }

    #[test]
    fn denied_classes_are_deduplicated_and_ordered() {
        let parsed = parse_denied_classes(&json!({
            "denied_safety_classes": ["destructive", "read_only", "destructive", "inline_runtime"]
        }));
        assert_eq!(
            parsed.ok(),
            Some(vec![
                SafetyClass::ReadOnly,
                SafetyClass::Destructive,
                SafetyClass::InlineRuntime
            ])
        );
        assert_eq!(
            parse_denied_classes(&json!({ "denied_safety_classes": [] })).ok(),
            Some(vec![])
        );
    }

    #[test]
    fn every_malformed_remediation_body_is_an_invalid_safety_class() {
        let (message, index) = class_error(
            json!({ "denied_safety_classes": ["destructive", "nuke-ssn-123-45-6789"] }),
        );
        assert_eq!(index, Some(1));
        assert!(message.contains("denied_safety_classes[1]"), "{message}");
        assert!(
            !message.contains("6789"),
            "the submitted text is never echoed: {message}"
        );
        assert!(
            class_error(json!({ "denied_safety_classes": "destructive" }))
                .0
                .contains("must be a list")
        );
        assert!(class_error(json!({ "denied_safety_classes": [1] })).1 == Some(0));
        assert!(class_error(json!({ "denied_safety_classes": [null] })).1 == Some(0));
        assert!(
            class_error(json!({ "denied_safety_classes": [], "mode": 1 }))
                .0
                .contains("unknown field `mode`")
        );
        assert!(class_error(json!({})).0.contains("missing field"));
        assert!(
            class_error(json!(["destructive"]))
                .0
                .contains("must be an object")
        );
        assert!(class_error(json!({ "denied_safety_classes": ["Destructive"] })).1 == Some(0));
    }

    #[test]
    fn cosigning_endpoints_must_be_plain_https_urls() {
        assert_eq!(
            validate_endpoint("https://cosign.example.com/v1/sign")
                .ok()
                .as_deref(),
            Some("https://cosign.example.com/v1/sign")
        );
        for bad in [
            "http://cosign.example.com",
            "cosign.example.com",
            "https://user:pw@cosign.example.com",
            "https://cosign.example.com/#frag",
            "https://cosign.example.com/v1/sign?token=s3cr3t",
            "https://cosign.example.com/v1/sign?",
            "ftp://cosign.example.com",
            "",
        ] {
            assert!(
                matches!(
                    validate_endpoint(bad),
                    Err(SettingsError::InvalidEndpoint(_))
                ),
                "{bad}"
            );
        }
        let long = format!("https://example.com/{}", "a".repeat(2100));
        assert!(validate_endpoint(&long).is_err());
    }
}

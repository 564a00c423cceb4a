//! Settings (the API's `settings` group, admin by default): the rollback window, the
//! safety-class deny-list and co-signing, each read and changed by the same domain calls as
//! `GET`/`PUT /settings/...`, with the same validation; a refusal is shown beside its form,
//! keeping what was typed.

use askama::Template;
use diesel_async::AsyncPgConnection;
use serde_json::json;
use settings::{CosigningMode, CosigningUpdate, PlatformCertificate, SafetyClass, SettingsError};

use super::{Failure, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// One of the page's forms, and what was posted to it.
#[derive(Debug, Clone)]
pub enum SettingChange {
    RollbackWindow { hours: String },
    DenyList { denied: Vec<String> },
    CoSigning { mode: String, endpoint_url: String },
}

impl SettingChange {
    /// The page's anchor for the form, and the `saved` marker after a change.
    pub fn form(&self) -> &'static str {
        match self {
            SettingChange::RollbackWindow { .. } => "rollback-window",
            SettingChange::DenyList { .. } => "deny-list",
            SettingChange::CoSigning { .. } => "co-signing",
        }
    }
}

/// What became of a change.
#[derive(Debug)]
pub enum Submitted {
    Saved,
    /// The page again, the refusal beside the form that was sent.
    Refused(String),
}

/// What the deployment decides, as the API's settings handlers take it.
#[derive(Clone, Copy)]
pub struct Deployment<'a> {
    pub certificate: PlatformCertificate,
    /// Whether the platform's outbound rules allow a URL (egress).
    pub reachable: &'a dyn Fn(&str) -> bool,
}

impl std::fmt::Debug for Deployment<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployment")
            .field("certificate", &self.certificate)
            .finish_non_exhaustive()
    }
}

pub struct Picked {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

pub struct ClassBox {
    pub value: &'static str,
    pub checked: bool,
    pub enforced: bool,
}

pub struct Change {
    pub from: u32,
    pub to: u32,
    pub at: String,
    pub by: String,
}

#[derive(Template)]
#[template(path = "settings.html")]
struct SettingsPage {
    layout: Layout,
    saved: &'static str,
    windows: Vec<Picked>,
    window_default: u32,
    window_updated: String,
    window_error: Option<String>,
    changes: Vec<Change>,
    classes: Vec<ClassBox>,
    deny_updated: String,
    deny_error: Option<String>,
    modes: Vec<Picked>,
    endpoint_url: String,
    provisioned: bool,
    cosign_updated: String,
    cosign_error: Option<String>,
}

fn updated(at: Option<time::OffsetDateTime>, by: Option<String>) -> String {
    match (at, by) {
        (Some(at), Some(by)) => format!("Last changed {} by {by}.", when(at)),
        (Some(at), None) => format!("Last changed {}.", when(at)),
        _ => "Never changed: the default applies.".into(),
    }
}

/// The settings page; `saved` names the form just saved, `refused` a change refused and why.
pub async fn settings(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    deployment: Deployment<'_>,
    saved: &str,
    refused: Option<(&SettingChange, String)>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let failed = |e: SettingsError| Failure::Internal(format!("settings: {e}"));
    let window = settings::lkg_retention(conn, tenant)
        .await
        .map_err(failed)?;
    let policy = settings::remediation_policy(conn, tenant)
        .await
        .map_err(failed)?;
    let cosigning = settings::cosigning(conn, tenant, deployment.certificate)
        .await
        .map_err(failed)?;

    let mut page = SettingsPage {
        layout: Layout::new(viewer, Section::Settings, "Settings"),
        saved: match saved {
            "rollback-window" => "rollback-window",
            "deny-list" => "deny-list",
            "co-signing" => "co-signing",
            _ => "",
        },
        windows: window
            .allowed_options
            .iter()
            .map(|h| Picked {
                value: h.to_string(),
                label: format!("{h} hours ({} days)", h / 24),
                selected: *h == window.retention_hours,
            })
            .collect(),
        window_default: window.default_hours,
        window_updated: updated(window.updated_at, window.updated_by),
        window_error: None,
        changes: window
            .change_log
            .into_iter()
            .take(10)
            .map(|c| Change {
                from: c.from_hours,
                to: c.to_hours,
                at: when(c.changed_at),
                by: c.changed_by,
            })
            .collect(),
        classes: SafetyClass::ALL
            .iter()
            .map(|c| ClassBox {
                value: c.as_str(),
                checked: policy.denied_safety_classes.contains(c),
                enforced: policy.enforceable_safety_classes.contains(c),
            })
            .collect(),
        deny_updated: updated(policy.updated_at, policy.updated_by),
        deny_error: None,
        modes: modes(cosigning.mode.as_str()),
        endpoint_url: cosigning.endpoint_url.unwrap_or_default(),
        provisioned: cosigning.platform_provisioned,
        cosign_updated: updated(cosigning.updated_at, cosigning.updated_by),
        cosign_error: None,
    };
    // A refused form keeps what was typed, its refusal beside it.
    match refused {
        Some((SettingChange::RollbackWindow { hours }, why)) => {
            for w in &mut page.windows {
                w.selected = w.value == *hours;
            }
            page.window_error = Some(why);
        }
        Some((SettingChange::DenyList { denied }, why)) => {
            for c in &mut page.classes {
                c.checked = denied.iter().any(|d| d == c.value);
            }
            page.deny_error = Some(why);
        }
        Some((SettingChange::CoSigning { mode, endpoint_url }, why)) => {
            page.modes = modes(mode);
            page.endpoint_url = endpoint_url.clone();
            page.cosign_error = Some(why);
        }
        None => {}
    }
    Ok(page.render()?)
}

fn modes(selected: &str) -> Vec<Picked> {
    ["disabled", "optional", "required"]
        .iter()
        .map(|m| Picked {
            value: (*m).to_owned(),
            label: (*m).to_owned(),
            selected: *m == selected,
        })
        .collect()
}

/// Makes `change` as the API's `PUT /settings/...` would, as the viewer: the page again with
/// the refusal beside its form when the settings refuse it.
pub async fn change_setting(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    deployment: Deployment<'_>,
    change: &SettingChange,
) -> Result<Submitted, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let actor = &viewer.principal.user_id;
    let result = match change {
        SettingChange::RollbackWindow { hours } => match hours.trim().parse::<i64>() {
            Ok(hours) => settings::set_lkg_retention(conn, tenant, actor, hours)
                .await
                .map(drop),
            Err(_) => Err(SettingsError::InvalidRetention),
        },
        SettingChange::DenyList { denied } => {
            let body = json!({ "denied_safety_classes": denied });
            settings::set_remediation_policy(conn, tenant, actor, &body)
                .await
                .map(drop)
        }
        SettingChange::CoSigning { mode, endpoint_url } => match mode.parse::<CosigningMode>() {
            Ok(mode) => {
                let endpoint_url = endpoint_url.trim();
                let update = CosigningUpdate {
                    mode,
                    endpoint_url: (!endpoint_url.is_empty()).then(|| endpoint_url.to_owned()),
                };
                settings::set_cosigning(
                    conn,
                    tenant,
                    actor,
                    &update,
                    deployment.certificate,
                    deployment.reachable,
                )
                .await
                .map(drop)
            }
            Err(()) => {
                return refused(
                    conn,
                    viewer,
                    deployment,
                    change,
                    "mode must be disabled, optional or required".into(),
                )
                .await;
            }
        },
    };
    match result {
        Ok(()) => Ok(Submitted::Saved),
        Err(SettingsError::Database(e)) => Err(e.into()),
        // Every other refusal is the caller's to fix, and its message repeats no value.
        Err(e) => refused(conn, viewer, deployment, change, e.to_string()).await,
    }
}

async fn refused(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    deployment: Deployment<'_>,
    change: &SettingChange,
    why: String,
) -> Result<Submitted, Failure> {
    let html = settings(conn, viewer, deployment, "", Some((change, why))).await?;
    Ok(Submitted::Refused(html))
}

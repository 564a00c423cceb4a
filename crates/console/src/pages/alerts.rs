//! Alerts (the API's `alert_channels` group, admin by default): the tenant's webhook
//! channels, made and deleted by the same domain calls as `POST` and
//! `DELETE /governance/channels`, and what became of the latest alerts.
//!
//! A channel's URL often carries a token in its path, so the page shows its scheme and host
//! only; its signing secret is shown once, on the page that answers its creation, as the API
//! returns it once.

use askama::Template;
use diesel_async::AsyncPgConnection;
use keys::KeyRing;
use paging::{CursorKey, Limit, PageRequest};

use alerts::channels::{self, ChannelError, NewChannel};

use super::posted::Posted;
use super::{Failure, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// How many of the latest alerts the page lists.
pub const RECENT: i64 = 50;

/// What the deployment decides for a new channel, as the API's handler takes it.
#[derive(Clone, Copy)]
pub struct Outbound<'a> {
    pub keyring: &'a KeyRing,
    pub egress: &'a egress::Egress,
}

impl std::fmt::Debug for Outbound<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound").finish_non_exhaustive()
    }
}

pub struct ChannelRow {
    pub name: String,
    pub kind: &'static str,
    /// Scheme and host: the rest of a webhook URL may be a token.
    pub destination: String,
    pub created: String,
}

pub struct DeliveryRow {
    pub created: String,
    pub channel: String,
    pub policy: String,
    pub severity: String,
    pub resource: String,
    pub status: String,
    pub attempts: i32,
    pub outcome: String,
}

/// A channel just made: its name and the secret its receiver checks signatures with.
pub struct Made {
    pub name: String,
    pub secret: String,
}

#[derive(Template)]
#[template(path = "alerts.html")]
struct AlertsPage {
    layout: Layout,
    channels: Vec<ChannelRow>,
    deliveries: Vec<DeliveryRow>,
    made: Option<Made>,
    deleted: String,
    problems: Vec<String>,
    name: String,
    url: String,
    max_name: usize,
    name_rule: &'static str,
}

#[derive(Template)]
#[template(path = "alerts_delete.html")]
struct DeletePage {
    layout: Layout,
    name: String,
    /// The policies that still alert the channel, when a deletion was refused.
    policies: Vec<String>,
}

/// `https://hooks.example.com/services/T0/B0/XXXX` as `https://hooks.example.com/…`.
fn destination(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or_default();
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let rest = if u.path().len() > 1 || u.query().is_some() {
                "/…"
            } else {
                "/"
            };
            format!("{}://{host}{port}{rest}", u.scheme())
        }
        Err(_) => "(unreadable URL)".into(),
    }
}

fn admin_only(viewer: &Viewer) -> Result<(), Failure> {
    if viewer.may.alert_channels {
        Ok(())
    } else {
        Err(Failure::Forbidden)
    }
}

fn failed(e: ChannelError) -> Failure {
    Failure::Internal(format!("alert channels: {e}"))
}

/// Every channel of the tenant, oldest first: one page holds them all (a tenant has at most
/// [`channels::MAX_PER_TENANT`]).
async fn every_channel(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &ids::TenantId,
    cursors: &CursorKey,
) -> Result<Vec<channels::Channel>, Failure> {
    let first = PageRequest::first(
        cursors,
        Limit::parse(Some(channels::MAX_PER_TENANT), 100)
            .map_err(|e| Failure::Internal(e.to_string()))?,
    );
    Ok(channels::list(conn, keyring, tenant, first)
        .await
        .map_err(failed)?
        .items)
}

struct Form<'a> {
    made: Option<Made>,
    deleted: &'a str,
    problems: Vec<String>,
    name: &'a str,
    url: &'a str,
}

async fn render(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    keyring: &KeyRing,
    cursors: &CursorKey,
    form: Form<'_>,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let listed = every_channel(conn, keyring, tenant, cursors).await?;
    let deliveries = alerts::deliveries::recent(conn, tenant, RECENT).await?;
    Ok(AlertsPage {
        layout: Layout::new(viewer, Section::Alerts, "Alerts"),
        channels: listed
            .into_iter()
            .map(|c| ChannelRow {
                destination: destination(&c.url),
                name: c.name,
                kind: c.kind,
                created: when(c.created_at),
            })
            .collect(),
        deliveries: deliveries
            .into_iter()
            .map(|d| DeliveryRow {
                created: when(d.created_at),
                outcome: match (d.delivered_at, d.last_error) {
                    (Some(at), _) => format!("delivered {}", when(at)),
                    (None, Some(error)) => error,
                    (None, None) => String::new(),
                },
                channel: d.channel,
                policy: d.policy.unwrap_or_default(),
                severity: d.severity.unwrap_or_default(),
                resource: d.resource.unwrap_or_default(),
                status: d.status,
                attempts: d.attempts,
            })
            .collect(),
        made: form.made,
        deleted: form.deleted.to_owned(),
        problems: form.problems,
        name: form.name.to_owned(),
        url: form.url.to_owned(),
        max_name: channels::MAX_NAME_CHARS,
        name_rule: channels::NAME_RULE,
    }
    .render()?)
}

/// The alerts page; `deleted` names a channel just deleted.
pub async fn alerts(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    keyring: &KeyRing,
    cursors: &CursorKey,
    deleted: &str,
) -> Result<String, Failure> {
    admin_only(viewer)?;
    let deleted = if channels::valid_name(deleted) {
        deleted
    } else {
        ""
    };
    render(
        conn,
        viewer,
        keyring,
        cursors,
        Form {
            made: None,
            deleted,
            problems: Vec::new(),
            name: "",
            url: "",
        },
    )
    .await
}

/// Makes a webhook channel as `POST /governance/channels` does. The page that answers shows
/// its secret, this once; a refusal is the form again with what was wrong, as typed.
pub async fn create_channel(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    outbound: Outbound<'_>,
    cursors: &CursorKey,
    name: &str,
    url: &str,
) -> Result<String, Failure> {
    admin_only(viewer)?;
    let created = channels::create(
        conn,
        outbound.keyring,
        outbound.egress,
        &viewer.principal.tenant_id,
        &viewer.principal.user_id,
        NewChannel {
            name,
            kind: "webhook",
            url,
        },
    )
    .await;
    let refused = |problems: Vec<String>| Form {
        made: None,
        deleted: "",
        problems,
        name,
        url,
    };
    let form = match created {
        Ok(made) => Form {
            made: Some(Made {
                name: made.channel.name,
                secret: made.secret,
            }),
            deleted: "",
            problems: Vec::new(),
            name: "",
            url: "",
        },
        Err(ChannelError::Invalid(problems)) => refused(
            problems
                .iter()
                .map(|p| match p.pointer.as_str() {
                    "/name" => format!("Name: {}", p.reason),
                    "/url" => format!("URL: {}", p.reason),
                    _ => p.reason.to_string(),
                })
                .collect(),
        ),
        Err(ChannelError::DuplicateName) => refused(vec![
            "Name: the tenant already has a channel with this name.".into(),
        ]),
        Err(ChannelError::TooMany) => refused(vec![format!(
            "The tenant has {} alert channels, the most it may hold: delete one first.",
            channels::MAX_PER_TENANT
        )]),
        Err(e) => return Err(failed(e)),
    };
    render(conn, viewer, outbound.keyring, cursors, form).await
}

/// The question before deleting a channel.
pub async fn confirm_delete_channel(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    keyring: &KeyRing,
    cursors: &CursorKey,
    name: &str,
) -> Result<String, Failure> {
    admin_only(viewer)?;
    let exists = every_channel(conn, keyring, &viewer.principal.tenant_id, cursors)
        .await?
        .iter()
        .any(|c| c.name == name);
    if !exists {
        return Err(Failure::NotFound("alert channel"));
    }
    Ok(DeletePage {
        layout: Layout::new(viewer, Section::Alerts, "Delete an alert channel"),
        name: name.to_owned(),
        policies: Vec::new(),
    }
    .render()?)
}

/// Deletes a channel as `DELETE /governance/channels/:name` does; one that policies still
/// alert is kept, and the question is asked again naming them.
pub async fn delete_channel(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    name: &str,
) -> Result<Posted, Failure> {
    admin_only(viewer)?;
    match channels::delete(
        conn,
        &viewer.principal.tenant_id,
        &viewer.principal.user_id,
        name,
    )
    .await
    {
        Ok(()) => Ok(Posted::Done(format!(
            "/console/alerts?deleted={}",
            super::encode(name)
        ))),
        Err(ChannelError::InUse(policies)) => Ok(Posted::Again(
            DeletePage {
                layout: Layout::new(viewer, Section::Alerts, "Delete an alert channel"),
                name: name.to_owned(),
                policies,
            }
            .render()?,
        )),
        Err(ChannelError::NotFound) => Err(Failure::NotFound("alert channel")),
        Err(e) => Err(failed(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_url_is_shown_without_its_path_or_query() {
        assert_eq!(
            destination("https://hooks.example.com/services/T0/B0/XXXX"),
            "https://hooks.example.com/…"
        );
        assert_eq!(
            destination("http://127.0.0.1:9999/alerts?token=abc"),
            "http://127.0.0.1:9999/…"
        );
        assert_eq!(destination("https://example.com"), "https://example.com/");
        assert_eq!(
            destination("https://example.com/?t=1"),
            "https://example.com/…"
        );
        assert_eq!(destination("not a url"), "(unreadable URL)");
    }
}

//! Alert channels: where a policy's alerts go. A channel has a name the policies refer to, a
//! type (`webhook`), a URL and a signing secret.
//!
//! The URL and the secret are sealed together under the tenant's data key, bound to the
//! channel: many webhook URLs carry a token in their path, so neither is ever written in
//! clear. The secret is returned once, when the channel is created.

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::{TenantId, UserId};
use keys::{KeyError, KeyRing, SealedSecret, TenantKeys};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};
use ring::rand::{SecureRandom as _, SystemRandom};
use serde_json::json;
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{governance_channels, governance_policies};

pub use policies::channel_name::{MAX_NAME_CHARS, NAME_RULE, valid_name};
use policies::document::Problem;

/// The most channels a tenant holds.
pub const MAX_PER_TENANT: i64 = 50;

/// The cursor list name.
const LIST: &str = "governance-channels";

/// Sealed secrets of channels are bound to this purpose and the channel id.
const PURPOSE: &str = "governance-channel";

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("no alert channel with this name in the tenant")]
    NotFound,
    #[error("the tenant already has an alert channel with this name")]
    DuplicateName,
    #[error("the channel is invalid")]
    Invalid(Vec<Problem>),
    /// Policies still send alerts to the channel; their names.
    #[error("policies still send alerts to this channel")]
    InUse(Vec<String>),
    #[error("the tenant already has the most alert channels allowed")]
    TooMany,
    #[error("the cursor is not valid for this list")]
    BadCursor,
    #[error("channel secrets could not be sealed or opened")]
    Crypto,
    #[error("database error")]
    Database(#[source] DieselError),
}

impl From<DieselError> for ChannelError {
    fn from(e: DieselError) -> Self {
        match e {
            DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
                ChannelError::DuplicateName
            }
            e => ChannelError::Database(e),
        }
    }
}

impl From<KeyError> for ChannelError {
    fn from(e: KeyError) -> Self {
        match e {
            KeyError::Database(e) => ChannelError::Database(e),
            _ => ChannelError::Crypto,
        }
    }
}

impl From<BadCursor> for ChannelError {
    fn from(_: BadCursor) -> Self {
        ChannelError::BadCursor
    }
}

/// A channel as an admin asks for it.
#[derive(Debug, Clone, Copy)]
pub struct NewChannel<'a> {
    pub name: &'a str,
    /// `webhook`.
    pub kind: &'a str,
    pub url: &'a str,
}

/// A channel, without its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    pub name: String,
    pub kind: &'static str,
    pub url: String,
    pub created_at: OffsetDateTime,
}

/// A new channel and its signing secret, which is shown this once.
#[derive(Clone, PartialEq, Eq)]
pub struct CreatedChannel {
    pub channel: Channel,
    pub secret: String,
}

impl std::fmt::Debug for CreatedChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedChannel")
            .field("channel", &self.channel)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// What is sealed: the URL and the secret.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    url: String,
    secret: String,
}

/// A channel's destination, opened for delivery.
#[derive(Clone, PartialEq, Eq)]
pub struct Destination {
    pub channel_id: Uuid,
    pub url: String,
    pub secret: String,
}

impl std::fmt::Debug for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Destination")
            .field("channel_id", &self.channel_id)
            .finish_non_exhaustive()
    }
}

fn new_secret() -> Result<String, ChannelError> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ChannelError::Crypto)?;
    Ok(format!("whsec_{}", hex::encode(bytes)))
}

fn seal(keys: &TenantKeys, id: Uuid, sealed: &Sealed) -> Result<SealedSecret, ChannelError> {
    let plain = serde_json::to_vec(sealed).map_err(|_| ChannelError::Crypto)?;
    Ok(keys.seal_secret(PURPOSE, id.as_bytes(), &plain)?)
}

fn open(
    keys: &TenantKeys,
    id: Uuid,
    version: i32,
    sealed: Vec<u8>,
) -> Result<Sealed, ChannelError> {
    let plain = keys.open_secret(
        PURPOSE,
        id.as_bytes(),
        &SealedSecret {
            key_version: version,
            sealed,
        },
    )?;
    serde_json::from_slice(&plain).map_err(|_| ChannelError::Crypto)
}

/// Checks a request and creates the channel with a new secret.
pub async fn create(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    egress: &egress::Egress,
    tenant: &TenantId,
    actor: &UserId,
    request: NewChannel<'_>,
) -> Result<CreatedChannel, ChannelError> {
    let mut problems = Vec::new();
    if !valid_name(request.name) {
        problems.push(Problem::field("/name", NAME_RULE));
    }
    if request.kind != "webhook" {
        problems.push(Problem::field("/type", "must be webhook"));
    }
    let url = match egress.check_url(request.url) {
        Ok(url) => Some(url),
        Err(e) => {
            problems.push(Problem::field("/url", e.to_string()));
            None
        }
    };
    let Some(url) = url.filter(|_| problems.is_empty()) else {
        return Err(ChannelError::Invalid(problems));
    };
    let host = url.host_str().unwrap_or_default().to_owned();
    let secret = new_secret()?;
    let id = Uuid::now_v7();
    let keys = keyring.tenant(conn, tenant).await?;
    let sealed = seal(
        &keys,
        id,
        &Sealed {
            url: url.to_string(),
            secret: secret.clone(),
        },
    )?;
    let created_at = conn
        .transaction(async |conn| {
            // One create of the tenant's at a time: two concurrent creates at 49 channels would
            // each count 49 and both insert.
            db::sql("SELECT pg_advisory_xact_lock(hashtext('dps-channels:' || $1))")
                .bind::<diesel::sql_types::Text, _>(tenant.as_str())
                .execute(conn)
                .await?;
            let count: i64 = governance_channels::table
                .filter(governance_channels::tenant_id.eq(tenant.as_str()))
                .count()
                .get_result(conn)
                .await?;
            if count >= MAX_PER_TENANT {
                return Err(ChannelError::TooMany);
            }
            let created_at: OffsetDateTime = diesel::insert_into(governance_channels::table)
                .values((
                    governance_channels::tenant_id.eq(tenant.as_str()),
                    governance_channels::name.eq(request.name),
                    governance_channels::channel_id.eq(id),
                    governance_channels::kind.eq("webhook"),
                    governance_channels::host.eq(&host),
                    governance_channels::key_version.eq(sealed.key_version),
                    governance_channels::sealed.eq(&sealed.sealed),
                    governance_channels::created_at.eq(OffsetDateTime::now_utc()),
                ))
                .returning(governance_channels::created_at)
                .get_result(conn)
                .await?;
            audit::append(
                conn,
                tenant,
                &[audit::NewEntry::new(
                    audit::Kind::ChannelCreated,
                    audit::Actor::User(actor.clone()),
                )
                .outcome("success")
                .details(json!({ "name": request.name, "type": "webhook", "host": host }))],
            )
            .await?;
            Ok(created_at)
        })
        .await?;
    Ok(CreatedChannel {
        channel: Channel {
            name: request.name.to_owned(),
            kind: "webhook",
            url: url.to_string(),
            created_at,
        },
        secret,
    })
}

/// One page of the tenant's channels, oldest first, without secrets.
pub async fn list(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    page: PageRequest<'_>,
) -> Result<Page<Channel>, ChannelError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Ascending)?;
    let mut query = governance_channels::table
        .filter(governance_channels::tenant_id.eq(tenant.as_str()))
        .select((
            governance_channels::channel_id,
            governance_channels::name,
            governance_channels::key_version,
            governance_channels::sealed,
            governance_channels::created_at,
        ))
        .order(governance_channels::channel_id)
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(after) = keyset.after_id::<governance_channels::channel_id, _>() {
        query = query.filter(after);
    }
    let rows: Vec<(Uuid, String, i32, Vec<u8>, OffsetDateTime)> = query.load(conn).await?;
    if rows.is_empty() {
        return Ok(keyset
            .page(Vec::new(), |c: &(Uuid, Channel)| Position::id(c.0))
            .map(|(_, channel)| channel));
    }
    let keys = keyring.tenant(conn, tenant).await?;
    let channels = rows
        .into_iter()
        .map(|(id, name, version, sealed, created_at)| {
            let opened = open(&keys, id, version, sealed)?;
            Ok((
                id,
                Channel {
                    name,
                    kind: "webhook",
                    url: opened.url,
                    created_at,
                },
            ))
        })
        .collect::<Result<Vec<_>, ChannelError>>()?;
    Ok(keyset
        .page(channels, |c| Position::id(c.0))
        .map(|(_, channel)| channel))
}

/// Deletes a channel that no policy sends alerts to.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    actor: &UserId,
    name: &str,
) -> Result<(), ChannelError> {
    if !valid_name(name) {
        return Err(ChannelError::NotFound);
    }
    conn.transaction(async |conn| {
        let host: String = governance_channels::table
            .filter(governance_channels::tenant_id.eq(tenant.as_str()))
            .filter(governance_channels::name.eq(name))
            .select(governance_channels::host)
            .for_update()
            .first(conn)
            .await
            .optional()?
            .ok_or(ChannelError::NotFound)?;
        let users = policies_alerting(conn, tenant, name).await?;
        if !users.is_empty() {
            return Err(ChannelError::InUse(users));
        }
        diesel::delete(governance_channels::table)
            .filter(governance_channels::tenant_id.eq(tenant.as_str()))
            .filter(governance_channels::name.eq(name))
            .execute(conn)
            .await?;
        audit::append(
            conn,
            tenant,
            &[audit::NewEntry::new(
                audit::Kind::ChannelDeleted,
                audit::Actor::User(actor.clone()),
            )
            .outcome("success")
            .details(json!({ "name": name, "type": "webhook", "host": host }))],
        )
        .await?;
        Ok(())
    })
    .await
}

/// The names of the tenant's policies with an alert action naming `channel`.
async fn policies_alerting(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    channel: &str,
) -> Result<Vec<String>, DieselError> {
    let shape = json!({ "spec": { "actions": [{ "type": "alert", "config": { "channels": [channel] } }] } });
    governance_policies::table
        .filter(governance_policies::tenant_id.eq(tenant.as_str()))
        .filter(governance_policies::document.contains(shape))
        .select(governance_policies::name)
        .order(governance_policies::name)
        .load(conn)
        .await
}

/// The channels named, opened for delivery; names the tenant does not have are left out.
pub async fn destinations(
    conn: &mut AsyncPgConnection,
    keys: &TenantKeys,
    tenant: &TenantId,
    names: &[String],
) -> Result<Vec<(String, Destination)>, ChannelError> {
    let rows: Vec<(String, Uuid, i32, Vec<u8>)> = governance_channels::table
        .filter(governance_channels::tenant_id.eq(tenant.as_str()))
        .filter(governance_channels::name.eq_any(names))
        .select((
            governance_channels::name,
            governance_channels::channel_id,
            governance_channels::key_version,
            governance_channels::sealed,
        ))
        .load(conn)
        .await?;
    rows.into_iter()
        .map(|(name, id, version, sealed)| {
            let opened = open(keys, id, version, sealed)?;
            Ok((
                name,
                Destination {
                    channel_id: id,
                    url: opened.url,
                    secret: opened.secret,
                },
            ))
        })
        .collect()
}

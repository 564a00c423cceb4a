//! Connectors in Postgres, per tenant. Secret configuration fields are sealed under the
//! tenant's data key, bound to the connector id; the stored `config` column holds only what the
//! API may return.

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::connectors;
use ids::{ConnectorId, TenantId};
use keys::{KeyRing, SealedSecret, TenantKeys};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};

use crate::config::{self, Config, FieldError, Provider};

/// The cursor list name: a cursor from another list is refused.
const LIST: &str = "connectors";
/// What sealed connector secrets are for (bound into the ciphertext).
const SECRET_PURPOSE: &str = "connector.config";

#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    #[error("connector not found")]
    NotFound,
    #[error("a connector with this name already exists in the tenant")]
    DuplicateName,
    #[error("the connector configuration is invalid")]
    Invalid(Vec<FieldError>),
    #[error("the cursor is not valid for this list")]
    BadCursor,
    #[error("connector secrets could not be sealed or opened")]
    Crypto,
    /// A stored row no longer reads as a connector (it was edited outside the service).
    #[error("a stored connector is unreadable")]
    CorruptRow,
    #[error("database error")]
    Database(#[source] DieselError),
}

impl From<DieselError> for ConnectorError {
    fn from(e: DieselError) -> Self {
        ConnectorError::Database(e)
    }
}

impl From<BadCursor> for ConnectorError {
    fn from(_: BadCursor) -> Self {
        ConnectorError::BadCursor
    }
}

impl From<keys::KeyError> for ConnectorError {
    fn from(e: keys::KeyError) -> Self {
        match e {
            keys::KeyError::Database(e) => ConnectorError::Database(e),
            keys::KeyError::Crypto => ConnectorError::Crypto,
        }
    }
}

/// A connector's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    PendingTest,
    Active,
    Disconnected,
    Error,
}

impl Status {
    pub const ALL: [Status; 4] = [
        Status::PendingTest,
        Status::Active,
        Status::Disconnected,
        Status::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::PendingTest => "pending_test",
            Status::Active => "active",
            Status::Disconnected => "disconnected",
            Status::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = connectors, check_for_backend(diesel::pg::Pg))]
struct Row {
    connector_id: Uuid,
    name: String,
    provider: String,
    status: String,
    status_message: Option<String>,
    config: Value,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

/// A connector as this crate knows it: never a secret. What its scans found and its risk are
/// their owners' (the scans and governance crates).
#[derive(Debug, Clone, PartialEq)]
pub struct Connector {
    pub id: ConnectorId,
    pub name: String,
    pub provider: Provider,
    pub status: Status,
    /// Why the last connection test failed, when status is error.
    pub status_message: Option<String>,
    /// The non-secret configuration.
    pub config: Map<String, Value>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

fn view(row: Row) -> Result<Connector, ConnectorError> {
    // The CHECK constraints hold these to known values; anything else was written outside
    // the service.
    let provider = Provider::parse(&row.provider).ok_or(ConnectorError::CorruptRow)?;
    let status = Status::parse(&row.status).ok_or(ConnectorError::CorruptRow)?;
    let Value::Object(config) = row.config else {
        return Err(ConnectorError::CorruptRow);
    };
    Ok(Connector {
        id: ConnectorId::from_uuid(row.connector_id),
        name: row.name,
        provider,
        status,
        status_message: row.status_message,
        config,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// A connector as the caller asks for it; every field is checked by [`create`].
#[derive(Debug, Clone, Copy)]
pub struct NewConnector<'a> {
    pub name: &'a str,
    /// aws, gcp or azure.
    pub provider: &'a str,
    /// The provider's configuration, secrets included.
    pub config: &'a Value,
    /// The tenant's AWS external id ([`crate::external_id`]): an AWS connector must carry it.
    pub aws_external_id: &'a str,
}

/// Validates the request and stores a new connector in `pending_test`, its secret fields
/// sealed under the tenant's current data key.
pub async fn create(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    request: &NewConnector<'_>,
) -> Result<Connector, ConnectorError> {
    let NewConnector {
        name,
        provider,
        config,
        aws_external_id,
    } = *request;
    let mut errors = Vec::new();
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        errors.push(FieldError {
            field: "name".into(),
            message: "must be 1 to 200 characters without control characters".into(),
        });
    }
    let Some(provider) = Provider::parse(provider) else {
        errors.push(FieldError {
            field: "provider".into(),
            message: "must be one of aws, gcp, azure".into(),
        });
        return Err(ConnectorError::Invalid(errors));
    };
    let config = match config::validate(provider, config) {
        Ok(config) => config,
        Err(mut more) => {
            errors.append(&mut more);
            return Err(ConnectorError::Invalid(errors));
        }
    };
    // The role is assumed with the tenant's own external id only: one a tenant chose could be
    // another tenant's (see `external_id`).
    if provider == Provider::Aws && config.text("external_id") != aws_external_id {
        errors.push(FieldError {
            field: "config.external_id".into(),
            message: "must be this tenant's external id, as GET /connectors/external-id gives \
                      it: the role's trust policy requires it of the platform"
                .into(),
        });
    }
    if !errors.is_empty() {
        return Err(ConnectorError::Invalid(errors));
    }
    let id = ConnectorId::new();
    let keys = keyring.tenant(conn, tenant).await?;
    let sealed = seal(&keys, id, &config)?;
    let row: Row = diesel::insert_into(connectors::table)
        .values((
            connectors::tenant_id.eq(tenant.as_str()),
            connectors::connector_id.eq(id.as_uuid()),
            connectors::name.eq(name),
            connectors::provider.eq(provider.as_str()),
            connectors::config.eq(Value::Object(config.public)),
            connectors::secret_key_version.eq(sealed.as_ref().map(|s| s.key_version)),
            connectors::secret_sealed.eq(sealed.map(|s| s.sealed)),
        ))
        .returning(Row::as_returning())
        .get_result(conn)
        .await
        .map_err(|e| match e {
            DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
                ConnectorError::DuplicateName
            }
            e => ConnectorError::Database(e),
        })?;
    view(row)
}

fn seal(
    keys: &TenantKeys,
    id: ConnectorId,
    config: &Config,
) -> Result<Option<SealedSecret>, ConnectorError> {
    if config.secrets.is_empty() {
        return Ok(None);
    }
    let plain = serde_json::to_vec(&config.secrets).map_err(|_| ConnectorError::Crypto)?;
    Ok(Some(keys.seal_secret(
        SECRET_PURPOSE,
        id.as_bytes(),
        &plain,
    )?))
}

/// Filters for the list.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter {
    pub provider: Option<Provider>,
    pub status: Option<Status>,
}

/// One page of connectors, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: Filter,
    page: PageRequest<'_>,
) -> Result<Page<Connector>, ConnectorError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Ascending)?;
    let mut query = connectors::table
        .filter(connectors::tenant_id.eq(tenant.as_str()))
        .select(Row::as_select())
        .order((connectors::created_at, connectors::connector_id))
        .limit(keyset.fetch())
        .into_boxed();
    if let Some(provider) = filter.provider {
        query = query.filter(connectors::provider.eq(provider.as_str()));
    }
    if let Some(status) = filter.status {
        query = query.filter(connectors::status.eq(status.as_str()));
    }
    if let Some(after) = keyset.after::<connectors::created_at, connectors::connector_id, _>()? {
        query = query.filter(after);
    }
    let rows: Vec<Row> = query.load(conn).await?;
    keyset
        .page(rows, |r| Position::at(r.created_at, r.connector_id))
        .try_map(view)
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<Connector, ConnectorError> {
    let row: Option<Row> = connectors::table
        .filter(connectors::tenant_id.eq(tenant.as_str()))
        .filter(connectors::connector_id.eq(id.as_uuid()))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?;
    view(row.ok_or(ConnectorError::NotFound)?)
}

/// Takes the connector's row for the caller's transaction (`FOR UPDATE`): what a deletion holds
/// while it checks what may not be cut short. Not found when there is none.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<(), ConnectorError> {
    let found: Option<Uuid> = connectors::table
        .filter(connectors::tenant_id.eq(tenant.as_str()))
        .filter(connectors::connector_id.eq(id.as_uuid()))
        .select(connectors::connector_id)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    found.map(drop).ok_or(ConnectorError::NotFound)
}

/// Which of `ids` are connectors of the tenant (a policy's scope names them).
pub async fn existing(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    ids: &[ConnectorId],
) -> QueryResult<std::collections::BTreeSet<ConnectorId>> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let found: Vec<Uuid> = connectors::table
        .filter(connectors::tenant_id.eq(tenant.as_str()))
        .filter(connectors::connector_id.eq_any(ids.iter().map(ConnectorId::as_uuid)))
        .select(connectors::connector_id)
        .load(conn)
        .await?;
    Ok(found.into_iter().map(ConnectorId::from_uuid).collect())
}

/// A connector's configuration as stored: the public fields, and the secrets still sealed under
/// the tenant's data key, bound to the connector's id. What must reach a connector's storage
/// after the connector is deleted keeps this (remediation's snapshots still to delete), never
/// the opened secrets; [`open_config`] opens it.
///
/// Read positionally from a select of (provider, config, secret_key_version, secret_sealed),
/// or by those column names from raw SQL.
#[derive(Clone, PartialEq, Eq, Queryable, QueryableByName)]
pub struct SealedConfig {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub provider: String,
    #[diesel(sql_type = diesel::sql_types::Jsonb, column_name = config)]
    pub public: Value,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Int4>, column_name = secret_key_version)]
    pub key_version: Option<i32>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Bytea>, column_name = secret_sealed)]
    pub sealed: Option<Vec<u8>>,
}

impl std::fmt::Debug for SealedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedConfig")
            .field("provider", &self.provider)
            .field("key_version", &self.key_version)
            .finish_non_exhaustive()
    }
}

/// The configuration as stored, secrets sealed.
pub async fn sealed_config(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<SealedConfig, ConnectorError> {
    connectors::table
        .filter(connectors::tenant_id.eq(tenant.as_str()))
        .filter(connectors::connector_id.eq(id.as_uuid()))
        .select((
            connectors::provider,
            connectors::config,
            connectors::secret_key_version,
            connectors::secret_sealed,
        ))
        .first(conn)
        .await
        .optional()?
        .ok_or(ConnectorError::NotFound)
}

/// Opens a stored configuration of connector `id`: for connecting, never for showing.
pub fn open_config(
    keys: &TenantKeys,
    id: ConnectorId,
    stored: &SealedConfig,
) -> Result<Config, ConnectorError> {
    let provider = Provider::parse(&stored.provider).ok_or(ConnectorError::CorruptRow)?;
    let Value::Object(public) = &stored.public else {
        return Err(ConnectorError::CorruptRow);
    };
    let secrets = match (stored.key_version, &stored.sealed) {
        (Some(key_version), Some(sealed)) => {
            let plain = keys.open_secret(
                SECRET_PURPOSE,
                id.as_bytes(),
                &SealedSecret {
                    key_version,
                    sealed: sealed.clone(),
                },
            )?;
            serde_json::from_slice(&plain).map_err(|_| ConnectorError::Crypto)?
        }
        _ => Map::new(),
    };
    Ok(Config {
        provider,
        public: public.clone(),
        secrets,
    })
}

/// The full configuration, secrets opened: for connecting, never for showing.
pub async fn config(
    conn: &mut AsyncPgConnection,
    keys: &TenantKeys,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<Config, ConnectorError> {
    open_config(keys, id, &sealed_config(conn, tenant, id).await?)
}

/// Deletes a connector. Its scans and findings go with it (their foreign keys cascade).
pub async fn delete(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
) -> Result<(), ConnectorError> {
    let deleted = diesel::delete(
        connectors::table
            .filter(connectors::tenant_id.eq(tenant.as_str()))
            .filter(connectors::connector_id.eq(id.as_uuid())),
    )
    .execute(conn)
    .await?;
    if deleted == 0 {
        return Err(ConnectorError::NotFound);
    }
    Ok(())
}

/// Records the outcome of a connection test: the status and, for a failure, the reason.
pub async fn set_status(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: ConnectorId,
    status: Status,
    message: Option<&str>,
) -> Result<(), ConnectorError> {
    let updated = diesel::update(
        connectors::table
            .filter(connectors::tenant_id.eq(tenant.as_str()))
            .filter(connectors::connector_id.eq(id.as_uuid())),
    )
    .set((
        connectors::status.eq(status.as_str()),
        connectors::status_message.eq(message),
        connectors::updated_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await?;
    if updated == 0 {
        return Err(ConnectorError::NotFound);
    }
    Ok(())
}

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
use ids::TenantId;
use keys::{SealedSecret, TenantKeys};
use paging::{BadCursor, CursorKey, Keyset, Limit, Order, Page, Position};

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
    last_scan: Option<OffsetDateTime>,
    findings_count: i64,
    risk_score: i32,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

/// A connector as the API shows it: never a secret.
#[derive(Debug, Clone, PartialEq)]
pub struct Connector {
    pub id: Uuid,
    pub name: String,
    pub provider: Provider,
    pub status: Status,
    /// Why the last connection test failed, when status is error.
    pub status_message: Option<String>,
    /// The non-secret configuration.
    pub config: Map<String, Value>,
    pub last_scan: Option<OffsetDateTime>,
    pub findings_count: i64,
    pub risk_score: i32,
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
        id: row.connector_id,
        name: row.name,
        provider,
        status,
        status_message: row.status_message,
        config,
        last_scan: row.last_scan,
        findings_count: row.findings_count,
        risk_score: row.risk_score,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// Validates the request and stores a new connector in `pending_test`.
pub async fn create(
    conn: &mut AsyncPgConnection,
    keys: &TenantKeys,
    tenant: &TenantId,
    name: &str,
    provider: &str,
    config: &Value,
) -> Result<Connector, ConnectorError> {
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
    if !errors.is_empty() {
        return Err(ConnectorError::Invalid(errors));
    }
    let id = Uuid::now_v7();
    let sealed = seal(keys, id, &config)?;
    let row: Row = diesel::insert_into(connectors::table)
        .values((
            connectors::tenant_id.eq(tenant.as_str()),
            connectors::connector_id.eq(id),
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
    id: Uuid,
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
    cursors: &CursorKey,
    tenant: &TenantId,
    filter: Filter,
    limit: Limit,
    cursor: Option<&str>,
) -> Result<Page<Connector>, ConnectorError> {
    let keyset = Keyset::new(cursors, tenant, LIST, limit, cursor, Order::Ascending)?;
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
    id: Uuid,
) -> Result<Connector, ConnectorError> {
    let row: Option<Row> = connectors::table
        .filter(connectors::tenant_id.eq(tenant.as_str()))
        .filter(connectors::connector_id.eq(id))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?;
    view(row.ok_or(ConnectorError::NotFound)?)
}

/// Provider, public configuration, and the sealed secrets with their key version.
type SecretRow = (String, Value, Option<i32>, Option<Vec<u8>>);

/// The full configuration, secrets opened: for connecting, never for showing.
pub async fn config(
    conn: &mut AsyncPgConnection,
    keys: &TenantKeys,
    tenant: &TenantId,
    id: Uuid,
) -> Result<Config, ConnectorError> {
    let row: Option<SecretRow> = connectors::table
        .filter(connectors::tenant_id.eq(tenant.as_str()))
        .filter(connectors::connector_id.eq(id))
        .select((
            connectors::provider,
            connectors::config,
            connectors::secret_key_version,
            connectors::secret_sealed,
        ))
        .first(conn)
        .await
        .optional()?;
    let (provider, public, version, sealed) = row.ok_or(ConnectorError::NotFound)?;
    let provider = Provider::parse(&provider).ok_or(ConnectorError::CorruptRow)?;
    let Value::Object(public) = public else {
        return Err(ConnectorError::CorruptRow);
    };
    let secrets = match (version, sealed) {
        (Some(key_version), Some(sealed)) => {
            let plain = keys.open_secret(
                SECRET_PURPOSE,
                id.as_bytes(),
                &SealedSecret {
                    key_version,
                    sealed,
                },
            )?;
            serde_json::from_slice(&plain).map_err(|_| ConnectorError::Crypto)?
        }
        _ => Map::new(),
    };
    Ok(Config {
        provider,
        public,
        secrets,
    })
}

/// Deletes a connector. Its scans and findings go with it (their foreign keys cascade).
pub async fn delete(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: Uuid,
) -> Result<(), ConnectorError> {
    let deleted = diesel::delete(
        connectors::table
            .filter(connectors::tenant_id.eq(tenant.as_str()))
            .filter(connectors::connector_id.eq(id)),
    )
    .execute(conn)
    .await?;
    if deleted == 0 {
        return Err(ConnectorError::NotFound);
    }
    Ok(())
}

/// Records the outcome of a connection test: `active`, or `error` with the reason.
pub async fn set_status(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: Uuid,
    status: Status,
    message: Option<&str>,
) -> Result<(), ConnectorError> {
    let updated = diesel::update(
        connectors::table
            .filter(connectors::tenant_id.eq(tenant.as_str()))
            .filter(connectors::connector_id.eq(id)),
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

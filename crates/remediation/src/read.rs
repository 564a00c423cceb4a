//! The remediations as the API shows them: the request, where it stands, and its receipts.

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Integer, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, PolicyId, RemediationId, TenantId};
use paging::{BadCursor, Keyset, Order, Page, PageRequest, Position};
use serde_json::Value;
use uuid::Uuid;

use crate::store::{COLUMNS, Row, State};
use policies::document::ActionType;

const LIST: &str = "remediations";

/// Filters of the list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub policy: Option<PolicyId>,
    pub connector: Option<ConnectorId>,
    pub status: Option<State>,
    pub action_type: Option<ActionType>,
}

/// One remediation with its receipts, newest first.
#[derive(Debug, Clone)]
pub struct Remediation {
    pub row: Row,
    pub receipts: Vec<Receipt>,
}

/// A stored receipt: the signed document and where its co-signing stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    pub receipt_id: Uuid,
    pub kind: String,
    pub document: Value,
    pub cosign_status: String,
}

#[derive(QueryableByName)]
struct ReceiptRow {
    #[diesel(sql_type = SqlUuid)]
    request_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    receipt_id: Uuid,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Jsonb)]
    document: Value,
    #[diesel(sql_type = Text)]
    cosign_status: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("the cursor is not one this service issued for this list")]
    BadCursor,
    #[error("database error")]
    Database(#[from] DieselError),
}

impl From<BadCursor> for ReadError {
    fn from(_: BadCursor) -> Self {
        ReadError::BadCursor
    }
}

async fn with_receipts(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    rows: Vec<Row>,
) -> Result<Vec<Remediation>, DieselError> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.request_id).collect();
    let receipts: Vec<ReceiptRow> = db::sql(
        "SELECT request_id, receipt_id, kind, document, cosign_status FROM remediation_receipts
          WHERE tenant_id = $1 AND request_id = ANY($2)
          ORDER BY receipt_id",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<diesel::sql_types::Array<SqlUuid>, _>(&ids)
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| Remediation {
            receipts: receipts
                .iter()
                .filter(|r| r.request_id == row.request_id)
                .map(|r| Receipt {
                    receipt_id: r.receipt_id,
                    kind: r.kind.clone(),
                    document: r.document.clone(),
                    cosign_status: r.cosign_status.clone(),
                })
                .collect(),
            row,
        })
        .collect())
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: RemediationId,
) -> Result<Option<Remediation>, DieselError> {
    let id = id.as_uuid();
    let Some(row) = crate::store::one(conn, tenant, id).await? else {
        return Ok(None);
    };
    Ok(with_receipts(conn, tenant, vec![row]).await?.pop())
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &Filter,
    page: PageRequest<'_>,
) -> Result<Page<Remediation>, ReadError> {
    let keyset = Keyset::new(page, tenant, LIST, Order::Descending)?;
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM remediation_requests r
           LEFT JOIN remediation_runs u
             ON u.tenant_id = r.tenant_id AND u.request_id = r.request_id
          WHERE r.tenant_id = $1
            AND ($2::uuid IS NULL OR r.policy_id = $2)
            AND ($3::uuid IS NULL OR r.connector_id = $3)
            AND ($4::text IS NULL OR r.status = $4)
            AND ($5::text IS NULL OR r.action_type = $5)
            AND ($6::uuid IS NULL OR r.request_id < $6)
          ORDER BY r.request_id DESC
          LIMIT $7"
    ))
    .bind::<Text, _>(tenant.as_str())
    .bind::<Nullable<SqlUuid>, _>(filter.policy.map(|p| p.as_uuid()))
    .bind::<Nullable<SqlUuid>, _>(filter.connector.map(|c| c.as_uuid()))
    .bind::<Nullable<Text>, _>(filter.status.map(State::as_str))
    .bind::<Nullable<Text>, _>(filter.action_type.map(ActionType::as_str))
    .bind::<Nullable<SqlUuid>, _>(keyset.position().map(|p| p.id))
    .bind::<Integer, _>(i32::try_from(keyset.fetch()).unwrap_or(101))
    .load(conn)
    .await?;
    let page = keyset.page(rows, |r| Position::id(r.request_id));
    let items = with_receipts(conn, tenant, page.items).await?;
    Ok(Page {
        items,
        pagination: page.pagination,
    })
}

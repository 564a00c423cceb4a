//! Co-signing, as the tenant's `/settings/cosigning` says (docs/governance.md, "Co-signing"):
//!
//! - **disabled**: the platform's signature only; receipts are stored `not_required`.
//! - **optional**: every receipt (executed, blocked, undone) is stored `pending`, and
//!   [`run_once`], in the background, sends it to the tenant's co-signer and stores the
//!   verified co-signature (`cosigned`). A co-signer that is down changes nothing about the
//!   remediation: the receipt is retried with backoff (30 s doubling to an hour) and, after 24
//!   hours of attempts, `failed`.
//! - **required**: [`approve`] runs in the executor before the first step of a request. A
//!   `planned` receipt is sent first, and only a verified co-signature lets the action run; it
//!   is stored (kind `planned`, `cosigned`) before anything touches the object. Any failure
//!   leaves the request `planned`, with `reason: cosign_failed: <why>`, retried like any
//!   transient failure until the executor's attempts run out. The executed receipt is then
//!   co-signed too, as in optional mode: it is the record of what happened, and the action
//!   it records was approved already.
//!
//! The certificate missing from a deployment whose tenant turned co-signing on is a failure
//! like any other, never a reason to skip co-signing.

use diesel::result::Error as DieselError;
use diesel::sql_types::{Integer, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension as _, QueryableByName};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use receipts::SignedReceipt;
use serde_json::Value;
use settings::CosigningMode;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::conn::Conn;
use crate::cosigner::{CosignError, host};
use crate::receipt::Receipts;
use crate::stop::{Reason, Stop};
use crate::store::{self, Row, StoredReceipt};

/// Pending receipts taken per run.
const PER_RUN: i32 = 16;

/// How long a taken receipt is its taker's: longer than the whole run can last (its receipts
/// are sent one after another, each exchange up to the co-signer's timeout), so that another
/// replica never sends a receipt this run still holds.
const LEASE_SECONDS: i32 = PER_RUN * crate::cosigner::TIMEOUT.as_secs() as i32 + 60;

/// How long a pending receipt keeps being sent, counted from when it was issued.
const GIVE_UP_AFTER_HOURS: i32 = 24;

/// `required` co-signing, before a request's first step: returns once the request's planned
/// receipt is co-signed and stored (at once when the tenant does not require co-signing, or
/// when an earlier run stored it before a crash, so it is never sent twice), and stops the
/// request for now otherwise.
pub(crate) async fn approve(
    db: &mut Conn<'_>,
    receipts: &Receipts,
    row: &Row,
    cosigning: &settings::Cosigning,
) -> Result<(), Stop> {
    if cosigning.mode != CosigningMode::Required || planned_cosigned(db.get().await?, row).await? {
        return Ok(());
    }
    let (id, document) = receipts.planned(row)?;
    let endpoint = cosigning.endpoint_url.as_deref();
    // The co-signer may take its whole timeout: no connection is held meanwhile.
    db.release();
    let cosigned = match endpoint {
        Some(endpoint) => receipts.cosigner.cosign(endpoint, &document).await,
        None => Err(CosignError::NoEndpoint),
    };
    match cosigned {
        Ok(document) => {
            let receipt = StoredReceipt {
                id,
                kind: "planned",
                document: document.to_value(),
                cosign_status: "cosigned",
            };
            store::insert_receipt(db.get().await?, row, &receipt).await?;
            Ok(())
        }
        Err(e) => {
            let host = endpoint.map_or_else(|| "none".to_owned(), host);
            tracing::warn!(tenant = %row.tenant_id, request = %row.request_id, %host, reason = %e, "the co-signer did not approve a planned remediation; it does not run");
            Err(Stop::retry(Reason::CosignFailed(e.code())))
        }
    }
}

/// Whether the request has its co-signed planned receipt.
async fn planned_cosigned(conn: &mut AsyncPgConnection, row: &Row) -> Result<bool, DieselError> {
    #[derive(QueryableByName)]
    struct Found {
        #[diesel(sql_type = Integer)]
        _one: i32,
    }
    let found: Vec<Found> = db::sql(
        "SELECT 1 AS _one FROM remediation_receipts
          WHERE tenant_id = $1 AND request_id = $2 AND kind = 'planned'
            AND cosign_status = 'cosigned'",
    )
    .bind::<Text, _>(&row.tenant_id)
    .bind::<SqlUuid, _>(row.request_id)
    .load(conn)
    .await?;
    Ok(!found.is_empty())
}

/// A pending receipt, taken.
#[derive(Debug, QueryableByName)]
struct Due {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    receipt_id: Uuid,
    #[diesel(sql_type = Jsonb)]
    document: Value,
    #[diesel(sql_type = Integer)]
    cosign_attempts: i32,
}

/// How one attempt went.
enum Outcome {
    Cosigned(SignedReceipt),
    Failed(String),
    /// The tenant turned co-signing off before the co-signer answered.
    TurnedOff,
}

/// Sends the pending receipts that are due, once; returns how many it took. A receipt is
/// taken under `FOR UPDATE SKIP LOCKED` and its next attempt moved past a lease in the same
/// statement, so replicas never send one receipt at the same time and no lock is held while a
/// co-signer answers.
pub async fn run_once(
    conn: &mut AsyncPgConnection,
    receipts: &Receipts,
) -> Result<usize, DieselError> {
    run(&mut Conn::Borrowed(conn), receipts).await
}

/// [`run_once`] with connections from `pool`, none held while a co-signer answers.
pub async fn run_once_pooled(pool: &db::Pool, receipts: &Receipts) -> Result<usize, DieselError> {
    run(&mut Conn::pooled(pool), receipts).await
}

async fn run(db: &mut Conn<'_>, receipts: &Receipts) -> Result<usize, DieselError> {
    let due: Vec<Due> = db::sql(
        "WITH due AS (
             SELECT tenant_id, receipt_id FROM remediation_receipts
              WHERE cosign_status = 'pending' AND cosign_next_at <= now()
              ORDER BY cosign_next_at
              LIMIT $1
                FOR UPDATE SKIP LOCKED)
         UPDATE remediation_receipts r
            SET cosign_next_at = now() + make_interval(secs => $2)
           FROM due
          WHERE r.tenant_id = due.tenant_id AND r.receipt_id = due.receipt_id
         RETURNING r.tenant_id, r.receipt_id, r.document, r.cosign_attempts",
    )
    .bind::<Integer, _>(PER_RUN)
    .bind::<Integer, _>(LEASE_SECONDS)
    .load(db.get().await?)
    .await?;
    for d in &due {
        let outcome = attempt(db, receipts, d).await;
        record(db.get().await?, d, outcome).await?;
    }
    Ok(due.len())
}

async fn attempt(db: &mut Conn<'_>, receipts: &Receipts, d: &Due) -> Outcome {
    let Ok(tenant) = db::background::parse_column::<ids::TenantId>(&d.tenant_id) else {
        return Outcome::Failed("the receipt's tenant id is malformed".into());
    };
    let Ok(conn) = db.get().await else {
        return Outcome::Failed("the co-signing setting could not be read".into());
    };
    let cosigning = match receipts.cosigning(conn, &tenant).await {
        Ok(cosigning) => cosigning,
        Err(_) => return Outcome::Failed("the co-signing setting could not be read".into()),
    };
    if cosigning.mode == CosigningMode::Disabled {
        return Outcome::TurnedOff;
    }
    let Some(endpoint) = cosigning.endpoint_url.as_deref() else {
        return Outcome::Failed(CosignError::NoEndpoint.to_string());
    };
    let Ok(document) = SignedReceipt::from_value(&d.document) else {
        return Outcome::Failed("the stored receipt is malformed".into());
    };
    db.release();
    match receipts.cosigner.cosign(endpoint, &document).await {
        Ok(cosigned) => Outcome::Cosigned(cosigned),
        Err(e) => {
            tracing::warn!(tenant = %d.tenant_id, receipt = %d.receipt_id, host = %host(endpoint), reason = %e, attempt = d.cosign_attempts + 1, "a receipt could not be co-signed; it is retried");
            Outcome::Failed(e.to_string())
        }
    }
}

async fn record(
    conn: &mut AsyncPgConnection,
    d: &Due,
    outcome: Outcome,
) -> Result<(), DieselError> {
    match outcome {
        Outcome::Cosigned(document) => {
            db::sql(
                "UPDATE remediation_receipts
                    SET document = $3, cosign_status = 'cosigned',
                        cosign_attempts = cosign_attempts + 1, cosign_next_at = NULL,
                        cosign_error = NULL
                  WHERE tenant_id = $1 AND receipt_id = $2 AND cosign_status = 'pending'",
            )
            .bind::<Text, _>(&d.tenant_id)
            .bind::<SqlUuid, _>(d.receipt_id)
            .bind::<Jsonb, _>(document.to_value())
            .execute(conn)
            .await?;
        }
        Outcome::TurnedOff => {
            db::sql(
                "UPDATE remediation_receipts
                    SET cosign_status = 'failed', cosign_next_at = NULL,
                        cosign_error = 'co-signing was turned off before the receipt was co-signed'
                  WHERE tenant_id = $1 AND receipt_id = $2 AND cosign_status = 'pending'",
            )
            .bind::<Text, _>(&d.tenant_id)
            .bind::<SqlUuid, _>(d.receipt_id)
            .execute(conn)
            .await?;
        }
        Outcome::Failed(reason) => {
            let attempts = d.cosign_attempts.saturating_add(1);
            let wait = egress::backoff(attempts.unsigned_abs());
            let next = OffsetDateTime::now_utc()
                + time::Duration::try_from(wait).unwrap_or(time::Duration::HOUR);
            #[derive(QueryableByName)]
            struct Status {
                #[diesel(sql_type = Text)]
                cosign_status: String,
            }
            let status: Option<Status> = db::sql(
                "UPDATE remediation_receipts
                    SET cosign_attempts = $3, cosign_error = $4,
                        cosign_status = CASE WHEN $5 > created_at + make_interval(hours => $6)
                                             THEN 'failed' ELSE 'pending' END,
                        cosign_next_at = CASE WHEN $5 > created_at + make_interval(hours => $6)
                                              THEN NULL ELSE $5 END
                  WHERE tenant_id = $1 AND receipt_id = $2 AND cosign_status = 'pending'
                 RETURNING cosign_status",
            )
            .bind::<Text, _>(&d.tenant_id)
            .bind::<SqlUuid, _>(d.receipt_id)
            .bind::<Integer, _>(attempts)
            .bind::<Text, _>(&reason)
            .bind::<Timestamptz, _>(next)
            .bind::<Integer, _>(GIVE_UP_AFTER_HOURS)
            .get_result(conn)
            .await
            .optional()?;
            if status.is_some_and(|s| s.cosign_status == "failed") {
                tracing::warn!(tenant = %d.tenant_id, receipt = %d.receipt_id, %reason, attempts, "a receipt was not co-signed within 24 hours; co-signing it failed");
            }
        }
    }
    Ok(())
}

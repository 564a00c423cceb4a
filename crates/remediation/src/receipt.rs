//! Receipts: what a remediation did, signed by the platform (Ed25519, RFC 8785 canonical JSON;
//! see the receipts crate), one per executed, blocked or undone request, and one `planned`
//! receipt before the action where the tenant requires co-signing. A receipt names the
//! object, its ETag and SHA-256 before and after, the findings, the snapshot and the undo
//! window: never a value.

use diesel_async::AsyncPgConnection;
use ids::TenantId;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::cosigner::Cosigner;
use crate::stop::{Reason, Stop};
use crate::store::{Row, StoredReceipt};

/// Signs receipts and has them co-signed as each tenant wants.
#[derive(Debug)]
pub struct Receipts {
    pub signer: receipts::Signer,
    /// Sends receipts to tenants' co-signing services with the platform's client certificate
    /// (when the deployment has one).
    pub cosigner: Cosigner,
}

fn hex(bytes: Option<&[u8]>) -> Value {
    bytes.map_or(Value::Null, |b| Value::String(hex::encode(b)))
}

fn time(at: Option<OffsetDateTime>) -> Value {
    at.map_or(Value::Null, |t| Value::String(audit::timestamp(t)))
}

/// The receipt's fields for `row` (everything but what the kind adds).
fn body(kind: &str, id: Uuid, row: &Row, now: OffsetDateTime) -> Value {
    let class = row.kind().safety_class().as_str();
    let mut findings: Vec<String> = row.finding_ids.iter().map(Uuid::to_string).collect();
    findings.sort();
    json!({
        "version": 1,
        "receipt_id": id.to_string(),
        "kind": kind,
        "request_id": row.request_id.to_string(),
        "tenant_id": row.tenant_id,
        "policy_id": row.policy_id.to_string(),
        "policy_version": row.policy_version,
        "action": row.action_type.as_str(),
        "safety_class": class,
        "connector_id": row.connector_id.to_string(),
        "resource": {"bucket": row.bucket, "key": row.object_key},
        "etag_before": row.etag,
        "sha256_before": hex(row.sha256_before.as_deref()),
        "etag_after": row.etag_after,
        "sha256_after": hex(row.sha256_after.as_deref()),
        "finding_ids": findings,
        "lkg_location": match (&row.lkg_bucket, &row.lkg_key) {
            (Some(bucket), Some(key)) => json!({"bucket": bucket, "key": key}),
            _ => Value::Null,
        },
        "executed_at": time(row.executed_at),
        "undo_until": time(row.undo_until),
        "issued_at": audit::timestamp(now),
    })
}

impl Receipts {
    /// The public keys receipts are checked with, as a JWKS.
    pub fn jwks(&self) -> Value {
        self.signer.jwks()
    }

    /// Whether the platform holds its co-signing client certificate.
    pub fn certificate(&self) -> settings::PlatformCertificate {
        self.cosigner.certificate()
    }

    /// The tenant's co-signing decision. When the settings cannot be read (the same row as the
    /// remediation policy, whose gate fails open), settings answers from its history
    /// (`settings::history`); only when neither can be read does the step stop for now:
    /// reading it as `disabled` could skip a co-signing the tenant requires.
    pub(crate) async fn cosigning(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
    ) -> Result<settings::Cosigning, Stop> {
        let read = settings::read(conn, tenant).await;
        self.cosigning_from(conn, tenant, &read).await
    }

    /// The same, from the tenant's settings as a run already read them.
    pub(crate) async fn cosigning_from(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        read: &Result<settings::TenantSettings, settings::SettingsError>,
    ) -> Result<settings::Cosigning, Stop> {
        settings::history::cosigning(conn, tenant, read, self.certificate())
            .await
            .map_err(|_| Stop::retry(Reason::SettingsUnreadable))
    }

    /// Signs a receipt; `mode` (the tenant's co-signing) says whether it awaits a co-signature.
    fn make(
        &self,
        kind: &'static str,
        receipt: Value,
        id: Uuid,
        mode: settings::CosigningMode,
    ) -> Result<StoredReceipt, Stop> {
        let document = self
            .signer
            .sign_receipt(receipt)
            .map_err(|e| Stop::retry_with(Reason::ReceiptUnsigned, e))?
            .to_value();
        Ok(StoredReceipt {
            id,
            kind,
            document,
            cosign_status: match mode {
                settings::CosigningMode::Disabled => "not_required",
                _ => "pending",
            },
        })
    }

    /// The receipt of what a request is about to do, signed, for a co-signer to approve before
    /// it runs (`required` co-signing): the executed receipt's fields, of kind `planned`, with
    /// the after-state (`sha256_before`, which is read with the object, the ETag and SHA-256
    /// after, the snapshot, `executed_at`, `undo_until`) null.
    /// The planned receipt a `required` co-signer is asked to approve. It is the same document
    /// on every attempt (its id and time come from the request, and Ed25519 signs
    /// deterministically), so a co-signer that approved one whose answer was lost is asked
    /// again about that receipt, not about a second one for the same action.
    pub(crate) fn planned(&self, row: &Row) -> Result<(Uuid, receipts::SignedReceipt), Stop> {
        let id = planned_receipt_id(row);
        let receipt = body("planned", id, row, row.created_at);
        let document = self
            .signer
            .sign_receipt(receipt)
            .map_err(|e| Stop::retry_with(Reason::ReceiptUnsigned, e))?;
        Ok((id, document))
    }

    pub(crate) fn executed(
        &self,
        row: &Row,
        mode: settings::CosigningMode,
    ) -> Result<StoredReceipt, Stop> {
        let id = Uuid::now_v7();
        let receipt = body("executed", id, row, OffsetDateTime::now_utc());
        self.make("executed", receipt, id, mode)
    }

    pub(crate) fn blocked(
        &self,
        row: &Row,
        mode: settings::CosigningMode,
    ) -> Result<StoredReceipt, Stop> {
        let id = Uuid::now_v7();
        let mut receipt = body("blocked", id, row, OffsetDateTime::now_utc());
        receipt["reason"] = json!("safety_class_denied");
        self.make("blocked", receipt, id, mode)
    }

    pub(crate) async fn undone(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
        row: &Row,
        by: &str,
        restored_etag: &str,
        forced: bool,
    ) -> Result<StoredReceipt, Stop> {
        let id = Uuid::now_v7();
        let now = OffsetDateTime::now_utc();
        let mut receipt = body("undone", id, row, now);
        receipt["undone_by"] = json!(by);
        receipt["undone_at"] = json!(audit::timestamp(now));
        receipt["etag_restored"] = json!(restored_etag);
        receipt["forced"] = json!(forced);
        let mode = self.cosigning(conn, tenant).await?.mode;
        self.make("undone", receipt, id, mode)
    }
}

/// The audit entry that goes with a receipt.
pub(crate) fn entry(
    kind: audit::Kind,
    row: &Row,
    outcome: &'static str,
    receipt: &StoredReceipt,
) -> audit::NewEntry {
    let action = row.kind().as_str();
    let class = row.kind().safety_class().as_str();
    audit::NewEntry::new(kind, audit::Actor::System)
        .policy(row.policy(), row.policy_version)
        .action(action)
        .connector(row.connector())
        .resource(row.resource())
        .outcome(outcome)
        .details(json!({
            "request_id": row.request_id.to_string(),
            "action_id": row.action_id.to_string(),
            "receipt_id": receipt.id.to_string(),
            "safety_class": class,
            "gate": row.gate.as_str(),
        }))
}

/// A UUIDv7 for the request's planned receipt: the request's planning time, and bits of a hash
/// of the request id, so that it is the same on every attempt and no other receipt's.
fn planned_receipt_id(row: &Row) -> Uuid {
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    hash.update(b"dps planned receipt\0");
    hash.update(row.request_id.as_bytes());
    let digest = hash.finish();
    let mut bits = [0u8; 10];
    bits.copy_from_slice(&digest.as_ref()[..10]);
    let millis = (row.created_at.unix_timestamp_nanos() / 1_000_000).max(0) as u64;
    uuid::Builder::from_unix_timestamp_millis(millis, &bits).into_uuid()
}

/// The tenant's rollback window, in hours. When the settings cannot be read (the gate fails
/// open, and the run goes on), settings answers from its history (`settings::history`). When
/// neither can be read, the run stops for now: a guessed window would sign a wrong
/// `undo_until` into the receipt, and keep a snapshot of the original (its PII) for the wrong
/// time.
pub(crate) async fn retention_hours(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    read: &Result<settings::TenantSettings, settings::SettingsError>,
) -> Result<u32, Stop> {
    settings::history::retention_hours(conn, tenant, read)
        .await
        .map_err(|_| Stop::retry(Reason::SettingsUnreadable))
}

//! Delivering alerts: the worker that drains `governance_deliveries`.
//!
//! Each delivery is a POST of its JSON payload to the channel's URL, with
//! `X-DPS-Delivery-Id` (the same on every retry) and
//! `X-DPS-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. A 2xx answer
//! delivers it; anything else is retried with exponential backoff (30 s, doubling, at most an
//! hour apart) until 24 hours after it was queued, when it fails. Each end is an audit entry
//! (`action_executed` or `action_failed`). At least once: a receiver dedupes on the delivery id.
//!
//! An alert is a `read_only` action: while the tenant denies that class, a due delivery is
//! not sent and ends `blocked` (`action_blocked`), as the executor ends a remediation whose
//! class was denied after it was planned. An enforced reconciliation may plan it again.
//!
//! Deliveries are claimed in a short transaction (their next attempt moved past the claim's
//! lease) and sent outside it, so no lock is held while a receiver answers.

use std::collections::HashMap;
use std::time::Duration;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use keys::KeyRing;
use ring::hmac;
use serde_json::{Value, json};
use settings::{Gate, SafetyClass};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::governance_deliveries;

use crate::channels::{self, Destination};

/// How long a delivery keeps being retried.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Deliveries claimed per run.
const PER_RUN: i64 = 16;

/// How long one send may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long claimed deliveries are left to their worker before another may take them: long
/// enough for the run to send every one of them (one after the other) and record it. Shorter,
/// another replica could take and send the last of a slow run's deliveries a second time.
const LEASE: Duration = Duration::from_secs(PER_RUN as u64 * SEND_TIMEOUT.as_secs() + 60);

/// `t=<t>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, t: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(t.to_string().as_bytes());
    ctx.update(b".");
    ctx.update(body);
    format!("t={t},v1={}", hex::encode(ctx.sign().as_ref()))
}

#[derive(Debug, Queryable)]
struct Due {
    tenant_id: String,
    delivery_id: Uuid,
    channel: String,
    action_id: Uuid,
    payload: Value,
    attempts: i32,
    created_at: OffsetDateTime,
}

/// How one attempt went.
enum Attempt {
    Delivered(u16),
    Refused(String),
    /// The channel is gone: nothing to retry.
    NoChannel,
    /// The channel's URL is not one the service may call now (the address rules tightened
    /// since it was made): nothing to retry.
    NotAllowed(String),
    /// The tenant denies `read_only` actions now: not sent.
    Blocked,
}

/// Sends what is due, once; returns how many deliveries were attempted.
pub async fn run_once(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    client: &reqwest::Client,
    egress: egress::Egress,
) -> Result<usize, diesel::result::Error> {
    let now = OffsetDateTime::now_utc();
    // The lease's end is the claim's token (see `record`), kept to the microsecond Postgres
    // stores.
    let lease = now + LEASE;
    let lease = lease
        .replace_nanosecond(lease.nanosecond() / 1000 * 1000)
        .unwrap_or(lease);
    let due: Vec<Due> = conn
        .transaction(async |conn| {
            let due: Vec<Due> = governance_deliveries::table
                .filter(governance_deliveries::status.eq("pending"))
                .filter(governance_deliveries::next_attempt_at.le(now))
                .order(governance_deliveries::next_attempt_at)
                .limit(PER_RUN)
                .select((
                    governance_deliveries::tenant_id,
                    governance_deliveries::delivery_id,
                    governance_deliveries::channel,
                    governance_deliveries::action_id,
                    governance_deliveries::payload,
                    governance_deliveries::attempts,
                    governance_deliveries::created_at,
                ))
                .for_update()
                .skip_locked()
                .load(conn)
                .await?;
            for d in &due {
                diesel::update(governance_deliveries::table)
                    .filter(governance_deliveries::tenant_id.eq(&d.tenant_id))
                    .filter(governance_deliveries::delivery_id.eq(d.delivery_id))
                    .set(governance_deliveries::next_attempt_at.eq(lease))
                    .execute(conn)
                    .await?;
            }
            Ok::<_, diesel::result::Error>(due)
        })
        .await?;
    let mut gates: HashMap<TenantId, Gate> = HashMap::new();
    for d in &due {
        let Ok(tenant) = d.tenant_id.parse::<TenantId>() else {
            continue;
        };
        let gate = match gates.get(&tenant) {
            Some(gate) => *gate,
            None => {
                let gate = settings::remediation_gate(conn, &tenant, SafetyClass::ReadOnly).await;
                *gates.entry(tenant.clone()).or_insert(gate)
            }
        };
        if !gate.permits() {
            record(conn, &tenant, d, lease, Attempt::Blocked).await?;
            continue;
        }
        let attempt = match destination(conn, keyring, &tenant, &d.channel).await {
            // Checked again at each send: the client's resolver checks the addresses of host
            // names, but a URL naming an address connects without resolving anything.
            Some(to) => match egress.check_url(&to.url) {
                Ok(_) => send(client, &to, d).await,
                Err(e) => Attempt::NotAllowed(format!("the channel's URL is not allowed: {e}")),
            },
            None => Attempt::NoChannel,
        };
        record(conn, &tenant, d, lease, attempt).await?;
    }
    Ok(due.len())
}

async fn destination(
    conn: &mut AsyncPgConnection,
    keyring: &KeyRing,
    tenant: &TenantId,
    channel: &str,
) -> Option<Destination> {
    let keys = keyring.tenant(conn, tenant).await.ok()?;
    channels::destinations(conn, &keys, tenant, &[channel.to_owned()])
        .await
        .ok()?
        .into_iter()
        .next()
        .map(|(_, d)| d)
}

async fn send(client: &reqwest::Client, to: &Destination, d: &Due) -> Attempt {
    let body = d.payload.to_string().into_bytes();
    let t = OffsetDateTime::now_utc().unix_timestamp();
    let sent = client
        .post(&to.url)
        .header("content-type", "application/json")
        .header(
            "user-agent",
            concat!("dps-governance/", env!("CARGO_PKG_VERSION")),
        )
        .header("x-dps-delivery-id", d.delivery_id.to_string())
        .header("x-dps-signature", signature(&to.secret, t, &body))
        .body(body)
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() => Attempt::Delivered(r.status().as_u16()),
        Ok(r) => Attempt::Refused(format!("the receiver answered {}", r.status().as_u16())),
        // The error names the kind of failure; the URL (which may carry a token) is left out.
        Err(e) => Attempt::Refused(describe(e)),
    }
}

/// What a failed send tells the tenant: the kind of failure only (`egress::failure_kind`);
/// the full chain goes to the service's log.
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    tracing::warn!(error = %egress::failure_detail(&e), "an alert delivery failed");
    if e.is_timeout() {
        "the receiver did not answer in time".into()
    } else if e.is_connect() {
        "the receiver could not be reached (no connection, or an address the service may not call)"
            .into()
    } else {
        "the request to the receiver failed".into()
    }
}

/// Records an attempt, if this run still holds the delivery (`lease` is its claim's token): a
/// run that outlasted its lease records nothing over what the run that took it over records.
async fn record(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    d: &Due,
    lease: OffsetDateTime,
    attempt: Attempt,
) -> Result<(), diesel::result::Error> {
    let now = OffsetDateTime::now_utc();
    let attempts = d.attempts + 1;
    let gave_up = now - d.created_at
        + time::Duration::try_from(egress::backoff(attempts as u32))
            .unwrap_or(time::Duration::HOUR)
        > time::Duration::try_from(GIVE_UP_AFTER).unwrap_or(time::Duration::DAY);
    let (status, error, next, entry) = match attempt {
        Attempt::Delivered(code) => (
            "delivered",
            None,
            now,
            Some((
                audit::Kind::ActionExecuted,
                "executed",
                json!({ "http_status": code }),
            )),
        ),
        Attempt::NoChannel => (
            "failed",
            Some("the channel was deleted".to_owned()),
            now,
            Some((
                audit::Kind::ActionFailed,
                "failed",
                json!({ "error": "the channel was deleted" }),
            )),
        ),
        Attempt::NotAllowed(error) => (
            "failed",
            Some(error.clone()),
            now,
            Some((
                audit::Kind::ActionFailed,
                "failed",
                json!({ "error": error }),
            )),
        ),
        Attempt::Blocked => (
            "blocked",
            None,
            now,
            Some((
                audit::Kind::ActionBlocked,
                "blocked",
                json!({ "gate": "denied", "safety_class": SafetyClass::ReadOnly.as_str() }),
            )),
        ),
        Attempt::Refused(error) if gave_up => (
            "failed",
            Some(error.clone()),
            now,
            Some((
                audit::Kind::ActionFailed,
                "failed",
                json!({ "error": error }),
            )),
        ),
        Attempt::Refused(error) => (
            "pending",
            Some(error),
            now + egress::backoff(attempts as u32),
            None,
        ),
    };
    conn.transaction(async |conn| {
        let held = diesel::update(governance_deliveries::table)
            .filter(governance_deliveries::tenant_id.eq(tenant.as_str()))
            .filter(governance_deliveries::delivery_id.eq(d.delivery_id))
            .filter(governance_deliveries::status.eq("pending"))
            .filter(governance_deliveries::next_attempt_at.eq(lease))
            .set((
                governance_deliveries::status.eq(status),
                governance_deliveries::attempts.eq(attempts),
                governance_deliveries::last_error.eq(&error),
                governance_deliveries::next_attempt_at.eq(next),
                governance_deliveries::delivered_at.eq((status == "delivered").then_some(now)),
            ))
            .execute(conn)
            .await?;
        if held == 0 {
            tracing::warn!(tenant = %tenant, delivery = %d.delivery_id, "an alert delivery outlasted its lease; what the run that took it over records stands");
            return Ok(());
        }
        let Some((kind, outcome, mut details)) = entry else {
            return Ok(());
        };
        policies::ledger::set_outcome(conn, tenant, d.action_id, outcome, now).await?;
        details["delivery_id"] = json!(d.delivery_id.to_string());
        details["action_id"] = json!(d.action_id.to_string());
        details["channel"] = json!(d.channel);
        details["attempts"] = json!(attempts);
        let policy = d.payload["policy"]["id"]
            .as_str()
            .and_then(ids::PolicyId::parse);
        let version = d.payload["policy"]["version"]
            .as_i64()
            .and_then(|v| i32::try_from(v).ok());
        let mut entry = audit::NewEntry::new(kind, audit::Actor::System)
            .action("alert")
            .outcome(outcome)
            .details(details);
        if let (Some(policy), Some(version)) = (policy, version) {
            entry = entry.policy(policy, version);
        }
        if let Some(connector) = d.payload["connector_id"]
            .as_str()
            .and_then(ids::ConnectorId::parse)
        {
            entry = entry.connector(connector);
        }
        if let Some(resource) = d.payload["resource"].as_str() {
            entry = entry.resource(resource);
        }
        audit::append(conn, tenant, &[entry]).await.map(drop)
    })
    .await
}

/// Delivers until the process ends: every second, at once while there is more.
pub fn spawn(pool: db::Pool, keyring: std::sync::Arc<KeyRing>, egress: egress::Egress) {
    let client = match egress.client(SEND_TIMEOUT) {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "the alert delivery client could not be built; alerts stay queued");
            return;
        }
    };
    db::background::repeat("alert delivery", Duration::from_secs(1), move || {
        let (pool, keyring, client) = (pool.clone(), keyring.clone(), client.clone());
        async move {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            run_once(&mut conn, &keyring, &client, egress)
                .await
                .map(|sent| sent > 0)
                .map_err(|e| e.to_string())
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_an_hmac_over_time_and_body() {
        // Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            signature("whsec_test", 1_700_000_000, br#"{"a":1}"#),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }
}

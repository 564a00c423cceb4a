//! Policy evaluation: every batch of findings a scan records is evaluated against the tenant's
//! policies in scope, read from the scans outbox.
//!
//! **A policy acts on what is recorded after it.** A policy version acts through this
//! evaluation only on batches whose transaction began after the version was created
//! (`Active::acts_from_txid`): findings recorded before are acted on by a reconciliation,
//! under its blast-radius limit, or by the next scan. Coverage and risk follow every policy.
//!
//! [`Evaluator::run_once`] takes the consumer's row lock (so one replica consumes at a time),
//! reads events after its position, evaluates each and moves the position, all in one
//! transaction: an event's effects and the position that says it was read commit together.
//! The ledger of actions makes a re-read harmless anyway.

pub mod decide;
pub mod plan;

use std::collections::HashMap;
use std::time::Duration;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::TenantId;
use scans::outbox::{self, Delivered, Event, Position};

use db::schema::governance_consumers;

pub use decide::{Gates, Outcome};
pub use plan::{Batch, Origin, Tally, apply};
pub use policies::matching::Finding;

use policies::store::{Active, active};
use posture::drift::Decisions;

/// This consumer's name in `governance_consumers`.
pub const CONSUMER: &str = "governance-evaluation";

/// Events read per transaction.
const EVENTS_PER_RUN: i64 = 64;

#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    #[error("database error")]
    Database(#[from] diesel::result::Error),
    #[error("the scans outbox could not be read: {0}")]
    Outbox(#[from] scans::ScanError),
}

/// Policies and gates per tenant, read once per run.
#[derive(Default)]
struct Tenants(HashMap<TenantId, (Vec<Active>, Gates)>);

/// Evaluates up to one run of events; returns how many were read (0 when there were none, or
/// another replica holds the consumer). `gates_conn` reads the remediation gate outside the
/// transaction, so that a failed read cannot abort it (the gate fails open).
pub async fn run_once(
    conn: &mut AsyncPgConnection,
    gates_conn: &mut AsyncPgConnection,
) -> Result<usize, EvaluateError> {
    diesel::insert_into(governance_consumers::table)
        .values(governance_consumers::consumer.eq(CONSUMER))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    conn.transaction(async |conn| {
        let Some((txid, event_id)): Option<(i64, i64)> = governance_consumers::table
            .find(CONSUMER)
            .select((governance_consumers::txid, governance_consumers::event_id))
            .for_update()
            .skip_locked()
            .first(conn)
            .await
            .optional()?
        else {
            return Ok(0);
        };
        let events = outbox::read(conn, Position { txid, event_id }, EVENTS_PER_RUN).await?;
        let Some(last) = events.last().map(|e| e.position) else {
            return Ok(0);
        };
        let mut tenants = Tenants::default();
        for event in &events {
            evaluate_event(conn, gates_conn, &mut tenants, event).await?;
        }
        diesel::update(governance_consumers::table.find(CONSUMER))
            .set((
                governance_consumers::txid.eq(last.txid),
                governance_consumers::event_id.eq(last.event_id),
                governance_consumers::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)
            .await?;
        Ok(events.len())
    })
    .await
}

/// Evaluates until the process ends: at once while events keep coming, else every half second.
pub fn spawn(pool: db::Pool) {
    db::background::repeat("policy evaluation", Duration::from_millis(500), move || {
        let pool = pool.clone();
        async move {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            let mut gates = pool.get().await.map_err(|e| e.to_string())?;
            run_once(&mut conn, &mut gates)
                .await
                .map(|read| read > 0)
                .map_err(|e| e.to_string())
        }
    });
}

/// Whether `policy`'s version acts on the batch `delivered` recorded: the batch's transaction
/// began after the version's was created.
fn acts_on(policy: &Active, delivered: &Delivered) -> bool {
    delivered.position.txid >= policy.acts_from_txid
}

async fn evaluate_event(
    conn: &mut AsyncPgConnection,
    gates_conn: &mut AsyncPgConnection,
    tenants: &mut Tenants,
    delivered: &Delivered,
) -> Result<(), EvaluateError> {
    let (connector, objects) = match &delivered.event {
        Event::ObjectsRecorded { connector, objects } => (connector, objects),
        Event::ScanEnded { connectors, .. } => {
            // Each connector's buckets are checked for exposure and configuration drift.
            posture::buckets::queue(conn, &delivered.tenant, connectors).await?;
            return Ok(());
        }
    };
    if !tenants.0.contains_key(&delivered.tenant) {
        policies::store::lock_for_reading(conn, &delivered.tenant).await?;
        let policies = active(conn, &delivered.tenant).await?;
        let gates = Gates::read(gates_conn, &delivered.tenant, &policies).await;
        tenants
            .0
            .insert(delivered.tenant.clone(), (policies, gates));
    }
    let Some((policies, gates)) = tenants.0.get(&delivered.tenant) else {
        return Ok(());
    };
    let with_findings: Vec<(String, String)> = objects
        .iter()
        .filter(|o| o.findings > 0)
        .map(|o| (o.bucket.clone(), o.object_key.clone()))
        .collect();
    let findings: Vec<Finding> = scans::findings::open_in_batch(
        conn,
        &delivered.tenant,
        delivered.scan,
        *connector,
        &with_findings,
    )
    .await?
    .into_iter()
    .map(Finding::from)
    .collect();
    // A policy version acts here only on batches recorded after it was created: what was
    // recorded before is a reconciliation's to act on, under its limit, whatever the order in
    // which this consumer and a reconciliation happen to run.
    let acting: std::borrow::Cow<'_, [Active]> = if policies.iter().all(|p| acts_on(p, delivered)) {
        std::borrow::Cow::Borrowed(policies)
    } else {
        std::borrow::Cow::Owned(
            policies
                .iter()
                .filter(|p| acts_on(p, delivered))
                .cloned()
                .collect(),
        )
    };
    let decisions = if acting.iter().any(|p| p.covers(*connector)) {
        let batch = Batch {
            tenant: &delivered.tenant,
            connector: *connector,
            origin: Origin::Scan(delivered.scan),
            objects: objects.len(),
            findings: &findings,
            enforce: true,
        };
        plan::apply_with_decisions(conn, &batch, &acting, gates)
            .await?
            .1
    } else {
        Decisions::new()
    };
    // A bucket with findings that was never checked is checked now rather than when the scan
    // ends, so that its later batches are recorded with its exposure.
    let mut found_in: Vec<&str> = findings.iter().map(|f| f.bucket.as_str()).collect();
    found_in.sort_unstable();
    found_in.dedup();
    posture::buckets::queue_first_sight(conn, &delivered.tenant, *connector, &found_in).await?;
    // Risk and drift follow every scanned object, with or without policies; a deleted object
    // has no findings left.
    let scanned: Vec<(&str, &str)> = objects
        .iter()
        .filter(|o| o.state == "scanned" || o.state == "deleted")
        .map(|o| (o.bucket.as_str(), o.object_key.as_str()))
        .collect();
    let changes = posture::risk::state::record_batch(
        conn,
        &delivered.tenant,
        *connector,
        &scanned,
        &findings,
        policies,
    )
    .await?;
    let events = posture::drift::data_drift(*connector, &changes, &decisions);
    posture::drift::record(conn, &delivered.tenant, &events).await?;
    Ok(())
}

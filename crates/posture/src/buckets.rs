//! Bucket posture: what each bucket (container) of a connector exposes and how it is
//! configured, checked after every scan of the connector, and the exposure and config drift
//! between two checks.
//!
//! The evaluation consumer queues a check when a scan ends ([`queue`]), in the transaction
//! that reads the event; a task in platform-api asks the provider ([`run_once`]) outside any
//! transaction, then records what it saw and the drift in one ([`record`]). A bucket whose
//! exposure changed has its files and findings rescored.
//!
//! Drift rules (docs/governance.md):
//! - **exposure_drift**: public after not (or never checked): `critical` when the bucket
//!   holds findings, `high` when not; not public after public: `low`. Unknown (the provider
//!   does not say) is neither, and changes nothing.
//! - **config_drift**, only between two checks: unreachable after reachable, or back
//!   (`medium`); default encryption turned off (`high`) or changed (`low`); versioning
//!   suspended or turned off (`medium`) or changed (`low`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use connectors::{Cloud, Failure, Posture};
use diesel::QueryableByName;
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, Integer, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use keys::KeyRing;
use serde_json::{Value, json};
use time::OffsetDateTime;
use uuid::Uuid;

use db::schema::{governance_buckets, governance_posture_checks};

use crate::drift::{Kind, NewEvent};
use crate::findings::RemediationStatus;
use crate::risk::exposure::{BucketRisk, bucket_risk, set_bucket_exposure};
use crate::risk::model;
use policies::document::Severity;

/// Attempts before a check that keeps failing is dropped (the next scan queues another).
const MAX_ATTEMPTS: i32 = 5;

/// What one check saw of one bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub bucket: String,
    /// The posture calls reached the bucket (a missing bucket or refused credentials: no).
    pub accessible: bool,
    pub posture: Posture,
}

/// What the last check recorded of a bucket.
#[derive(Debug, Clone, PartialEq, Eq, Queryable)]
pub struct Stored {
    pub bucket: String,
    pub accessible: bool,
    pub public: Option<bool>,
    pub encryption: Option<String>,
    pub versioning: Option<String>,
}

/// Queues a check of each connector; one already queued stays as it is.
pub async fn queue(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connectors: &[ConnectorId],
) -> Result<(), DieselError> {
    let now = OffsetDateTime::now_utc();
    for connector in connectors {
        diesel::insert_into(governance_posture_checks::table)
            .values((
                governance_posture_checks::tenant_id.eq(tenant.as_str()),
                governance_posture_checks::connector_id.eq(connector.as_uuid()),
                governance_posture_checks::requested_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Queues a check of the connector when one of `buckets` (where a batch being recorded found
/// data) was never checked. Its findings are then recorded with the bucket's exposure from the
/// next batches on, instead of all rescored when the first scan's check comes at its end.
pub async fn queue_first_sight(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    buckets: &[&str],
) -> Result<(), DieselError> {
    if buckets.is_empty() {
        return Ok(());
    }
    db::sql(
        "INSERT INTO governance_posture_checks (tenant_id, connector_id, requested_at)
         SELECT $1, $2, now()
          WHERE EXISTS (
                SELECT 1 FROM unnest($3::text[]) AS b(bucket)
                 WHERE NOT EXISTS (
                       SELECT 1 FROM governance_buckets g
                        WHERE g.tenant_id = $1 AND g.connector_id = $2 AND g.bucket = b.bucket))
         ON CONFLICT DO NOTHING",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(connector.as_uuid())
    .bind::<Array<Text>, _>(buckets)
    .execute(conn)
    .await
    .map(drop)
}

fn state(risk: BucketRisk, stored: Option<&Stored>) -> Value {
    let mut state = json!({ "findings_count": risk.findings, "risk_score": risk.score });
    if let Some(s) = stored {
        state["accessible"] = json!(s.accessible);
        state["public"] = json!(s.public);
        state["encryption"] = json!(s.encryption);
        state["versioning"] = json!(s.versioning);
    }
    state
}

fn event(
    kind: Kind,
    severity: Severity,
    connector: ConnectorId,
    bucket: &str,
    description: String,
    states: (&Value, &Value),
) -> NewEvent {
    NewEvent {
        kind,
        severity,
        connector,
        resource: bucket.to_owned(),
        description,
        previous: states.0.clone(),
        current: states.1.clone(),
        policies: Vec::new(),
        remediation: RemediationStatus::None,
    }
}

/// The drift between what was stored of a bucket and what a check saw, with the bucket's risk
/// unchanged by it. Pure.
pub fn compare(
    connector: ConnectorId,
    before: Option<&Stored>,
    now: &Stored,
    risk: BucketRisk,
) -> Vec<NewEvent> {
    compare_risks(connector, before, now, (risk, risk))
}

/// The drift between what was stored of a bucket and what a check saw, with the bucket's risk
/// before and after the change (a bucket turned public scores higher). Pure.
pub fn compare_risks(
    connector: ConnectorId,
    before: Option<&Stored>,
    now: &Stored,
    (risk_before, risk): (BucketRisk, BucketRisk),
) -> Vec<NewEvent> {
    let mut events = Vec::new();
    let (previous, current) = (state(risk_before, before), state(risk, Some(now)));
    let states = (&previous, &current);
    let bucket = now.bucket.as_str();
    let was_public = before.and_then(|b| b.public);
    match (was_public, now.public) {
        (Some(true), Some(true)) | (_, None) => {}
        (_, Some(true)) => events.push(event(
            Kind::Exposure,
            if risk.findings > 0 {
                Severity::Critical
            } else {
                Severity::High
            },
            connector,
            bucket,
            format!(
                "the bucket became readable by anyone; it holds {} finding(s)",
                risk.findings
            ),
            states,
        )),
        (Some(true), Some(false)) => events.push(event(
            Kind::Exposure,
            Severity::Low,
            connector,
            bucket,
            "the bucket is no longer readable by anyone".into(),
            states,
        )),
        (_, Some(false)) => {}
    }
    let Some(before) = before else {
        // The first check is the baseline for configuration.
        return events;
    };
    if before.accessible != now.accessible {
        events.push(event(
            Kind::Config,
            Severity::Medium,
            connector,
            bucket,
            if now.accessible {
                "the connector can reach the bucket again".into()
            } else {
                "the connector can no longer reach the bucket".into()
            },
            states,
        ));
    }
    if let (Some(was), Some(is)) = (&before.encryption, &now.encryption)
        && was != is
    {
        let off = is == "none";
        events.push(event(
            Kind::Config,
            if off { Severity::High } else { Severity::Low },
            connector,
            bucket,
            if off {
                format!("default encryption was turned off (was {was})")
            } else {
                format!("default encryption changed from {was} to {is}")
            },
            states,
        ));
    }
    if let (Some(was), Some(is)) = (&before.versioning, &now.versioning)
        && was != is
    {
        let lost = was == "enabled";
        events.push(event(
            Kind::Config,
            if lost {
                Severity::Medium
            } else {
                Severity::Low
            },
            connector,
            bucket,
            format!("versioning changed from {was} to {is}"),
            states,
        ));
    }
    events
}

/// What the last posture check saw of one bucket of a connector: whether it is public and its
/// versioning (`None` each: never checked, or the provider does not say).
pub async fn last_seen(
    conn: &mut AsyncPgConnection,
    tenant: &str,
    connector: Uuid,
    bucket: &str,
) -> Result<(Option<bool>, Option<String>), DieselError> {
    Ok(governance_buckets::table
        .filter(governance_buckets::tenant_id.eq(tenant))
        .filter(governance_buckets::connector_id.eq(connector))
        .filter(governance_buckets::bucket.eq(bucket))
        .select((governance_buckets::public, governance_buckets::versioning))
        .first(conn)
        .await
        .optional()?
        .unwrap_or((None, None)))
}

/// Records a check of a connector: stores what each observed bucket shows, marks buckets no
/// longer among those the connector covers as unreachable, rescores buckets whose exposure
/// moved, and writes the drift. Returns the events. Call it in a transaction.
pub async fn record(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    connector: ConnectorId,
    observations: &[Observation],
) -> Result<Vec<NewEvent>, DieselError> {
    // Once any batch being recorded under the old exposure has committed, so that its rows are
    // read and rescored here; a batch recorded after this commits reads the new exposure.
    crate::risk::state::lock_connector(conn, tenant, connector).await?;
    let stored: Vec<Stored> = governance_buckets::table
        .filter(governance_buckets::tenant_id.eq(tenant.as_str()))
        .filter(governance_buckets::connector_id.eq(connector.as_uuid()))
        .select((
            governance_buckets::bucket,
            governance_buckets::accessible,
            governance_buckets::public,
            governance_buckets::encryption,
            governance_buckets::versioning,
        ))
        .load(conn)
        .await?;
    let mut before: HashMap<String, Stored> =
        stored.into_iter().map(|s| (s.bucket.clone(), s)).collect();
    let mut seen: Vec<Stored> = observations
        .iter()
        .map(|o| {
            let old = before.get(&o.bucket);
            Stored {
                bucket: o.bucket.clone(),
                accessible: o.accessible,
                // An unreachable bucket's posture cannot be read: keep what was known.
                public: if o.accessible {
                    o.posture.public
                } else {
                    old.and_then(|s| s.public)
                },
                encryption: if o.accessible {
                    o.posture.encryption.clone()
                } else {
                    old.and_then(|s| s.encryption.clone())
                },
                versioning: if o.accessible {
                    o.posture.versioning.clone()
                } else {
                    old.and_then(|s| s.versioning.clone())
                },
            }
        })
        .collect();
    // Buckets the connector covered before and does not now: unreachable.
    for (name, old) in &before {
        if old.accessible && !observations.iter().any(|o| &o.bucket == name) {
            seen.push(Stored {
                accessible: false,
                ..old.clone()
            });
        }
    }
    let now = OffsetDateTime::now_utc();
    let mut events = Vec::new();
    for current in &seen {
        let old = before.remove(&current.bucket);
        let risk = bucket_risk(conn, tenant, connector, &current.bucket).await?;
        let exposure_before = model::exposure(old.as_ref().and_then(|s| s.public));
        // The event's current state is the bucket's risk after the change is scored.
        let after = if model::exposure(current.public) != exposure_before && risk.findings > 0 {
            set_bucket_exposure(conn, tenant, connector, &current.bucket, current.public).await?;
            bucket_risk(conn, tenant, connector, &current.bucket).await?
        } else {
            risk
        };
        events.extend(compare_risks(
            connector,
            old.as_ref(),
            current,
            (risk, after),
        ));
        diesel::insert_into(governance_buckets::table)
            .values((
                governance_buckets::tenant_id.eq(tenant.as_str()),
                governance_buckets::connector_id.eq(connector.as_uuid()),
                governance_buckets::bucket.eq(&current.bucket),
                governance_buckets::accessible.eq(current.accessible),
                governance_buckets::public.eq(current.public),
                governance_buckets::encryption.eq(&current.encryption),
                governance_buckets::versioning.eq(&current.versioning),
                governance_buckets::checked_at.eq(now),
            ))
            .on_conflict((
                governance_buckets::tenant_id,
                governance_buckets::connector_id,
                governance_buckets::bucket,
            ))
            .do_update()
            .set((
                governance_buckets::accessible.eq(current.accessible),
                governance_buckets::public.eq(current.public),
                governance_buckets::encryption.eq(&current.encryption),
                governance_buckets::versioning.eq(&current.versioning),
                governance_buckets::checked_at.eq(now),
            ))
            .execute(conn)
            .await?;
    }
    crate::drift::record(conn, tenant, &events).await?;
    Ok(events)
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = SqlUuid)]
    connector_id: Uuid,
    #[diesel(sql_type = Timestamptz)]
    requested_at: OffsetDateTime,
    #[diesel(sql_type = Integer)]
    attempts: i32,
}

/// What asking the provider came to.
enum Checked {
    /// Every bucket answered, or failed in a way that says it is unreachable.
    Seen(Vec<Observation>),
    /// The connector is gone.
    Gone,
    /// A failure that may pass (network, the platform's identity): try again later.
    Retry(String),
}

/// Asks the provider about each bucket the connector covers.
async fn check(
    conn: &mut AsyncPgConnection,
    cloud: &Cloud,
    keyring: &KeyRing,
    tenant: &TenantId,
    connector: ConnectorId,
) -> Checked {
    let keys = match keyring.tenant(conn, tenant).await {
        Ok(keys) => keys,
        Err(_) => return Checked::Retry("the tenant's keys could not be read".into()),
    };
    let config = match connectors::store::config(conn, &keys, tenant, connector).await {
        Ok(config) => config,
        Err(connectors::ConnectorError::NotFound) => return Checked::Gone,
        Err(e) => return Checked::Retry(e.to_string()),
    };
    let storage = match cloud.open(tenant, connector, &config) {
        Ok(storage) => storage,
        Err(e) => return Checked::Retry(e.message),
    };
    let mut buckets = match storage.buckets().await {
        Ok(buckets) => buckets,
        Err(e) => return Checked::Retry(e.message),
    };
    // The snapshot bucket too: remediation copies the values it protects there, and refuses
    // a bucket last seen public; its exposure drift is as critical as any bucket's.
    if let Some(lkg) = storage.lkg_bucket()
        && !buckets.iter().any(|b| b == lkg)
    {
        buckets.push(lkg.to_owned());
    }
    let mut seen = Vec::with_capacity(buckets.len());
    for bucket in buckets {
        match storage.posture(&bucket).await {
            Ok(posture) => seen.push(Observation {
                bucket,
                accessible: true,
                posture,
            }),
            Err(e) if matches!(e.failure, Failure::NotFound | Failure::Permission) => {
                seen.push(Observation {
                    bucket,
                    accessible: false,
                    posture: Posture::default(),
                });
            }
            Err(e) => return Checked::Retry(e.message),
        }
    }
    Checked::Seen(seen)
}

/// Takes one queued check and runs it; returns whether there was one.
pub async fn run_once(
    conn: &mut AsyncPgConnection,
    cloud: &Cloud,
    keyring: &KeyRing,
) -> Result<bool, DieselError> {
    let claimed: Option<Claimed> = db::sql(
        "UPDATE governance_posture_checks c
            SET lease_until = now() + interval '2 minutes', attempts = c.attempts + 1
          WHERE (c.tenant_id, c.connector_id) = (
                SELECT tenant_id, connector_id FROM governance_posture_checks
                 WHERE lease_until IS NULL OR lease_until < now()
                 ORDER BY requested_at
                 LIMIT 1
                   FOR UPDATE SKIP LOCKED)
         RETURNING c.tenant_id, c.connector_id, c.requested_at, c.attempts",
    )
    .get_result(conn)
    .await
    .optional()?;
    let Some(claimed) = claimed else {
        return Ok(false);
    };
    let tenant = db::background::parse_column::<TenantId>(&claimed.tenant_id)?;
    let connector = ConnectorId::from_uuid(claimed.connector_id);
    let done = governance_posture_checks::table
        .filter(governance_posture_checks::tenant_id.eq(tenant.as_str()))
        .filter(governance_posture_checks::connector_id.eq(connector.as_uuid()))
        .filter(governance_posture_checks::requested_at.eq(claimed.requested_at));
    match check(conn, cloud, keyring, &tenant, connector).await {
        Checked::Seen(observations) => {
            conn.transaction(async |conn| {
                record(conn, &tenant, connector, &observations).await?;
                diesel::delete(done).execute(conn).await.map(drop)
            })
            .await?;
        }
        Checked::Gone => {
            diesel::delete(done).execute(conn).await?;
        }
        Checked::Retry(why) => {
            tracing::warn!(tenant = %tenant, connector = %connector, attempt = claimed.attempts, reason = %why, "a bucket posture check failed");
            if claimed.attempts >= MAX_ATTEMPTS {
                diesel::delete(done).execute(conn).await?;
            }
        }
    }
    Ok(true)
}

/// Runs posture checks until the process ends: one after another while any is queued, else a
/// look every second.
pub fn spawn(pool: db::Pool, cloud: Cloud, keyring: Arc<KeyRing>) {
    db::background::repeat("bucket posture checks", Duration::from_secs(1), move || {
        let (pool, cloud, keyring) = (pool.clone(), cloud.clone(), keyring.clone());
        async move {
            let mut conn = pool.get().await.map_err(|e| e.to_string())?;
            run_once(&mut conn, &cloud, &keyring)
                .await
                .map_err(|e| e.to_string())
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(public: Option<bool>, encryption: &str, versioning: &str) -> Stored {
        Stored {
            bucket: "b".into(),
            accessible: true,
            public,
            encryption: Some(encryption.into()),
            versioning: Some(versioning.into()),
        }
    }

    fn kinds(events: &[NewEvent]) -> Vec<(Kind, Severity)> {
        events.iter().map(|e| (e.kind, e.severity)).collect()
    }

    #[test]
    fn exposure_of_sensitive_data_is_critical_and_unknown_changes_nothing() {
        let c = ConnectorId::new();
        let held = BucketRisk {
            findings: 3,
            score: 70,
        };
        let private = stored(Some(false), "AES256", "enabled");
        let public = stored(Some(true), "AES256", "enabled");
        assert_eq!(
            kinds(&compare(c, Some(&private), &public, held)),
            [(Kind::Exposure, Severity::Critical)]
        );
        assert_eq!(
            kinds(&compare(c, Some(&private), &public, BucketRisk::default())),
            [(Kind::Exposure, Severity::High)]
        );
        assert_eq!(
            kinds(&compare(c, Some(&public), &private, held)),
            [(Kind::Exposure, Severity::Low)]
        );
        // First sight of a public bucket is exposure; of a private one, nothing.
        assert_eq!(
            kinds(&compare(c, None, &public, held)),
            [(Kind::Exposure, Severity::Critical)]
        );
        assert!(compare(c, None, &private, held).is_empty());
        let unknown = stored(None, "AES256", "enabled");
        assert!(compare(c, Some(&public), &unknown, held).is_empty());
        let e = &compare(c, Some(&private), &public, held)[0];
        assert_eq!(e.previous["public"], false);
        assert_eq!(e.current["public"], true);
        assert_eq!(e.current["findings_count"], 3);
    }

    #[test]
    fn configuration_drift_follows_the_documented_severities() {
        let c = ConnectorId::new();
        let r = BucketRisk::default();
        let base = stored(Some(false), "AES256", "enabled");
        assert_eq!(
            kinds(&compare(
                c,
                Some(&base),
                &stored(Some(false), "none", "enabled"),
                r
            )),
            [(Kind::Config, Severity::High)]
        );
        assert_eq!(
            kinds(&compare(
                c,
                Some(&base),
                &stored(Some(false), "aws:kms", "enabled"),
                r
            )),
            [(Kind::Config, Severity::Low)]
        );
        assert_eq!(
            kinds(&compare(
                c,
                Some(&base),
                &stored(Some(false), "AES256", "suspended"),
                r
            )),
            [(Kind::Config, Severity::Medium)]
        );
        let gone = Stored {
            accessible: false,
            ..base.clone()
        };
        assert_eq!(
            kinds(&compare(c, Some(&base), &gone, r)),
            [(Kind::Config, Severity::Medium)]
        );
        assert!(compare(c, Some(&base), &base, r).is_empty());
        // The first check is a baseline for configuration.
        assert!(compare(c, None, &stored(Some(false), "none", "disabled"), r).is_empty());
    }
}

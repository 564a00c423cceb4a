use ids::{ConnectorId, DriftEventId, TenantId};
use paging::{Limit, PageRequest};
use policies::document::Severity;
use posture::drift::{self, DriftError, Filter, Kind, NewEvent};
use posture::findings::RemediationStatus;
use serde_json::json;

use crate::{Env, acme, admin, globex};

fn event(connector: ConnectorId, kind: Kind, severity: Severity, key: &str) -> NewEvent {
    NewEvent {
        kind,
        severity,
        connector,
        resource: format!("exports/{key}"),
        description: format!("{key} changed"),
        previous: json!({ "findings_count": 0 }),
        current: json!({ "findings_count": 3 }),
        policies: vec!["ssn-mask".into()],
        remediation: RemediationStatus::Pending,
    }
}

async fn listed(env: &mut Env, tenant: &TenantId, filter: Filter) -> Vec<String> {
    let page = PageRequest::first(&env.cursors, Limit::parse(None, 20).unwrap());
    drift::list(&mut env.conn, tenant, &filter, page)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| e.resource)
        .collect()
}

#[tokio::test]
async fn drift_events_are_the_tenants_own_filtered_counted_and_acknowledged_once() {
    let mut env = Env::new().await;
    let ours = env.connector(&acme(), "exports").await;
    let theirs = env.connector(&globex(), "exports").await;
    drift::record(
        &mut env.conn,
        &acme(),
        &[
            event(ours, Kind::Data, Severity::High, "a.csv"),
            event(ours, Kind::Exposure, Severity::Critical, "b.csv"),
            event(ours, Kind::Data, Severity::Low, "c.csv"),
        ],
    )
    .await
    .unwrap();
    drift::record(
        &mut env.conn,
        &globex(),
        &[event(theirs, Kind::Data, Severity::High, "z.csv")],
    )
    .await
    .unwrap();

    // Newest first, the tenant's own only; each filter narrows.
    assert_eq!(
        listed(&mut env, &acme(), Filter::default()).await.len(),
        3,
        "acme sees its three, not globex's"
    );
    let data = Filter {
        kind: Some(Kind::Data),
        ..Filter::default()
    };
    let mut found = listed(&mut env, &acme(), data).await;
    found.sort();
    assert_eq!(found, ["exports/a.csv", "exports/c.csv"]);
    let critical = Filter {
        severity: Some(Severity::Critical),
        ..Filter::default()
    };
    assert_eq!(listed(&mut env, &acme(), critical).await, ["exports/b.csv"]);
    let counts = drift::open_by_severity(&mut env.conn, &acme())
        .await
        .unwrap();
    assert_eq!(counts.get(&Severity::High), Some(&1));
    assert_eq!(counts.get(&Severity::Critical), Some(&1));
    assert_eq!(counts.get(&Severity::Low), Some(&1));

    // Acknowledged once: the event stays, leaves the open counts, and is audited once.
    let page = PageRequest::first(&env.cursors, Limit::parse(None, 20).unwrap());
    let first = drift::list(&mut env.conn, &acme(), &Filter::default(), page)
        .await
        .unwrap()
        .items[0]
        .clone();
    let id = DriftEventId::from_uuid(first.event_id);
    for _ in 0..2 {
        let acked = drift::acknowledge(&mut env.conn, &acme(), &admin(), id, Some("seen"))
            .await
            .unwrap();
        assert_eq!(acked.status, "acknowledged");
        assert_eq!(acked.note.as_deref(), Some("seen"));
    }
    assert_eq!(
        env.audit_kinds(&acme()).await,
        ["drift_acknowledged"],
        "acknowledging again changes nothing"
    );
    let open: i64 = drift::open_by_severity(&mut env.conn, &acme())
        .await
        .unwrap()
        .values()
        .sum();
    assert_eq!(open, 2);

    // Another tenant cannot acknowledge it, nor learn that it exists.
    let refused = drift::acknowledge(&mut env.conn, &globex(), &admin(), id, None).await;
    assert!(matches!(refused, Err(DriftError::NotFound)), "{refused:?}");
    // A note past the limit is refused.
    let long = "n".repeat(drift::MAX_NOTE_CHARS + 1);
    let refused = drift::acknowledge(&mut env.conn, &acme(), &admin(), id, Some(&long)).await;
    assert!(
        matches!(refused, Err(DriftError::InvalidNote)),
        "{refused:?}"
    );
}

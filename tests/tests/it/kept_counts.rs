//! The counts that statement triggers keep for the console and the connectors list
//! (`findings_open_counts`, `governance_drift_counts`, `governance_bucket_scores`) equal what
//! they count after every kind of write: inserts, upserts, updates that move a row in or out of
//! what is counted, updates that move nothing, and deletes, from two sessions (two shards).

use std::collections::BTreeMap;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};

#[derive(QueryableByName)]
struct Keyed {
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn keyed(conn: &mut AsyncPgConnection, query: &str) -> BTreeMap<String, i64> {
    let rows: Vec<Keyed> = diesel::sql_query(query).load(conn).await.unwrap();
    rows.into_iter().map(|r| (r.key, r.n)).collect()
}

async fn run(conn: &mut AsyncPgConnection, statement: &str) -> usize {
    diesel::sql_query(statement).execute(conn).await.unwrap()
}

/// Two sessions on a freshly migrated database: each writes to its own shard of the counts.
async fn sessions() -> (testkit::TestDatabase, AsyncPgConnection, AsyncPgConnection) {
    let db = testkit::database().await;
    let a = AsyncPgConnection::establish(&db.url).await.unwrap();
    let b = AsyncPgConnection::establish(&db.url).await.unwrap();
    (db, a, b)
}

const OPEN_FINDINGS_KEPT: &str = "SELECT key, n FROM (
    SELECT concat_ws(' ', connector_id, bucket, pii_type, category, 'rows') AS key,
           sum(findings)::bigint AS n
      FROM findings_open_counts WHERE tenant_id = 'acme' GROUP BY 1
    UNION ALL
    SELECT concat_ws(' ', connector_id, bucket, pii_type, category, 'values'),
           sum(occurrences)::bigint
      FROM findings_open_counts WHERE tenant_id = 'acme' GROUP BY 1) k WHERE n <> 0";
const OPEN_FINDINGS: &str = "SELECT key, n FROM (
    SELECT concat_ws(' ', connector_id, bucket, pii_type, category, 'rows') AS key,
           count(*)::bigint AS n
      FROM findings WHERE tenant_id = 'acme' AND status = 'open' GROUP BY 1
    UNION ALL
    SELECT concat_ws(' ', connector_id, bucket, pii_type, category, 'values'),
           sum(occurrences)::bigint
      FROM findings WHERE tenant_id = 'acme' AND status = 'open' GROUP BY 1) k";

#[tokio::test]
async fn open_findings_counts_follow_every_write_to_the_findings() {
    let (_db, mut a, mut b) = sessions().await;
    // Two connectors, five types, occurrences 1 to 7, a third of them resolved already.
    let insert = |from: i64, to: i64| {
        format!(
            "INSERT INTO findings
                 (tenant_id, finding_id, scan_id, connector_id, bucket, object_key, pii_type,
                  category, confidence, locations, preview, field, status, occurrences)
             SELECT 'acme', gen_random_uuid(), '00000000-0000-0000-0000-0000000000a1',
                    (ARRAY['00000000-0000-0000-0000-0000000000c1',
                           '00000000-0000-0000-0000-0000000000c2'])[g % 2 + 1]::uuid,
                    'b' || (g / 7 % 3), 'k' || (g / 10), (ARRAY['us_ssn','email','phone','dob','monetary'])[g % 5 + 1],
                    (ARRAY['government_id','contact','contact','personal','financial'])[g % 5 + 1],
                    0.9, '[]'::jsonb, '***', 'c', CASE WHEN g % 3 = 0 THEN 'resolved' ELSE 'open' END,
                    g % 7 + 1
               FROM generate_series({from}, {to}) g"
        )
    };
    run(&mut a, &insert(0, 299)).await;
    run(&mut b, &insert(300, 599)).await;
    let counted = keyed(&mut a, OPEN_FINDINGS).await;
    assert!(counted.len() > 40, "{counted:?}");
    assert_eq!(keyed(&mut a, OPEN_FINDINGS_KEPT).await, counted);

    // Resolved in one session, reopened in the other, an update that moves nothing, a change
    // of occurrences and of category, and deletes.
    let steps = [
        "UPDATE findings SET status = 'resolved', resolved_at = now()
          WHERE object_key IN ('k1', 'k2', 'k3') AND status = 'open'",
        "UPDATE findings SET status = 'open', resolved_at = NULL
          WHERE object_key = 'k2' AND pii_type = 'email'",
        "UPDATE findings SET tokenized = true WHERE object_key = 'k4'",
        "UPDATE findings SET occurrences = occurrences + 10 WHERE object_key = 'k5'",
        "UPDATE findings SET category = 'personal' WHERE object_key = 'k6' AND category = 'contact'",
        "DELETE FROM findings WHERE object_key IN ('k7', 'k8')",
        "DELETE FROM findings WHERE status = 'open' AND pii_type = 'dob'",
    ];
    for (i, step) in steps.iter().enumerate() {
        let conn = if i % 2 == 0 { &mut a } else { &mut b };
        assert!(run(conn, step).await > 0, "{step} changed nothing");
        assert_eq!(
            keyed(&mut a, OPEN_FINDINGS_KEPT).await,
            keyed(&mut a, OPEN_FINDINGS).await,
            "after {step}"
        );
    }
    // A transaction that rolls back leaves the counts as they were.
    let before = keyed(&mut a, OPEN_FINDINGS_KEPT).await;
    let rolled_back = a
        .transaction(async |conn| {
            run(conn, "DELETE FROM findings WHERE tenant_id = 'acme'").await;
            Err::<(), _>(diesel::result::Error::RollbackTransaction)
        })
        .await;
    assert!(rolled_back.is_err());
    assert_eq!(keyed(&mut a, OPEN_FINDINGS_KEPT).await, before);
    // Every finding gone: nothing is left to count.
    run(&mut b, "DELETE FROM findings WHERE tenant_id = 'acme'").await;
    assert!(keyed(&mut a, OPEN_FINDINGS_KEPT).await.is_empty());
}

const DRIFT_KEPT: &str = "SELECT day || ' ' || severity || ' ' || what AS key, n FROM (
    SELECT day, severity, 'events' AS what, sum(events)::bigint AS n
      FROM governance_drift_counts WHERE tenant_id = 'acme' GROUP BY 1, 2
    UNION ALL
    SELECT day, severity, 'open', sum(open)::bigint
      FROM governance_drift_counts WHERE tenant_id = 'acme' GROUP BY 1, 2) k WHERE n <> 0";
const DRIFT: &str = "SELECT day || ' ' || severity || ' ' || what AS key, n FROM (
    SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day, severity, 'events' AS what,
           count(*)::bigint AS n
      FROM governance_drift_events WHERE tenant_id = 'acme' GROUP BY 1, 2
    UNION ALL
    SELECT (occurred_at AT TIME ZONE 'UTC')::date, severity, 'open', count(*)::bigint
      FROM governance_drift_events WHERE tenant_id = 'acme' AND status = 'open'
     GROUP BY 1, 2) k WHERE n <> 0";

#[tokio::test]
async fn drift_counts_follow_every_write_to_the_drift_events() {
    let (_db, mut a, mut b) = sessions().await;
    // Events over five UTC days, around midnight UTC in a session on another time zone.
    run(&mut b, "SET TIME ZONE 'America/Los_Angeles'").await;
    let insert = |from: i64, to: i64| {
        format!(
            "INSERT INTO governance_drift_events
                 (tenant_id, event_id, kind, severity, occurred_at, connector_id, resource,
                  description, previous_state, current_state, policies_triggered,
                  remediation_status)
             SELECT 'acme', gen_random_uuid(), 'data_drift',
                    (ARRAY['critical','high','medium','low'])[g % 4 + 1],
                    timestamptz '2026-11-26 23:30:00+00' + (g % 5) * interval '1 day'
                        + (g % 3) * interval '20 minutes',
                    '00000000-0000-0000-0000-0000000000c1', 'b/k' || g, 'new sensitive data',
                    '{{}}', '{{}}', '{{}}', 'none'
               FROM generate_series({from}, {to}) g"
        )
    };
    run(&mut a, &insert(0, 99)).await;
    run(&mut b, &insert(100, 199)).await;
    let counted = keyed(&mut a, DRIFT).await;
    assert!(counted.len() > 30, "{counted:?}");
    assert_eq!(keyed(&mut a, DRIFT_KEPT).await, counted);
    let steps = [
        "UPDATE governance_drift_events SET status = 'acknowledged', acknowledged_at = now(),
                acknowledged_by = 'ann' WHERE severity IN ('critical', 'low')",
        "UPDATE governance_drift_events SET note = 'seen' WHERE severity = 'high'",
        "UPDATE governance_drift_events SET severity = 'high'
          WHERE severity = 'medium' AND resource LIKE 'b/k1%'",
        "DELETE FROM governance_drift_events WHERE resource LIKE 'b/k5%'",
    ];
    for (i, step) in steps.iter().enumerate() {
        let conn = if i % 2 == 0 { &mut a } else { &mut b };
        assert!(run(conn, step).await > 0, "{step} changed nothing");
        assert_eq!(
            keyed(&mut a, DRIFT_KEPT).await,
            keyed(&mut a, DRIFT).await,
            "after {step}"
        );
    }
    // What posture reads for the governance summary and the overview is the same.
    let tenant: ids::TenantId = "acme".parse().unwrap();
    let open: BTreeMap<String, i64> = posture::drift::open_by_severity(&mut b, &tenant)
        .await
        .unwrap()
        .into_iter()
        .map(|(s, n)| (s.as_str().to_owned(), n))
        .collect();
    let direct = keyed(
        &mut a,
        "SELECT severity AS key, count(*)::bigint AS n FROM governance_drift_events
          WHERE tenant_id = 'acme' AND status = 'open' GROUP BY 1",
    )
    .await;
    assert_eq!(open, direct);
    assert!(!open.contains_key("critical"), "{open:?}");
}

const BUCKETS_KEPT: &str = "SELECT bucket || ' ' || risk_score || ' ' || what AS key, n FROM (
    SELECT bucket, risk_score, 'objects' AS what, sum(objects)::bigint AS n
      FROM governance_bucket_scores WHERE tenant_id = 'acme' GROUP BY 1, 2
    UNION ALL
    SELECT bucket, risk_score, 'findings', sum(findings)::bigint
      FROM governance_bucket_scores WHERE tenant_id = 'acme' GROUP BY 1, 2) k WHERE n <> 0";
const BUCKETS: &str = "SELECT bucket || ' ' || risk_score || ' ' || what AS key, n FROM (
    SELECT bucket, risk_score, 'objects' AS what, count(*)::bigint AS n
      FROM governance_objects WHERE tenant_id = 'acme' AND findings_count > 0 GROUP BY 1, 2
    UNION ALL
    SELECT bucket, risk_score, 'findings', sum(findings_count)::bigint
      FROM governance_objects WHERE tenant_id = 'acme' AND findings_count > 0
     GROUP BY 1, 2) k WHERE n <> 0";

#[tokio::test]
async fn bucket_scores_follow_every_write_to_the_objects() {
    let (_db, mut a, mut b) = sessions().await;
    // The recorder's shape: an upsert by the primary key, some objects without findings.
    let upsert = |from: i64, to: i64, bump: i64| {
        format!(
            "INSERT INTO governance_objects
                 (tenant_id, connector_id, bucket, object_key, object_id, etag, findings_count,
                  covered_count, sensitivity, volume, exposure, coverage, risk_score, computed_at)
             SELECT 'acme', '00000000-0000-0000-0000-0000000000c1', 'b' || (g % 3), 'k' || g,
                    md5(g::text)::uuid, 'e', (g + {bump}) % 4, 0, 0.5, 0.5, 0.5, 0,
                    ((g * 7 + {bump}) % 5 * 20)::smallint, now()
               FROM generate_series({from}, {to}) g
             ON CONFLICT (tenant_id, connector_id, bucket, object_key) DO UPDATE SET
                 findings_count = EXCLUDED.findings_count, risk_score = EXCLUDED.risk_score"
        )
    };
    run(&mut a, &upsert(0, 199, 0)).await;
    let counted = keyed(&mut a, BUCKETS).await;
    assert!(counted.len() > 10, "{counted:?}");
    assert_eq!(keyed(&mut a, BUCKETS_KEPT).await, counted);
    // Upserts that rescore half the objects and add new ones, from the other session.
    run(&mut b, &upsert(100, 299, 1)).await;
    assert_eq!(
        keyed(&mut a, BUCKETS_KEPT).await,
        keyed(&mut a, BUCKETS).await
    );
    let steps = [
        "UPDATE governance_objects SET findings_count = 0, risk_score = 0 WHERE bucket = 'b0'",
        "UPDATE governance_objects SET computed_at = now() WHERE bucket = 'b1'",
        "DELETE FROM governance_objects WHERE bucket = 'b2' AND object_key LIKE 'k1%'",
    ];
    for (i, step) in steps.iter().enumerate() {
        let conn = if i % 2 == 0 { &mut a } else { &mut b };
        assert!(run(conn, step).await > 0, "{step} changed nothing");
        assert_eq!(
            keyed(&mut a, BUCKETS_KEPT).await,
            keyed(&mut a, BUCKETS).await,
            "after {step}"
        );
    }
}

/// The rows of a backend that has ended are folded into shard 0; the live backend's stay its
/// own, and the counts do not move.
#[tokio::test]
async fn open_findings_counts_of_ended_backends_fold_into_one_row_per_key() {
    let (_db, mut a, mut b) = sessions().await;
    for conn in [&mut a, &mut b] {
        run(
            conn,
            "INSERT INTO findings
                 (tenant_id, finding_id, scan_id, connector_id, bucket, object_key, pii_type,
                  category, confidence, locations, preview, field, status, occurrences)
             SELECT 'acme', gen_random_uuid(), '00000000-0000-0000-0000-0000000000a1',
                    '00000000-0000-0000-0000-0000000000c1', 'b', 'k' || g, 'email', 'contact',
                    0.9, '[]'::jsonb, '***', 'c', 'open', 2
               FROM generate_series(1, 10) g",
        )
        .await;
    }
    let before = keyed(&mut a, OPEN_FINDINGS_KEPT).await;
    assert_eq!(before.values().copied().collect::<Vec<_>>(), vec![20, 40]);
    let shards = "SELECT shard::text AS key, count(*)::bigint AS n FROM findings_open_counts
                   GROUP BY 1";
    assert_eq!(keyed(&mut a, shards).await.len(), 2);
    // b ends; a folds what b wrote.
    drop(b);
    let mut folded = 0;
    for _ in 0..100 {
        folded = scans::open_counts::fold(&mut a).await.unwrap();
        if folded > 0 {
            break;
        }
        // The ended backend leaves pg_stat_activity a moment after its connection closes.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(folded, 1);
    let shards = keyed(&mut a, shards).await;
    assert!(shards.contains_key("0"), "{shards:?}");
    assert_eq!(shards.len(), 2, "{shards:?}");
    assert_eq!(keyed(&mut a, OPEN_FINDINGS_KEPT).await, before);
    // Nothing more to fold while a lives.
    assert_eq!(scans::open_counts::fold(&mut a).await.unwrap(), 0);
    assert_eq!(keyed(&mut a, OPEN_FINDINGS).await, before);
}

use diesel::QueryableByName;
use diesel::sql_types::{Bool, Text};
use diesel_async::{
    AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _,
};

#[tokio::test]
async fn migrations_apply_once_and_a_second_run_finds_nothing() {
    let db = testkit::empty_database().await;
    let first = db::migrate(&db.url).await.unwrap();
    assert!(!first.is_empty());
    let second = db::migrate(&db.url).await.unwrap();
    assert!(second.is_empty(), "{second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_migration_runs_apply_each_migration_exactly_once() {
    let db = testkit::empty_database().await;
    let runs = (0..4).map(|_| {
        let url = db.url.clone();
        tokio::spawn(async move { db::migrate(&url).await })
    });
    let mut applied = Vec::new();
    for run in runs {
        applied.extend(run.await.unwrap().unwrap());
    }
    let unique: std::collections::BTreeSet<_> = applied.iter().collect();
    assert_eq!(
        unique.len(),
        applied.len(),
        "a migration ran twice: {applied:?}"
    );
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let rows: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "(SELECT count(*) FROM __diesel_schema_migrations)",
    ))
    .get_result(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows as usize, applied.len());
}

#[tokio::test]
async fn schema_rs_matches_the_migrations() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let generated = db::print_schema(&mut conn).await.unwrap();
    let committed = include_str!("../../../crates/db/src/schema.rs");
    assert!(
        generated == committed,
        "crates/db/src/schema.rs is stale; regenerate it with \
         `cargo run -p dpsctl -- print-schema > crates/db/src/schema.rs`.\n--- generated ---\n{generated}"
    );
}

/// Tables that belong to no tenant. Adding one here is a design decision: say why beside it.
const GLOBAL_TABLES: &[&str] = &[
    // A consumer's position in the scans outbox, which is read in commit order across every
    // tenant at once: one row per consumer, owned by no tenant.
    "governance_consumers",
];

#[derive(QueryableByName)]
struct TableFacts {
    #[diesel(sql_type = Text)]
    table_name: String,
    #[diesel(sql_type = Bool)]
    has_tenant_id: bool,
    #[diesel(sql_type = Bool)]
    has_tenant_leading_index: bool,
}

#[tokio::test]
async fn every_tenant_table_has_tenant_id_and_an_index_led_by_it() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let facts: Vec<TableFacts> = diesel::sql_query(
        "SELECT c.relname::text AS table_name,
                EXISTS (SELECT 1 FROM pg_attribute a
                        WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
                    AS has_tenant_id,
                EXISTS (SELECT 1 FROM pg_index i
                        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
                        WHERE i.indrelid = c.oid AND a.attname = 'tenant_id')
                    AS has_tenant_leading_index
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname NOT LIKE '\\_\\_diesel%'",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert!(!facts.is_empty());
    for table in facts
        .iter()
        .filter(|t| !GLOBAL_TABLES.contains(&t.table_name.as_str()))
    {
        assert!(
            table.has_tenant_id,
            "{} has no tenant_id column",
            table.table_name
        );
        assert!(
            table.has_tenant_leading_index,
            "{} has no index led by tenant_id",
            table.table_name
        );
    }
}

#[derive(QueryableByName, Debug, PartialEq)]
struct GroupedRow {
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    finding_id: uuid::Uuid,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    occurrences: i32,
    #[diesel(sql_type = diesel::sql_types::Float4)]
    confidence: f32,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    samples: i32,
    #[diesel(sql_type = Text)]
    first: String,
}

/// Findings stored one per value before the findings unit changed become one per object
/// version, type and field: the oldest row survives with the count, the highest confidence and
/// the first 15 locations, and whatever named a folded row names its survivor.
#[tokio::test]
async fn per_value_findings_fold_into_groups_and_their_references_follow() {
    let db = testkit::empty_database().await;
    db::migrate(&db.url).await.unwrap();
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    // Back to the per-value shape, with the grouping migration pending again (and the
    // severity and open findings counts, whose triggers read the grouped shape's occurrences,
    // with it).
    for (down, version) in [
        (
            include_str!("../../../migrations/2026-11-30-000054_open_findings_counts/down.sql"),
            "20261130000054",
        ),
        (
            include_str!("../../../migrations/2026-11-30-000051_severity_counts/down.sql"),
            "20261130000051",
        ),
        (
            include_str!("../../../migrations/2026-11-29-000049_findings_grouped/down.sql"),
            "20261129000049",
        ),
    ] {
        conn.batch_execute(down).await.unwrap();
        diesel::sql_query(format!(
            "DELETE FROM __diesel_schema_migrations WHERE version = '{version}'"
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    }
    // Object a.csv, one scan: three SSNs in column `ssn` (ids in age order), two emails, and
    // twenty values of a header-less third column; b.json: two SSNs in one array's elements,
    // and one resolved SSN beside an open one in c.txt.
    conn.batch_execute(
        "CREATE TEMPORARY TABLE v (key text, id uuid, age int, pii text, conf real, loc jsonb,
                                   status text);
         INSERT INTO v VALUES
           ('ssn', '00000000-0000-0000-0000-00000000000a', 1, 'us_ssn', 0.8,
            '{\"row\": 1, \"column\": 2, \"header\": \"ssn\"}', 'open'),
           ('ssn', '00000000-0000-0000-0000-000000000002', 2, 'us_ssn', 0.95,
            '{\"row\": 2, \"column\": 2, \"header\": \"ssn\"}', 'open'),
           ('ssn', '00000000-0000-0000-0000-000000000003', 3, 'us_ssn', 0.9,
            '{\"row\": 3, \"column\": 2, \"header\": \"ssn\"}', 'open'),
           ('email', '00000000-0000-0000-0000-000000000004', 1, 'email', 0.9,
            '{\"row\": 1, \"column\": 3, \"header\": \"email\"}', 'open'),
           ('email', '00000000-0000-0000-0000-000000000005', 2, 'email', 0.9,
            '{\"row\": 2, \"column\": 3, \"header\": \"email\"}', 'open'),
           ('json', '00000000-0000-0000-0000-000000000006', 1, 'us_ssn', 0.9,
            '{\"line\": 1, \"path\": \"$.c[0].ssn\"}', 'open'),
           ('json', '00000000-0000-0000-0000-000000000007', 2, 'us_ssn', 0.9,
            '{\"line\": 1, \"path\": \"$.c[1].ssn\"}', 'open'),
           ('text-open', '00000000-0000-0000-0000-000000000008', 1, 'us_ssn', 0.9,
            '{\"line\": 4, \"column\": 1}', 'open'),
           ('text-resolved', '00000000-0000-0000-0000-000000000009', 2, 'us_ssn', 0.9,
            '{\"line\": 5, \"column\": 1}', 'resolved');
         INSERT INTO v SELECT 'phone', ('00000000-0000-0000-0001-' || lpad(g::text, 12, '0'))::uuid,
                g, 'phone', 0.7, jsonb_build_object('row', g, 'column', 4, 'header', null), 'open'
           FROM generate_series(1, 20) g;
         INSERT INTO findings (tenant_id, finding_id, scan_id, connector_id, bucket, object_key,
                               pii_type, category, confidence, location, preview, fingerprint,
                               status, created_at)
         SELECT 'acme', id, '00000000-0000-0000-0000-0000000000aa',
                '00000000-0000-0000-0000-0000000000bb', 'hr',
                CASE WHEN key = 'json' THEN 'b.json' WHEN key LIKE 'text%' THEN 'c.txt'
                     ELSE 'a.csv' END,
                pii, 'x', conf, loc, '***', '\\x00', status,
                '2026-11-01'::timestamptz + age * interval '1 second'
           FROM v;
         INSERT INTO governance_actions (tenant_id, action_id, policy_id, policy_version,
                action_type, connector_id, bucket, object_key, etag, simulated, outcome,
                finding_ids, created_at, updated_at)
         VALUES ('acme', gen_random_uuid(), gen_random_uuid(), 1, 'tokenize',
                 '00000000-0000-0000-0000-0000000000bb', 'hr', 'a.csv', 'e', false, 'queued',
                 ARRAY['00000000-0000-0000-0000-000000000003',
                       '00000000-0000-0000-0000-000000000002',
                       '00000000-0000-0000-0000-000000000005']::uuid[], now(), now());
         INSERT INTO remediation_requests (tenant_id, request_id, action_id, policy_id,
                policy_version, action_type, connector_id, bucket, object_key, etag,
                finding_ids, gate, created_at, updated_at, next_attempt_at)
         VALUES ('acme', gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 1, 'tokenize',
                 '00000000-0000-0000-0000-0000000000bb', 'hr', 'a.csv', 'e',
                 ARRAY['00000000-0000-0000-0000-000000000003']::uuid[], 'allowed', now(), now(),
                 now());
         INSERT INTO governance_finding_risk (tenant_id, finding_id, connector_id, bucket,
                object_key, category, sensitivity, exposure, covered, risk_score, computed_at)
         SELECT 'acme', id, '00000000-0000-0000-0000-0000000000bb', 'hr', 'a.csv', 'x', 0.5,
                0.6, false, 30, now()
           FROM v WHERE key IN ('ssn', 'email');",
    )
    .await
    .unwrap();

    let applied = db::migrate(&db.url).await.unwrap();
    assert_eq!(applied.len(), 3, "{applied:?}");
    assert!(applied[0].contains("000049"), "{applied:?}");
    assert!(applied[1].contains("000051"), "{applied:?}");
    assert!(applied[2].contains("000054"), "{applied:?}");
    // The open findings counts start from the grouped findings: rows and values per type.
    #[derive(QueryableByName, Debug, PartialEq)]
    struct Counted {
        #[diesel(sql_type = Text)]
        key: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        findings: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        values: i64,
    }
    let count = |query: &'static str| diesel::sql_query(query);
    let kept: Vec<Counted> = count(
        "SELECT bucket || ' ' || pii_type AS key, sum(findings)::bigint AS findings,
                sum(occurrences)::bigint AS values
           FROM findings_open_counts GROUP BY 1 ORDER BY 1",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let grouped: Vec<Counted> = count(
        "SELECT bucket || ' ' || pii_type AS key, count(*)::bigint AS findings,
                sum(occurrences)::bigint AS values
           FROM findings WHERE status = 'open' GROUP BY 1 ORDER BY 1",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert!(!kept.is_empty());
    assert_eq!(kept, grouped);

    let rows: Vec<GroupedRow> = diesel::sql_query(
        "SELECT f.object_key || ' ' || f.pii_type || ' ' || f.field || ' ' || f.status AS key,
                f.finding_id, f.occurrences, f.confidence,
                jsonb_array_length(f.locations) AS samples, (f.locations->0)::text AS first
           FROM findings f ORDER BY key",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let id = |tail: &str| {
        format!("00000000-0000-0000-0000-{tail:0>12}")
            .parse()
            .unwrap()
    };
    let summary: Vec<(&str, uuid::Uuid, i32, f32, i32)> = rows
        .iter()
        .map(|r| {
            (
                r.key.as_str(),
                r.finding_id,
                r.occurrences,
                r.confidence,
                r.samples,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a.csv email email open", id("4"), 2, 0.9, 2),
            (
                "a.csv phone #4 open",
                "00000000-0000-0000-0001-000000000001".parse().unwrap(),
                20,
                0.7,
                15
            ),
            ("a.csv us_ssn ssn open", id("a"), 3, 0.95, 3),
            ("b.json us_ssn $.c[*].ssn open", id("6"), 2, 0.9, 2),
            ("c.txt us_ssn  open", id("8"), 1, 0.9, 1),
            ("c.txt us_ssn  resolved", id("9"), 1, 0.9, 1),
        ]
    );
    // The survivor's own location first, then the folded ones' in age order.
    assert_eq!(rows[2].first, r#"{"row": 1, "column": 2, "header": "ssn"}"#);

    #[derive(QueryableByName)]
    struct Ids {
        #[diesel(sql_type = diesel::sql_types::Array<diesel::sql_types::Uuid>)]
        ids: Vec<uuid::Uuid>,
    }
    let action: Ids = diesel::sql_query("SELECT finding_ids AS ids FROM governance_actions")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(action.ids, [id("4"), id("a")]);
    let request: Ids = diesel::sql_query("SELECT finding_ids AS ids FROM remediation_requests")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(request.ids, [id("a")]);

    #[derive(QueryableByName, Debug, PartialEq)]
    struct Risk {
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        finding_id: uuid::Uuid,
        #[diesel(sql_type = diesel::sql_types::Integer)]
        occurrences: i32,
    }
    let risk: Vec<Risk> = diesel::sql_query(
        "SELECT finding_id, occurrences FROM governance_finding_risk ORDER BY finding_id",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        risk,
        [
            Risk {
                finding_id: id("4"),
                occurrences: 2
            },
            Risk {
                finding_id: id("a"),
                occurrences: 3
            },
        ]
    );
}

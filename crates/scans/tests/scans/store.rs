//! Creating scans (every bad field named, connectors checked) and listing them.

use ids::{ConnectorId, ScanId};
use scans::store::{self, Filter, NewScan, Origin};
use scans::{Kind, ScanError, Status, Tier};
use serde_json::{Value, json};

use crate::common::{TOKEN_KEY, World, count, tenant};

fn request<'a>(
    connectors: &'a [String],
    kind: Option<&'a str>,
    options: Option<&'a Value>,
) -> NewScan<'a> {
    NewScan {
        connectors,
        kind,
        options,
        tier: Tier::standard(),
        origin: Origin::Parallel,
    }
}

fn invalid_fields(result: Result<store::Created, ScanError>) -> Vec<String> {
    match result {
        Err(ScanError::Invalid(fields)) => fields.into_iter().map(|f| f.field).collect(),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn limit(n: i64) -> paging::Limit {
    paging::Limit::parse(Some(n), 20).unwrap()
}

#[tokio::test]
async fn create_names_every_bad_field_at_once_and_creates_nothing() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let hr = w.connector(&acme, "HR", "hr-exports").await.to_string();
    let one = [hr.clone()];

    // Everything wrong at once: each field is named, in order.
    let options = json!({ "turbo": 1, "max_workers": 1000, "llm_assist": true });
    let all = store::create(
        &mut w.conn,
        &acme,
        &TOKEN_KEY,
        &request(&[], Some("sometimes"), Some(&options)),
    )
    .await;
    assert_eq!(
        invalid_fields(all),
        [
            "type",
            "connectors",
            "options.turbo",
            "options.max_workers",
            "options.llm_assist"
        ]
    );

    let too_many: Vec<String> = (0..51).map(|_| hr.clone()).collect();
    let not_object = json!(["max_workers"]);
    let cases: Vec<(NewScan<'_>, &str)> = vec![
        (request(&one, None, None), "type"),
        (request(&one, Some("Full"), None), "type"),
        (request(&too_many, Some("full"), None), "connectors"),
        (request(&one, Some("full"), Some(&not_object)), "options"),
    ];
    for (new, field) in cases {
        let fields = invalid_fields(store::create(&mut w.conn, &acme, &TOKEN_KEY, &new).await);
        assert_eq!(fields, [field], "{new:?}");
    }
    let bad_options = [
        (json!({ "max_files": 0 }), "options.max_files"),
        (json!({ "max_files": 100_001 }), "options.max_files"),
        (json!({ "max_workers": 5 }), "options.max_workers"),
        (
            json!({ "timeout_minutes": 1441 }),
            "options.timeout_minutes",
        ),
        (json!({ "coverage_target": 1.5 }), "options.coverage_target"),
        (
            json!({ "coverage_strategy": "lax" }),
            "options.coverage_strategy",
        ),
        (json!({ "file_types": ["../exe"] }), "options.file_types"),
        (json!({ "prefixes": [""] }), "options.prefixes"),
        (
            json!({ "max_object_bytes": -1 }),
            "options.max_object_bytes",
        ),
    ];
    for (options, field) in &bad_options {
        let new = request(&one, Some("full"), Some(options));
        let fields = invalid_fields(store::create(&mut w.conn, &acme, &TOKEN_KEY, &new).await);
        assert_eq!(fields, [*field], "{options}");
    }
    // A smaller tier has lower ceilings.
    let two_workers = json!({ "max_workers": 3 });
    let starter = NewScan {
        tier: Tier::named("starter").unwrap(),
        ..request(&one, Some("full"), Some(&two_workers))
    };
    assert_eq!(
        invalid_fields(store::create(&mut w.conn, &acme, &TOKEN_KEY, &starter).await),
        ["options.max_workers"]
    );
    // A bad request is refused before its connectors are looked up.
    let unknown = [ConnectorId::new().to_string()];
    assert_eq!(
        invalid_fields(
            store::create(
                &mut w.conn,
                &acme,
                &TOKEN_KEY,
                &request(&unknown, Some("weekly"), None)
            )
            .await
        ),
        ["type"]
    );

    assert_eq!(
        count(&mut w.conn, "SELECT count(*) AS n FROM scans").await,
        0
    );
}

/// A scan of one connector names exactly one; a parallel scan at least one.
#[tokio::test]
async fn a_scan_of_no_connector_is_refused_whatever_its_origin() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let none = NewScan {
        origin: Origin::Connector,
        ..request(&[], Some("full"), None)
    };
    let result = store::create(&mut w.conn, &acme, &TOKEN_KEY, &none).await;
    assert_eq!(invalid_fields(result), ["connectors"]);
}

#[tokio::test]
async fn create_refuses_connectors_that_are_not_the_tenants() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let globex = tenant("globex");
    let hr = w.connector(&acme, "HR", "hr-exports").await.to_string();
    let theirs = w
        .connector(&globex, "Theirs", "their-bucket")
        .await
        .to_string();
    let missing = ConnectorId::new().to_string();

    for (connectors, named) in [
        (vec![hr.clone(), missing.clone()], missing.clone()),
        (vec![theirs.clone()], theirs.clone()),
        (vec![hr.clone(), "not-a-uuid".into()], "not-a-uuid".into()),
    ] {
        let result = store::create(
            &mut w.conn,
            &acme,
            &TOKEN_KEY,
            &request(&connectors, Some("full"), None),
        )
        .await;
        match result {
            Err(ScanError::ConnectorNotFound(id)) => assert_eq!(id, named),
            other => panic!("{connectors:?}: expected ConnectorNotFound, got {other:?}"),
        }
    }
    assert_eq!(
        count(&mut w.conn, "SELECT count(*) AS n FROM scans").await,
        0
    );
    assert_eq!(
        count(&mut w.conn, "SELECT count(*) AS n FROM scan_connectors").await,
        0
    );
}

#[tokio::test]
async fn a_created_scan_is_queued_with_its_connectors_in_order_and_the_defaults_filled_in() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let a = w.connector(&acme, "A", "bucket-a").await;
    let b = w.connector(&acme, "B", "bucket-b").await;
    let ids = [b.to_string(), a.to_string(), b.to_string()];
    let created = store::create(
        &mut w.conn,
        &acme,
        &TOKEN_KEY,
        &request(&ids, Some("incremental"), None),
    )
    .await
    .unwrap();
    assert_eq!(created.status, Status::Queued);
    assert_eq!(created.kind, Kind::Incremental);
    assert_eq!(created.connectors, [b, a]);
    assert_eq!(created.workers_requested, 4);

    let scan = store::get(&mut w.conn, &acme, created.id).await.unwrap();
    assert_eq!(scan.id, created.id);
    assert_eq!(scan.status, Status::Queued);
    assert_eq!(scan.kind, Kind::Incremental);
    assert!(scan.parallel);
    assert_eq!(scan.connectors, [b, a]);
    assert_eq!(scan.created_at, created.created_at);
    assert_eq!((scan.started_at, scan.completed_at), (None, None));
    assert_eq!(scan.enumeration, scans::Enumeration::InProgress);
    assert_eq!(scan.counts, scans::Counts::default());
    assert_eq!(scan.workers.total, 0);
    let options = &scan.options;
    assert_eq!((options.max_files, options.max_workers), (100_000, 4));
    assert_eq!(options.timeout_minutes, 120);
    assert!((options.coverage_target - 0.95).abs() < 1e-9);
    assert_eq!(options.coverage_strategy, scans::Strategy::BestEffort);
    assert!(options.file_types.is_empty() && options.prefixes.is_empty());

    // Given options are kept, normalised.
    let given = json!({
        "max_workers": 2, "file_types": [".CSV", "txt", "csv"], "prefixes": ["hr/"],
        "coverage_strategy": "strict", "coverage_target": 0.5, "timeout_minutes": 5,
    });
    let one = [a.to_string()];
    let created = store::create(
        &mut w.conn,
        &acme,
        &TOKEN_KEY,
        &NewScan {
            origin: Origin::Connector,
            ..request(&one, Some("full"), Some(&given))
        },
    )
    .await
    .unwrap();
    assert_eq!(created.workers_requested, 2);
    let scan = store::get(&mut w.conn, &acme, created.id).await.unwrap();
    assert!(!scan.parallel);
    assert_eq!(scan.options.file_types, ["csv", "txt"]);
    assert_eq!(scan.options.prefixes, ["hr/"]);
    assert_eq!(scan.options.coverage_strategy, scans::Strategy::Strict);
    assert_eq!(scan.options.timeout_minutes, 5);

    // The worker token is derived, never stored: only its hash is.
    let token = store::worker_token(&TOKEN_KEY, &acme, created.id);
    assert!(token.starts_with("dpsw_"));
    assert_ne!(token, store::worker_token(&[8; 32], &acme, created.id));
    let stored = count(
        &mut w.conn,
        &format!(
            "SELECT count(*) AS n FROM scans WHERE scan_id = '{}' AND worker_token_hash = \
             decode('{}', 'hex')",
            created.id,
            store::token_hash(&token)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
    )
    .await;
    assert_eq!(stored, 1);

    // Another tenant cannot read it.
    let globex = tenant("globex");
    let read = store::get(&mut w.conn, &globex, created.id).await;
    assert!(matches!(read, Err(ScanError::NotFound)), "{read:?}");
    let workers = store::workers(&mut w.conn, &globex, created.id).await;
    assert!(matches!(workers, Err(ScanError::NotFound)), "{workers:?}");
}

#[tokio::test]
async fn lists_page_newest_first_with_cursors_no_other_tenant_can_use() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let globex = tenant("globex");
    let a = w.connector(&acme, "A", "bucket-a").await;
    let b = w.connector(&acme, "B", "bucket-b").await;
    let mut made: Vec<ScanId> = Vec::new();
    for connectors in [&[a][..], &[a, b], &[a], &[b], &[a]] {
        made.push(w.scan(&acme, connectors, json!({})).await);
    }
    let g = w.connector(&globex, "G", "bucket-g").await;
    let theirs = w.scan(&globex, &[g], json!({})).await;

    let newest_first: Vec<ScanId> = made.iter().rev().copied().collect();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = store::list(
            &mut w.conn,
            &acme,
            &Filter::default(),
            paging::PageRequest {
                cursors: &w.cursors,
                limit: limit(2),
                cursor: cursor.as_deref(),
            },
        )
        .await
        .unwrap();
        pages += 1;
        assert_eq!(page.pagination.limit, 2);
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|s| s.id));
        assert_eq!(
            page.pagination.has_more,
            page.pagination.next_cursor.is_some()
        );
        match page.pagination.next_cursor {
            Some(next) => {
                // The cursor is acme's: globex cannot use it, even on its own list.
                let stolen = store::list(
                    &mut w.conn,
                    &globex,
                    &Filter::default(),
                    paging::PageRequest {
                        cursors: &w.cursors,
                        limit: limit(2),
                        cursor: Some(&next),
                    },
                )
                .await;
                assert!(matches!(stolen, Err(ScanError::BadCursor)), "{stolen:?}");
                cursor = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, newest_first);

    let forged = store::list(
        &mut w.conn,
        &acme,
        &Filter::default(),
        paging::PageRequest {
            cursors: &w.cursors,
            limit: limit(2),
            cursor: Some("not-a-cursor"),
        },
    )
    .await;
    assert!(matches!(forged, Err(ScanError::BadCursor)), "{forged:?}");

    // Globex sees only its own scan.
    let page = store::list(
        &mut w.conn,
        &globex,
        &Filter::default(),
        paging::PageRequest {
            cursors: &w.cursors,
            limit: limit(20),
            cursor: None,
        },
    )
    .await
    .unwrap();
    let ids: Vec<ScanId> = page.items.iter().map(|s| s.id).collect();
    assert_eq!(ids, [theirs]);
    assert!(!page.pagination.has_more);

    // Filters: by connector, by status, since a time.
    let by_b = Filter {
        connector: Some(b),
        ..Filter::default()
    };
    let page = store::list(
        &mut w.conn,
        &acme,
        &by_b,
        paging::PageRequest::first(&w.cursors, limit(20)),
    )
    .await
    .unwrap();
    let ids: Vec<ScanId> = page.items.iter().map(|s| s.id).collect();
    assert_eq!(ids, [made[3], made[1]]);
    // A connector of another tenant filters to nothing.
    let by_g = Filter {
        connector: Some(g),
        ..Filter::default()
    };
    let page = store::list(
        &mut w.conn,
        &acme,
        &by_g,
        paging::PageRequest::first(&w.cursors, limit(20)),
    )
    .await
    .unwrap();
    assert!(page.items.is_empty());

    scans::lifecycle::cancel(&mut w.conn, &acme, made[2])
        .await
        .unwrap();
    let cancelled = Filter {
        status: Some(Status::Cancelled),
        ..Filter::default()
    };
    let page = store::list(
        &mut w.conn,
        &acme,
        &cancelled,
        paging::PageRequest::first(&w.cursors, limit(20)),
    )
    .await
    .unwrap();
    let ids: Vec<ScanId> = page.items.iter().map(|s| s.id).collect();
    assert_eq!(ids, [made[2]]);
    assert_eq!(page.items[0].status, Status::Cancelled);

    let third = store::get(&mut w.conn, &acme, made[2]).await.unwrap();
    let since = Filter {
        since: Some(third.created_at),
        ..Filter::default()
    };
    let page = store::list(
        &mut w.conn,
        &acme,
        &since,
        paging::PageRequest::first(&w.cursors, limit(20)),
    )
    .await
    .unwrap();
    let ids: Vec<ScanId> = page.items.iter().map(|s| s.id).collect();
    assert_eq!(ids, [made[4], made[3], made[2]]);
}

//! A tenant's custom classifiers, and the copy each scan keeps of them.

use scans::classifiers::{self, ClassifierInput, ClassifierStoreError};
use serde_json::json;

use crate::common::{World, tenant};

fn input(name: &str, regex: &str) -> ClassifierInput {
    ClassifierInput {
        name: name.into(),
        category: "personal".into(),
        regex: regex.into(),
        keywords: vec!["employee".into()],
        ..ClassifierInput::default()
    }
}

fn limit(n: i64) -> paging::Limit {
    paging::Limit::parse(Some(n), 20).unwrap()
}

#[tokio::test]
async fn classifiers_are_checked_kept_per_tenant_and_paged() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let globex = tenant("globex");

    let created = classifiers::create(&mut w.conn, &acme, &input("employee_id", "EMP-[0-9]{6}"))
        .await
        .unwrap();
    assert_eq!(created.spec.name, "employee_id");
    assert_eq!(created.spec.regex, "EMP-[0-9]{6}");
    assert_eq!(created.spec.keywords, ["employee"]);
    assert_eq!(created.spec.confidence, detect::DEFAULT_CONFIDENCE);
    let read = classifiers::get(&mut w.conn, &acme, created.id)
        .await
        .unwrap();
    assert_eq!(read.spec, created.spec);

    let twice = classifiers::create(&mut w.conn, &acme, &input("employee_id", "X[0-9]")).await;
    assert!(
        matches!(twice, Err(ClassifierStoreError::DuplicateName)),
        "{twice:?}"
    );
    // The same name in another tenant is another classifier.
    classifiers::create(&mut w.conn, &globex, &input("employee_id", "G[0-9]"))
        .await
        .unwrap();
    let bad = ClassifierInput {
        category: "nope".into(),
        validator: Some("crc".into()),
        ..input("broken", "B")
    };
    match classifiers::create(&mut w.conn, &acme, &bad).await {
        Err(ClassifierStoreError::Invalid(fields)) => {
            let names: Vec<&str> = fields.iter().map(|f| f.field.as_str()).collect();
            assert_eq!(names, ["category", "validator"]);
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    let theirs = classifiers::get(&mut w.conn, &globex, created.id).await;
    assert!(
        matches!(theirs, Err(ClassifierStoreError::NotFound)),
        "{theirs:?}"
    );

    let badge = classifiers::create(&mut w.conn, &acme, &input("badge", "B[0-9]{4}"))
        .await
        .unwrap();
    // Renaming onto another classifier's name is refused.
    let clash = classifiers::update(&mut w.conn, &acme, badge.id, &input("employee_id", "B")).await;
    assert!(
        matches!(clash, Err(ClassifierStoreError::DuplicateName)),
        "{clash:?}"
    );

    // Oldest first, one per page; the cursor is acme's alone.
    let first = classifiers::list(
        &mut w.conn,
        &acme,
        paging::PageRequest {
            cursors: &w.cursors,
            limit: limit(1),
            cursor: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(first.items.len(), 1);
    assert_eq!(first.items[0].id, created.id);
    let cursor = first.pagination.next_cursor.clone().unwrap();
    let second = classifiers::list(
        &mut w.conn,
        &acme,
        paging::PageRequest {
            cursors: &w.cursors,
            limit: limit(1),
            cursor: Some(&cursor),
        },
    )
    .await
    .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].id, badge.id);
    assert!(!second.pagination.has_more);
    let stolen = classifiers::list(
        &mut w.conn,
        &globex,
        paging::PageRequest {
            cursors: &w.cursors,
            limit: limit(1),
            cursor: Some(&cursor),
        },
    )
    .await;
    assert!(
        matches!(stolen, Err(ClassifierStoreError::BadCursor)),
        "{stolen:?}"
    );
    // A cursor of the classifiers list is no cursor of the scans list.
    let crossed = scans::store::list(
        &mut w.conn,
        &acme,
        &scans::store::Filter::default(),
        paging::PageRequest {
            cursors: &w.cursors,
            limit: limit(1),
            cursor: Some(&cursor),
        },
    )
    .await;
    assert!(
        matches!(crossed, Err(scans::ScanError::BadCursor)),
        "{crossed:?}"
    );

    classifiers::delete(&mut w.conn, &acme, badge.id)
        .await
        .unwrap();
    let again = classifiers::delete(&mut w.conn, &acme, badge.id).await;
    assert!(
        matches!(again, Err(ClassifierStoreError::NotFound)),
        "{again:?}"
    );
    let gone = classifiers::get(&mut w.conn, &acme, badge.id).await;
    assert!(
        matches!(gone, Err(ClassifierStoreError::NotFound)),
        "{gone:?}"
    );
}

#[tokio::test]
async fn a_scan_keeps_the_classifiers_its_tenant_had_when_it_was_created() {
    let mut w = World::new().await;
    let acme = w.acme.clone();
    let hr = w.connector(&acme, "HR", "hr-exports").await;

    let none = w.scan(&acme, &[hr], json!({})).await;
    assert!(
        classifiers::for_scan(&mut w.conn, &acme, none)
            .await
            .unwrap()
            .is_empty()
    );

    let employee = classifiers::create(&mut w.conn, &acme, &input("employee_id", "EMP-[0-9]{6}"))
        .await
        .unwrap();
    let before = w.scan(&acme, &[hr], json!({})).await;

    // Edits after the scan was created apply to the next scan only.
    let updated = classifiers::update(
        &mut w.conn,
        &acme,
        employee.id,
        &input("employee_id", "EMP-[0-9]{8}"),
    )
    .await
    .unwrap();
    assert_eq!(updated.id, employee.id);
    assert_eq!(updated.spec.regex, "EMP-[0-9]{8}");
    assert!(updated.updated_at >= employee.updated_at);
    assert_eq!(updated.created_at, employee.created_at);
    classifiers::create(&mut w.conn, &acme, &input("badge", "B[0-9]{4}"))
        .await
        .unwrap();
    let after = w.scan(&acme, &[hr], json!({})).await;
    classifiers::delete(&mut w.conn, &acme, employee.id)
        .await
        .unwrap();

    let kept = classifiers::for_scan(&mut w.conn, &acme, before)
        .await
        .unwrap();
    let kept: Vec<(&str, &str)> = kept
        .iter()
        .map(|s| (s.name.as_str(), s.regex.as_str()))
        .collect();
    assert_eq!(kept, [("employee_id", "EMP-[0-9]{6}")]);
    let later = classifiers::for_scan(&mut w.conn, &acme, after)
        .await
        .unwrap();
    let later: Vec<(&str, &str)> = later
        .iter()
        .map(|s| (s.name.as_str(), s.regex.as_str()))
        .collect();
    assert_eq!(
        later,
        [("badge", "B[0-9]{4}"), ("employee_id", "EMP-[0-9]{8}")]
    );
    // Another tenant's scan id names nothing of acme's.
    assert!(
        classifiers::for_scan(&mut w.conn, &tenant("globex"), after)
            .await
            .unwrap()
            .is_empty()
    );
}

//! Connectors over HTTP: the spec's shapes and statuses, end to end. The connectors crate's own
//! behaviour is tested in crates/connectors/tests.

use serde_json::{Value, json};

const SECRET: &str = "azure-client-secret-7f3a9c";

fn azure(name_suffix: &str) -> Value {
    json!({
        "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "client_id": "0b3f2c1e-1111-2222-3333-444455556666",
        "client_secret": SECRET,
        "storage_account": format!("acme{name_suffix}"),
        "buckets": ["exports"],
    })
}

fn aws(external_id: &str) -> Value {
    json!({
        "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
        "external_id": external_id,
        "region": "us-east-1",
        "buckets": ["hr-exports"],
    })
}

#[tokio::test]
async fn connectors_over_http_follow_the_spec() {
    use crate::Client;
    use integration_tests::{Service, TestApp};
    use reqwest::Method;

    let app = TestApp::spawn(Service::Platform).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let stranger = Client {
        app: &app,
        token: app.token("globex", "cy", &["admin"]),
    };
    let eid = admin.external_id().await;

    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "Blob exports", "provider": "azure", "config": azure("data")})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["status"], "success");
    let created = &body["data"];
    assert_eq!(created["status"], "pending_test");
    assert_eq!(created["provider"], "azure");
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(!body.to_string().contains(SECRET));

    // 400 names every field; 409 on a duplicate name; only admins create.
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "S3", "provider": "aws", "config": {"region": "mars-1", "extra": 1}})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let error = crate::area_b_error(&body, "VALIDATION_FAILED");
    let fields: Vec<&str> = error["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "config.role_arn",
            "config.external_id",
            "config.region",
            "config.extra"
        ]
    );
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "Blob exports", "provider": "aws", "config": aws(&eid)})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    crate::area_b_error(&body, "CONFLICT");
    // Any user of the tenant creates connectors (the spec's role model): the analyst's
    // request reaches the handler, which refuses the duplicate name.
    let (status, body) = analyst
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "Blob exports", "provider": "aws", "config": aws(&eid)})),
        )
        .await;
    assert_eq!(status, 409, "{body}");

    // Get shows updated_at and scan_history, never the secret; anyone in the tenant reads.
    let (status, body) = analyst
        .send(Method::GET, &format!("/connectors/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let connector = &body["data"];
    assert_eq!(connector["name"], "Blob exports");
    assert_eq!(connector["config"]["storage_account"], "acmedata");
    assert!(connector["config"].get("client_secret").is_none());
    assert!(connector["updated_at"].is_string());
    assert_eq!(connector["scan_history"], json!([]));
    assert_eq!(connector["findings_count"], 0);
    assert!(connector["last_scan"].is_null());
    assert!(!body.to_string().contains(SECRET));

    // Lists page with the envelope's pagination and filter by provider and status.
    for n in 0..3 {
        let (status, _) = admin
            .send(
                Method::POST,
                "/connectors",
                Some(json!({"name": format!("S3 {n}"), "provider": "aws", "config": aws(&eid)})),
            )
            .await;
        assert_eq!(status, 201);
    }
    let (status, body) = analyst.send(Method::GET, "/connectors?limit=3", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"].as_array().unwrap().len(), 3);
    assert_eq!(body["pagination"]["limit"], 3);
    assert_eq!(body["pagination"]["has_more"], true);
    assert!(body["data"][0].get("scan_history").is_none());
    let cursor = body["pagination"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, body) = analyst
        .send(
            Method::GET,
            &format!("/connectors?limit=3&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    assert_eq!(body["pagination"]["has_more"], false);
    let (_, body) = analyst
        .send(
            Method::GET,
            "/connectors?provider=aws&status=pending_test",
            None,
        )
        .await;
    assert_eq!(body["data"].as_array().unwrap().len(), 3);
    for query in [
        "provider=dropbox",
        "status=happy",
        "limit=0",
        "limit=101",
        "colour=red",
    ] {
        let (status, body) = analyst
            .send(Method::GET, &format!("/connectors?{query}"), None)
            .await;
        assert_eq!(status, 400, "{query}: {body}");
        crate::area_b_error(&body, "VALIDATION_FAILED");
    }
    let (status, body) = stranger
        .send(Method::GET, &format!("/connectors?cursor={cursor}"), None)
        .await;
    assert_eq!(status, 400, "another tenant's cursor: {body}");

    // Another tenant sees nothing; unknown and malformed ids are 404 CONNECTOR_NOT_FOUND.
    for path in [
        format!("/connectors/{id}"),
        "/connectors/not-a-uuid".to_owned(),
        format!("/connectors/{}", uuid::Uuid::now_v7()),
    ] {
        let (status, body) = stranger.send(Method::GET, &path, None).await;
        assert_eq!(status, 404, "{path}: {body}");
        crate::area_b_error(&body, "CONNECTOR_NOT_FOUND");
    }

    // Delete: any user of the tenant, then gone.
    let path = format!("/connectors/{id}");
    let (status, body) = analyst.send(Method::DELETE, &path, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"id": id, "deleted": true}));
    let (status, body) = admin.send(Method::DELETE, &path, None).await;
    assert_eq!(status, 404);
    crate::area_b_error(&body, "CONNECTOR_NOT_FOUND");
}

#[tokio::test]
async fn a_deployment_can_require_a_role_for_connectors_and_scans() {
    use crate::Client;
    use integration_tests::{Service, TestApp};
    use reqwest::Method;

    let app = TestApp::spawn_with(Service::Platform, |env| {
        env.insert(
            "DPS_ROLE_REQUIREMENTS".into(),
            "connectors=admin,scans=admin".into(),
        );
    })
    .await;
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let eid = analyst.external_id().await;
    let (status, body) = analyst
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "S3", "provider": "aws", "config": aws(&eid)})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let error = crate::area_b_error(&body, "FORBIDDEN");
    assert_eq!(error["message"], "this operation requires the admin role");
    let (status, body) = analyst
        .send(
            Method::POST,
            "/scans/parallel",
            Some(json!({"connectors": [], "type": "full"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    // Reading stays open to every user of the tenant.
    let (status, body) = analyst.send(Method::GET, "/connectors", None).await;
    assert_eq!(status, 200, "{body}");
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (status, body) = admin
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "S3", "provider": "aws", "config": aws(&eid)})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

/// An AWS connector carries its tenant's own external id, which the platform derives: one a
/// tenant chose could be another tenant's, and the platform would assume that tenant's role
/// for it (the confused deputy AWS's external id exists to stop).
#[tokio::test]
async fn an_aws_connector_must_carry_its_tenants_own_external_id() {
    use integration_tests::{Service, TestApp};
    use reqwest::Method;

    let app = TestApp::spawn(Service::Platform).await;
    let acme = crate::Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let globex = crate::Client {
        app: &app,
        token: app.token("globex", "gus", &["admin"]),
    };
    let (mine, theirs) = (acme.external_id().await, globex.external_id().await);
    assert_ne!(mine, theirs);
    assert_eq!(mine, acme.external_id().await, "stable");
    for refused in [theirs.as_str(), "tenant-acme-7731"] {
        let (status, body) = acme
            .send(
                Method::POST,
                "/connectors",
                Some(json!({"name": "S3", "provider": "aws", "config": aws(refused)})),
            )
            .await;
        assert_eq!(status, 400, "{body}");
        let error = crate::area_b_error(&body, "VALIDATION_FAILED");
        assert_eq!(
            error["details"]["fields"][0]["field"], "config.external_id",
            "{body}"
        );
    }
    let (status, body) = acme
        .send(
            Method::POST,
            "/connectors",
            Some(json!({"name": "S3", "provider": "aws", "config": aws(&mine)})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

/// A scan created while its only connector is being deleted: the delete read the connector's
/// scans before the scan existed, then waited for its creation to commit (the scan's link holds
/// a share of the connector's row), and the cascade took the link. No scan without a connector
/// may be left behind, never cancelled.
#[tokio::test(flavor = "multi_thread")]
async fn a_scan_created_during_its_connectors_delete_does_not_outlive_it() {
    use diesel::sql_types::{Jsonb, Uuid as SqlUuid};
    use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
    use integration_tests::{Service, TestApp};

    let app = TestApp::spawn_with(Service::Platform, |env| {
        env.insert("DPS_SCAN_WORKERS".into(), "0".into());
    })
    .await;
    let admin = crate::Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let eid = admin.external_id().await;
    let (status, body) = admin
        .send(
            reqwest::Method::POST,
            "/connectors",
            Some(json!({"name": "HR", "provider": "aws", "config": aws(&eid)})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let connector = uuid::Uuid::parse_str(body["data"]["id"].as_str().unwrap()).unwrap();
    let options = serde_json::to_value(
        scans::options::validate(None, scans::options::Tier::standard()).unwrap(),
    )
    .unwrap();
    let scan = uuid::Uuid::new_v4();

    // The creation, as scans::store::create does it, held open.
    let mut creating = app.conn().await;
    creating
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::sql_query(
                "SELECT 1 FROM connectors WHERE tenant_id = 'acme' AND connector_id = $1 FOR KEY SHARE",
            )
            .bind::<SqlUuid, _>(connector)
            .execute(conn)
            .await?;
            diesel::sql_query(
                "INSERT INTO scans (tenant_id, scan_id, kind, origin, options, worker_token_hash, max_workers)
                 VALUES ('acme', $1, 'full', 'connector', $2, '\\x00', 1)",
            )
            .bind::<SqlUuid, _>(scan)
            .bind::<Jsonb, _>(&options)
            .execute(conn)
            .await?;
            diesel::sql_query(
                "INSERT INTO scan_connectors (tenant_id, scan_id, connector_id, position) VALUES ('acme', $1, $2, 0)",
            )
            .bind::<SqlUuid, _>(scan)
            .bind::<SqlUuid, _>(connector)
            .execute(conn)
            .await?;
            // The delete starts now, reads no scan of the connector, and waits on the row.
            let origin = app.origin.clone();
            let token = admin.token.clone();
            let delete = tokio::spawn(async move {
                reqwest::Client::new()
                    .delete(format!("{origin}/api/v1/connectors/{connector}"))
                    .bearer_auth(token)
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            });
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            assert!(!delete.is_finished(), "the delete must wait for the creation");
            Ok(delete)
        })
        .await
        .map(|delete| async move { assert_eq!(delete.await.unwrap(), 200) })
        .unwrap()
        .await;

    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let left: Count = diesel::sql_query("SELECT count(*) AS n FROM scans WHERE scan_id = $1")
        .bind::<SqlUuid, _>(scan)
        .get_result(&mut creating)
        .await
        .unwrap();
    assert_eq!(left.n, 0, "the scan outlived its only connector");
}

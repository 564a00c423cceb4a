use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::TenantId;

#[derive(QueryableByName)]
struct RowText {
    #[diesel(sql_type = Text)]
    row: String,
}

#[tokio::test]
async fn api_keys_are_stored_only_as_hashes_and_stop_working_when_revoked() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let tenant: TenantId = "acme".parse().unwrap();
    let (record, secret) = auth::api_keys::create(&mut conn, &tenant, Some("svc-user"), "ingest")
        .await
        .unwrap();
    assert!(secret.expose().starts_with(auth::API_KEY_PREFIX));

    // No column, in any encoding Postgres renders, holds the key or its random part.
    let rows: Vec<RowText> = diesel::sql_query("SELECT (k.*)::text AS row FROM api_keys k")
        .load(&mut conn)
        .await
        .unwrap();
    let body = &secret.expose()[auth::API_KEY_PREFIX.len()..];
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].row.contains(body));

    let principal = auth::api_keys::authenticate(&mut conn, secret.expose())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(principal.tenant_id, tenant);
    assert_eq!(principal.owner_id.as_deref(), Some("svc-user"));
    assert_eq!(principal.key_id, record.id);

    // A near miss, a malformed key and an unknown key all fail the same way.
    let mut near = secret.expose().to_owned();
    let last = near.pop().unwrap();
    near.push(if last == 'A' { 'B' } else { 'A' });
    assert!(
        auth::api_keys::authenticate(&mut conn, &near)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        auth::api_keys::authenticate(&mut conn, "dpsk_short")
            .await
            .unwrap()
            .is_none()
    );

    let revoked = auth::api_keys::revoke(&mut conn, record.id)
        .await
        .unwrap()
        .unwrap();
    let first_revocation = revoked.revoked_at.unwrap();
    assert!(
        auth::api_keys::authenticate(&mut conn, secret.expose())
            .await
            .unwrap()
            .is_none()
    );
    let again = auth::api_keys::revoke(&mut conn, record.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.revoked_at, Some(first_revocation));
    assert!(
        auth::api_keys::revoke(&mut conn, uuid::Uuid::now_v7())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn listing_api_keys_is_per_tenant() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let acme: TenantId = "acme".parse().unwrap();
    let globex: TenantId = "globex".parse().unwrap();
    auth::api_keys::create(&mut conn, &acme, None, "a1")
        .await
        .unwrap();
    auth::api_keys::create(&mut conn, &acme, None, "a2")
        .await
        .unwrap();
    auth::api_keys::create(&mut conn, &globex, None, "g1")
        .await
        .unwrap();
    let listed = auth::api_keys::list(&mut conn, Some(&acme)).await.unwrap();
    assert_eq!(
        listed.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(),
        ["a2", "a1"]
    );
    assert_eq!(
        auth::api_keys::list(&mut conn, None).await.unwrap().len(),
        3
    );
}

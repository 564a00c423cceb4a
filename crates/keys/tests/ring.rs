//! The key ring against a real Postgres: versions, rotation, and what a sealed secret is bound to.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::sync::Arc;

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use ids::TenantId;
use keys::{KeyRing, MasterKey, add_version, tenants};

async fn connect() -> AsyncPgConnection {
    let db = testkit::database().await;
    AsyncPgConnection::establish(&db.url).await.unwrap()
}

fn master() -> Arc<MasterKey> {
    Arc::new(MasterKey::generate().unwrap().0)
}

#[tokio::test]
async fn a_tenant_gets_its_first_version_on_first_use_and_others_see_it() {
    let mut conn = connect().await;
    let master = master();
    let acme: TenantId = "acme".parse().unwrap();
    assert!(tenants(&mut conn).await.unwrap().is_empty());
    let keys = KeyRing::new(master.clone())
        .tenant(&mut conn, &acme)
        .await
        .unwrap();
    assert_eq!(keys.current_version(), 1);
    assert_eq!(tenants(&mut conn).await.unwrap(), vec![acme.clone()]);

    // Another replica, with the same master key, unwraps the same keys.
    let sealed = keys
        .seal_secret("connector.config", b"c-1", b"hunter2")
        .unwrap();
    let again = KeyRing::new(master).tenant(&mut conn, &acme).await.unwrap();
    assert_eq!(
        again
            .open_secret("connector.config", b"c-1", &sealed)
            .unwrap(),
        b"hunter2"
    );
    // A secret is bound to its purpose and record.
    assert!(
        again
            .open_secret("connector.config", b"c-2", &sealed)
            .is_err()
    );
    assert!(again.open_secret("other", b"c-1", &sealed).is_err());
}

#[tokio::test]
async fn rotation_adds_a_version_for_new_writes_and_keeps_the_old_readable() {
    let mut conn = connect().await;
    let master = master();
    let acme: TenantId = "acme".parse().unwrap();
    let ring = KeyRing::new(master.clone());
    let before = ring.tenant(&mut conn, &acme).await.unwrap();
    let old = before.seal_secret("p", b"r", b"old secret").unwrap();
    assert_eq!(old.key_version, 1);

    assert_eq!(add_version(&mut conn, &master, &acme).await.unwrap(), 2);
    // The cached view is older than the rotation; asking for version 2 reloads it.
    let after = ring.tenant_at_least(&mut conn, &acme, 2).await.unwrap();
    assert_eq!(after.current_version(), 2);
    let new = after.seal_secret("p", b"r", b"new secret").unwrap();
    assert_eq!(new.key_version, 2);
    assert_eq!(after.open_secret("p", b"r", &old).unwrap(), b"old secret");
    assert_eq!(after.open_secret("p", b"r", &new).unwrap(), b"new secret");
    // Token keys never rotate: the same value keeps its deterministic token.
    let mac = |k: &keys::TenantKeys| k.mac.mac(&[b"x"]).to_vec();
    assert_eq!(mac(&before), mac(&after));
}

#[tokio::test]
async fn another_master_key_or_tenant_cannot_unwrap_a_tenants_keys() {
    let mut conn = connect().await;
    let acme: TenantId = "acme".parse().unwrap();
    let globex: TenantId = "globex".parse().unwrap();
    let master = master();
    let acme_keys = KeyRing::new(master.clone())
        .tenant(&mut conn, &acme)
        .await
        .unwrap();
    let globex_keys = KeyRing::new(master)
        .tenant(&mut conn, &globex)
        .await
        .unwrap();
    let sealed = acme_keys.seal_secret("p", b"r", b"acme only").unwrap();
    assert!(globex_keys.open_secret("p", b"r", &sealed).is_err());
    // A ring with the wrong master key cannot open the wrapped versions at all.
    assert!(matches!(
        KeyRing::new(self::master()).tenant(&mut conn, &acme).await,
        Err(keys::KeyError::Crypto)
    ));
}

/// Secrets that are not vault values (a connector's client secret) are sealed under the
/// tenant's data key, bound to their purpose and record, and still open after a key rotation,
/// for a key ring that loads the tenant's keys afresh.
#[tokio::test]
async fn sealed_secrets_hold_no_plaintext_are_bound_to_their_record_and_survive_rotation() {
    let mut conn = connect().await;
    let master = master();
    let acme: TenantId = "acme".parse().unwrap();
    let keys = KeyRing::new(master.clone())
        .tenant(&mut conn, &acme)
        .await
        .unwrap();
    let secret = keys
        .seal_secret("connector.client_secret", b"connector-1", b"s3cr3t")
        .unwrap();
    assert_eq!(secret.key_version, 1);
    assert!(
        !secret.sealed.windows(6).any(|w| w == b"s3cr3t"),
        "sealed, not stored"
    );
    assert_eq!(
        keys.open_secret("connector.client_secret", b"connector-1", &secret)
            .unwrap(),
        b"s3cr3t"
    );
    // Moved to another record or another use, it does not open.
    assert!(
        keys.open_secret("connector.client_secret", b"connector-2", &secret)
            .is_err()
    );
    assert!(
        keys.open_secret("webhook.secret", b"connector-1", &secret)
            .is_err()
    );
    // A new key version seals new secrets; the old one still opens.
    assert_eq!(add_version(&mut conn, &master, &acme).await.unwrap(), 2);
    let rotated = KeyRing::new(master).tenant(&mut conn, &acme).await.unwrap();
    let newer = rotated
        .seal_secret("connector.client_secret", b"connector-1", b"s3cr3t")
        .unwrap();
    assert_eq!((secret.key_version, newer.key_version), (1, 2));
    assert_ne!(newer.sealed, secret.sealed);
    for sealed in [&secret, &newer] {
        assert_eq!(
            rotated
                .open_secret("connector.client_secret", b"connector-1", sealed)
                .unwrap(),
            b"s3cr3t"
        );
    }
    // A view from before the rotation cannot open what the new version sealed.
    assert!(
        keys.open_secret("connector.client_secret", b"connector-1", &newer)
            .is_err()
    );
}

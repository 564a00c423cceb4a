//! Key rotation and what a sealed entry is bound to.

use diesel::sql_types::{Bytea, Uuid as SqlUuid};
use diesel_async::RunQueryDsl as _;
use vault::VaultError;
use vault::entries::{reveal, sealed};

use crate::{Vault, acme, all_modes, globex, ints, item, request, rule, written};

/// A policy of acme's, and a batch that wrote an SSN's and an email's entries under it.
async fn two_entries(v: &mut Vault) -> (ids::TokenPolicyId, vault::tokenize::Tokenized) {
    let policy = v.policy(&acme(), &all_modes()).await;
    let first = v
        .done(&request(
            policy,
            vec![
                item("123-45-6789", "us_ssn"),
                item("ann@example.com", "email"),
            ],
        ))
        .await;
    (policy, first)
}

#[tokio::test]
async fn rewrap_moves_old_entries_to_the_current_key_version_and_reveal_still_opens_them() {
    let mut v = Vault::new().await;
    let (policy, first) = two_entries(&mut v).await;
    let old: Vec<uuid::Uuid> = (0..2).map(|i| written(&first, i).1.as_uuid()).collect();
    let before = sealed(&mut v.conn, &acme(), &old).await.unwrap();

    assert_eq!(
        keys::add_version(&mut v.conn, &v.master, &acme())
            .await
            .unwrap(),
        2
    );
    // This process rotated: it forgets its cached keys, and new writes use version 2.
    v.keyring.forget(&acme());
    let later = v
        .done(&request(policy, vec![item("bob@example.com", "email")]))
        .await;
    let order = "SELECT key_version AS v FROM vault_entries ORDER BY token_id";
    assert_eq!(ints(&mut v.conn, order).await, [1, 1, 2]);

    // Only the two version-1 entries are rewrapped, once.
    assert_eq!(
        vault::rewrap::rewrap(&mut v.conn, &v.keyring, &acme())
            .await
            .unwrap(),
        2
    );
    assert_eq!(ints(&mut v.conn, order).await, [2, 2, 2]);
    assert_eq!(
        vault::rewrap::rewrap(&mut v.conn, &v.keyring, &acme())
            .await
            .unwrap(),
        0
    );
    let after = sealed(&mut v.conn, &acme(), &old).await.unwrap();
    for entry in &after {
        let was = before
            .iter()
            .find(|b| b.token_id == entry.token_id)
            .unwrap();
        assert_eq!(was.key_version, 1);
        assert_ne!(was.ciphertext, entry.ciphertext, "sealed again");
    }

    // The rewrapped values still open, with a key ring loaded afresh.
    let ring = keys::KeyRing::new(v.master.clone());
    let keys = ring.tenant(&mut v.conn, &acme()).await.unwrap();
    assert_eq!(keys.current_version(), 2);
    let mut ids = old.clone();
    ids.push(written(&later, 0).1.as_uuid());
    let entries = sealed(&mut v.conn, &acme(), &ids).await.unwrap();
    assert_eq!(entries.len(), 3);
    for (id, expected) in ids
        .iter()
        .zip(["123456789", "ann@example.com", "bob@example.com"])
    {
        let entry = entries.iter().find(|e| e.token_id == *id).unwrap();
        let revealed = reveal(&keys, &acme(), entry).unwrap();
        assert_eq!(revealed.value.expose(), expected);
        assert_eq!(revealed.currency, None);
    }
    // The old version is no longer needed: the values open under version 2 alone.
    assert!(after.iter().all(|e| e.key_version == 2));

    // Deterministic tokens survive the rotation.
    let again = v
        .done(&request(policy, vec![item("123-45-6789", "us_ssn")]))
        .await;
    assert_eq!(written(&again, 0), written(&first, 0));
    // Another tenant's entries are not touched by this tenant's rewrap.
    assert_eq!(
        vault::rewrap::rewrap(&mut v.conn, &v.keyring, &globex())
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn a_sealed_value_opens_only_for_its_tenant_and_its_own_entry() {
    let mut v = Vault::new().await;
    let mut definition = all_modes();
    definition
        .type_rules
        .insert("monetary".into(), rule("randomized"));
    let policy = v.policy(&acme(), &definition).await;
    let result = v
        .done(&request(
            policy,
            vec![
                item("1.234,50 €", "monetary"),
                item("123-45-6789", "us_ssn"),
            ],
        ))
        .await;
    let ids: Vec<uuid::Uuid> = (0..2).map(|i| written(&result, i).1.as_uuid()).collect();
    let keys = v.keyring.tenant(&mut v.conn, &acme()).await.unwrap();
    let entries = sealed(&mut v.conn, &acme(), &ids).await.unwrap();
    let money = entries.iter().find(|e| e.token_id == ids[0]).unwrap();
    let ssn = entries.iter().find(|e| e.token_id == ids[1]).unwrap();
    let revealed = reveal(&keys, &acme(), money).unwrap();
    assert_eq!(revealed.value.expose(), "1234.50");
    assert_eq!(revealed.currency.as_deref(), Some("EUR"));

    // Another tenant does not even see the entries.
    assert!(
        sealed(&mut v.conn, &globex(), &ids)
            .await
            .unwrap()
            .is_empty()
    );
    // Read as another tenant's, or under another token id, the ciphertext does not open.
    assert!(matches!(
        reveal(&keys, &globex(), money),
        Err(VaultError::Crypto)
    ));
    let mut moved = money.clone();
    moved.token_id = ssn.token_id;
    assert!(matches!(
        reveal(&keys, &acme(), &moved),
        Err(VaultError::Crypto)
    ));
    // Nor does a ciphertext swapped into another row.
    diesel::sql_query("UPDATE vault_entries SET ciphertext = $1 WHERE token_id = $2")
        .bind::<Bytea, _>(&money.ciphertext)
        .bind::<SqlUuid, _>(ssn.token_id)
        .execute(&mut v.conn)
        .await
        .unwrap();
    let swapped = sealed(&mut v.conn, &acme(), &ids[1..]).await.unwrap();
    assert!(matches!(
        reveal(&keys, &acme(), &swapped[0]),
        Err(VaultError::Crypto)
    ));
    // Another master key's ring cannot open the tenant's keys at all.
    let stranger = keys::KeyRing::new(std::sync::Arc::new(keys::MasterKey::generate().unwrap().0));
    assert!(stranger.tenant(&mut v.conn, &acme()).await.is_err());
}

/// An entry another transaction holds (a revocation in progress) is skipped by a batch, not
/// forgotten: rewrap counts what is left under older versions, waits for it, and moves it too.
/// It used to stop at the first empty batch and report success with the entry still under the
/// old key.
#[tokio::test]
async fn rewrap_waits_for_an_entry_another_transaction_holds() {
    use diesel_async::SimpleAsyncConnection as _;
    let mut v = Vault::new().await;
    let (_, first) = two_entries(&mut v).await;
    let held = written(&first, 0).1;
    keys::add_version(&mut v.conn, &v.master, &acme())
        .await
        .unwrap();
    let mut holder = v.connect().await;
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM vault_entries WHERE token_id = '{}' FOR UPDATE",
            held.as_uuid()
        ))
        .await
        .unwrap();
    let (mut conn, keyring) = (v.connect().await, v.keyring.clone());
    let rewrap =
        tokio::spawn(async move { vault::rewrap::rewrap(&mut conn, &keyring, &acme()).await });
    // The other entry is moved; the held one waits.
    let moved = "SELECT key_version AS v FROM vault_entries WHERE key_version = 2";
    while ints(&mut v.conn, moved).await.is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    holder.batch_execute("COMMIT").await.unwrap();
    assert_eq!(rewrap.await.unwrap().unwrap(), 2);
    let all = "SELECT key_version AS v FROM vault_entries ORDER BY token_id";
    assert_eq!(ints(&mut v.conn, all).await, [2, 2]);
}

//! The entry list (never values), its filters and cursors, and revocation.

use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::RunQueryDsl as _;
use ids::TokenId;
use paging::Limit;
use vault::VaultError;
use vault::entries::{self, ListRequest, Status};
use vault::tokenize::{BatchMode, ItemOutcome, Request, Run};

use crate::{Vault, acme, all_modes, codes, globex, item, principal, request, written};

/// What one call of the list asks: its filters and its page.
#[derive(Clone, Copy)]
struct Ask<'a> {
    limit: Limit,
    cursor: Option<&'a str>,
    pii_type: Option<&'a str>,
    status: Option<&'a str>,
}

fn all(limit: i64) -> Ask<'static> {
    Ask {
        limit: Limit::parse(Some(limit), 50).unwrap(),
        cursor: None,
        pii_type: None,
        status: None,
    }
}

async fn list(
    conn: &mut diesel_async::AsyncPgConnection,
    cursors: &paging::CursorKey,
    tenant: &ids::TenantId,
    ask: Ask<'_>,
) -> Result<paging::Page<entries::Entry>, VaultError> {
    let filters = ListRequest {
        pii_type: ask.pii_type,
        status: ask.status,
    };
    let page = paging::PageRequest {
        cursors,
        limit: ask.limit,
        cursor: ask.cursor,
    };
    entries::list(conn, tenant, filters, page).await
}

/// The first page of acme's entries of one status.
async fn with_status(v: &mut Vault, status: &str) -> paging::Page<entries::Entry> {
    list(
        &mut v.conn,
        &v.cursors,
        &acme(),
        Ask {
            status: Some(status),
            ..all(50)
        },
    )
    .await
    .unwrap()
}

async fn expire(v: &mut Vault, id: TokenId) {
    diesel::sql_query(
        "UPDATE vault_entries SET expires_at = now() - interval '1 second' WHERE token_id = $1",
    )
    .bind::<SqlUuid, _>(id.as_uuid())
    .execute(&mut v.conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn the_list_filters_by_type_and_status_and_holds_no_value() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let result = v
        .done(&request(
            policy,
            vec![
                item("123-45-6789", "us_ssn"),
                item("ann@example.com", "email"),
                item("bob@example.com", "email"),
                item("046 454 286", "ca_sin"),
            ],
        ))
        .await;
    let ids: Vec<TokenId> = (0..4).map(|i| written(&result, i).1).collect();

    let page = list(&mut v.conn, &v.cursors, &acme(), all(50))
        .await
        .unwrap();
    assert_eq!(
        page.items.iter().map(|e| e.token_id).collect::<Vec<_>>(),
        ids,
        "oldest first, in item order"
    );
    assert!(!page.pagination.has_more);
    let first = &page.items[0];
    assert_eq!(first.token, written(&result, 0).0);
    assert_eq!(
        (first.pii_type.as_str(), first.mode.as_str()),
        ("us_ssn", "deterministic")
    );
    assert_eq!(first.status, Status::Active);
    assert_eq!((first.policy_id, first.policy_version), (policy, 1));
    assert_eq!((first.expires_at, first.revoked_at), (None, None));
    let text = format!("{page:?}");
    for value in ["123-45-6789", "123456789", "ann@example.com", "046 454 286"] {
        assert!(!text.contains(value), "{value} is listed");
    }

    let emails = list(
        &mut v.conn,
        &v.cursors,
        &acme(),
        Ask {
            pii_type: Some("email"),
            ..all(50)
        },
    )
    .await
    .unwrap();
    assert_eq!(
        emails.items.iter().map(|e| e.token_id).collect::<Vec<_>>(),
        [ids[1], ids[2]]
    );

    // Revoke one, expire another.
    entries::revoke(
        &mut v.conn,
        &principal("acme", "alice", &["admin"]),
        ids[1],
        "customer asked",
    )
    .await
    .unwrap();
    expire(&mut v, ids[2]).await;
    for (status, expected) in [
        ("active", vec![ids[0], ids[3]]),
        ("revoked", vec![ids[1]]),
        ("expired", vec![ids[2]]),
    ] {
        let page = with_status(&mut v, status).await;
        assert_eq!(
            page.items.iter().map(|e| e.token_id).collect::<Vec<_>>(),
            expected,
            "{status}"
        );
        assert!(page.items.iter().all(|e| e.status.as_str() == status));
    }
    // Both filters at once.
    let revoked_emails = list(
        &mut v.conn,
        &v.cursors,
        &acme(),
        Ask {
            pii_type: Some("email"),
            status: Some("revoked"),
            ..all(50)
        },
    )
    .await
    .unwrap();
    assert_eq!(revoked_emails.items.len(), 1);
    assert!(revoked_emails.items[0].revoked_at.is_some());

    let gone = Ask {
        status: Some("gone"),
        ..all(50)
    };
    let outcome = list(&mut v.conn, &v.cursors, &acme(), gone).await;
    assert!(
        matches!(outcome, Err(VaultError::InvalidRequest(_))),
        "{outcome:?}"
    );
    let zip = Ask {
        pii_type: Some("us_zip"),
        ..all(50)
    };
    let outcome = list(&mut v.conn, &v.cursors, &acme(), zip).await;
    assert!(
        matches!(outcome, Err(VaultError::UnsupportedPiiType)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_policy_ttl_gives_entries_an_expiry() {
    let mut v = Vault::new().await;
    let mut definition = all_modes();
    definition.token_ttl_seconds = Some(3600);
    let policy = v.policy(&acme(), &definition).await;
    v.done(&request(policy, vec![item("123-45-6789", "us_ssn")]))
        .await;
    let page = list(&mut v.conn, &v.cursors, &acme(), all(50))
        .await
        .unwrap();
    let entry = &page.items[0];
    let ttl = entry.expires_at.unwrap() - entry.created_at;
    assert_eq!(ttl.whole_seconds(), 3600);
    assert_eq!(entry.status, Status::Active);
}

#[tokio::test]
async fn list_pages_follow_a_cursor_that_another_tenant_or_list_cannot_use() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let items = (0..5)
        .map(|n| item(&format!("user{n}@example.com"), "email"))
        .collect();
    let result = v.done(&request(policy, items)).await;
    let ids: Vec<TokenId> = (0..5).map(|i| written(&result, i).1).collect();

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut sizes = Vec::new();
    loop {
        let page = list(
            &mut v.conn,
            &v.cursors,
            &acme(),
            Ask {
                cursor: cursor.as_deref(),
                ..all(2)
            },
        )
        .await
        .unwrap();
        sizes.push(page.items.len());
        seen.extend(page.items.iter().map(|e| e.token_id));
        match page.pagination.next_cursor {
            Some(next) => {
                assert!(page.pagination.has_more);
                cursor = Some(next);
            }
            None => {
                assert!(!page.pagination.has_more);
                break;
            }
        }
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(seen, ids);

    let first = list(&mut v.conn, &v.cursors, &acme(), all(2))
        .await
        .unwrap();
    let cursor = first.pagination.next_cursor.unwrap();
    // Another tenant sees nothing, and cannot resume this tenant's list.
    let theirs = list(&mut v.conn, &v.cursors, &globex(), all(2))
        .await
        .unwrap();
    assert!(theirs.items.is_empty());
    let with = |cursor| Ask {
        cursor: Some(cursor),
        ..all(2)
    };
    let outcome = list(&mut v.conn, &v.cursors, &globex(), with(&cursor)).await;
    assert!(matches!(outcome, Err(VaultError::BadCursor)), "{outcome:?}");
    // A changed cursor, or one signed with another key, is refused too.
    let mut tampered = cursor.clone().into_bytes();
    tampered[5] = if tampered[5] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let outcome = list(&mut v.conn, &v.cursors, &acme(), with(&tampered)).await;
    assert!(matches!(outcome, Err(VaultError::BadCursor)), "{outcome:?}");
    let other_key = paging::CursorKey::new(&[7u8; 32]);
    let outcome = list(&mut v.conn, &other_key, &acme(), with(&cursor)).await;
    assert!(matches!(outcome, Err(VaultError::BadCursor)), "{outcome:?}");
    // A cursor of the policy list does not resume the vault list.
    for n in 0..2 {
        let definition = vault::policies::Definition {
            name: format!("p{n}"),
            ..all_modes()
        };
        v.policy(&acme(), &definition).await;
    }
    let policies = vault::policies::list(
        &mut v.conn,
        &acme(),
        paging::PageRequest::first(&v.cursors, all(1).limit),
    )
    .await
    .unwrap();
    let policy_cursor = policies.pagination.next_cursor.unwrap();
    let outcome = list(&mut v.conn, &v.cursors, &acme(), with(&policy_cursor)).await;
    assert!(matches!(outcome, Err(VaultError::BadCursor)), "{outcome:?}");
}

#[tokio::test]
async fn revocation_needs_a_reason_and_an_allowed_role_and_keeps_the_first_time() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let result = v
        .done(&request(policy, vec![item("123-45-6789", "us_ssn")]))
        .await;
    let (_, id, _) = written(&result, 0);
    let admin = principal("acme", "alice", &["admin"]);

    for reason in ["", "   ", &"x".repeat(1001)] {
        let outcome = entries::revoke(&mut v.conn, &admin, id, reason).await;
        assert!(
            matches!(outcome, Err(VaultError::InvalidRequest(_))),
            "{outcome:?}"
        );
    }
    let analyst = principal("acme", "rita", &["analyst"]);
    let outcome = entries::revoke(&mut v.conn, &analyst, id, "x").await;
    assert!(
        matches!(outcome, Err(VaultError::Forbidden(_))),
        "{outcome:?}"
    );
    assert_eq!(
        v.count("SELECT count(*) AS n FROM vault_entries WHERE revoked_at IS NOT NULL")
            .await,
        0
    );

    // A role the policy allows to detokenize may revoke.
    let support = principal("acme", "sam", &["support"]);
    let first = entries::revoke(&mut v.conn, &support, id, "subject erasure request")
        .await
        .unwrap();
    assert_eq!(first.token_id, id);
    let again = entries::revoke(&mut v.conn, &admin, id, "again")
        .await
        .unwrap();
    assert_eq!(again.revoked_at, first.revoked_at);
    let who = v
        .count(
            "SELECT count(*) AS n FROM vault_entries WHERE revoked_by = 'sam' \
             AND revoke_reason = 'subject erasure request'",
        )
        .await;
    assert_eq!(who, 1, "the first actor and reason are kept");

    // Unknown ids and other tenants' callers find nothing.
    for (caller, token_id) in [
        (&admin, TokenId::new()),
        (&principal("globex", "gina", &["admin"]), id),
    ] {
        let outcome = entries::revoke(&mut v.conn, caller, token_id, "x").await;
        assert!(
            matches!(outcome, Err(VaultError::TokenNotFound)),
            "{outcome:?}"
        );
    }
}

#[tokio::test]
async fn a_revoked_values_token_is_not_issued_again() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let result = v
        .done(&request(
            policy,
            vec![item("123-45-6789", "us_ssn"), item("046 454 286", "ca_sin")],
        ))
        .await;
    let admin = principal("acme", "alice", &["admin"]);
    for i in 0..2 {
        entries::revoke(&mut v.conn, &admin, written(&result, i).1, "erasure")
            .await
            .unwrap();
    }
    // The deterministic value written differently is the same value.
    let again = request(
        policy,
        vec![
            item("123 45 6789", "us_ssn"),
            item("046 454 286", "ca_sin"),
            item("234-56-7890", "us_ssn"),
        ],
    );
    let best = v.done(&again).await;
    assert_eq!(
        codes(&best),
        ["TOKEN_REVOKED", "TOKEN_REVOKED", "TOKENIZED"]
    );
    assert_eq!(v.entries().await, 3);
    let dry = v
        .done(&Request {
            run: Run::DryRun,
            ..again.clone()
        })
        .await;
    assert_eq!(codes(&dry), ["TOKEN_REVOKED", "TOKEN_REVOKED", "TOKENIZED"]);

    // ALL_OR_NOTHING: the revoked value rolls back the new one.
    let whole = Request {
        batch_mode: BatchMode::AllOrNothing,
        ..request(
            policy,
            vec![item("345-67-8901", "us_ssn"), item("123-45-6789", "us_ssn")],
        )
    };
    let outcome = v.tokenize(&acme(), &whole).await.unwrap();
    let vault::tokenize::Outcome::Rejected { first, result } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(first.code, "TOKEN_REVOKED");
    assert_eq!(codes(&result), ["SKIPPED", "TOKEN_REVOKED"]);
    assert!(
        !result
            .results
            .iter()
            .any(|r| matches!(r.outcome, ItemOutcome::Tokenized { .. }))
    );
    assert_eq!(v.entries().await, 3, "nothing of the batch was written");
}

#[derive(diesel::QueryableByName)]
struct Keys {
    #[diesel(sql_type = diesel::sql_types::Nullable<SqlUuid>)]
    lookup: Option<uuid::Uuid>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    fingerprinted: bool,
}

/// The lookup key and whether a fingerprint is stored, of entry `id`.
async fn keys_of(v: &mut Vault, id: TokenId) -> Keys {
    diesel::sql_query(
        "SELECT lookup, fingerprint IS NOT NULL AS fingerprinted FROM vault_entries \
          WHERE token_id = $1",
    )
    .bind::<SqlUuid, _>(id.as_uuid())
    .get_result(&mut v.conn)
    .await
    .unwrap()
}

#[derive(diesel::QueryableByName)]
struct Lookup {
    #[diesel(sql_type = SqlUuid)]
    lookup: uuid::Uuid,
}

#[tokio::test]
async fn the_migrations_lookup_formula_is_the_vaults() {
    use diesel::sql_types::Text;
    let mut v = Vault::new().await;
    for (tenant, pii_type, token) in [
        ("acme", "us_ssn", "dtk_abcdefghijklmnopqrstuvwxyz234567"),
        ("globex-2", "email", "zoë.müller@example.com"),
        ("a", "phone", "+1 (202) 555-0123"),
        ("acme", "dob", "March 4, 1980"),
    ] {
        let from_sql: Lookup = diesel::sql_query(
            "SELECT encode(substring(sha256(convert_to(
                 'dps-lookup-v1|'
                 || octet_length($1) || ':' || $1
                 || octet_length($2) || ':' || $2
                 || octet_length($3) || ':' || $3, 'UTF8')) from 1 for 16), 'hex')::uuid
               AS lookup",
        )
        .bind::<Text, _>(tenant)
        .bind::<Text, _>(pii_type)
        .bind::<Text, _>(token)
        .get_result(&mut v.conn)
        .await
        .unwrap();
        assert_eq!(
            from_sql.lookup,
            tokenize_core::lookup(tenant, pii_type, token),
            "{token}"
        );
    }
}

#[tokio::test]
async fn randomized_tokens_are_their_ids_enciphered_and_need_no_lookup_key() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let result = v
        .done(&request(
            policy,
            vec![
                item("ann@example.com", "email"),
                item("ann@example.com", "email"),
            ],
        ))
        .await;
    let keys = v.keyring.tenant(&mut v.conn, &acme()).await.unwrap();
    let (first, first_id, mode) = written(&result, 0);
    let (second, second_id, _) = written(&result, 1);
    assert_eq!(mode, "randomized");
    assert_ne!(first, second, "a randomized token is never reused");
    for (token, id) in [(&first, first_id), (&second, second_id)] {
        assert_eq!(
            keys.randomized.token_id(token),
            Some(*id.as_uuid().as_bytes())
        );
        let stored = keys_of(&mut v, id).await;
        assert_eq!((stored.lookup, stored.fingerprinted), (None, false));
    }
    // Another tenant's key reads nothing from it.
    let other = v.keyring.tenant(&mut v.conn, &globex()).await.unwrap();
    assert_eq!(other.randomized.token_id(&first), None);
}

#[tokio::test]
async fn tokens_are_found_by_their_lookup_keys_and_nothing_else_is() {
    let mut v = Vault::new().await;
    let policy = v.policy(&acme(), &all_modes()).await;
    let result = v
        .done(&request(
            policy,
            vec![
                item("123-45-6789", "us_ssn"),
                item("046 454 286", "ca_sin"),
                item("March 4, 1980", "dob"),
            ],
        ))
        .await;
    let (deterministic, det_id, _) = written(&result, 0);
    let (enciphered, fpe_id, _) = written(&result, 1);
    let (surrogate, surrogate_id, _) = written(&result, 2);
    // One index keeps each: the lookup key; a surrogate's value also by its fingerprint.
    for (id, fingerprinted) in [(det_id, false), (fpe_id, false), (surrogate_id, true)] {
        let stored = keys_of(&mut v, id).await;
        assert!(stored.lookup.is_some());
        assert_eq!(stored.fingerprinted, fingerprinted);
    }
    let candidates = [
        ("us_ssn", deterministic.as_str()),
        ("ca_sin", enciphered.as_str()),
        ("dob", surrogate.as_str()),
        ("us_ssn", "123-45-6789"),
        ("dob", enciphered.as_str()),
        ("ca_sin", "046 454 286"),
    ];
    let mut found = Vec::new();
    let mut elsewhere = Vec::new();
    for (pii_type, token) in candidates {
        for (tenant, into) in [(acme(), &mut found), (globex(), &mut elsewhere)] {
            let key = tokenize_core::lookup(tenant.as_str(), pii_type, token);
            let n = v
                .count(&format!(
                    "SELECT count(*) AS n FROM vault_entries
                      WHERE tenant_id = '{}' AND lookup = '{key}'",
                    tenant.as_str()
                ))
                .await;
            into.push(n == 1);
        }
    }
    assert_eq!(found, [true, true, true, false, false, false]);
    assert_eq!(elsewhere, [false; 6]);

    // The same values again find their entries through the lookup keys and fingerprints.
    let again = v
        .done(&request(
            policy,
            vec![
                item("123 45 6789", "us_ssn"),
                item("046 454 286", "ca_sin"),
                item("March 4, 1980", "dob"),
            ],
        ))
        .await;
    assert_eq!(written(&again, 0).1, det_id);
    assert_eq!(written(&again, 1).1, fpe_id);
    assert_eq!(written(&again, 2).1, surrogate_id);
    assert_eq!(v.entries().await, 3);
}

/// Among 20,000 entries, listing the few revoked or expired ones reads the partial indexes
/// that hold only those (migration 041), not the whole vault in token order.
#[tokio::test]
async fn listing_revoked_or_expired_entries_reads_only_those() {
    use diesel_async::SimpleAsyncConnection as _;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut v = Vault::new().await;
    v.conn
        .batch_execute(
            "INSERT INTO vault_entries (tenant_id, token_id, token, pii_type, mode, policy_id, \
             policy_version, key_version, ciphertext, revoked_at, expires_at) \
             SELECT 'acme', gen_random_uuid(), 'rtk_' || n, 'email', 'randomized', \
                    gen_random_uuid(), 1, 1, '\\x00', \
                    CASE WHEN n % 4000 = 0 THEN now() END, \
                    CASE WHEN n % 4000 = 1 THEN now() - interval '1 hour' \
                         WHEN n % 2 = 0 THEN now() + interval '1 day' END \
               FROM generate_series(1, 20000) AS n",
        )
        .await
        .unwrap();
    v.conn
        .batch_execute("VACUUM ANALYZE vault_entries")
        .await
        .unwrap();
    let scans = async |conn: &mut diesel_async::AsyncPgConnection, index: &str| {
        conn.batch_execute("SELECT pg_stat_clear_snapshot()")
            .await
            .unwrap();
        diesel::sql_query("SELECT idx_scan AS n FROM pg_stat_user_indexes WHERE indexrelname = $1")
            .bind::<diesel::sql_types::Text, _>(index)
            .get_result::<Count>(conn)
            .await
            .unwrap()
            .n
    };
    for (status, index, found) in [
        ("revoked", "vault_entries_revoked_idx", 5),
        ("expired", "vault_entries_expiry_idx", 5),
    ] {
        let before = scans(&mut v.conn, index).await;
        let page = with_status(&mut v, status).await;
        assert_eq!(page.items.len(), found, "{status}");
        v.conn
            .batch_execute("SELECT pg_stat_force_next_flush()")
            .await
            .unwrap();
        assert!(
            scans(&mut v.conn, index).await > before,
            "listing {status} entries did not read {index}"
        );
    }
    // So does the usage's count of them.
    let before = (
        scans(&mut v.conn, "vault_entries_revoked_idx").await,
        scans(&mut v.conn, "vault_entries_expiry_idx").await,
    );
    let usage = limits::usage(&mut v.conn, &acme()).await.unwrap();
    assert_eq!((usage.tokens.revoked, usage.tokens.expired), (5, 5));
    v.conn
        .batch_execute("SELECT pg_stat_force_next_flush()")
        .await
        .unwrap();
    assert!(scans(&mut v.conn, "vault_entries_revoked_idx").await > before.0);
    assert!(scans(&mut v.conn, "vault_entries_expiry_idx").await > before.1);
}

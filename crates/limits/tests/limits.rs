//! Rate limits, the kill switch, monthly quotas and usage against a real Postgres.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::time::{Duration, Instant};

use diesel::sql_types::{Bool, Date, Integer, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{
    AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _,
};
use ids::TenantId;
use limits::{Decision, Endpoint, KillSwitchState, KillSwitches, RateLimits};
use time::OffsetDateTime;
use uuid::Uuid;

async fn connect() -> (testkit::TestDatabase, AsyncPgConnection) {
    let db = testkit::database().await;
    let conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    (db, conn)
}

fn acme() -> TenantId {
    "acme".parse().unwrap()
}

fn globex() -> TenantId {
    "globex".parse().unwrap()
}

/// Waits, if needed, until at least `room` is left in the current UTC minute, so that the
/// calls that follow fall in one rate-limit window.
async fn same_window(room: Duration) {
    let now = OffsetDateTime::now_utc();
    let into = Duration::from_secs(u64::from(now.second()))
        + Duration::from_nanos(u64::from(now.nanosecond()));
    let left = Duration::from_secs(60).saturating_sub(into);
    if left < room {
        tokio::time::sleep(left + Duration::from_millis(200)).await;
    }
}

#[derive(diesel::QueryableByName)]
struct Month {
    #[diesel(sql_type = Date)]
    month: time::Date,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// A vault entry whose token id says it was created at `at` (token ids are UUIDv7).
async fn entry(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    at: OffsetDateTime,
    revoked_at: Option<OffsetDateTime>,
    expires_at: Option<OffsetDateTime>,
) -> Uuid {
    let millis = u64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap();
    let mut random = [0u8; 10];
    random[..8].copy_from_slice(&Uuid::new_v4().as_bytes()[..8]);
    let id = uuid::Builder::from_unix_timestamp_millis(millis, &random).into_uuid();
    diesel::sql_query(
        "INSERT INTO vault_entries (tenant_id, token_id, token, pii_type, mode, policy_id, \
         policy_version, key_version, ciphertext, created_at, revoked_at, expires_at) \
         VALUES ($1, $2, 'rtk_' || $2::text, 'email', 'randomized', $2, 1, 1, '\\x00', $3, $4, $5)",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<SqlUuid, _>(id)
    .bind::<Timestamptz, _>(at)
    .bind::<diesel::sql_types::Nullable<Timestamptz>, _>(revoked_at)
    .bind::<diesel::sql_types::Nullable<Timestamptz>, _>(expires_at)
    .execute(conn)
    .await
    .unwrap();
    id
}

async fn grant(conn: &mut AsyncPgConnection, tenant: &TenantId, issued_at: OffsetDateTime) {
    diesel::sql_query(
        "INSERT INTO grants (tenant_id, jti, user_id, token_ids, purpose, issued_at, expires_at) \
         VALUES ($1, gen_random_uuid(), 'sam', '{}', 'fraud_review', $2, $2 + interval '5 minutes')",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Timestamptz, _>(issued_at)
    .execute(conn)
    .await
    .unwrap();
}

/// A detokenization attempt naming `tokens` token ids.
async fn attempt(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    granted: bool,
    tokens: i32,
    occurred_at: OffsetDateTime,
) {
    diesel::sql_query(
        "INSERT INTO detokenization_audit (tenant_id, audit_id, trace_id, user_id, token_ids, \
         outcome, statuses, occurred_at) \
         SELECT $1, gen_random_uuid(), gen_random_uuid(), 'sam', \
         ARRAY(SELECT gen_random_uuid() FROM generate_series(1, $2)), \
         CASE WHEN $3 THEN 'granted' ELSE 'denied' END, '[]', $4",
    )
    .bind::<Text, _>(tenant.as_str())
    .bind::<Integer, _>(tokens)
    .bind::<Bool, _>(granted)
    .bind::<Timestamptz, _>(occurred_at)
    .execute(conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn rate_limits_count_each_user_and_the_tenant_in_one_minute_windows() {
    let (_db, mut conn) = connect().await;
    let rates = RateLimits::parse("vault_list=3/5").unwrap();
    assert_eq!(rates.of(Endpoint::VaultList), (3, 5));
    assert_eq!(
        rates.of(Endpoint::Policies),
        (60, 600),
        "the others keep their defaults"
    );
    same_window(Duration::from_secs(10)).await;
    let mut check = async |tenant: &TenantId, subject: &str, endpoint: Endpoint| -> Decision {
        limits::check(&mut conn, &rates, tenant, subject, endpoint)
            .await
            .unwrap()
    };

    let mut alice = Vec::new();
    for _ in 0..4 {
        alice.push(check(&acme(), "user:alice", Endpoint::VaultList).await);
    }
    let seen: Vec<(u32, u32, bool)> = alice
        .iter()
        .map(|d| (d.limit, d.remaining, d.exceeded))
        .collect();
    assert_eq!(
        seen,
        [(3, 2, false), (3, 1, false), (3, 0, false), (3, 0, true)]
    );
    let now = OffsetDateTime::now_utc().unix_timestamp();
    for d in &alice {
        assert_eq!(d.reset, alice[0].reset, "one window");
        assert_eq!(d.reset % 60, 0, "windows are whole minutes");
        assert!(
            d.reset > now - 1 && d.reset <= now + 60,
            "{} vs {now}",
            d.reset
        );
        assert!((1..=60).contains(&d.retry_after), "{}", d.retry_after);
    }

    // Requests past a user's own limit do not spend the tenant's budget: alice sending on
    // must not lock the rest of the tenant out.
    for _ in 0..20 {
        assert!(
            check(&acme(), "user:alice", Endpoint::VaultList)
                .await
                .exceeded
        );
    }
    // Another user of the tenant has a budget of their own, until the tenant's binds: alice's
    // three requests within her limit and bob's first two make five.
    let bob = check(&acme(), "user:bob", Endpoint::VaultList).await;
    assert_eq!((bob.remaining, bob.exceeded), (1, false));
    let bob = check(&acme(), "user:bob", Endpoint::VaultList).await;
    assert_eq!((bob.remaining, bob.exceeded), (0, false));
    let carol = check(&acme(), "user:carol", Endpoint::VaultList).await;
    assert!(
        carol.exceeded,
        "the tenant's sixth counted request in the window"
    );
    assert_eq!(carol.remaining, 0);
    // Another endpoint and another tenant are counted apart.
    let other_endpoint = check(&acme(), "user:alice", Endpoint::Policies).await;
    assert_eq!((other_endpoint.limit, other_endpoint.remaining), (60, 59));
    assert!(!other_endpoint.exceeded);
    let other_tenant = check(&globex(), "user:alice", Endpoint::VaultList).await;
    assert_eq!((other_tenant.remaining, other_tenant.exceeded), (2, false));

    // A window that has passed counts for nothing.
    diesel::sql_query(
        "UPDATE rate_limit_counters SET window_start = window_start - interval '1 minute'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let fresh = limits::check(
        &mut conn,
        &rates,
        &acme(),
        "user:alice",
        Endpoint::VaultList,
    )
    .await
    .unwrap();
    assert_eq!((fresh.remaining, fresh.exceeded), (2, false));
}

#[test]
fn rate_limit_settings_are_parsed_over_the_defaults_and_bad_ones_refused() {
    let rates = RateLimits::parse(" tokenize = 5/50 , detokenize=2/3,").unwrap();
    assert_eq!(rates.of(Endpoint::Tokenize), (5, 50));
    assert_eq!(rates.of(Endpoint::Detokenize), (2, 3));
    assert_eq!(rates.of(Endpoint::Grant), (10, 100));
    assert_eq!(
        RateLimits::default().of(Endpoint::Tokenize),
        (1_000, 10_000)
    );
    for bad in [
        "tokenize",
        "tokenize=5",
        "nope=1/2",
        "tokenize=0/5",
        "tokenize=5/0",
        "tokenize=a/b",
    ] {
        assert!(
            matches!(RateLimits::parse(bad), Err(limits::LimitsError::Config(_))),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_kill_switch_is_seen_by_every_replica_within_the_cache_ttl() {
    let (db, mut conn) = connect().await;
    let mut other = AsyncPgConnection::establish(&db.url).await.unwrap();
    let replica = KillSwitches::default();
    let before = Instant::now();
    assert!(!replica.is_on(&mut conn, &acme()).await.unwrap());

    limits::set_kill_switch(
        &mut conn,
        Some(&acme()),
        limits::Switch::On,
        "ops@example.com",
    )
    .await
    .unwrap();
    // A replica that reads now sees it at once...
    let fresh = KillSwitches::default();
    assert!(fresh.is_on(&mut other, &acme()).await.unwrap());
    assert!(!fresh.is_on(&mut other, &globex()).await.unwrap());
    // ...one that read just before trusts what it read, for at most CACHE_TTL.
    let cached = replica.is_on(&mut conn, &acme()).await.unwrap();
    if before.elapsed() < limits::kill::CACHE_TTL {
        assert!(!cached, "read within the TTL: the cached view");
    }
    tokio::time::sleep(limits::kill::CACHE_TTL + Duration::from_millis(50)).await;
    assert!(replica.is_on(&mut conn, &acme()).await.unwrap());
    assert!(!replica.is_on(&mut conn, &globex()).await.unwrap());
    assert_eq!(
        replica.state(&mut conn).await.unwrap(),
        KillSwitchState {
            global: false,
            tenants: vec!["acme".into()],
        }
    );

    // The global switch stops every tenant.
    limits::set_kill_switch(&mut conn, None, limits::Switch::On, "ops@example.com")
        .await
        .unwrap();
    tokio::time::sleep(limits::kill::CACHE_TTL + Duration::from_millis(50)).await;
    assert!(replica.is_on(&mut conn, &globex()).await.unwrap());
    assert!(replica.state(&mut conn).await.unwrap().global);

    // Turned off, both are forgotten within the TTL.
    limits::set_kill_switch(&mut conn, None, limits::Switch::Off, "ops@example.com")
        .await
        .unwrap();
    limits::set_kill_switch(
        &mut conn,
        Some(&acme()),
        limits::Switch::Off,
        "ops@example.com",
    )
    .await
    .unwrap();
    tokio::time::sleep(limits::kill::CACHE_TTL + Duration::from_millis(50)).await;
    assert!(!replica.is_on(&mut conn, &acme()).await.unwrap());
    assert!(!replica.is_on(&mut conn, &globex()).await.unwrap());
    assert_eq!(
        replica.state(&mut conn).await.unwrap(),
        KillSwitchState::default()
    );
}

#[tokio::test]
async fn a_monthly_quota_is_set_replaced_cleared_and_locked_per_tenant() {
    let (db, mut conn) = connect().await;
    assert_eq!(
        limits::monthly_quota(&mut conn, &acme()).await.unwrap(),
        None
    );
    limits::set_monthly_quota(&mut conn, &acme(), Some(5))
        .await
        .unwrap();
    assert_eq!(
        limits::monthly_quota(&mut conn, &acme()).await.unwrap(),
        Some(5)
    );
    limits::set_monthly_quota(&mut conn, &acme(), Some(7))
        .await
        .unwrap();
    assert_eq!(
        limits::monthly_quota(&mut conn, &acme()).await.unwrap(),
        Some(7)
    );
    assert_eq!(
        limits::monthly_quota(&mut conn, &globex()).await.unwrap(),
        None
    );
    assert!(
        limits::set_monthly_quota(&mut conn, &acme(), Some(-1))
            .await
            .is_err(),
        "a quota is never negative"
    );
    assert_eq!(
        limits::monthly_quota(&mut conn, &acme()).await.unwrap(),
        Some(7)
    );

    // The lock holds a second writer of the tenant until the first transaction ends.
    let mut second = AsyncPgConnection::establish(&db.url).await.unwrap();
    second
        .batch_execute("SET lock_timeout = '300ms'")
        .await
        .unwrap();
    conn.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        limits::lock_monthly_quota(&mut conn, &acme())
            .await
            .unwrap(),
        Some(7)
    );
    second.batch_execute("BEGIN").await.unwrap();
    let blocked = limits::lock_monthly_quota(&mut second, &acme()).await;
    assert!(
        blocked
            .as_ref()
            .is_err_and(|e| e.to_string().contains("lock timeout")),
        "locked by the first transaction: {blocked:?}"
    );
    second.batch_execute("ROLLBACK").await.unwrap();
    // Another tenant's quota is not locked.
    second.batch_execute("BEGIN").await.unwrap();
    limits::set_monthly_quota(&mut second, &globex(), Some(1))
        .await
        .unwrap();
    assert_eq!(
        limits::lock_monthly_quota(&mut second, &globex())
            .await
            .unwrap(),
        Some(1)
    );
    second.batch_execute("COMMIT").await.unwrap();
    conn.batch_execute("COMMIT").await.unwrap();
    second.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        limits::lock_monthly_quota(&mut second, &acme())
            .await
            .unwrap(),
        Some(7)
    );
    second.batch_execute("COMMIT").await.unwrap();

    limits::set_monthly_quota(&mut conn, &acme(), None)
        .await
        .unwrap();
    assert_eq!(
        limits::monthly_quota(&mut conn, &acme()).await.unwrap(),
        None
    );
    assert_eq!(
        limits::lock_monthly_quota(&mut conn, &acme())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        limits::monthly_quota(&mut conn, &globex()).await.unwrap(),
        Some(1)
    );
}

#[tokio::test]
/// The count is a counter tokenize keeps; the migration that introduced it started it at the
/// month's entries, found by their UUIDv7 token ids. Run again here over entries of both sides of
/// the month's first millisecond.
async fn the_counter_starts_at_this_months_entries_of_the_tenant_and_tokenize_adds_to_it() {
    let (_db, mut conn) = connect().await;
    let now = OffsetDateTime::now_utc();
    let start = limits::month_start(now);
    assert_eq!(
        (start.day(), start.hour(), start.minute(), start.second()),
        (1, 0, 0, 0)
    );
    assert_eq!(start.month(), now.month());
    assert_eq!(
        limits::tokens_created_this_month(&mut conn, &acme())
            .await
            .unwrap(),
        0
    );

    entry(&mut conn, &acme(), now, None, None).await;
    entry(&mut conn, &acme(), start, None, None).await;
    // Revoked or expired, an entry created this month still counts.
    entry(&mut conn, &acme(), now, Some(now), None).await;
    entry(
        &mut conn,
        &acme(),
        now,
        None,
        Some(now - time::Duration::hours(1)),
    )
    .await;
    // The last millisecond of last month does not, nor does another tenant's entry.
    entry(
        &mut conn,
        &acme(),
        start - time::Duration::milliseconds(1),
        None,
        None,
    )
    .await;
    entry(
        &mut conn,
        &acme(),
        start - time::Duration::days(40),
        None,
        None,
    )
    .await;
    entry(&mut conn, &globex(), now, None, None).await;
    // Entries alone are not counted: the counter is.
    assert_eq!(
        limits::tokens_created_this_month(&mut conn, &acme())
            .await
            .unwrap(),
        0
    );
    conn.batch_execute(include_str!(
        "../../../migrations/2026-11-27-000039_tokens_created_counter/up.sql"
    ))
    .await
    .unwrap();

    assert_eq!(
        limits::tokens_created_this_month(&mut conn, &acme())
            .await
            .unwrap(),
        4
    );
    assert_eq!(
        limits::tokens_created_this_month(&mut conn, &globex())
            .await
            .unwrap(),
        1
    );

    // Tokenize adds what it created; items that found existing entries are not counted.
    limits::record_tokenize(&mut conn, &acme(), 10, 3)
        .await
        .unwrap();
    limits::record_tokenize(&mut conn, &acme(), 5, 0)
        .await
        .unwrap();
    assert_eq!(
        limits::tokens_created_this_month(&mut conn, &acme())
            .await
            .unwrap(),
        7
    );
    // Migration 041 fills in the earlier months, each entry in the month of its token id.
    conn.batch_execute(
        include_str!("../../../migrations/2026-11-27-000041_usage_without_vault_scans/up.sql")
            .split_once("revoked_at IS NULL;")
            .unwrap()
            .1,
    )
    .await
    .unwrap();
    let months: Vec<Month> = diesel::sql_query(
        "SELECT month, sum(value)::bigint AS n FROM usage_counters \
          WHERE tenant_id = 'acme' AND metric = 'tokens_created' GROUP BY month ORDER BY month",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let earlier = (start - time::Duration::days(40)).date();
    let last = (start - time::Duration::milliseconds(1)).date();
    assert_eq!(
        months
            .iter()
            .map(|m| (m.month.replace_day(1).unwrap(), m.n))
            .collect::<Vec<_>>(),
        [
            (earlier.replace_day(1).unwrap(), 1),
            (last.replace_day(1).unwrap(), 1),
            (start.date(), 7)
        ]
    );
    // Last month's count is not this month's.
    diesel::sql_query(
        "INSERT INTO usage_counters (tenant_id, month, metric, value) \
         VALUES ('globex', $1, 'tokens_created', 400)",
    )
    .bind::<Date, _>((start - time::Duration::days(3)).date())
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        limits::tokens_created_this_month(&mut conn, &globex())
            .await
            .unwrap(),
        1
    );
}

#[tokio::test]
async fn usage_reports_the_tenants_own_counts_of_this_month_and_its_quota() {
    let (_db, mut conn) = connect().await;
    let now = OffsetDateTime::now_utc();
    let start = limits::month_start(now);
    let last_month = start - time::Duration::days(3);

    // acme: three entries this month (one revoked now, one expired), two last month (one of
    // them revoked last month).
    entry(&mut conn, &acme(), now, None, None).await;
    entry(&mut conn, &acme(), now, Some(now), None).await;
    entry(
        &mut conn,
        &acme(),
        now,
        None,
        Some(now - time::Duration::minutes(1)),
    )
    .await;
    entry(&mut conn, &acme(), last_month, None, None).await;
    entry(&mut conn, &acme(), last_month, Some(last_month), None).await;
    limits::record_tokenize(&mut conn, &acme(), 3, 2)
        .await
        .unwrap();
    limits::record_tokenize(&mut conn, &acme(), 2, 1)
        .await
        .unwrap();
    diesel::sql_query(
        "INSERT INTO usage_counters (tenant_id, month, metric, value) \
         VALUES ('acme', $1, 'tokenize_requests', 40), ('acme', $1, 'tokenize_items', 400), \
                ('acme', $1, 'tokens_created', 2)",
    )
    .bind::<Date, _>(last_month.date())
    .execute(&mut conn)
    .await
    .unwrap();
    grant(&mut conn, &acme(), now).await;
    grant(&mut conn, &acme(), now).await;
    grant(&mut conn, &acme(), last_month).await;
    attempt(&mut conn, &acme(), true, 2, now).await;
    attempt(&mut conn, &acme(), false, 3, now).await;
    attempt(&mut conn, &acme(), true, 7, last_month).await;
    limits::set_monthly_quota(&mut conn, &acme(), Some(10))
        .await
        .unwrap();

    // globex: its own of everything, none of which acme's usage may count.
    entry(&mut conn, &globex(), now, None, None).await;
    entry(&mut conn, &globex(), now, Some(now), None).await;
    limits::record_tokenize(&mut conn, &globex(), 9, 2)
        .await
        .unwrap();
    grant(&mut conn, &globex(), now).await;
    attempt(&mut conn, &globex(), true, 5, now).await;

    let usage = limits::usage(&mut conn, &acme()).await.unwrap();
    assert_eq!(usage.period_start, start);
    assert_eq!(usage.period_end.day(), 1);
    assert_eq!(usage.period_end.time(), time::Time::MIDNIGHT);
    assert!(usage.period_end > now);
    let resets = limits::quota_resets_in(now);
    assert_eq!(
        resets,
        u64::try_from((usage.period_end - now).whole_seconds())
            .unwrap()
            .max(1)
    );
    assert_eq!(
        usage.tokens,
        limits::TokenCounts {
            created: 3,
            active: 2,
            revoked: 2,
            expired: 1,
        }
    );
    assert_eq!((usage.tokenize_requests, usage.tokenize_items), (2, 5));
    assert_eq!((usage.detokenize_requests, usage.detokenize_items), (2, 2));
    assert_eq!(usage.grants_issued, 2);
    assert_eq!(usage.revocations, 1);
    assert_eq!(
        usage.quota,
        limits::Quota {
            limit: Some(10),
            used: 3,
            remaining: Some(7),
        }
    );

    let theirs = limits::usage(&mut conn, &globex()).await.unwrap();
    assert_eq!(
        theirs.tokens,
        limits::TokenCounts {
            created: 2,
            active: 1,
            revoked: 1,
            expired: 0,
        }
    );
    assert_eq!((theirs.tokenize_requests, theirs.tokenize_items), (1, 9));
    assert_eq!(
        (theirs.detokenize_requests, theirs.detokenize_items),
        (1, 5)
    );
    assert_eq!((theirs.grants_issued, theirs.revocations), (1, 1));
    assert_eq!(
        theirs.quota,
        limits::Quota {
            limit: None,
            used: 2,
            remaining: None,
        }
    );

    // A quota smaller than what was used leaves nothing, never less.
    limits::set_monthly_quota(&mut conn, &acme(), Some(1))
        .await
        .unwrap();
    let usage = limits::usage(&mut conn, &acme()).await.unwrap();
    assert_eq!(usage.quota.remaining, Some(0));
}

#[tokio::test]
async fn an_empty_subject_is_refused_rather_than_counted_as_the_tenant() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let acme: TenantId = "acme".parse().unwrap();
    let rates = RateLimits::default();
    let refused = limits::check(&mut conn, &rates, &acme, "", Endpoint::VaultList).await;
    assert!(
        matches!(refused, Err(limits::LimitsError::Config(_))),
        "{refused:?}"
    );
    // The tenant's budget was not touched.
    let counted = limits::check(&mut conn, &rates, &acme, "user:ann", Endpoint::VaultList)
        .await
        .unwrap();
    assert_eq!(counted.remaining, 59);
}

/// A count made alone commits without waiting for the disk, for its own transaction only: the
/// session's later writes, and a caller's transaction it runs in, keep their durability.
#[tokio::test]
async fn a_count_turns_off_synchronous_commit_for_its_own_transaction_only() {
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = Text)]
        synchronous_commit: String,
    }
    async fn setting(conn: &mut AsyncPgConnection) -> String {
        diesel::sql_query("SHOW synchronous_commit")
            .get_result::<Setting>(conn)
            .await
            .unwrap()
            .synchronous_commit
    }
    let (_db, mut conn) = connect().await;
    // The test cluster runs without durability; the session asks for it, as production has it.
    conn.batch_execute("SET synchronous_commit = on")
        .await
        .unwrap();
    let rates = RateLimits::default();
    assert_eq!(setting(&mut conn).await, "on");
    let alone = limits::check(&mut conn, &rates, &acme(), "ann", Endpoint::Tokenize)
        .await
        .unwrap();
    assert!(!alone.exceeded);
    assert_eq!(
        setting(&mut conn).await,
        "on",
        "the session keeps its setting"
    );
    // What the count's own transaction commits with, seen from a block diesel does not know
    // of (so the count takes its alone form): off until that block ends.
    conn.batch_execute("BEGIN").await.unwrap();
    limits::check(&mut conn, &rates, &acme(), "ann", Endpoint::Tokenize)
        .await
        .unwrap();
    assert_eq!(
        setting(&mut conn).await,
        "off",
        "the count commits without a flush"
    );
    conn.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(setting(&mut conn).await, "on");

    let inside = conn
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            let decision = limits::check(conn, &rates, &acme(), "ann", Endpoint::Tokenize)
                .await
                .unwrap();
            Ok((decision, setting(conn).await))
        })
        .await
        .unwrap();
    assert_eq!(
        inside.1, "on",
        "a caller's transaction keeps its durability"
    );
    assert_eq!(
        inside.0.remaining,
        alone.remaining - 1,
        "both requests were counted"
    );
    assert_eq!(setting(&mut conn).await, "on");
}

//! Tenant settings against a real Postgres: the rollback window, the remediation policy,
//! co-signing, their entries in the tenant's audit log, and the remediation gate, including
//! how it fails open when the policy cannot be read.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Jsonb, Text};
use diesel_async::{
    AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _,
};
use ids::{TenantId, UserId};
use serde_json::{Value, json};
use settings::{
    CosigningMode, CosigningUpdate, ENFORCEABLE_SAFETY_CLASSES, Gate, PlatformCertificate,
    SafetyClass, SettingsError, events,
};

const ENDPOINT: &str = "https://cosign.acme.example/v1/sign";

async fn connect() -> (testkit::TestDatabase, AsyncPgConnection) {
    let db = testkit::database().await;
    let conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    (db, conn)
}

fn tenant(name: &str) -> TenantId {
    name.parse().unwrap()
}

fn user(name: &str) -> UserId {
    name.parse().unwrap()
}

/// One entry of the audit log.
#[derive(Debug, QueryableByName)]
struct Audit {
    #[diesel(sql_type = Text)]
    tenant_id: String,
    #[diesel(sql_type = Text)]
    event: String,
    #[diesel(sql_type = Text)]
    actor: String,
    #[diesel(sql_type = Jsonb)]
    details: Value,
}

/// Every audit entry of every tenant, oldest first.
async fn audit(conn: &mut AsyncPgConnection) -> Vec<Audit> {
    diesel::sql_query(
        "SELECT tenant_id, kind AS event, actor, details FROM audit_log ORDER BY recorded_at, seq",
    )
    .load(conn)
    .await
    .unwrap()
}

/// The tenant's audit entries of one event, oldest first.
async fn audit_of(conn: &mut AsyncPgConnection, tenant: &str, event: audit::Kind) -> Vec<Audit> {
    audit(conn)
        .await
        .into_iter()
        .filter(|a| a.tenant_id == tenant && a.event == event.as_str())
        .collect()
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn settings_rows(conn: &mut AsyncPgConnection) -> i64 {
    diesel::sql_query("SELECT count(*) AS n FROM tenant_settings")
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
}

fn cosign(mode: CosigningMode, endpoint: Option<&str>) -> CosigningUpdate {
    CosigningUpdate {
        mode,
        endpoint_url: endpoint.map(str::to_owned),
    }
}

#[tokio::test]
async fn a_tenant_that_never_changed_anything_reads_the_documented_defaults_and_writes_nothing() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");

    let lkg = settings::lkg_retention(&mut conn, &acme).await.unwrap();
    assert_eq!(lkg.retention_hours, 72);
    assert_eq!(lkg.default_hours, settings::LKG_RETENTION_DEFAULT_HOURS);
    assert_eq!(lkg.allowed_options, vec![24, 72, 168]);
    assert_eq!(lkg.updated_at, None);
    assert_eq!(lkg.updated_by, None);
    assert!(lkg.change_log.is_empty());

    let policy = settings::remediation_policy(&mut conn, &acme)
        .await
        .unwrap();
    assert_eq!(policy.tenant_id, "acme");
    assert!(policy.denied_safety_classes.is_empty());
    assert_eq!(policy.allowed_safety_classes, SafetyClass::ALL.to_vec());
    assert_eq!(
        policy.enforceable_safety_classes,
        vec![
            SafetyClass::Destructive,
            SafetyClass::ReadOnly,
            SafetyClass::Reversible
        ]
    );
    assert_eq!(policy.updated_at, None);
    assert_eq!(policy.updated_by, None);

    for certificate in [
        PlatformCertificate::Missing,
        PlatformCertificate::Provisioned,
    ] {
        let cosigning = settings::cosigning(&mut conn, &acme, certificate)
            .await
            .unwrap();
        assert_eq!(cosigning.tenant_id, "acme");
        assert_eq!(cosigning.mode, CosigningMode::Disabled);
        assert_eq!(cosigning.endpoint_url, None);
        assert_eq!(
            cosigning.platform_provisioned,
            certificate == PlatformCertificate::Provisioned
        );
        assert_eq!(cosigning.updated_at, None);
        assert_eq!(cosigning.updated_by, None);
    }

    for class in SafetyClass::ALL {
        assert_eq!(
            settings::remediation_gate(&mut conn, &acme, class).await,
            Gate::Allowed,
            "{class:?}"
        );
    }
    // Reading is not a change: no settings row and no audit entry appear.
    assert_eq!(settings_rows(&mut conn).await, 0);
    assert!(audit(&mut conn).await.is_empty());
}

#[tokio::test]
async fn the_rollback_window_accepts_only_24_72_or_168_hours() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");

    // 2^32 + 24 would be 24 if it were truncated to 32 bits.
    let wrapped = (1_i64 << 32) + 24;
    for bad in [
        0,
        1,
        23,
        25,
        48,
        71,
        73,
        167,
        169,
        336,
        -24,
        -72,
        wrapped,
        i64::MAX,
        i64::MIN,
    ] {
        let result = settings::set_lkg_retention(&mut conn, &acme, &alice, bad).await;
        assert!(
            matches!(result, Err(SettingsError::InvalidRetention)),
            "{bad}: {result:?}"
        );
    }
    let message = SettingsError::InvalidRetention.to_string();
    assert_eq!(message, "retention_hours must be exactly 24, 72 or 168");
    // Nothing that was refused was stored or audited.
    assert_eq!(settings_rows(&mut conn).await, 0);
    assert!(audit(&mut conn).await.is_empty());
    assert_eq!(
        settings::lkg_retention(&mut conn, &acme)
            .await
            .unwrap()
            .retention_hours,
        72
    );

    for hours in [24, 168, 72] {
        let lkg = settings::set_lkg_retention(&mut conn, &acme, &alice, hours)
            .await
            .unwrap();
        assert_eq!(i64::from(lkg.retention_hours), hours);
        assert_eq!(
            i64::from(
                settings::lkg_retention(&mut conn, &acme)
                    .await
                    .unwrap()
                    .retention_hours
            ),
            hours
        );
    }
}

#[tokio::test]
async fn the_rollback_window_audits_each_change_of_value_once_with_from_to_and_actor() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let (alice, bob) = (user("alice"), user("bob"));

    // The default set explicitly is not a change.
    let lkg = settings::set_lkg_retention(&mut conn, &acme, &alice, 72)
        .await
        .unwrap();
    assert_eq!(lkg.retention_hours, 72);
    assert!(lkg.change_log.is_empty());
    assert!(audit(&mut conn).await.is_empty());

    let lkg = settings::set_lkg_retention(&mut conn, &acme, &alice, 168)
        .await
        .unwrap();
    assert_eq!(lkg.retention_hours, 168);
    assert_eq!(lkg.updated_by.as_deref(), Some("alice"));
    assert!(lkg.updated_at.is_some());
    let entries = audit(&mut conn).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].tenant_id, "acme");
    assert_eq!(entries[0].event, events::LKG_RETENTION_CHANGED.as_str());
    assert_eq!(entries[0].event, "lkg_retention_changed");
    assert_eq!(entries[0].actor, "alice");
    assert_eq!(
        entries[0].details,
        json!({ "from_hours": 72, "to_hours": 168 })
    );

    // The current value again: accepted, not a change, not audited.
    settings::set_lkg_retention(&mut conn, &acme, &bob, 168)
        .await
        .unwrap();
    assert_eq!(audit(&mut conn).await.len(), 1);

    let lkg = settings::set_lkg_retention(&mut conn, &acme, &bob, 24)
        .await
        .unwrap();
    let entries = audit_of(&mut conn, "acme", events::LKG_RETENTION_CHANGED).await;
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].actor, "bob");
    assert_eq!(
        entries[1].details,
        json!({ "from_hours": 168, "to_hours": 24 })
    );

    // The change log shows the same changes, newest first.
    let log: Vec<(u32, u32, &str)> = lkg
        .change_log
        .iter()
        .map(|c| (c.from_hours, c.to_hours, c.changed_by.as_str()))
        .collect();
    assert_eq!(log, vec![(168, 24, "bob"), (72, 168, "alice")]);
    assert!(lkg.change_log[0].changed_at >= lkg.change_log[1].changed_at);
    assert_eq!(lkg.retention_hours, 24);
    assert_eq!(lkg.updated_by.as_deref(), Some("bob"));
}

#[tokio::test]
async fn concurrent_changes_of_the_rollback_window_leave_an_unbroken_change_log() {
    let (db, mut conn) = connect().await;
    let acme = tenant("acme");
    let values = [24, 72, 168, 24, 168, 72, 24, 168, 168, 72, 24, 24];
    let mut tasks = tokio::task::JoinSet::new();
    for (i, hours) in values.into_iter().enumerate() {
        let url = db.url.clone();
        let acme = acme.clone();
        tasks.spawn(async move {
            let mut conn = AsyncPgConnection::establish(&url).await.unwrap();
            let actor = user(&format!("admin-{i}"));
            settings::set_lkg_retention(&mut conn, &acme, &actor, hours)
                .await
                .map(|_| ())
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap().unwrap();
    }

    let lkg = settings::lkg_retention(&mut conn, &acme).await.unwrap();
    let log = &lkg.change_log;
    assert!(!log.is_empty());
    // Newest first: each change starts where the next-older one ended, the oldest starts at
    // the default and the newest ends at the current value.
    for pair in log.windows(2) {
        assert_eq!(pair[0].from_hours, pair[1].to_hours, "{log:?}");
    }
    assert_eq!(log.last().unwrap().from_hours, 72);
    assert_eq!(log[0].to_hours, lkg.retention_hours);
    assert!(log.iter().all(|c| c.from_hours != c.to_hours), "{log:?}");
    assert_eq!(
        audit_of(&mut conn, "acme", events::LKG_RETENTION_CHANGED)
            .await
            .len(),
        log.len()
    );
}

#[tokio::test]
async fn the_remediation_policy_is_deduplicated_ordered_and_audited_on_every_set() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let (alice, bob) = (user("alice"), user("bob"));

    let policy = settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes":
            ["governance", "destructive", "destructive", "read_only", "governance"] }),
    )
    .await
    .unwrap();
    let denied = vec![
        SafetyClass::ReadOnly,
        SafetyClass::Destructive,
        SafetyClass::Governance,
    ];
    assert_eq!(policy.tenant_id, "acme");
    assert_eq!(policy.denied_safety_classes, denied);
    assert_eq!(
        policy.allowed_safety_classes,
        vec![
            SafetyClass::Reversible,
            SafetyClass::Infrastructure,
            SafetyClass::InlineRuntime
        ]
    );
    assert_eq!(policy.updated_by.as_deref(), Some("alice"));
    assert!(policy.updated_at.is_some());
    assert_eq!(
        settings::remediation_policy(&mut conn, &acme)
            .await
            .unwrap(),
        policy
    );

    // Stored once each, in the API's order.
    #[derive(QueryableByName)]
    struct Stored {
        #[diesel(sql_type = diesel::sql_types::Array<Text>)]
        denied_safety_classes: Vec<String>,
    }
    let stored: Stored = diesel::sql_query(
        "SELECT denied_safety_classes FROM tenant_settings WHERE tenant_id = 'acme'",
    )
    .get_result(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        stored.denied_safety_classes,
        ["read_only", "destructive", "governance"]
    );

    let entries = audit(&mut conn).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0].event,
        events::REMEDIATION_POLICY_CHANGED.as_str()
    );
    assert_eq!(entries[0].event, "remediation_policy_changed");
    assert_eq!(entries[0].actor, "alice");
    assert_eq!(
        entries[0].details,
        json!({
            "from_denied_safety_classes": [],
            "denied_safety_classes": ["read_only", "destructive", "governance"],
        })
    );

    // The same list again is still an audited setting.
    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &bob,
        &json!({ "denied_safety_classes": ["governance", "read_only", "destructive"] }),
    )
    .await
    .unwrap();
    // And an empty list denies nothing.
    let policy = settings::set_remediation_policy(
        &mut conn,
        &acme,
        &bob,
        &json!({ "denied_safety_classes": [] }),
    )
    .await
    .unwrap();
    assert!(policy.denied_safety_classes.is_empty());
    assert_eq!(policy.allowed_safety_classes, SafetyClass::ALL.to_vec());
    assert_eq!(policy.updated_by.as_deref(), Some("bob"));

    let entries = audit_of(&mut conn, "acme", events::REMEDIATION_POLICY_CHANGED).await;
    assert_eq!(entries.len(), 3);
    assert!(entries[1..].iter().all(|e| e.actor == "bob"));
    assert_eq!(
        entries[1].details,
        json!({
            "from_denied_safety_classes": ["read_only", "destructive", "governance"],
            "denied_safety_classes": ["read_only", "destructive", "governance"],
        })
    );
    assert_eq!(
        entries[2].details,
        json!({
            "from_denied_safety_classes": ["read_only", "destructive", "governance"],
            "denied_safety_classes": [],
        })
    );
}

#[tokio::test]
async fn an_unknown_safety_class_is_refused_with_its_index_and_never_echoed_and_changes_nothing() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");
    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["destructive"] }),
    )
    .await
    .unwrap();

    let secret = "nuke-ssn-123-45-6789";
    let result = settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["reversible", "governance", secret] }),
    )
    .await;
    let Err(error @ SettingsError::InvalidSafetyClass { .. }) = result else {
        panic!("expected InvalidSafetyClass, got {result:?}");
    };
    let SettingsError::InvalidSafetyClass { message, index } = &error else {
        unreachable!()
    };
    assert_eq!(*index, Some(2));
    assert!(message.contains("denied_safety_classes[2]"), "{message}");
    for shown in [message.clone(), error.to_string(), format!("{error:?}")] {
        assert!(
            !shown.contains("6789") && !shown.contains("nuke"),
            "the submitted text is echoed: {shown}"
        );
    }

    // Each malformed shape is the same error; an entry's fault carries its position.
    for (body, expected) in [
        (json!({ "denied_safety_classes": ["DESTRUCTIVE"] }), Some(0)),
        (
            json!({ "denied_safety_classes": ["destructive", 7] }),
            Some(1),
        ),
        (json!({ "denied_safety_classes": [null] }), Some(0)),
        (json!({ "denied_safety_classes": "destructive" }), None),
        (json!({ "denied_safety_classes": null }), None),
        (json!({ "denied_safety_classes": [], "note": "x" }), None),
        (json!({}), None),
        (json!(["destructive"]), None),
    ] {
        let result = settings::set_remediation_policy(&mut conn, &acme, &alice, &body).await;
        match result {
            Err(SettingsError::InvalidSafetyClass { index, .. }) => {
                assert_eq!(index, expected, "{body}");
            }
            other => panic!("{body}: expected InvalidSafetyClass, got {other:?}"),
        }
    }

    // Nothing refused changed the policy or was audited.
    let policy = settings::remediation_policy(&mut conn, &acme)
        .await
        .unwrap();
    assert_eq!(policy.denied_safety_classes, vec![SafetyClass::Destructive]);
    assert_eq!(
        audit_of(&mut conn, "acme", events::REMEDIATION_POLICY_CHANGED)
            .await
            .len(),
        1
    );
}

#[tokio::test]
async fn cosigning_cannot_be_optional_or_required_until_the_platform_is_provisioned() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");

    for mode in [CosigningMode::Optional, CosigningMode::Required] {
        let result = settings::set_cosigning(
            &mut conn,
            &acme,
            &alice,
            &cosign(mode, Some(ENDPOINT)),
            PlatformCertificate::Missing,
            |_| true,
        )
        .await;
        assert!(
            matches!(result, Err(SettingsError::ProvisioningIncomplete)),
            "{mode:?}: {result:?}"
        );
    }
    assert_eq!(settings_rows(&mut conn).await, 0);
    assert!(audit(&mut conn).await.is_empty());

    // Disabled needs no certificate; it was already the mode, so it is no change.
    let cosigning = settings::set_cosigning(
        &mut conn,
        &acme,
        &alice,
        &cosign(CosigningMode::Disabled, None),
        PlatformCertificate::Missing,
        |_| true,
    )
    .await
    .unwrap();
    assert_eq!(cosigning.mode, CosigningMode::Disabled);
    assert!(!cosigning.platform_provisioned);
    assert!(audit(&mut conn).await.is_empty());
}

#[tokio::test]
async fn cosigning_needs_an_https_endpoint_and_audits_each_change() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let (alice, bob) = (user("alice"), user("bob"));

    for (update, why) in [
        (cosign(CosigningMode::Required, None), "is required"),
        (
            cosign(CosigningMode::Required, Some("http://cosign.acme.example")),
            "must use https",
        ),
        (
            cosign(CosigningMode::Optional, Some("cosign.acme.example/sign")),
            "is not an absolute URL",
        ),
        (
            cosign(
                CosigningMode::Required,
                Some("https://user:pw@cosign.acme.example"),
            ),
            "must not carry credentials",
        ),
        // Even a disabled mode refuses a bad endpoint.
        (
            cosign(CosigningMode::Disabled, Some("ftp://cosign.acme.example")),
            "must use https",
        ),
    ] {
        let result = settings::set_cosigning(
            &mut conn,
            &acme,
            &alice,
            &update,
            PlatformCertificate::Provisioned,
            |_| true,
        )
        .await;
        match result {
            Err(SettingsError::InvalidEndpoint(message)) => {
                assert!(message.starts_with(why), "{update:?}: {message}");
            }
            other => panic!("{update:?}: expected InvalidEndpoint, got {other:?}"),
        }
    }
    assert_eq!(settings_rows(&mut conn).await, 0);
    assert!(audit(&mut conn).await.is_empty());

    let cosigning = settings::set_cosigning(
        &mut conn,
        &acme,
        &alice,
        &cosign(CosigningMode::Required, Some(ENDPOINT)),
        PlatformCertificate::Provisioned,
        |_| true,
    )
    .await
    .unwrap();
    assert_eq!(cosigning.tenant_id, "acme");
    assert_eq!(cosigning.mode, CosigningMode::Required);
    assert_eq!(cosigning.endpoint_url.as_deref(), Some(ENDPOINT));
    assert!(cosigning.platform_provisioned);
    assert_eq!(cosigning.updated_by.as_deref(), Some("alice"));
    assert!(cosigning.updated_at.is_some());
    let entries = audit(&mut conn).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].event, events::COSIGNING_CHANGED.as_str());
    assert_eq!(entries[0].event, "cosigning_changed");
    assert_eq!(entries[0].actor, "alice");
    assert_eq!(
        entries[0].details,
        json!({ "from_mode": "disabled", "mode": "required", "endpoint_host": "cosign.acme.example" }),
        "the host only: any user reads the audit log, and a path may hold what only admins see"
    );

    // The same decision again is no change.
    settings::set_cosigning(
        &mut conn,
        &acme,
        &bob,
        &cosign(CosigningMode::Required, Some(ENDPOINT)),
        PlatformCertificate::Provisioned,
        |_| true,
    )
    .await
    .unwrap();
    assert_eq!(audit(&mut conn).await.len(), 1);

    // Another endpoint, then another mode, then off: three changes.
    let other = "https://cosign2.acme.example/sign";
    for update in [
        cosign(CosigningMode::Required, Some(other)),
        cosign(CosigningMode::Optional, Some(other)),
        cosign(CosigningMode::Disabled, None),
    ] {
        settings::set_cosigning(
            &mut conn,
            &acme,
            &bob,
            &update,
            PlatformCertificate::Provisioned,
            |_| true,
        )
        .await
        .unwrap();
    }
    let entries = audit_of(&mut conn, "acme", events::COSIGNING_CHANGED).await;
    let details: Vec<&Value> = entries.iter().map(|e| &e.details).collect();
    assert_eq!(
        details[1..],
        [
            &json!({ "from_mode": "required", "mode": "required", "endpoint_host": "cosign2.acme.example" }),
            &json!({ "from_mode": "required", "mode": "optional", "endpoint_host": "cosign2.acme.example" }),
            &json!({ "from_mode": "optional", "mode": "disabled", "endpoint_host": null }),
        ]
    );
    assert!(entries[1..].iter().all(|e| e.actor == "bob"));

    let cosigning = settings::cosigning(&mut conn, &acme, PlatformCertificate::Missing)
        .await
        .unwrap();
    assert_eq!(cosigning.mode, CosigningMode::Disabled);
    assert_eq!(cosigning.endpoint_url, None);
    assert!(!cosigning.platform_provisioned);
    assert_eq!(cosigning.updated_by.as_deref(), Some("bob"));
}

#[tokio::test]
async fn the_gate_denies_only_the_enforceable_classes_the_tenant_denies() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let globex = tenant("globex");
    let alice = user("alice");

    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["destructive", "infrastructure"] }),
    )
    .await
    .unwrap();
    let expected = [
        (SafetyClass::ReadOnly, Gate::Allowed),
        (SafetyClass::Reversible, Gate::Allowed),
        (SafetyClass::Destructive, Gate::Denied),
        // Denied, but not enforced yet: accepted in the list, not gated.
        (SafetyClass::Infrastructure, Gate::Allowed),
        (SafetyClass::Governance, Gate::Allowed),
        (SafetyClass::InlineRuntime, Gate::Allowed),
    ];
    for (class, gate) in expected {
        let got = settings::remediation_gate(&mut conn, &acme, class).await;
        assert_eq!(got, gate, "{class:?}");
        assert_eq!(got.permits(), gate != Gate::Denied);
    }

    // Deny every class: exactly the enforceable ones are denied.
    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": SafetyClass::ALL.map(SafetyClass::as_str) }),
    )
    .await
    .unwrap();
    for class in SafetyClass::ALL {
        let gate = settings::remediation_gate(&mut conn, &acme, class).await;
        let enforced = ENFORCEABLE_SAFETY_CLASSES.contains(&class);
        assert_eq!(
            gate,
            if enforced {
                Gate::Denied
            } else {
                Gate::Allowed
            },
            "{class:?}"
        );
        assert_eq!(gate.permits(), !enforced);
        // Another tenant's policy never applies.
        assert_eq!(
            settings::remediation_gate(&mut conn, &globex, class).await,
            Gate::Allowed
        );
    }
}

#[tokio::test]
async fn the_gate_fails_open_when_the_policy_table_cannot_be_read() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");
    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["destructive", "reversible"] }),
    )
    .await
    .unwrap();
    assert_eq!(
        settings::remediation_gate(&mut conn, &acme, SafetyClass::Destructive).await,
        Gate::Denied
    );

    // This test's own database: the settings table disappears from under the gate.
    diesel::sql_query("ALTER TABLE tenant_settings RENAME TO tenant_settings_away")
        .execute(&mut conn)
        .await
        .unwrap();
    let gate = settings::remediation_gate(&mut conn, &acme, SafetyClass::Destructive).await;
    assert_eq!(gate, Gate::AllowedPolicyUnreadable);
    assert!(gate.permits());
    assert_eq!(
        settings::remediation_gate(&mut conn, &acme, SafetyClass::Reversible).await,
        Gate::AllowedPolicyUnreadable
    );
    // A class whose denial is not enforced needs no policy at all.
    assert_eq!(
        settings::remediation_gate(&mut conn, &acme, SafetyClass::Governance).await,
        Gate::Allowed
    );
    // The readers report what the gate swallowed.
    let read = settings::remediation_policy(&mut conn, &acme).await;
    assert!(matches!(read, Err(SettingsError::Database(_))), "{read:?}");

    // Readable again, the same policy denies again: the policy was intact, only unreadable.
    diesel::sql_query("ALTER TABLE tenant_settings_away RENAME TO tenant_settings")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        settings::remediation_gate(&mut conn, &acme, SafetyClass::Destructive).await,
        Gate::Denied
    );
}

#[tokio::test]
async fn the_gate_fails_open_when_access_to_the_policy_is_revoked() {
    let (db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");
    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["read_only"] }),
    )
    .await
    .unwrap();

    // A role of this test's own database that may read everything but the settings.
    let role = format!("gate_{}", db.name);
    conn.batch_execute(&format!(
        "CREATE ROLE \"{role}\" NOLOGIN;
         GRANT SELECT ON ALL TABLES IN SCHEMA public TO \"{role}\";
         REVOKE ALL ON tenant_settings FROM \"{role}\";"
    ))
    .await
    .unwrap();
    diesel::sql_query(format!("SET ROLE \"{role}\""))
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        settings::remediation_gate(&mut conn, &acme, SafetyClass::ReadOnly).await,
        Gate::AllowedPolicyUnreadable
    );
    diesel::sql_query("RESET ROLE")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        settings::remediation_gate(&mut conn, &acme, SafetyClass::ReadOnly).await,
        Gate::Denied
    );
    conn.batch_execute(&format!(
        "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM \"{role}\"; DROP ROLE \"{role}\";"
    ))
    .await
    .unwrap();
}

#[tokio::test]
async fn the_gate_fails_open_on_a_session_whose_transaction_has_aborted() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");
    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["destructive"] }),
    )
    .await
    .unwrap();

    diesel::sql_query("BEGIN").execute(&mut conn).await.unwrap();
    assert!(
        diesel::sql_query("SELECT 1/0")
            .execute(&mut conn)
            .await
            .is_err()
    );
    let gate = settings::remediation_gate(&mut conn, &acme, SafetyClass::Destructive).await;
    assert_eq!(gate, Gate::AllowedPolicyUnreadable);
    assert!(gate.permits());
}

#[tokio::test]
async fn a_change_whose_audit_entry_cannot_be_written_is_not_applied() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");

    // Every new audit row now violates a constraint.
    diesel::sql_query("ALTER TABLE audit_log ADD CONSTRAINT no_more_audit CHECK (false) NOT VALID")
        .execute(&mut conn)
        .await
        .unwrap();
    let lkg = settings::set_lkg_retention(&mut conn, &acme, &alice, 168).await;
    assert!(matches!(lkg, Err(SettingsError::Database(_))), "{lkg:?}");
    let policy = settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["destructive"] }),
    )
    .await;
    assert!(
        matches!(policy, Err(SettingsError::Database(_))),
        "{policy:?}"
    );
    let cosigning = settings::set_cosigning(
        &mut conn,
        &acme,
        &alice,
        &cosign(CosigningMode::Required, Some(ENDPOINT)),
        PlatformCertificate::Provisioned,
        |_| true,
    )
    .await;
    assert!(
        matches!(cosigning, Err(SettingsError::Database(_))),
        "{cosigning:?}"
    );

    // The changes went with their audit entries.
    assert_eq!(settings_rows(&mut conn).await, 0);
    assert_eq!(
        settings::lkg_retention(&mut conn, &acme)
            .await
            .unwrap()
            .retention_hours,
        72
    );
    assert_eq!(
        settings::remediation_gate(&mut conn, &acme, SafetyClass::Destructive).await,
        Gate::Allowed
    );
    assert_eq!(
        settings::cosigning(&mut conn, &acme, PlatformCertificate::Provisioned)
            .await
            .unwrap()
            .mode,
        CosigningMode::Disabled
    );
}

#[tokio::test]
async fn settings_belong_to_their_tenant_only() {
    let (_db, mut conn) = connect().await;
    let (acme, globex) = (tenant("acme"), tenant("globex"));
    let alice = user("alice");

    settings::set_lkg_retention(&mut conn, &acme, &alice, 168)
        .await
        .unwrap();
    settings::set_remediation_policy(
        &mut conn,
        &acme,
        &alice,
        &json!({ "denied_safety_classes": ["destructive"] }),
    )
    .await
    .unwrap();
    settings::set_cosigning(
        &mut conn,
        &acme,
        &alice,
        &cosign(CosigningMode::Optional, Some(ENDPOINT)),
        PlatformCertificate::Provisioned,
        |_| true,
    )
    .await
    .unwrap();

    let lkg = settings::lkg_retention(&mut conn, &globex).await.unwrap();
    assert_eq!(lkg.retention_hours, 72);
    assert_eq!(lkg.updated_by, None);
    assert!(lkg.change_log.is_empty());
    let policy = settings::remediation_policy(&mut conn, &globex)
        .await
        .unwrap();
    assert_eq!(policy.tenant_id, "globex");
    assert!(policy.denied_safety_classes.is_empty());
    assert_eq!(policy.updated_by, None);
    let cosigning = settings::cosigning(&mut conn, &globex, PlatformCertificate::Provisioned)
        .await
        .unwrap();
    assert_eq!(cosigning.tenant_id, "globex");
    assert_eq!(cosigning.mode, CosigningMode::Disabled);
    assert_eq!(cosigning.endpoint_url, None);
    assert_eq!(
        settings::remediation_gate(&mut conn, &globex, SafetyClass::Destructive).await,
        Gate::Allowed
    );

    // Globex's first change starts from the default, not from acme's value.
    let lkg = settings::set_lkg_retention(&mut conn, &globex, &alice, 24)
        .await
        .unwrap();
    assert_eq!(lkg.change_log.len(), 1);
    assert_eq!(lkg.change_log[0].from_hours, 72);
    let entries = audit(&mut conn).await;
    let tenants: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e.tenant_id.as_str(), e.event.as_str()))
        .collect();
    assert_eq!(
        tenants,
        [
            ("acme", "lkg_retention_changed"),
            ("acme", "remediation_policy_changed"),
            ("acme", "cosigning_changed"),
            ("globex", "lkg_retention_changed"),
        ]
    );
    // Acme's own view is untouched by globex's change.
    assert_eq!(
        settings::lkg_retention(&mut conn, &acme)
            .await
            .unwrap()
            .retention_hours,
        168
    );
}

/// When the settings row cannot be read, settings answers from its own history: the newest
/// change of each value, else the default. Nobody else reads its audit entries back.
#[tokio::test]
async fn an_unreadable_row_is_answered_from_the_settings_own_history() {
    let (_db, mut conn) = connect().await;
    let acme = tenant("acme");
    let alice = user("alice");
    let unreadable: Result<settings::TenantSettings, SettingsError> =
        Err(SettingsError::Database(diesel::result::Error::NotFound));

    // Never changed: the defaults.
    assert_eq!(
        settings::history::retention_hours(&mut conn, &acme, &unreadable)
            .await
            .unwrap(),
        settings::LKG_RETENTION_DEFAULT_HOURS
    );
    let cosigning = settings::history::cosigning(
        &mut conn,
        &acme,
        &unreadable,
        PlatformCertificate::Provisioned,
    )
    .await
    .unwrap();
    assert_eq!(cosigning.mode, CosigningMode::Disabled);

    // Changed twice: the newest change is in force.
    settings::set_lkg_retention(&mut conn, &acme, &alice, 24)
        .await
        .unwrap();
    settings::set_lkg_retention(&mut conn, &acme, &alice, 168)
        .await
        .unwrap();
    settings::set_cosigning(
        &mut conn,
        &acme,
        &alice,
        &cosign(CosigningMode::Required, Some(ENDPOINT)),
        PlatformCertificate::Provisioned,
        |_| true,
    )
    .await
    .unwrap();
    assert_eq!(
        settings::history::retention_hours(&mut conn, &acme, &unreadable)
            .await
            .unwrap(),
        168
    );
    let cosigning = settings::history::cosigning(
        &mut conn,
        &acme,
        &unreadable,
        PlatformCertificate::Provisioned,
    )
    .await
    .unwrap();
    assert_eq!(
        cosigning.mode,
        CosigningMode::Required,
        "never read as disabled"
    );

    // A readable row is the answer, whatever the history says.
    let read = settings::read(&mut conn, &acme).await;
    assert_eq!(
        settings::history::retention_hours(&mut conn, &acme, &read)
            .await
            .unwrap(),
        168
    );
    // Another tenant's history is not this one's.
    assert_eq!(
        settings::history::retention_hours(&mut conn, &tenant("globex"), &unreadable)
            .await
            .unwrap(),
        settings::LKG_RETENTION_DEFAULT_HOURS
    );
}

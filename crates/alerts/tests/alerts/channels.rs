use alerts::channels::{self, ChannelError, NewChannel};
use paging::Limit;
use policies::document::Syntax;

use crate::{Env, acme, admin, globex};

const URL: &str = "https://hooks.example.com/services/T0/B0/tok3n";

#[tokio::test]
async fn a_channel_keeps_its_url_and_secret_sealed_and_shows_the_secret_once() {
    let mut env = Env::new().await;
    let secret = env.channel(&acme(), "security").await;
    assert!(
        secret.starts_with("whsec_") && secret.len() == 70,
        "{secret}"
    );
    let page = channels::list(
        &mut env.conn,
        &env.keyring,
        &acme(),
        paging::PageRequest {
            cursors: &env.cursors,
            limit: Limit::parse(None, 20).unwrap(),
            cursor: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].url, URL);
    assert_eq!(page.items[0].name, "security");
    // Neither the URL's token nor the secret is in any table.
    let dump = testkit::pg_dump(&env._db);
    assert!(
        !dump.contains("tok3n"),
        "the webhook URL is stored in clear"
    );
    assert!(
        !dump.contains(&secret[6..]),
        "the secret is stored in clear"
    );
    assert!(
        dump.contains("hooks.example.com"),
        "the host is kept for the audit"
    );
    // Another tenant sees nothing.
    let theirs = channels::list(
        &mut env.conn,
        &env.keyring,
        &globex(),
        paging::PageRequest {
            cursors: &env.cursors,
            limit: Limit::parse(None, 20).unwrap(),
            cursor: None,
        },
    )
    .await
    .unwrap();
    assert!(theirs.items.is_empty());
}

#[tokio::test]
async fn a_bad_channel_names_every_problem() {
    let mut env = Env::new().await;
    let strict = egress::Egress::default();
    let outcome = channels::create(
        &mut env.conn,
        &env.keyring,
        &strict,
        &acme(),
        &admin(),
        NewChannel {
            name: "Bad Name",
            kind: "email",
            url: "https://169.254.169.254/latest",
        },
    )
    .await;
    let Err(ChannelError::Invalid(problems)) = outcome else {
        panic!("{outcome:?}");
    };
    let fields: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(fields, ["/name", "/type", "/url"]);
    for url in [
        "http://hooks.example.com/x",
        "https://127.0.0.1/x",
        "https://10.0.0.8/x",
    ] {
        let outcome = channels::create(
            &mut env.conn,
            &env.keyring,
            &strict,
            &acme(),
            &admin(),
            NewChannel {
                name: "ok",
                kind: "webhook",
                url,
            },
        )
        .await;
        assert!(matches!(outcome, Err(ChannelError::Invalid(_))), "{url}");
    }
    env.channel(&acme(), "ok").await;
    let again = channels::create(
        &mut env.conn,
        &env.keyring,
        &env.egress,
        &acme(),
        &admin(),
        NewChannel {
            name: "ok",
            kind: "webhook",
            url: URL,
        },
    )
    .await;
    assert!(
        matches!(again, Err(ChannelError::DuplicateName)),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_channel_that_policies_alert_cannot_be_deleted() {
    let mut env = Env::new().await;
    env.channel(&acme(), "security").await;
    let body = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: alerts }
spec:
  mode: enforced
  conditions: [{ category: email, min_confidence: 0.9 }]
  actions: [{ type: alert, config: { channels: [security], severity: medium } }]
";
    let policy = policies::store::create(
        &mut env.conn,
        &acme(),
        &admin(),
        body.as_bytes(),
        Syntax::Yaml,
    )
    .await
    .unwrap();
    let outcome = channels::delete(&mut env.conn, &acme(), &admin(), "security").await;
    let Err(ChannelError::InUse(names)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(names, ["alerts"]);
    assert!(matches!(
        channels::delete(&mut env.conn, &globex(), &admin(), "security").await,
        Err(ChannelError::NotFound)
    ));
    policies::store::delete(&mut env.conn, &acme(), &admin(), policy.summary.id)
        .await
        .unwrap();
    channels::delete(&mut env.conn, &acme(), &admin(), "security")
        .await
        .unwrap();
    assert!(matches!(
        channels::delete(&mut env.conn, &acme(), &admin(), "security").await,
        Err(ChannelError::NotFound)
    ));
    assert_eq!(
        env.audit_kinds(&acme()).await,
        [
            "channel_created",
            "policy_created",
            "policy_deleted",
            "channel_deleted"
        ]
    );
}

/// A policy created while its channel is being deleted: the creation waits for the delete and
/// is then refused for naming a channel that is gone, rather than an enforced policy whose
/// alerts go nowhere.
#[tokio::test]
async fn a_policy_created_during_its_channels_delete_is_refused() {
    use diesel::sql_types::Text;
    use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
    let mut env = Env::new().await;
    env.channel(&acme(), "security").await;
    let mut deleter = env.connect().await;
    let (locked_tx, locked_rx) = tokio::sync::oneshot::channel::<()>();
    let (created_tx, created_rx) = tokio::sync::oneshot::channel::<bool>();
    let mut creator = env.connect().await;
    let create = tokio::spawn(async move {
        locked_rx.await.unwrap();
        let body = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: alerts }
spec:
  mode: enforced
  conditions: [{ category: email, min_confidence: 0.9 }]
  actions: [{ type: alert, config: { channels: [security], severity: medium } }]
";
        let outcome = policies::store::create(
            &mut creator,
            &acme(),
            &admin(),
            body.as_bytes(),
            Syntax::Yaml,
        )
        .await;
        let _ = created_tx.send(outcome.is_ok());
        outcome.is_ok()
    });
    // The delete's first step (as channels::delete takes it), then the delete, committed
    // while the creation runs.
    deleter
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::sql_query(
                "SELECT host FROM governance_channels WHERE tenant_id = $1 AND name = 'security' FOR UPDATE",
            )
            .bind::<Text, _>(acme().as_str())
            .execute(conn)
            .await?;
            locked_tx.send(()).unwrap();
            // The creation either finishes meanwhile (not waiting on the channel) or waits.
            let early = tokio::time::timeout(std::time::Duration::from_millis(500), created_rx).await;
            assert!(early.is_err(), "the creation did not wait for the channel's delete");
            diesel::sql_query("DELETE FROM governance_channels WHERE tenant_id = $1 AND name = 'security'")
                .bind::<Text, _>(acme().as_str())
                .execute(conn)
                .await?;
            Ok(())
        })
        .await
        .unwrap();
    assert!(!create.await.unwrap(), "a policy naming a deleted channel");
    assert_eq!(
        env.count("SELECT count(*) AS n FROM governance_policies")
            .await,
        0
    );
}

#[tokio::test]
async fn creates_of_a_tenant_are_counted_one_at_a_time() {
    use diesel_async::SimpleAsyncConnection as _;
    let mut env = Env::new().await;
    for i in 0..channels::MAX_PER_TENANT - 1 {
        env.channel(&acme(), &format!("c{i}")).await;
    }
    // Another create of the tenant's holds the count: this one waits for it, so that two at
    // 49 cannot both see room for one more.
    let mut holder = env.connect().await;
    holder
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(hashtext('dps-channels:acme'))")
        .await
        .unwrap();
    let mut conn = env.connect().await;
    let (keyring, egress) = (env.keyring.clone(), env.egress);
    let pending = tokio::spawn(async move {
        channels::create(
            &mut conn,
            &keyring,
            &egress,
            &acme(),
            &admin(),
            NewChannel {
                name: "last",
                kind: "webhook",
                url: URL,
            },
        )
        .await
        .map(drop)
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !pending.is_finished(),
        "the count must wait for the other create"
    );
    holder.batch_execute("COMMIT").await.unwrap();
    pending.await.unwrap().unwrap();
    // At the limit, the next is refused.
    let refused = channels::create(
        &mut env.conn,
        &env.keyring.clone(),
        &env.egress.clone(),
        &acme(),
        &admin(),
        NewChannel {
            name: "one-too-many",
            kind: "webhook",
            url: URL,
        },
    )
    .await;
    assert!(matches!(refused, Err(ChannelError::TooMany)), "{refused:?}");
}

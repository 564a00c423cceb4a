//! Two `tokens-api` processes on one database, as deployed behind a load balancer. What one
//! replica decides, the other must honour: a grant is used once across both, a rate limit's
//! budget is one budget, and the kill switch stops both within a second.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use diesel_async::AsyncConnection as _;
use serde_json::{Value, json};
use testkit::ServiceProcess;

mod support;

use support::token;

/// Two replicas over one fresh database, and what a client needs to call them.
struct Replicas {
    bases: [String; 2],
    http: reqwest::Client,
    api_key: String,
    db: testkit::TestDatabase,
    _processes: [ServiceProcess; 2],
}

impl Replicas {
    async fn start(rate_limits: &str) -> Self {
        let db = testkit::database().await;
        let api_key = support::api_key(&db).await;
        let (mut env, _) = support::env(&db, 7);
        env.insert("DPS_RATE_LIMITS".into(), rate_limits.into());
        env.insert("HTTP_WORKERS".into(), "2".into());
        let processes = [
            ServiceProcess::start(env!("CARGO_BIN_EXE_tokens-api"), &env),
            ServiceProcess::start(env!("CARGO_BIN_EXE_tokens-api"), &env),
        ];
        Self {
            bases: processes
                .each_ref()
                .map(|p| format!("{}/api/v1/tokens", p.origin)),
            http: support::client(),
            api_key,
            db,
            _processes: processes,
        }
    }

    /// Replica `n % 2`'s URL for `path`.
    fn url(&self, n: usize, path: &str) -> String {
        format!("{}{path}", self.bases[n % 2])
    }

    /// A policy (through replica 0), and one SSN tokenized under it (through replica 1): the
    /// policy's id and the token's.
    async fn tokenized(&self) -> (String, String) {
        let policy = support::ssn_policy(&self.http, &self.bases[0], "randomized").await;
        let id = support::tokenized_ssn(
            &self.http,
            &self.bases[1],
            &self.api_key,
            &policy,
            "523-45-6781",
        )
        .await;
        (policy, id)
    }
}

fn acme() -> ids::TenantId {
    "acme".parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_concurrent_uses_of_one_grant_over_two_replicas_reveal_once_in_every_trial() {
    let replicas = Replicas::start("detokenize=100000/100000,grant=100000/100000").await;
    let (_, id) = replicas.tokenized().await;
    let sam = token("sam", &["support"]);
    for trial in 0..20 {
        let grant: Value = replicas
            .http
            .post(replicas.url(trial, "/grant"))
            .bearer_auth(&sam)
            .json(&json!({ "token_ids": [id], "purpose": "audit" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let grant_jwt = grant["grant_jwt"].as_str().unwrap().to_owned();
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..50 {
            let request = replicas
                .http
                .post(replicas.url(n, "/detokenize"))
                .bearer_auth(&sam)
                .json(&json!({ "tokens": [id], "grant_jwt": grant_jwt }));
            tasks.spawn(async move {
                let response = request.send().await.unwrap();
                (
                    response.status().as_u16(),
                    response.json::<Value>().await.unwrap(),
                )
            });
        }
        let mut granted = 0;
        while let Some(result) = tasks.join_next().await {
            let (status, body) = result.unwrap();
            match status {
                200 => {
                    assert_eq!(body["results"][0]["value"], "523456781", "{body}");
                    granted += 1;
                }
                403 => assert_eq!(body["error"]["code"], "GRANT_NONCE_REUSED", "{body}"),
                other => panic!("trial {trial}: unexpected {other}: {body}"),
            }
        }
        assert_eq!(granted, 1, "trial {trial}");
    }
}

/// What a burst of requests spread over both replicas got: the requests that were let
/// through, and how many rate-limit windows the burst touched (a window can end mid-burst).
struct Burst {
    accepted: usize,
    windows: usize,
}

async fn burst(replicas: &Replicas, users: &[&str], per_user: usize) -> Burst {
    let mut tasks = tokio::task::JoinSet::new();
    for user in users {
        let bearer = token(user, &["analyst"]);
        for n in 0..per_user {
            let request = replicas
                .http
                .get(replicas.url(n, "/usage"))
                .bearer_auth(&bearer);
            tasks.spawn(async move { request.send().await.unwrap() });
        }
    }
    let mut accepted = 0;
    let mut resets = BTreeSet::new();
    while let Some(response) = tasks.join_next().await {
        let response = response.unwrap();
        match response.status().as_u16() {
            429 => {}
            200 => accepted += 1,
            other => panic!("unexpected {other}: {}", response.text().await.unwrap()),
        }
        if let Some(reset) = response.headers().get("x-ratelimit-reset") {
            resets.insert(reset.to_str().unwrap().to_owned());
        }
    }
    Burst {
        accepted,
        windows: resets.len().max(1),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_one_budget_over_both_replicas() {
    // Per user 5 a minute, per tenant 8.
    let replicas = Replicas::start("usage=5/8").await;

    // One user, 20 requests alternating between the replicas: 5 get through.
    let one = burst(&replicas, &["ursula"], 20).await;
    assert!(
        one.accepted <= 5 * one.windows && one.accepted >= 5,
        "{} accepted over {} windows",
        one.accepted,
        one.windows
    );

    // Four more users, 5 each: the tenant's 8 bind them together (ursula spent 5 of them).
    let many = burst(&replicas, &["vera", "walt", "xena", "yuri"], 5).await;
    let tenant_total = one.accepted + many.accepted;
    let windows = one.windows.max(many.windows);
    assert!(
        tenant_total <= 8 * windows,
        "{tenant_total} accepted for the tenant over {windows} windows"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kill_switch_stops_both_replicas_within_a_second() {
    let replicas = Replicas::start("tokenize=100000/100000").await;
    let (policy, _) = replicas.tokenized().await;
    let tokenize = |n: usize| {
        replicas
            .http
            .post(replicas.url(n, "/tokenize"))
            .header("X-API-Key", &replicas.api_key)
            .json(&json!({
                "policy_id": policy,
                "items": [{ "value": "523-45-6781", "pii_type": "us_ssn" }]
            }))
            .send()
    };
    let mut conn = db::AsyncPgConnection::establish(&replicas.db.url)
        .await
        .unwrap();

    // Both replicas have served the tenant, so both hold a cached "off".
    for n in 0..2 {
        let status = tokenize(n).await.unwrap().status().as_u16();
        assert_eq!(status, 200, "replica {n} before the switch");
    }
    limits::set_kill_switch(&mut conn, Some(&acme()), limits::Switch::On, "test")
        .await
        .unwrap();
    let switched = Instant::now();
    let mut stopped = [None, None];
    while stopped.iter().any(Option::is_none) && switched.elapsed() < Duration::from_secs(3) {
        for (n, at) in stopped.iter_mut().enumerate() {
            if at.is_none() && tokenize(n).await.unwrap().status() == 503 {
                *at = Some(switched.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for (n, at) in stopped.iter().enumerate() {
        let at = at.unwrap_or_else(|| panic!("replica {n} never stopped"));
        assert!(
            at <= Duration::from_secs(1),
            "replica {n} stopped after {at:?}"
        );
    }
}

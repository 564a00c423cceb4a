//! The tokenize request body as a fuzz target, through the real service: 10,000 generated
//! bodies (well-formed, half-formed and arbitrary text) are posted with `dry_run=true`. Each
//! gets an answer in the spec's shape, never a server error: a 200 whose results match the
//! items one for one, or a 4xx with an error code. Nothing is written.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::tokenize::{Tokens, all_modes_policy};

struct Fixture {
    runtime: tokio::runtime::Runtime,
    tokens: Tokens,
    policy: String,
}

/// One tokens-api for every case, with the rate limits lifted.
static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tokens = runtime.block_on(Tokens::spawn_with(|env| {
        env.insert(
            "DPS_RATE_LIMITS".into(),
            "tokenize=100000000/100000000".into(),
        );
    }));
    let policy = runtime.block_on(tokens.policy(all_modes_policy()));
    Fixture {
        runtime,
        tokens,
        policy,
    }
});

const TYPES: [&str; 12] = [
    "us_ssn",
    "ca_sin",
    "email",
    "phone",
    "dob",
    "date",
    "monetary",
    "case_number",
    "passport_us",
    "passport_ca",
    "US_SSN",
    "ssn",
];

/// Any JSON value, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "\\PC{0,24}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value as a client might send one: shaped like a PII value, or anything.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[0-9]{3}-?[0-9]{2}-?[0-9]{4}".prop_map(Value::String),
        "[0-9 ]{9,11}".prop_map(Value::String),
        "[a-z.+]{1,12}@[a-z]{1,8}\\.[a-z]{2,4}".prop_map(Value::String),
        "\\+?[0-9 ().-]{7,16}".prop_map(Value::String),
        "(19|20)[0-9]{2}-[0-9]{2}-[0-9]{2}|[A-Za-z]{3,9} [0-9]{1,2},? [0-9]{4}"
            .prop_map(Value::String),
        "[$€]?[0-9,]{1,12}(\\.[0-9]{2})?( [A-Z]{3})?".prop_map(Value::String),
        "[A-Z]{2}[0-9]{6,9}".prop_map(Value::String),
        "\\PC{0,40}".prop_map(Value::String),
        any_json(),
    ]
}

fn item() -> impl Strategy<Value = Value> {
    (
        value(),
        prop_oneof![
            prop::sample::select(TYPES.as_slice()).prop_map(|t| json!(t)),
            any_json()
        ],
        prop::option::of(prop_oneof![
            prop::sample::select(&["deterministic", "randomized", "format_preserving", "fpe"][..])
                .prop_map(|m| json!(m)),
            any_json()
        ]),
        prop::option::of(("[a-z_]{1,8}", any_json())),
    )
        .prop_map(|(value, pii_type, mode, extra)| {
            let mut item = Map::new();
            item.insert("value".into(), value);
            item.insert("pii_type".into(), pii_type);
            if let Some(mode) = mode {
                item.insert("mode".into(), mode);
            }
            if let Some((key, extra)) = extra {
                item.insert(key, extra);
            }
            Value::Object(item)
        })
}

/// A well-formed request: the fixture's policy, 1 to 6 items with string values shaped like
/// PII (or not), known types and modes. Items may still fail one by one.
fn well_formed() -> impl Strategy<Value = String> {
    let item = (
        value().prop_filter("a string value", Value::is_string),
        prop::sample::select(&TYPES[..10]),
        prop::option::of(prop::sample::select(
            &["deterministic", "randomized", "format_preserving"][..],
        )),
    )
        .prop_map(|(value, pii_type, mode)| {
            let mut item = json!({ "value": value, "pii_type": pii_type });
            if let Some(mode) = mode {
                item["mode"] = json!(mode);
            }
            item
        });
    (
        prop::collection::vec(item, 1..6),
        prop::option::of(prop::sample::select(&["ALL_OR_NOTHING", "BEST_EFFORT"][..])),
    )
        .prop_map(|(items, batch_mode)| {
            let mut body = json!({ "policy_id": FIXTURE.policy, "items": items });
            if let Some(mode) = batch_mode {
                body["batch_mode"] = json!(mode);
            }
            body.to_string()
        })
}

/// A body: a well-formed request, one built from plausible and implausible parts, or any
/// text at all.
fn body() -> impl Strategy<Value = String> {
    let request = (
        0u8..4,
        prop::collection::vec(item(), 0..6),
        prop::option::of(prop_oneof![
            prop::sample::select(&["ALL_OR_NOTHING", "BEST_EFFORT", "best_effort"][..])
                .prop_map(|m| json!(m)),
            any_json()
        ]),
        prop::option::of(prop_oneof![
            "\\PC{0,300}".prop_map(Value::String),
            any_json()
        ]),
        prop::option::of(("[a-z_]{1,10}", any_json())),
    )
        .prop_map(|(policy, items, batch_mode, key, extra)| {
            let mut body = Map::new();
            match policy {
                0 => {
                    body.insert("policy_id".into(), json!(FIXTURE.policy));
                }
                1 => {
                    body.insert("policy_id".into(), json!(uuid::Uuid::new_v4().to_string()));
                }
                2 => {
                    body.insert("policy_id".into(), json!(42));
                }
                _ => {}
            }
            body.insert("items".into(), Value::Array(items));
            if let Some(mode) = batch_mode {
                body.insert("batch_mode".into(), mode);
            }
            if let Some(key) = key {
                body.insert("idempotency_key".into(), key);
            }
            if let Some((name, value)) = extra {
                body.insert(name, value);
            }
            Value::Object(body).to_string()
        });
    prop_oneof![
        5 => well_formed(),
        4 => request,
        1 => "\\PC{0,200}",
        1 => any_json().prop_map(|v| v.to_string()),
    ]
}

async fn post(body: String) -> (u16, Value) {
    let tokens = &FIXTURE.tokens;
    let response = tokens
        .app
        .http
        .post(tokens.app.url("/tokenize?dry_run=true"))
        .header("X-API-Key", &tokens.api_key)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[test]
fn any_tokenize_body_gets_an_answer_in_the_spec_shape_and_writes_nothing() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(10_000));
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let outcome = runner.run(&body(), |body| {
        let (status, answer) = FIXTURE.runtime.block_on(post(body.clone()));
        if status == 200 {
            answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        prop_assert!(status < 500, "{status} for {body}: {answer}");
        if status == 200 {
            let sent: Value = serde_json::from_str(&body).unwrap();
            let items = sent["items"].as_array().map_or(0, Vec::len);
            let results = answer["results"].as_array().map_or(0, Vec::len);
            prop_assert_eq!(results, items, "{}", answer);
            let counted = answer["success_count"].as_u64().unwrap_or(0)
                + answer["failure_count"].as_u64().unwrap_or(0);
            prop_assert_eq!(counted, items as u64, "{}", answer);
        } else {
            prop_assert!(
                answer["error"]["code"].is_string(),
                "{status} for {body}: {answer}"
            );
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    // The bodies reach the vault's preparation, not only the parser's refusals.
    let answered = answered.into_inner();
    assert!(
        answered >= 1000,
        "only {answered} of 10,000 bodies were tokenized"
    );
    let entries = FIXTURE.runtime.block_on(FIXTURE.tokens.entries());
    assert_eq!(entries, 0, "a dry run wrote vault entries");
}

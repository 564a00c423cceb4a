//! Tenant isolation, route by route. Two tenants are seeded with one of everything both
//! services keep: tokenization policies, tokens, detokenization audit, connectors,
//! classifiers, alert channels, governance policies, scans, findings, drift events,
//! reconciliations and remediations. Then:
//! - every by-id route of both services, called by the other tenant's admin with this
//!   tenant's id, answers 404 and changes nothing. The routes come from the services' own
//!   route tables, so a new by-id route fails this test until it is covered;
//! - every list, read by each tenant, holds none of the other's ids;
//! - a `tenant_id` in a request body never changes which tenant is acted on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use object_store::ObjectStoreExt as _;
use reqwest::Method;
use serde_json::{Value, json};
use testkit::seed;

use crate::Client;
use crate::remediation::{Stack, ended, policy_of};

/// What one tenant owns, by kind.
#[derive(Debug, Default)]
struct Owned {
    tenant: &'static str,
    token_policy: String,
    token_id: String,
    connector: String,
    classifier: String,
    channel: String,
    policy: String,
    scan: String,
    finding: String,
    drift_event: String,
    reconciliation: String,
    remediation: String,
}

impl Owned {
    /// Every id, for the lists' check.
    fn ids(&self) -> BTreeSet<&str> {
        [
            &self.token_policy,
            &self.token_id,
            &self.connector,
            &self.classifier,
            &self.channel,
            &self.policy,
            &self.scan,
            &self.finding,
            &self.drift_event,
            &self.reconciliation,
            &self.remediation,
        ]
        .into_iter()
        .map(String::as_str)
        .collect()
    }

    /// The id that fills `route`'s parameter.
    fn id_for(&self, route: &str) -> &str {
        let kinds: [(&str, &String); 12] = [
            ("/tokens/policies/", &self.token_policy),
            ("/tokens/vault/", &self.token_id),
            ("/classifiers/", &self.classifier),
            ("/connectors/", &self.connector),
            ("/findings/", &self.finding),
            ("/governance/channels/", &self.channel),
            ("/governance/drift-events/", &self.drift_event),
            ("/governance/policies/", &self.policy),
            ("/governance/reconciliations/", &self.reconciliation),
            ("/governance/remediations/", &self.remediation),
            ("/scans/", &self.scan),
            ("/tokens/", &self.token_id),
        ];
        kinds
            .iter()
            .find(|(prefix, _)| route.contains(prefix))
            .map(|(_, id)| id.as_str())
            .unwrap_or_else(|| panic!("no seeded id for {route}: cover it in this test"))
    }
}

/// A valid body for each route that takes one, so that a 404 comes from the tenant's scope and
/// not from the body's validation.
fn body_for(method: &Method, route: &str) -> Option<Value> {
    let body = match (method.as_str(), route) {
        ("PUT", r) if r.ends_with("/tokens/policies/{id}") => json!({
            "name": "renamed",
            "type_rules": { "us_ssn": { "mode": "format_preserving" } },
            "allowed_roles": ["support"],
            "allowed_purposes": ["fraud_review"]
        }),
        ("DELETE", r) if r.ends_with("/tokens/vault/{token_id}") => json!({ "reason": "test" }),
        ("PUT", r) if r.ends_with("/classifiers/{id}") => json!({
            "name": "employee_id", "category": "personal", "regex": "EMP-[0-9]{6}"
        }),
        ("PUT", r) if r.ends_with("/governance/policies/{id}") => json!({
            "apiVersion": "governance.dps/v1", "kind": "Policy",
            "metadata": { "name": "renamed" },
            "spec": { "mode": "dry-run",
                      "conditions": [{ "category": "contact", "min_confidence": 0.5 }],
                      "actions": [{ "type": "mask", "config": { "keep_last": 4 } }] }
        }),
        ("POST", r) if r.ends_with("/scan") => json!({ "type": "full" }),
        ("POST", r) if r.ends_with("/acknowledge") => json!({ "note": "seen" }),
        ("POST", r) if r.ends_with("/undo") => json!({ "force": true }),
        _ => return None,
    };
    Some(body)
}

async fn seed_tenant(stack: &Stack, tenant: &'static str) -> Owned {
    let admin = Client {
        app: &stack.platform,
        token: stack.platform.token(tenant, "ann", &["admin"]),
    };
    let tokens_admin = stack.tokens.app.token(tenant, "ann", &["admin", "support"]);
    let tokens = Client {
        app: &stack.tokens.app,
        token: tokens_admin,
    };
    let bucket_name = format!("{tenant}-data");
    let bucket = seed::s3_bucket(&stack.moto.url(), &bucket_name).await;
    seed::put_all(
        bucket.as_ref(),
        &[
            ("people.csv", crate::remediation::PEOPLE),
            ("contacts.txt", b"write to ann.lee@example.com".as_slice()),
        ],
    )
    .await;

    // tokens-api: a policy, a token, a grant used once (an audit record).
    let (status, body) = tokens
        .send(
            Method::POST,
            "/policies",
            Some(json!({
                "name": "ssn-fpe",
                "type_rules": { "us_ssn": { "mode": "format_preserving" } },
                "allowed_roles": ["support"],
                "allowed_purposes": ["fraud_review"]
            })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let token_policy = body["policy_id"].as_str().unwrap().to_owned();
    let api_key = crate::tokenize::api_key(&stack.tokens.app, tenant).await;
    let tokenized: Value = stack
        .tokens
        .app
        .http
        .post(stack.tokens.app.url("/tokenize"))
        .header("X-API-Key", api_key)
        .json(&json!({
            "policy_id": token_policy,
            "items": [{ "value": "523-45-6781", "pii_type": "us_ssn" }]
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token_id = tokenized["results"][0]["token_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{tokenized}"))
        .to_owned();
    let (status, grant) = tokens
        .send(
            Method::POST,
            "/grant",
            Some(json!({ "token_ids": [token_id], "purpose": "fraud_review" })),
        )
        .await;
    assert_eq!(status, 200, "{grant}");
    let (status, body) = tokens
        .send(
            Method::POST,
            "/detokenize",
            Some(json!({ "tokens": [token_id], "grant_jwt": grant["grant_jwt"] })),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // platform-api: a connector, a classifier, a channel, a policy that tokenizes SSNs, a scan
    // with its findings and remediation, a second scan that drifts, a reconciliation.
    let connector = crate::scans::connector(&admin, "HR", &bucket_name).await;
    let (status, body) = admin
        .send(
            Method::POST,
            "/classifiers",
            Some(json!({ "name": "badge", "category": "personal", "regex": "BDG-[0-9]{6}" })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let classifier = body["data"]["id"].as_str().unwrap().to_owned();
    let channel = format!("{tenant}-alerts");
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/channels",
            Some(json!({ "name": channel, "type": "webhook", "url": "https://hooks.example.com/dps" })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let policy = policy_of(
        &admin,
        "ssn-tokenize",
        "enforced",
        "us_ssn",
        0.5,
        &format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}"),
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let remediation = ended(&admin, 1).await[0]["remediation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    bucket
        .delete(&object_store::path::Path::from("contacts.txt"))
        .await
        .unwrap();
    crate::scans::full_scan(&admin, &connector).await;
    let drift_event = wait_for_first(&admin, "/governance/drift-events", "event_id").await;
    let scan = wait_for_first(&admin, "/scans", "scan_id").await;
    let finding = wait_for_first(&admin, "/findings", "id").await;
    let (status, body) = admin
        .send(
            Method::POST,
            "/governance/reconcile",
            Some(json!({ "mode": "dry-run" })),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let reconciliation = body["data"]["reconciliation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    Owned {
        tenant,
        token_policy,
        token_id,
        connector,
        classifier,
        channel,
        policy,
        scan,
        finding,
        drift_event,
        reconciliation,
        remediation,
    }
}

/// The first item's `field` of the list at `path`, once the list has one.
async fn wait_for_first(admin: &Client<'_>, path: &str, field: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = admin.send(Method::GET, path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
        if let Some(id) = body["data"][0][field].as_str() {
            return id.to_owned();
        }
        assert!(Instant::now() < deadline, "{path} stays empty: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every route of both services with a path parameter, as `(method, service, path)`.
fn by_id_routes() -> Vec<(Method, bool, String)> {
    all_routes()
        .into_iter()
        .filter(|(_, _, path)| path.contains('{') && !worker_route(path))
        .collect()
}

/// The coordinator API's routes, which a scan's worker token opens and no access token does.
fn worker_route(path: &str) -> bool {
    path.contains("/work/")
}

/// Every route of both services: `(method, whether it is tokens-api's, path)`.
fn all_routes() -> Vec<(Method, bool, String)> {
    let tokens = dps_http::route_table::<tokens_api::TokensApi>().entries;
    let platform = dps_http::route_table::<platform_api::PlatformApi>().entries;
    let method = |m: &dyn std::fmt::Display| Method::from_bytes(m.to_string().as_bytes()).unwrap();
    tokens
        .into_iter()
        .map(|(m, p)| (method(&m), true, p))
        .chain(platform.into_iter().map(|(m, p)| (method(&m), false, p)))
        .collect()
}

/// Every list route (a GET without a path parameter) of both services.
fn list_routes() -> Vec<(bool, String)> {
    all_routes()
        .into_iter()
        .filter(|(m, _, path)| *m == Method::GET && !path.contains('{'))
        .filter(|(_, _, path)| !path.ends_with("/openapi.json"))
        .map(|(_, tokens, path)| (tokens, path))
        .collect()
}

/// Sends `method path` as `tenant`'s admin to the right service, the path given in full.
async fn call(
    stack: &Stack,
    tenant: &str,
    method: Method,
    tokens: bool,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let app = if tokens {
        &stack.tokens.app
    } else {
        &stack.platform
    };
    let token = app.token(tenant, "ann", &["admin", "support"]);
    let mut request = app
        .http
        .request(method, format!("{}{path}", app.origin))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn filled(route: &str, id: &str) -> String {
    let start = route.find('{').unwrap();
    let end = route.find('}').unwrap();
    format!("{}{id}{}", &route[..start], &route[end + 1..])
}

#[tokio::test(flavor = "multi_thread")]
async fn no_route_reaches_another_tenants_data() {
    // An issuer of tenants' GCP subjects, so that its public documents and each tenant's
    // subject are among the routes read.
    let stack = Stack::new(|env| {
        env.insert(
            "DPS_GCP_OIDC_ISSUER".into(),
            "https://dps.example.test/api/v1/gcp-oidc".into(),
        );
    })
    .await;
    let acme = seed_tenant(&stack, "acme").await;
    let globex = seed_tenant(&stack, "globex").await;

    // Each tenant's GETs by id find its own data, so the ids below are real.
    for (method, tokens, route) in by_id_routes() {
        if method != Method::GET {
            continue;
        }
        for owner in [&acme, &globex] {
            let path = filled(&route, owner.id_for(&route));
            let (status, body) = call(&stack, owner.tenant, Method::GET, tokens, &path, None).await;
            assert_eq!(status, 200, "{} GET {path}: {body}", owner.tenant);
        }
    }

    // Every by-id route, with the other tenant's id, is 404: reads, writes and deletes alike.
    let mut answered = BTreeMap::new();
    for (method, tokens, route) in by_id_routes() {
        for (caller, owner) in [(&globex, &acme), (&acme, &globex)] {
            let path = filled(&route, owner.id_for(&route));
            let body = body_for(&method, &route);
            let (status, answer) =
                call(&stack, caller.tenant, method.clone(), tokens, &path, body).await;
            assert_eq!(
                status, 404,
                "{} {method} {path} (owned by {}): {answer}",
                caller.tenant, owner.tenant
            );
            answered.insert(format!("{method} {route}"), status);
            // What cannot be an id is the very same answer, code included: an answer never
            // tells a malformed id from another tenant's.
            let malformed = filled(&route, "not-an-id");
            let body = body_for(&method, &route);
            let (status, same) = call(
                &stack,
                caller.tenant,
                method.clone(),
                tokens,
                &malformed,
                body,
            )
            .await;
            assert_eq!(status, 404, "{method} {malformed}: {same}");
            assert_eq!(
                same["error"]["code"], answer["error"]["code"],
                "{method} {malformed}: {same}"
            );
        }
        // Without a token, the caller is refused before the id is read, malformed or not.
        let app = if tokens {
            &stack.tokens.app
        } else {
            &stack.platform
        };
        for id in [acme.id_for(&route), "not-an-id"] {
            let path = filled(&route, id);
            let anonymous = app
                .http
                .request(method.clone(), format!("{}{path}", app.origin))
                .send()
                .await
                .unwrap();
            assert_eq!(
                anonymous.status().as_u16(),
                401,
                "{method} {path} without a token"
            );
        }
    }
    assert!(answered.len() >= 20, "{answered:?}");

    // The coordinator API takes no access token at all, the owner's admin's included.
    let workers: Vec<_> = all_routes()
        .into_iter()
        .filter(|(_, _, path)| worker_route(path))
        .collect();
    assert_eq!(workers.len(), 4, "{workers:?}");
    for (method, tokens, route) in workers {
        for (caller, owner) in [(&globex, &acme), (&acme, &acme)] {
            let path = filled(&route, owner.id_for(&route));
            let body = Some(if route.ends_with("/claim") {
                json!({"worker_id": "w"})
            } else if route.ends_with("/record") {
                json!({"chunk_no": 0, "fence": 1, "outcomes": []})
            } else {
                json!({"chunk_no": 0, "fence": 1})
            });
            let (status, answer) =
                call(&stack, caller.tenant, method.clone(), tokens, &path, body).await;
            assert_eq!(status, 401, "{} {method} {path}: {answer}", caller.tenant);
        }
    }

    // Nothing changed: each tenant still reads all of its own data as it was.
    for (method, tokens, route) in by_id_routes() {
        if method != Method::GET {
            continue;
        }
        for owner in [&acme, &globex] {
            let path = filled(&route, owner.id_for(&route));
            let (status, body) = call(&stack, owner.tenant, Method::GET, tokens, &path, None).await;
            assert_eq!(status, 200, "{} GET {path} after: {body}", owner.tenant);
        }
    }
    for owner in [&acme, &globex] {
        let (_, vault) = call(
            &stack,
            owner.tenant,
            Method::GET,
            true,
            "/api/v1/tokens/vault",
            None,
        )
        .await;
        assert_eq!(vault["items"][0]["status"], "active", "{vault}");
        let (status, _) = call(
            &stack,
            owner.tenant,
            Method::GET,
            false,
            "/api/v1/governance/channels?limit=100",
            None,
        )
        .await;
        assert_eq!(status, 200);
    }

    // Lists, read by each tenant, never hold the other's ids.
    for (tokens, route) in list_routes() {
        for (reader, other) in [(&acme, &globex), (&globex, &acme)] {
            let (status, body) =
                call(&stack, reader.tenant, Method::GET, tokens, &route, None).await;
            assert_eq!(status, 200, "{} GET {route}: {body}", reader.tenant);
            let text = body.to_string();
            for id in other.ids() {
                assert!(
                    !text.contains(id),
                    "{} GET {route} shows {}'s {id}: {body}",
                    reader.tenant,
                    other.tenant
                );
            }
        }
    }
    // Filters naming the other tenant's resources find nothing.
    for (route, filter) in [
        ("/api/v1/findings", format!("connector={}", acme.connector)),
        ("/api/v1/scans", format!("connector={}", acme.connector)),
        (
            "/api/v1/governance/remediations",
            format!("policy={}", acme.policy),
        ),
        (
            "/api/v1/governance/audit-log",
            format!("policy={}", acme.policy),
        ),
        (
            "/api/v1/governance/drift-events",
            format!("connector={}", acme.connector),
        ),
        (
            "/api/v1/governance/risk-scores",
            format!("connector={}", acme.connector),
        ),
    ] {
        let path = format!("{route}?{filter}");
        let (status, body) = call(&stack, "globex", Method::GET, false, &path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(body["data"], json!([]), "{path}: {body}");
    }
    let path = format!(
        "/api/v1/tokens/audit/detokenizations?token_id={}",
        acme.token_id
    );
    let (_, body) = call(&stack, "globex", Method::GET, true, &path, None).await;
    assert_eq!(body["items"], json!([]), "{body}");

    // A tenant_id in a body is refused as an unknown field, or ignored: never obeyed.
    let (status, body) = call(
        &stack,
        "globex",
        Method::POST,
        false,
        "/api/v1/connectors",
        Some(
            json!({"tenant_id": "acme", "name": "sneaky", "provider": "aws", "config": {
                "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                "external_id": "tenant-acme-7731",
                "region": "us-east-1"
            }}),
        ),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = call(
        &stack,
        "globex",
        Method::POST,
        false,
        "/api/v1/governance/policies",
        Some(json!({
            "apiVersion": "governance.dps/v1", "kind": "Policy",
            "metadata": { "name": "sneaky", "tenant_id": "acme" },
            "spec": { "mode": "dry-run", "tenant_id": "acme",
                      "conditions": [{ "category": "contact", "min_confidence": 0.5 }],
                      "actions": [{ "type": "mask", "config": { "keep_last": 4 } }] },
            "tenant_id": "acme"
        })),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = call(
        &stack,
        "globex",
        Method::POST,
        true,
        "/api/v1/tokens/grant",
        Some(
            json!({ "tenant_id": "acme", "token_ids": [acme.token_id], "purpose": "fraud_review" }),
        ),
    )
    .await;
    assert!(matches!(status, 400 | 404), "{status}: {body}");
    let (status, body) = call(
        &stack,
        "globex",
        Method::POST,
        true,
        "/api/v1/tokens/policies",
        Some(json!({
            "tenant_id": "acme", "name": "sneaky",
            "type_rules": { "email": { "mode": "randomized" } },
            "allowed_roles": ["support"], "allowed_purposes": ["fraud_review"]
        })),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (_, policies) = call(
        &stack,
        "acme",
        Method::GET,
        true,
        "/api/v1/tokens/policies",
        None,
    )
    .await;
    assert!(!policies.to_string().contains("sneaky"), "{policies}");
    let (_, connectors) = call(
        &stack,
        "acme",
        Method::GET,
        false,
        "/api/v1/connectors",
        None,
    )
    .await;
    assert!(!connectors.to_string().contains("sneaky"), "{connectors}");
}

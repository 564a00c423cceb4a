//! Remediation survives the process being killed at every step, for tokenize, mask and
//! quarantine alike. platform-api runs with
//! `DPS_REMEDIATION_CRASH_AT=<point>` and aborts right after that point (`copied`,
//! `snapshotted`, `replaced`, `written`, `receipted`), then runs again on the same database
//! without it. Each request ends in one terminal state, `receipted`, with one receipt that
//! verifies, one `action_executed` entry, the object written (or deleted) exactly once in a
//! versioned bucket, one snapshot holding the original bytes, and, for tokenize, exactly one
//! vault entry per value: the tokens in the object are those entries' tokens.
//!
//! Format-preserving tokens are found again by the value's fingerprint, so a second
//! tokenization would give the same token anyway; randomized tokens are drawn afresh on each
//! call, so only the executor's idempotency key keeps them from being issued twice. Both are run
//! at each point where a resumed request tokenizes again.
//!
//! Every run checks the process's debug log for the object's values; one more run, without a
//! kill, does the same for a mask, its policy's alert webhook and an undo.

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use diesel::QueryableByName;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use futures::TryStreamExt as _;
use ids::TenantId;
use object_store::ObjectStore;
use object_store::ObjectStoreExt as _;
use object_store::path::Path as ObjectPath;
use serde_json::{Value, json};
use testkit::{ServiceProcess, emulators, seed};
use uuid::Uuid;

const PEOPLE: &str =
    "name,ssn,email\nAnn Lee,219-09-9999,ann.lee@example.com\nBo Chan,078-05-1120,bo@example.com\n";
/// The SSNs in [`PEOPLE`], and each in the canonical form the vault keeps.
const SSNS: [(&str, &str); 2] = [("219-09-9999", "219099999"), ("078-05-1120", "078051120")];
const TENANT: &str = "acme";
const BUCKET: &str = "people-data";
const KEY: &str = "people.csv";
const HELD: &str = "held-away";
const SIGABRT: i32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// With the token mode of the SSN rule: `format_preserving` or `randomized`.
    Tokenize(&'static str),
    Mask,
    Quarantine,
}

/// A database and moto with a versioned bucket holding [`PEOPLE`] (and a versioned quarantine
/// destination); [`Stack::plan`] adds the connector and the policy. platform-api runs as a
/// process of its own, started by [`Stack::start`].
struct Stack {
    db: testkit::TestDatabase,
    conn: AsyncPgConnection,
    master_key: String,
    moto: emulators::Emulator,
    bucket: Arc<dyn ObjectStore>,
    held: Arc<dyn ObjectStore>,
    http: reqwest::Client,
    admin: String,
}

impl Stack {
    async fn new() -> Self {
        let db = testkit::database().await;
        let conn = AsyncPgConnection::establish(&db.url).await.unwrap();
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(Uuid::new_v4().as_bytes());
        key[16..].copy_from_slice(Uuid::new_v4().as_bytes());
        let moto = emulators::moto(&[]);
        let bucket = seed::s3_bucket(&moto.url(), BUCKET).await;
        let held = seed::s3_bucket(&moto.url(), HELD).await;
        // Versioned, so every write and delete leaves a trace: "never written twice" is counted.
        seed::s3_versioning(&moto.url(), BUCKET).await;
        seed::s3_versioning(&moto.url(), HELD).await;
        seed::put_all(bucket.as_ref(), &[(KEY, PEOPLE.as_bytes())]).await;
        boot::install_tls_provider();
        Stack {
            db,
            conn,
            master_key: base64::engine::general_purpose::STANDARD.encode(key),
            moto,
            bucket,
            held,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            admin: testkit::minter()
                .mint(TENANT, "ann", &["admin"], Duration::from_secs(3600))
                .unwrap(),
        }
    }

    /// platform-api on this stack's database and moto, aborting at `crash_at` if given.
    fn start(&self, crash_at: Option<&str>) -> ServiceProcess {
        let mut env: HashMap<String, String> = testkit::service_env(&self.db, &self.master_key);
        for (name, value) in seed::moto_platform_env(&self.moto.url()) {
            env.insert(name.into(), value);
        }
        env.insert("DPS_SCAN_WORKERS".into(), "1".into());
        env.insert("DATABASE_POOL_SIZE".into(), "4".into());
        // Webhooks to the test's own loopback receiver.
        env.insert("DPS_ALLOW_PRIVATE_NETWORKS".into(), "true".into());
        // Every line the service can write, so that the leak check below sees them all.
        env.insert("RUST_LOG".into(), "debug".into());
        if let Some(point) = crash_at {
            env.insert("DPS_REMEDIATION_CRASH_AT".into(), point.into());
        }
        ServiceProcess::start(env!("CARGO_BIN_EXE_platform-api"), &env)
    }

    async fn send(
        &self,
        service: &ServiceProcess,
        method: reqwest::Method,
        path: &str,
        body: Option<(&str, String)>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}/api/v1{path}", service.origin))
            .bearer_auth(&self.admin);
        if let Some((content_type, body)) = body {
            request = request.header("Content-Type", content_type).body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, service: &ServiceProcess, path: &str) -> Value {
        let (status, body) = self.send(service, reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// A tokenization policy for SSNs in `mode`.
    async fn token_policy(&mut self, mode: &str) -> Uuid {
        crate::ssn_token_policy(&mut self.conn, mode).await
    }

    /// The connector, the governance policy and a full scan, which plans one request.
    async fn plan(&mut self, service: &ServiceProcess, action: Action) {
        let connector = self.connector(service).await;
        let policy = self.policy_for(action).await;
        self.policy(service, policy).await;
        self.scan(service, &connector).await;
    }

    /// The connector to [`BUCKET`]; returns its id.
    async fn connector(&self, service: &ServiceProcess) -> String {
        let (_, answer) = self
            .send(
                service,
                reqwest::Method::GET,
                "/connectors/external-id",
                None,
            )
            .await;
        let config = json!({"name": "HR", "provider": "aws", "config": {
            "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
            "external_id": answer["data"]["external_id"],
            "region": "us-east-1",
            "buckets": [BUCKET],
        }});
        let (status, body) = self
            .send(
                service,
                reqwest::Method::POST,
                "/connectors",
                Some(("application/json", config.to_string())),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body["data"]["id"].as_str().unwrap().to_owned()
    }

    /// The name and the action of the one policy [`Stack::plan`] makes for `action`.
    async fn policy_for(&mut self, action: Action) -> (&'static str, String) {
        match action {
            Action::Tokenize(mode) => (
                "ssn-tokenize",
                format!(
                    "{{ type: tokenize, config: {{ tokenization_policy_id: {} }} }}",
                    self.token_policy(mode).await
                ),
            ),
            Action::Mask => (
                "ssn-mask",
                "{ type: mask, config: { keep_last: 4 } }".to_owned(),
            ),
            Action::Quarantine => (
                "ssn-quarantine",
                format!(
                    "{{ type: quarantine, config: {{ destination: {{ bucket: {HELD}, prefix: 'q/' }} }} }}"
                ),
            ),
        }
    }

    /// An enforced policy for SSNs, named `name`, with one action.
    async fn policy(&self, service: &ServiceProcess, (name, action): (&str, String)) {
        let yaml = format!(
            "apiVersion: governance.dps/v1
kind: Policy
metadata: {{ name: {name} }}
spec:
  mode: enforced
  conditions: [{{ category: us_ssn, min_confidence: 0.5 }}]
  actions: [{action}]
"
        );
        let (status, body) = self
            .send(
                service,
                reqwest::Method::POST,
                "/governance/policies",
                Some(("application/yaml", yaml)),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }

    /// A full scan of `connector`, which plans the requests of the policies there are.
    async fn scan(&self, service: &ServiceProcess, connector: &str) {
        let (status, body) = self
            .send(
                service,
                reqwest::Method::POST,
                &format!("/connectors/{connector}/scan"),
                Some(("application/json", json!({"type": "full"}).to_string())),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }

    /// The tenant's only remediation request and its status, from the database.
    async fn request(&mut self) -> (Uuid, String) {
        let all = self.requests().await;
        assert_eq!(all.len(), 1, "one request is planned");
        all[0].clone()
    }

    /// The tenant's remediation requests and their status, from the database.
    async fn requests(&mut self) -> Vec<(Uuid, String)> {
        #[derive(QueryableByName)]
        struct Request {
            #[diesel(sql_type = SqlUuid)]
            request_id: Uuid,
            #[diesel(sql_type = Text)]
            status: String,
        }
        let all: Vec<Request> = diesel::sql_query(
            "SELECT request_id, status FROM remediation_requests WHERE tenant_id = $1",
        )
        .bind::<Text, _>(TENANT)
        .load(&mut self.conn)
        .await
        .unwrap();
        all.into_iter().map(|r| (r.request_id, r.status)).collect()
    }

    /// Makes `request` due now: a killed process's lease (five minutes of `next_attempt_at`)
    /// would otherwise run out before anyone takes the request again.
    async fn due_now(&mut self, request: Uuid) {
        diesel::sql_query(
            "UPDATE remediation_requests SET next_attempt_at = now()
              WHERE tenant_id = $1 AND request_id = $2",
        )
        .bind::<Text, _>(TENANT)
        .bind::<SqlUuid, _>(request)
        .execute(&mut self.conn)
        .await
        .unwrap();
    }

    /// `DELETE /connectors/:id` of the one connector, as the API lists it.
    async fn delete_connector(&self, service: &ServiceProcess) -> (u16, Value) {
        let listed = self.get(service, "/connectors").await;
        let connector = listed["data"][0]["id"].as_str().unwrap().to_owned();
        self.send(
            service,
            reqwest::Method::DELETE,
            &format!("/connectors/{connector}"),
            None,
        )
        .await
    }

    /// Runs the copies' sweeper `passes` times, as platform-api's would every minute.
    async fn sweep(&mut self, passes: usize) {
        let master = Arc::new(keys::MasterKey::from_base64(&self.master_key).unwrap());
        let exec = remediation::Executor::new(
            seed::moto_cloud(&self.moto.url()),
            Arc::new(keys::KeyRing::new(master.clone())),
            Arc::new(remediation::Receipts {
                signer: receipts::Signer::from_master(&master),
                cosigner: remediation::Cosigner::new(
                    None,
                    None,
                    egress::Egress {
                        allow_private: true,
                    },
                )
                .unwrap(),
            }),
        );
        for _ in 0..passes {
            remediation::sweep::run_once(&mut self.conn, &exec)
                .await
                .unwrap();
        }
    }

    /// Keeps `request` from being taken for an hour.
    async fn later(&mut self, request: Uuid) {
        diesel::sql_query(
            "UPDATE remediation_requests SET next_attempt_at = now() + interval '1 hour'
              WHERE tenant_id = $1 AND request_id = $2",
        )
        .bind::<Text, _>(TENANT)
        .bind::<SqlUuid, _>(request)
        .execute(&mut self.conn)
        .await
        .unwrap();
    }

    /// Waits (a minute at most) until `request` has ended, and returns it as the API shows it.
    async fn ended(&self, service: &ServiceProcess, request: Uuid) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let body = self
                .get(service, &format!("/governance/remediations/{request}"))
                .await;
            let status = body["data"]["status"].as_str().unwrap_or_default();
            if ["receipted", "blocked", "failed", "undone"].contains(&status) {
                return body["data"].clone();
            }
            assert!(Instant::now() < deadline, "still {status}: {body}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn count(&mut self, sql: &str, request: Uuid) -> i64 {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        diesel::sql_query(sql)
            .bind::<Text, _>(TENANT)
            .bind::<SqlUuid, _>(request)
            .get_result::<Count>(&mut self.conn)
            .await
            .unwrap()
            .n
    }

    /// The tenant's vault entries: each token with the value it stands for.
    async fn vault(&mut self) -> HashMap<String, String> {
        #[derive(QueryableByName)]
        struct Entry {
            #[diesel(sql_type = SqlUuid)]
            token_id: Uuid,
            #[diesel(sql_type = Text)]
            token: String,
        }
        let entries: Vec<Entry> =
            diesel::sql_query("SELECT token_id, token FROM vault_entries WHERE tenant_id = $1")
                .bind::<Text, _>(TENANT)
                .load(&mut self.conn)
                .await
                .unwrap();
        let master = keys::MasterKey::from_base64(&self.master_key).unwrap();
        let keyring = keys::KeyRing::new(Arc::new(master));
        let keys = keyring.tenant(&mut self.conn, &tenant()).await.unwrap();
        let ids: Vec<Uuid> = entries.iter().map(|e| e.token_id).collect();
        let sealed = vault::entries::sealed(&mut self.conn, &tenant(), &ids)
            .await
            .unwrap();
        let mut values = HashMap::new();
        for entry in &entries {
            let sealed = sealed
                .iter()
                .find(|s| s.token_id == entry.token_id)
                .unwrap();
            let revealed = vault::entries::reveal(&keys, &tenant(), sealed).unwrap();
            values.insert(entry.token.clone(), revealed.value.expose().to_owned());
        }
        values
    }
}

fn tenant() -> TenantId {
    TENANT.parse().unwrap()
}

async fn read(store: &dyn ObjectStore, key: &str) -> Option<Vec<u8>> {
    match store.get(&ObjectPath::from(key)).await {
        Ok(got) => Some(got.bytes().await.unwrap().to_vec()),
        Err(object_store::Error::NotFound { .. }) => None,
        Err(e) => panic!("{e}"),
    }
}

/// The keys of the objects under `prefix`.
async fn keys_under(store: &dyn ObjectStore, prefix: &str) -> Vec<String> {
    let listed: Vec<object_store::ObjectMeta> = store
        .list(Some(&ObjectPath::from(prefix)))
        .try_collect()
        .await
        .unwrap();
    listed.into_iter().map(|m| m.location.to_string()).collect()
}

/// The state a request is left in when the process dies right after `point`.
fn state_after(point: &str) -> &'static str {
    match point {
        "copied" => "planned",
        "snapshotted" | "replaced" => "snapshotted",
        "written" => "written",
        "receipted" => "receipted",
        other => panic!("no crash point {other}"),
    }
}

/// Plans one `action`, kills platform-api right after `point`, runs it again and checks that the
/// request ended once, as if nothing had happened.
async fn killed_at(action: Action, point: &str) {
    killed_at_after(action, point, None).await;
}

/// [`killed_at`], the request's run having counted `attempts` before the restart when given.
async fn killed_at_after(action: Action, point: &str, attempts: Option<i32>) {
    let mut stack = Stack::new().await;
    let doomed = stack.start(Some(point));
    stack.plan(&doomed, action).await;
    let (status, lines) = doomed.exited(Duration::from_secs(120));
    assert_eq!(status.signal(), Some(SIGABRT), "{status}: {lines:#?}");
    assert!(
        lines.iter().any(|l| {
            let event: Value = serde_json::from_str(l).unwrap_or_default();
            event["point"] == point
                && event["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("DPS_REMEDIATION_CRASH_AT"))
        }),
        "it aborted at {point}: {lines:#?}"
    );

    // The kill left the request in the state of its last committed step, with the storage a
    // step ahead where the point says so.
    let (request, status) = stack.request().await;
    assert_eq!(status, state_after(point));
    let original = PEOPLE.as_bytes();
    match (action, point) {
        (Action::Tokenize(_) | Action::Mask, "copied") => {
            assert_eq!(read(stack.bucket.as_ref(), KEY).await.unwrap(), original);
            assert_eq!(keys_under(stack.bucket.as_ref(), ".dps-lkg").await.len(), 1);
        }
        (Action::Tokenize(_) | Action::Mask, "replaced") => {
            let now = read(stack.bucket.as_ref(), KEY).await.unwrap();
            assert_ne!(now, original, "the object was rewritten before the kill");
        }
        (Action::Quarantine, "replaced") => {
            assert_eq!(read(stack.bucket.as_ref(), KEY).await, None, "deleted");
        }
        _ => {}
    }

    stack.due_now(request).await;
    if let Some(attempts) = attempts {
        diesel::sql_query(
            "UPDATE remediation_runs SET attempts = $3 WHERE tenant_id = $1 AND request_id = $2",
        )
        .bind::<Text, _>(TENANT)
        .bind::<SqlUuid, _>(request)
        .bind::<diesel::sql_types::Integer, _>(attempts)
        .execute(&mut stack.conn)
        .await
        .unwrap();
    }

    let service = stack.start(None);
    let remediation = stack.ended(&service, request).await;
    assert_eq!(remediation["status"], "receipted", "{remediation}");
    assert_eq!(remediation["reason"], Value::Null, "{remediation}");
    if point == "receipted" {
        assert_eq!(remediation["attempts"], 1, "nothing ran again");
    } else {
        assert!(
            remediation["attempts"].as_i64().unwrap() >= 2,
            "{remediation}"
        );
    }

    // One receipt, executed, that verifies; one audit entry saying so.
    let receipts = remediation["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1, "{remediation}");
    assert_eq!(receipts[0]["kind"], "executed");
    let stored = stack
        .count(
            "SELECT count(*) AS n FROM remediation_receipts WHERE tenant_id = $1 AND request_id = $2",
            request,
        )
        .await;
    assert_eq!(stored, 1);
    let jwks = stack.get(&service, "/governance/receipt-keys").await;
    receipts::verify(&receipts[0]["document"], &jwks["data"])
        .unwrap_or_else(|e| panic!("the receipt does not verify: {e}: {remediation}"));
    let log = stack.get(&service, "/governance/audit-log?limit=100").await;
    let entries = log["data"].as_array().unwrap();
    let of = |kind: &str| entries.iter().filter(|e| e["type"] == kind).count();
    assert_eq!(of("action_executed"), 1, "{log}");
    assert_eq!(of("action_failed"), 0, "{log}");

    let lkg = remediation["lkg_location"]["key"].as_str().unwrap();
    match action {
        Action::Tokenize(_) => {
            // Two vault entries, one per SSN: no token was issued twice. The object is the
            // original with each SSN replaced by its entry's token, and nothing else changed.
            let vault = stack.vault().await;
            assert_eq!(vault.len(), SSNS.len(), "tokens issued twice: {vault:?}");
            let mut expected = PEOPLE.to_owned();
            for (ssn, canonical) in SSNS {
                let token = vault
                    .iter()
                    .find(|(_, value)| value.as_str() == canonical)
                    .map(|(token, _)| token)
                    .unwrap_or_else(|| panic!("no token for an SSN: {vault:?}"));
                expected = expected.replace(ssn, token);
            }
            assert_ne!(expected, PEOPLE);
            let now = read(stack.bucket.as_ref(), KEY).await.unwrap();
            assert_eq!(String::from_utf8(now).unwrap(), expected);
            assert_eq!(
                seed::s3_versions(&stack.moto.url(), BUCKET, KEY).await,
                (2, 0),
                "the object is written once: the original and the tokenized version"
            );
            // One snapshot, holding the original bytes.
            assert_eq!(keys_under(stack.bucket.as_ref(), ".dps-lkg").await, [lkg]);
            assert!(lkg.starts_with(&format!(".dps-lkg/{request}/")), "{lkg}");
            assert_eq!(read(stack.bucket.as_ref(), lkg).await.unwrap(), original);
        }
        Action::Mask => {
            assert!(stack.vault().await.is_empty());
            let now = read(stack.bucket.as_ref(), KEY).await.unwrap();
            assert_eq!(
                String::from_utf8(now).unwrap(),
                PEOPLE
                    .replace("219-09-9999", "***-**-9999")
                    .replace("078-05-1120", "***-**-1120")
            );
            assert_eq!(
                seed::s3_versions(&stack.moto.url(), BUCKET, KEY).await,
                (2, 0),
                "the object is written once: the original and the masked version"
            );
            assert_eq!(keys_under(stack.bucket.as_ref(), ".dps-lkg").await, [lkg]);
            assert_eq!(read(stack.bucket.as_ref(), lkg).await.unwrap(), original);
        }
        Action::Quarantine => {
            assert!(stack.vault().await.is_empty());
            assert_eq!(read(stack.bucket.as_ref(), KEY).await, None);
            assert_eq!(
                seed::s3_versions(&stack.moto.url(), BUCKET, KEY).await,
                (1, 1),
                "the object is deleted once: the original and one delete marker"
            );
            assert_eq!(remediation["lkg_location"]["bucket"], HELD);
            assert_eq!(keys_under(stack.held.as_ref(), "q").await, [lkg]);
            assert_eq!(read(stack.held.as_ref(), lkg).await.unwrap(), original);
        }
    }
    // Nothing planned it again meanwhile.
    assert_eq!(stack.request().await, (request, "receipted".to_owned()));
    let (status, after) = service.stop();
    assert!(status.success(), "{status}");
    // No value of the object reached a log line, debug ones included, in either process.
    let values: Vec<&str> = SSNS
        .iter()
        .flat_map(|(written, canonical)| [*written, *canonical])
        .chain(["ann.lee@example.com"])
        .collect();
    let all: Vec<String> = lines.into_iter().chain(after).collect();
    let leaks = testkit::leaks(&all, &values);
    assert!(leaks.is_empty(), "log lines leak values: {leaks:#?}");
}

const FPE: Action = Action::Tokenize("format_preserving");
const RANDOMIZED: Action = Action::Tokenize("randomized");

#[tokio::test]
async fn tokenize_killed_after_the_snapshot_copy_is_copied_again_and_ends_once() {
    killed_at(FPE, "copied").await;
}

#[tokio::test]
async fn randomized_tokens_killed_after_the_snapshot_copy_are_not_issued_twice() {
    killed_at(RANDOMIZED, "copied").await;
}

#[tokio::test]
async fn tokenize_killed_after_recording_the_snapshot_writes_once() {
    killed_at(FPE, "snapshotted").await;
}

#[tokio::test]
async fn randomized_tokens_killed_after_recording_the_snapshot_are_not_issued_twice() {
    killed_at(RANDOMIZED, "snapshotted").await;
}

#[tokio::test]
async fn tokenize_killed_after_the_write_finds_its_own_write_and_never_writes_twice() {
    killed_at(FPE, "replaced").await;
}

#[tokio::test]
async fn randomized_tokens_killed_after_the_write_find_their_own_write() {
    killed_at(RANDOMIZED, "replaced").await;
}

#[tokio::test]
async fn tokenize_killed_after_recording_the_write_signs_one_receipt() {
    killed_at(FPE, "written").await;
}

#[tokio::test]
async fn tokenize_killed_after_the_receipt_is_left_as_it_was() {
    killed_at(FPE, "receipted").await;
}

#[tokio::test]
async fn quarantine_killed_after_the_delete_finds_the_object_gone_and_ends_once() {
    killed_at(Action::Quarantine, "replaced").await;
}

/// A quarantine killed after its delete, whose key someone fills again before the restart,
/// fails `object_changed`; its copy at the destination is then the only copy of the original,
/// and it is kept for the rollback window, not deleted with the failed request.
#[tokio::test]
async fn a_failed_quarantine_whose_original_is_gone_keeps_its_copy() {
    let mut stack = Stack::new().await;
    let doomed = stack.start(Some("replaced"));
    stack.plan(&doomed, Action::Quarantine).await;
    let (status, lines) = doomed.exited(Duration::from_secs(120));
    assert_eq!(status.signal(), Some(SIGABRT), "{status}: {lines:#?}");
    let (request, _) = stack.request().await;
    assert_eq!(read(stack.bucket.as_ref(), KEY).await, None, "deleted");
    seed::put_all(stack.bucket.as_ref(), &[(KEY, b"a new nightly export\n")]).await;
    stack.due_now(request).await;

    let service = stack.start(None);
    let remediation = stack.ended(&service, request).await;
    assert_eq!(remediation["status"], "failed", "{remediation}");
    assert_eq!(remediation["reason"], "object_changed", "{remediation}");
    let copies = keys_under(stack.held.as_ref(), "q/.dps-quarantine").await;
    assert_eq!(copies.len(), 1, "the original's only copy is kept");
    assert_eq!(
        read(stack.held.as_ref(), &copies[0]).await.unwrap(),
        PEOPLE.as_bytes()
    );
    assert_eq!(
        stack
            .count(
                "SELECT count(*) AS n FROM remediation_runs WHERE tenant_id = $1 \
                 AND request_id = $2 AND undo_until > now() AND lkg_deleted_at IS NULL",
                request,
            )
            .await,
        1,
        "kept"
    );

    // The connector deleted, the window passed: no sweep deletes the copy, since what is at the
    // key is not the original, and it is marked kept for good.
    let (status, body) = stack.delete_connector(&service).await;
    assert_eq!(status, 200, "{body}");
    diesel::sql_query("UPDATE remediation_runs SET undo_until = now() - interval '1 second'")
        .execute(&mut stack.conn)
        .await
        .unwrap();
    stack.sweep(3).await;
    assert_eq!(
        read(stack.held.as_ref(), &copies[0]).await.unwrap(),
        PEOPLE.as_bytes(),
        "the only copy of the original survives every sweep"
    );
    let remediation = stack
        .get(&service, &format!("/governance/remediations/{request}"))
        .await;
    assert_eq!(
        remediation["data"]["lkg_kept_reason"], "original_changed",
        "{remediation}"
    );
    assert_eq!(remediation["data"]["lkg_available"], true, "{remediation}");
}

/// A quarantine killed after its delete (the original is gone, and only its copy holds it) is
/// between its snapshot and its receipt: its connector's deletion is refused, naming it, until
/// the request ends. It ends a standing quarantine, and once the connector is deleted, the copy
/// (now the object itself) survives every sweep.
#[tokio::test]
async fn a_connector_is_not_deleted_under_a_quarantine_whose_original_is_already_gone() {
    let mut stack = Stack::new().await;
    let doomed = stack.start(Some("replaced"));
    stack.plan(&doomed, Action::Quarantine).await;
    let (status, lines) = doomed.exited(Duration::from_secs(120));
    assert_eq!(status.signal(), Some(SIGABRT), "{status}: {lines:#?}");
    let (request, state) = stack.request().await;
    assert_eq!(state, "snapshotted");
    assert_eq!(read(stack.bucket.as_ref(), KEY).await, None, "deleted");

    // Restarted, the request is not due before its lease ends: the deletion meets it under way.
    let service = stack.start(None);
    let (status, body) = stack.delete_connector(&service).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "CONFLICT", "{body}");
    assert_eq!(
        body["error"]["details"]["remediations"],
        json!([request.to_string()]),
        "{body}"
    );

    stack.due_now(request).await;
    let remediation = stack.ended(&service, request).await;
    assert_eq!(remediation["status"], "receipted", "{remediation}");
    let copy = remediation["lkg_location"]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = stack.delete_connector(&service).await;
    assert_eq!(status, 200, "{body}");
    diesel::sql_query("UPDATE remediation_runs SET undo_until = now() - interval '1 second'")
        .execute(&mut stack.conn)
        .await
        .unwrap();
    stack.sweep(3).await;
    assert_eq!(
        read(stack.held.as_ref(), &copy).await.unwrap(),
        PEOPLE.as_bytes(),
        "the quarantined object stays"
    );
}

#[tokio::test]
async fn quarantine_killed_after_the_destination_copy_is_copied_again_and_ends_once() {
    killed_at(Action::Quarantine, "copied").await;
}

#[tokio::test]
async fn quarantine_killed_after_recording_the_copy_deletes_once() {
    killed_at(Action::Quarantine, "snapshotted").await;
}

#[tokio::test]
async fn quarantine_killed_after_recording_the_delete_signs_one_receipt() {
    killed_at(Action::Quarantine, "written").await;
}

#[tokio::test]
async fn quarantine_killed_after_the_receipt_is_left_as_it_was() {
    killed_at(Action::Quarantine, "receipted").await;
}

#[tokio::test]
async fn mask_killed_after_the_snapshot_copy_is_copied_again_and_ends_once() {
    killed_at(Action::Mask, "copied").await;
}

#[tokio::test]
async fn mask_killed_after_recording_the_snapshot_writes_once() {
    killed_at(Action::Mask, "snapshotted").await;
}

#[tokio::test]
async fn mask_killed_after_the_write_finds_its_own_write_and_never_writes_twice() {
    killed_at(Action::Mask, "replaced").await;
}

#[tokio::test]
async fn mask_killed_after_recording_the_write_signs_one_receipt() {
    killed_at(Action::Mask, "written").await;
}

#[tokio::test]
async fn mask_killed_after_the_receipt_is_left_as_it_was() {
    killed_at(Action::Mask, "receipted").await;
}

/// A request killed once its object is written has already changed the customer's data: however
/// many attempts it has used, it is retried until it has its receipt, never failed (failing it
/// would leave a change without a receipt, and the sweeper would delete its snapshot, the only
/// copy of the original). Eight attempts are the executor's limit for a request that has changed
/// nothing yet (docs/governance.md, "Crash safety").
#[tokio::test]
async fn a_written_request_out_of_attempts_still_gets_its_receipt() {
    killed_at_after(FPE, "written", Some(8)).await;
}

/// The same for a request killed between its write and recording it: the object already holds
/// the new content while the request still says `snapshotted`.
#[tokio::test]
async fn a_request_killed_after_its_write_out_of_attempts_still_ends_receipted() {
    killed_at_after(FPE, "replaced", Some(8)).await;
}

/// Mask, the alert its policy sends to a webhook, and undo, with every log line at debug: no
/// value of the object reaches a log line or a webhook body.
#[tokio::test]
async fn mask_its_alert_and_undo_leak_no_value_to_logs_or_webhooks() {
    let stack = Stack::new().await;
    let receiver = testkit::identity::http_server(|_| (200, Value::Null));
    let service = stack.start(None);
    let json = |v: Value| Some(("application/json", v.to_string()));
    let (status, body) = stack
        .send(
            &service,
            reqwest::Method::POST,
            "/governance/channels",
            json(json!({"name": "security", "type": "webhook",
                        "url": format!("{}/hook", receiver.url())})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (_, answer) = stack
        .send(
            &service,
            reqwest::Method::GET,
            "/connectors/external-id",
            None,
        )
        .await;
    let (status, body) = stack
        .send(
            &service,
            reqwest::Method::POST,
            "/connectors",
            json(json!({"name": "HR", "provider": "aws", "config": {
                "role_arn": "arn:aws:iam::123456789012:role/dps-scanner",
                "external_id": answer["data"]["external_id"],
                "region": "us-east-1",
                "buckets": [BUCKET],
            }})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let connector = body["data"]["id"].as_str().unwrap().to_owned();
    let yaml = "apiVersion: governance.dps/v1
kind: Policy
metadata: { name: ssn-mask }
spec:
  mode: enforced
  conditions: [{ category: us_ssn, min_confidence: 0.5 }]
  actions:
    - { type: mask, config: { keep_last: 4 } }
    - { type: alert, config: { channels: [security], severity: high } }
";
    let (status, body) = stack
        .send(
            &service,
            reqwest::Method::POST,
            "/governance/policies",
            Some(("application/yaml", yaml.to_owned())),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = stack
        .send(
            &service,
            reqwest::Method::POST,
            &format!("/connectors/{connector}/scan"),
            json(json!({"type": "full"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let deadline = Instant::now() + Duration::from_secs(60);
    let remediation = loop {
        let body = stack.get(&service, "/governance/remediations").await;
        if body["data"][0]["status"] == "receipted" && !receiver.requests().is_empty() {
            break body["data"][0].clone();
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let masked = read(stack.bucket.as_ref(), KEY).await.unwrap();
    assert_eq!(
        String::from_utf8(masked).unwrap(),
        "name,ssn,email\nAnn Lee,***-**-9999,ann.lee@example.com\nBo Chan,***-**-1120,bo@example.com\n"
    );
    let id = remediation["remediation_id"].as_str().unwrap();
    let (status, body) = stack
        .send(
            &service,
            reqwest::Method::POST,
            &format!("/governance/remediations/{id}/undo"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        read(stack.bucket.as_ref(), KEY).await.unwrap(),
        PEOPLE.as_bytes()
    );
    let (status, lines) = service.stop();
    assert!(status.success(), "{status}");

    let values: Vec<&str> = SSNS
        .iter()
        .flat_map(|(written, canonical)| [*written, *canonical])
        .chain(["ann.lee@example.com", "bo@example.com"])
        .collect();
    let leaks = testkit::leaks(&lines, &values);
    assert!(leaks.is_empty(), "log lines leak values: {leaks:#?}");
    let hooks: Vec<String> = receiver.requests().into_iter().map(|r| r.body).collect();
    assert!(!hooks.is_empty());
    let leaks = testkit::leaks(&hooks, &values);
    assert!(leaks.is_empty(), "webhook bodies leak values: {leaks:#?}");
    // The lines do cover the paths: the mask, the alert's delivery and the undo were logged.
    for path in ["/governance/remediations/", "/undo"] {
        assert!(lines.iter().any(|l| l.contains(path)), "no line for {path}");
    }
}

/// A mask stopped after its snapshot, whose class the tenant denies before it resumes, ends
/// `blocked` with a signed `blocked` receipt: the object was never written, and the denial
/// holds for what has not been written yet. Its snapshot is deleted. It used to be written,
/// hours later if need be, because only a `planned` request met the gate.
#[tokio::test]
async fn a_mask_resumed_after_its_class_was_denied_ends_blocked_and_writes_nothing() {
    let mut stack = Stack::new().await;
    let doomed = stack.start(Some("snapshotted"));
    stack.plan(&doomed, Action::Mask).await;
    let (status, lines) = doomed.exited(Duration::from_secs(120));
    assert_eq!(status.signal(), Some(SIGABRT), "{status}: {lines:#?}");
    let (request, status) = stack.request().await;
    assert_eq!(status, "snapshotted");
    assert_eq!(keys_under(stack.bucket.as_ref(), ".dps-lkg").await.len(), 1);

    let service = stack.start(None);
    let (status, body) = stack
        .send(
            &service,
            reqwest::Method::PUT,
            "/settings/remediation-policy",
            Some((
                "application/json",
                json!({"denied_safety_classes": ["destructive"]}).to_string(),
            )),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    stack.due_now(request).await;
    let remediation = stack.ended(&service, request).await;
    assert_eq!(remediation["status"], "blocked", "{remediation}");
    assert_eq!(
        remediation["reason"], "safety_class_denied",
        "{remediation}"
    );
    let receipts = remediation["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1, "{remediation}");
    assert_eq!(receipts[0]["kind"], "blocked");
    let jwks = stack.get(&service, "/governance/receipt-keys").await;
    receipts::verify(&receipts[0]["document"], &jwks["data"])
        .unwrap_or_else(|e| panic!("the receipt does not verify: {e}: {remediation}"));
    assert_eq!(
        read(stack.bucket.as_ref(), KEY).await.unwrap(),
        PEOPLE.as_bytes()
    );
    assert_eq!(
        seed::s3_versions(&stack.moto.url(), BUCKET, KEY).await,
        (1, 0),
        "never written"
    );
    assert!(
        keys_under(stack.bucket.as_ref(), ".dps-lkg")
            .await
            .is_empty()
    );
    let (status, _) = service.stop();
    assert!(status.success(), "{status}");
}

/// Two policies that mask the same SSNs alike plan two requests on one object with one result.
/// The process dies with one of them snapshotted; the other then runs and writes. The first,
/// resumed, finds its write refused and the object holding exactly what it would have written,
/// but written by the other request (the object's `dps_remediation` metadata says which): it
/// fails `object_changed` instead of claiming that write and signing a receipt for it.
#[tokio::test]
async fn a_request_never_takes_another_requests_identical_write_for_its_own() {
    let mut stack = Stack::new().await;
    let doomed = stack.start(Some("snapshotted"));
    let connector = stack.connector(&doomed).await;
    for name in ["ssn-mask", "ssn-mask-too"] {
        let action = "{ type: mask, config: { keep_last: 4 } }".to_owned();
        stack.policy(&doomed, (name, action)).await;
    }
    stack.scan(&doomed, &connector).await;
    let (status, lines) = doomed.exited(Duration::from_secs(120));
    assert_eq!(status.signal(), Some(SIGABRT), "{status}: {lines:#?}");
    let requests = stack.requests().await;
    assert_eq!(requests.len(), 2, "{requests:?}");
    let first = requests.iter().find(|r| r.1 == "snapshotted").unwrap().0;
    let second = requests.iter().find(|r| r.0 != first).unwrap().0;

    // The snapshotted request waits while the other runs to its end.
    stack.later(first).await;
    stack.due_now(second).await;
    let service = stack.start(None);
    let other = stack.ended(&service, second).await;
    assert_eq!(other["status"], "receipted", "{other}");
    let masked = PEOPLE
        .replace("219-09-9999", "***-**-9999")
        .replace("078-05-1120", "***-**-1120");
    assert_eq!(
        read(stack.bucket.as_ref(), KEY).await.unwrap(),
        masked.as_bytes()
    );

    stack.due_now(first).await;
    let resumed = stack.ended(&service, first).await;
    assert_eq!(resumed["status"], "failed", "{resumed}");
    assert_eq!(resumed["reason"], "object_changed", "{resumed}");
    assert_eq!(
        read(stack.bucket.as_ref(), KEY).await.unwrap(),
        masked.as_bytes()
    );
    assert_eq!(
        seed::s3_versions(&stack.moto.url(), BUCKET, KEY).await,
        (2, 0),
        "the object is written once: the original and the masked version"
    );
    let log = stack.get(&service, "/governance/audit-log?limit=100").await;
    let entries = log["data"].as_array().unwrap();
    let of = |kind: &str| entries.iter().filter(|e| e["type"] == kind).count();
    assert_eq!(of("action_executed"), 1, "{log}");
    assert_eq!(of("action_failed"), 1, "{log}");
    let (status, _) = service.stop();
    assert!(status.success(), "{status}");
}

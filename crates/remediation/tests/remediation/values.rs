//! Which values a mask rewrites, on moto (S3): every value of a finding's type in the finding's
//! field at or above the threshold of the policy condition that matched it, values added since
//! the scan included, and no other; a finding with no value left fails the request
//! `values_not_found` and leaves the object as it was.

use bytes::Bytes;
use connectors::cloud::{Bucket, Properties};
use diesel::sql_types::{Float4, Integer, Jsonb, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl as _;
use ids::ConnectorId;
use policies::document::ActionType;
use policies::matching::Finding;
use remediation::content::Wanted;
use remediation::{Executor, State};
use scans::group::Written;
use serde_json::{Value, json};
use testkit::emulators::{self, Emulator};
use uuid::Uuid;

use crate::{Env, SSN_MASK, acme, executor_on, plan, ssn_finding};

/// Four columns: `ssn` and `spouse_ssn` hold SSNs (each detected at 0.95); `note` holds one
/// said to be an SSN (0.95) and one not (0.6, below the policy's 0.8 but above detection's
/// own minimum). Bo's row was added after the scan, which saw only Ann's.
const PEOPLE: &[u8] = b"name,ssn,spouse_ssn,note
Ann,219-09-9999,078-05-1120,ssn 536-22-1234
Bo,457-55-5462,401-02-3456,other 212-67-4523
";

/// A database, moto with the connector's bucket `exports`, and an executor on it.
struct Rig {
    env: Env,
    _moto: Emulator,
    exec: Executor,
    connector: ConnectorId,
    bucket: Bucket,
}

impl Rig {
    async fn new() -> Self {
        let mut env = Env::new().await;
        let moto = emulators::moto(&[]);
        testkit::seed::s3_bucket(&moto.url(), "exports").await;
        let tenant = acme();
        let connector = env.connector(&tenant, "exports").await;
        let cosigner = remediation::Cosigner::new(None, None, env.egress).unwrap();
        let exec = executor_on(&env, testkit::seed::moto_cloud(&moto.url()), cosigner);
        let keys = env.keyring.tenant(&mut env.conn, &tenant).await.unwrap();
        let config = connectors::store::config(&mut env.conn, &keys, &tenant, connector)
            .await
            .unwrap();
        let bucket = exec
            .cloud
            .open(&tenant, connector, &config)
            .unwrap()
            .bucket("exports")
            .unwrap();
        Rig {
            env,
            _moto: moto,
            exec,
            connector,
            bucket,
        }
    }

    /// Writes `content` at `key`; returns its ETag.
    async fn put(&self, key: &str, content: &[u8]) -> String {
        let properties = Properties {
            content_type: Some("text/csv".into()),
            ..Properties::default()
        };
        self.bucket
            .put(key, Bytes::copy_from_slice(content), &properties)
            .await
            .unwrap()
    }

    async fn read(&self, key: &str) -> Vec<u8> {
        self.bucket
            .read_whole(key, None, remediation::MAX_OBJECT_BYTES)
            .await
            .unwrap()
            .bytes
            .to_vec()
    }

    /// Stores `finding` as a scan stores a group of values: its field, and the locations of
    /// the values the scan saw (as many as it counted).
    async fn record(&mut self, finding: &Finding, field: &str, locations: &[Value]) {
        diesel::sql_query(
            "INSERT INTO findings (tenant_id, finding_id, scan_id, connector_id, bucket,
                                   object_key, pii_type, category, confidence, preview,
                                   tokenized, field, occurrences, locations)
             VALUES ('acme', $1, $2, $3, $4, $5, $6, $7, $8, '***-**-0000', false, $9, $10,
                     $11)",
        )
        .bind::<SqlUuid, _>(finding.id)
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .bind::<SqlUuid, _>(self.connector.as_uuid())
        .bind::<Text, _>(&finding.bucket)
        .bind::<Text, _>(&finding.object_key)
        .bind::<Text, _>(&finding.pii_type)
        .bind::<Text, _>(&finding.category)
        .bind::<Float4, _>(finding.confidence)
        .bind::<Text, _>(field)
        .bind::<Integer, _>(i32::try_from(locations.len()).unwrap())
        .bind::<Jsonb, _>(Value::from(locations.to_vec()))
        .execute(&mut self.env.conn)
        .await
        .unwrap();
    }

    /// Runs the executor until no request is due; `request`'s state and reason then.
    async fn run(&mut self, request: Uuid) -> (State, Option<String>) {
        while remediation::execute::run_once(&mut self.env.conn, &self.exec)
            .await
            .unwrap()
        {}
        let row = remediation::store::one(&mut self.env.conn, &acme(), request)
            .await
            .unwrap()
            .expect("the request");
        (row.status, row.reason)
    }
}

/// A CSV cell's location, as a scan stores it.
fn cell(row: usize, column: usize, header: &str) -> Value {
    json!({"row": row, "column": column, "header": header})
}

/// The values of `wanted` that detection finds in [`PEOPLE`]: what makes the tests below able
/// to fail.
fn detected(wanted: Wanted) -> Vec<String> {
    remediation::content::find(
        &detect::Detector::new(),
        "people.csv",
        PEOPLE,
        &[wanted],
        &Written::default(),
    )
    .unwrap()
    .spans
    .into_iter()
    .map(|s| s.value)
    .collect()
}

#[tokio::test]
async fn a_mask_rewrites_its_findings_fields_at_the_policy_threshold_and_nothing_else() {
    // What the object holds that the request must leave: SSNs in another field, and one in
    // the note field that only detection's own minimum (not the policy's) would take.
    let at = |field: &str, min_confidence| Wanted {
        pii_type: "us_ssn".into(),
        field: field.into(),
        min_confidence,
    };
    assert_eq!(
        detected(at("spouse_ssn", 0.8)),
        ["078-05-1120", "401-02-3456"]
    );
    assert_eq!(
        detected(at("note", detect::DEFAULT_MIN_CONFIDENCE)),
        ["536-22-1234", "212-67-4523"]
    );

    let mut rig = Rig::new().await;
    let etag = rig.put("people.csv", PEOPLE).await;
    let ssn = ssn_finding("people.csv", &etag);
    let note = ssn_finding("people.csv", &etag);
    // The scan saw Ann's row only: one value in `ssn`, two in `note`.
    rig.record(&ssn, "ssn", &[cell(1, 1, "ssn")]).await;
    rig.record(&note, "note", &[cell(1, 3, "note"), cell(2, 3, "note")])
        .await;
    let request = plan(
        &mut rig.env,
        rig.connector,
        SSN_MASK,
        ActionType::Mask,
        &[&ssn, &note],
    )
    .await;

    let (state, reason) = rig.run(request).await;
    assert_eq!((state, reason), (State::Receipted, None));
    assert_eq!(
        String::from_utf8(rig.read("people.csv").await).unwrap(),
        "name,ssn,spouse_ssn,note
Ann,***-**-9999,078-05-1120,ssn ***-**-1234
Bo,***-**-5462,401-02-3456,other 212-67-4523
"
    );
}

#[tokio::test]
async fn a_finding_with_no_value_left_fails_the_request_with_values_not_found() {
    let mut rig = Rig::new().await;
    let etag = rig.put("people.csv", PEOPLE).await;
    let ssn = ssn_finding("people.csv", &etag);
    // A column the object no longer has by that name: none of its values can be found again.
    let renamed = ssn_finding("people.csv", &etag);
    rig.record(&ssn, "ssn", &[cell(1, 1, "ssn")]).await;
    rig.record(&renamed, "old_ssn", &[cell(1, 2, "old_ssn")])
        .await;
    let request = plan(
        &mut rig.env,
        rig.connector,
        SSN_MASK,
        ActionType::Mask,
        &[&ssn, &renamed],
    )
    .await;

    let (state, reason) = rig.run(request).await;
    assert_eq!(
        (state, reason.as_deref()),
        (State::Failed, Some("values_not_found"))
    );
    assert_eq!(
        rig.read("people.csv").await,
        PEOPLE,
        "the object is untouched"
    );
}

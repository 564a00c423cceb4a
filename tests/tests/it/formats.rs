//! What the end-to-end tests of the formats a scan reads share: the fixtures written by
//! independent implementations (`tests/fixtures/formats`), a bucket of them scanned on moto,
//! and the values found, counted per object, type and field.

use std::collections::BTreeMap;

use integration_tests::TestApp;
use reqwest::Method;
use serde_json::Value;
use testkit::{emulators, seed};

use crate::Client;
use crate::scans::{app_on, connector, scan_to_its_end};

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/formats")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A bucket of fixtures, scanned to its end by platform-api's own workers.
pub(crate) struct Scanned {
    /// Kept alive for the test's requests.
    pub _moto: emulators::Emulator,
    pub app: TestApp,
    pub connector: String,
    /// The completed scan, as `GET /scans/:id` gives it.
    pub done: Value,
}

impl Scanned {
    pub(crate) fn admin(&self) -> Client<'_> {
        Client {
            app: &self.app,
            token: self.app.token("acme", "ann", &["admin"]),
        }
    }

    /// The connector's findings (at most 100).
    pub(crate) async fn findings(&self) -> Vec<Value> {
        self.findings_where("").await
    }

    /// The connector's findings that also meet `query` (`&location_kind=table`).
    pub(crate) async fn findings_where(&self, query: &str) -> Vec<Value> {
        let (status, body) = self
            .admin()
            .send(
                Method::GET,
                &format!("/findings?connector={}&limit=100{query}", self.connector),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["data"].as_array().cloned().unwrap_or_default()
    }
}

/// Puts each fixture of `names` at `<prefix>/<name>` in a new bucket on moto, then runs a full
/// scan of it to its end.
pub(crate) async fn scan_fixtures(bucket: &str, prefix: &str, names: &[&str]) -> Scanned {
    let moto = emulators::moto(&[]);
    let store = seed::s3_bucket(&moto.url(), bucket).await;
    let contents: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|name| (format!("{prefix}/{name}"), fixture(name)))
        .collect();
    let objects: Vec<(&str, &[u8])> = contents
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    seed::put_all(store.as_ref(), &objects).await;
    let app = app_on(&moto, "2").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let id = connector(&admin, bucket, bucket).await;
    let done = scan_to_its_end(&admin, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    Scanned {
        _moto: moto,
        app,
        connector: id,
        done,
    }
}

/// Values found, by (object without `strip`, type, field), of the types `keep` says.
pub(crate) fn counts(
    found: &[Value],
    strip: &str,
    keep: impl Fn(&str) -> bool,
) -> BTreeMap<(String, String, String), i64> {
    let mut counts = BTreeMap::new();
    for f in found {
        let pii = f["pii_type"].as_str().unwrap_or_default().to_owned();
        if !keep(&pii) {
            continue;
        }
        let object = f["resource"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches(strip)
            .to_owned();
        let field = f["field"].as_str().unwrap_or_default().to_owned();
        *counts.entry((object, pii, field)).or_default() += f["occurrences"].as_i64().unwrap_or(0);
    }
    counts
}

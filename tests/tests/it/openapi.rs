use std::collections::BTreeSet;

use integration_tests::{Service, TestApp};
use serde_json::Value;

fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            routes.insert((method.to_uppercase(), path.clone()));
        }
    }
    routes
}

fn registered(table: dps_http::RouteTable) -> BTreeSet<(String, String)> {
    table
        .entries
        .into_iter()
        .map(|(m, p)| (m.to_string(), p))
        .collect()
}

async fn served_document(service: Service) -> Value {
    let app = TestApp::spawn(service).await;
    let response = app.http.get(app.url("/openapi.json")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let doc: Value = response.json().await.unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    doc
}

#[tokio::test]
async fn every_tokens_api_route_is_documented_and_nothing_else() {
    let doc = served_document(Service::Tokens).await;
    assert_eq!(
        registered(dps_http::route_table::<tokens_api::TokensApi>()),
        documented(&doc)
    );
}

#[tokio::test]
async fn every_platform_api_route_is_documented_and_nothing_else() {
    let doc = served_document(Service::Platform).await;
    assert_eq!(
        registered(dps_http::route_table::<platform_api::PlatformApi>()),
        documented(&doc)
    );
}

/// Every operation of `doc` and the statuses it documents.
fn statuses(doc: &Value) -> Vec<(String, BTreeSet<String>)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let codes = operation["responses"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            out.push((format!("{} {path}", method.to_uppercase()), codes));
        }
    }
    out
}

/// Every `$ref` in `value` names a schema the document has.
fn refs_resolve(doc: &Value, value: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let name = r.trim_start_matches("#/components/schemas/");
                assert!(
                    doc["components"]["schemas"].get(name).is_some(),
                    "{r} is not in the document"
                );
            }
            map.values().for_each(|v| refs_resolve(doc, v));
        }
        Value::Array(items) => items.iter().for_each(|v| refs_resolve(doc, v)),
        _ => {}
    }
}

#[tokio::test]
async fn every_operation_documents_the_answers_the_edge_and_the_database_can_give() {
    for (service, area_429) in [(Service::Tokens, true), (Service::Platform, false)] {
        let doc = served_document(service).await;
        refs_resolve(&doc, &doc["paths"]);
        for (operation, codes) in statuses(&doc) {
            for code in ["400", "426"] {
                assert!(codes.contains(code), "{operation} lacks {code}: {codes:?}");
            }
            if operation.ends_with("/openapi.json") {
                continue;
            }
            assert!(codes.contains("503"), "{operation} lacks 503: {codes:?}");
            if area_429 && !operation.ends_with("/health") {
                assert!(codes.contains("429"), "{operation} lacks 429: {codes:?}");
            }
        }
    }
}

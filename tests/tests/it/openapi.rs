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

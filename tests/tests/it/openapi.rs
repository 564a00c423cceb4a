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

/// Each operation's id, by `METHOD path`.
fn operation_ids(doc: &Value) -> Vec<(String, String)> {
    let mut ids = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap_or_default();
            ids.push((format!("{} {path}", method.to_uppercase()), id.to_owned()));
        }
    }
    ids
}

#[tokio::test]
async fn operation_ids_are_unique_and_every_link_names_one_with_its_parameters() {
    for (service, expected_links) in [(Service::Tokens, 2), (Service::Platform, 21)] {
        let doc = served_document(service).await;
        let ids = operation_ids(&doc);
        let distinct: BTreeSet<&str> = ids.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(distinct.len(), ids.len(), "repeated operation ids: {ids:?}");
        assert!(!distinct.contains(""), "an operation has no id: {ids:?}");

        let mut links = 0;
        for item in doc["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                for response in operation["responses"].as_object().unwrap().values() {
                    let Some(found) = response.get("links").and_then(Value::as_object) else {
                        continue;
                    };
                    for (name, link) in found {
                        links += 1;
                        // OpenAPI spells it operationId; utoipa's snake case must not leak.
                        let target = link["operationId"]
                            .as_str()
                            .unwrap_or_else(|| panic!("link {name} has no operationId: {link}"));
                        assert!(distinct.contains(target), "link {name} names {target}");
                        let (operation, _) = ids.iter().find(|(_, id)| id == target).unwrap();
                        for (parameter, expression) in link["parameters"].as_object().unwrap() {
                            assert!(
                                operation.contains(&format!("{{{parameter}}}")),
                                "link {name} fills {parameter}, not a parameter of {operation}"
                            );
                            assert!(
                                expression
                                    .as_str()
                                    .is_some_and(|e| e.starts_with("$response.body#/")),
                                "{expression}"
                            );
                        }
                    }
                }
            }
        }
        assert_eq!(links, expected_links, "{service:?}");
    }
}

#[tokio::test]
async fn platform_api_documents_its_envelope_and_pagination() {
    let doc = served_document(Service::Platform).await;
    let list = &doc["paths"]["/api/v1/connectors"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    let required: BTreeSet<&str> = list["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        required,
        BTreeSet::from(["status", "data", "metadata", "pagination"])
    );
    assert_eq!(list["properties"]["data"]["type"], "array");
    let one = &doc["paths"]["/api/v1/connectors/{id}"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    assert!(one["properties"].get("pagination").is_none(), "{one}");
    assert_eq!(
        one["properties"]["data"]["$ref"],
        "#/components/schemas/Connector"
    );
}

/// The documents as served, byte for byte as committed in docs/openapi/: a change to a wire
/// shape is a reviewed diff of those files, never a side effect. `DPS_UPDATE_OPENAPI=1` writes
/// the served documents there instead.
#[tokio::test]
async fn the_served_documents_are_the_committed_ones() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi");
    for (service, file) in [
        (Service::Tokens, "tokens-api.json"),
        (Service::Platform, "platform-api.json"),
    ] {
        let served = serde_json::to_string_pretty(&served_document(service).await).unwrap() + "\n";
        let path = dir.join(file);
        if std::env::var("DPS_UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &served).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap();
        assert!(
            served == committed,
            "{file} differs from what the service serves; if the change is meant, run this test with DPS_UPDATE_OPENAPI=1 and review the diff"
        );
    }
}

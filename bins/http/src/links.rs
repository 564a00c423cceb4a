//! What a generated client needs to move between operations: operation ids unique in the
//! document, and OpenAPI links from the operation that creates or lists a resource to the
//! operations that read, change or delete it (schemathesis follows them in its stateful phase).

use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::{OpenApi, RefOr};

/// Names every operation by its method and path (`get_connectors_id`): unique by construction,
/// where the handlers' own names (`list`, `get`) repeat across resources.
pub fn unique_operation_ids(openapi: &mut OpenApi) {
    for (path, item) in &mut openapi.paths.paths {
        for (method, operation) in operations_mut(item) {
            if let Some(operation) = operation {
                operation.operation_id = Some(operation_id(method, path));
            }
        }
    }
}

/// The id [`unique_operation_ids`] gives the operation `method path`.
fn operation_id(method: &str, path: &str) -> String {
    let words: Vec<String> = path
        .trim_start_matches("/api/v1")
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_matches(|c| c == '{' || c == '}')
                .replace(['-', '.'], "_")
        })
        .collect();
    format!("{method}_{}", words.join("_"))
}

/// A path's operations, by method.
pub(crate) fn operations_mut(item: &mut PathItem) -> [(&'static str, &mut Option<Operation>); 5] {
    [
        ("get", &mut item.get),
        ("put", &mut item.put),
        ("post", &mut item.post),
        ("delete", &mut item.delete),
        ("patch", &mut item.patch),
    ]
}

/// A link: from `from`'s `status` answer, to `to`, whose path parameter `parameter` takes the
/// value at `pointer` in the answer's body (for example `/data/id`).
#[derive(Debug, Clone, Copy)]
pub struct LinkSpec {
    pub from: (&'static str, &'static str),
    pub status: &'static str,
    pub to: (&'static str, &'static str),
    pub parameter: &'static str,
    pub pointer: &'static str,
}

/// Adds each link. A link whose ends are not both in the document is a programming error, and
/// the document test catches it: every `to` must resolve.
pub fn add_links(openapi: &mut OpenApi, links: &[LinkSpec]) {
    for link in links {
        if operation_mut(openapi, link.to).is_none() {
            continue;
        }
        let target = operation_id(link.to.0, link.to.1);
        let Some(operation) = operation_mut(openapi, link.from) else {
            continue;
        };
        let Some(RefOr::T(response)) = operation.responses.responses.get_mut(link.status) else {
            continue;
        };
        response.links.insert(
            target.clone(),
            LinkBuilder::new()
                .operation_id(target)
                .parameter(link.parameter, format!("$response.body#{}", link.pointer))
                .build()
                .into(),
        );
    }
}

fn operation_mut<'a>(
    openapi: &'a mut OpenApi,
    (method, path): (&str, &str),
) -> Option<&'a mut Operation> {
    let item = openapi.paths.paths.get_mut(path)?;
    operations_mut(item)
        .into_iter()
        .find(|(m, _)| *m == method)
        .and_then(|(_, operation)| operation.as_mut())
}

/// The document as served. utoipa 5 writes a link's fields in snake case (`operation_id`);
/// OpenAPI names them in camel case (`operationId`), so they are renamed here.
pub fn served_document(openapi: &OpenApi) -> serde_json::Value {
    let mut document = serde_json::to_value(openapi).unwrap_or_default();
    if let Some(paths) = document
        .get_mut("paths")
        .and_then(serde_json::Value::as_object_mut)
    {
        let links = paths
            .values_mut()
            .filter_map(serde_json::Value::as_object_mut)
            .flat_map(|item| item.values_mut())
            .filter_map(|operation| operation.get_mut("responses"))
            .filter_map(serde_json::Value::as_object_mut)
            .flat_map(|responses| responses.values_mut())
            .filter_map(|response| response.get_mut("links"))
            .filter_map(serde_json::Value::as_object_mut)
            .flat_map(|links| links.values_mut())
            .filter_map(serde_json::Value::as_object_mut);
        for link in links {
            for (snake, camel) in [
                ("operation_id", "operationId"),
                ("operation_ref", "operationRef"),
                ("request_body", "requestBody"),
            ] {
                if let Some(value) = link.remove(snake) {
                    link.insert(camel.to_owned(), value);
                }
            }
        }
    }
    document
}

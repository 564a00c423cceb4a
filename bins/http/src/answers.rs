//! The answers every operation can give whatever its handler does, added to both OpenAPI
//! documents so that a generated client knows them: the edge's (426 for an unsupported SDK
//! major, 400 for a malformed `X-Service-SDK-Version` or a NUL character in the path or query),
//! the database's (503 when it does not answer in time) and, in tokens-api, the rate limits'
//! (429 with `Retry-After`). An operation that documents a status itself keeps its own text.

use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder, Schema};

use crate::error::Area;

/// Whether an operation is answered without the database (the document itself).
fn serves_itself(path: &str) -> bool {
    path.ends_with("/openapi.json")
}

/// Adds the answers shared by every operation of `area`'s document, where missing.
pub fn document_common_answers(openapi: &mut OpenApi, area: Area) {
    let schema = match area {
        Area::Tokens => "ErrorBody",
        Area::Platform => "ErrorEnvelope",
    };
    let answer = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name(schema)))
                    .build(),
            )
            .build()
    };
    for (path, item) in &mut openapi.paths.paths {
        let operations = crate::links::operations_mut(item).map(|(_, operation)| operation);
        for operation in operations.into_iter().flatten() {
            if area == Area::Platform && !serves_itself(path) {
                envelope_successes(operation);
            }
            non_empty_path_parameters(operation);
            let responses = &mut operation.responses.responses;
            let mut add = |status: &str, description: &str| {
                responses
                    .entry(status.to_owned())
                    .or_insert_with(|| answer(description).into());
            };
            add(
                "400",
                "A malformed X-Service-SDK-Version, or a NUL character (%00) in the path or query",
            );
            add(
                "426",
                "UNSUPPORTED_SDK_VERSION: X-Service-SDK-Version names a major version this \
                 deployment does not support; the body lists the supported ones",
            );
            if serves_itself(path) {
                continue;
            }
            add(
                "503",
                "SERVICE_UNAVAILABLE (retryable): the database did not answer in time",
            );
            if area == Area::Tokens && !path.ends_with("/health") {
                add(
                    "429",
                    "RATE_LIMIT_EXCEEDED: the caller's or the tenant's limit (or, for a request \
                     whose caller is not known, the client address's) is spent; Retry-After \
                     says when to retry",
                );
            }
        }
    }
}

/// Area B answers every success inside its envelope: `status`, `data`, `metadata`, and
/// `pagination` on a list that takes a cursor. The handlers document `data`; this wraps each
/// success's JSON schema so that the document describes the whole body.
fn envelope_successes(operation: &mut Operation) {
    let paged = operation.parameters.iter().flatten().any(|parameter| {
        parameter.name == "cursor" && matches!(parameter.parameter_in, ParameterIn::Query)
    });
    for (status, response) in &mut operation.responses.responses {
        let RefOr::T(response) = response else {
            continue;
        };
        if !status.starts_with('2') {
            continue;
        }
        for content in response.content.values_mut() {
            if let Some(data) = content.schema.take() {
                content.schema = Some(enveloped(data, paged).into());
            }
        }
    }
}

fn enveloped(data: RefOr<Schema>, paged: bool) -> Schema {
    let mut envelope = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "status",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["success"])),
        )
        .required("status")
        .property("data", data)
        .required("data")
        .property("metadata", Ref::from_schema_name("Metadata"))
        .required("metadata");
    if paged {
        envelope = envelope
            .property("pagination", Ref::from_schema_name("Pagination"))
            .required("pagination");
    }
    envelope.build().into()
}

/// A path segment is never empty: an empty id would address another route (`/connectors//test`
/// is not `/connectors/{id}/test`), so every path parameter says so.
fn non_empty_path_parameters(operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        if !matches!(parameter.parameter_in, ParameterIn::Path) {
            continue;
        }
        if let Some(RefOr::T(Schema::Object(object))) = parameter.schema.as_mut()
            && object.min_length.is_none()
        {
            object.min_length = Some(1);
        }
    }
}

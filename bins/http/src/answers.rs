//! The answers every operation can give whatever its handler does, added to both OpenAPI
//! documents so that a generated client knows them: the edge's (426 for an unsupported SDK
//! major, 400 for a malformed `X-Service-SDK-Version` or a NUL character in the path or query),
//! the database's (503 when it does not answer in time) and, in tokens-api, the rate limits'
//! (429 with `Retry-After`). An operation that documents a status itself keeps its own text.

use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, ResponseBuilder};

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
        let operations: [&mut Option<Operation>; 5] = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
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

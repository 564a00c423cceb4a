//! How bad input becomes an [`ApiError`]: bodies, queries and paths that do not parse, in
//! messages that name the position and the expectation, never the value.

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::web;

use crate::error::ApiError;

/// Removes echoed input from a serde message. serde writes the offending value into
/// "invalid type" and "invalid value" messages, and that value may be personal data.
pub(crate) fn sanitize_serde_message(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: ", "unknown variant "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            // The last ", expected ": the echoed value may hold those words itself.
            let expected = rest
                .rfind(", expected ")
                .map(|i| &rest[i + 2..])
                .unwrap_or("");
            let kind = prefix.trim_end_matches(": ").trim_end();
            return if expected.is_empty() {
                kind.to_owned()
            } else {
                format!("{kind}, {expected}")
            };
        }
    }
    // An unknown field is named by the client, who may have sent a value as a key: it is
    // repeated only when it looks like a field name.
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (name, expected) = rest.split_once('`').unwrap_or((rest, ""));
        return if ids::field_name_like(name) {
            format!("unknown field `{name}`{expected}")
        } else {
            format!("unknown field{expected}")
        };
    }
    // Other serde messages ("missing field `x`", "duplicate field `y`") name the service's own
    // fields.
    message.to_owned()
}

/// A body that does not parse, or parses into the wrong shape; the message names the position
/// and the expectation, never the value.
pub(crate) fn serde_json_error(e: serde_json::Error) -> ApiError {
    let position = format!("line {}, column {}", e.line(), e.column());
    if e.is_data() {
        ApiError::invalid(format!(
            "the JSON body does not have the expected shape: {} (at {position})",
            sanitize_serde_message(e.to_string().split(" at line ").next().unwrap_or(""))
        ))
    } else {
        ApiError::invalid(format!(
            "the request body is not valid JSON (at {position})"
        ))
    }
}

fn json_error(error: JsonPayloadError) -> ApiError {
    match error {
        JsonPayloadError::ContentType => {
            ApiError::invalid("the request body must be JSON (Content-Type: application/json)")
        }
        JsonPayloadError::Overflow { limit }
        | JsonPayloadError::OverflowKnownLength { limit, .. } => ApiError::invalid(format!(
            "the request body is larger than the {limit}-byte limit"
        )),
        JsonPayloadError::Deserialize(e) => serde_json_error(e),
        JsonPayloadError::Serialize(_) | JsonPayloadError::Payload(_) => {
            ApiError::invalid("the request body could not be read")
        }
        _ => ApiError::invalid("the request body could not be read"),
    }
}

fn query_error(error: QueryPayloadError) -> ApiError {
    match error {
        QueryPayloadError::Deserialize(e) => ApiError::invalid(format!(
            "invalid query parameters: {}",
            sanitize_serde_message(&e.to_string())
        )),
        _ => ApiError::invalid("invalid query parameters"),
    }
}

fn path_error(error: PathError) -> ApiError {
    match error {
        PathError::Deserialize(e) => ApiError::invalid(format!(
            "invalid path parameter: {}",
            sanitize_serde_message(&e.to_string())
        )),
        _ => ApiError::invalid("invalid path parameter"),
    }
}

/// The extractor configurations both services register, so that every body, query and path
/// problem becomes an [`ApiError`] in the area's shape.
pub fn body_configs(
    max_body_bytes: usize,
) -> (
    web::JsonConfig,
    web::QueryConfig,
    web::PathConfig,
    web::PayloadConfig,
) {
    (
        web::JsonConfig::default()
            .limit(max_body_bytes)
            .error_handler(|e, _| json_error(e).into()),
        web::QueryConfig::default().error_handler(|e, _| query_error(e).into()),
        web::PathConfig::default().error_handler(|e, _| path_error(e).into()),
        web::PayloadConfig::default().limit(max_body_bytes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_lose_echoed_values() {
        assert_eq!(
            sanitize_serde_message("invalid type: string \"123-45-6789\", expected u32"),
            "invalid type, expected u32"
        );
        assert_eq!(
            sanitize_serde_message("invalid value: integer `123456789`, expected a string"),
            "invalid value, expected a string"
        );
        assert_eq!(
            sanitize_serde_message("missing field `items`"),
            "missing field `items`"
        );
        // A value that holds the words the message is split on.
        assert_eq!(
            sanitize_serde_message(
                "invalid type: string \"x, expected 123-45-6789\", expected a sequence"
            ),
            "invalid type, expected a sequence"
        );
        assert_eq!(
            sanitize_serde_message(
                "unknown variant `x, expected 219-09-9999`, expected one of `a`, `b`"
            ),
            "unknown variant, expected one of `a`, `b`"
        );
        // An unknown field is named only when it looks like a name.
        assert_eq!(
            sanitize_serde_message("unknown field `note`, expected `tokens` or `grant_jwt`"),
            "unknown field `note`, expected `tokens` or `grant_jwt`"
        );
        for key in ["ann.lee@example.com", "219-09-9999", "Ann Lee", "123456789"] {
            let message =
                sanitize_serde_message(&format!("unknown field `{key}`, expected `items`"));
            assert_eq!(message, "unknown field, expected `items`", "{key}");
        }
    }
}

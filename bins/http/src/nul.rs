//! The NUL character (U+0000). Postgres `text` and `jsonb` cannot hold it, so a request that
//! carried one into a column would fail there, as a 500, after part of the work was done.
//! Every request is checked before any of it runs: the path and the query string at the edge,
//! JSON and YAML bodies as they are read. The answer is a 400 that names the field (never its
//! value). A key or parameter name is repeated only when it looks like a field name
//! (`ids::field_name_like`): a client may send a value as a key (`{"123-45-6789": …}`), and
//! such a key is written `["…"]`.

use serde_json::Value;

use crate::error::ApiError;

/// The 400 for a NUL character in `field`.
pub fn refused(field: &str) -> ApiError {
    ApiError::invalid(format!(
        "{field} must not contain the NUL character (U+0000)"
    ))
    .with_details(serde_json::json!({ "field": field }))
}

/// Whether a JSON text may hold a NUL character: JSON can only write one as the escape
/// `\u0000`, so a body without that sequence holds none and is not walked.
pub fn may_hold_nul(json: &[u8]) -> bool {
    memchr::memmem::find(json, b"\\u0000").is_some()
}

/// Where the first string or key in `value` that holds U+0000 is, as a field name:
/// `purpose`, `items[2].value`, `config.buckets[0]`; a key that holds it is named by the
/// object it is in (`type_rules (a key)`).
pub fn nul_at(value: &Value) -> Option<String> {
    // Depth-first, with each container's path; serde_json has already bounded the depth.
    let mut stack: Vec<(&Value, String)> = vec![(value, String::new())];
    while let Some((value, path)) = stack.pop() {
        match value {
            Value::String(s) if s.contains('\0') => {
                return Some(if path.is_empty() {
                    "the body".to_owned()
                } else {
                    path
                });
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, format!("{path}[{i}]")));
                }
            }
            Value::Object(map) => {
                if map.keys().any(|k| k.contains('\0')) {
                    let container = if path.is_empty() { "the body" } else { &path };
                    return Some(format!("{container} (a key)"));
                }
                let children: Vec<_> = map
                    .iter()
                    .map(|(k, v)| {
                        let name = match (ids::field_name_like(k), path.is_empty()) {
                            (true, true) => k.clone(),
                            (true, false) => format!("{path}.{k}"),
                            (false, _) => format!("{path}[\"…\"]"),
                        };
                        (v, name)
                    })
                    .collect();
                stack.extend(children.into_iter().rev());
            }
            _ => {}
        }
    }
    None
}

/// Refuses a NUL character anywhere in `value` (a body read from YAML, or from JSON that may
/// hold one).
pub fn check(value: &Value) -> Result<(), ApiError> {
    match nul_at(value) {
        Some(field) => Err(refused(&field)),
        None => Ok(()),
    }
}

/// The query parameter whose name or value holds an encoded NUL (`%00`), if any; the path,
/// if it holds one.
pub fn in_uri(path: &str, query: &str) -> Option<String> {
    let encoded_nul = |s: &str| {
        s.as_bytes()
            .windows(3)
            .any(|w| w.eq_ignore_ascii_case(b"%00"))
    };
    if encoded_nul(path) {
        return Some("the path".to_owned());
    }
    for pair in query.split('&') {
        if !encoded_nul(pair) {
            continue;
        }
        let name = pair.split('=').next().unwrap_or("");
        let decoded = percent_decode(name);
        return Some(if encoded_nul(name) || !ids::field_name_like(&decoded) {
            "a query parameter's name".to_owned()
        } else {
            format!("query parameter {decoded}")
        });
    }
    None
}

/// `%XX` decoding (and `+` as a space) of a query parameter's name, lossy on bad UTF-8: only
/// used to name the parameter.
fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_field_that_holds_a_nul() {
        assert_eq!(
            nul_at(&json!({"purpose": "a\u{0}b"})).as_deref(),
            Some("purpose")
        );
        assert_eq!(
            nul_at(&json!({"items": [{"value": "ok"}, {"value": "x\u{0}"}]})).as_deref(),
            Some("items[1].value")
        );
        assert_eq!(
            nul_at(&json!({"config": {"buckets": ["a", "\u{0}"]}})).as_deref(),
            Some("config.buckets[1]")
        );
        assert_eq!(
            nul_at(&json!({"type_rules": {"a\u{0}": {}}})).as_deref(),
            Some("type_rules (a key)")
        );
        assert_eq!(nul_at(&json!({"a": "b", "c": [1, null, true]})), None);
        // A key that is a value is not repeated.
        assert_eq!(
            nul_at(&json!({"123-45-6789": "\u{0}"})).as_deref(),
            Some(r#"["…"]"#)
        );
        assert_eq!(
            nul_at(&json!({"meta": {"ann@example.com": ["\u{0}"]}})).as_deref(),
            Some(r#"meta["…"][0]"#)
        );
    }

    #[test]
    fn the_first_field_in_document_order_is_named() {
        assert_eq!(
            nul_at(&json!({"a": "\u{0}", "b": "\u{0}"})).as_deref(),
            Some("a")
        );
    }

    #[test]
    fn only_the_escape_can_write_a_nul_in_json() {
        assert!(may_hold_nul(br#"{"a":"\u0000"}"#));
        assert!(!may_hold_nul(br#"{"a":"0000 u"}"#));
        // An escaped backslash before `u0000` is no NUL; the walk finds none then.
        let body = br#"{"a":"\\u0000"}"#;
        assert!(may_hold_nul(body));
        let value: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(nul_at(&value), None);
    }

    #[test]
    fn names_the_query_parameter_or_the_path() {
        assert_eq!(
            in_uri("/api/v1/connectors", "status=active&name=a%00b").as_deref(),
            Some("query parameter name")
        );
        assert_eq!(in_uri("/a%00b", "").as_deref(), Some("the path"));
        assert_eq!(
            in_uri("/x", "n%00=1").as_deref(),
            Some("a query parameter's name")
        );
        assert_eq!(
            in_uri("/x", "123-45-6789=%00").as_deref(),
            Some("a query parameter's name"),
            "a name that is a value is not repeated"
        );
        assert_eq!(in_uri("/x", "a=%2500"), None);
        assert_eq!(in_uri("/x", "limit=10&cursor=abc"), None);
    }
}

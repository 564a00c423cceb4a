//! Reading a receipt or a JWKS from bytes, as I-JSON (RFC 7493) which JCS presumes: a member
//! name given twice makes the text malformed.
//!
//! `serde_json` keeps the last of two members with the same name, and other parsers keep the
//! first. A document with `"outcome": "blocked"` followed by `"outcome": "executed"` would then
//! verify here while a person or another tool reads the other value; refusing duplicates
//! leaves one reading.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `bytes` as one JSON value, refusing duplicate member names (and everything
/// `serde_json` refuses: trailing text, lone surrogates, nesting deeper than 128).
pub fn parse_json(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Strict.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Builds a `Value` like `serde_json` does, except that a repeated member name is an error.
#[derive(Clone, Copy)]
struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Value, E> {
        Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number is not finite"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            if members.contains_key(&name) {
                // The name is quoted with escapes, so no control character reaches a terminal.
                return Err(A::Error::custom(format!(
                    "the member name {name:?} appears twice"
                )));
            }
            let value = map.next_value_seed(self)?;
            members.insert(name, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test")]

    use serde_json::json;

    use super::*;

    #[test]
    fn parses_like_serde_json() {
        let text =
            br#"{"a":[1,-2,3.5,"x\u20ac",true,false,null,{}],"b":{"c":18446744073709551615}}"#;
        assert_eq!(
            parse_json(text).unwrap(),
            serde_json::from_slice::<Value>(text).unwrap()
        );
        assert_eq!(parse_json(b" 7 ").unwrap(), json!(7));
    }

    #[test]
    fn refuses_duplicate_names_at_any_depth_and_trailing_text() {
        let err = parse_json(br#"{"a":1,"a":2}"#).unwrap_err();
        assert!(err.to_string().contains("\"a\" appears twice"), "{err}");
        assert!(parse_json(br#"[{"x":{"b":1,"c":{},"b":1}}]"#).is_err());
        // The same name in sibling objects is fine.
        assert!(parse_json(br#"[{"b":1},{"b":1}]"#).is_ok());
        assert!(parse_json(b"{} {}").is_err());
        assert!(parse_json(br#""\ud800""#).is_err());
    }
}

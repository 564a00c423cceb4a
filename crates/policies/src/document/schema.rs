//! The second layer: the document's structure, field by field, collecting every problem.
//!
//! serde stops at the first error, so this walks the value by hand: at every level it names
//! each unknown field, each missing required field, each wrong type and each value out of its
//! range or set, and then builds the typed [`PolicyDocument`] only when there was none.

use std::collections::HashSet;

/// Mask characters that would break the CSV, TSV or JSON the mask is written into.
const MASK_CHARS_REFUSED: &str = "\"'\\,;|`";

use detect::Selector;
use ids::{ConnectorId, TokenPolicyId};
use serde_json::{Map, Value};

use super::{
    API_VERSION, Action, AlertConfig, Condition, Destination, MaskConfig, Metadata, Mode, Pointer,
    PolicyDocument, Problem, QuarantineConfig, Scope, Severity, Spec, TokenizeConfig,
};

pub const MAX_NAME_CHARS: usize = 128;
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
pub const MAX_TAGS: usize = 20;
pub const MAX_TAG_CHARS: usize = 64;
pub const MAX_SCOPE_CONNECTORS: usize = 100;
pub const MAX_CONDITIONS: usize = 50;
pub const MAX_ACTIONS: usize = 10;
pub const MAX_CHANNELS: usize = 10;
pub const MAX_KEEP_LAST: u64 = 4;
pub const MAX_PREFIX_CHARS: usize = 512;

/// Checks a document's structure and returns it typed, or every problem found.
pub fn from_value(value: &Value) -> Result<PolicyDocument, Vec<Problem>> {
    let mut w = Walk::default();
    let document = w.document(value);
    match document {
        Some(d) if w.problems.is_empty() => Ok(d),
        _ => Err(w.problems),
    }
}

#[derive(Default)]
struct Walk {
    problems: Vec<Problem>,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

impl Walk {
    fn problem(&mut self, at: &Pointer, reason: impl Into<std::borrow::Cow<'static, str>>) {
        self.problems.push(Problem::at(at, reason));
    }

    /// A mapping with only the given fields; each unknown one is a problem.
    fn mapping<'v>(
        &mut self,
        v: &'v Value,
        at: &Pointer,
        fields: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = v else {
            self.problem(at, format!("must be a mapping, not {}", type_name(v)));
            return None;
        };
        for key in map.keys() {
            if !fields.contains(&key.as_str()) {
                // A client may write a value as a key: it is repeated only when it looks like
                // a field name.
                let shown = if ids::field_name_like(key) {
                    key
                } else {
                    "…"
                };
                self.problem(
                    &at.key(shown),
                    format!("unknown field; expected one of {}", fields.join(", ")),
                );
            }
        }
        Some(map)
    }

    /// A required field; a null counts as missing.
    fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        at: &Pointer,
        key: &str,
    ) -> Option<&'v Value> {
        match map.get(key) {
            None | Some(Value::Null) => {
                self.problem(&at.key(key), "is required");
                None
            }
            Some(v) => Some(v),
        }
    }

    /// An optional field; a null counts as absent.
    fn optional<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        map.get(key).filter(|v| !v.is_null())
    }

    /// Text of `min..=max` characters, without control characters.
    fn text(&mut self, v: &Value, at: &Pointer, min: usize, max: usize) -> Option<String> {
        let Value::String(s) = v else {
            self.problem(at, format!("must be a string, not {}", type_name(v)));
            return None;
        };
        let chars = s.chars().count();
        if chars < min || chars > max {
            self.problem(
                at,
                if min == max {
                    format!("must be exactly {min} character")
                } else {
                    format!("must be {min} to {max} characters")
                },
            );
            return None;
        }
        if s.chars().any(char::is_control) && min != max {
            self.problem(at, "must not hold control characters");
            return None;
        }
        Some(s.clone())
    }

    /// A free text of at most `max` characters: as [`Self::text`], with line breaks and tabs
    /// allowed (a description written as a YAML block, `description: |`).
    fn prose(&mut self, v: &Value, at: &Pointer, max: usize) -> Option<String> {
        let Value::String(s) = v else {
            return self.text(v, at, 0, max);
        };
        let flat = Value::String(s.replace(['\n', '\t'], " "));
        self.text(&flat, at, 0, max).map(|_| s.clone())
    }

    /// One of a fixed set of words.
    fn word<T>(
        &mut self,
        v: &Value,
        at: &Pointer,
        parse: impl Fn(&str) -> Option<T>,
        allowed: &[&str],
    ) -> Option<T> {
        let Value::String(s) = v else {
            self.problem(at, format!("must be a string, not {}", type_name(v)));
            return None;
        };
        let parsed = parse(s);
        if parsed.is_none() {
            self.problem(at, format!("must be one of {}", allowed.join(", ")));
        }
        parsed
    }

    /// A list of `min..=max` items.
    fn list<'v>(
        &mut self,
        v: &'v Value,
        at: &Pointer,
        min: usize,
        max: usize,
    ) -> Option<&'v [Value]> {
        let Value::Array(items) = v else {
            self.problem(at, format!("must be a list, not {}", type_name(v)));
            return None;
        };
        if items.len() < min {
            self.problem(
                at,
                if min == 1 {
                    "must hold at least one item".to_owned()
                } else {
                    format!("must hold at least {min} items")
                },
            );
            return None;
        }
        if items.len() > max {
            self.problem(at, format!("must hold at most {max} items"));
            return None;
        }
        Some(items)
    }

    /// Items of a list, each read by `item`, with duplicates reported.
    fn unique<T: Eq + std::hash::Hash + Clone>(
        &mut self,
        items: &[Value],
        at: &Pointer,
        mut item: impl FnMut(&mut Self, &Value, &Pointer) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, v) in items.iter().enumerate() {
            let here = at.index(i);
            match item(self, v, &here) {
                Some(t) if seen.insert(t.clone()) => out.push(t),
                Some(_) => {
                    self.problem(&here, "duplicates an earlier item");
                    ok = false;
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn document(&mut self, v: &Value) -> Option<PolicyDocument> {
        let root = Pointer::root();
        let map = self.mapping(v, &root, &["apiVersion", "kind", "metadata", "spec"])?;
        if let Some(v) = self.required(map, &root, "apiVersion") {
            self.word(
                v,
                &root.key("apiVersion"),
                |s| (s == API_VERSION).then_some(()),
                &[API_VERSION],
            );
        }
        if let Some(v) = self.required(map, &root, "kind") {
            self.word(
                v,
                &root.key("kind"),
                |s| (s == "Policy").then_some(()),
                &["Policy"],
            );
        }
        let metadata = self
            .required(map, &root, "metadata")
            .and_then(|v| self.metadata(v, &root.key("metadata")));
        let spec = self
            .required(map, &root, "spec")
            .and_then(|v| self.spec(v, &root.key("spec")));
        Some(PolicyDocument {
            metadata: metadata?,
            spec: spec?,
        })
    }

    fn metadata(&mut self, v: &Value, at: &Pointer) -> Option<Metadata> {
        let map = self.mapping(v, at, &["name", "description", "tags"])?;
        let name = self
            .required(map, at, "name")
            .and_then(|v| self.text(v, &at.key("name"), 1, MAX_NAME_CHARS));
        if name.as_deref().is_some_and(|n| n.trim() != n) {
            self.problem(&at.key("name"), "must not start or end with white space");
        }
        let description = match Self::optional(map, "description") {
            Some(v) => self
                .prose(v, &at.key("description"), MAX_DESCRIPTION_CHARS)
                .map(Some),
            None => Some(None),
        };
        let tags = match Self::optional(map, "tags") {
            None => Some(Vec::new()),
            Some(v) => {
                let at = at.key("tags");
                self.list(v, &at, 0, MAX_TAGS)
                    .and_then(|items| self.unique(items, &at, |w, v, at| w.tag(v, at)))
            }
        };
        Some(Metadata {
            name: name?,
            description: description?,
            tags: tags?,
        })
    }

    /// Letters, digits and `-_.:/`, 1 to 64 characters: a tag is matched exactly by the
    /// list's `tag` filter, so it has no spaces or commas to get wrong.
    fn tag(&mut self, v: &Value, at: &Pointer) -> Option<String> {
        let tag = self.text(v, at, 1, MAX_TAG_CHARS)?;
        if !tag
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/'))
        {
            self.problem(at, "may hold only letters, digits and - _ . : /");
            return None;
        }
        Some(tag)
    }

    fn spec(&mut self, v: &Value, at: &Pointer) -> Option<Spec> {
        let map = self.mapping(v, at, &["mode", "scope", "conditions", "actions"])?;
        let mode = self
            .required(map, at, "mode")
            .and_then(|v| self.word(v, &at.key("mode"), Mode::parse, &["enforced", "dry-run"]));
        let scope = match Self::optional(map, "scope") {
            None => Some(Scope::default()),
            Some(v) => self.scope(v, &at.key("scope")),
        };
        let conditions = self.required(map, at, "conditions").and_then(|v| {
            let at = at.key("conditions");
            let items = self.list(v, &at, 1, MAX_CONDITIONS)?;
            let mut out = Vec::with_capacity(items.len());
            let mut ok = true;
            let mut seen = HashSet::new();
            for (i, item) in items.iter().enumerate() {
                match self.condition(item, &at.index(i)) {
                    Some(c) if seen.insert(c.category.clone()) => out.push(c),
                    Some(_) => {
                        self.problem(
                            &at.index(i).key("category"),
                            "another condition names this category; keep one",
                        );
                        ok = false;
                    }
                    None => ok = false,
                }
            }
            ok.then_some(out)
        });
        let actions = self.required(map, at, "actions").and_then(|v| {
            let at = at.key("actions");
            let items = self.list(v, &at, 1, MAX_ACTIONS)?;
            let mut out: Vec<Action> = Vec::with_capacity(items.len());
            let mut ok = true;
            for (i, item) in items.iter().enumerate() {
                let Some(action) = self.action(item, &at.index(i)) else {
                    ok = false;
                    continue;
                };
                if action.action_type().changes_objects()
                    && out.iter().any(|a| a.action_type().changes_objects())
                {
                    self.problem(
                        &at.index(i).key("type"),
                        "a policy changes an object in one way only: at most one of \
                         tokenize, mask and quarantine",
                    );
                    ok = false;
                }
                out.push(action);
            }
            ok.then_some(out)
        });
        Some(Spec {
            mode: mode?,
            scope: scope?,
            conditions: conditions?,
            actions: actions?,
        })
    }

    fn scope(&mut self, v: &Value, at: &Pointer) -> Option<Scope> {
        let map = self.mapping(v, at, &["connectors"])?;
        let Some(v) = Self::optional(map, "connectors") else {
            return Some(Scope::default());
        };
        let at = at.key("connectors");
        let items = self.list(v, &at, 0, MAX_SCOPE_CONNECTORS)?;
        let connectors = self.unique(items, &at, |w, v, at| {
            let Value::String(s) = v else {
                w.problem(at, format!("must be a string, not {}", type_name(v)));
                return None;
            };
            let id = ConnectorId::parse(s);
            if id.is_none() {
                w.problem(at, "is not a connector id");
            }
            id
        })?;
        Some(Scope { connectors })
    }

    fn condition(&mut self, v: &Value, at: &Pointer) -> Option<Condition> {
        let map = self.mapping(v, at, &["category", "min_confidence"])?;
        let category = self.required(map, at, "category").and_then(|v| {
            let Value::String(s) = v else {
                self.problem(
                    &at.key("category"),
                    format!("must be a string, not {}", type_name(v)),
                );
                return None;
            };
            let selector = Selector::parse(s);
            if selector.is_none() {
                self.problem(
                    &at.key("category"),
                    "must be a detection category (government_id, contact, personal, \
                     financial, legal_medical), a pii type code (us_ssn, ca_sin, email, phone, \
                     date, dob, monetary, case_number, passport_us, passport_ca) or \
                     custom:<classifier name>",
                );
            }
            selector
        });
        let min_confidence = self.required(map, at, "min_confidence").and_then(|v| {
            let at = at.key("min_confidence");
            match v.as_f64() {
                Some(n) if (0.0..=1.0).contains(&n) => Some(n),
                Some(_) => {
                    self.problem(&at, "must be between 0 and 1");
                    None
                }
                None => {
                    self.problem(&at, format!("must be a number, not {}", type_name(v)));
                    None
                }
            }
        });
        Some(Condition {
            category: category?,
            min_confidence: min_confidence?,
        })
    }

    fn action(&mut self, v: &Value, at: &Pointer) -> Option<Action> {
        let map = self.mapping(v, at, &["type", "config"])?;
        let kind = self.required(map, at, "type").and_then(|v| {
            self.word(
                v,
                &at.key("type"),
                super::ActionType::parse,
                &["alert", "tokenize", "mask", "quarantine"],
            )
        })?;
        let config_at = at.key("config");
        let config = Self::optional(map, "config");
        let empty = Value::Object(Map::new());
        match kind {
            super::ActionType::Alert => {
                let v = self.required(map, at, "config")?;
                self.alert(v, &config_at).map(Action::Alert)
            }
            super::ActionType::Tokenize => {
                let v = self.required(map, at, "config")?;
                self.tokenize(v, &config_at).map(Action::Tokenize)
            }
            super::ActionType::Mask => self
                .mask(config.unwrap_or(&empty), &config_at)
                .map(Action::Mask),
            super::ActionType::Quarantine => {
                let v = self.required(map, at, "config")?;
                self.quarantine(v, &config_at).map(Action::Quarantine)
            }
        }
    }

    fn alert(&mut self, v: &Value, at: &Pointer) -> Option<AlertConfig> {
        let map = self.mapping(v, at, &["channels", "severity"])?;
        let channels = self.required(map, at, "channels").and_then(|v| {
            let at = at.key("channels");
            let items = self.list(v, &at, 1, MAX_CHANNELS)?;
            self.unique(items, &at, |w, v, at| w.channel_name(v, at))
        });
        let severity = self.required(map, at, "severity").and_then(|v| {
            self.word(
                v,
                &at.key("severity"),
                Severity::parse,
                &["critical", "high", "medium", "low"],
            )
        });
        Some(AlertConfig {
            channels: channels?,
            severity: severity?,
        })
    }

    fn channel_name(&mut self, v: &Value, at: &Pointer) -> Option<String> {
        let name = self.text(v, at, 1, crate::channel_name::MAX_NAME_CHARS)?;
        if !crate::channel_name::valid_name(&name) {
            self.problem(at, crate::channel_name::NAME_RULE);
            return None;
        }
        Some(name)
    }

    fn tokenize(&mut self, v: &Value, at: &Pointer) -> Option<TokenizeConfig> {
        let map = self.mapping(v, at, &["tokenization_policy_id"])?;
        let v = self.required(map, at, "tokenization_policy_id")?;
        let at = at.key("tokenization_policy_id");
        let Value::String(s) = v else {
            self.problem(&at, format!("must be a string, not {}", type_name(v)));
            return None;
        };
        let Some(id) = TokenPolicyId::parse(s) else {
            self.problem(&at, "is not a tokenization policy id");
            return None;
        };
        Some(TokenizeConfig {
            tokenization_policy_id: id,
        })
    }

    fn mask(&mut self, v: &Value, at: &Pointer) -> Option<MaskConfig> {
        let map = self.mapping(v, at, &["keep_last", "char"])?;
        let defaults = MaskConfig::default();
        let keep_last = match Self::optional(map, "keep_last") {
            None => Some(defaults.keep_last),
            Some(v) => match v.as_u64() {
                Some(n) if n <= MAX_KEEP_LAST => u8::try_from(n).ok(),
                _ if v.is_number() => {
                    self.problem(&at.key("keep_last"), "must be a whole number from 0 to 4");
                    None
                }
                _ => {
                    self.problem(
                        &at.key("keep_last"),
                        format!("must be a number, not {}", type_name(v)),
                    );
                    None
                }
            },
        };
        let char = match Self::optional(map, "char") {
            None => Some(defaults.char),
            Some(v) => self.text(v, &at.key("char"), 1, 1).and_then(|s| {
                let c = s.chars().next()?;
                if c.is_control() || c.is_whitespace() {
                    self.problem(&at.key("char"), "must be a visible character");
                    return None;
                }
                // The mask is written into CSV cells and JSON strings as it is: a quote, a
                // backslash or a delimiter would break the object it is written into.
                if MASK_CHARS_REFUSED.contains(c) {
                    self.problem(
                        &at.key("char"),
                        format!(
                            "must not be a quote, a backslash or a delimiter ({MASK_CHARS_REFUSED})"
                        ),
                    );
                    return None;
                }
                Some(c)
            }),
        };
        Some(MaskConfig {
            keep_last: keep_last?,
            char: char?,
        })
    }

    fn quarantine(&mut self, v: &Value, at: &Pointer) -> Option<QuarantineConfig> {
        let map = self.mapping(v, at, &["destination"])?;
        let v = self.required(map, at, "destination")?;
        let at = at.key("destination");
        let map = self.mapping(v, &at, &["bucket", "container", "prefix"])?;
        let bucket = match (
            Self::optional(map, "bucket"),
            Self::optional(map, "container"),
        ) {
            (Some(_), Some(_)) => {
                self.problem(&at, "names a bucket or a container, not both");
                None
            }
            (None, None) => {
                self.problem(&at.key("bucket"), "is required (or container, on Azure)");
                None
            }
            (Some(v), None) => self.bucket(v, &at.key("bucket")),
            (None, Some(v)) => self.bucket(v, &at.key("container")),
        };
        let prefix = match Self::optional(map, "prefix") {
            None => Some(None),
            Some(v) => {
                let at = at.key("prefix");
                match self.text(v, &at, 1, MAX_PREFIX_CHARS) {
                    Some(p) if p.starts_with('/') => {
                        self.problem(&at, "must not start with /");
                        None
                    }
                    Some(p) => Some(Some(p)),
                    None => None,
                }
            }
        };
        Some(QuarantineConfig {
            destination: Destination {
                bucket: bucket?,
                prefix: prefix?,
            },
        })
    }

    /// 3 to 63 of lower-case letters, digits, `-` and `.`, starting and ending with a letter or
    /// digit: the rule S3, GCS and Azure containers share.
    fn bucket(&mut self, v: &Value, at: &Pointer) -> Option<String> {
        let name = self.text(v, at, 3, 63)?;
        let bytes = name.as_bytes();
        let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        let ok = bytes.iter().all(|&b| edge(b) || b == b'-' || b == b'.')
            && bytes.first().copied().is_some_and(edge)
            && bytes.last().copied().is_some_and(edge);
        if !ok {
            self.problem(
                at,
                "must be 3 to 63 lower-case letters, digits, - or ., starting and ending with \
                 a letter or digit",
            );
            return None;
        }
        Some(name)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn valid() -> Value {
        json!({
            "apiVersion": API_VERSION,
            "kind": "Policy",
            "metadata": {"name": "ssn", "tags": ["pci"]},
            "spec": {
                "mode": "enforced",
                "conditions": [{"category": "us_ssn", "min_confidence": 0.8}],
                "actions": [
                    {"type": "alert", "config": {"channels": ["sec"], "severity": "high"}},
                    {"type": "mask"}
                ]
            }
        })
    }

    fn problems(v: &Value) -> Vec<(String, String)> {
        from_value(v)
            .unwrap_err()
            .into_iter()
            .map(|p| (p.pointer, p.reason.into_owned()))
            .collect()
    }

    #[test]
    fn a_valid_document_is_read_with_its_defaults() {
        let d = from_value(&valid()).unwrap();
        assert_eq!(d.spec.mode, Mode::Enforced);
        assert_eq!(d.spec.actions[1], Action::Mask(MaskConfig::default()));
        let canonical = d.to_value();
        assert_eq!(
            canonical["spec"]["actions"][1]["config"],
            json!({"keep_last": 0, "char": "*"})
        );
        assert_eq!(canonical["spec"]["scope"], json!({"connectors": []}));
        // The canonical form reads back to the same document.
        assert_eq!(from_value(&canonical).unwrap(), d);
    }

    #[test]
    fn a_description_may_span_lines_but_hold_no_other_control_character() {
        let mut v = valid();
        v["metadata"]["description"] = json!("Masks SSNs.\n\tSee the runbook.\n");
        let d = from_value(&v).unwrap();
        assert_eq!(
            d.metadata.description.as_deref(),
            Some("Masks SSNs.\n\tSee the runbook.\n")
        );
        v["metadata"]["description"] = json!("bell\u{7}");
        assert_eq!(problems(&v)[0].0, "/metadata/description");
        // A name is one line.
        v["metadata"]["description"] = json!("fine");
        v["metadata"]["name"] = json!("two\nlines");
        assert_eq!(problems(&v)[0].0, "/metadata/name");
    }

    #[test]
    fn an_unknown_key_that_is_a_value_is_not_repeated() {
        let mut v = valid();
        v["spec"]["123-45-6789"] = json!(true);
        v["metadata"]["ann@example.com"] = json!(1);
        let found = problems(&v);
        let pointers: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(pointers, ["/metadata/…", "/spec/…"]);
    }

    #[test]
    fn every_problem_is_named_at_once_by_pointer() {
        let mut v = valid();
        v["apiVersion"] = json!("v2");
        v["metadata"]["extra"] = json!(1);
        v["spec"]["conditions"][0]["min_confidence"] = json!(1.5);
        v["spec"]["actions"][0]["config"]["severity"] = json!("urgent");
        v["spec"]["actions"][1]["config"] = json!({"keep_last": 9, "colour": "red"});
        let found = problems(&v);
        let pointers: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/apiVersion",
                "/metadata/extra",
                "/spec/conditions/0/min_confidence",
                "/spec/actions/0/config/severity",
                "/spec/actions/1/config/colour",
                "/spec/actions/1/config/keep_last",
            ]
        );
        // No reason repeats the value it refuses.
        for (_, reason) in &found {
            assert!(
                !reason.contains("urgent") && !reason.contains("v2") && !reason.contains("1.5")
            );
        }
    }

    #[test]
    fn required_fields_and_list_bounds() {
        let v = json!({"apiVersion": API_VERSION, "kind": "Policy", "metadata": {},
            "spec": {"mode": "enforced", "conditions": [], "actions": [{"type": "alert"}]}});
        let found = problems(&v);
        let pointers: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/metadata/name",
                "/spec/conditions",
                "/spec/actions/0/config"
            ]
        );
    }

    #[test]
    fn a_mask_character_that_would_break_csv_or_json_is_refused() {
        for c in ["\"", "\\", ",", ";", "'", "|", " "] {
            let mut v = valid();
            v["spec"]["actions"][1]["config"] = json!({"char": c});
            assert_eq!(problems(&v)[0].0, "/spec/actions/1/config/char", "{c:?}");
        }
        for c in ["#", "x", "\u{2022}"] {
            let mut v = valid();
            v["spec"]["actions"][1]["config"] = json!({"char": c});
            assert!(from_value(&v).is_ok(), "{c:?}");
        }
    }

    #[test]
    fn one_object_changing_action_per_policy() {
        let mut v = valid();
        v["spec"]["actions"] = json!([
            {"type": "mask"},
            {"type": "quarantine", "config": {"destination": {"bucket": "q-bucket"}}}
        ]);
        assert_eq!(problems(&v)[0].0, "/spec/actions/1/type");
    }

    #[test]
    fn categories_types_and_custom_classifiers_are_accepted() {
        for category in ["government_id", "email", "custom:employee_id"] {
            let mut v = valid();
            v["spec"]["conditions"][0]["category"] = json!(category);
            assert!(from_value(&v).is_ok(), "{category}");
        }
        let mut v = valid();
        v["spec"]["conditions"][0]["category"] = json!("credit_card");
        assert_eq!(problems(&v)[0].0, "/spec/conditions/0/category");
    }

    #[test]
    fn quarantine_takes_a_bucket_or_a_container() {
        let mut v = valid();
        v["spec"]["actions"][1] = json!({"type": "quarantine", "config": {"destination": {"container": "quarantine", "prefix": "held/"}}});
        let d = from_value(&v).unwrap();
        assert_eq!(
            d.spec.actions[1],
            Action::Quarantine(QuarantineConfig {
                destination: Destination {
                    bucket: "quarantine".into(),
                    prefix: Some("held/".into())
                }
            })
        );
        v["spec"]["actions"][1]["config"]["destination"] = json!({"bucket": "Bad_Name"});
        assert_eq!(
            problems(&v)[0].0,
            "/spec/actions/1/config/destination/bucket"
        );
    }
}

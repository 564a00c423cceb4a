//! A scan request, validated: every problem is reported at once, each naming its field, and an
//! unknown option is refused rather than ignored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use connectors::FieldError;

/// Scan defaults and ceilings of one service tier. The spec leaves the amounts open; the
/// operator picks the tier (`DPS_SCAN_TIER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    pub name: &'static str,
    /// Default and ceiling of `max_files` per scan.
    pub max_files: u32,
    /// Default and ceiling of `max_workers` per scan.
    pub max_workers: u32,
}

/// The tier table.
pub const TIERS: [Tier; 3] = [
    Tier {
        name: "starter",
        max_files: 10_000,
        max_workers: 2,
    },
    Tier {
        name: "standard",
        max_files: 100_000,
        max_workers: 4,
    },
    Tier {
        name: "enterprise",
        max_files: 1_000_000,
        max_workers: 16,
    },
];

impl Tier {
    pub fn named(name: &str) -> Option<Tier> {
        TIERS.into_iter().find(|t| t.name == name)
    }

    pub fn standard() -> Tier {
        TIERS[1]
    }
}

/// `full` rescans everything; `incremental` only what is new or changed since the connector's
/// last completed scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Full,
    Incremental,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Full => "full",
            Kind::Incremental => "incremental",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        [Kind::Full, Kind::Incremental]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// What happens when coverage falls short of its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Carry on; the scan ends completed or partial.
    BestEffort,
    /// The scan fails when the target is not met.
    Strict,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::BestEffort => "best_effort",
            Strategy::Strict => "strict",
        }
    }

    pub fn parse(s: &str) -> Option<Strategy> {
        [Strategy::BestEffort, Strategy::Strict]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// Validated options, defaults filled in. Stored with the scan as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub max_files: u32,
    pub max_workers: u32,
    /// Extensions to include (lowercase, no dot); empty means every file.
    pub file_types: Vec<String>,
    /// Key prefixes; empty means the connector's own, or the whole bucket.
    pub prefixes: Vec<String>,
    pub timeout_minutes: u32,
    pub coverage_target: f64,
    pub coverage_strategy: Strategy,
    /// Objects larger than this are skipped (`size_limit`).
    pub max_object_bytes: u64,
}

/// Default scan timeout (the spec's).
pub const DEFAULT_TIMEOUT_MINUTES: u32 = 120;
/// Longest timeout accepted: one day.
pub const MAX_TIMEOUT_MINUTES: u32 = 1440;
/// Default coverage target.
pub const DEFAULT_COVERAGE_TARGET: f64 = 0.95;
/// Default and ceiling of the object size limit.
pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 100 << 20;
pub const MAX_OBJECT_BYTES: u64 = 5 << 30;
/// At most this many connectors in one parallel scan.
pub const MAX_CONNECTORS: usize = 50;

/// Unknown fields named one by one; past this many, only their count.
const MAX_UNKNOWN_NAMED: usize = 10;

const KNOWN: &[&str] = &[
    "max_files",
    "max_workers",
    "file_types",
    "prefixes",
    "llm_assist",
    "timeout_minutes",
    "coverage_target",
    "coverage_strategy",
    "max_object_bytes",
];

fn error(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: format!("options.{field}"),
        message: message.into(),
    }
}

fn whole(value: &Value, field: &str, range: (u64, u64), errors: &mut Vec<FieldError>) -> u64 {
    match value.as_u64() {
        Some(n) if (range.0..=range.1).contains(&n) => n,
        _ => {
            errors.push(error(
                field,
                format!("must be an integer from {} to {}", range.0, range.1),
            ));
            0
        }
    }
}

fn strings(value: &Value, field: &str, errors: &mut Vec<FieldError>) -> Vec<String> {
    match value.as_array() {
        Some(items) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => {
            errors.push(error(field, "must be an array of strings"));
            Vec::new()
        }
    }
}

/// Validates `options` (absent is all defaults) under `tier`.
pub fn validate(options: Option<&Value>, tier: Tier) -> Result<Options, Vec<FieldError>> {
    let empty = Map::new();
    let object = match options {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => {
            return Err(vec![FieldError {
                field: "options".into(),
                message: "must be an object".into(),
            }]);
        }
    };
    let mut errors = Vec::new();
    let mut fields: Vec<&String> = object.keys().collect();
    fields.sort();
    let unknown: Vec<&String> = fields
        .into_iter()
        .filter(|f| !KNOWN.contains(&f.as_str()))
        .collect();
    // A client may write a value as a key: it is named back only when it looks like a field
    // name. A few are named; a body of thousands of keys makes no longer an answer.
    for field in unknown.iter().take(MAX_UNKNOWN_NAMED) {
        let shown = if ids::field_name_like(field) {
            field.as_str()
        } else {
            "…"
        };
        errors.push(error(shown, "is not a scan option"));
    }
    if unknown.len() > MAX_UNKNOWN_NAMED {
        errors.push(FieldError {
            field: "options".into(),
            message: format!("holds {} fields that are not scan options", unknown.len()),
        });
    }
    let mut out = Options {
        max_files: tier.max_files,
        max_workers: tier.max_workers,
        file_types: Vec::new(),
        prefixes: Vec::new(),
        timeout_minutes: DEFAULT_TIMEOUT_MINUTES,
        coverage_target: DEFAULT_COVERAGE_TARGET,
        coverage_strategy: Strategy::BestEffort,
        max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
    };
    if let Some(v) = object.get("max_files") {
        out.max_files = whole(v, "max_files", (1, tier.max_files.into()), &mut errors) as u32;
    }
    if let Some(v) = object.get("max_workers") {
        out.max_workers = whole(v, "max_workers", (1, tier.max_workers.into()), &mut errors) as u32;
    }
    if let Some(v) = object.get("timeout_minutes") {
        out.timeout_minutes = whole(
            v,
            "timeout_minutes",
            (1, MAX_TIMEOUT_MINUTES.into()),
            &mut errors,
        ) as u32;
    }
    if let Some(v) = object.get("max_object_bytes") {
        out.max_object_bytes = whole(v, "max_object_bytes", (1, MAX_OBJECT_BYTES), &mut errors);
    }
    if let Some(v) = object.get("file_types") {
        let types = strings(v, "file_types", &mut errors);
        if types.len() > connectors::config::MAX_FILE_TYPES {
            errors.push(error(
                "file_types",
                format!("at most {} entries", connectors::config::MAX_FILE_TYPES),
            ));
        }
        for t in &types {
            let Some(t) = connectors::config::file_type(t) else {
                errors.push(error(
                    "file_types",
                    format!(
                        "each must be a file extension: 1 to {} letters, digits, '_', '+' or \
                         '-', with or without a leading dot",
                        connectors::config::MAX_FILE_TYPE_LEN
                    ),
                ));
                break;
            };
            out.file_types.push(t);
        }
        out.file_types.sort();
        out.file_types.dedup();
    }
    if let Some(v) = object.get("prefixes") {
        let prefixes = strings(v, "prefixes", &mut errors);
        if prefixes.len() > 100 || prefixes.iter().any(|p| p.len() > 1024 || p.is_empty()) {
            errors.push(error("prefixes", "at most 100, each 1 to 1024 characters"));
        }
        out.prefixes = prefixes;
    }
    if let Some(v) = object.get("llm_assist") {
        match v.as_bool() {
            Some(false) => {}
            Some(true) => errors.push(error(
                "llm_assist",
                "no LLM is configured for this service; leave llm_assist false",
            )),
            None => errors.push(error("llm_assist", "must be a boolean")),
        }
    }
    if let Some(v) = object.get("coverage_target") {
        match v.as_f64() {
            Some(t) if (0.0..=1.0).contains(&t) => out.coverage_target = t,
            _ => errors.push(error("coverage_target", "must be a number from 0.0 to 1.0")),
        }
    }
    if let Some(v) = object.get("coverage_strategy") {
        match v.as_str().and_then(Strategy::parse) {
            Some(s) => out.coverage_strategy = s,
            None => errors.push(error("coverage_strategy", "must be best_effort or strict")),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_come_from_the_tier() {
        let o = validate(None, Tier::standard()).unwrap();
        assert_eq!((o.max_files, o.max_workers), (100_000, 4));
        assert_eq!(o.timeout_minutes, 120);
        assert_eq!(o.coverage_strategy, Strategy::BestEffort);
    }

    #[test]
    fn every_problem_is_named_and_unknown_options_are_refused() {
        let errors = validate(
            Some(&json!({
                "max_files": 0, "max_workers": 99, "llm_assist": true, "colour": "red",
                "file_types": ["csv", "a/b"], "coverage_strategy": "lax",
            })),
            Tier::standard(),
        )
        .unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "options.colour",
                "options.max_files",
                "options.max_workers",
                "options.file_types",
                "options.llm_assist",
                "options.coverage_strategy",
            ]
        );
        // A value as a key is not named back; a body of many unknown keys is one more problem.
        let mut many = json!({"123-45-6789": 1});
        let errors = validate(Some(&many), Tier::standard()).unwrap_err();
        assert_eq!(errors[0].field, "options.…");
        for i in 0..300 {
            many[format!("k{i}")] = json!(1);
        }
        let errors = validate(Some(&many), Tier::standard()).unwrap_err();
        assert_eq!(errors.len(), MAX_UNKNOWN_NAMED + 1);
        let ok = validate(
            Some(&json!({"file_types": [".CSV", "json", "xml", ".Parquet"], "llm_assist": false})),
            Tier::standard(),
        )
        .unwrap();
        // Any extension, not only the formats detection reads by structure.
        assert_eq!(ok.file_types, ["csv", "json", "parquet", "xml"]);
        for bad in ["", ".", "a.b", "a b", "../x", "seventeen-chars-x", "é"] {
            let refused = validate(Some(&json!({ "file_types": [bad] })), Tier::standard());
            assert!(refused.is_err(), "{bad:?}");
        }
        let types =
            |n: usize| json!({ "file_types": (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>() });
        assert_eq!(
            validate(Some(&types(100)), Tier::standard())
                .unwrap()
                .file_types
                .len(),
            100
        );
        let refused = validate(Some(&types(101)), Tier::standard()).unwrap_err();
        assert_eq!(refused[0].field, "options.file_types");
        assert!(
            refused[0].message.contains("at most 100"),
            "{}",
            refused[0].message
        );
    }
}

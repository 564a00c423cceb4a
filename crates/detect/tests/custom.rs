//! A tenant's own classifiers: accepted as JSON or YAML, validated field by field, compiled once
//! and run in the same scan as the built-in recognizers.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

use detect::{
    ClassifierSpec, Classifiers, Detector, Finding, Format, Hint, Location, Options, Validator,
};
use tokenize_core::{Category, PiiType};

const EMPLOYEE_YAML: &str = r"
name: employee_id
category: personal
regex: '\bEMP-\d{6}\b'
keywords: [employee, staff id]
ignore_words: [EMP-000000]
confidence: 0.4
";

fn detector(specs: &[ClassifierSpec]) -> Detector {
    Detector::with_classifiers(Classifiers::compile(specs).unwrap())
}

fn employee() -> ClassifierSpec {
    ClassifierSpec::from_yaml(EMPLOYEE_YAML).unwrap()
}

fn card() -> ClassifierSpec {
    ClassifierSpec::from_json(
        r#"{"name": "card_number", "category": "financial", "regex": "\\b\\d{4}(?: ?\\d{4}){3}\\b",
            "validator": "luhn", "confidence": 0.7}"#,
    )
    .unwrap()
}

fn codes(findings: &[Finding], text: &str) -> Vec<(String, String)> {
    findings
        .iter()
        .map(|f| {
            (
                f.pii_type.as_str().to_owned(),
                text[f.start..f.end].to_owned(),
            )
        })
        .collect()
}

#[test]
fn yaml_and_json_give_the_same_classifier() {
    let yaml = employee();
    assert_eq!(yaml.name, "employee_id");
    assert_eq!(yaml.category, Category::Personal);
    assert_eq!(yaml.keywords, ["employee", "staff id"]);
    assert_eq!(yaml.max_match_distance, 50, "the default keyword distance");
    let json = ClassifierSpec::from_json(&serde_json::to_string(&yaml).unwrap()).unwrap();
    assert_eq!(json, yaml);
    assert_eq!(card().validator, Some(Validator::Luhn));
}

#[test]
fn bad_classifiers_are_refused_naming_the_field() {
    let with = |patch: &str| {
        let mut value: serde_json::Value = serde_json::to_value(employee()).unwrap();
        let patch: serde_json::Value = serde_json::from_str(patch).unwrap();
        for (k, v) in patch.as_object().unwrap() {
            value[k] = v.clone();
        }
        ClassifierSpec::from_json(&value.to_string()).and_then(|s| {
            s.validate()?;
            Ok(s)
        })
    };
    for (patch, field) in [
        (r#"{"name": "Employee ID"}"#, "name"),
        (r#"{"name": ""}"#, "name"),
        (r#"{"regex": "EMP-(\\d"}"#, "regex"),
        (r#"{"regex": "\\d*"}"#, "regex"),
        // Never empty as a whole, but empty at every word boundary.
        (r#"{"regex": "\\b"}"#, "regex"),
        (r#"{"regex": "\\d*\\b"}"#, "regex"),
        (r#"{"regex": ""}"#, "regex"),
        (r#"{"regex": "(?<=a)b"}"#, "regex"),
        (r#"{"confidence": 1.5}"#, "confidence"),
        (r#"{"max_match_distance": 5000}"#, "max_match_distance"),
        (r#"{"keywords": ["  "]}"#, "keywords"),
    ] {
        let err = with(patch).unwrap_err();
        assert_eq!(err.field, field, "{patch}: {err}");
    }
    for patch in [
        r#"{"category": "secret"}"#,
        r#"{"validator": "md5"}"#,
        r#"{"colour": "blue"}"#,
    ] {
        let err = with(patch).unwrap_err();
        assert_eq!(err.field, "body", "{patch}: {err}");
    }
    let err = ClassifierSpec::from_yaml("name: [unclosed").unwrap_err();
    assert!(err.message.starts_with("invalid YAML"), "{err}");
    // A hostile expression that would need a huge automaton is refused, not compiled.
    let err = with(r#"{"regex": "\\w{1000}\\w{1000}\\w{1000}"}"#).unwrap_err();
    assert_eq!(err.field, "regex");
    let twice = Classifiers::compile(&[employee(), employee()]).unwrap_err();
    assert_eq!((twice.index, twice.field), (Some(1), "name"));
    assert_eq!(
        twice.to_string(),
        "classifiers[1].name: is used by another classifier"
    );
}

#[test]
fn keywords_validators_and_ignore_words_decide() {
    let detector = detector(&[employee(), card()]);
    let text = "Ref EMP-123456 filed. Employee EMP-654321 left; EMP-000000 is a placeholder. \
                Card 4111 1111 1111 1111 ok, 4111 1111 1111 1112 not. SSN 123-45-6789.";
    let findings = detector.scan(text, 0.5);
    assert_eq!(
        codes(&findings, text),
        [
            ("custom:employee_id".into(), "EMP-654321".into()),
            ("custom:card_number".into(), "4111 1111 1111 1111".into()),
            ("us_ssn".into(), "123-45-6789".into()),
        ],
        "without its keyword the first is below the threshold; the placeholder is ignored; the \
         second card fails Luhn; built-in findings come from the same scan"
    );
    let employee = &findings[0];
    assert_eq!(employee.category, Category::Personal);
    assert_eq!(employee.pii_type.pii(), None);
    assert!((employee.confidence - 0.75).abs() < 1e-6, "{employee:?}");
    assert_eq!(employee.evidence.pattern, "custom");
    assert_eq!(employee.evidence.context, ["employee"]);
    assert_eq!(findings[1].evidence.validator, Some("luhn"));
    assert_eq!(findings[2].pii_type, PiiType::UsSsn);
    // Lowering the threshold shows the match without a keyword.
    let low = detector.scan(text, 0.3);
    let custom = low.iter().filter(|f| f.pii_type.pii().is_none()).count();
    assert_eq!(custom, 3, "{low:?}");
}

#[test]
fn headers_and_keys_count_as_keywords() {
    let detector = detector(&[employee()]);
    let csv = "name,staff_id\nAnn,EMP-123456\n";
    let findings = detector.scan_text(csv, Format::Csv, &Options::default());
    assert_eq!(
        codes(&findings, csv),
        [("custom:employee_id".into(), "EMP-123456".into())]
    );
    assert_eq!(
        findings[0].location,
        Location::Csv {
            row: 1,
            column: 2,
            header: Some("staff_id".into())
        }
    );
    let json = r#"{"people": [{"employeeNumber": "EMP-123456"}]}"#;
    let report = detector
        .scan_bytes(json.as_bytes(), Hint::default(), &Options::default())
        .unwrap();
    assert_eq!(report.findings.len(), 1);
    assert_eq!(
        report.findings[0].location,
        Location::Json {
            line: 1,
            path: "$.people[0].employeeNumber".into()
        }
    );
}

#[test]
fn streams_find_custom_matches_once_across_windows() {
    let detector = detector(&[employee(), card()]);
    let mut text = String::new();
    for n in 0..3000 {
        text.push_str(&format!(
            "line {n} employee EMP-{:06} card 4111 1111 1111 1111 padding{}\n",
            n * 7 % 1_000_000,
            "x".repeat(n % 13)
        ));
    }
    let whole = detector.scan_text(&text, Format::Text, &Options::default());
    assert_eq!(whole.len(), 2 * 3000 - 1, "EMP-000000 is ignored once");
    for (window, piece) in [(4096, 1), (4096, 777), (5000, 4093), (1 << 20, 65536)] {
        let mut stream = detector
            .stream(Hint::default(), Options::default())
            .with_window(window);
        let mut found = Vec::new();
        for chunk in text.as_bytes().chunks(piece) {
            stream.push(chunk, &mut found).unwrap();
        }
        stream.finish(&mut found).unwrap();
        assert!(found == whole, "window {window}, pieces of {piece}");
    }
}

#[test]
fn overlong_matches_are_not_reported() {
    let spec =
        ClassifierSpec::from_yaml("name: blob\ncategory: personal\nregex: 'K[a-z]+'\n").unwrap();
    let detector = detector(&[spec]);
    let long = format!("K{}", "a".repeat(300));
    assert!(detector.scan(&long, 0.0).is_empty());
    assert_eq!(detector.scan("Kabc", 0.0).len(), 1);
}

//! Property tests of the policy reader, 10,000 cases each: whatever bytes arrive as a policy
//! document, in YAML or JSON, the reader answers a document or a list of problems; it never
//! panics, and a problem never quotes the document.

use policies::document::{Syntax, parse};
use proptest::prelude::*;

/// Text that looks like YAML: keys, indentation, flow collections, anchors, tags, quotes.
fn yamlish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("apiVersion: governance.dps/v1\n".to_owned()),
            Just("kind: Policy\n".to_owned()),
            Just("metadata: { name: p }\n".to_owned()),
            Just("spec:\n  mode: enforced\n".to_owned()),
            Just("  conditions: [{ category: us_ssn, min_confidence: 0.5 }]\n".to_owned()),
            Just("  actions: [{ type: alert }]\n".to_owned()),
            Just("&a ".to_owned()),
            Just("*a".to_owned()),
            Just("!!str ".to_owned()),
            Just("- ".to_owned()),
            Just("? ".to_owned()),
            Just("\"\\0\"".to_owned()),
            Just("'x'".to_owned()),
            Just("{".to_owned()),
            Just("[".to_owned()),
            Just("}".to_owned()),
            Just("]".to_owned()),
            Just("\n  ".to_owned()),
            "[a-z_]{1,8}: ".prop_map(|s| s),
            "\\PC{0,12}".prop_map(|s| s),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

/// Whether a problem's text repeats a marker planted in the document.
fn quotes(problems: &[policies::document::Problem], marker: &str) -> bool {
    problems
        .iter()
        .any(|p| p.reason.contains(marker) || p.pointer.contains(marker))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn any_bytes_are_a_document_or_problems(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse(&bytes, Syntax::Yaml);
        let _ = parse(&bytes, Syntax::Json);
    }

    #[test]
    fn yaml_like_text_is_a_document_or_problems(text in yamlish()) {
        let _ = parse(text.as_bytes(), Syntax::Yaml);
    }

    #[test]
    fn a_problem_never_quotes_a_value(text in yamlish()) {
        let marker = "Zq9SECRETvalue";
        let doc = format!("{text}\nnote: {marker}\n");
        if let Err(problems) = parse(doc.as_bytes(), Syntax::Yaml) {
            prop_assert!(!quotes(&problems, marker), "{problems:?}");
        }
    }
}

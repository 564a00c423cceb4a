//! XML and HTML in a customer's bucket, end to end. A scan on moto reads the customer export
//! Python's ElementTree wrote and the page of letters (`tests/fixtures/formats/make_markup.py`)
//! as text with their markup blanked: it finds exactly the planted values, in elements,
//! attributes, comments, CDATA and inline scripts, each at the line and column of the file
//! itself, and nothing in the PII-free page and catalog.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::formats::{counts, fixture, scan_fixtures};

const FIXTURES: [&str; 4] = [
    "customers.xml",
    "letters.html",
    "control.html",
    "control.xml",
];

/// The 1-based line and byte column of each of `values` in the fixture `name`, in the order
/// they appear there: where a reviewer opening the file finds them.
fn places(name: &str, values: &[&str]) -> Vec<Value> {
    let bytes = fixture(name);
    let text = std::str::from_utf8(&bytes).unwrap();
    let mut offsets: Vec<usize> = values
        .iter()
        .flat_map(|v| text.match_indices(v).map(|(at, _)| at))
        .collect();
    offsets.sort_unstable();
    offsets
        .into_iter()
        .map(|at| {
            let before = &text[..at];
            let line = before.matches('\n').count() + 1;
            let column = at - before.rfind('\n').map_or(0, |n| n + 1) + 1;
            json!({"line": line, "column": column})
        })
        .collect()
}

#[tokio::test]
async fn a_scan_reads_xml_and_html_as_text_with_their_markup_blanked() {
    let scanned = scan_fixtures("web", "site", &FIXTURES).await;
    let done = &scanned.done;
    assert_eq!(done["coverage"]["total_scanned"], 4, "{done}");
    assert_eq!(done["coverage"]["total_skipped"], 0, "{done}");
    assert_eq!(done["coverage"]["skip_reasons"], json!({}), "{done}");

    let found = scanned.findings().await;
    let body = Value::from(found.clone());
    let counts = counts(&found, "web/site/", |_| true);
    // Text is one field: its values are grouped by type alone.
    let planted: BTreeMap<(String, String, String), i64> = [
        // Eight customers' SSN elements (one of nine bare digits), a dependent's attribute,
        // a comment; their emails, the dependent's attribute, a CDATA note; four phones.
        ("customers.xml", "us_ssn", 10),
        ("customers.xml", "email", 10),
        ("customers.xml", "phone", 4),
        // A sentence, a table cell, bold text, a form's input, a comment, inline JSON; each
        // link's mailto and text, the input, the JSON, a comment without spaces (plain text
        // reading missed it); a cell, a tel link and its text.
        ("letters.html", "us_ssn", 6),
        ("letters.html", "email", 11),
        ("letters.html", "phone", 3),
    ]
    .into_iter()
    .map(|(o, t, n)| ((o.to_owned(), t.to_owned(), String::new()), n))
    .collect();
    assert_eq!(counts, planted, "{body}");

    // Every sample is where the value is in the file: markup was blanked, not removed.
    let samples = |object: &str, pii: &str| -> Value {
        found
            .iter()
            .find(|f| f["resource"] == format!("web/site/{object}") && f["pii_type"] == pii)
            .unwrap_or_else(|| panic!("{object} {pii}: {body}"))["locations"]
            .clone()
    };
    let xml_ssns = [
        "536-22-5200",
        "536-22-5201",
        "536-22-5202",
        "536-22-5210",
        "536-22-5211",
        "536-22-5203",
        "536-22-5204",
        "536225205",
        "536-22-5206",
        "536-22-5207",
    ];
    assert_eq!(
        samples("customers.xml", "us_ssn"),
        Value::from(places("customers.xml", &xml_ssns))
    );
    assert_eq!(
        samples("customers.xml", "us_ssn")[3],
        json!({"line": 25, "column": 39}),
        "the dependent's ssn attribute"
    );
    let html_ssns = [
        "536-22-5301",
        "536-22-5302",
        "536-22-5303",
        "536-22-5304",
        "536-22-5305",
        "536-22-5306",
    ];
    assert_eq!(
        samples("letters.html", "us_ssn"),
        Value::from(places("letters.html", &html_ssns))
    );
    assert_eq!(
        samples("letters.html", "email")[0],
        json!({"line": 18, "column": 83}),
        "the email of the page's inline JSON"
    );

    // Their locations are plain text's, so the kind filter reads them as text.
    assert_eq!(
        scanned.findings_where("&location_kind=text").await.len(),
        found.len()
    );

    // The PII-free page and catalog have no finding of any type.
    for control in ["control.html", "control.xml"] {
        assert!(
            !found
                .iter()
                .any(|f| f["resource"] == format!("web/site/{control}")),
            "{control}: {body}"
        );
    }

    // Nothing of the values is stored.
    let dump = testkit::pg_dump(&scanned.app.db);
    for secret in [
        "536-22-5210",
        "536225205",
        "family6@example.com",
        "536-22-5306",
        "lee.chen@example.com",
        "mailroom@example.com",
    ] {
        assert!(!dump.contains(secret), "{secret} is in the database");
    }
}

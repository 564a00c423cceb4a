//! The trackers' locations, labels and limits, fed in pieces of every size.

use super::*;

/// The location and label at `needle`, feeding the text in pieces of `step` bytes.
fn at(format: Format, text: &str, needle: &str, step: usize) -> (Location, Option<String>) {
    let Some(offset) = text.find(needle) else {
        panic!("{needle} is not in the text")
    };
    let mut tracker = Tracker::new(format);
    for piece in text.as_bytes()[..offset].chunks(step) {
        tracker.feed(piece);
    }
    (tracker.location(offset), tracker.label().map(str::to_owned))
}

#[test]
fn headers_and_keys_that_look_like_data_are_not_locations() {
    // A CSV without a header row: its first data row is taken for the headers.
    let text = "Ann Lee,123-45-6789,ann@example.com,Notes 2024\nBo,234-56-7890,bo@example.com,x\n";
    let header = |needle: &str| match at(Format::Csv, text, needle, 1000).0 {
        Location::Csv { header, .. } => header,
        other => panic!("{other:?}"),
    };
    // A first row with data in it names no column, not even where the cell looks like a
    // name.
    for needle in ["Bo,", "234-56", "bo@", "x\n"] {
        assert_eq!(header(needle), None, "{needle}");
    }
    // Nor does a first row whose cells only read as data: an amount, a date, a name
    // beside them. Detection still reads them as context.
    for text in [
        "Ann Lee,$950\nBo Chan,$1200.50\n",
        "Ann Lee,Mar 5 84\nBo Chan,Mar 6 85 $1200.50\n",
        "Ann Lee,950 EUR\nBo Chan,$1200.50\n",
        "Ann Lee,3/5/84\nBo Chan,$1200.50\n",
    ] {
        match at(Format::Csv, text, "$1200", 1).0 {
            Location::Csv { header, row, .. } => assert_eq!((header, row), (None, 1), "{text}"),
            other => panic!("{other:?}"),
        }
    }
    for (name, shown) in [
        ("ssn", true),
        ("Date of Birth", true),
        ("address_line_2", true),
        ("e-mail (work)", true),
        ("Prénom", true),
        ("Q3 2024", false),
        ("$950", false),
        ("950 EUR", false),
        ("5-Mar-84", false),
        ("3/5/84", false),
        ("12345", false),
        ("a@b", false),
        ("", false),
    ] {
        assert_eq!(name_like(name), shown, "{name}");
    }
    // A header row names its columns.
    let text = "name,ssn,email\nBo,234-56-7890,bo@example.com\n";
    let header = |needle: &str| match at(Format::Csv, text, needle, 1).0 {
        Location::Csv { header, .. } => header,
        other => panic!("{other:?}"),
    };
    assert_eq!(header("234-56"), Some("ssn".into()));
    assert_eq!(header("bo@"), Some("email".into()));
    // JSON keyed by an email or a card number.
    let doc = r#"{"alice@example.com": {"phone": 17}, "4111111111111111": 28}"#;
    for (needle, expected) in [("17", r#"$["…"].phone"#), ("28", r#"$["…"]"#)] {
        match at(Format::Json, doc, needle, 3).0 {
            Location::Json { path, .. } => assert_eq!(path, expected),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn csv_rows_and_headers_survive_quotes_and_any_chunking() {
    let text =
        "id,\"full, name\",ssn\r\n1,\"Doe, \"\"J\"\"\nline2\",123-45-6789\n2,x,987-65-4321\n";
    for step in [1, 2, 3, 7, 1000] {
        let (location, label) = at(Format::Csv, text, "123-45", step);
        assert_eq!(
            location,
            Location::Csv {
                row: 1,
                column: 3,
                header: Some("ssn".into())
            },
            "step {step}"
        );
        assert_eq!(label.as_deref(), Some("ssn"));
        let (location, _) = at(Format::Csv, text, "Doe", step);
        assert_eq!(
            location,
            Location::Csv {
                row: 1,
                column: 2,
                header: Some("full, name".into())
            }
        );
        let (location, _) = at(Format::Csv, text, "987", step);
        assert!(matches!(
            location,
            Location::Csv {
                row: 2,
                column: 3,
                ..
            }
        ));
    }
    let (location, label) = at(Format::Tsv, "a\tphone\n1\t555\n", "555", 1);
    assert_eq!(label.as_deref(), Some("phone"));
    assert!(matches!(
        location,
        Location::Csv {
            row: 1,
            column: 2,
            ..
        }
    ));
}

#[test]
fn json_paths_follow_objects_arrays_and_escapes() {
    let text = r#"{"customers": [{"name": "A \"q\" {[", "ssn": "123-45-6789"},
 {"first name": "B", "phones": ["+1 202 555 0187", "x"]}], "n": 1}"#;
    for step in [1, 2, 5, 1000] {
        let (location, label) = at(Format::Json, text, "123-45", step);
        assert_eq!(
            location,
            Location::Json {
                line: 1,
                path: "$.customers[0].ssn".into()
            },
            "step {step}"
        );
        assert_eq!(label.as_deref(), Some("ssn"));
        let (location, label) = at(Format::Json, text, "+1 202", step);
        assert_eq!(
            location,
            Location::Json {
                line: 2,
                path: "$.customers[1].phones[0]".into()
            }
        );
        assert_eq!(label.as_deref(), Some("phones"));
    }
    let (location, _) = at(Format::Json, r#"{"first name": "x@y.z"}"#, "x@", 1);
    assert_eq!(
        location,
        Location::Json {
            line: 1,
            path: "$[\"first name\"]".into()
        }
    );
}

#[test]
fn ndjson_lines_each_start_at_the_root() {
    let text = "{\"a\": 1}\n{\"b\": [1, 2, \"x\"]}\n{\"email\": \"q@r.s\"}\n";
    let (location, label) = at(Format::Json, text, "q@", 3);
    assert_eq!(
        location,
        Location::Json {
            line: 3,
            path: "$.email".into()
        }
    );
    assert_eq!(label.as_deref(), Some("email"));
}

#[test]
fn paths_are_bounded_and_hold_no_control_character() {
    // A key with U+0000 and a tab: stored as JSON, shown to people, and `jsonb` refuses
    // U+0000. It does not read as a name, so it is not shown at all.
    let (location, _) = at(
        Format::Json,
        "{\"con\u{0}tact\tx\": \"ann.lee@example.com\"}",
        "ann.",
        7,
    );
    assert_eq!(
        location,
        Location::Json {
            line: 1,
            path: "$[\"…\"]".into()
        }
    );
    // Keys that are data by the rule of CSV headers: a short date, digits of another
    // script; a key that reads as a name stays.
    for (key, shown) in [
        ("4/3/80", "$[\"…\"]"),
        ("\u{0661}\u{0662}\u{0663}", "$[\"…\"]"),
        ("first name", "$[\"first name\"]"),
        ("address_line_2", "$.address_line_2"),
    ] {
        let text = format!("{{\"{key}\": \"ann.lee@example.com\"}}");
        let (location, _) = at(Format::Json, &text, "ann.", 4 + key.len());
        assert_eq!(
            location,
            Location::Json {
                line: 1,
                path: shown.into()
            },
            "{key}"
        );
    }
    // Forty levels of a 25-character key: the innermost steps, which name the value, stay.
    let deep = "{\"customer_record_section\":".repeat(40)
        + "{\"email\": \"ann.lee@example.com\"}"
        + &"}".repeat(40);
    let (location, _) = at(Format::Json, &deep, "ann.", 64);
    let Location::Json { path, .. } = location else {
        panic!("{location:?}")
    };
    assert!(path.chars().count() <= MAX_PATH, "{path}");
    assert!(path.starts_with("$….customer_record_section."), "{path}");
    assert!(path.ends_with(".customer_record_section.email"), "{path}");
    // One key of MAX_NAME characters, quoted: its start, cut.
    let key = "k ".repeat(MAX_NAME / 2);
    let text = format!("{{\"{key}\": \"ann.lee@example.com\"}}");
    let (location, _) = at(Format::Json, &text, "ann.", 9);
    let Location::Json { path, .. } = location else {
        panic!("{location:?}")
    };
    assert_eq!(path.chars().count(), MAX_PATH, "{path}");
    assert!(
        path.starts_with("$[\"k k ") && path.ends_with('…'),
        "{path}"
    );
}

#[test]
fn deep_nesting_is_bounded() {
    let deep = "[".repeat(10_000) + "\"v\"" + &"]".repeat(10_000) + "{\"k\": \"w\"}";
    let (location, _) = at(Format::Json, &deep, "w\"", 4096);
    assert_eq!(
        location,
        Location::Json {
            line: 1,
            path: "$.k".into()
        }
    );
}

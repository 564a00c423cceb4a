//! Business words near real values (issue 39): "account", "order", "invoice" and "ref" are in
//! almost every paragraph of a bank letter, a support ticket or a claim that holds PII. They
//! lower a value whose only evidence is its shape, or a value they name; they never silence a
//! value with evidence of its own type. In CSV and JSON a value's field is its context, never
//! a sibling field.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use detect::{Detector, Format, Hint, Location, Options};

/// What the detector reports, as `dpsctl detect` reads it: bytes, the format sniffed.
fn found(text: &str) -> Vec<(String, String)> {
    let options = Options {
        with_values: true,
        ..Options::default()
    };
    Detector::new()
        .scan_bytes(text.as_bytes(), Hint::default(), &options)
        .unwrap()
        .findings
        .into_iter()
        .map(|f| (f.pii_type.as_str().to_owned(), f.value.unwrap()))
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(t, v)| ((*t).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn the_issues_lines_are_found_with_their_types() {
    for (line, expected) in [
        (
            "the account was reviewed by the team, passport no. GK356955 please update the record",
            ("passport_ca", "GK356955"),
        ),
        (
            "the account was reviewed by the team, docket CR-2003-208712 escalated",
            ("case_number", "CR-2003-208712"),
        ),
        (
            "shipment left the warehouse, value $57,715.06 the account was reviewed",
            ("monetary", "$57,715.06"),
        ),
        (
            "the account was reviewed by the team, SSN # 729505541 escalated to tier two",
            ("us_ssn", "729505541"),
        ),
        (
            r#"{"id": 119, "customer": {"ssn": "596573369", "note": "the account was reviewed"}}"#,
            ("us_ssn", "596573369"),
        ),
        (
            r#"{"id": 57, "customer": {"passport": "KJ315581", "note": "the account was reviewed"}}"#,
            ("passport_ca", "KJ315581"),
        ),
        (
            r#"{"id": 299, "customer": {"mobile": "3308221704", "note": "the account was reviewed"}}"#,
            ("phone", "3308221704"),
        ),
        ("contact 9717885853", ("phone", "9717885853")),
        ("value 369.888.8848", ("phone", "369.888.8848")),
        ("then (726)243-5254", ("phone", "(726)243-5254")),
    ] {
        assert_eq!(found(line), pairs(&[expected]), "{line}");
    }
}

#[test]
fn a_keyword_nearer_than_a_word_against_wins_and_a_farther_one_still_weighs() {
    for (line, expected) in [
        // The keyword names the value; the word against is elsewhere in the sentence.
        (
            "Order 4471 shipped; customer SIN 130 692 544 on file",
            &[("ca_sin", "130 692 544")][..],
        ),
        (
            "Invoice sent. Call 2125550143 about the invoice",
            &[("phone", "2125550143")],
        ),
        (
            "Customer SSN 219099999 for order review",
            &[("us_ssn", "219099999")],
        ),
        // A structured shape is evidence of its own: a word against elsewhere does not
        // silence it.
        (
            "The account was reviewed by the team; 219-09-9999 on file.",
            &[("us_ssn", "219-09-9999")],
        ),
        (
            "Your order shipped this morning. Reach the courier at (415) 555-0132.",
            &[("phone", "(415) 555-0132")],
        ),
        // A farther keyword and a nearer word that names the value weigh against each other:
        // enough for a grouped SSN, not for bare digits.
        (
            "The SSN on the account is 219-09-9999",
            &[("us_ssn", "219-09-9999")],
        ),
        ("The SSN on the account is 219099999", &[]),
    ] {
        assert_eq!(found(line), pairs(expected), "{line}");
    }
}

#[test]
fn words_that_name_a_number_as_something_else_still_keep_it_out() {
    for line in [
        "Order #2125550143 shipped",
        "Your order 2125550143 is on its way",
        "Account no. 2125550143",
        "SKU 130-692-544 restocked",
        "Part No. 130-692-544",
        "Model 130-692-544, serial 88213",
        "Réf. 130-692-544",
        "Routing number 021000021",
        "Tracking # 9400 1000 0000 0000 0000 00",
        "ISBN 978-0-306-40615-7",
        "IBAN GB29 NWBK 6016 1331 9268 19",
        "Commande n° 2125550143",
        "compte 2125550143",
        // Bare digits whose only evidence is their shape, a word against near them.
        "the account was reviewed; 2125550143 escalated",
    ] {
        assert_eq!(found(line), pairs(&[]), "{line}");
    }
}

#[test]
fn a_values_field_is_its_context_and_a_sibling_field_is_not() {
    // JSON: the key and its parents' keys; the nearest name with a word decides.
    for (doc, expected) in [
        (r#"{"order": {"id": "2125550143"}}"#, &[][..]),
        (
            r#"{"order": {"customer": {"phone": "2125550143"}}}"#,
            &[("phone", "2125550143")],
        ),
        (r#"{"account": {"number": 2125550143}}"#, &[]),
        (
            r#"{"account": {"holder": {"ssn": 219099999}}}"#,
            &[("us_ssn", "219099999")],
        ),
        // A sibling's keyword is not the value's: a bare number under a neutral key.
        (r#"{"kind": "ssn", "value": "219099999"}"#, &[]),
        // The note's own text is its context, whatever its key says.
        (
            r#"{"order_notes": "call 212-555-0143 about the invoice"}"#,
            &[("phone", "212-555-0143")],
        ),
    ] {
        assert_eq!(found(&format!("{doc}\n")), pairs(expected), "{doc}");
    }
    // CSV: the header, and the cell's own text; other cells of the row are not context.
    let csv = "id,kind,value,order_id,notes\n\
               1,ssn,219099999,2125550143,the account was reviewed\n\
               2,note,x,7,\"customer SSN 219099999, order pending\"\n";
    let findings = Detector::new().scan_text(csv, Format::Csv, &Options::default());
    let reported: Vec<_> = findings
        .iter()
        .map(|f| {
            (
                f.pii_type.as_str(),
                &csv[f.start..f.end],
                f.location.clone(),
            )
        })
        .collect();
    assert_eq!(
        reported,
        [(
            "us_ssn",
            "219099999",
            Location::Csv {
                row: 2,
                column: 5,
                header: Some("notes".into())
            }
        )]
    );
}

#[test]
fn a_field_handed_over_with_its_path_is_read_as_a_key_would_be() {
    // What the Parquet, Avro and spreadsheet readers give the engine: a column path.
    let detector = Detector::new();
    let options = Options::default();
    let types = |value: &str, path: &[&str]| -> Vec<String> {
        detector
            .scan_field(value, path, &options)
            .into_iter()
            .map(|f| f.pii_type.as_str().to_owned())
            .collect()
    };
    assert_eq!(types("219099999", &["customer", "ssn"]), ["us_ssn"]);
    assert_eq!(
        types("219099999", &["customer", "id"]),
        Vec::<String>::new()
    );
    assert_eq!(types("2125550143", &["order", "id"]), Vec::<String>::new());
    assert_eq!(types("2125550143", &["contact", "home"]), ["phone"]);
    assert_eq!(
        types("KJ315581", &["traveller", "passport_no"]),
        ["passport_ca"]
    );
    assert_eq!(types("1980-03-04", &["patient", "date_naissance"]), ["dob"]);
    assert_eq!(types("CR-2003-208712", &["case_no"]), ["case_number"]);
    // A column named for one type says nothing for another.
    assert_eq!(types("219099999", &["phone"]), Vec::<String>::new());
}

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

#[test]
fn a_columns_values_are_read_one_per_line_each_a_field_of_its_own() {
    // What the Parquet reader gives the engine: a run of one column's values and their rows.
    let detector = Detector::new();
    let options = Options {
        with_values: true,
        ..Options::default()
    };
    let found =
        |text: &str, path: &[&str], rows: &[u64]| -> Vec<(String, String, Location, usize)> {
            detector
                .scan_column(text, path, rows, detect::TableUnit::Row, &options)
                .into_iter()
                .map(|f| {
                    (
                        f.pii_type.as_str().to_owned(),
                        f.value.unwrap_or_default(),
                        f.location,
                        f.start,
                    )
                })
                .collect()
        };
    let at = |row| Location::Column {
        column: "customer.ssn".into(),
        row,
    };
    assert_eq!(
        found(
            "219099999\nnone on file\n536-22-4410 (verified)\n",
            &["customer", "ssn"],
            &[4, 7, 7]
        ),
        [
            ("us_ssn".into(), "219099999".into(), at(4), 0),
            ("us_ssn".into(), "536-22-4410".into(), at(7), 0),
        ]
    );
    // Bare numbers say what they are only by their column's name, each line on its own.
    let ids = "219099999\n219099998\n";
    assert!(found(ids, &["order", "id"], &[1, 2]).is_empty());
    assert_eq!(found(ids, &["employee_ssn"], &[1, 2]).len(), 2);
    // Offsets are within the value.
    let emails = found(
        "billing\nnote: jane.doe@example.com\n",
        &["remarks"],
        &[1, 2],
    );
    assert_eq!(emails.len(), 1);
    assert_eq!(
        (emails[0].3, emails[0].2.field()),
        (6, "remarks".to_owned())
    );
}

#[test]
fn what_an_independent_corpus_found_is_fixed() {
    // Found by a corpus written apart from the engine's own (issue 39's review).
    for (text, expected) in [
        // Quebec writes a space, then a dash before the line number.
        ("Téléphone : 418 639-9986", &[("phone", "418 639-9986")][..]),
        (
            "Pour le suivi de votre commande, appelez le 418 447-1044.",
            &[("phone", "418 447-1044")],
        ),
        // A no-break space before the euro sign, as French typesetting puts one.
        (
            "Solde du compte : 22 598,43\u{a0}€",
            &[("monetary", "22 598,43")],
        ),
        ("Montant : 1 250,00\u{202f}$", &[("monetary", "1 250,00")]),
        // A keyword with another value between it and this one is that value's.
        (
            "The holder's SSN is 098-34-7907.\nPassport no. 531361755 is required to open the account.",
            &[("us_ssn", "098-34-7907"), ("passport_us", "531361755")],
        ),
        (
            "Passport no. 735557093\nSSN: 323-66-0554",
            &[("passport_us", "735557093"), ("us_ssn", "323-66-0554")],
        ),
        (
            "The social insurance number 537-822-637.\nSKU 471-293-043 is back in stock.",
            &[("ca_sin", "537-822-637")],
        ),
        (
            "Account 9315092893: the social insurance number on file is 312645468.",
            &[("ca_sin", "312645468")],
        ),
        // A word after the value speaks for it only within its sentence and line.
        (
            "Numéro de sécurité sociale américain (SSN) : 471464034\nPasseport américain n° 837465412",
            &[("us_ssn", "471464034"), ("passport_us", "837465412")],
        ),
        (
            "Account 9315092893: the social insurance number on file is 312645468.\nThe payroll account lists SSN 758-51-9110 for this employee.",
            &[("ca_sin", "312645468"), ("us_ssn", "758-51-9110")],
        ),
        // Part numbers and parcels.
        ("Please reorder P/N 364-745-315 before Friday.", &[]),
        (
            "Le colis 8188079913 est en cours de livraison (suivi).",
            &[],
        ),
        // An invoice's due date is a date.
        (
            "Date d'échéance de la facture : 24/10/2010",
            &[("date", "24/10/2010")],
        ),
    ] {
        assert_eq!(found(text), pairs(expected), "{text}");
    }
    // A dotted phone number before a comma ends its CSV cell: the comma joins only an amount's
    // groups of three.
    let csv = "name,phone,tracking\nCarlos Chen,306.484.5982,1Z4XR70D4713361234\n";
    let findings = Detector::new().scan_text(csv, Format::Csv, &Options::default());
    let reported: Vec<_> = findings
        .iter()
        .map(|f| (f.pii_type.as_str(), &csv[f.start..f.end]))
        .collect();
    assert_eq!(reported, [("phone", "306.484.5982")]);
}

use tokenize_core::normalize::{NormalizeOptions, Region, is_date};
use tokenize_core::{Category, PiiType, normalize};

use crate::content::Format;
use crate::dates::numeric_date;
use crate::scan::{Detector, next_anchor};
use crate::types::{DEFAULT_MIN_CONFIDENCE, Location, Options};

fn found(text: &str) -> Vec<(PiiType, String, f32)> {
    Detector::new()
        .scan(text, DEFAULT_MIN_CONFIDENCE)
        .into_iter()
        .map(|f| {
            (
                f.pii_type.pii().unwrap(),
                text[f.start..f.end].to_owned(),
                f.confidence,
            )
        })
        .collect()
}

fn types(text: &str) -> Vec<(PiiType, String)> {
    found(text).into_iter().map(|(t, s, _)| (t, s)).collect()
}

#[test]
fn grouped_ssns_are_found_and_context_raises_them() {
    let f = found("Employee SSN: 123-45-6789.");
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].0, f[0].1.as_str()), (PiiType::UsSsn, "123-45-6789"));
    assert!(f[0].2 >= 0.9, "{f:?}");
    assert_eq!(
        types("id 078-05-1120 end"),
        [(PiiType::UsSsn, "078-05-1120".into())]
    );
}

#[test]
fn a_bare_nine_digit_number_needs_context() {
    assert!(types("the number 123456789 appears").is_empty());
    assert_eq!(
        types("SSN 123456789"),
        [(PiiType::UsSsn, "123456789".into())]
    );
    assert_eq!(
        types("passport number 912803456"),
        [(PiiType::PassportUs, "912803456".into())]
    );
    assert_eq!(
        types("NAS : 130692544"),
        [(PiiType::CaSin, "130692544".into())]
    );
}

#[test]
fn hard_negatives_stay_negative() {
    for text in [
        "Beverly Hills, CA 90210-1234",
        "ITIN 912-70-1234",
        "SIN 046 454 287",
        "call +1 000 000 0000",
        "Order #123456789 shipped",
        "id 550e8400-e29b-41d4-a716-446655440000",
        "at 2024-01-02T10:00:00Z the job ran",
        "upgrade to v10.4.12 now",
        "tracking 1Z999AA10123456784",
        "build 20240102",
    ] {
        assert!(types(text).is_empty(), "{text}: {:?}", types(text));
    }
}

#[test]
fn sins_emails_phones_and_money() {
    assert_eq!(
        types("SIN 130 692 544"),
        [(PiiType::CaSin, "130 692 544".into())]
    );
    assert_eq!(
        types("write to Ann.Lee+x@Example.com today."),
        [(PiiType::Email, "Ann.Lee+x@Example.com".into())]
    );
    assert_eq!(
        types("phone: +1 (202) 555-0123"),
        [(PiiType::Phone, "+1 (202) 555-0123".into())]
    );
    assert_eq!(
        types("tél. 01 42 68 53 00"),
        Vec::<(PiiType, String)>::new(),
        "a French number without +33 is not a US number"
    );
    let french = Detector::new().with_phone_region(Region::FR);
    let found = french.scan("tél. 01 42 68 53 00", DEFAULT_MIN_CONFIDENCE);
    assert_eq!(
        found.len(),
        1,
        "read in the tenant's region, it is a French number"
    );
    assert_eq!(found[0].pii_type, PiiType::Phone);
    assert_eq!(
        types("tél. +33 1 42 68 53 00"),
        [(PiiType::Phone, "+33 1 42 68 53 00".into())]
    );
    assert_eq!(
        types("salary $1,234.50 per week"),
        [(PiiType::Monetary, "$1,234.50".into())]
    );
    assert_eq!(
        types("montant 1.234,50 € payé"),
        [(PiiType::Monetary, "1.234,50".into())]
    );
}

#[test]
fn dates_and_dates_of_birth() {
    assert_eq!(
        types("signed 2020-03-04 in Ottawa"),
        [(PiiType::Date, "2020-03-04".into())]
    );
    assert_eq!(
        types("born on March 4, 1980."),
        [(PiiType::Dob, "March 4, 1980".into())]
    );
    assert_eq!(
        types("date de naissance : 4 mars 1980"),
        [(PiiType::Dob, "4 mars 1980".into())]
    );
    assert!(types("on 2023-02-30 nothing happened").is_empty());
}

#[test]
fn passports_and_case_numbers() {
    assert_eq!(
        types("Passeport AB123456"),
        [(PiiType::PassportCa, "AB123456".into())]
    );
    assert!(types("part AB123456 in stock").is_empty());
    assert_eq!(
        types("Case CV-2023-001234 was filed"),
        [(PiiType::CaseNumber, "CV-2023-001234".into())]
    );
}

#[test]
fn findings_carry_locations_evidence_and_categories() {
    let text = "first line\nsecond: SSN 123-45-6789\n";
    let f = Detector::new().scan(text, DEFAULT_MIN_CONFIDENCE);
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].location,
        Location::Line {
            line: 2,
            column: 13
        }
    );
    assert_eq!(f[0].category, Category::GovernmentId);
    assert_eq!(f[0].evidence.pattern, "ssn_grouped");
    assert_eq!(f[0].evidence.validator, Some("ssa_rules"));
    assert_eq!(f[0].evidence.context, vec!["ssn"]);
    // Lowering the threshold shows the weak findings.
    let weak = Detector::new().scan("the number 123456789 appears", 0.0);
    assert!(!weak.is_empty());
}

proptest::proptest! {
    /// Any text, however broken, is scanned without a panic, and every finding's offsets are
    /// inside it on character boundaries.
    #[test]
    fn any_text_scans_without_panicking(text in "\\PC{0,200}") {
        for f in Detector::new().scan(&text, 0.0) {
            proptest::prop_assert!(f.start < f.end && f.end <= text.len());
            proptest::prop_assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
        }
    }

    #[test]
    fn digit_heavy_text_scans_without_panicking(text in "[0-9 ()+./,:@a-zé€$-]{0,120}") {
        for f in Detector::new().scan(&text, 0.0) {
            proptest::prop_assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// The allocation-free date check reads numeric dates exactly as tokenize-core does.
    #[test]
    fn numeric_dates_agree_with_tokenize_core(
        a in 0u32..10000, b in 0u32..100, c in 0u32..10000,
        layout in 0usize..4, separator in proptest::sample::select(vec!['-', '/', '.']),
    ) {
        let text = match layout {
            0 => format!("{a:04}{separator}{b:02}{separator}{:02}", c % 100),
            1 => format!("{a}{separator}{b}{separator}{}", c % 100),
            2 => format!("{}{separator}{b}{separator}{c:04}", a % 100),
            _ => format!("{:02}{separator}{:02}{separator}{c}", a % 100, b % 100),
        };
        proptest::prop_assert_eq!(numeric_date(&text), is_date(&text), "{}", text);
    }
}

#[test]
fn words_against_numbers_leave_emails_alone() {
    // "order" says a number is an order number; it says nothing about an address.
    assert_eq!(
        types("contact ann.lee@example.com about order 40"),
        [(PiiType::Email, "ann.lee@example.com".into())]
    );
    assert_eq!(
        types("order 40\nmail user0.40@example.com now"),
        [(PiiType::Email, "user0.40@example.com".into())]
    );
    assert!(types("order 219099999 shipped").is_empty());
}

#[test]
fn anchors_are_every_digit_and_at_sign_and_nothing_else() {
    // Every byte value, at every offset within and across the eight-byte words, against the
    // plain definition.
    let mut text: Vec<u8> = (0..=255u8).collect();
    text.extend((0..=255u8).rev());
    text.extend(b"plain words only, then a 7 and @ and \xc3\xa9 9");
    for from in 0..=text.len() {
        let expected = (from..text.len())
            .find(|&i| text[i].is_ascii_digit() || text[i] == b'@')
            .unwrap_or(text.len());
        assert_eq!(next_anchor(&text, from), expected, "from {from}");
    }
    let sparse = [b"x".repeat(61), b"5".to_vec(), b"y".repeat(20)].concat();
    assert_eq!(next_anchor(&sparse, 0), 61);
    assert_eq!(next_anchor(&sparse, 62), sparse.len());
}

#[test]
fn phone_findings_carry_their_canonical_form_only_with_values() {
    let text = "call +1 415 555 0132 or mail ann@example.com";
    let options = Options {
        with_values: true,
        ..Options::default()
    };
    let findings = Detector::new().scan_text(text, Format::Text, &options);
    let phone = findings.iter().find(|f| f.pii_type == PiiType::Phone);
    let expected = normalize(
        PiiType::Phone,
        "+1 415 555 0132",
        &NormalizeOptions::default(),
    )
    .unwrap();
    assert_eq!(
        phone.and_then(|f| f.normalized.as_deref()),
        Some(expected.value.expose()),
        "{findings:?}"
    );
    let email = findings.iter().find(|f| f.pii_type == PiiType::Email);
    assert!(
        email.is_some_and(|f| f.normalized.is_none()),
        "{findings:?}"
    );
    let without = Detector::new().scan_text(text, Format::Text, &Options::default());
    assert_eq!(without.len(), 2, "{without:?}");
    assert!(
        without
            .iter()
            .all(|f| f.normalized.is_none() && f.value.is_none())
    );
}

#[test]
fn named_dates_without_a_comma_are_dates_and_birth_dates_under_a_birth_header() {
    assert_eq!(
        types("signed on March 29 2003 in Boston"),
        [(PiiType::Date, "March 29 2003".into())]
    );
    assert_eq!(
        types("born Dec 1 1990."),
        [(PiiType::Dob, "Dec 1 1990".into())]
    );
    let csv = "name,date_of_birth,city\nAnn Lee,March 29 2003,Boston\nCy Diaz,Dec 1 1990,Reno\n";
    let report = Detector::new()
        .scan_bytes(
            csv.as_bytes(),
            crate::Hint {
                content_type: None,
                file_name: Some("people.csv"),
            },
            &Options::default(),
        )
        .unwrap();
    let dobs: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.pii_type.pii() == Some(PiiType::Dob))
        .map(|f| &csv[f.start..f.end])
        .collect();
    assert_eq!(dobs, ["March 29 2003", "Dec 1 1990"]);
    // Whatever detection calls a birth date, tokenization reads.
    for dob in dobs {
        normalize(PiiType::Dob, dob, &NormalizeOptions::default()).unwrap();
    }
    // A day and a year after a month word only when they make a date.
    assert!(types("March 32 2003 and May 4 12345").is_empty());
}

#[test]
fn ten_bare_digits_of_a_dialable_north_american_number_are_a_phone() {
    for text in [
        "2025550123",
        "Contact: 4155550199",
        "reach me at 6175551234 after six",
    ] {
        let f = found(text);
        assert_eq!(f.len(), 1, "{text}: {f:?}");
        assert_eq!(f[0].0, PiiType::Phone, "{text}");
    }
    // Area codes and exchanges that cannot be dialled, service codes, and numbers that words
    // call something else are not.
    for text in [
        "1025550123",
        "2021550123",
        "4115550199",
        "2029110123",
        "Order 2025550123 shipped",
        "invoice 6175551234",
        "tracking 4155550199",
    ] {
        assert!(types(text).is_empty(), "{text}: {:?}", types(text));
    }
}

#[test]
fn a_backslash_escape_before_a_value_is_a_separator_not_part_of_it() {
    // As JSON strings and log lines write a line break or a tab.
    assert_eq!(
        types(r#"{"note":"Contact:\nann@example.com"}"#),
        [(PiiType::Email, "ann@example.com".into())]
    );
    assert_eq!(
        types(r#"{"note":"SSN\t219-09-9999"}"#),
        [(PiiType::UsSsn, "219-09-9999".into())]
    );
    // An escaped backslash is not an escape of the letter after it.
    assert_eq!(
        types(r#"{"path":"C:\\nann@example.com"}"#),
        [(PiiType::Email, "nann@example.com".into())]
    );
}

#[test]
fn values_side_by_side_in_parentheses_or_quotes_are_each_found() {
    let ssn = |s: &str| (PiiType::UsSsn, s.to_owned());
    // Two values one space apart, whose digits together pass 16.
    assert_eq!(
        types("ssn 123-45-6789 078-05-1120"),
        [ssn("123-45-6789"), ssn("078-05-1120")]
    );
    let dates = types("dob 2024-01-05 2024-01-06 2024-01-07");
    assert_eq!(dates.len(), 3, "{dates:?}");
    // A parenthesis around a value is punctuation, not a phone number's area code.
    assert_eq!(types("Jane Roe (SSN 219-09-9999)"), [ssn("219-09-9999")]);
    assert_eq!(types("Jane Roe (219-09-9999)"), [ssn("219-09-9999")]);
    // A quote that opens a string is not the address's.
    assert_eq!(
        types("VALUES (1, 'ann@example.com');"),
        [(PiiType::Email, "ann@example.com".to_owned())]
    );
}

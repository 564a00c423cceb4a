//! Property tests of the normalizers and of format-preserving tokens: shape, determinism,
//! injectivity and round trip.

use proptest::prelude::*;
use ring::rand::SystemRandom;

use crate::normalize::{self, NormalizeOptions, Region, luhn_valid, ssn_is_issuable};
use crate::{
    FormatPreserving, FpeKey, MacKey, Mode, PiiType, deterministic_token, fingerprint,
    format_preserving, randomized_token,
};

fn fpe_key() -> FpeKey {
    FpeKey::new(&[7u8; 32])
}

fn norm(t: PiiType, raw: &str) -> normalize::Normalized {
    normalize::normalize(t, raw, &NormalizeOptions::default())
        .unwrap_or_else(|e| panic!("{t}: {e}"))
}

fn canon(t: PiiType, raw: &str) -> String {
    norm(t, raw).value.expose().to_owned()
}

fn fpe_token(t: PiiType, raw: &str) -> String {
    match format_preserving(&fpe_key(), &norm(t, raw)) {
        FormatPreserving::Enciphered(token) => token,
        FormatPreserving::Surrogate(_) => panic!("{t}: expected FF1, got a surrogate"),
        FormatPreserving::Unshapeable => panic!("{t}: expected FF1, got no token"),
    }
}

/// Same length, same non-alphanumeric characters in the same places, and each letter or digit
/// replaced by one of its own class.
fn same_shape(a: &str, b: &str) -> bool {
    a.chars().count() == b.chars().count()
        && a.chars().zip(b.chars()).all(|(x, y)| {
            (x.is_ascii_digit() && y.is_ascii_digit())
                || (x.is_ascii_lowercase() && y.is_ascii_lowercase())
                || (x.is_ascii_uppercase() && y.is_ascii_uppercase())
                || (!x.is_ascii_alphanumeric() && x == y)
        })
}

fn issuable_ssn() -> impl Strategy<Value = String> {
    (1u32..900, 1u32..100, 1u32..10000)
        .prop_filter("issuable", |(a, _, _)| *a != 666)
        .prop_map(|(a, g, s)| format!("{a:03}{g:02}{s:04}"))
}

fn ssn_layout(digits: &str, style: u8) -> String {
    match style % 4 {
        0 => format!("{}-{}-{}", &digits[..3], &digits[3..5], &digits[5..]),
        1 => format!("{} {} {}", &digits[..3], &digits[3..5], &digits[5..]),
        2 => format!("{}.{}.{}", &digits[..3], &digits[3..5], &digits[5..]),
        _ => digits.to_owned(),
    }
}

fn sin() -> impl Strategy<Value = String> {
    (1u32..100_000_000).prop_map(|p| {
        let payload = format!("{p:08}");
        let check = normalize::luhn_check_digit(payload.as_bytes());
        format!("{payload}{}", char::from(check))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn ssn_normalization_ignores_layout_and_is_idempotent(digits in issuable_ssn(), style in 0u8..4) {
        let n = norm(PiiType::UsSsn, &ssn_layout(&digits, style));
        prop_assert_eq!(n.value.expose(), digits.as_str());
        prop_assert_eq!(canon(PiiType::UsSsn, n.value.expose()), digits.as_str());
    }

    #[test]
    fn ssn_tokens_keep_the_layout_are_issuable_and_round_trip(digits in issuable_ssn(), style in 0u8..4) {
        let raw = ssn_layout(&digits, style);
        let token = fpe_token(PiiType::UsSsn, &raw);
        prop_assert!(same_shape(&raw, &token), "{} -> {}", raw, token);
        let token_digits: Vec<u8> = token.bytes().filter(u8::is_ascii_digit).collect();
        prop_assert!(ssn_is_issuable(&token_digits));
        // Deterministic, and the same digits whatever the layout.
        prop_assert_eq!(&token, &fpe_token(PiiType::UsSsn, &raw));
        let plain: String = token.chars().filter(char::is_ascii_digit).collect();
        prop_assert_eq!(plain, fpe_token(PiiType::UsSsn, &digits));
        // The inverse walk gives the value back.
        let shape = crate::shape::Shape::new(&token, |_, c| !c.is_ascii_digit());
        let back = crate::fpe::decipher(&fpe_key(), b"us_ssn", &shape, |v| {
            let d: Vec<u8> = v.iter().map(|x| b'0' + *x as u8).collect();
            ssn_is_issuable(&d)
        }).unwrap();
        prop_assert_eq!(shape.render(&back), raw);
    }

    #[test]
    fn different_values_of_one_shape_get_different_tokens(a in issuable_ssn(), b in issuable_ssn()) {
        prop_assume!(a != b);
        prop_assert_ne!(fpe_token(PiiType::UsSsn, &a), fpe_token(PiiType::UsSsn, &b));
    }

    #[test]
    fn sin_tokens_are_luhn_valid_and_keep_the_layout(s in sin(), spaced in any::<bool>()) {
        let raw = if spaced { format!("{} {} {}", &s[..3], &s[3..6], &s[6..]) } else { s.clone() };
        let token = fpe_token(PiiType::CaSin, &raw);
        prop_assert!(same_shape(&raw, &token));
        let digits: Vec<u8> = token.bytes().filter(u8::is_ascii_digit).collect();
        prop_assert!(luhn_valid(&digits));
        prop_assert!(normalize::normalize(PiiType::CaSin, &token, &NormalizeOptions::default()).is_ok());
    }

    #[test]
    fn a_changed_sin_digit_fails_luhn(s in sin(), at in 0usize..9, delta in 1u8..10) {
        let mut b = s.into_bytes();
        b[at] = b'0' + (b[at] - b'0' + delta) % 10;
        prop_assert!(!luhn_valid(&b));
    }

    #[test]
    fn email_tokens_keep_the_domain_and_shape(local in "[a-z][a-z0-9]{5,15}(\\.[a-z]{2,8})?", tag in "[a-z]{0,6}") {
        let raw = if tag.is_empty() { format!("{local}@Example.COM") } else { format!("{local}+{tag}@Example.COM") };
        let n = norm(PiiType::Email, &raw);
        prop_assert_eq!(n.value.expose(), format!("{local}@example.com"));
        let token = fpe_token(PiiType::Email, &raw);
        prop_assert!(token.ends_with("@example.com"), "{}", token);
        prop_assert!(same_shape(n.value.expose(), &token));
    }

    #[test]
    fn passport_ca_tokens_are_two_letters_and_six_digits(letters in "[A-Za-z]{2}", digits in "[0-9]{6}") {
        let token = fpe_token(PiiType::PassportCa, &format!("{letters}{digits}"));
        let b = token.as_bytes();
        prop_assert!(b.len() == 8 && b[..2].iter().all(u8::is_ascii_uppercase) && b[2..].iter().all(u8::is_ascii_digit));
    }

    #[test]
    fn dates_written_any_supported_way_normalize_to_iso(y in 1900u16..2100, m in 1u8..13, d in 1u8..29, style in 0u8..8) {
        let iso = format!("{y:04}-{m:02}-{d:02}");
        let months = ["January","February","March","April","May","June","July","August","September","October","November","December"];
        let raw = match style {
            0 => iso.clone(),
            1 => format!("{m:02}/{d:02}/{y}"),
            2 => format!("{d:02}.{m:02}.{y}"),
            3 => format!("{} {d}, {y}", months[usize::from(m - 1)]),
            4 => format!("{d} {} {y}", months[usize::from(m - 1)]),
            // Without the comma, as birth dates are often written in CSV exports.
            5 => format!("{} {d} {y}", months[usize::from(m - 1)]),
            6 => format!("{} {d} {y}", &months[usize::from(m - 1)][..3]),
            _ => format!("{y}{m:02}{d:02}"),
        };
        prop_assert_eq!(canon(PiiType::Dob, &raw), iso.as_str());
    }

    #[test]
    fn money_written_with_grouping_normalizes(int in 1000u64..10_000_000_000, cents in 0u32..100) {
        let plain = format!("{int}.{cents:02}");
        let grouped_us = group(int, ',') + &format!(".{cents:02}");
        let grouped_eu = group(int, '.') + &format!(",{cents:02}");
        prop_assert_eq!(canon(PiiType::Monetary, &format!("${grouped_us}")), plain.as_str());
        prop_assert_eq!(canon(PiiType::Monetary, &format!("{grouped_eu} €")), plain.as_str());
        let written = format!("${grouped_us}");
        let token = fpe_token(PiiType::Monetary, &written);
        prop_assert!(same_shape(&written, &token));
    }
}

fn group(n: u64, sep: char) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// Two German numbers written alike, ten bare digits, are enciphered in different shapes:
/// `0301607517` keeps its trunk `0` and enciphers nine digits, `3000005643` enciphers ten.
/// Under this key their tokens coincide (found by a search over two million Berlin numbers),
/// so a phone token names one number only within its shape. That is why the vault opens an
/// entry and compares its value before it gives a value that entry's token (`claim_or_divert`
/// in vault's tokenize/write.rs), and why a phone surrogate's fingerprint covers the value as
/// read (`fingerprint_as_read`).
#[test]
fn phone_tokens_of_two_shapes_can_coincide() {
    let de = NormalizeOptions {
        default_region: Region::DE,
    };
    let read = |raw: &str| normalize::normalize(PiiType::Phone, raw, &de).unwrap();
    let token = |raw: &str| match format_preserving(&fpe_key(), &read(raw)) {
        FormatPreserving::Enciphered(token) => token,
        other => panic!("{raw}: {other:?}"),
    };
    let (trunk, bare) = ("0301607517", "3000005643");
    assert_eq!(read(trunk).value.expose(), "+49301607517");
    assert_eq!(read(bare).value.expose(), "+493000005643");
    assert_eq!(token(trunk), "0430905943");
    assert_eq!(token(bare), "0430905943");
    // Each has surrogates of its own shape to take instead.
    assert!(crate::surrogate_for(&read(bare)).space() > 1_000_000);
    let mac = MacKey::new(&[9u8; 32]);
    assert_ne!(
        crate::fingerprint_as_read(&mac, &read(trunk)),
        crate::fingerprint_as_read(&mac, &read(bare))
    );
}

#[test]
fn phone_tokens_keep_the_country_code_and_the_written_shape() {
    for raw in [
        "+1 (202) 555-0123",
        "(202) 555-0123",
        "+44 20 7946 0958",
        "+33 1 42 68 53 00",
    ] {
        let token = fpe_token(PiiType::Phone, raw);
        assert!(same_shape(raw, &token), "{raw} -> {token}");
        if let Some(rest) = raw.strip_prefix("+") {
            let code: String = rest.chars().take_while(char::is_ascii_digit).collect();
            assert!(token.starts_with(&format!("+{code}")), "{raw} -> {token}");
        }
        assert_ne!(token, raw);
    }
    // A region other than the default reads numbers without a country code.
    let fr = normalize::normalize(
        PiiType::Phone,
        "01 42 68 53 00",
        &NormalizeOptions {
            default_region: Region::FR,
        },
    )
    .unwrap();
    assert_eq!(fr.value.expose(), "+33142685300");
}

#[test]
fn a_phone_whose_written_digits_are_not_its_number_gets_a_token_in_e164() {
    // Letters that are digits (a vanity number): kept, they would show the number's end.
    let vanity = norm(PiiType::Phone, "+1 (650) 253-CALL");
    let FormatPreserving::Enciphered(token) = format_preserving(&fpe_key(), &vanity) else {
        panic!("expected FF1");
    };
    assert!(!token.contains("CALL"), "{token}");
    assert!(token.starts_with("+1") && token.len() == 12, "{token}");
    assert!(token[1..].bytes().all(|b| b.is_ascii_digit()), "{token}");
    // A number written in its own digits keeps its layout, extension and all.
    let plain = "+1 (202) 555-0123 ext. 12";
    let token = fpe_token(PiiType::Phone, plain);
    assert!(same_shape(plain, &token), "{plain} -> {token}");
}

#[test]
fn values_written_with_non_ascii_letters_or_digits_get_no_format_preserving_token() {
    // Slots hold ASCII letters and digits only, so a token of these shapes would copy the
    // other characters, which are the value itself.
    for (t, raw) in [
        (
            PiiType::CaseNumber,
            "\u{661}\u{662}\u{663}\u{664}\u{665}\u{666}\u{667}\u{668}\u{669}-1",
        ),
        (PiiType::CaseNumber, "CASE-\u{c9}T\u{c9}-20240017"),
    ] {
        let value = norm(t, raw);
        assert!(
            matches!(
                format_preserving(&fpe_key(), &value),
                FormatPreserving::Unshapeable
            ),
            "{raw}"
        );
    }
    // A phone number written with digits outside ASCII is not taken as a phone number at all.
    assert!(
        normalize::normalize(
            PiiType::Phone,
            "+1 415 892 \u{ff14}\u{ff17}\u{ff12}\u{ff11}",
            &NormalizeOptions::default(),
        )
        .is_err()
    );
    // Other characters the token keeps as they are, such as a currency sign, are fine.
    assert!(fpe_token(PiiType::Monetary, "\u{20ac}12,345.67").starts_with('\u{20ac}'));
}

#[test]
fn small_domains_and_dates_take_surrogates_of_the_same_shape() {
    let rng = SystemRandom::new();
    for (t, raw) in [
        (PiiType::Date, "03/04/2020"),
        (PiiType::Dob, "March 4, 1980"),
        (PiiType::Monetary, "$12.50"),
        (PiiType::CaseNumber, "A-12"),
    ] {
        let FormatPreserving::Surrogate(surrogate) = format_preserving(&fpe_key(), &norm(t, raw))
        else {
            panic!("{raw}: expected a surrogate");
        };
        for _ in 0..50 {
            let drawn = surrogate.draw(&rng).unwrap();
            assert_ne!(drawn, raw);
            if let normalize::Detail::Date { layout } = &norm(t, raw).detail {
                // A date surrogate is a valid date, written exactly as the original's layout
                // writes that date (a month name can be longer or shorter than the original's).
                let iso = canon(t, &drawn);
                let ymd = normalize::Ymd {
                    year: iso[0..4].parse().unwrap(),
                    month: iso[5..7].parse().unwrap(),
                    day: iso[8..10].parse().unwrap(),
                };
                assert_eq!(normalize::render_date(ymd, layout), drawn, "{raw}");
            } else {
                assert!(same_shape(raw, &drawn), "{raw} -> {drawn}");
            }
        }
    }
}

#[test]
fn deterministic_tokens_depend_on_key_type_scope_and_value_only() {
    let key = MacKey::new(&[1u8; 32]);
    let a = norm(PiiType::UsSsn, "123-45-6789");
    let b = norm(PiiType::UsSsn, "123 45 6789");
    let t = deterministic_token(&key, "global", &a);
    assert!(t.starts_with(crate::DETERMINISTIC_PREFIX) && crate::looks_like_token(&t));
    assert_eq!(t.len(), 4 + 32);
    assert_eq!(t, deterministic_token(&key, "global", &b));
    assert_ne!(t, deterministic_token(&key, "policy:p1", &a));
    assert_ne!(
        t,
        deterministic_token(&MacKey::new(&[2u8; 32]), "global", &a)
    );
    assert_ne!(
        t,
        deterministic_token(&key, "global", &norm(PiiType::PassportUs, "123456789"))
    );
    // The fingerprint is a different value from the token, even under the same key.
    let fp = fingerprint(&key, Mode::Deterministic, "global", &a);
    assert!(!t.contains(&format!("{:02x}", fp[0]).repeat(4)));
}

#[test]
fn an_amounts_currency_is_part_of_its_value() {
    let key = MacKey::new(&[1u8; 32]);
    let token = |raw: &str| deterministic_token(&key, "global", &norm(PiiType::Monetary, raw));
    let print = |raw: &str| {
        fingerprint(
            &key,
            Mode::Deterministic,
            "global",
            &norm(PiiType::Monetary, raw),
        )
    };
    assert_ne!(token("€100.00"), token("£100.00"));
    assert_ne!(token("USD 100"), token("JPY 100"));
    assert_ne!(token("100.00"), token("€100.00"));
    assert_ne!(print("€100.00"), print("£100.00"));
    assert_eq!(
        token("€100.00"),
        token("EUR 100.00"),
        "one currency, one value"
    );
    // An amount without a currency keeps the token it always had: the MAC of the same four
    // fields as any other type's.
    let plain = norm(PiiType::Monetary, "1,234.50");
    let mac = key.mac(&[
        b"dps-token-v1",
        b"monetary",
        b"global",
        plain.value.expose().as_bytes(),
    ]);
    assert_eq!(
        deterministic_token(&key, "global", &plain),
        crate::token::prefixed_base32(
            crate::DETERMINISTIC_PREFIX,
            &mac[..crate::token::TOKEN_BYTES]
        )
    );
}

#[test]
fn randomized_tokens_are_fresh() {
    let rng = SystemRandom::new();
    let a = randomized_token(&rng).unwrap();
    let b = randomized_token(&rng).unwrap();
    assert_ne!(a, b);
    assert!(crate::looks_like_token(&a) && a.starts_with(crate::RANDOMIZED_PREFIX));
}

#[test]
fn errors_never_contain_the_value() {
    let secret = "987-65-4320";
    for t in PiiType::ALL {
        if let Err(e) = normalize::normalize(t, secret, &NormalizeOptions::default()) {
            assert!(
                !e.to_string().contains("987") && !e.to_string().contains("4320"),
                "{t}: {e}"
            );
        }
    }
    assert_eq!(
        normalize::normalize(PiiType::Email, "  ", &NormalizeOptions::default())
            .unwrap_err()
            .code,
        crate::ItemCode::EmptyValue
    );
    assert_eq!(
        "US_SSN".parse::<PiiType>().unwrap_err().code,
        crate::ItemCode::UnsupportedPiiType
    );
}

#[test]
fn a_value_that_ff1_maps_to_itself_takes_a_surrogate() {
    // Under the test key, FF1 over seven digits maps 6770703 to itself (found by searching all
    // seven-digit amounts once): its token would be its value.
    let value = norm(PiiType::Monetary, "67707.03");
    let shape = crate::token::shape_of_for_tests(&value);
    let values = crate::fpe::encipher(&fpe_key(), b"monetary", &shape, |_| true).unwrap();
    assert_eq!(
        shape.render(&values),
        "67707.03",
        "the fixed point this test is about"
    );
    match format_preserving(&fpe_key(), &value) {
        FormatPreserving::Surrogate(surrogate) => {
            let drawn = surrogate.draw(&SystemRandom::new()).unwrap();
            assert_ne!(drawn, "67707.03");
            assert!(same_shape("67707.03", &drawn), "{drawn}");
        }
        other => panic!("expected a surrogate, got {other:?}"),
    }
}

//! The canonical form against RFC 8785's own examples and the JCS reference number tests.
#![allow(clippy::unwrap_used, reason = "test")]

use receipts::{CanonicalError, canonical, parse_json};
use ring::digest::{Context, SHA256, digest};
use serde_json::{Value, json};

fn canon(text: &str) -> String {
    String::from_utf8(canonical(&parse_json(text.as_bytes()).unwrap()).unwrap()).unwrap()
}

/// RFC 8785 section 3.2.2: whitespace, literals, numbers and string escapes.
#[test]
fn rfc_8785_main_example() {
    let input = r#"{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"#;
    assert_eq!(
        canon(input),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

/// RFC 8785 section 3.2.3: members are sorted by UTF-16 code units, so the emoji (a surrogate
/// pair starting 0xD83D) comes before U+FB33, although its UTF-8 bytes and its code point are
/// greater.
#[test]
fn rfc_8785_sorting_example() {
    let input = r#"{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }"#;
    let value = parse_json(input.as_bytes()).unwrap();
    let canonical = canon(input);
    let order: Vec<&str> = canonical.split('"').skip(3).step_by(4).collect::<Vec<_>>();
    assert_eq!(
        order,
        [
            "Carriage Return",
            "One",
            "Control",
            "Latin Small Letter O With Diaeresis",
            "Euro Sign",
            "Emoji: Grinning Face",
            "Hebrew Letter Dalet With Dagesh",
        ]
    );
    assert_eq!(
        canonical,
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
         \"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\
         \"😀\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
    );
    // Sorting by UTF-8 bytes would have put the emoji last.
    let mut by_bytes: Vec<&String> = value.as_object().unwrap().keys().collect();
    by_bytes.sort();
    assert_eq!(by_bytes.last().unwrap().as_str(), "😀");
}

/// Nested objects and arrays, empty containers, the empty name, names that sort as digits,
/// and text that is not normalized (JCS never normalizes Unicode).
#[test]
fn structures_and_unnormalized_text() {
    assert_eq!(
        canon(r#"[56, {"d": true, "10": null, "1": [ ]}]"#),
        r#"[56,{"1":[],"10":null,"d":true}]"#
    );
    assert_eq!(
        canon(
            r#"{"1": {"f": {"f": "hi","F": 5} ,"\n": 56.0}, "10": { }, "": "empty", "a": { },
                "111": [ {"e": "yes","E": "no" } ], "A": { }}"#
        ),
        r#"{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"A":{},"a":{}}"#
    );
    assert_eq!(canon(r#"{"x":"A\u030a"}"#), "{\"x\":\"A\u{30a}\"}");
    assert_eq!(
        canon(r#"{"peach":1,"péché":2,"pêche":3,"sin":4}"#),
        r#"{"peach":1,"péché":2,"pêche":3,"sin":4}"#
    );
}

/// RFC 8785 appendix B: IEEE 754 doubles (by their bits) and their canonical text.
#[test]
fn rfc_8785_appendix_b_numbers() {
    let vectors = [
        (0x0000000000000000_u64, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"),
        (0xffefffffffffffff, "-1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0xc340000000000000, "-9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44b52d02c7e14af5, "9.999999999999997e+22"),
        (0x44b52d02c7e14af6, "1e+23"),
        (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
        (0x444b1ae4d6e2ef4e, "999999999999999700000"),
        (0x444b1ae4d6e2ef4f, "999999999999999900000"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x41b3de4355555553, "333333333.3333332"),
        (0x41b3de4355555554, "333333333.33333325"),
        (0x41b3de4355555555, "333333333.3333333"),
        (0x41b3de4355555556, "333333333.3333334"),
        (0x41b3de4355555557, "333333333.33333343"),
        (0xbecbf647612f3696, "-0.0000033333333333333333"),
        (0x43143ff3c1cb0959, "1424953923781206.2"),
    ];
    for (bits, expected) in vectors {
        let value = json!(f64::from_bits(bits));
        assert_eq!(
            String::from_utf8(canonical(&value).unwrap()).unwrap(),
            expected,
            "{bits:016x}"
        );
    }
    // NaN and the infinities have no JSON form; serde_json cannot even hold them, so the
    // refusal is tested where it lives (the number module).
    assert!(serde_json::Number::from_f64(f64::from_bits(0x7ff0000000000000)).is_none());
}

/// Integers beyond 2^53 that are not exactly doubles are refused, not rounded.
#[test]
fn inexact_integers_are_refused() {
    let value = parse_json(br#"{"bytes": 9007199254740993}"#).unwrap();
    assert_eq!(
        canonical(&value),
        Err(CanonicalError::InexactInteger("9007199254740993".into()))
    );
    assert_eq!(
        canon(r#"{"bytes": 9007199254740992}"#),
        r#"{"bytes":9007199254740992}"#
    );
}

/// The JCS reference tests' number sequence (cyberphone/json-canonicalization, testdata/README:
/// fixed edge cases, 2,000 consecutive tiny doubles, then doubles drawn from a SHA-256 chain),
/// generated here and formatted as lines `hex-bits,canonical-text\n`; the SHA-256 of the first
/// lines must equal the published checksum of the reference file, which JavaScript engines
/// produced.
#[test]
fn the_reference_number_file_checksums_match() {
    let mut numbers = ReferenceNumbers::default();
    let mut hash = Context::new(&SHA256);
    let mut line = Vec::with_capacity(64);
    let checkpoints = [
        (
            1_000,
            "be18b62b6f69cdab33a7e0dae0d9cfa869fda80ddc712221570f9f40a5878687",
        ),
        (
            10_000,
            "b9f7a8e75ef22a835685a52ccba7f7d6bdc99e34b010992cbc5864cd12be6892",
        ),
        (
            100_000,
            "22776e6d4b49fa294a0d0f349268e5c28808fe7e0cb2bcbe28f63894e494d4c7",
        ),
        (
            1_000_000,
            "49415fee2c56c77864931bd3624faad425c3c577d6d74e89a83bc725506dad16",
        ),
    ];
    let mut written = 0;
    for (lines, expected) in checkpoints {
        while written < lines {
            let x = numbers.next_double();
            line.clear();
            line.extend_from_slice(format!("{:x},", x.to_bits()).as_bytes());
            line.extend_from_slice(&canonical(&json!(x)).unwrap());
            line.push(b'\n');
            hash.update(&line);
            written += 1;
        }
        assert_eq!(
            hex(hash.clone().finish().as_ref()),
            expected,
            "first {lines} lines"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The reference file's doubles, in order.
#[derive(Default)]
struct ReferenceNumbers {
    index: usize,
    block: [u8; 32],
    /// Unused doubles left in `block`.
    left: usize,
}

impl ReferenceNumbers {
    const FIXED: [u64; 168] = [
        0x0000000000000000,
        0x8000000000000000,
        0x0000000000000001,
        0x8000000000000001,
        0xc46696695dbd1cc3,
        0xc43211ede4974a35,
        0xc3fce97ca0f21056,
        0xc3c7213080c1a6ac,
        0xc39280f39a348556,
        0xc35d9b1f5d20d557,
        0xc327af4c4a80aaac,
        0xc2f2f2a36ecd5556,
        0xc2be51057e155558,
        0xc28840d131aaaaac,
        0xc253670dc1555557,
        0xc21f0b4935555557,
        0xc1e8d5d42aaaaaac,
        0xc1b3de4355555556,
        0xc17fca0555555556,
        0xc1496e6aaaaaaaab,
        0xc114585555555555,
        0xc0e046aaaaaaaaab,
        0xc0aa0aaaaaaaaaaa,
        0xc074d55555555555,
        0xc040aaaaaaaaaaab,
        0xc00aaaaaaaaaaaab,
        0xbfd5555555555555,
        0xbfa1111111111111,
        0xbf6b4e81b4e81b4f,
        0xbf35d867c3ece2a5,
        0xbf0179ec9cbd821e,
        0xbecbf647612f3696,
        0xbe965e9f80f29212,
        0xbe61e54c672874db,
        0xbe2ca213d840baf8,
        0xbdf6e80fe033c8c6,
        0xbdc2533fe68fd3d2,
        0xbd8d51ffd74c861c,
        0xbd5774ccac3d3817,
        0xbd22c3d6f030f9ac,
        0xbcee0624b3818f79,
        0xbcb804ea293472c7,
        0xbc833721ba905bd3,
        0xbc4ebe9c5db3c61e,
        0xbc18987d17c304e5,
        0xbbe3ad30dfcf371d,
        0xbbaf7b816618582f,
        0xbb792f9ab81379bf,
        0xbb442615600f9499,
        0xbb101e77800c76e1,
        0xbad9ca58cce0be35,
        0xbaa4a1e0a3e6fe90,
        0xba708180831f320d,
        0xba3a68cd9e985016,
        0x446696695dbd1cc3,
        0x443211ede4974a35,
        0x43fce97ca0f21056,
        0x43c7213080c1a6ac,
        0x439280f39a348556,
        0x435d9b1f5d20d557,
        0x4327af4c4a80aaac,
        0x42f2f2a36ecd5556,
        0x42be51057e155558,
        0x428840d131aaaaac,
        0x4253670dc1555557,
        0x421f0b4935555557,
        0x41e8d5d42aaaaaac,
        0x41b3de4355555556,
        0x417fca0555555556,
        0x41496e6aaaaaaaab,
        0x4114585555555555,
        0x40e046aaaaaaaaab,
        0x40aa0aaaaaaaaaaa,
        0x4074d55555555555,
        0x4040aaaaaaaaaaab,
        0x400aaaaaaaaaaaab,
        0x3fd5555555555555,
        0x3fa1111111111111,
        0x3f6b4e81b4e81b4f,
        0x3f35d867c3ece2a5,
        0x3f0179ec9cbd821e,
        0x3ecbf647612f3696,
        0x3e965e9f80f29212,
        0x3e61e54c672874db,
        0x3e2ca213d840baf8,
        0x3df6e80fe033c8c6,
        0x3dc2533fe68fd3d2,
        0x3d8d51ffd74c861c,
        0x3d5774ccac3d3817,
        0x3d22c3d6f030f9ac,
        0x3cee0624b3818f79,
        0x3cb804ea293472c7,
        0x3c833721ba905bd3,
        0x3c4ebe9c5db3c61e,
        0x3c18987d17c304e5,
        0x3be3ad30dfcf371d,
        0x3baf7b816618582f,
        0x3b792f9ab81379bf,
        0x3b442615600f9499,
        0x3b101e77800c76e1,
        0x3ad9ca58cce0be35,
        0x3aa4a1e0a3e6fe90,
        0x3a708180831f320d,
        0x3a3a68cd9e985016,
        0x4024000000000000,
        0x4014000000000000,
        0x3fe0000000000000,
        0x3fa999999999999a,
        0x3f747ae147ae147b,
        0x3f40624dd2f1a9fc,
        0x3f0a36e2eb1c432d,
        0x3ed4f8b588e368f1,
        0x3ea0c6f7a0b5ed8d,
        0x3e6ad7f29abcaf48,
        0x3e35798ee2308c3a,
        0x3ed539223589fa95,
        0x3ed4ff26cd5a7781,
        0x3ed4f95a762283ff,
        0x3ed4f8c60703520c,
        0x3ed4f8b72f19cd0d,
        0x3ed4f8b5b31c0c8d,
        0x3ed4f8b58d1c461a,
        0x3ed4f8b5894f7f0e,
        0x3ed4f8b588ee37f3,
        0x3ed4f8b588e47da4,
        0x3ed4f8b588e3849c,
        0x3ed4f8b588e36bb5,
        0x3ed4f8b588e36937,
        0x3ed4f8b588e368f8,
        0x3ed4f8b588e368f1,
        0x3ff0000000000000,
        0xbff0000000000000,
        0xbfeffffffffffffa,
        0xbfeffffffffffffb,
        0x3feffffffffffffa,
        0x3feffffffffffffb,
        0x3feffffffffffffc,
        0x3feffffffffffffe,
        0xbfefffffffffffff,
        0xbfefffffffffffff,
        0x3fefffffffffffff,
        0x3fefffffffffffff,
        0x3fd3333333333332,
        0x3fd3333333333333,
        0x3fd3333333333334,
        0x0010000000000000,
        0x000ffffffffffffd,
        0x000fffffffffffff,
        0x7fefffffffffffff,
        0xffefffffffffffff,
        0x4340000000000000,
        0xc340000000000000,
        0x4430000000000000,
        0x44b52d02c7e14af5,
        0x44b52d02c7e14af6,
        0x44b52d02c7e14af7,
        0x444b1ae4d6e2ef4e,
        0x444b1ae4d6e2ef4f,
        0x444b1ae4d6e2ef50,
        0x3eb0c6f7a0b5ed8c,
        0x3eb0c6f7a0b5ed8d,
        0x41b3de4355555553,
        0x41b3de4355555554,
        0x41b3de4355555555,
        0x41b3de4355555556,
        0x41b3de4355555557,
        0xbecbf647612f3696,
        0x43143ff3c1cb0959,
    ];
    const SERIAL: usize = 2_000;

    fn next_double(&mut self) -> f64 {
        let i = self.index;
        self.index += 1;
        if let Some(&bits) = Self::FIXED.get(i) {
            return f64::from_bits(bits);
        }
        if i < Self::FIXED.len() + Self::SERIAL {
            return f64::from_bits(0x0010000000000000 + (i - Self::FIXED.len()) as u64);
        }
        loop {
            if self.left == 0 {
                let next = digest(&SHA256, &self.block);
                self.block.copy_from_slice(next.as_ref());
                self.left = 4;
            }
            let at = (4 - self.left) * 8;
            self.left -= 1;
            let bits = u64::from_le_bytes(self.block[at..at + 8].try_into().unwrap());
            let x = f64::from_bits(bits);
            if x != 0.0 && x.is_finite() {
                return x;
            }
        }
    }
}

/// A value built in code, not parsed, canonicalizes the same as its parsed text.
#[test]
fn built_and_parsed_values_agree() {
    let built = json!({"b": [1, 2.5, "x"], "a": {"z": null, "y": false}});
    let parsed: Value = parse_json(br#"{"a":{"y":false,"z":null},"b":[1,2.5,"x"]}"#).unwrap();
    assert_eq!(canonical(&built).unwrap(), canonical(&parsed).unwrap());
}

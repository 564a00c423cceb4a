//! Signing and verifying receipts: the round trip, and every way a document or a key set can
//! fail to prove a receipt.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use keys::MasterKey;
use receipts::{
    PublicKey, SIGNING_LABEL, SignError, SignedReceipt, Signer, SignerRole, VerifyError, canonical,
    parse_json, verify, verify_cosignature, verify_detached,
};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};

fn receipt() -> Value {
    json!({
        "receipt_id": "rcpt_0190f5c2-7b1e-7c3a-9d4e-2f1a6b8c9d0e",
        "tenant_id": "acme",
        "action": "tokenize",
        "outcome": "executed",
        "object": {
            "connector_id": "0190f5c2-0000-7000-8000-000000000001",
            "uri": "s3://acme-data/exports/people.csv",
            "version": "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY",
        },
        "policy": {"policy_id": "0190f5c2-0000-7000-8000-000000000002", "version": 3},
        "findings": 2,
        "executed_at": "2025-06-01T12:00:00.123456Z",
    })
}

fn signer() -> Signer {
    Signer::from_master(&MasterKey::generate().unwrap().0)
}

fn signed(signer: &Signer) -> Value {
    signer.sign_receipt(receipt()).unwrap().to_value()
}

/// Every leaf of `value` as a JSON pointer.
fn leaves(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                leaves(member, format!("{at}/{name}"), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                leaves(item, format!("{at}/{i}"), out);
            }
        }
        _ => out.push(at),
    }
}

/// The smallest change of a leaf: one character or one unit.
fn nudge(value: &mut Value) {
    *value = match value.take() {
        Value::String(s) => {
            let mut bytes = s.into_bytes();
            let last = bytes
                .last_mut()
                .expect("no empty strings in the test receipt");
            *last ^= 1;
            Value::String(String::from_utf8(bytes).unwrap())
        }
        Value::Number(n) => json!(n.as_i64().unwrap() + 1),
        Value::Bool(b) => json!(!b),
        Value::Null => json!(0),
        other => other,
    };
}

#[test]
fn a_signed_receipt_verifies_against_the_signers_jwks() {
    let signer = signer();
    let document = signed(&signer);
    let verified = verify(&document, &signer.jwks()).unwrap();
    assert_eq!(verified.receipt_id, receipt()["receipt_id"]);
    assert_eq!(verified.kid, signer.kid());
    assert_eq!(verified.cosigner_kid, None);
    assert_eq!(document["signatures"][0]["signer"], "platform");
    assert_eq!(document["signatures"][0]["alg"], "EdDSA");

    // As a file: pretty-printed, read back strictly.
    let text = serde_json::to_string_pretty(&document).unwrap();
    let read = parse_json(text.as_bytes()).unwrap();
    assert!(verify(&read, &signer.jwks()).is_ok());
}

#[test]
fn the_jwks_is_an_okp_key_whose_kid_is_its_thumbprint() {
    let signer = signer();
    let jwks = signer.jwks();
    let keys = jwks["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    let jwk = &keys[0];
    for (member, expected) in [
        ("kty", "OKP"),
        ("crv", "Ed25519"),
        ("alg", "EdDSA"),
        ("use", "sig"),
    ] {
        assert_eq!(jwk[member], expected);
    }
    assert_eq!(jwk["kid"], signer.kid());
    assert_eq!(
        URL_SAFE_NO_PAD
            .decode(jwk["x"].as_str().unwrap())
            .unwrap()
            .len(),
        32
    );
    let key = PublicKey::from_jwk(jwk).unwrap();
    assert_eq!(&key, signer.public_key());
    assert_eq!(key.thumbprint(), signer.kid());
    assert_eq!(signer.kid().len(), 43);
}

#[test]
fn changing_any_value_of_the_receipt_breaks_the_signature() {
    let signer = signer();
    let document = signed(&signer);
    let mut paths = Vec::new();
    leaves(&document["receipt"], "/receipt".into(), &mut paths);
    assert!(paths.len() >= 10, "{paths:?}");
    for path in paths {
        let mut tampered = document.clone();
        nudge(tampered.pointer_mut(&path).unwrap());
        assert_eq!(
            verify(&tampered, &signer.jwks()),
            Err(VerifyError::BadSignature),
            "{path}"
        );
    }
    // Adding or removing a field breaks it too.
    let mut added = document.clone();
    added["receipt"]["note"] = json!("");
    assert_eq!(
        verify(&added, &signer.jwks()),
        Err(VerifyError::BadSignature)
    );
    let mut removed = document.clone();
    removed["receipt"]
        .as_object_mut()
        .unwrap()
        .remove("findings");
    assert_eq!(
        verify(&removed, &signer.jwks()),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn member_order_and_whitespace_do_not_matter() {
    let signer = signer();
    let document = signed(&signer);
    let receipt = &document["receipt"];
    // The members in reverse byte order, spaced out, in a hand-written document.
    let mut names: Vec<&String> = receipt.as_object().unwrap().keys().collect();
    names.reverse();
    let members: Vec<String> = names
        .iter()
        .map(|name| format!("\n    {}  :  {}", json!(name), receipt[name.as_str()]))
        .collect();
    let text = format!(
        "{{ \"signatures\" : {} ,\n  \"receipt\" : {{{}\n  }}\n}}",
        document["signatures"],
        members.join(" ,")
    );
    let reordered = parse_json(text.as_bytes()).unwrap();
    assert!(text.find("\"executed_at\"").unwrap() < text.find("\"action\"").unwrap());
    assert_eq!(
        verify(&reordered, &signer.jwks()).unwrap().kid,
        signer.kid()
    );
}

#[test]
fn a_wrong_kid_or_another_key_set_is_refused() {
    let signer = signer();
    let document = signed(&signer);

    let mut renamed = document.clone();
    renamed["signatures"][0]["kid"] = json!("someone-else");
    assert_eq!(
        verify(&renamed, &signer.jwks()),
        Err(VerifyError::UnknownKid("someone-else".into()))
    );

    // Another platform's JWKS: its kid is its own thumbprint, so ours is unknown there.
    let other = self::signer();
    assert_eq!(
        verify(&document, &other.jwks()),
        Err(VerifyError::UnknownKid(signer.kid().into()))
    );

    // Another key published under our kid still does not verify.
    let mut impostor = other.jwks();
    impostor["keys"][0]["kid"] = json!(signer.kid());
    assert_eq!(verify(&document, &impostor), Err(VerifyError::BadSignature));

    // Keys of other kinds, or under our kid but not Ed25519, are passed over.
    let mut mixed = signer.jwks();
    let ours = mixed["keys"][0].clone();
    mixed["keys"] = json!([
        {"kty": "RSA", "kid": "rsa-1", "n": "AQAB", "e": "AQAB"},
        {"kty": "EC", "crv": "P-256", "kid": signer.kid(), "x": ours["x"], "y": ours["x"]},
        ours,
    ]);
    assert!(verify(&document, &mixed).is_ok());
    mixed["keys"].as_array_mut().unwrap().pop();
    assert_eq!(
        verify(&document, &mixed),
        Err(VerifyError::UnknownKid(signer.kid().into()))
    );

    for broken in [json!([]), json!({"keys": {}}), json!({})] {
        assert!(matches!(
            verify(&document, &broken),
            Err(VerifyError::MalformedJwks(_))
        ));
    }
}

#[test]
fn a_truncated_or_altered_signature_is_refused() {
    let signer = signer();
    let document = signed(&signer);
    let signature = document["signatures"][0]["signature"].as_str().unwrap();
    assert_eq!(signature.len(), 86);
    let mut flipped = signature.as_bytes().to_vec();
    flipped[10] = if flipped[10] == b'A' { b'B' } else { b'A' };
    let variants = [
        signature[..85].to_owned(),
        signature[..84].to_owned(),
        signature[..43].to_owned(),
        String::new(),
        format!("{signature}=="),
        format!("{signature}AA"),
        String::from_utf8(flipped).unwrap(),
        signature.replace(['-', '_'], "+"),
    ];
    for variant in variants {
        if variant == signature {
            continue;
        }
        let mut tampered = document.clone();
        tampered["signatures"][0]["signature"] = json!(variant);
        assert_eq!(
            verify(&tampered, &signer.jwks()),
            Err(VerifyError::BadSignature),
            "{variant}"
        );
    }
}

#[test]
fn malformed_documents_are_named_as_such() {
    let signer = signer();
    let document = signed(&signer);
    let platform = document["signatures"][0].clone();
    let mut cases = vec![
        json!("receipt"),
        json!({"receipt": receipt()}),
        json!({"receipt": receipt(), "signatures": {}}),
        json!({"receipt": [], "signatures": [platform]}),
        json!({"receipt": {"receipt_id": ""}, "signatures": [platform]}),
        json!({"receipt": {"receipt_id": 7}, "signatures": [platform]}),
        json!({"receipt": receipt(), "signatures": [platform, platform]}),
        json!({"receipt": receipt(), "signatures": [platform], "extra": 1}),
    ];
    for (member, value) in [
        ("alg", json!("ES256")),
        ("signer", json!("auditor")),
        ("kid", json!(7)),
        ("extra", json!("x")),
    ] {
        let mut entry = platform.clone();
        entry[member] = value;
        cases.push(json!({"receipt": receipt(), "signatures": [entry]}));
    }
    for case in cases {
        assert!(
            matches!(
                verify(&case, &signer.jwks()),
                Err(VerifyError::Malformed(_))
            ),
            "{case}"
        );
    }
    let mut cosigned_only = document.clone();
    cosigned_only["signatures"][0]["signer"] = json!("cosigner");
    assert_eq!(
        verify(&cosigned_only, &signer.jwks()),
        Err(VerifyError::NoPlatformSignature)
    );
    let unsigned = json!({"receipt": receipt(), "signatures": []});
    assert_eq!(
        verify(&unsigned, &signer.jwks()),
        Err(VerifyError::NoPlatformSignature)
    );
}

#[test]
fn only_receipts_with_a_canonical_form_are_signed() {
    let signer = signer();
    assert_eq!(
        signer.sign(&json!({"id": "x"})).unwrap_err(),
        SignError::NotAReceipt
    );
    assert_eq!(
        signer.sign(&json!(["rcpt"])).unwrap_err(),
        SignError::NotAReceipt
    );
    assert!(matches!(
        signer.sign(&json!({"receipt_id": "r", "bytes": u64::MAX})),
        Err(SignError::Canonical(_))
    ));
}

#[test]
fn the_key_is_derived_deterministically_from_the_master_key() {
    let (master, text) = MasterKey::generate().unwrap();
    let again = MasterKey::from_base64(&text).unwrap();
    let (a, b) = (Signer::from_master(&master), Signer::from_master(&again));
    assert_eq!(a.kid(), b.kid());
    assert_eq!(a.jwks(), b.jwks());
    // Ed25519 signatures are deterministic: the same receipt, the same bytes.
    assert_eq!(signed(&a), signed(&b));
    let other = signer();
    assert_ne!(a.kid(), other.kid());
    assert_ne!(a.public_key(), other.public_key());
    // The derivation is the documented one: the seed is master.derive(SIGNING_LABEL).
    let pair = Ed25519KeyPair::from_seed_unchecked(&master.derive(SIGNING_LABEL)).unwrap();
    assert_eq!(pair.public_key().as_ref(), a.public_key().as_bytes());
}

#[test]
fn debug_shows_the_kid_and_never_the_key() {
    let (master, text) = MasterKey::generate().unwrap();
    let signer = Signer::from_master(&master);
    let seed = master.derive(SIGNING_LABEL);
    let shown = format!("{signer:?} {signer:#?}");
    assert!(shown.contains(signer.kid()), "{shown}");
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    for secret in [
        text,
        hex,
        URL_SAFE_NO_PAD.encode(seed),
        format!("{seed:?}"),
        seed.iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    ] {
        assert!(!shown.contains(&secret), "{shown}");
    }
}

/// A tenant's co-signing service signs the same canonical bytes with its own key.
fn cosigner() -> (Ed25519KeyPair, PublicKey) {
    let pair = Ed25519KeyPair::from_seed_unchecked(&[7u8; 32]).unwrap();
    let public: [u8; 32] = pair.public_key().as_ref().try_into().unwrap();
    (pair, PublicKey::from(public))
}

#[test]
fn a_cosignature_is_checked_before_it_is_added_and_with_the_cosigners_key() {
    let signer = signer();
    let (pair, cosigner_key) = cosigner();
    let mut document: SignedReceipt = signer.sign_receipt(receipt()).unwrap();
    let message = document.canonical_receipt().unwrap();
    assert_eq!(message, canonical(&receipt()).unwrap());
    let answer = URL_SAFE_NO_PAD.encode(pair.sign(&message));
    assert!(verify_detached(&message, &answer, &cosigner_key));
    assert!(!verify_detached(&message, &answer, signer.public_key()));
    assert!(!verify_detached(b"other bytes", &answer, &cosigner_key));

    // The platform's own signature echoed back, checked with the platform's key (as a
    // co-signer answering with the platform's kid and serving its public JWKS would have it),
    // is not a co-signature.
    let platform = document.signature(SignerRole::Platform).unwrap().clone();
    for kid in [platform.kid.as_str(), "acme-cosigner-1"] {
        assert!(
            matches!(
                document.add_cosignature(kid, &platform.signature, signer.public_key()),
                Err(VerifyError::Malformed(_))
            ),
            "{kid}"
        );
    }

    // An answer from another key, or over other bytes, is not stored.
    let forged = URL_SAFE_NO_PAD.encode(pair.sign(b"other bytes"));
    assert_eq!(
        document.add_cosignature("acme-cosigner-1", &forged, &cosigner_key),
        Err(VerifyError::BadSignature)
    );
    document
        .add_cosignature("acme-cosigner-1", &answer, &cosigner_key)
        .unwrap();
    assert_eq!(
        document.add_cosignature("acme-cosigner-1", &answer, &cosigner_key),
        Err(VerifyError::Malformed(
            "more than one cosigner signature".into()
        ))
    );
    let value = document.to_value();
    assert_eq!(value["signatures"][1]["signer"], "cosigner");
    assert_eq!(
        document.signature(SignerRole::Cosigner).unwrap().kid,
        "acme-cosigner-1"
    );

    let verified = verify(&value, &signer.jwks()).unwrap();
    assert_eq!(verified.cosigner_kid.as_deref(), Some("acme-cosigner-1"));
    verify_cosignature(&value, &cosigner_key).unwrap();
    assert_eq!(
        verify_cosignature(&value, signer.public_key()),
        Err(VerifyError::BadSignature)
    );
    let jwk = json!({
        "kty": "OKP",
        "crv": "Ed25519",
        "x": URL_SAFE_NO_PAD.encode(cosigner_key.as_bytes()),
    });
    verify_cosignature(&value, &PublicKey::from_jwk(&jwk).unwrap()).unwrap();

    // A change of the receipt breaks both signatures.
    let mut tampered = value.clone();
    tampered["receipt"]["outcome"] = json!("blocked");
    assert_eq!(
        verify(&tampered, &signer.jwks()),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        verify_cosignature(&tampered, &cosigner_key),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        verify_cosignature(&signed(&signer), &cosigner_key),
        Err(VerifyError::NoCosignature)
    );
}

//! `dpsctl receipt verify` as a customer runs it: the real binary on a receipt and a JWKS in
//! files, with no database and no master key.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use receipts::{PublicKey, Signer};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};

use crate::file;

/// Every member name is distinct, so each field can be found, and changed, in the file.
fn receipt() -> Value {
    json!({
        "receipt_id": "rcpt_0190f5c2-7b1e-7c3a-9d4e-2f1a6b8c9d0e",
        "tenant_id": "acme",
        "action": "quarantine",
        "outcome": "executed",
        "object": {
            "connector_id": "0190f5c2-0000-7000-8000-000000000001",
            "uri": "s3://acme-data/exports/people.csv",
            "version_id": "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY",
        },
        "policy_version": 3,
        "finding_count": 12,
        "executed_at": "2025-06-01T12:00:00.123456Z",
    })
}

fn signer() -> Signer {
    Signer::from_master(&keys::MasterKey::generate().unwrap().0)
}

fn dpsctl(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpsctl"))
        .args(["receipt", "verify"])
        .args(args)
        // Neither is needed: verification is offline and keyless.
        .env_remove("DATABASE_URL")
        .env_remove("DPS_MASTER_KEY")
        .env_remove("DPS_MASTER_KEY_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// Every member of `value` that is not an object, with its name, at any depth.
fn fields<'a>(value: &'a Value, out: &mut Vec<(&'a str, &'a Value)>) {
    for (name, member) in value.as_object().unwrap() {
        if member.is_object() {
            fields(member, out);
        } else {
            out.push((name, member));
        }
    }
}

#[test]
fn a_signed_receipt_verifies_and_a_one_byte_change_of_any_field_does_not() {
    let signer = signer();
    let document = signer.sign_receipt(receipt()).unwrap().to_value();
    let text = serde_json::to_string_pretty(&document).unwrap();
    let doc = file("receipt.json", text.as_bytes());
    let jwks = file("jwks.json", signer.jwks().to_string().as_bytes());

    let output = dpsctl(&[&doc.path, "--jwks", &jwks.path], b"");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        format!(
            "receipt rcpt_0190f5c2-7b1e-7c3a-9d4e-2f1a6b8c9d0e: valid, signed by {}; \
             no co-signature\n",
            signer.kid()
        )
    );

    // Change one byte inside each value of the receipt, keeping the file valid JSON.
    let receipt = receipt();
    let mut values = Vec::new();
    fields(&receipt, &mut values);
    assert_eq!(values.len(), 10);
    for (name, value) in values {
        let shown = format!("\"{name}\": {value}");
        assert_eq!(
            text.matches(&shown).count(),
            1,
            "{shown} is not in the file once"
        );
        let at = text.find(&shown).unwrap();
        let mut bytes = text.clone().into_bytes();
        // The last character of a string's content, or a number's last digit.
        let last = at + shown.len() - if value.is_string() { 2 } else { 1 };
        bytes[last] ^= 1;
        let changed = file("changed.json", &bytes);
        let output = dpsctl(&[&changed.path, "--jwks", &jwks.path], b"");
        assert_eq!(
            output.status.code(),
            Some(1),
            "{shown}: {}",
            stdout(&output)
        );
        assert!(stdout(&output).is_empty());
        assert!(
            stderr(&output).contains("invalid: the signature does not verify"),
            "{shown}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn standard_input_other_keys_and_broken_documents() {
    let signer = signer();
    let document = signer
        .sign_receipt(receipt())
        .unwrap()
        .to_value()
        .to_string();
    let jwks = file("jwks.json", signer.jwks().to_string().as_bytes());
    let output = dpsctl(&["-", "--jwks", &jwks.path], document.as_bytes());
    assert!(output.status.success(), "{}", stderr(&output));
    // The answer of GET /governance/receipt-keys, envelope and all, is a JWKS file too.
    let envelope = serde_json::json!({"status": "success", "data": signer.jwks(), "metadata": {}});
    let served = file("served.json", envelope.to_string().as_bytes());
    let output = dpsctl(&["-", "--jwks", &served.path], document.as_bytes());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains(": valid, signed by "));

    // Another platform's key set does not know the kid.
    let other = file("other.json", self::signer().jwks().to_string().as_bytes());
    let output = dpsctl(&["-", "--jwks", &other.path], document.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!(
            "receipt rcpt_0190f5c2-7b1e-7c3a-9d4e-2f1a6b8c9d0e: invalid: no Ed25519 key in the \
             JWKS has the kid \"{}\"",
            signer.kid()
        )),
        "{}",
        stderr(&output)
    );

    // A duplicate member name, and a document that is not a receipt, are refused as such.
    let twice = document.replacen("{", r#"{"receipt":{},"#, 1);
    let output = dpsctl(&["-", "--jwks", &jwks.path], twice.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("appears twice"),
        "{}",
        stderr(&output)
    );
    let output = dpsctl(&["-", "--jwks", &jwks.path], b"[1, 2]");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("invalid: the document is malformed"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_cosignature_is_reported_and_checked_with_the_cosigners_keys() {
    let signer = signer();
    let mut document = signer.sign_receipt(receipt()).unwrap();
    let pair = Ed25519KeyPair::from_seed_unchecked(&[9u8; 32]).unwrap();
    let key = PublicKey::from(<[u8; 32]>::try_from(pair.public_key().as_ref()).unwrap());
    let answer = URL_SAFE_NO_PAD.encode(pair.sign(&document.canonical_receipt().unwrap()));
    document.add_cosignature("acme-1", &answer, &key).unwrap();
    let doc = file("receipt.json", document.to_value().to_string().as_bytes());
    let jwks = file("jwks.json", signer.jwks().to_string().as_bytes());
    let mut cosigner_jwk = key.to_jwk();
    cosigner_jwk["kid"] = json!("acme-1");
    let cosigner = file(
        "cosigner.json",
        json!({ "keys": [cosigner_jwk] }).to_string().as_bytes(),
    );

    let output = dpsctl(&[&doc.path, "--jwks", &jwks.path], b"");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output)
            .ends_with("; co-signature by acme-1 present, not checked (give --cosigner-jwks)\n"),
        "{}",
        stdout(&output)
    );
    let checked = ["--jwks", &jwks.path, "--cosigner-jwks", &cosigner.path];
    let output = dpsctl(&[&[doc.path.as_str()][..], &checked].concat(), b"");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).ends_with("; co-signed by acme-1, valid\n"));

    // The platform's keys are not the co-signer's.
    let output = dpsctl(
        &[
            &doc.path,
            "--jwks",
            &jwks.path,
            "--cosigner-jwks",
            &jwks.path,
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("invalid co-signature: no Ed25519 key"));

    // Asked to check a co-signature, a receipt without one fails.
    let plain = file(
        "plain.json",
        signer
            .sign_receipt(receipt())
            .unwrap()
            .to_value()
            .to_string()
            .as_bytes(),
    );
    let output = dpsctl(&[&[plain.path.as_str()][..], &checked].concat(), b"");
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("invalid co-signature: the document has no co-signature"));
}

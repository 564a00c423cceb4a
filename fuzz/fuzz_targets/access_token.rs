//! Access-token parsing: any text presented as a bearer token is refused unless the trusted
//! identity provider signed it, and it is never a panic. No fuzzer input is a valid signature.
#![no_main]

use std::sync::LazyLock;

use auth::{AuthConfig, JwksSource, JwtVerifier, TokenMinter};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    verifier: JwtVerifier,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let minter = TokenMinter::generate("fuzz-1", "https://idp.example", "dps").expect("a key");
    let jwks = std::env::temp_dir().join(format!("dps-fuzz-jwks-{}", std::process::id()));
    std::fs::write(&jwks, minter.jwks_json()).expect("the JWKS file");
    let verifier = JwtVerifier::new(AuthConfig {
        jwks: JwksSource::File(jwks),
        issuer: "https://idp.example".into(),
        audience: "dps".into(),
        egress: egress::Egress::default(),
    });
    runtime.block_on(verifier.refresh()).expect("the JWKS");
    Fixture { runtime, verifier }
});

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let verdict = FIXTURE.runtime.block_on(FIXTURE.verifier.verify(&text));
    assert!(verdict.is_err(), "an unsigned token was accepted");
});
